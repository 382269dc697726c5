"""Cluster events, queueing hints and the replay of events that arrive while a pod is in flight."""

from __future__ import annotations

from typing import Any

import pytest

from scheduling_queue import (
    ACTIVE,
    BACKOFF,
    IN_FLIGHT,
    UNSCHEDULABLE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FakeClock,
    QueuedPodInfo,
    QueueingHint,
    Resource,
    SchedulingQueue,
)
from scheduling_queue.hints import AFTER_BACKOFF, IMMEDIATELY, SKIP, HintRegistry
from scheduling_queue.testing import fail, make_pod, pop, queue_always, skip_always, with_changes

NODE_ADD = ClusterEvent(Resource.Node, ActionType.Add)
NODE_LABEL = ClusterEvent(Resource.Node, ActionType.UpdateNodeLabel)
NODE_TAINT = ClusterEvent(Resource.Node, ActionType.UpdateNodeTaint)
PV_ADD = ClusterEvent(Resource.PersistentVolume, ActionType.Add)
NODE = {"metadata": {"name": "node-1"}}


class Spy:
    """A hint function that records its calls and answers from a table (default Queue)."""

    def __init__(self, answers: dict[str, QueueingHint] | None = None) -> None:
        self.calls: list[tuple[str, Any, Any]] = []
        self.answers = answers or {}

    def __call__(self, pod: Any, old: Any, new: Any) -> QueueingHint:
        name = pod["metadata"]["name"]
        self.calls.append((name, old, new))
        return self.answers.get(name, QueueingHint.Queue)


def unschedulable(
    q: SchedulingQueue, name: str, *plugins: str, pending: tuple[str, ...] = ()
) -> QueuedPodInfo:
    q.add(make_pod(name))
    qpi = pop(q)
    fail(q, qpi, *plugins, pending=pending)
    assert q.where(qpi.key) == UNSCHEDULABLE
    return qpi


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=0.0)


def test_event_no_plugin_registered_is_a_no_op(clock: FakeClock) -> None:
    spy = Spy()
    q = SchedulingQueue(clock=clock, hints={"NodeAffinity": [ClusterEventWithHint(NODE_ADD, spy)]})
    unschedulable(q, "a", "NodeAffinity")
    q.add(make_pod("flying"))
    pop(q)
    q.move_all_to_active_or_backoff(PV_ADD, None, {"metadata": {"name": "pv"}})
    q.move_all_to_active_or_backoff(NODE_LABEL, NODE, NODE)  # Add-only registration
    assert spy.calls == []
    assert q.where("default/a") == UNSCHEDULABLE
    assert q.in_flight_event_count == 0  # not even logged for the in-flight pod


def test_only_the_rejecting_plugins_hints_are_asked(clock: FakeClock) -> None:
    fit, affinity = Spy(), Spy()
    q = SchedulingQueue(
        clock=clock,
        hints={
            "NodeResourcesFit": [ClusterEventWithHint(NODE_ADD, fit)],
            "NodeAffinity": [ClusterEventWithHint(NODE_ADD, affinity)],
        },
    )
    unschedulable(q, "fit", "NodeResourcesFit")
    unschedulable(q, "aff", "NodeAffinity")
    unschedulable(q, "other", "VolumeBinding")
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    assert [c[0] for c in fit.calls] == ["fit"]
    assert [c[0] for c in affinity.calls] == ["aff"]
    assert fit.calls[0][1:] == (None, NODE)
    assert q.where("default/fit") == BACKOFF and q.where("default/aff") == BACKOFF
    assert q.where("default/other") == UNSCHEDULABLE


def test_skip_keeps_the_pod_and_queue_respects_backoff(clock: FakeClock) -> None:
    spy = Spy({"skip": QueueingHint.Skip})
    q = SchedulingQueue(clock=clock, hints={"NodeAffinity": [ClusterEventWithHint(NODE_ADD, spy)]})
    unschedulable(q, "skip", "NodeAffinity")
    unschedulable(q, "early", "NodeAffinity")
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    assert q.where("default/skip") == UNSCHEDULABLE
    assert q.where("default/early") == BACKOFF  # failed at t=0 with a 1 s backoff
    unschedulable(q, "late", "NodeAffinity")
    clock.advance(2.0)  # a 1 s backoff lasts to the end of the window it expires in
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    assert q.where("default/late") == ACTIVE  # its backoff ended while it was unschedulable


def test_registration_without_hint_and_raising_hint_both_queue(clock: FakeClock) -> None:
    def broken(pod: Any, old: Any, new: Any) -> QueueingHint:
        raise RuntimeError("bug in a plugin")

    q = SchedulingQueue(
        clock=clock,
        hints={
            "NoHint": [ClusterEventWithHint(NODE_ADD)],
            "Broken": [ClusterEventWithHint(NODE_ADD, broken)],
        },
    )
    unschedulable(q, "a", "NoHint")
    unschedulable(q, "b", "Broken")
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    assert q.where("default/a") == BACKOFF and q.where("default/b") == BACKOFF


