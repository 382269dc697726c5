"""Scheduler end to end with fakes only at the API seam: cycle, assume, binding pool, outcomes, events.

Mirrors upstream's ``schedule_one_test.go`` (TestSchedulerScheduleOne and friends): what a pod's outcome
looks like from the outside (Binding POSTs, Events, the PodScheduled condition) and where it sits in the
queue and the cache afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
import pytest
from prometheus_client import REGISTRY

from scheduler.app.event_handlers import EventHandlers
from scheduler.cache import SchedulerCache, Snapshot
from scheduler.cycle.binding import Outcome
from scheduler.cycle.profiles import FrameworkHandle
from scheduler.cycle.schedule_one import POD_SPEC_PLUGIN
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from tests.unit.fakes import (
    PROFILE,
    CoreEnv,
    Responder,
    make_node,
    make_pod,
    status_error,
    wait_for,
)

MakeEnv = Callable[..., CoreEnv]


def handlers(env: CoreEnv) -> EventHandlers:
    return EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])


def requested_cpu(cache: SchedulerCache, node: str) -> int:
    info = cache.node_info(node)
    assert info is not None
    return info.requested.milli_cpu


def failed_events(env: CoreEnv, name: str) -> list[dict[str, Any]]:
    return [
        e for e in env.rest.events() if e["regarding"]["name"] == name and e["reason"] == "FailedScheduling"
    ]


def condition(env: CoreEnv, name: str) -> dict[str, Any]:
    patches = [c for c in env.rest.status_patches() if c.path.endswith(f"/pods/{name}/status")]
    assert patches, f"no status patch for {name}"
    cond: dict[str, Any] = patches[-1].body["status"]["conditions"][0]
    return cond


def bind_fails_with(code: int, message: str, pod_now: Mapping[str, Any] | int | None = None) -> Responder:
    """Bindings answered ``code``; a GET of a pod answers ``pod_now`` (an object, or an error status),
    by default the pod ``a`` still pending."""
    now: Mapping[str, Any] | int = make_pod("a") if pod_now is None else pod_now

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if path.endswith("/binding"):
            return status_error(code, message)
        if method == "GET" and "/pods/" in path:
            if isinstance(now, int):
                return status_error(now, "answered by the test")
            return 200, orjson.dumps(now)
        return 201, b"{}"

    return respond


class Gate:
    """A responder that holds Binding POSTs until released, then answers with ``then``."""

    def __init__(
        self, then: tuple[int, bytes] = (201, b"{}"), pod_now: tuple[int, bytes] = (503, b"")
    ) -> None:
        self.release = threading.Event()
        self.then = then
        # The answer to a GET of a pod (after a 404/409: what the API server holds now).
        self.pod_now = pod_now
        self.waiting = 0

    def __call__(self, method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "GET" and "/pods/" in path:
            return self.pod_now
        if not path.endswith("/binding"):
            return 201, b"{}"
        self.waiting += 1
        assert self.release.wait(5.0), "test never released the binding"
        return self.then


def profile_with(**points: Sequence[str]) -> dict[str, Any]:
    return {
        "schedulerName": PROFILE,
        "plugins": {point: {"enabled": [{"name": n} for n in names]} for point, names in points.items()},
    }


# --- success ----------------------------------------------------------------------------------------


async def test_success_assumes_binds_and_reports_scheduled(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1")])
    pod = make_pod("a", cpu="1")
    env.queue.add(pod)
    await env.schedule_next()

    # Counted on the node before the Binding is even sent.
    assert env.cache.is_assumed("default/a")
    assert requested_cpu(env.cache, "n1") == 1000
    assert env.queue.where("default/a") == "in_flight"

    await env.wait_bindings(1)
    [result] = env.results
    assert result.outcome is Outcome.BOUND
    assert env.delivered_on == [threading.current_thread()]
    assert env.queue.where("default/a") is None
    assert env.sched.stats.scheduled == 1

    env.flush_writes()
    [bind] = env.rest.matching("POST", "/binding")
    assert bind.path == "/api/v1/namespaces/default/pods/a/binding"
    assert bind.body["metadata"]["uid"] == "uid-default-a"
    assert bind.body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    assert bind.thread.startswith("binding")
    [event] = env.rest.events()
    assert (event["type"], event["reason"], event["action"]) == ("Normal", "Scheduled", "Binding")
    assert event["note"] == "Successfully assigned default/a to n1"
    # Written by the thread that bound the pod, as upstream's binding goroutine records it.
    [event_call] = env.rest.matching("POST", "/events")
    assert event_call.thread == bind.thread
    assert event["reportingController"] == PROFILE
    assert env.rest.status_patches() == []

    # The informer then sees the binding and confirms the assumption.
    bound = make_pod("a", cpu="1", node_name="n1")
    handlers(env).on_pod_update(pod, bound)
    assert not env.cache.is_assumed("default/a")
    assert requested_cpu(env.cache, "n1") == 1000


async def test_pods_spread_and_respect_capacity(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1", cpu="2"), make_node("n2", cpu="2")])
    for i in range(4):
        env.queue.add(make_pod(f"p{i}", cpu="1"))
        await env.schedule_next()
    await env.wait_bindings(4)
    placed = env.rest.bindings()
    assert sorted(placed.values()) == ["n1", "n1", "n2", "n2"]
    env.queue.add(make_pod("extra", cpu="1"))
    await env.schedule_next()
    assert env.queue.where("default/extra") == "unschedulable"


# --- unschedulable ----------------------------------------------------------------------------------


async def test_unschedulable_pod_is_parked_with_its_rejectors_and_reported(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1", cpu="1"), make_node("n2", cpu="1")])
    env.sched.nearest_misses_in_events = True  # --nearest-misses-in-events=true
    env.queue.add(make_pod("big", cpu="2"))
    await env.schedule_next()

    assert env.queue.where("default/big") == "unschedulable"
    qpi = env.queue.get("default/big")
    assert qpi is not None and qpi.unschedulable_plugins == {"NodeResourcesFit"}
    assert not env.cache.is_assumed("default/big")
    assert env.sched.stats.unschedulable == 1

    env.flush_writes()
    assert env.rest.bindings() == {}
    [event] = failed_events(env, "big")
    assert (event["type"], event["action"]) == ("Warning", "Scheduling")
    # Upstream's text (DynamicResources' PostFilter reason first, then DefaultPreemption's: more cpu
    # than the node has at all is unresolvable, preemption cannot help; one full stop, as kube-scheduler
    # v1.36.3 writes it), then the nearest misses in the user's terms.
    upstream = (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    expected = (
        upstream + " Nearest misses: n1: Insufficient cpu (requests 2, free 1); "
        "n2: Insufficient cpu (requests 2, free 1)."
    )
    assert event["note"] == expected
    cond = condition(env, "big")
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
    assert cond["message"] == upstream  # the condition keeps upstream's text


class Deallocating:
    """A PostFilter plugin whose write (as DynamicResources' claim deallocation) blocks until the loop
    releases it: the cycle finishes only if the loop kept running while the write was in flight."""

    name = "Deallocating"

    def __init__(self) -> None:
        self.released = threading.Event()
        self.ran_on: list[threading.Thread] = []

    def post_filter_call(self, state: CycleState, pod: PodInfo, node_statuses: Any) -> Any:
        def write() -> tuple[str | None, Status | None]:
            self.ran_on.append(threading.current_thread())
            if not self.released.wait(5):
                return None, Status.as_error("the event loop was blocked by the write")
            return None, Status.unschedulable("deallocation of ResourceClaim completed")

        return write

    def post_filter(self, state: CycleState, pod: PodInfo, node_statuses: Any) -> Any:
        raise AssertionError("the cycle must not block on the write")


async def test_a_post_filter_write_runs_off_the_loop_and_preemption_follows(make_env: MakeEnv) -> None:
    plugin = Deallocating()
    env = make_env(
        [make_node("n1", cpu="1")],
        extra_registry={"Deallocating": lambda args, handle: plugin},
        profile={
            "schedulerName": PROFILE,
            "plugins": {
                "postFilter": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": "Deallocating"}, {"name": "DefaultPreemption"}],
                }
            },
        },
    )
    env.queue.add(make_pod("big", cpu="2"))
    env.loop.call_later(0.05, plugin.released.set)
    await env.schedule_next()

    assert plugin.ran_on and plugin.ran_on[0] is not threading.current_thread()
    assert env.queue.where("default/big") == "unschedulable"
    env.flush_writes()
    [event] = failed_events(env, "big")
    # The write's Unschedulable reason leads; DefaultPreemption still ran after it.
    assert event["note"].startswith(
        "0/1 nodes are available: 1 Insufficient cpu. deallocation of ResourceClaim completed, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


async def test_a_new_node_wakes_the_pod_and_it_binds_there(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1", cpu="1")])
    env.queue.add(make_pod("big", cpu="2"))
    await env.schedule_next()
    assert env.queue.where("default/big") == "unschedulable"

    handlers(env).on_node_add(make_node("n2", cpu="4"))
    assert env.queue.where("default/big") == "backoff"
    env.clock.advance(1.0)
    await env.schedule_next()
    await env.wait_bindings(1)
    assert env.rest.bindings() == {"big": "n2"}


async def test_a_slow_failure_patch_lands_before_the_later_bind(make_env: MakeEnv) -> None:
    """Issue 11: under load the PodScheduled=False patch of attempt 1 landed after the bind of attempt 2."""
    patch_on_wire, release_patch = threading.Event(), threading.Event()
    order: list[str] = []

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if path.endswith("/status"):
            patch_on_wire.set()
            release_patch.wait(10)
            order.append("PodScheduled=False")
        elif path.endswith("/binding"):
            order.append("Binding")
        return 201, b"{}"

    env = make_env([make_node("n1", cpu="1")], respond=respond)
    env.queue.add(make_pod("big", cpu="2"))
    await env.schedule_next()
    await asyncio.to_thread(patch_on_wire.wait, 5)

    handlers(env).on_node_add(make_node("n2", cpu="4"))
    env.clock.advance(1.0)
    entered = threading.Event()
    before_bind = env.recorder.before_bind

    def spy(uid: str, timeout: float = 11.0) -> bool:
        entered.set()
        return before_bind(uid, timeout)

    env.recorder.before_bind = spy  # type: ignore[method-assign]
    await env.schedule_next()
    # Before the fix the Binding went out at once, and the patch landed after it.
    await wait_for(lambda: bool(order) or entered.is_set())
    release_patch.set()
    await env.wait_bindings(1)
    assert order == ["PodScheduled=False", "Binding"]


async def test_no_nodes_at_all(make_env: MakeEnv) -> None:
    env = make_env([])
    env.queue.add(make_pod("p"))
    await env.schedule_next()
    env.flush_writes()
    assert failed_events(env, "p")[0]["note"] == "no nodes available to schedule pods"
    # No plugin to wait for: retried after backoff, as upstream.
    assert env.queue.where("default/p") == "backoff"


# --- binding failures -------------------------------------------------------------------------------


def attempts(result: str) -> float:
    labels = {"result": result, "profile": PROFILE}
    return REGISTRY.get_sample_value("scheduler_schedule_attempts_total", labels) or 0.0


async def test_a_bound_pods_pending_version_leaves_the_pod_info_cache(make_env: MakeEnv) -> None:
    """Nothing schedules the pending version of a bound pod again: its parsed form is dropped rather
    than kept (with the whole object) until the LRU pushes it out. The cache keeps counting the pod,
    and the bind's echo still confirms it from the assumed copy."""
    env = make_env([make_node("n1")])
    pod = make_pod("a", cpu="1")
    env.queue.add(pod)
    await env.schedule_next()
    pending = env.pod_infos.get(pod)
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.BOUND

    assert env.pod_infos.get(pod) is not pending  # parsed anew: the entry was dropped
    assert env.cache.is_assumed("default/a") and requested_cpu(env.cache, "n1") == 1000
    echo = {**pod, "metadata": {**pod["metadata"], "resourceVersion": "999999"}}
    echo["spec"] = {**pod["spec"], "nodeName": "n1"}
    echo["status"] = {**pod["status"], "conditions": [{"type": "PodScheduled", "status": "True"}]}
    successors = env.pod_infos.successors
    env.cache.add_pod(echo)
    assert env.pod_infos.successors == successors + 1
    assert not env.cache.is_assumed("default/a") and requested_cpu(env.cache, "n1") == 1000


async def test_a_failed_bindings_pod_keeps_its_parsed_version(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1")], respond=bind_fails_with(500, "etcd leader changed"))
    pod = make_pod("a", cpu="1")
    env.queue.add(pod)
    await env.schedule_next()
    pending = env.pod_infos.get(pod)
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.ERROR
    # Requeued: its next attempt reuses the parsed version.
    assert env.pod_infos.get(pod) is pending


async def test_binding_error_forgets_and_backs_off(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1")], respond=bind_fails_with(500, "etcd leader changed"))
    env.queue.add(make_pod("a", cpu="1"))
    errors_before = attempts("error")
    await env.schedule_next()
    await env.wait_bindings(1)
    # A failed Binding is an error attempt, as upstream's handleBindingCycleError counts it.
    assert attempts("error") == errors_before + 1

    assert env.results[0].outcome is Outcome.ERROR
    assert not env.cache.is_assumed("default/a")
    assert requested_cpu(env.cache, "n1") == 0
    assert env.queue.where("default/a") == "backoff"
    assert env.sched.stats.errors == 1

    env.flush_writes()
    [event] = failed_events(env, "a")
    assert "etcd leader changed" in event["note"]
    assert condition(env, "a")["reason"] == "SchedulerError"


BEING_DELETED = (
    'Operation cannot be fulfilled on pods/binding "a": pod a is being deleted, cannot be assigned to a host'
)


@pytest.mark.parametrize("code", [404, 409])
async def test_a_conflict_for_a_pod_still_pending_is_retried(make_env: MakeEnv, code: int) -> None:
    # Upstream's handleBindingCycleError -> handleSchedulingFailure: a Bind error is an error, whatever
    # its code; the pod lister still shows it pending, so it is requeued with backoff and the failure
    # reported with the API's message (client-go's error text), not dropped on the API server's word.
    # Here a read of the pod right after the 409 shows it pending (e.g. "being deleted", or a 409 a
    # proxy made up).
    env = make_env([make_node("n1")], respond=bind_fails_with(code, BEING_DELETED))
    env.queue.add(make_pod("a", cpu="1"))
    errors_before = attempts("error")
    await env.schedule_next()
    await env.wait_bindings(1)

    assert env.results[0].outcome is Outcome.ERROR
    assert [c.path for c in env.rest.matching("GET", "/pods/")] == ["/api/v1/namespaces/default/pods/a"]
    assert attempts("error") == errors_before + 1
    assert env.queue.where("default/a") == "backoff"
    assert not env.cache.is_assumed("default/a")
    assert env.sched.stats.errors == 1
    env.flush_writes()
    [event] = failed_events(env, "a")
    assert event["note"] == BEING_DELETED
    cond = condition(env, "a")
    assert (cond["reason"], cond["message"]) == ("SchedulerError", BEING_DELETED)


@pytest.mark.parametrize(
    ("code", "message", "pod_now"),
    [
        (409, 'pod a is already assigned to node "n9"', make_pod("a", node_name="n9")),
        (409, "Precondition failed: UID in precondition: uid-default-a", make_pod("a", uid="uid-new")),
        (404, 'pods "a" not found', 404),
    ],
    ids=["already-bound", "replaced", "deleted"],
)
async def test_a_conflict_for_a_pod_bound_replaced_or_gone_is_dropped_without_waiting_for_the_watch(
    make_env: MakeEnv, code: int, message: str, pod_now: Mapping[str, Any] | int
) -> None:
    # What upstream's pod lister would show once it caught up: bound ("Pod has been assigned to node.
    # Abort adding it back to queue"), recreated ("Skip requeueing and status updates") or gone. One
    # read of the pod tells it now, so nothing is requeued and nothing written onto a settled pod.
    env = make_env([make_node("n1")], respond=bind_fails_with(code, message, pod_now))
    env.queue.add(make_pod("a", cpu="1"))
    errors_before = attempts("error")
    await env.schedule_next()
    await env.wait_bindings(1)

    assert env.results[0].outcome is Outcome.CONFLICT
    assert attempts("error") == errors_before + 1
    assert env.queue.where("default/a") is None
    assert not env.cache.is_assumed("default/a")
    env.flush_writes()
    assert failed_events(env, "a") == []
    assert env.rest.status_patches() == []


async def test_a_conflict_whose_pod_cannot_be_read_waits_for_the_watch(make_env: MakeEnv) -> None:
    # The read fails: the informer decides, as before; it shows the pod pending, so it is retried.
    env = make_env([make_node("n1")], respond=bind_fails_with(409, "conflict", 503))
    env.queue.add(make_pod("a", cpu="1"))
    await env.schedule_next()
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.CONFLICT
    assert env.queue.where("default/a") == "backoff"
    env.flush_writes()
    assert [e["note"] for e in failed_events(env, "a")] == ["conflict"]


async def test_a_conflict_for_a_pod_the_watch_showed_bound_is_dropped_quietly(make_env: MakeEnv) -> None:
    gate = Gate(then=status_error(409, 'pod a is already assigned to node "n9"'))
    env = make_env([make_node("n1")], respond=gate)
    pod = make_pod("a", cpu="1")
    h = handlers(env)
    h.on_pod_add(pod)
    await env.schedule_next()
    # Another scheduler (or an earlier incarnation of this one) bound it meanwhile.
    bound = {**pod, "spec": {**pod["spec"], "nodeName": "n9"}}
    h.on_pod_update(pod, bound)
    gate.release.set()
    await env.wait_bindings(1)

    assert env.results[0].outcome is Outcome.CONFLICT
    assert env.queue.where("default/a") is None
    assert env.sched.stats.errors == 0
    env.flush_writes()
    assert failed_events(env, "a") == []
    assert env.rest.status_patches() == []


async def test_a_failed_binding_frees_room_for_pods_it_crowded_out(make_env: MakeEnv) -> None:
    gate = Gate(then=status_error(500, "apiserver restarting"))
    env = make_env([make_node("n1", cpu="2")], respond=gate)
    env.queue.add(make_pod("first", cpu="2"))
    await env.schedule_next()
    env.queue.add(make_pod("second", cpu="2"))
    await env.schedule_next()
    assert env.queue.where("default/second") == "unschedulable"

    gate.release.set()
    await env.wait_bindings(1)
    # Upstream treats the forget as an AssignedPodDelete: "second" is worth another try.
    assert env.queue.where("default/second") in {"backoff", "active"}
    assert env.queue.where("default/first") == "backoff"


async def test_may_bind_false_abandons_the_binding(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1", cpu="1")], may_bind=lambda: False)
    env.queue.add(make_pod("a", cpu="2"))
    await env.schedule_next()  # rejected by NodeResourcesFit first
    handlers(env).on_node_add(make_node("n2", cpu="4"))
    env.clock.advance(1.0)
    await env.schedule_next()
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.ABANDONED
    assert not env.cache.is_assumed("default/a")
    # Back to backoff, not parked under the rejectors of the earlier attempt.
    assert env.queue.where("default/a") == "backoff"
    env.flush_writes()
    assert env.rest.bindings() == {}
    assert len(failed_events(env, "a")) == 1  # only the first, real rejection


class VolumePreBind:
    name = "VolumeWait"

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return Status.unschedulable("volume not attachable")


async def test_prebind_rejection_backs_off_like_upstream(make_env: MakeEnv) -> None:
    env = make_env(
        [make_node("n1")],
        extra_registry={"VolumeWait": lambda args, handle: VolumePreBind()},
        profile=profile_with(preBind=["VolumeWait"]),
    )
    env.queue.add(make_pod("a"))
    await env.schedule_next()
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.REJECTED
    assert env.queue.where("default/a") == "backoff"
    env.flush_writes()
    assert env.rest.bindings() == {}
    assert failed_events(env, "a")[0]["note"] == "volume not attachable"
    assert condition(env, "a")["reason"] == "Unschedulable"


class WorkingPreBind:
    """A PreBind plugin whose PreBindPreFlight says it will act (as VolumeBinding with claims to bind)."""

    name = "Working"

    def __init__(self, acts: bool) -> None:
        self.acts = acts

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None if self.acts else Status.skip()

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None


@pytest.mark.parametrize("acts", [True, False])
async def test_a_pod_whose_pre_bind_will_act_gets_its_nominated_node_before_the_binding(
    make_env: MakeEnv, acts: bool
) -> None:
    """Upstream's NominatedNodeNameForExpectation (beta, on in v1.36): PreBindPreFlight says PreBind will
    act, so status.nominatedNodeName is published before PreBind and the Binding."""
    env = make_env(
        [make_node("n1")],
        extra_registry={"Working": lambda args, handle: WorkingPreBind(acts)},
        profile=profile_with(preBind=["Working"]),
    )
    env.queue.add(make_pod("a"))
    await env.schedule_next()
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.BOUND
    env.flush_writes()
    nominations = [
        (i, c)
        for i, c in enumerate(env.rest.calls)
        if c.method == "PATCH" and "nominatedNodeName" in str(c.body)
    ]
    if not acts:
        assert nominations == []
        return
    [(index, patch)] = nominations
    assert patch.body == {"status": {"nominatedNodeName": "n1"}}
    assert patch.path.endswith("/pods/a/status")
    [binding_index] = [i for i, c in enumerate(env.rest.calls) if c.path.endswith("/binding")]
    assert index < binding_index


async def test_the_nomination_a_bound_pod_carries_does_not_count_it_twice(make_env: MakeEnv) -> None:
    """Upstream ignores updates of assumed pods: our own nominatedNodeName patch coming back through the
    watch while the pod binds must not make it a nominated pod on top of its assumed place."""
    gate = Gate()
    env = make_env([make_node("n1")], respond=gate)
    pod = make_pod("a", cpu="1")
    h = handlers(env)
    h.on_pod_add(pod)
    await env.schedule_next()
    assert env.cache.is_assumed("default/a")
    published = {
        **pod,
        "metadata": {**pod["metadata"], "resourceVersion": "2"},
        "status": {"nominatedNodeName": "n1"},
    }
    h.on_pod_update(pod, published)
    assert env.queue.nominator.nominated_pods_for_node("n1") == []
    gate.release.set()
    await env.wait_bindings(1)


# --- pods the scheduler skips -----------------------------------------------------------------------


async def test_pod_being_deleted_is_skipped(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1")])
    pod = make_pod("a")
    pod["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    env.queue.add(pod)
    await env.schedule_next()
    assert env.queue.where("default/a") is None
    assert env.sched.stats.attempts == 0
    env.flush_writes()
    # Upstream's skipPodSchedule reports it (e.g. after its Binding met "being deleted"); nothing else.
    [event] = failed_events(env, "a")
    assert (event["type"], event["note"]) == ("Warning", "skip schedule deleting pod: default/a")
    assert [(c.method, c.path) for c in env.rest.calls] == [
        ("POST", "/apis/events.k8s.io/v1/namespaces/default/events")
    ]


async def test_pod_already_assumed_is_skipped(make_env: MakeEnv) -> None:
    gate = Gate()
    env = make_env([make_node("n1")], respond=gate)
    pod = make_pod("a")
    env.queue.add(pod)
    await env.schedule_next()
    # The pod shows up in activeQ again while its binding is in flight (upstream #96071).
    in_flight = env.queue.get("default/a")
    assert in_flight is not None
    env.queue.done(in_flight)
    env.queue.add(make_pod("a"))
    await env.schedule_next()
    assert env.queue.where("default/a") is None
    assert env.sched.stats.attempts == 1
    gate.release.set()
    await env.wait_bindings(1)


async def test_a_recreated_namesake_is_scheduled_while_the_old_pod_binds(make_env: MakeEnv) -> None:
    """The old pod's delete frees its name and its room at once (upstream's handleAssumedPodDeletion;
    upstream keys assumed pods by uid): the namesake is scheduled while the old Binding is still out,
    and the old Binding's 404 afterwards leaves the namesake's assumption alone."""
    release = threading.Event()

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if path.endswith("/binding") and body["metadata"]["uid"] == "uid-old":
            assert release.wait(5.0), "test never released the binding"
            return status_error(404, 'pods "a" not found')
        if method == "GET" and "/pods/" in path:
            return 200, orjson.dumps(make_pod("a", uid="uid-new"))
        return 201, b"{}"

    env = make_env([make_node("n1")], respond=respond)
    old = make_pod("a", uid="uid-old")
    h = handlers(env)
    h.on_pod_add(old)
    await env.schedule_next()
    h.on_pod_delete(old)
    h.on_pod_add(make_pod("a", uid="uid-new"))
    await env.schedule_next()
    await env.wait_bindings(1)
    assert [(r.task.pod.uid, r.outcome) for r in env.results] == [("uid-new", Outcome.BOUND)]
    assert env.cache.is_assumed("default/a")

    release.set()
    await env.wait_bindings(2)
    assert env.results[1].outcome is Outcome.CONFLICT
    cached = env.cache.get_pod("default/a")
    assert cached is not None and cached.uid == "uid-new" and env.cache.is_assumed("default/a")
    assert env.queue.where("default/a") is None


# --- bad pods and bad plugins never stop the loop ---------------------------------------------------


def _operator_affinity(operator: str, *, required: bool = False) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "zone", "operator": operator, "values": ["a"]}]}
    if required:
        # A required term's parse error is lazy (upstream): the term just matches no node.
        return {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    # Preferred terms are parsed strictly: the error fails the attempt.
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": term}]
        }
    }


async def run_until(env: CoreEnv, cond: Callable[[], bool]) -> None:
    """Run the real scheduling loop until ``cond`` holds, then cancel it (the queue stays usable)."""
    task = asyncio.create_task(env.sched.run())
    try:
        await wait_for(cond)
        assert not task.done(), "the scheduling loop ended by itself"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_by_default_failed_scheduling_events_carry_kube_schedulers_exact_text(
    make_env: MakeEnv,
) -> None:
    env = make_env([make_node("n1", cpu="1"), make_node("n2", cpu="1")])
    env.queue.add(make_pod("big", cpu="2"))
    await env.schedule_next()
    env.flush_writes()
    [event] = failed_events(env, "big")
    upstream = (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert event["note"] == upstream
    assert condition(env, "big")["message"] == upstream
    # The nearest misses stay in the decision record (explain, /debug/pods).
    record = env.decisions.store.latest("default/big")
    assert record is not None and len(record.nearest_misses) == 2


async def test_bad_pods_fail_scheduling_and_the_loop_goes_on(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1"), make_node("n2")])
    env.sched.nearest_misses_in_events = True
    pods = [
        make_pod("good-1", cpu="1"),
        make_pod("bad-quantity", cpu="1.5.3"),
        make_pod("bad-operator", affinity=_operator_affinity("Sometimes")),
        make_pod("missing-node", node_selector={"kubernetes.io/hostname": "nope"}),
        make_pod("bad-required-term", affinity=_operator_affinity("Sometimes", required=True)),
        make_pod("good-2", cpu="1"),
    ]
    for pod in pods:
        env.queue.add(pod)
    bad = ("bad-quantity", "bad-operator", "missing-node", "bad-required-term")
    await run_until(
        env,
        lambda: (
            set(env.rest.bindings()) == {"good-1", "good-2"}
            and all(env.queue.where(f"default/{n}") == "unschedulable" for n in bad)
        ),
    )
    env.flush_writes()

    quantity = failed_events(env, "bad-quantity")[0]["note"]
    assert "1.5.3" in quantity
    assert "Sometimes" in failed_events(env, "bad-operator")[0]["note"]
    for name in ("missing-node", "bad-required-term"):
        assert failed_events(env, name)[0]["note"].startswith(
            "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
            ""
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling. "
            "Nearest misses: "
        )
    for name in ("bad-quantity", "bad-operator"):
        qpi = env.queue.get(f"default/{name}")
        assert qpi is not None and qpi.unschedulable_plugins == {POD_SPEC_PLUGIN}
        assert condition(env, name)["reason"] == "Unschedulable"


# Shapes the API server's schema never lets through (a proxy, a fake, an aggregated server might):
# each ends bound, unschedulable or backing off, and never stops the loop or the pod next to it.
MISSHAPEN: dict[str, Callable[[dict[str, Any]], None]] = {
    "toleration-bogus-op": lambda p: p["spec"].update(
        tolerations=[{"key": "k", "operator": "Bogus", "effect": "NoSchedule"}]
    ),
    "tolerations-not-list": lambda p: p["spec"].update(tolerations="all"),
    "toleration-seconds-str": lambda p: p["spec"].update(
        tolerations=[{"operator": "Exists", "tolerationSeconds": "x"}]
    ),
    "toleration-not-dict": lambda p: p["spec"].update(tolerations=[5]),
    "pod-affinity-bogus-op": lambda p: p["spec"].update(
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": "zone",
                        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]},
                    }
                ]
            }
        }
    ),
    "pod-anti-affinity-bad-selector": lambda p: p["spec"].update(
        affinity={
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "podAffinityTerm": {
                            "topologyKey": "zone",
                            "labelSelector": {"matchLabels": {"a": 5}},
                        },
                    }
                ]
            }
        }
    ),
    "spread-maxskew-str": lambda p: p["spec"].update(
        topologySpreadConstraints=[
            {"maxSkew": "abc", "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ]
    ),
    "spread-bad-when": lambda p: p["spec"].update(
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}]
    ),
    "requests-list": lambda p: p["spec"]["containers"][0]["resources"].update(requests=["cpu"]),
    "requests-number": lambda p: p["spec"]["containers"][0]["resources"].update(requests={"cpu": 5}),
    "requests-negative": lambda p: p["spec"]["containers"][0]["resources"].update(requests={"cpu": "-1"}),
    "requests-nan": lambda p: p["spec"]["containers"][0]["resources"].update(requests={"cpu": "NaN"}),
    "node-selector-list": lambda p: p["spec"].update(nodeSelector=["a"]),
    "no-containers": lambda p: p["spec"].pop("containers"),
    "containers-null": lambda p: p["spec"].update(containers=None),
    "priority-str": lambda p: p["spec"].update(priority="high"),
    "overhead-bad": lambda p: p["spec"].update(overhead={"cpu": "lots"}),
    "host-port-str": lambda p: p["spec"]["containers"][0].update(
        ports=[{"containerPort": 80, "hostPort": "x"}]
    ),
    "volumes-not-list": lambda p: p["spec"].update(volumes={"a": 1}),
    "node-affinity-terms-null": lambda p: p["spec"].update(
        affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": None}}
        }
    ),
    "affinity-not-dict": lambda p: p["spec"].update(affinity=[1]),
    "init-containers-bad": lambda p: p["spec"].update(
        initContainers=[{"name": "i", "resources": {"requests": {"memory": "1.5.3"}}}]
    ),
    "labels-null": lambda p: p["metadata"].update(labels=None),
    "images-none": lambda p: p["spec"]["containers"][0].update(image=None),
    "resource-claims-bad": lambda p: p["spec"].update(resourceClaims=[{"name": 5}]),
    "scheduling-gates-bad": lambda p: p["spec"].update(schedulingGates=[{"nm": "x"}]),
}


