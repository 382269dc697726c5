"""Bindings whose outcome is unknown, until the watch shows what became of them.

A Binding POST whose connection dropped after sending (a reset, a timeout while reading the answer)
or that was answered a 5xx may have been stored by the API server; when the read that would tell
fails too (the API server is down), the attempt ends as an error and the pod is retried. If the
Binding had landed, the watch later shows the pod bound to that node, and nothing else would ever
write its ``Scheduled`` Event (kube-scheduler has the same gap). This keeps pod uid -> the node the
Binding was sent to, bounded and expiring, so the scheduler can recognise that moment
(``Scheduler.pod_bound``). The records live on the event loop; no locking.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache

from scheduler.framework.objects import object_meta, pod_spec

# A record outlives an API server outage and the relist after it by far; one that the watch has
# not settled by then (the scheduler missed the update) is dropped rather than kept forever.
RECORD_TTL_SECONDS = 15 * 60.0
# Bounded: a flood of lost Bindings during a long outage keeps at most this many (the newest win).
MAX_RECORDS = 10_000


@dataclass(frozen=True, slots=True)
class UnknownBind:
    """One Binding whose outcome is unknown, with what its success would have reported."""

    key: str  # namespace/name
    node_name: str
    profile: str
    # The queue's count of attempts and the time of the first one, for the pod-bound metrics.
    attempts: int
    initial_attempt_timestamp: float


class UnknownBinds:
    def __init__(
        self,
        *,
        ttl: float = RECORD_TTL_SECONDS,
        maxsize: int = MAX_RECORDS,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._records: TTLCache[str, UnknownBind] = TTLCache(maxsize=maxsize, ttl=ttl, timer=timer)

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, uid: object) -> bool:
        return uid in self._records

    def remember(self, uid: str, record: UnknownBind) -> None:
        if uid:
            self._records[uid] = record

    def forget(self, uid: str) -> None:
        self._records.pop(uid, None)

    def settle(self, pod: Mapping[str, Any]) -> UnknownBind | None:
        """``pod`` as the watch shows it now. Bound to the very node its record names: the Binding
        landed; the record is returned and dropped. Bound elsewhere (another scheduler, or a later
        attempt of ours): dropped, None. Not bound yet: kept, None."""
        uid = object_meta(pod).get("uid", "")
        record = self._records.get(uid)
        if record is None:
            return None
        node = pod_spec(pod).get("nodeName") or ""
        if not node:
            return None
        del self._records[uid]
        return record if node == record.node_name else None
