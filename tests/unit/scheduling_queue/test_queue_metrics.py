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
        ("unschedulable", "UnschedulableTimeout"),
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
        # The gated pod: the flush took it out (v1.37 flushes gated pods too), its gate held it again.
        ("unschedulable", "UnschedulableTimeout"): 1,
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
    without GenericWorkload every queued pod is an individual pod (the counter differs for moves a
    hint decided: next test)."""
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
    del q


def test_incoming_entities_skip_moves_that_land_where_the_hint_pointed() -> None:
    """v1.37.2's recordIncomingEntitiesMetrics (upstream's "add individual pod to active queue" case and
    its neighbours): an entity moved by a hint counts only when it lands elsewhere than the hint
    pointed; scheduler_queue_incoming_pods_total counts every move."""
    gc.collect()
    clock = FakeClock(start=0.0)
    node_add = ClusterEvent(Resource.Node, ActionType.Add)
    q = SchedulingQueue(clock=clock, hints={"NodeAffinity": [ClusterEventWithHint(node_add)]})
    moves = [
        ("active", "UnscheduledPodAdd"),
        ("unschedulable", "ScheduleAttemptFailure"),
        ("backoff", "NodeAdd"),
        ("active", "NodeAdd"),
    ]
    pods_before = {m: incoming(*m) for m in moves}
    entities_before = {m: entered(*m, "pod") for m in moves}
    q.add(make_pod("a"))
    q.add(make_pod("b"))
    for _ in range(2):
        qpi = q.pop_nowait()
        assert qpi is not None
        qpi.unschedulable_plugins = {"NodeAffinity"}
        q.add_unschedulable_if_not_present(qpi)  # no events since: Skip -> unschedulable
    q.move_all_to_active_or_backoff(node_add)  # Queue while both back off -> backoffQ
    clock.advance(20)
    q.flush_backoff_completed()
    a = q.pop_nowait()
    assert a is not None
    a.unschedulable_plugins = {"NodeAffinity"}
    q.add_unschedulable_if_not_present(a)
    clock.advance(20)  # its backoff over
    q.move_all_to_active_or_backoff(node_add)  # Queue, backoff over -> activeQ
    pods = {m: incoming(*m) - pods_before[m] for m in moves}
    entities = {m: entered(*m, "pod") - entities_before[m] for m in moves}
    assert pods == {
        ("active", "UnscheduledPodAdd"): 2,
        ("unschedulable", "ScheduleAttemptFailure"): 3,
        ("backoff", "NodeAdd"): 2,
        ("active", "NodeAdd"): 1,
    }
    assert entities == {
        ("active", "UnscheduledPodAdd"): 2,
        ("unschedulable", "ScheduleAttemptFailure"): 0,
        ("backoff", "NodeAdd"): 0,
        ("active", "NodeAdd"): 1,
    }
    del q


def queued(queue: str, kind: str) -> float:
    return REGISTRY.get_sample_value("scheduler_queued_entities", {"queue": queue, "type": kind}) or 0.0


def entered(queue: str, event: str, kind: str) -> float:
    value = REGISTRY.get_sample_value(
        "scheduler_queue_incoming_entities_total", {"queue": queue, "event": event, "type": kind}
    )
    return value or 0.0


def test_with_generic_workload_a_pod_group_is_one_entity() -> None:
    """GenericWorkload on: a pod group's members queued together are one ``podgroup`` entity, beside
    each pod outside any group; a failed group attempt requeues the group as one entity."""
    from scheduling_queue import metrics as queue_metrics

    gc.collect()
    queue_metrics.entities_are_pods = False
    try:
        q = SchedulingQueue(clock=FakeClock(start=0.0), generic_workload=True)
        members = []
        for i in range(3):
            pod = make_pod(f"m{i}")
            pod["spec"]["schedulingGroup"] = {"podGroupName": "g"}
            members.append(pod)
        base = {
            key: queued(*key) for key in (("active", "pod"), ("active", "podgroup"), ("backoff", "podgroup"))
        }
        arrived = ("active", "UnscheduledPodAdd")
        failed = ("backoff", "ScheduleAttemptFailure")
        base_in = {
            (*key, kind): entered(*key, kind) for key in (arrived, failed) for kind in ("pod", "podgroup")
        }
        for pod in members:
            q.add(pod)
        q.add(make_pod("solo"))
        assert queued("active", "podgroup") == base[("active", "podgroup")] + 1
        assert queued("active", "pod") == base[("active", "pod")] + 1
        assert entered(*arrived, "podgroup") == base_in[(*arrived, "podgroup")] + 1
        assert entered(*arrived, "pod") == base_in[(*arrived, "pod")] + 1

        # The pod group cycle: the first member popped, its siblings with it, all fail together.
        first = q.pop_nowait()
        assert first is not None and first.key == "default/m0"
        attempt = [first, *(q.pop_specific(pod) for pod in members[1:])]
        for qpi in attempt:
            assert qpi is not None
            qpi.unschedulable_plugins = {"GangScheduling"}
            q.add_unschedulable_if_not_present(qpi)
        assert queued("backoff", "podgroup") == base[("backoff", "podgroup")] + 1
        assert entered(*failed, "podgroup") == base_in[(*failed, "podgroup")] + 1
        assert queued("active", "podgroup") == base[("active", "podgroup")]
        del q
    finally:
        queue_metrics.entities_are_pods = True


def test_a_gated_pod_an_event_moved_and_gated_again_counts_as_incoming() -> None:
    """Upstream takes an event's candidates out of unschedulablePods before requeueing them, so a
    pod PreEnqueue gates again enters it anew: scheduler_queue_incoming_pods_total{queue=
    "unschedulable"} counts it under the event, while scheduler_pending_pods{queue="gated"} stays."""
    gc.collect()

    def quota(pod: object, gating_plugin: str = "") -> str:
        return "Quota"

    clock = FakeClock(start=0.0)
    node_add = ClusterEvent(Resource.Node, ActionType.Add)
    q = SchedulingQueue(
        clock=clock,
        pre_enqueue=quota,
        hints={"Quota": [ClusterEventWithHint(node_add)]},
    )
    q.add(make_pod("held"))
    base_pending = pending()
    base = incoming("unschedulable", "NodeAdd")
    q.move_all_to_active_or_backoff(node_add, None, {"metadata": {"name": "n"}})
    assert incoming("unschedulable", "NodeAdd") - base == 1
    assert pending() == base_pending
    del q
    gc.collect()