def test_pending_plugin_queue_skips_backoff(clock: FakeClock) -> None:
    q = SchedulingQueue(
        clock=clock,
        hints={
            "DRA": [ClusterEventWithHint(NODE_ADD, queue_always)],
            "NodeAffinity": [ClusterEventWithHint(NODE_ADD, queue_always)],
            "Quiet": [ClusterEventWithHint(NODE_ADD, skip_always)],
        },
    )
    unschedulable(q, "pending", pending=("DRA",))
    unschedulable(q, "both", "NodeAffinity", pending=("Quiet",))
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    assert q.where("default/pending") == ACTIVE  # inside its backoff window, but Pending means now
    assert q.where("default/both") == BACKOFF  # only the Unschedulable plugin said Queue


def test_wildcard_event_moves_every_unschedulable_pod(clock: FakeClock) -> None:
    q = SchedulingQueue(clock=clock, hints={"NodeAffinity": [ClusterEventWithHint(NODE_ADD, skip_always)]})
    unschedulable(q, "a", "NodeAffinity")
    unschedulable(q, "b", "SomethingElse")
    q.move_all_to_active_or_backoff(ClusterEvent(Resource.WildCard, ActionType.All, "Custom"))
    assert q.where("default/a") == BACKOFF and q.where("default/b") == BACKOFF


def test_update_event_matching_follows_upstream(clock: FakeClock) -> None:
    """A specific registration doesn't hear a generic update; a generic one hears specific updates."""
    label_only, any_update = Spy(), Spy()
    q = SchedulingQueue(
        clock=clock,
        hints={
            "NodeAffinity": [ClusterEventWithHint(NODE_LABEL, label_only)],
            "TaintToleration": [
                ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Update), any_update)
            ],
        },
    )
    unschedulable(q, "a", "NodeAffinity", "TaintToleration")
    q.move_all_to_active_or_backoff(ClusterEvent(Resource.Node, ActionType.Update), NODE, NODE)
    assert label_only.calls == [] and len(any_update.calls) == 1
    q2 = SchedulingQueue(
        clock=clock, hints={"TaintToleration": [ClusterEventWithHint(NODE_TAINT, any_update)]}
    )
    unschedulable(q2, "b", "TaintToleration")
    q2.move_all_to_active_or_backoff(NODE_TAINT, NODE, NODE)
    assert q2.where("default/b") == BACKOFF


def test_assigned_pod_events_reach_pod_registrations(clock: FakeClock) -> None:
    affinity = Spy()
    fit = Spy()
    q = SchedulingQueue(
        clock=clock,
        hints={
            "InterPodAffinity": [
                ClusterEventWithHint(
                    ClusterEvent(Resource.Pod, ActionType.Add | ActionType.UpdatePodLabel), affinity
                )
            ],
            "NodeResourcesFit": [ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.Delete), fit)],
        },
    )
    unschedulable(q, "aff", "InterPodAffinity")
    unschedulable(q, "fit", "NodeResourcesFit")
    bound = make_pod("bound", node_name="node-1", labels={"app": "x"})
    affinity.answers["aff"] = QueueingHint.Skip
    q.assigned_pod_added(bound)
    assert affinity.calls == [("aff", None, bound)]
    relabelled = with_changes(bound, metadata={"labels": {"app": "y"}})
    q.assigned_pod_updated(bound, relabelled)
    assert affinity.calls[-1] == ("aff", bound, relabelled)
    assert fit.calls == []
    q.assigned_pod_deleted(relabelled)
    assert fit.calls == [("fit", relabelled, None)]
    assert q.where("default/fit") == BACKOFF and q.where("default/aff") == UNSCHEDULABLE


def test_pre_check_narrows_the_candidates(clock: FakeClock) -> None:
    q = SchedulingQueue(clock=clock, hints={"NodeAffinity": [ClusterEventWithHint(NODE_ADD)]})
    unschedulable(q, "a", "NodeAffinity")
    unschedulable(q, "b", "NodeAffinity")
    q.move_all_to_active_or_backoff(
        NODE_ADD, None, NODE, pre_check=lambda pod: pod["metadata"]["name"] == "b"
    )
    assert q.where("default/a") == UNSCHEDULABLE and q.where("default/b") == BACKOFF


