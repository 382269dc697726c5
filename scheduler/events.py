"""Events and the PodScheduled condition, written off the loop and aggregated.

A crowd of unschedulable pods retried every few seconds would otherwise flood the API server. Like
client-go's events library, the first occurrence of (pod, reason, message) is created at once and
repeats within ``series_window`` only bump a series count, which is flushed at most every
``flush_interval`` seconds. Scheduled events are never aggregated: each pod is bound once.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import secrets
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache

from scheduler.api import ApiError, SchedulerApi

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"

# Threads writing Events and pod conditions; each holds one API connection while it writes. client-go
# writes each Event from a goroutine of its own. With 2 (or 16) writers here, Scheduled events fell
# thousands behind the bindings at 300 pods/s on a busy API server, each write waiting its turn.
EVENT_WRITERS = 64

# The API server rejects an Event whose note is longer (upstream's validation.NoteLengthLimit).
NOTE_LENGTH_LIMIT = 1024


def truncate_note(message: str) -> str:
    """Upstream's truncateMessage: cut to the limit, ending in " ..." so the cut shows."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return message[: NOTE_LENGTH_LIMIT - len(suffix)] + suffix


def micro_time(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class _Series:
    namespace: str
    name: str
    count: int
    last_seen: float
    flushed_count: int


class EventRecorder:
    """Called on the event loop; the HTTP calls run on a small writer pool."""

    def __init__(
        self,
        api: SchedulerApi,
        *,
        reporting_instance: str,
        clock: Callable[[], float],
        series_window: float = 600.0,
        writers: int = EVENT_WRITERS,
    ) -> None:
        self._api = api
        self._instance = reporting_instance
        self._clock = clock
        self._series: TTLCache[tuple[str, str, str], _Series] = TTLCache(
            maxsize=50_000, ttl=series_window, timer=clock
        )
        self._dirty: set[tuple[str, str, str]] = set()
        self._executor = ThreadPoolExecutor(max_workers=writers, thread_name_prefix="events")
        self.created = 0
        self.aggregated = 0

    def _submit(self, fn: Callable[[], None]) -> None:
        def run() -> None:
            try:
                fn()
            except ApiError as err:
                log.warning("event/status write failed: %s", err)
            except Exception:
                log.exception("event/status write crashed")

        self._executor.submit(run)

    def event(
        self,
        pod: Mapping[str, Any],
        *,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        controller: str,
        aggregate: bool = True,
    ) -> None:
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace", "default")
        uid = meta.get("uid", "")
        key = (uid, reason, message)
        now = self._clock()
        if aggregate:
            series = self._series.get(key)
            if series is not None:
                series.count += 1
                series.last_seen = now
                self._dirty.add(key)
                self.aggregated += 1
                return
        name = f"{meta.get('name', 'pod')}.{secrets.token_hex(8)}"
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(now),
            "reportingController": controller,
            "reportingInstance": self._instance,
            "action": action,
            "reason": reason,
            "note": truncate_note(message),
            "type": event_type,
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": namespace,
                "name": meta.get("name", ""),
                "uid": uid,
                "resourceVersion": meta.get("resourceVersion", ""),
            },
        }
        if aggregate:
            self._series[key] = _Series(namespace, name, 1, now, 1)
        self.created += 1
        self._submit(lambda: self._api.create_event(namespace, body))

    def flush_series(self) -> None:
        """Send the counts of repeated events (call periodically from the loop)."""
        dirty, self._dirty = self._dirty, set()
        for key in dirty:
            series = self._series.get(key)
            if series is None or series.count == series.flushed_count:
                continue
            series.flushed_count = series.count
            patch = {"series": {"count": series.count, "lastObservedTime": micro_time(series.last_seen)}}
            self._submit(functools.partial(self._api.patch_event, series.namespace, series.name, patch))

    def pod_condition_unschedulable(
        self, pod: Mapping[str, Any], *, reason: str, message: str, nominated_node: str | None = None
    ) -> None:
        """Set PodScheduled=False with ``reason``, unless the pod already says exactly that."""
        for condition in (pod.get("status") or {}).get("conditions") or ():
            if (
                condition.get("type") == "PodScheduled"
                and condition.get("status") == "False"
                and condition.get("reason") == reason
                and condition.get("message") == message
                and nominated_node is None
            ):
                return
        now = rfc3339(self._clock())
        patch: dict[str, Any] = {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": reason,
                        "message": message,
                        "lastProbeTime": None,
                        "lastTransitionTime": now,
                    }
                ]
            }
        }
        if nominated_node is not None:
            patch["status"]["nominatedNodeName"] = nominated_node
        meta = pod.get("metadata") or {}
        namespace, name = meta.get("namespace", "default"), meta.get("name", "")
        self._submit(lambda: self._api.patch_pod_status(namespace, name, patch))

    def shutdown(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait, cancel_futures=not wait)
