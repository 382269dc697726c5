"""BackoffQueue's own contract: backoff arithmetic, the two heaps, early pops and the next expiry."""

from __future__ import annotations

import math

import pytest

from scheduling_queue import QueuedPodInfo
from scheduling_queue.backoff_queue import BackoffQueue
from scheduling_queue.testing import make_pod, with_changes


def record(
    name: str,
    *,
    attempts: int = 1,
    timestamp: float = 100.0,
    priority: int | None = None,
    rejected_by: tuple[str, ...] = ("NodeResourcesFit",),
) -> QueuedPodInfo:
    qpi = QueuedPodInfo(make_pod(name, priority=priority), f"default/{name}", timestamp, timestamp)
    qpi.attempts = attempts
    qpi.unschedulable_plugins = set(rejected_by)
    return qpi


def names(records: list[QueuedPodInfo]) -> list[str]:
    return [qpi.key.split("/")[1] for qpi in records]


def test_duration_doubles_per_attempt_up_to_the_cap() -> None:
    q = BackoffQueue(initial_backoff=1, max_backoff=10)
    assert [q.duration(n) for n in range(6)] == [0.0, 1.0, 2.0, 4.0, 8.0, 10.0]
    assert q.duration(10_000) == 10.0  # no overflow however long a pod keeps failing


def test_expiry_is_the_end_of_the_ordering_window() -> None:
    q = BackoffQueue(initial_backoff=1, max_backoff=10)
    assert q.expiry(record("a", attempts=2, timestamp=100.3)) == 103.0  # 102.3 -> window [102, 103)
    assert q.expiry(record("b", attempts=2, timestamp=100.9)) == 103.0  # same window as a
    assert q.expiry(record("c", attempts=0)) == 0.0


@pytest.mark.parametrize(("initial", "maximum"), [(-1, 10), (5, 1)])
def test_rejects_inconsistent_bounds(initial: float, maximum: float) -> None:
    with pytest.raises(ValueError, match="initial_backoff"):
        BackoffQueue(initial_backoff=initial, max_backoff=maximum)


def test_pop_expired_takes_due_pods_rejected_first_then_errors() -> None:
    q = BackoffQueue()
    assert q.push(record("error", rejected_by=())) is False
    assert q.push(record("rejected")) is True
    assert q.push(record("later", attempts=3)) is True
    assert q.pop_expired(101.9) == []
    assert names(q.pop_expired(102.0)) == ["rejected", "error"]
    assert list(q.entries) == ["default/later"] and len(q) == 1


def test_an_early_pop_takes_rejected_pods_by_window_then_queue_sort_and_never_errors() -> None:
    q = BackoffQueue()
    q.push(record("error", rejected_by=(), timestamp=90.0))
    q.push(record("next-window-high", attempts=2, priority=100))
    q.push(record("low", priority=1, timestamp=100.5))
    q.push(record("high", priority=10, timestamp=100.7))
    popped = []
    while (qpi := q.pop_rejected()) is not None:
        popped.append(qpi)
    assert names(popped) == ["high", "low", "next-window-high"]
    assert "default/error" in q


def test_a_rejected_pod_pushed_without_early_waits_out_its_backoff_like_an_error() -> None:
    q = BackoffQueue()
    assert q.push(record("member"), early=False) is False
    assert q.push(record("plain")) is True
    plain = q.pop_rejected()
    assert plain is not None and plain.key == "default/plain" and q.pop_rejected() is None
    assert names(q.pop_expired(102.0)) == ["member"]


def test_a_custom_less_orders_within_a_window() -> None:
    q = BackoffQueue(less=lambda a, b: a.key < b.key)
    for name in ("c", "a", "b"):
        q.push(record(name))
    assert names(q.in_order()) == ["c", "a", "b"]  # debugging order: expiry, then time entered
    assert names(q.pop_expired(200.0)) == ["a", "b", "c"]


def test_removed_and_updated_pods() -> None:
    q = BackoffQueue()
    gone, kept = record("gone"), record("kept")
    q.push(gone)
    q.push(kept)
    assert q.remove("default/gone") is gone and q.remove("default/gone") is None
    newer = with_changes(kept.pod, spec={"priority": 7})
    assert q.update("default/kept", newer) and not q.update("default/gone", newer)
    assert q.get("default/kept") is kept and kept.pod is newer
    assert q.pop_expired(200.0) == [kept]


def test_next_expiry_is_the_earliest_head() -> None:
    q = BackoffQueue()
    assert q.next_expiry == math.inf
    q.push(record("rejected", attempts=3))  # expires at 105
    q.push(record("error", rejected_by=()))  # expires at 102
    assert q.next_expiry == 102.0
    q.pop_expired(102.0)
    assert q.next_expiry == 105.0
    q.remove("default/rejected")
    assert q.next_expiry <= 105.0  # a removal may leave it early, never late
    assert q.pop_expired(105.0) == [] and q.next_expiry == math.inf
    q.push(record("again"))
    assert q.pop_rejected() is not None and q.next_expiry == math.inf