@pytest.mark.parametrize("shape", list(MISSHAPEN))
async def test_a_misshapen_pod_never_stops_the_pod_next_to_it(make_env: MakeEnv, shape: str) -> None:
    env = make_env([make_node("n1"), make_node("n2")])
    weird = make_pod("weird", cpu="100m")
    MISSHAPEN[shape](weird)
    env.queue.add(weird)
    env.queue.add(make_pod("good", cpu="1"))
    await run_until(
        env,
        lambda: (
            "good" in env.rest.bindings()
            and (
                "weird" in env.rest.bindings()
                or env.queue.where("default/weird") in ("unschedulable", "backoff")
            )
        ),
    )
    env.flush_writes()
    if "weird" not in env.rest.bindings():
        [event] = failed_events(env, "weird")
        assert event["note"]


class BoomFilter:
    """Raises for pods whose name starts with "boom"."""

    name = "Boom"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if pod.name.startswith("boom"):
            raise RuntimeError("kaboom")
        return None


async def test_a_plugin_raising_in_filter_does_not_kill_the_loop(make_env: MakeEnv) -> None:
    env = make_env(
        [make_node("n1")],
        extra_registry={"Boom": lambda args, handle: BoomFilter()},
        profile=profile_with(filter=["Boom"]),
    )
    env.queue.add(make_pod("boom"))
    env.queue.add(make_pod("fine"))
    await run_until(
        env, lambda: env.rest.bindings() == {"fine": "n1"} and env.queue.where("default/boom") == "backoff"
    )
    env.flush_writes()
    [event] = failed_events(env, "boom")
    assert event["note"] == "internal error in the scheduling cycle: RuntimeError: kaboom"
    assert condition(env, "boom")["reason"] == "SchedulerError"


