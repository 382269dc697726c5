"""scheduler_pending_pods and scheduler_queue_incoming_pods_total in the default registry."""

from __future__ import annotations

import gc

from prometheus_client import REGISTRY, generate_latest

from scheduling_queue import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FakeClock,
    Resource,
    SchedulingQueue,
    scheduling_gates_pre_enqueue,
)
from scheduling_queue.testing import make_pod

QUEUES = ("active", "backoff", "unschedulable", "gated")


def pending() -> dict[str, float]:
    return {q: REGISTRY.get_sample_value("scheduler_pending_pods", {"queue": q}) or 0.0 for q in QUEUES}


def incoming(queue: str, event: str) -> float:
    value = REGISTRY.get_sample_value("scheduler_queue_incoming_pods_total", {"queue": queue, "event": event})
    return value or 0.0


def test_incoming_and_pending_metrics() -> None:
    gc.collect()  # queues of earlier tests must not count any more
    base_pending = pending()
    labels = [
        ("active", "UnscheduledPodAdd"),
        ("unschedulable", "UnscheduledPodAdd"),
        ("backoff", "ScheduleAttemptFailure"),
        ("unschedulable", "ScheduleAttemptFailure"),
        ("active", "BackoffComplete"),
        ("backoff", "NodeAdd"),
        ("active", "UnschedulableTimeout"),
    ]
    base = {label: incoming(*label) for label in labels}

    clock = FakeClock(start=0.0)
    node_add = ClusterEvent(Resource.Node, ActionType.Add)
    q = SchedulingQueue(
        clock=clock,
        pre_enqueue=scheduling_gates_pre_enqueue,
        hints={"NodeAffinity": [ClusterEventWithHint(node_add)]},
    )
    for name in ("err", "rej", "other", "wait"):
        q.add(make_pod(name))
    q.add(make_pod("gated", scheduling_gates=["g"]))
    for plugins in (set(), {"NodeAffinity"}, {"VolumeBinding"}):
        qpi = q.pop_nowait()
        assert qpi is not None
        qpi.unschedulable_plugins = plugins
        q.add_unschedulable_if_not_present(qpi)
    assert pending() == {
        "active": base_pending["active"] + 1,
        "backoff": base_pending["backoff"] + 1,
        "unschedulable": base_pending["unschedulable"] + 2,
        "gated": base_pending["gated"] + 1,
    }
    q.move_all_to_active_or_backoff(node_add, None, {"metadata": {"name": "n"}})  # "rej" -> backoff
    clock.advance(2.0)
    q.flush_backoff_completed()  # "err" and "rej" complete (1 s, to the end of its window)
    clock.advance(301.0)
    q.flush_unschedulable_leftover()  # "other"

    delta = {label: incoming(*label) - base[label] for label in labels}
    assert delta == {
        ("active", "UnscheduledPodAdd"): 4,
        ("unschedulable", "UnscheduledPodAdd"): 1,  # gated pods count as unschedulable, as upstream
        ("backoff", "ScheduleAttemptFailure"): 1,
        ("unschedulable", "ScheduleAttemptFailure"): 2,
        ("active", "BackoffComplete"): 2,
        ("backoff", "NodeAdd"): 1,
        ("active", "UnschedulableTimeout"): 1,
    }
    text = generate_latest(REGISTRY).decode()
    assert 'scheduler_pending_pods{queue="gated"}' in text
    assert "# TYPE scheduler_queue_incoming_pods_total counter" in text
    assert pending()["active"] == base_pending["active"] + 4

    del q
    gc.collect()
    assert pending() == base_pending


def test_entity_metrics_mirror_the_pod_metrics_while_every_entity_is_a_pod() -> None:
    """v1.37's scheduler_queued_entities and scheduler_queue_incoming_entities_total (type="pod"):
    without GenericWorkload every queued pod is an individual pod; with it they are not served."""
    from scheduling_queue import metrics as queue_metrics

    gc.collect()
    q = SchedulingQueue(clock=FakeClock(start=0.0), pre_enqueue=scheduling_gates_pre_enqueue)
    q.add(make_pod("e1"))
    q.add(make_pod("e2", scheduling_gates=["g"]))
    for queue in QUEUES:
        entities = REGISTRY.get_sample_value("scheduler_queued_entities", {"queue": queue, "type": "pod"})
        assert entities == pending()[queue], queue
    labels = {"queue": "active", "event": "UnscheduledPodAdd"}
    assert REGISTRY.get_sample_value(
        "scheduler_queue_incoming_entities_total", {**labels, "type": "pod"}
    ) == incoming("active", "UnscheduledPodAdd")
    queue_metrics.entities_are_pods = False
    try:
        assert (
            REGISTRY.get_sample_value("scheduler_queued_entities", {"queue": "active", "type": "pod"}) is None
        )
    finally:
        queue_metrics.entities_are_pods = True
    del q
