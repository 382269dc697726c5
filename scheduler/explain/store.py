"""The bounded store of decision records, shared by the scheduling loop and the HTTP server's threads.

Two LRU maps keyed by ``namespace/name``: pods whose latest attempt left them pending, and pods recently
scheduled (or failed for other reasons). Keeping them apart means a burst of successful scheduling
cannot evict the record of a pod that is still pending, which is the one users ask about. Each pod
keeps its last few attempts. One lock guards everything; the loop holds it for microseconds. (A bound
pod's ``finish`` only sets the record's outcome, one attribute store, and skips it.)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
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
        # filing moves a pod to the end, the oldest is evicted from the front. A pod's history is a
        # list, oldest first, cut to ``attempts_per_pod`` (a one-element list costs a fifth of a deque).
        self._pending: OrderedDict[str, list[AttemptRecord]] = OrderedDict()
        self._recent: OrderedDict[str, list[AttemptRecord]] = OrderedDict()
        self._pending_limit = pending_pods
        self._recent_limit = recent_pods

    def file(self, record: AttemptRecord) -> None:
        """A finished (or handed-to-binding) attempt joins its pod's history, filed as pending or recent."""
        key = record.pod
        pending = record.outcome in _PENDING_OUTCOMES
        with self._lock:
            history = self._pending.pop(key, None)
            if history is None:
                history = self._recent.pop(key, None)
            if history is None:
                history = [record]
            else:
                history.append(record)
                if len(history) > self._attempts_per_pod:
                    del history[0]
            if pending:
                self._put(self._pending, key, history, self._pending_limit)
            else:
                self._put(self._recent, key, history, self._recent_limit)

    @staticmethod
    def _put(
        target: OrderedDict[str, list[AttemptRecord]], key: str, history: list[AttemptRecord], limit: int
    ) -> None:
        target[key] = history
        if len(target) > limit:
            target.popitem(last=False)

    def finish(self, record: AttemptRecord, outcome: str, message: str = "") -> None:
        """A filed record's binding finished: set its outcome (and message, if any) under the lock, and
        re-file its pod if this is still the pod's latest attempt."""
        if not message and outcome not in _PENDING_OUTCOMES and record.outcome not in _PENDING_OUTCOMES:
            # A binding that succeeded (every pod, nearly): the pod's history is where a record that is
            # not pending files it, and stays there. Nothing moves, and one attribute store is atomic
            # for a reader (who sees the outcome before or after it, as the lock would let it).
            record.outcome = outcome
            return
        key = record.pod
        with self._lock:
            record.outcome = outcome
            if message:
                record.message = message
            history, source = self._recent.get(key), self._recent
            if history is None:
                history, source = self._pending.get(key), self._pending
            if not history or history[-1] is not record:
                return  # evicted, or an older attempt finishing late: it no longer decides the place
            if outcome in _PENDING_OUTCOMES:
                if source is self._recent:
                    del self._recent[key]
                    self._put(self._pending, key, history, self._pending_limit)
            elif source is self._pending:
                del self._pending[key]
                self._put(self._recent, key, history, self._recent_limit)

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
