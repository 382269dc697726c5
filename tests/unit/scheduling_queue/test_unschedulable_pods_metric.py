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
