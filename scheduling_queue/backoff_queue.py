"""backoffQ: pods waiting out their backoff after a failed attempt (upstream's ``backoff_queue.go``).

Backoff follows v1.37 with SchedulerPopFromBackoffQ (beta, on). A pod's backoff is
``initial * 2**(attempts-1)`` capped at max, and its expiry is truncated to a 1-second ordering window:
the pod backs off until that window is over. Truncating lets pods whose backoffs end within the same
second be taken in QueueSort order rather than by a few milliseconds of expiry.

Two heaps, as upstream:

* pods rejected by plugins, ordered by window and then by QueueSort. When activeQ is empty the head
  is popped early (:meth:`BackoffQueue.pop_rejected`) rather than letting the scheduler idle;
* pods whose attempt failed with an error, ordered by expiry alone and never popped early: an error
  (an API failure, say) is not something another try a moment later is likely to avoid. Pod group
  members (GenericWorkload) are kept here too, as upstream keeps a pod group entity, whose rejector
  set is always empty.

Both heaps use lazy deletion against one dict, as :mod:`scheduling_queue.active_queue` does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from heapq import heapify, heappop, heappush
from itertools import count

from scheduling_queue.active_queue import COMPACT_MIN
from scheduling_queue.pod_order import Entry, LessKey, pod_priority
from scheduling_queue.types import Pod, QueuedPodInfo, QueueSortLess, priority_sort_less

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
# Upstream's backoffQOrderingWindowDuration.
BACKOFF_ORDERING_WINDOW = 1.0


class BackoffQueue:
    """Pods by key until their backoff expires; ``entries`` is a read-only view, as in ActiveQueue.

    Raises ValueError unless ``0 <= initial_backoff <= max_backoff``.
    """

    __slots__ = (
        "_entries",
        "_error_heap",
        "_initial",
        "_less",
        "_max",
        "_rejected_heap",
        "_seq",
        "_stale",
        "_tuple_keys",
        "entries",
        "next_expiry",
    )

    def __init__(
        self,
        *,
        less: QueueSortLess = priority_sort_less,
        initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
    ) -> None:
        if initial_backoff < 0 or max_backoff < initial_backoff:
            raise ValueError("need 0 <= initial_backoff <= max_backoff")
        self._initial = float(initial_backoff)
        self._max = float(max_backoff)
        self._less = less
        self._tuple_keys = less is priority_sort_less
        self._rejected_heap: list[Entry] = []
        self._error_heap: list[Entry] = []
        self._entries: dict[str, Entry] = {}
        self.entries: Mapping[str, Entry] = self._entries
        self._stale = 0
        self._seq = count()
        # The earliest expiry at a heap head (dead entries included), inf when both heaps are empty.
        # Kept as a plain attribute because every pop asks "is anything due?": an attribute read
        # rather than a method call on the scheduler's hottest path.
        self.next_expiry = math.inf

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    # ------------------------------------------------------------------ backoff arithmetic

    def duration(self, attempts: int) -> float:
        """``initial * 2**(attempts-1)`` capped at max; 0 before the first attempt."""
        if attempts <= 0:
            return 0.0
        # The exponent is capped so that a pod failing forever cannot overflow the float.
        return min(self._initial * 2.0 ** min(attempts - 1, 64), self._max)

    def expiry(self, qpi: QueuedPodInfo) -> float:
        """When the pod stops backing off: the end of the ordering window its backoff expires in."""
        duration = self.duration(qpi.attempts)
        if duration <= 0:
            return 0.0
        return math.floor(qpi.timestamp + duration) + BACKOFF_ORDERING_WINDOW

    # ------------------------------------------------------------------ membership

    def get(self, key: str) -> QueuedPodInfo | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        qpi: QueuedPodInfo = entry[-1]
        return qpi

    def push(self, qpi: QueuedPodInfo, *, early: bool = True) -> bool:
        """Add the pod until :meth:`expiry`; True when it may be popped early (a plugin rejected it and
        ``early`` allows it). ``early`` False keeps a rejected pod to its full backoff, as an error is."""
        expiry = self.expiry(qpi)
        entry: Entry
        if not early or (not qpi.unschedulable_plugins and not qpi.pending_plugins):
            entry = (expiry, next(self._seq), qpi)
            heappush(self._error_heap, entry)
            self._entries[qpi.key] = entry
            self.next_expiry = min(self.next_expiry, expiry)
            return False
        # Within one window, the order activeQ would give: an early pop takes the pod activeQ would.
        if self._tuple_keys:
            entry = (expiry, -pod_priority(qpi.pod), qpi.timestamp, next(self._seq), qpi)
        else:
            entry = (expiry, LessKey(qpi, self._less), next(self._seq), qpi)
        heappush(self._rejected_heap, entry)
        self._entries[qpi.key] = entry
        self.next_expiry = min(self.next_expiry, expiry)
        return True

    def remove(self, key: str) -> QueuedPodInfo | None:
        """Take this pod out before its backoff expires; None when it is not here."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self._note_stale()
        qpi: QueuedPodInfo = entry[-1]
        return qpi

    def update(self, key: str, pod: Pod) -> bool:
        """Swap in a new version of the pod; False when it is not here.

        Neither its expiry nor its place changes: the backoff belongs to the failed attempt, and a
        reordering within a window would only matter to an early pop.
        """
        entry = self._entries.get(key)
        if entry is None:
            return False
        entry[-1].pod = pod
        return True

    # ------------------------------------------------------------------ leaving

    def pop_expired(self, now: float) -> list[QueuedPodInfo]:
        """Take every pod whose backoff is over: the rejected ones in heap order, then the errors."""
        entries = self._entries
        expired: list[QueuedPodInfo] = []
        for heap in (self._rejected_heap, self._error_heap):
            while heap and heap[0][0] <= now:
                entry = heappop(heap)
                qpi: QueuedPodInfo = entry[-1]
                if entries.get(qpi.key) is not entry:
                    self._stale -= 1
                    continue
                del entries[qpi.key]
                expired.append(qpi)
        self._refresh_next_expiry()
        return expired

    def pop_rejected(self) -> QueuedPodInfo | None:
        """Take the head of the rejected pods' heap, backing off or not; None when there is none.

        Pods that failed with an error are never taken this way.
        """
        heap, entries = self._rejected_heap, self._entries
        while heap:
            entry = heappop(heap)
            qpi: QueuedPodInfo = entry[-1]
            if entries.get(qpi.key) is entry:
                del entries[qpi.key]
                self._refresh_next_expiry()
                return qpi
            self._stale -= 1
        self._refresh_next_expiry()
        return None

    def in_order(self) -> list[QueuedPodInfo]:
        """The pods by expiry, then by the time they entered (for debugging, not the hot path)."""
        ordered = sorted(self._entries.values(), key=lambda e: (e[0], e[-1].timestamp))
        return [entry[-1] for entry in ordered]

    def _note_stale(self) -> None:
        self._stale += 1
        if self._stale > COMPACT_MIN and self._stale > len(self._entries):
            entries = self._entries
            self._rejected_heap = [e for e in self._rejected_heap if entries.get(e[-1].key) is e]
            self._error_heap = [e for e in self._error_heap if entries.get(e[-1].key) is e]
            heapify(self._rejected_heap)
            heapify(self._error_heap)
            self._stale = 0
            self._refresh_next_expiry()

    def _refresh_next_expiry(self) -> None:
        """Recompute :attr:`next_expiry` after the heap heads changed (pops and compaction only: a
        push can only lower it, and a removal leaves the dead entry in place)."""
        rejected, errors = self._rejected_heap, self._error_heap
        self.next_expiry = min(rejected[0][0] if rejected else math.inf, errors[0][0] if errors else math.inf)