def test_error_pods_are_worth_requeuing_on_any_event(clock: FakeClock) -> None:
    registry = HintRegistry({"NodeAffinity": [ClusterEventWithHint(NODE_ADD, skip_always)]})
    errored = QueuedPodInfo(make_pod("a"), "default/a", 0.0, 0.0)
    assert registry.strategy(errored, PV_ADD, None, None) == AFTER_BACKOFF
    rejected = QueuedPodInfo(make_pod("b"), "default/b", 0.0, 0.0, unschedulable_plugins={"NodeAffinity"})
    assert registry.strategy(rejected, NODE_ADD, None, NODE) == SKIP
    assert registry.strategy(rejected, PV_ADD, None, None) == SKIP
    pending = QueuedPodInfo(make_pod("c"), "default/c", 0.0, 0.0, pending_plugins={"X"})
    assert (
        HintRegistry({"X": [ClusterEventWithHint(PV_ADD)]}).strategy(pending, PV_ADD, None, None)
        == IMMEDIATELY
    )
    assert registry.interesting(NODE_ADD) and not registry.interesting(PV_ADD)


# --------------------------------------------------------------------------- in-flight replay


def test_pod_rejected_after_a_relevant_event_does_not_wait_five_minutes(clock: FakeClock) -> None:
    """The lost wake-up: the node that would fit arrives while the pod is being scheduled."""
    q = SchedulingQueue(
        clock=clock, hints={"NodeResourcesFit": [ClusterEventWithHint(NODE_ADD, queue_always)]}
    )
    q.add(make_pod("a"))
    qpi = pop(q)
    clock.advance(0.2)
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)  # arrives mid-attempt
    clock.advance(0.2)
    fail(q, qpi, "NodeResourcesFit")  # the attempt saw the old snapshot
    assert q.where("default/a") == BACKOFF
    clock.advance(1.0)
    q.flush_backoff_completed()
    assert q.where("default/a") == BACKOFF  # failed at 0.4: backs off to the end of window 1
    clock.advance(0.6)
    q.flush_backoff_completed()
    assert q.where("default/a") == ACTIVE
    assert clock.now() <= 2.0  # not 300 s
    assert q.in_flight_event_count == 0


def test_pending_plugin_replay_goes_to_active(clock: FakeClock) -> None:
    q = SchedulingQueue(clock=clock, hints={"DRA": [ClusterEventWithHint(NODE_ADD, queue_always)]})
    q.add(make_pod("a"))
    qpi = pop(q)
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    fail(q, qpi, pending=("DRA",))
    assert q.where("default/a") == ACTIVE


def test_in_flight_event_that_does_not_help_leaves_pod_unschedulable(clock: FakeClock) -> None:
    spy = Spy({"a": QueueingHint.Skip})
    q = SchedulingQueue(clock=clock, hints={"NodeResourcesFit": [ClusterEventWithHint(NODE_ADD, spy)]})
    q.add(make_pod("a"))
    qpi = pop(q)
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    fail(q, qpi, "NodeResourcesFit")
    assert q.where("default/a") == UNSCHEDULABLE
    assert spy.calls == [("a", None, NODE)]


def test_event_before_the_pop_is_not_replayed(clock: FakeClock) -> None:
    spy = Spy()
    q = SchedulingQueue(clock=clock, hints={"NodeResourcesFit": [ClusterEventWithHint(NODE_ADD, spy)]})
    q.add(make_pod("busy"))
    busy = pop(q)  # keeps the in-flight log recording
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    q.add(make_pod("a"))
    qpi = pop(q)
    fail(q, qpi, "NodeResourcesFit")
    assert q.where("default/a") == UNSCHEDULABLE
    assert spy.calls == []
    assert q.in_flight_event_count == 1  # still held for "busy"
    fail(q, busy, "NodeResourcesFit")
    assert q.where("default/busy") == BACKOFF
    assert q.in_flight_event_count == 0


def test_update_while_in_flight_requeues_the_latest_version_and_replays(clock: FakeClock) -> None:
    q = SchedulingQueue(
        clock=clock,
        hints={
            "TaintToleration": [
                ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.UpdatePodToleration), queue_always)
            ]
        },
    )
    pod = make_pod("a")
    q.add(pod)
    qpi = pop(q)
    tolerating = with_changes(pod, spec={"tolerations": [{"key": "k", "operator": "Exists"}]})
    q.update(pod, tolerating)
    assert q.where("default/a") == IN_FLIGHT and len(q) == 0
    fail(q, qpi, "TaintToleration")
    assert q.where("default/a") == BACKOFF
    assert qpi.pod is tolerating


def test_done_prunes_the_event_log(clock: FakeClock) -> None:
    q = SchedulingQueue(clock=clock, hints={"P": [ClusterEventWithHint(NODE_ADD)]})
    for name in ("a", "b"):
        q.add(make_pod(name))
    a = pop(q)
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    b = pop(q)
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    assert q.in_flight_event_count == 2
    q.done(b)
    assert q.in_flight_event_count == 2  # "a" started before both
    q.done("default/a")
    assert q.in_flight_event_count == 0
    q.done(a)  # twice: harmless
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    assert q.in_flight_event_count == 0  # nothing in flight, nothing logged
