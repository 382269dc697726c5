"""The queue's nominator as the framework and the preemption Executor read it: nominated pods as
PodInfos (upstream's PodNominator on the framework Handle)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.cache import PodInfoCache
from scheduler.framework.types import PodInfo, PodSpecError
from scheduling_queue import SchedulingQueue


class NominatedPods:
    """Loop-side only, like the queue it reads.

    A node's nominated PodInfos are kept until the nominations change: a preemptor's dry run asks for
    the same nodes' nominated pods several times per candidate node (Filter, then each reprieve)."""

    def __init__(self, queue: SchedulingQueue, pod_infos: PodInfoCache) -> None:
        self._queue = queue
        self._pod_infos = pod_infos
        self._by_node: dict[str, tuple[PodInfo, ...]] = {}
        self._version = -1

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        nominator = self._queue.nominator
        if nominator.version != self._version:
            self._by_node.clear()
            self._version = nominator.version
        found = self._by_node.get(node_name)
        if found is None:
            found = self._by_node[node_name] = tuple(self._read(nominator.nominated_pods_for_node(node_name)))
        return found

    def _read(self, pods: Sequence[Mapping[str, Any]]) -> list[PodInfo]:
        out: list[PodInfo] = []
        for pod in pods:
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
