"""The deletion of a pod this scheduler has assumed starts (upstream's eventhandlers.go
``updatePodInSchedulingQueue`` -> ``handleAssumedPodDeletion``): waiting at Permit it is rejected, in
PreBind/Bind it leaves the cache at once; either way its room is freed and the pods that wanted it
are moved (AssignedPodDelete). The whole path: event handlers, the real Scheduler, binding pool and
queue, the API server faked at its seam."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from informers.resource import PODGROUPS, PODS, ResourceSpec
from scheduler.app.event_handlers import EventHandlers
from scheduler.cycle.binding import Outcome
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import Lister, StaticLister
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from scheduler.plugins.coscheduling import POD_GROUP_LABEL
from tests.unit.fakes import PROFILE, CoreEnv, make_node, make_pod, status_error, wait_for

MakeEnv = Callable[..., CoreEnv]

BEING_DELETED = (
    'Operation cannot be fulfilled on pods/binding "a": pod a is being deleted, cannot be assigned to a host'
)


class HoldAtPermit:
    """Holds the pod named ``a`` at Permit; lets every other pod through."""

    name = "HoldA"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        if pod.name == "a":
            return Status(Code.Wait), 600.0
        return None, 0.0


class HoldBindingOfA:
    """Holds the Binding of pod ``a`` until released, then answers ``then``; binds others at once."""

    def __init__(self, then: tuple[int, bytes]) -> None:
        self.release = threading.Event()
        self.then = then

    def __call__(self, method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "GET" and path.endswith("/pods/a"):
            return 200, orjson_pod_being_deleted()
        if path.endswith("/pods/a/binding"):
            assert self.release.wait(5.0), "test never released the binding"
            return self.then
        return 201, b"{}"


def orjson_pod_being_deleted() -> bytes:
    return orjson.dumps(deleting(make_pod("a", cpu="2")))


def deleting(pod: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(pod)
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    new["metadata"]["resourceVersion"] = str(int(new["metadata"]["resourceVersion"]) + 1000)
    return new


def handlers_of(env: CoreEnv) -> EventHandlers:
    return EventHandlers(
        queue=env.queue,
        cache=env.cache,
        profiles=[PROFILE],
        reject_deleted_waiting_pod=env.sched.reject_deleted_waiting_pod,
    )


def requested_cpu(env: CoreEnv, node: str) -> int:
    info = env.cache.node_info(node)
    assert info is not None
    return info.requested.milli_cpu


def failed_events(env: CoreEnv, name: str) -> list[dict[str, Any]]:
    return [
        e for e in env.rest.events() if e["regarding"]["name"] == name and e["reason"] == "FailedScheduling"
    ]


async def park_unschedulable(env: CoreEnv, handlers: EventHandlers, pod: dict[str, Any]) -> None:
    handlers.on_pod_add(pod)
    await env.schedule_next()
    assert env.queue.where(f"default/{pod['metadata']['name']}") == "unschedulable"


async def schedule_b(env: CoreEnv) -> None:
    """One cycle for ``b``, from activeQ or from backoffQ once its backoff is over."""
    if env.queue.where("default/b") == "backoff":
        env.clock.advance(11.0)
    await env.schedule_next()


async def drain(env: CoreEnv) -> None:
    """Run cycles until the queue holds nothing poppable, backoffs over."""
    env.clock.advance(11.0)
    while (qpi := env.queue.pop_nowait()) is not None:
        rest = env.sched.schedule_one(qpi)
        if rest is not None:
            await rest


async def test_a_pod_waiting_at_permit_is_rejected_frees_its_room_and_is_reported_as_upstream(
    make_env: MakeEnv,
) -> None:
    """As upstream's handleAssumedPodDeletion -> RejectWaitingPod -> handleBindingCycleError: the
    rejection ("removed") frees the room at once, is reported as a Permit rejection on the one node
    with PodScheduled=False, and the pod is requeued in its deleting version, whose next attempt is
    skipped ("skip schedule deleting pod")."""
    env = make_env(
        [make_node("n1", cpu="2")],
        extra_registry={"HoldA": lambda args, handle: HoldAtPermit()},
        profile={"schedulerName": PROFILE, "plugins": {"permit": {"enabled": [{"name": "HoldA"}]}}},
    )
    h = handlers_of(env)
    a = make_pod("a", cpu="2")
    h.on_pod_add(a)
    await env.schedule_next()
    assert "default/a" in env.sched.waiting_pods and requested_cpu(env, "n1") == 2000
    await park_unschedulable(env, h, make_pod("b", cpu="2"))

    h.on_pod_update(a, deleting(a))
    await env.wait_bindings(1)
    [result] = env.results
    assert result.outcome is Outcome.REJECTED and result.status is not None
    assert result.status.message() == "removed"  # upstream's RejectWaitingPod
    assert not env.cache.is_assumed("default/a") and requested_cpu(env, "n1") == 0
    queued = env.queue.get("default/a")
    assert queued is not None and queued.pod["metadata"].get("deletionTimestamp")
    assert env.queue.where("default/b") in ("active", "backoff")

    await drain(env)
    await env.wait_bindings(2)
    assert env.rest.bindings() == {"b": "n1"}
    assert env.queue.where("default/a") is None
    env.flush_writes()
    notes = [e["note"] for e in failed_events(env, "a")]
    assert notes == ["0/1 nodes are available: 1 removed.", "skip schedule deleting pod: default/a"]
    patches = [c.body["status"] for c in env.rest.status_patches() if c.path.endswith("/pods/a/status")]
    assert patches[0] == {"nominatedNodeName": "n1"}
    assert any(
        cond.get("type") == "PodScheduled" and cond.get("status") == "False"
        for patch in patches[1:]
        for cond in patch.get("conditions") or []
    ), patches


@pytest.mark.parametrize(
    "then", [pytest.param((201, b"{}"), id="bound"), pytest.param(status_error(409, BEING_DELETED), id="409")]
)
async def test_a_binding_pod_leaves_the_cache_and_its_binding_ends_cleanly(
    make_env: MakeEnv, then: tuple[int, bytes]
) -> None:
    """Past Permit (its Binding held by the API server): removed from the cache at once, the pod that
    wants its room is scheduled meanwhile, and the Binding's answer afterwards, either way, neither
    frees the room twice nor brings the pod back; when it bound after all, the watch counts it."""
    gate = HoldBindingOfA(then)
    env = make_env([make_node("n1", cpu="2")], respond=gate)
    h = handlers_of(env)
    a = make_pod("a", cpu="2")
    h.on_pod_add(a)
    await env.schedule_next()
    await park_unschedulable(env, h, make_pod("b", cpu="2"))

    h.on_pod_update(a, deleting(a))
    assert env.cache.get_pod("default/a") is None and requested_cpu(env, "n1") == 0
    assert env.queue.where("default/b") in ("active", "backoff")
    await schedule_b(env)
    await wait_for(lambda: any(r.task.pod.name == "b" for r in env.results))
    assert requested_cpu(env, "n1") == 2000 and env.cache.is_assumed("default/b")

    gate.release.set()
    await env.wait_bindings(2)
    [result_a] = [r for r in env.results if r.task.pod.name == "a"]
    # b's room is untouched by a's answer: nothing forgotten twice.
    assert requested_cpu(env, "n1") == 2000 and env.cache.get_pod("default/a") is None
    if result_a.outcome is Outcome.BOUND:
        # The watch shows it bound: counted as any assigned pod (it is deleting; its delete follows).
        bound = deleting(a)
        bound["spec"]["nodeName"] = "n1"
        h.on_pod_update(deleting(a), bound)
        assert requested_cpu(env, "n1") == 4000 and not env.cache.is_assumed("default/a")
        h.on_pod_delete(bound)
        assert requested_cpu(env, "n1") == 2000
    else:
        # As upstream's handleBindingCycleError: retried from the deleting version, which the next
        # cycle skips ("skip schedule deleting pod").
        assert result_a.outcome is Outcome.ERROR
        assert env.queue.where("default/a") == "backoff"
        queued = env.queue.get("default/a")
        assert queued is not None and queued.pod["metadata"].get("deletionTimestamp")


async def test_a_namesake_assumed_meanwhile_survives_the_old_binding_failing(make_env: MakeEnv) -> None:
    gate = HoldBindingOfA(status_error(404, 'pods "a" not found'))
    env = make_env([make_node("n1", cpu="4")], respond=gate)
    h = handlers_of(env)
    a = make_pod("a", cpu="2")
    h.on_pod_add(a)
    await env.schedule_next()
    h.on_pod_delete(a)
    assert env.cache.get_pod("default/a") is None
    namesake = make_pod("a", cpu="2", uid="uid-new")
    env.cache.assume_pod(PodInfo(namesake), "n1")  # as a cycle of the new pod would
    gate.release.set()
    await env.wait_bindings(1)
    cached = env.cache.get_pod("default/a")
    assert cached is not None and cached.uid == "uid-new" and env.cache.is_assumed("default/a")
    assert requested_cpu(env, "n1") == 2000


def _member(name: str) -> dict[str, Any]:
    raw = make_pod(name, cpu="1", uid=f"uid-{name}")
    raw["metadata"]["labels"] = {POD_GROUP_LABEL: "gang"}
    return raw


async def test_a_deleting_gang_member_releases_its_waiting_siblings_as_coscheduling_rules(
    make_env: MakeEnv,
) -> None:
    """Two of a gang of three wait at Permit for the third; the deletion of one rejects it, and its
    Unreserve (Coscheduling's) rejects the other waiter, as scheduler-plugins' Coscheduling does: no
    partial gang holds room. Both are reported and requeued as upstream's handleBindingCycleError does."""
    members = [_member("m0"), _member("m1"), _member("m2")]
    listers: dict[ResourceSpec, Lister] = {
        PODS: StaticLister(members),
        PODGROUPS: StaticLister(
            [
                {
                    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                    "kind": "PodGroup",
                    "metadata": {
                        "name": "gang",
                        "namespace": "default",
                        "creationTimestamp": "2024-01-01T00:00:00Z",
                    },
                    "spec": {"minMember": 3},
                }
            ]
        ),
    }
    env = make_env(
        [make_node("n1", cpu="4")],
        profile={
            "schedulerName": PROFILE,
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
            },
        },
        listers=lambda spec: listers.get(spec) or StaticLister(),
    )
    h = handlers_of(env)
    for raw in members[:2]:  # the third is not there yet
        h.on_pod_add(raw)
        await env.schedule_next()
    assert sorted(env.sched.waiting_pods) == ["default/m0", "default/m1"]
    assert requested_cpu(env, "n1") == 2000

    h.on_pod_update(members[0], deleting(members[0]))
    await env.wait_bindings(2)
    for _ in range(5):  # the sibling's rejection is delivered by a loop callback of its own
        await asyncio.sleep(0)
    assert {r.task.pod.name: r.outcome for r in env.results} == {
        "m0": Outcome.REJECTED,
        "m1": Outcome.REJECTED,
    }
    assert len(env.sched.waiting_pods) == 0 and requested_cpu(env, "n1") == 0
    queued = env.queue.get("default/m0")
    assert queued is not None and queued.pod["metadata"].get("deletionTimestamp")
    assert env.queue.where("default/m1") in ("unschedulable", "backoff", "active")
    env.flush_writes()
    [deleting_member] = failed_events(env, "m0")
    assert deleting_member["note"] == "0/1 nodes are available: 1 removed."
    [sibling] = failed_events(env, "m1")
    assert "rejection in Unreserve" in sibling["note"]
    assert env.rest.bindings() == {}