@pytest.mark.parametrize(
    ("cpu", "memory", "allocatable_cpu"),
    [
        # The API server accepts these requests (it keeps "1e100" as "10e99") on a pod created with
        # spec.nodeName, and a kubelet may report any allocatable: amounts past the int64 node columns.
        ("10e99", "100m", "4"),
        ("9223372036854775807", "9223372036854775807", "4"),
        ("100m", "100m", "1e100"),
    ],
)
async def test_amounts_past_int64_on_a_node_do_not_stop_other_pods(
    make_env: MakeEnv, cpu: str, memory: str, allocatable_cpu: str
) -> None:
    env = make_env([make_node("n1"), make_node("n2", cpu=allocatable_cpu)])
    handlers(env).on_pod_add(make_pod("huge", cpu=cpu, memory=memory, node_name="n2"))
    env.queue.add(make_pod("small", cpu="1"))
    env.queue.add(make_pod("greedy", cpu="5"))
    greedy_can_fit = allocatable_cpu != "4"
    await run_until(
        env,
        lambda: (
            "small" in env.rest.bindings()
            and (
                "greedy" in env.rest.bindings()
                if greedy_can_fit
                else env.queue.where("default/greedy") == "unschedulable"
            )
        ),
    )
    env.flush_writes()
    if greedy_can_fit:
        assert env.rest.bindings()["greedy"] == "n2"
    else:
        # Room is judged, not overflowed: neither node has 5 CPUs left.
        [event] = failed_events(env, "greedy")
        assert event["note"].startswith("0/2 nodes are available: 2 Insufficient cpu."), event["note"]


