"""The queue's nominator as the framework and the preemption Executor read it: nominated pods as
PodInfos (upstream's PodNominator on the framework Handle)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.cache import PodInfoCache
from scheduler.framework.types import PodInfo, PodSpecError
from scheduling_queue import SchedulingQueue


class NominatedPods:
    """Loop-side only, like the queue it reads."""

    def __init__(self, queue: SchedulingQueue, pod_infos: PodInfoCache) -> None:
        self._queue = queue
        self._pod_infos = pod_infos

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        out: list[PodInfo] = []
        for pod in self._queue.nominator.nominated_pods_for_node(node_name):
            try:
                out.append(self._pod_infos.get(pod))
            except PodSpecError:
                # A pod we cannot read would never have been nominated by us; don't count it.
                continue
        return out

    def nominated_node_names(self) -> list[str]:
        return self._queue.nominator.node_names()

    def clear_nomination(self, pod: Mapping[str, Any]) -> None:
        self._queue.nominator.add_nominated_pod(pod, "")

    def activate(self, pod: Mapping[str, Any]) -> None:
        self._queue.activate([pod])
