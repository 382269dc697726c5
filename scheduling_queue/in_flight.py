"""In-flight pods and the cluster events seen while they were being scheduled.

Upstream keeps one linked list of pods and events (``inFlightPods`` / ``inFlightEvents`` in
``active_queue.go``). Here every recorded event gets a sequence number; a pod remembers the number the
next event would get when it was popped, and on failure replays the events from there on. Events older
than the oldest in-flight pod are pruned, so the log only grows while attempts overlap.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from scheduling_queue.types import ClusterEvent, Pod, QueuedPodInfo

RecordedEvent = tuple[ClusterEvent, Any, Any]


@dataclass(slots=True, eq=False)
class InFlight:
    """One scheduling attempt in progress."""

    qpi: QueuedPodInfo
    # Sequence number of the first event this attempt must replay.
    start: int
    # Newest version of the pod seen while in flight; requeued instead of the popped one.
    latest: Pod | None = None
    # The pod was deleted while in flight: the attempt's failure must not requeue it.
    deleted: bool = False
    live: bool = True


class InFlightTracker:
    """Tracks attempts by pod key; a deleted pod's attempt may overlap its same-named successor's."""

    __slots__ = ("_base", "_events", "_next", "_order", "_orphans", "records")

    def __init__(self) -> None:
        self.records: dict[str, InFlight] = {}
        # Attempts of deleted pods whose key was reused by a new pod before they finished.
        self._orphans: dict[int, InFlight] = {}
        # Attempts in pop order; the first live one bounds what the event log must keep.
        self._order: deque[InFlight] = deque()
        self._events: deque[RecordedEvent] = deque()
        self._base = 0  # sequence number of self._events[0]
        self._next = 0  # sequence number the next recorded event gets

    def __len__(self) -> int:
        return len(self.records) + len(self._orphans)

    def start(self, qpi: QueuedPodInfo) -> InFlight:
        old = self.records.get(qpi.key)
        if old is not None:
            # Only a deleted pod's attempt can still hold the key; keep it reachable by identity.
            self._orphans[id(old.qpi)] = old
        rec = InFlight(qpi, self._next)
        self.records[qpi.key] = rec
        self._order.append(rec)
        return rec

    def lookup(self, qpi: QueuedPodInfo) -> InFlight | None:
        rec = self.records.get(qpi.key)
        if rec is not None and rec.qpi is qpi:
            return rec
        return self._orphans.get(id(qpi))

    def live(self, key: str) -> InFlight | None:
        """The attempt for ``key`` unless its pod was deleted meanwhile."""
        rec = self.records.get(key)
        return None if rec is None or rec.deleted else rec

    def record(self, event: ClusterEvent, old: Any, new: Any) -> bool:
        """Log an event for replay; a no-op when nothing is in flight."""
        if not self.records and not self._orphans:
            return False
        self._events.append((event, old, new))
        self._next += 1
        return True

    def events_since(self, rec: InFlight) -> Iterator[RecordedEvent]:
        return islice(self._events, max(rec.start - self._base, 0), None)

    def finish(self, rec: InFlight) -> None:
        if not rec.live:
            return
        rec.live = False
        key = rec.qpi.key
        if self.records.get(key) is rec:
            del self.records[key]
        else:
            self._orphans.pop(id(rec.qpi), None)
        order = self._order
        while order and not order[0].live:
            order.popleft()
        events = self._events
        if not order:
            events.clear()
            self._base = self._next
            return
        oldest = order[0].start
        while self._base < oldest and events:
            events.popleft()
            self._base += 1

    def all_live(self) -> list[InFlight]:
        return [r for r in self.records.values() if not r.deleted]

    def clear(self) -> None:
        for rec in list(self.records.values()) + list(self._orphans.values()):
            self.finish(rec)

    @property
    def event_count(self) -> int:
        return len(self._events)
