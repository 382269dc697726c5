"""The PodGroupInitiallyScheduled condition of upstream's pod group cycle (``submitPodGroupAlgorithmResult``
and ``updatePodGroupCondition`` in kube-scheduler v1.37.2's ``schedule_one_podgroup.go``): the pure patch,
then the pod group cycle writing it, and a member's error failing the whole group."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler.client.events import rfc3339
from scheduler.cycle.podgroup_condition import scheduled_condition_patch
from scheduler.cycle.schedule_one_podgroup import PodGroupCycle
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo
from tests.unit.fakes import PROFILE, CoreEnv, make_node, make_pod

MakeEnv = Callable[..., CoreEnv]
NOW = 1_700_000_000.0


def group(
    conditions: Sequence[Mapping[str, Any]] = (), generation: int = 3, priority: int = 0
) -> dict[str, Any]:
    return {
        "metadata": {"name": "g", "namespace": "default", "uid": "g-uid", "generation": generation},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "priority": priority},
        "status": {"conditions": list(conditions)},
    }


def test_first_condition_is_written_with_the_generation_and_now() -> None:
    patch = scheduled_condition_patch(group(), True, "Scheduled", "", NOW)
    assert patch == {
        "status": {
            "conditions": [
                {
                    "type": "PodGroupInitiallyScheduled",
                    "status": "True",
                    "reason": "Scheduled",
                    "message": "",
                    "lastTransitionTime": rfc3339(NOW),
                    "observedGeneration": 3,
                }
            ]
        }
    }


def test_an_unchanged_condition_is_not_written_again() -> None:
    written = scheduled_condition_patch(group(), False, "Unschedulable", "pod group is unschedulable", NOW)
    assert written is not None
    existing = written["status"]["conditions"]
    assert (
        scheduled_condition_patch(
            group(existing), False, "Unschedulable", "pod group is unschedulable", NOW + 9
        )
        is None
    )


def test_a_new_message_keeps_the_transition_time_a_new_status_moves_it() -> None:
    old = {
        "type": "PodGroupInitiallyScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "a",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
        "observedGeneration": 3,
    }
    patch = scheduled_condition_patch(group([old]), False, "SchedulerError", "boom", NOW)
    assert patch is not None
    [cond] = patch["status"]["conditions"]
    assert (cond["reason"], cond["message"], cond["lastTransitionTime"]) == (
        "SchedulerError",
        "boom",
        old["lastTransitionTime"],
    )
    patch = scheduled_condition_patch(group([old]), True, "Scheduled", "", NOW)
    assert patch is not None
    assert patch["status"]["conditions"][0]["lastTransitionTime"] == rfc3339(NOW)


def test_a_scheduled_group_never_regresses_to_false() -> None:
    scheduled = {
        "type": "PodGroupInitiallyScheduled",
        "status": "True",
        "reason": "Scheduled",
        "message": "",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
        "observedGeneration": 3,
    }
    assert scheduled_condition_patch(group([scheduled]), False, "Unschedulable", "x", NOW) is None
    # ...but a new generation of a True condition is recorded.
    patch = scheduled_condition_patch(group([scheduled], generation=4), True, "Scheduled", "", NOW)
    assert patch is not None and patch["status"]["conditions"][0]["observedGeneration"] == 4


# --- the pod group cycle ------------------------------------------------------------------------


class FailsFor:
    """PreFilter: an Error for the named pod (an internal failure, not a rejection)."""

    name = "FailsFor"

    def __init__(self, victim: str) -> None:
        self.victim = victim

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[None, Status | None]:
        if pod.name == self.victim:
            return None, Status.as_error("disk on fire")
        return None, None


def member(name: str, cpu: str = "1") -> dict[str, Any]:
    pod = make_pod(name, cpu=cpu)
    pod["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    return pod


def group_env(make_env: MakeEnv, victim: str = "") -> tuple[CoreEnv, list[dict[str, Any]]]:
    env = make_env(
        [make_node("n1", cpu="4")],
        extra_registry={"FailsFor": lambda args, handle: FailsFor(victim)},
        profile={"schedulerName": PROFILE, "plugins": {"preFilter": {"enabled": [{"name": "FailsFor"}]}}},
    )
    # The gang gates are off in this fake's frameworks; the cycle, not the guard, is under test.
    env.fwk.guard = None
    members = [member("m0"), member("m1"), member("m2")]
    env.sched.pod_group_cycle = PodGroupCycle(
        env.sched, lambda ns, name: members, lambda ns, name: group() if name == "g" else None
    )
    for pod in members:
        env.queue.add(pod)
    return env, members


def condition_patches(env: CoreEnv) -> list[dict[str, Any]]:
    return [
        c.body["status"]["conditions"][0]
        for c in env.rest.matching(
            "PATCH", "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups/g/status"
        )
    ]


async def test_a_group_cycle_writes_scheduled_true_for_a_feasible_group(make_env: MakeEnv) -> None:
    env, _ = group_env(make_env)
    qpi = env.queue.pop_nowait()
    assert qpi is not None
    await env.sched.pod_group_cycle.schedule(qpi)  # type: ignore[union-attr]
    env.flush_writes()
    [cond] = condition_patches(env)
    assert (cond["status"], cond["reason"], cond["message"], cond["observedGeneration"]) == (
        "True",
        "Scheduled",
        "",
        3,
    )


async def test_a_members_error_fails_the_whole_group_with_it(make_env: MakeEnv) -> None:
    """Upstream stops at the first member whose attempt errs: every member fails with
    "failed to schedule other pod from a pod group: ...", and nothing binds."""
    env, _ = group_env(make_env, victim="m1")
    qpi = env.queue.pop_nowait()
    assert qpi is not None and qpi.key == "default/m0"
    await env.sched.pod_group_cycle.schedule(qpi)  # type: ignore[union-attr]
    env.flush_writes()
    assert env.rest.bindings() == {}
    for name in ("m0", "m1", "m2"):
        assert env.queue.where(f"default/{name}") == "backoff", name
    events = {e["regarding"]["name"]: e for e in env.rest.events() if e["reason"] == "FailedScheduling"}
    assert sorted(events) == ["m0", "m1", "m2"]
    assert "disk on fire" in events["m1"]["note"]
    assert events["m0"]["note"].startswith("failed to schedule other pod from a pod group: ")
    assert events["m2"]["note"] == events["m0"]["note"]
    [cond] = condition_patches(env)
    assert (cond["status"], cond["reason"]) == ("False", "SchedulerError")
    assert (
        cond["message"].startswith("failed to schedule other pod from a pod group: ")
        and "disk on fire" in cond["message"]
    )


async def test_members_whose_priority_differs_from_the_groups_fail_with_upstreams_error(
    make_env: MakeEnv,
) -> None:
    """v1.37.2's validatePodGroup: every member has the PodGroup's priority (spec.priority, which the
    Priority admission plugin sets), else the whole group fails with that error before scheduling."""
    from tests.unit.preemption.test_preemption_cycle import with_priority

    env = make_env([make_node("n1", cpu="4")])
    env.fwk.guard = None
    members = [with_priority(member("m0"), 100), member("m1")]
    env.sched.pod_group_cycle = PodGroupCycle(
        env.sched, lambda ns, name: members, lambda ns, name: group(priority=100)
    )
    for pod in members:
        env.queue.add(pod)
    qpi = env.queue.pop_nowait()
    assert qpi is not None
    await env.sched.pod_group_cycle.schedule(qpi)
    env.flush_writes()
    assert env.rest.bindings() == {}
    notes = {
        e["regarding"]["name"]: e["note"] for e in env.rest.events() if e["reason"] == "FailedScheduling"
    }
    assert sorted(notes) == ["m0", "m1"]
    assert set(notes.values()) == {
        "all pods in a single pod group should have the same priority as the pod group's priority, "
        "got 0 and 100"
    }
