"""ActiveQueue's own contract: QueueSort order, removal, in-place updates, and a stable view."""

from __future__ import annotations

from scheduling_queue import QueuedPodInfo, priority_sort_less
from scheduling_queue.active_queue import COMPACT_MIN, ActiveQueue
from scheduling_queue.testing import make_pod, with_changes


def record(name: str, *, priority: int | None = None, timestamp: float = 0.0) -> QueuedPodInfo:
    return QueuedPodInfo(make_pod(name, priority=priority), f"default/{name}", timestamp, timestamp)


def drain(q: ActiveQueue) -> list[QueuedPodInfo]:
    popped = []
    while (qpi := q.pop()) is not None:
        popped.append(qpi)
    return popped


def names(records: list[QueuedPodInfo]) -> list[str]:
    return [qpi.key.split("/")[1] for qpi in records]


def test_pops_by_priority_then_timestamp_then_arrival() -> None:
    q = ActiveQueue()
    q.push(record("late-high", priority=10, timestamp=2.0))
    q.push(record("early-high", priority=10, timestamp=1.0))
    q.push(record("tie-first", priority=5, timestamp=1.0))
    q.push(record("tie-second", priority=5, timestamp=1.0))
    q.push(record("unset", timestamp=0.0))
    assert q.tuple_keys
    assert names(q.in_order()) == ["early-high", "late-high", "tie-first", "tie-second", "unset"]
    assert names(drain(q)) == ["early-high", "late-high", "tie-first", "tie-second", "unset"]
    assert q.pop() is None and len(q) == 0


def test_a_custom_less_orders_the_heap() -> None:
    q = ActiveQueue(less=lambda a, b: a.key > b.key)
    for name in ("b", "d", "a", "c"):
        q.push(record(name))
    assert not q.tuple_keys
    assert names(q.in_order()) == ["d", "c", "b", "a"]
    assert names(drain(q)) == ["d", "c", "b", "a"]


def test_the_tuple_key_orders_as_priority_sort_does() -> None:
    pods = [record(f"p{i}", priority=i % 3, timestamp=float(i % 4)) for i in range(12)]
    fast = ActiveQueue(priority_sort_less)

    def same_as_priority_sort(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return priority_sort_less(a, b)

    generic = ActiveQueue(same_as_priority_sort)  # not the recognised function: the LessKey path
    assert not generic.tuple_keys
    for qpi in pods:
        fast.push(qpi)
        generic.push(qpi)
    # Full ties may pop in either order on the generic path, so compare what PrioritySort looks at.
    assert [(p.priority, p.timestamp) for p in drain(fast)] == [
        (p.priority, p.timestamp) for p in drain(generic)
    ]


def test_a_removed_pod_is_gone_and_others_still_pop() -> None:
    q = ActiveQueue()
    a, b = record("a", priority=2), record("b", priority=1)
    q.push(a)
    q.push(b)
    assert q.remove("default/a") is a
    assert q.remove("default/a") is None
    assert "default/a" not in q and q.get("default/a") is None and len(q) == 1
    assert drain(q) == [b]


def test_update_keeps_the_place_unless_priority_changes() -> None:
    q = ActiveQueue()
    first, second = record("first", priority=1, timestamp=1.0), record("second", priority=1, timestamp=2.0)
    q.push(first)
    q.push(second)
    newer = with_changes(first.pod, metadata={"labels": {"x": "y"}})
    assert q.update("default/first", newer)
    assert q.get("default/first") is first and first.pod is newer
    assert names(q.in_order()) == ["first", "second"]
    assert q.update("default/second", with_changes(second.pod, spec={"priority": 5}))
    assert names(drain(q)) == ["second", "first"]
    assert not q.update("default/absent", make_pod("absent"))


def test_pushing_a_queued_pod_again_repositions_it_once() -> None:
    q = ActiveQueue()
    qpi = record("a", priority=1, timestamp=5.0)
    q.push(qpi)
    q.push(record("b", priority=1, timestamp=3.0))
    qpi.timestamp = 1.0
    q.push(qpi)
    assert len(q) == 2
    assert names(drain(q)) == ["a", "b"]


def test_the_view_follows_the_queue_through_compaction() -> None:
    q = ActiveQueue()
    view = q.entries
    n = 3 * COMPACT_MIN
    for i in range(n):
        q.push(record(f"p{i}", priority=i))
    for i in range(n - 10):
        q.remove(f"default/p{i}")  # enough dead entries to compact the heap
    assert q.entries is view and len(view) == 10 and "default/p0" not in view
    assert names(drain(q)) == [f"p{i}" for i in range(n - 1, n - 11, -1)]
    assert not view