# --- Reserve and Permit -----------------------------------------------------------------------------


class ReservePlugin:
    name = "Reserver"

    def __init__(self, behaviour: dict[str, Any]) -> None:
        self.behaviour = behaviour

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        action = self.behaviour.get("reserve")
        if action == "raise":
            raise RuntimeError("reserve bug")
        if action == "reject":
            return Status.unschedulable("no room in the reservation")
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.behaviour.setdefault("unreserved", []).append(pod.key)


class PermitPlugin:
    name = "Gang"

    def __init__(self, behaviour: dict[str, Any]) -> None:
        self.behaviour = behaviour

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        action = self.behaviour.get("permit")
        if action == "reject":
            return Status.unschedulable("gang incomplete"), 0.0
        if action == "wait":
            return Status(Code.Wait), float(self.behaviour.get("timeout", 30.0))
        return None, 0.0


def reserve_permit_env(
    make_env: MakeEnv, behaviour: dict[str, Any], nodes: Sequence[Mapping[str, Any]]
) -> CoreEnv:
    return make_env(
        nodes,
        extra_registry={
            "Reserver": lambda args, handle: ReservePlugin(behaviour),
            "Gang": lambda args, handle: PermitPlugin(behaviour),
        },
        profile=profile_with(reserve=["Reserver"], permit=["Gang"]),
    )


