"""Simulate: the product's frameworks and SchedulingAlgorithm on a read-only snapshot.

A :class:`Simulation` holds its own SchedulerCache, filled from a cluster dump (or a live cluster's
LIST), and the frameworks built from a configuration exactly as the scheduler builds them, with
StaticListers from the dump behind the Handle. ``place`` runs one real cycle (PreFilter .. Score,
select host) and, on success, assumes the pod on its node, as the scheduler does before binding.
Nothing is ever written to a cluster: there is no API behind the Handle and no binding.

Pending pods of the configuration's profiles that carry ``status.nominatedNodeName`` are nominated
there, as the scheduler's queue nominates them when it learns of them: Filter counts those of equal or
higher priority on their node (RunFilterPluginsWithNominatedPods, the scheduler's one implementation),
so room a preemptor waits for is not handed to another pod. A pod placed leaves its nomination.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from informers.resource import NODES, PODS, ResourceSpec
from scheduler.cache import PodInfoCache, SchedulerCache, Snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle.algorithm import SchedulingAlgorithm, SchedulingError
from scheduler.cycle.profiles import FrameworkHandle, build_frameworks
from scheduler.explain.record import AttemptRecord
from scheduler.explain.recorder import DecisionRecorder
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.interface import PluginFactory
from scheduler.framework.listers import Lister, StaticLister
from scheduler.framework.objects import namespaced_name, pod_spec, pod_status, scheduler_name_of
from scheduler.framework.runtime import Framework, PluginError, node_columns_of
from scheduler.framework.types import PodInfo, PodSpecError
from scheduler.preemption.nominated import NominatedPodInfos
from scheduling_queue import Nominator

KubeObject = Mapping[str, Any]


@dataclass(slots=True)
class Placement:
    pod: str
    node: str | None
    record: AttemptRecord | None
    reason: str = ""
    # The plugins that rejected the pod (upstream's Diagnosis): what the queue's hints key on.
    rejected_by: frozenset[str] = frozenset()


class Simulation:
    def __init__(
        self,
        config: SchedulerConfig,
        registry: Mapping[str, PluginFactory],
        objects: Mapping[str, Sequence[KubeObject]],
        *,
        seed: int = 1,
        clock: Any = time.time,
    ) -> None:
        """``objects``: the dump, by resource name (``nodes``, ``pods``, ``namespaces``, ...)."""
        self.clock = clock
        self.cache = SchedulerCache()
        self._listers: dict[str, StaticLister] = {}
        # The kinds (resource names) the configuration's plugins read through their Handles.
        self.read_kinds: set[str] = set()
        # The pending pods nominated to nodes, as the scheduler's queue would hold them.
        self.nominator = Nominator()
        self._nominated: dict[str, KubeObject] = {}
        self.frameworks: dict[str, Framework] = build_frameworks(config, registry, self._handle_for)
        nominated = NominatedPodInfos(self.nominator, PodInfoCache())
        for fwk in self.frameworks.values():
            fwk.nominator = nominated
        self.add_objects(objects)
        self.snapshot = Snapshot(node_columns_of(self.frameworks.values()))
        self.algorithm = SchedulingAlgorithm(rng=random.Random(seed))
        self.decisions = DecisionRecorder(clock=clock)
        self.placements: list[Placement] = []

    def _handle_for(self, profile: str) -> FrameworkHandle:
        return FrameworkHandle(profile, lambda: self.snapshot, None, self.clock, listers=self._lister)

    def _lister(self, resource: ResourceSpec) -> Lister:
        self.read_kinds.add(resource.name)
        return self._listers.setdefault(resource.name, StaticLister())

    # --- cluster changes (scenarios) --------------------------------------------------------------
    def add_objects(self, objects: Mapping[str, Sequence[KubeObject]]) -> None:
        """Objects by resource name: nodes and bound, active pods go to the cache, the rest to the
        listers plugins read through the Handle. Pending pods are not placed (``place`` takes them);
        those of the profiles with a ``status.nominatedNodeName`` are nominated there."""
        for resource, items in objects.items():
            if resource not in (NODES.name, PODS.name):
                lister = self._listers.setdefault(resource, StaticLister())
                for item in items:
                    lister.add(item)
        for node in objects.get(NODES.name, ()):
            self.cache.add_node(node)
        for pod in objects.get(PODS.name, ()):
            if not _active(pod):
                continue
            if pod_spec(pod).get("nodeName"):
                self.cache.add_pod(pod)
            elif scheduler_name_of(pod) in self.frameworks:
                self._nominate(pod)

    def _nominate(self, pod: KubeObject) -> None:
        """As the scheduler's queue on learning of a pending pod: its ``status.nominatedNodeName``, if
        any, nominates it."""
        self.nominator.add_nominated_pod(pod)
        if self.nominator.nominated_node_for(pod):
            self._nominated[namespaced_name(pod)] = pod

    def add_node(self, node: KubeObject) -> None:
        self.cache.add_node(node)

    def remove_node(self, name: str) -> None:
        info = self.cache.node_info(name)
        if info is not None and info.node is not None:
            self.cache.remove_node(info.node)

    def remove_pod(self, key: str) -> None:
        cached = self.cache.get_pod(key)
        if cached is not None:
            if self.cache.is_assumed(key):
                self.cache.forget_pod(key)
            else:
                self.cache.remove_pod(cached.pod)
        self.placements = [p for p in self.placements if p.pod != key]
        nominated = self._nominated.pop(key, None)
        if nominated is not None:
            self.nominator.forget(nominated)

    def snapshot_nodes(self) -> list[str]:
        self.cache.update_snapshot(self.snapshot)
        return [info.name for info in self.snapshot.node_infos()]

    def node_labels(self, name: str) -> Mapping[str, str]:
        info = self.cache.node_info(name)
        return info.labels if info is not None else {}

    # --- placing ---------------------------------------------------------------------------------
    def framework_for(self, pod: KubeObject) -> Framework:
        """The pod's profile, or the first one: manifests written for another scheduler are still
        placed by the configuration under test."""
        name = pod_spec(pod).get("schedulerName") or ""
        return self.frameworks.get(name) or next(iter(self.frameworks.values()))

    def place(self, pod: KubeObject) -> Placement:
        fwk = self.framework_for(pod)
        try:
            info = PodInfo(pod)
        except PodSpecError as err:
            return self._note(Placement(namespaced_name(pod), None, None, str(err)))
        self.cache.update_snapshot(self.snapshot)
        state = CycleState()
        self.decisions.begin(fwk, info, state, 1)
        try:
            result = self.algorithm.schedule_pod(fwk, state, info, self.snapshot)
        except FitError as err:
            message = err.message()
            self.decisions.unschedulable(fwk, state, info, self.snapshot, err, None, message)
            rejected = frozenset(err.diagnosis.unschedulable_plugins | err.diagnosis.pending_plugins)
            record = self.decisions.store.latest(info.key)
            return self._note(Placement(info.key, None, record, message, rejected))
        except (SchedulingError, PluginError, PodSpecError) as err:
            self.decisions.failed(info.key, str(err), error=True)
            return self._note(Placement(info.key, None, self.decisions.store.latest(info.key), str(err)))
        self.cache.assume_pod(info, result.node_name)
        # Assumed on its node, it counts there already (as the scheduler drops the nomination on assume).
        self.nominator.delete_nominated_pod_if_exists(pod)
        self._nominated.pop(info.key, None)
        self.decisions.assumed(state, result.node_name, waiting=False)
        return self._note(Placement(info.key, result.node_name, self.decisions.store.latest(info.key)))

    def place_all(self, pods: Iterable[KubeObject]) -> list[Placement]:
        return [self.place(pod) for pod in pods]

    def _note(self, placement: Placement) -> Placement:
        self.placements.append(placement)
        return placement

    # --- figures ----------------------------------------------------------------------------------
    def summary(self, zone_key: str = "topology.kubernetes.io/zone") -> dict[str, Any]:
        """Pods placed, per-node CPU utilisation spread, and per-zone counts of the placed pods."""
        placed = [p for p in self.placements if p.node]
        utilisation: list[float] = []
        self.cache.update_snapshot(self.snapshot)
        for info in self.snapshot.node_infos():
            if info.allocatable.milli_cpu > 0:
                utilisation.append(info.requested.milli_cpu / info.allocatable.milli_cpu)
        zones: Counter[str] = Counter()
        for p in placed:
            node = self.snapshot.get(p.node or "")
            zones[(node.labels.get(zone_key, "") if node else "") or "(none)"] += 1
        nodes_used = len({p.node for p in placed})
        return {
            "placed": len(placed),
            "pending": len(self.placements) - len(placed),
            "nodesUsed": nodes_used,
            "cpuUtilisation": {
                "min": round(min(utilisation, default=0.0), 3),
                "max": round(max(utilisation, default=0.0), 3),
                "spread": round(max(utilisation, default=0.0) - min(utilisation, default=0.0), 3),
            },
            "zones": dict(sorted(zones.items())),
        }


def _active(pod: KubeObject) -> bool:
    return pod_status(pod).get("phase") not in ("Succeeded", "Failed")
