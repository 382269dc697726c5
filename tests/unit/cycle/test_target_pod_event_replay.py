"""The in-tree plugins' v1.37.2 pod registrations, as the queue sees them (``queue_hints`` over the
default profile), and the consequence upstream has: a pending pod's own update is a TargetPod event,
the in-flight log replays it to every in-flight pod that fails (upstream's shared inFlightEvents), and
the TargetPod hints no longer compare uids. So pod A's update, recorded while A and B were both in
flight, requeues B when B's rejector's TargetPod hint says Queue (v1.36's Pod hints skipped it by uid).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.cache import SchedulerCache
from scheduler.cycle.profiles import queue_hints
from scheduler.plugins import names
from scheduling_queue import (
    BACKOFF,
    UNSCHEDULABLE,
    ActionType,
    FakeClock,
    Resource,
    SchedulingQueue,
)
from scheduling_queue.testing import fail, make_pod, pop, with_changes
from tests.unit.fakes import PROFILE, build_frameworks

UNSCHEDULABLE_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}


def _queue(clock: FakeClock) -> SchedulingQueue:
    snapshot = SchedulerCache().snapshot()
    frameworks = build_frameworks(lambda: snapshot, None, clock.now)
    return SchedulingQueue(clock=clock, hints=queue_hints(frameworks))


def _pod_registrations() -> dict[str, set[tuple[Resource, ActionType]]]:
    snapshot = SchedulerCache().snapshot()
    frameworks = build_frameworks(lambda: snapshot, None, lambda: 0.0)
    pod_resources = {Resource.Pod, Resource.AssignedPod, Resource.UnscheduledPod, Resource.TargetPod}
    out: dict[str, set[tuple[Resource, ActionType]]] = {}
    for plugin, events in frameworks[PROFILE].events_to_register().items():
        regs = {(e.event.resource, e.event.action) for e in events if e.event.resource in pod_resources}
        if regs:
            out[plugin] = regs
    return out


def test_default_profile_pod_registrations_are_v1_37_2s() -> None:
    """Every default-profile plugin's pod registrations, as v1.37.2's EventsToRegister (no plugin
    registers the v1.36 catch-all ``Pod`` resource any more)."""
    assigned_change = ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete
    assert _pod_registrations() == {
        names.NODE_UNSCHEDULABLE: {(Resource.TargetPod, ActionType.UpdatePodToleration)},
        names.TAINT_TOLERATION: {(Resource.TargetPod, ActionType.UpdatePodToleration)},
        names.NODE_PORTS: {(Resource.AssignedPod, ActionType.Delete)},
        names.NODE_RESOURCES_FIT: {
            (Resource.AssignedPod, ActionType.Delete),
            (Resource.AssignedPod, ActionType.UpdatePodScaleDown),
            (Resource.TargetPod, ActionType.UpdatePodScaleDown),
        },
        names.VOLUME_RESTRICTIONS: {(Resource.AssignedPod, ActionType.Delete)},
        names.NODE_VOLUME_LIMITS: {(Resource.AssignedPod, ActionType.Delete)},
        names.POD_TOPOLOGY_SPREAD: {
            (Resource.AssignedPod, assigned_change),
            (Resource.TargetPod, ActionType.UpdatePodToleration | ActionType.UpdatePodLabel),
        },
        names.INTER_POD_AFFINITY: {
            (Resource.AssignedPod, assigned_change),
            (Resource.TargetPod, ActionType.UpdatePodLabel),
        },
        names.DEFAULT_PREEMPTION: {(Resource.AssignedPod, ActionType.Delete)},
        names.SCHEDULING_GATES: {(Resource.TargetPod, ActionType.UpdatePodSchedulingGatesEliminated)},
        names.NODE_DECLARED_FEATURES: {(Resource.TargetPod, ActionType.Update)},
        names.DYNAMIC_RESOURCES: {(Resource.TargetPod, ActionType.UpdatePodGeneratedResourceClaim)},
    }


@pytest.mark.parametrize(
    ("rejector", "change"),
    [
        (names.TAINT_TOLERATION, {"spec": {"tolerations": [UNSCHEDULABLE_TOLERATION]}}),
        (names.NODE_UNSCHEDULABLE, {"spec": {"tolerations": [UNSCHEDULABLE_TOLERATION]}}),
        (names.INTER_POD_AFFINITY, {"metadata": {"labels": {"app": "web"}}}),
    ],
)
def test_another_in_flight_pods_target_pod_update_requeues_the_failed_pod(
    rejector: str, change: dict[str, Any]
) -> None:
    clock = FakeClock(start=0.0)
    q = _queue(clock)
    a, b = make_pod("a"), make_pod("b")
    q.add(a)
    q.add(b)
    a_attempt, b_attempt = pop(q), pop(q)
    assert {a_attempt.key, b_attempt.key} == {"default/a", "default/b"}
    # A's own update while both are in flight: recorded as TargetPod events in the shared log.
    updated = with_changes(a, **change)
    q.update(a, updated)
    fail(q, b_attempt, rejector)
    # Replayed to B: the TargetPod hint answers Queue without asking whose update it was.
    assert q.where("default/b") == BACKOFF
    fail(q, a_attempt, rejector)
    assert q.where("default/a") == BACKOFF


def test_replayed_target_pod_update_does_not_reach_unrelated_rejectors() -> None:
    """The replay goes only where a rejector registered the event: B rejected by NodeResourcesFit
    (no TargetPod toleration registration) stays unschedulable after A's new toleration."""
    clock = FakeClock(start=0.0)
    q = _queue(clock)
    a, b = make_pod("a"), make_pod("b")
    q.add(a)
    q.add(b)
    _, b_attempt = pop(q), pop(q)
    q.update(a, with_changes(a, spec={"tolerations": [UNSCHEDULABLE_TOLERATION]}))
    fail(q, b_attempt, names.NODE_RESOURCES_FIT)
    assert q.where("default/b") == UNSCHEDULABLE