async def test_reserve_rejection_unreserves_forgets_and_parks(make_env: MakeEnv) -> None:
    behaviour: dict[str, Any] = {"reserve": "reject"}
    env = reserve_permit_env(make_env, behaviour, [make_node("n1")])
    env.queue.add(make_pod("a", cpu="1"))
    await env.schedule_next()
    assert behaviour["unreserved"] == ["default/a"]
    assert not env.cache.is_assumed("default/a")
    assert requested_cpu(env.cache, "n1") == 0
    qpi = env.queue.get("default/a")
    assert qpi is not None and qpi.unschedulable_plugins == {"Reserver"}
    env.flush_writes()
    assert failed_events(env, "a")[0]["note"] == "0/1 nodes are available: 1 no room in the reservation."


async def test_reserve_raising_does_not_leak_the_assumed_pod(make_env: MakeEnv) -> None:
    behaviour: dict[str, Any] = {"reserve": "raise"}
    env = reserve_permit_env(make_env, behaviour, [make_node("n1")])
    env.queue.add(make_pod("a", cpu="1"))
    await run_until(env, lambda: env.queue.where("default/a") == "backoff")
    assert not env.cache.is_assumed("default/a")
    assert requested_cpu(env.cache, "n1") == 0
    assert behaviour["unreserved"] == ["default/a"]

    # And the next attempt is a real one, not skipped as "already assumed".
    behaviour["reserve"] = None
    env.clock.advance(2.0)  # an error's 1 s backoff, to the end of its ordering window
    await env.schedule_next()
    await env.wait_bindings(1)
    assert env.rest.bindings() == {"a": "n1"}


