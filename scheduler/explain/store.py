"""The bounded store of decision records, shared by the scheduling loop and the HTTP server's threads.

Two LRU maps keyed by ``namespace/name``: pods whose latest attempt left them pending, and pods recently
scheduled (or failed for other reasons). Keeping them apart means a burst of successful scheduling
cannot evict the record of a pod that is still pending, which is the one users ask about. Each pod
keeps its last few attempts. One lock guards everything; the loop holds it for microseconds.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from scheduler.explain.record import BIND_FAILED, ERROR, UNSCHEDULABLE, AttemptRecord

DEFAULT_PENDING_PODS = 5000
DEFAULT_RECENT_PODS = 5000
DEFAULT_ATTEMPTS_PER_POD = 4

_PENDING_OUTCOMES = frozenset({UNSCHEDULABLE, ERROR, BIND_FAILED})


class DecisionStore:
    def __init__(
        self,
        *,
        pending_pods: int = DEFAULT_PENDING_PODS,
        recent_pods: int = DEFAULT_RECENT_PODS,
        attempts_per_pod: int = DEFAULT_ATTEMPTS_PER_POD,
    ) -> None:
        self._lock = threading.Lock()
        self._attempts_per_pod = attempts_per_pod
        # Plain OrderedDicts as LRUs (C code; cachetools' LRUCache costs microseconds per operation):
        # filing moves a pod to the end, the oldest is evicted from the front.
        self._pending: OrderedDict[str, deque[AttemptRecord]] = OrderedDict()
        self._recent: OrderedDict[str, deque[AttemptRecord]] = OrderedDict()
        self._pending_limit = pending_pods
        self._recent_limit = recent_pods

    def file(self, record: AttemptRecord) -> None:
        """A finished (or handed-to-binding) attempt joins its pod's history, filed as pending or recent."""
        key = record.pod
        with self._lock:
            history = self._pending.pop(key, None)
            if history is None:
                history = self._recent.pop(key, None)
            if history is None:
                history = deque(maxlen=self._attempts_per_pod)
            history.append(record)
            self._put(self._pending if record.outcome in _PENDING_OUTCOMES else self._recent, key, history)

    def _put(
        self, target: OrderedDict[str, deque[AttemptRecord]], key: str, history: deque[AttemptRecord]
    ) -> None:
        target[key] = history
        if len(target) > (self._pending_limit if target is self._pending else self._recent_limit):
            target.popitem(last=False)

    def update(self, record: AttemptRecord, change: Callable[[AttemptRecord], None]) -> None:
        """Apply ``change`` to a filed record under the lock (a binding finishing), and re-file its pod
        if this is still the pod's latest attempt."""
        key = record.pod
        with self._lock:
            change(record)
            history, source = self._pending.get(key), self._pending
            if history is None:
                history, source = self._recent.get(key), self._recent
            if not history or history[-1] is not record:
                return  # evicted, or an older attempt finishing late: it no longer decides the place
            target = self._pending if record.outcome in _PENDING_OUTCOMES else self._recent
            if target is not source:
                source.pop(key, None)
                self._put(target, key, history)

    def latest(self, key: str) -> AttemptRecord | None:
        with self._lock:
            history = self._pending.get(key) or self._recent.get(key)
            return history[-1] if history else None

    def get_json(self, key: str) -> dict[str, Any] | None:
        """The pod's attempts, newest last, as JSON-ready dicts (built under the lock: a consistent view)."""
        with self._lock:
            history = self._pending.get(key) or self._recent.get(key)
            if not history:
                return None
            return {"pod": key, "attempts": [record.to_json() for record in history]}

    def sizes(self) -> tuple[int, int]:
        with self._lock:
            return len(self._pending), len(self._recent)
