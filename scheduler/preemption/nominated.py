"""The queue's nominator as the framework and the preemption Executor read it: nominated pods as
PodInfos (upstream's PodNominator on the framework Handle)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.cache import PodInfoCache
from scheduler.framework.types import PodInfo, PodSpecError
from scheduling_queue import Nominator, SchedulingQueue


class NominatedPodInfos:
    """A Nominator's pods as PodInfos, read-only: what Filter counts (the framework's ``nominator``).
    ``explain`` and ``simulate`` fill a Nominator of their own from a snapshot and read it through this.

    A node's nominated PodInfos are kept until that node's nominations change: a preemptor's dry run
    asks for the same nodes' nominated pods several times per candidate node (Filter, then each
    reprieve), and every cycle's Filter asks for those of every node with nominations, of which one
    preemption changes one."""

    def __init__(self, nominator: Nominator, pod_infos: PodInfoCache) -> None:
        # Asked once per node per Filter run; its owner never replaces it.
        self._nominator = nominator
        self._node_versions = nominator.node_versions
        self._pod_infos = pod_infos
        # node name -> (the nominator's version of that node's last change, its nominated PodInfos)
        self._by_node: dict[str, tuple[int, tuple[PodInfo, ...]]] = {}

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        # Asked for every node a dry run or a Filter loop looks at: the version read off the
        # nominator's view (Nominator.node_version), and a node never nominated to answered at once.
        version = self._node_versions.get(node_name, 0)
        if not version:
            return ()
        found = self._by_node.get(node_name)
        if found is not None and found[0] == version:
            return found[1]
        pods = tuple(self._read(self._nominator.nominated_pods_for_node(node_name)))
        if pods:
            self._by_node[node_name] = (version, pods)
        else:
            # Nothing to keep: a node without nominations costs no memory.
            self._by_node.pop(node_name, None)
        return pods

    def _read(self, pods: Sequence[Mapping[str, Any]]) -> list[PodInfo]:
        out: list[PodInfo] = []
        for pod in pods:
            try:
                out.append(self._pod_infos.get(pod))
            except PodSpecError:
                # A pod we cannot read would never have been nominated by us; don't count it.
                continue
        return out

    @property
    def version(self) -> int:
        """The nominator's: changes with every change to the nominations."""
        return self._nominator.version

    def nominated_node_names(self) -> list[str]:
        return self._nominator.node_names()

    def changed_since(self, version: int) -> list[str]:
        """The nodes whose nominations changed after ``version`` (an earlier ``version``)."""
        return [name for name, changed in self._node_versions.items() if changed > version]


class NominatedPods(NominatedPodInfos):
    """The scheduling queue's nominations, which preemption also changes. Loop-side only, like the
    queue it reads."""

    def __init__(self, queue: SchedulingQueue, pod_infos: PodInfoCache) -> None:
        super().__init__(queue.nominator, pod_infos)
        self._queue = queue

    def clear_nomination(self, pod: Mapping[str, Any]) -> None:
        self._nominator.add_nominated_pod(pod, "")

    def activate(self, pod: Mapping[str, Any]) -> None:
        self._queue.activate([pod])