async def test_permit_rejection_parks_the_pod_with_the_plugin(make_env: MakeEnv) -> None:
    behaviour: dict[str, Any] = {"permit": "reject"}
    env = reserve_permit_env(make_env, behaviour, [make_node("n1")])
    env.queue.add(make_pod("a"))
    await env.schedule_next()
    assert behaviour["unreserved"] == ["default/a"]
    qpi = env.queue.get("default/a")
    assert qpi is not None and qpi.unschedulable_plugins == {"Gang"}
    env.flush_writes()
    assert failed_events(env, "a")[0]["note"] == "0/1 nodes are available: 1 gang incomplete."


async def test_permit_wait_then_allow_binds(make_env: MakeEnv) -> None:
    behaviour: dict[str, Any] = {"permit": "wait"}
    env = reserve_permit_env(make_env, behaviour, [make_node("n1")])
    env.queue.add(make_pod("a"))
    await env.schedule_next()
    waiting = env.sched.waiting_pods["default/a"]
    assert env.results == []
    # NominatedNodeNameForExpectation: a pod waiting at Permit publishes where it is going.
    env.flush_writes()
    [nomination] = [c for c in env.rest.status_patches() if "nominatedNodeName" in str(c.body)]
    assert nomination.body == {"status": {"nominatedNodeName": "n1"}}
    waiting.allow()
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.BOUND
    assert "default/a" not in env.sched.waiting_pods
    env.flush_writes()
    # Published once: the binding thread does not write it again.
    assert len([c for c in env.rest.status_patches() if "nominatedNodeName" in str(c.body)]) == 1


