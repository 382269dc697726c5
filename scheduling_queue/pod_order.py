"""How the heaps of activeQ and backoffQ order pods: the profile's QueueSort.

With the default PrioritySort a heap entry holds ``-priority`` and the timestamp as plain values, so
heapq compares tuples in C. Any other QueueSort wraps the pod in a :class:`LessKey`, whose ``__lt__``
calls the profile's ``less``: one Python call per heap comparison, which is why PrioritySort is worth
recognising (``less is priority_sort_less``).
"""

from __future__ import annotations

from typing import Any

from scheduling_queue.types import Pod, QueuedPodInfo, QueueSortLess

# A heap entry. Its last item is always the QueuedPodInfo; the items before it order the heap, and
# a per-heap sequence number among them breaks ties so that a QueuedPodInfo is never compared.
Entry = tuple[Any, ...]


class LessKey:
    """Heap key for a custom QueueSort: orders pods by the profile's ``less``."""

    __slots__ = ("less", "qpi")

    def __init__(self, qpi: QueuedPodInfo, less: QueueSortLess) -> None:
        self.qpi = qpi
        self.less = less

    def __lt__(self, other: LessKey) -> bool:
        return self.less(self.qpi, other.qpi)


def pod_priority(pod: Pod) -> int:
    """``spec.priority``, 0 when unset; as PrioritySort reads it (a non-int is treated as unset)."""
    spec = pod.get("spec")
    prio = spec.get("priority") if spec else None
    return prio if type(prio) is int else 0
