"""activeQ: the pods ready for a scheduling attempt, in QueueSort order (upstream's ``active_queue.go``).

Only the heap lives here. The in-flight attempts (upstream keeps them in activeQueue too) are
:mod:`scheduling_queue.in_flight`; waking a waiting pop, metrics and PreEnqueue are the facade's
(:class:`scheduling_queue.scheduling_queue.SchedulingQueue`), which decides what enters.

The heap uses lazy deletion: :attr:`ActiveQueue.entries` maps each pod key to its one live heap entry,
and an entry the dict no longer points to is skipped when it surfaces. Removing a pod is then a dict
delete instead of an O(n) heap search; the dead entries are compacted away when they outnumber the
live ones, so the heap stays within twice the live size (plus a constant).
"""

from __future__ import annotations

from collections.abc import Mapping
from heapq import heapify, heappop, heappush
from itertools import count

from scheduling_queue.pod_order import Entry, LessKey, pod_priority
from scheduling_queue.types import Pod, QueuedPodInfo, QueueSortLess, priority_sort_less

# Compaction is O(n); below this many dead entries it is not worth running.
COMPACT_MIN = 1024


class ActiveQueue:
    """A priority queue of pods by key, ordered by the profile's QueueSort.

    ``entries`` is a read-only view for callers that test membership on a hot path (``key in
    q.entries`` costs no Python call). It is the same dict object for the queue's whole life.
    """

    __slots__ = ("_entries", "_heap", "_less", "_seq", "_stale", "entries", "tuple_keys")

    def __init__(self, less: QueueSortLess = priority_sort_less) -> None:
        self._less = less
        # PrioritySort is recognised so that the heap compares plain tuples (see pod_order).
        self.tuple_keys = less is priority_sort_less
        self._heap: list[Entry] = []
        self._entries: dict[str, Entry] = {}
        self.entries: Mapping[str, Entry] = self._entries
        self._stale = 0
        # Ties on (priority, timestamp) pop in insertion order, and a QueuedPodInfo is never compared.
        self._seq = count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> QueuedPodInfo | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        qpi: QueuedPodInfo = entry[-1]
        return qpi

    def push(self, qpi: QueuedPodInfo) -> None:
        """Add the pod, or reposition it if it is already here (its old entry goes stale)."""
        if self.tuple_keys:
            # pod_priority, inlined: this runs for every pod that enters activeQ.
            spec = qpi.pod.get("spec")
            prio = spec.get("priority") if spec else None
            entry: Entry = (-prio if type(prio) is int else 0, qpi.timestamp, next(self._seq), qpi)
        else:
            entry = (LessKey(qpi, self._less), qpi)
        self._entries[qpi.key] = entry
        heappush(self._heap, entry)

    def pop(self) -> QueuedPodInfo | None:
        """Take the head; None when empty."""
        entries = self._entries
        if not entries:
            return None
        heap = self._heap
        while True:
            entry = heappop(heap)
            qpi: QueuedPodInfo = entry[-1]
            key = qpi.key
            if entries.get(key) is entry:
                del entries[key]
                return qpi
            self._stale -= 1

    def remove(self, key: str) -> QueuedPodInfo | None:
        """Take this pod out wherever it is in the order; None when it is not here."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self._note_stale()
        qpi: QueuedPodInfo = entry[-1]
        return qpi

    def update(self, key: str, pod: Pod) -> bool:
        """Swap in a new version of the pod; False when it is not here.

        The pod keeps its place unless the new version may sort differently: with PrioritySort only a
        priority change moves it (its timestamp stays), while a custom ``less`` may read anything.
        """
        entry = self._entries.get(key)
        if entry is None:
            return False
        qpi: QueuedPodInfo = entry[-1]
        old_priority = pod_priority(qpi.pod)
        qpi.pod = pod
        if not self.tuple_keys or pod_priority(pod) != old_priority:
            self.push(qpi)
            self._note_stale()
        return True

    def in_order(self) -> list[QueuedPodInfo]:
        """The pods in the order they would pop (a sort: for debugging, not for the hot path)."""
        return [entry[-1] for entry in sorted(self._entries.values())]

    def _note_stale(self) -> None:
        self._stale += 1
        if self._stale > COMPACT_MIN and self._stale > len(self._entries):
            entries = self._entries
            self._heap = [e for e in self._heap if entries.get(e[-1].key) is e]
            heapify(self._heap)
            self._stale = 0