async def test_with_nominated_node_name_for_expectation_off_nothing_is_published(
    make_env: MakeEnv,
) -> None:
    # As kube-scheduler with the gate off (v1.34): neither the pod waiting at Permit nor the one whose
    # PreBind will act gets status.nominatedNodeName, and PreBind pre-flights are not consulted.
    behaviour: dict[str, Any] = {"permit": "wait"}
    env = make_env(
        [make_node("n1")],
        extra_registry={
            "Reserver": lambda args, handle: ReservePlugin(behaviour),
            "Gang": lambda args, handle: PermitPlugin(behaviour),
            "Working": lambda args, handle: WorkingPreBind(True),
        },
        profile=profile_with(reserve=["Reserver"], permit=["Gang"], preBind=["Working"]),
        nominated_node_name_for_expectation=False,
    )
    env.queue.add(make_pod("a"))
    await env.schedule_next()
    env.sched.waiting_pods["default/a"].allow()
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.BOUND
    env.flush_writes()
    assert [c for c in env.rest.status_patches() if "nominatedNodeName" in str(c.body)] == []
    assert [c for c in env.rest.calls if c.path.endswith("/binding")]


async def test_permit_wait_then_reject_parks_the_pod(make_env: MakeEnv) -> None:
    behaviour: dict[str, Any] = {"permit": "wait"}
    env = reserve_permit_env(make_env, behaviour, [make_node("n1")])
    env.queue.add(make_pod("a", cpu="1"))
    await env.schedule_next()
    env.sched.waiting_pods["default/a"].reject("Gang", "gang member failed")
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.REJECTED
    assert not env.cache.is_assumed("default/a")
    qpi = env.queue.get("default/a")
    assert qpi is not None and qpi.unschedulable_plugins == {"Gang"}
    env.flush_writes()
    assert env.rest.bindings() == {}
    assert failed_events(env, "a")[0]["note"] == "0/1 nodes are available: 1 gang member failed."


async def test_a_pod_rejected_at_permit_takes_back_the_nomination_it_published(make_env: MakeEnv) -> None:
    """Waiting at Permit published nominatedNodeName (NominatedNodeNameForExpectation); rejected, the
    pod clears it as upstream's clearNominatedNode does, even though the pod it holds does not show the
    value yet, and the late echo of that write does not nominate it again (it would hold room on the
    node against every other pod)."""
    behaviour: dict[str, Any] = {"permit": "wait"}
    env = reserve_permit_env(make_env, behaviour, [make_node("n1")])
    pod = make_pod("a", cpu="1")
    env.queue.add(pod)
    await env.schedule_next()
    env.sched.waiting_pods["default/a"].reject("Gang", "gang member failed")
    await env.wait_bindings(1)
    echo = {**pod, "status": {"nominatedNodeName": "n1"}}
    env.queue.update(pod, echo)
    assert env.queue.nominator.nominated_node_for(echo) == ""
    env.flush_writes()
    written = [
        c.body["status"]["nominatedNodeName"]
        for c in env.rest.status_patches()
        if "nominatedNodeName" in c.body.get("status", {})
    ]
    assert written == ["n1", ""]


async def test_permit_wait_timeout_is_a_rejection_by_the_plugin(make_env: MakeEnv) -> None:
    behaviour: dict[str, Any] = {"permit": "wait", "timeout": 0.01}
    env = reserve_permit_env(make_env, behaviour, [make_node("n1")])
    env.queue.add(make_pod("a"))
    await env.schedule_next()
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.REJECTED
    qpi = env.queue.get("default/a")
    assert qpi is not None and qpi.unschedulable_plugins == {"Gang"}
    env.flush_writes()
    assert failed_events(env, "a")[0]["note"] == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 0.01s at plugin Gang."
    )


