"""scheduler_unschedulable_pods{plugin,profile} follows the queue's unschedulable pool."""

from __future__ import annotations

from prometheus_client import REGISTRY

from scheduler import metrics
from scheduling_queue import FakeClock, SchedulingQueue
from scheduling_queue.testing import fail, make_pod, pop


def _gauge(plugin: str, profile: str) -> float | None:
    return REGISTRY.get_sample_value("scheduler_unschedulable_pods", {"plugin": plugin, "profile": profile})


def test_counts_per_rejecting_plugin_and_profile_then_drop_to_zero() -> None:
    queue = SchedulingQueue(clock=FakeClock())
    for name, plugins in (("a", ("NodeResourcesFit",)), ("b", ("NodeResourcesFit", "TaintToleration"))):
        queue.add(make_pod(name))
        fail(queue, pop(queue), *plugins)
    counts = queue.unschedulable_counts()
    profile = next(iter(counts))[1]
    assert counts == {("NodeResourcesFit", profile): 2, ("TaintToleration", profile): 1}

    metrics.set_unschedulable_pods(counts)
    assert _gauge("NodeResourcesFit", profile) == 2
    assert _gauge("TaintToleration", profile) == 1

    queue.delete(make_pod("b"))
    metrics.set_unschedulable_pods(queue.unschedulable_counts())
    assert _gauge("NodeResourcesFit", profile) == 1
    assert _gauge("TaintToleration", profile) == 0


def test_counts_rejected_pods_until_popped_in_any_sub_queue_and_gated_ones_by_their_gate() -> None:
    """v1.37.2: a pod's rejectors count from its requeue until it is popped or deleted, whichever
    sub-queue it waits in (backoffQ, activeQ), and a gating plugin counts from the PreEnqueue that
    gated the pod; a pod never attempted, or in flight, does not count."""
    from scheduling_queue import ActionType, ClusterEvent, ClusterEventWithHint, Resource

    def gates(pod: object, gating_plugin: str = "") -> str:
        return "Quota" if pod["metadata"]["name"] == "held" else ""  # type: ignore[index]

    clock = FakeClock()
    node_add = ClusterEvent(Resource.Node, ActionType.Add)
    queue = SchedulingQueue(
        clock=clock, pre_enqueue=gates, hints={"NodeResourcesFit": [ClusterEventWithHint(node_add)]}
    )
    queue.add(make_pod("rejected"))
    first = pop(queue)
    profile = str(first.pod["spec"].get("schedulerName") or "default-scheduler")
    fail(queue, first, "NodeResourcesFit")
    queue.add(make_pod("held"))
    queue.add(make_pod("fresh"))
    queue.move_all_to_active_or_backoff(node_add)  # "rejected" -> backoffQ (its backoff still runs)
    assert queue.where("default/rejected") == "backoff"
    assert queue.unschedulable_counts() == {("NodeResourcesFit", profile): 1, ("Quota", profile): 1}
    clock.advance(30)
    queue.flush_backoff_completed()
    assert queue.where("default/rejected") == "active"
    assert queue.unschedulable_counts() == {("NodeResourcesFit", profile): 1, ("Quota", profile): 1}
    while (qpi := queue.pop_nowait()) is not None:  # "fresh" and "rejected" in flight
        assert qpi.key in ("default/fresh", "default/rejected")
    assert queue.unschedulable_counts() == {("Quota", profile): 1}
