"""Pods bound since the last load sample (scheduler-plugins v0.34.7 ``pkg/trimaran/handler.go``,
``PodAssignEventHandler``).

A node's measured load lags the pods just put on it, so TargetLoadPacking adds the predicted load of the
pods bound recently. This cache keeps, per node, each assigned pod with the time the watch showed it on
that node (an add of an assigned pod, or an update that changed its node), and drops it when the pod is
deleted. Entries older than a metrics agent's reporting interval are swept every five minutes from the
cache's creation, as upstream's cleanup ticker does; the sweep due runs when the cache is next read (it
is read only in Score), with the time of the tick it stands for. Fed by the pod lister's events on the
event loop.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.listers import KubeObject
from scheduler.framework.objects import object_meta, pod_spec

CACHE_CLEANUP_INTERVAL_SECONDS = 5 * 60
METRICS_AGENT_REPORTING_INTERVAL_SECONDS = 60


@dataclass(frozen=True, slots=True)
class AssignedPod:
    timestamp: float
    pod: Mapping[str, Any]


def _node_of(pod: KubeObject) -> str:
    return str(pod_spec(pod).get("nodeName") or "")


class ScheduledPodsCache:
    """Node name -> pods assigned to it, oldest first (upstream's ``ScheduledPodsCache``)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.by_node: dict[str, list[AssignedPod]] = {}
        self._created = clock()
        self._last_sweep = self._created

    def pods_on(self, node_name: str) -> Sequence[AssignedPod]:
        self._sweep_if_due()
        return self.by_node.get(node_name, ())

    def _sweep_if_due(self) -> None:
        ticks = int((self._clock() - self._created) // CACHE_CLEANUP_INTERVAL_SECONDS)
        tick_time = self._created + ticks * CACHE_CLEANUP_INTERVAL_SECONDS
        if tick_time > self._last_sweep:
            self._last_sweep = tick_time
            self.cleanup(tick_time)

    # --- the pod lister's events, narrowed to assigned pods ------------------------------------
    def on_add(self, obj: KubeObject) -> None:
        self._record(obj)

    def on_update(self, old: KubeObject, new: KubeObject) -> None:
        if _node_of(old) != _node_of(new):
            self._record(new)

    def on_delete(self, obj: KubeObject) -> None:
        entries = self.by_node.get(_node_of(obj))
        if not entries:
            return
        uid = object_meta(obj).get("uid")
        for index, entry in enumerate(entries):
            if object_meta(entry.pod).get("uid") == uid:
                del entries[index]
                return

    def _record(self, pod: KubeObject) -> None:
        node = _node_of(pod)
        if node:
            self.by_node.setdefault(node, []).append(AssignedPod(self._clock(), pod))

    # --- cleanup -------------------------------------------------------------------------------
    def cleanup(self, now: float) -> None:
        """Drop entries that were older than the reporting interval at ``now``, and nodes left without
        any."""
        for node in list(self.by_node):
            entries = self.by_node[node]
            first_recent = bisect.bisect_right(
                [e.timestamp + METRICS_AGENT_REPORTING_INTERVAL_SECONDS for e in entries], now
            )
            if first_recent == len(entries):
                # Upstream's sort.Search finds no recent entry and keeps the node's list as it is.
                continue
            del entries[:first_recent]
            if not entries:
                del self.by_node[node]


def assigned(pod: KubeObject) -> bool:
    return bool(_node_of(pod))