async def test_pod_of_an_unknown_profile_is_dropped_quietly(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1")])
    env.queue.add(make_pod("a", scheduler_name="not-ours"))
    await env.schedule_next()
    assert env.queue.where("default/a") is None
    env.flush_writes()
    assert env.rest.calls == []


async def test_stop_ends_the_loop(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1")])
    task = asyncio.create_task(env.sched.run())
    await asyncio.sleep(0)  # let it block in pop()
    env.sched.stop()
    await asyncio.wait_for(task, 2.0)
    assert env.queue.closed and env.sched.stopping


async def test_stop_releases_pods_waiting_at_permit(make_env: MakeEnv) -> None:
    behaviour: dict[str, Any] = {"permit": "wait", "timeout": 600.0}
    env = reserve_permit_env(make_env, behaviour, [make_node("n1")])
    env.queue.add(make_pod("a"))
    await env.schedule_next()
    env.sched.stop()
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.REJECTED
    assert env.rest.bindings() == {}


async def test_deleting_a_pod_waiting_at_permit_rejects_it(make_env: MakeEnv) -> None:
    behaviour: dict[str, Any] = {"permit": "wait", "timeout": 600.0}
    env = reserve_permit_env(make_env, behaviour, [make_node("n1")])
    pod = make_pod("a")
    env.queue.add(pod)
    await env.schedule_next()
    handlers = EventHandlers(
        queue=env.queue,
        cache=env.cache,
        profiles=[PROFILE],
        reject_deleted_waiting_pod=env.sched.reject_deleted_waiting_pod,
    )
    handlers.on_pod_delete(pod)
    await env.wait_bindings(1)
    assert env.results[0].outcome is Outcome.REJECTED
    assert env.rest.bindings() == {}


async def test_handle_exposes_waiting_pods_to_permit_plugins(make_env: MakeEnv) -> None:
    behaviour: dict[str, Any] = {"permit": "wait", "timeout": 600.0}
    env = reserve_permit_env(make_env, behaviour, [make_node("n1")])
    env.queue.add(make_pod("a"))
    await env.schedule_next()
    waiting = env.sched.waiting_pods["default/a"]
    handle = FrameworkHandle(PROFILE, Snapshot, None, lambda: 0.0, lambda: env.sched.waiting_pods)
    assert handle.get_waiting_pod("default/a") is waiting
    assert handle.get_waiting_pod("default/b") is None
    assert handle.waiting_pods() == [waiting]
    env.sched.stop()
    await env.wait_bindings(1)


# --- nomination on failure (upstream clearNominatedNode) --------------------------------------------


async def test_failure_without_post_filter_clears_the_nomination(make_env: MakeEnv) -> None:
    """No PostFilter plugin ran, so upstream patches nominatedNodeName to "" and drops the pod from
    the nominator; a pod with no nomination gets no nominatedNodeName in its patch."""
    env = make_env([make_node("n1", cpu="1")])
    nominated = make_pod("nominated", cpu="4")
    nominated["status"] = {"nominatedNodeName": "n1"}
    plain = make_pod("plain", cpu="4")
    env.queue.add(nominated)
    env.queue.add(plain)
    assert env.queue.nominator.nominated_node_for(nominated) == "n1"
    await env.schedule_next()
    await env.schedule_next()
    env.flush_writes()
    assert env.queue.nominator.nominated_node_for(nominated) == ""
    patches = {c.path.rsplit("/", 2)[-2]: c.body["status"] for c in env.rest.status_patches()}
    assert patches["nominated"]["nominatedNodeName"] == ""
    assert "nominatedNodeName" not in patches["plain"]


class SelectivePermit:
    """Holds pods named ``gang-*`` at Permit; lets every other pod through."""

    name = "Gang"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        if pod.name.startswith("gang-"):
            return Status(Code.Wait), 600.0
        return None, 0.0


async def test_thousands_waiting_at_permit_hold_no_binding_threads(make_env: MakeEnv) -> None:
    env = make_env(
        [make_node("n1", cpu="1000", pods=5000)],
        extra_registry={"Gang": lambda args, handle: SelectivePermit()},
        profile=profile_with(permit=["Gang"]),
    )
    for i in range(2000):
        env.queue.add(make_pod(f"gang-{i}"))
        await env.schedule_next()
    assert len(env.sched.waiting_pods) == 2000
    assert env.sched.binding_pool.in_flight == 0  # waiting costs no worker (the pool has 2)
    env.queue.add(make_pod("solo"))
    await env.schedule_next()
    await env.wait_bindings(1)
    assert env.rest.bindings() == {"solo": "n1"}
    # Every waiter allowed: all bind through the pool.
    for waiting in env.sched.waiting_pods.iterate():
        waiting.allow("Gang")
    await env.wait_bindings(2001, timeout=60.0)
    assert all(r.outcome is Outcome.BOUND for r in env.results)


def batching_counts() -> tuple[float, float]:
    hits = REGISTRY.get_sample_value("py_scheduler_batching_hits_total") or 0.0
    misses = REGISTRY.get_sample_value("py_scheduler_batching_misses_total") or 0.0
    return hits, misses


@pytest.mark.parametrize("gate", [True, False])
async def test_opportunistic_batching_gate_decides_whether_identical_pods_reuse_work(
    make_env: MakeEnv, gate: bool
) -> None:
    # The gate's default (on) is the Scheduler's: the second and third identical pods are answered from
    # the first one's cache; with the gate off no pod goes near the cache. Both bind all three.
    hits_before, misses_before = batching_counts()
    env = make_env([make_node(f"n{i}") for i in range(4)], opportunistic_batching=gate)
    for name in ("a", "b", "c"):
        env.queue.add(make_pod(name))
        await env.schedule_next()
    await env.wait_bindings(3)
    assert [r.outcome for r in env.results] == [Outcome.BOUND] * 3
    hits, misses = batching_counts()
    assert (hits - hits_before, misses - misses_before) == ((2.0, 1.0) if gate else (0.0, 0.0))
