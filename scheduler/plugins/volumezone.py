"""VolumeZone (``pkg/scheduler/framework/plugins/volumezone/volume_zone.go``, v1.37.2)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
)
from scheduler.framework.objects import labels_of, name_of
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import safe_hint
from scheduler.plugins.helper.signature import volumes_signature
from scheduler.plugins.helper.volumes import WAIT_FOR_FIRST_CONSUMER, claim_class, meta, spec

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
PRE_FILTER_STATE_KEY = "PreFilter" + names.VOLUME_ZONE

LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (LABEL_BETA_ZONE, LABEL_BETA_REGION, LABEL_ZONE, LABEL_REGION)
_GA_LABEL = {LABEL_BETA_ZONE: LABEL_ZONE, LABEL_BETA_REGION: LABEL_REGION}
# A PV in several zones lists them in one label value, joined so (cloud-provider's LabelZonesToSet).
MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """The zones of a label value, or None when one of them is empty (upstream's error)."""
    zones = [zone.strip() for zone in value.split(MULTI_ZONE_DELIMITER)]
    if any(not zone for zone in zones):
        return None
    return frozenset(zones)


def pv_topologies(pv: Mapping[str, Any]) -> list[PVTopology]:
    labels = labels_of(pv)
    found = []
    for key in TOPOLOGY_LABELS:
        if key in labels:
            zones = label_zones_to_set(str(labels[key]))
            if zones is not None:
                found.append(PVTopology(name_of(pv), key, zones))
    return found


def _claim_names(pod: Mapping[str, Any]) -> list[str]:
    return [
        str(volume["persistentVolumeClaim"].get("claimName") or "")
        for volume in spec(pod).get("volumes") or ()
        if volume.get("persistentVolumeClaim") is not None
    ]


def _unresolvable(message: str) -> Status:
    return Status.unschedulable(message, resolvable=False)


class VolumeZone:
    """Filter: the zone and region labels of the pod's bound PVs must match the node's.

    Upstream: ``pkg/scheduler/framework/plugins/volumezone/volume_zone.go`` (v1.37.2).
    """

    name = names.VOLUME_ZONE
    # Filter reads the node's zone labels and the pod's volumes' topology, never the pods on the node
    # (preemption dry runs ask once per node).
    filter_ignores_pods_on_node = True

    # A signed pod has no claims: PreFilter skips.
    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        """Only pods without claims: a claim's PV and storage class are objects of their own."""
        return volumes_signature(pod)

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())
        if handle is None:
            raise ValueError("VolumeZone needs a Handle")
        self._pvs = handle.lister(PERSISTENT_VOLUMES)
        self._pvcs = handle.lister(PERSISTENT_VOLUME_CLAIMS)
        self._classes = handle.lister(STORAGE_CLASSES)

    def _pv_topologies_of_pod(self, pod: PodInfo) -> tuple[list[PVTopology], Status | None]:
        topologies: list[PVTopology] = []
        for pvc_name in _claim_names(pod.pod):
            if not pvc_name:
                return [], _unresolvable("PersistentVolumeClaim had no name")
            pvc = self._pvcs.get(pvc_name, pod.namespace)
            if pvc is None:
                return [], _unresolvable(f'persistentvolumeclaim "{pvc_name}" not found')
            pv_name = str(spec(pvc).get("volumeName") or "")
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    return [], _unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                storage_class = self._classes.get(class_name)
                if storage_class is None:
                    return [], _unresolvable(f'storageclass.storage.k8s.io "{class_name}" not found')
                mode = storage_class.get("volumeBindingMode")
                if mode is None:
                    return [], _unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
                if mode == WAIT_FOR_FIRST_CONSUMER:
                    # Not bound yet: VolumeBinding picks a PV that fits the node.
                    continue
                return [], _unresolvable("PersistentVolume had no name")
            pv = self._pvs.get(pv_name)
            if pv is None:
                return [], _unresolvable(f'persistentvolume "{pv_name}" not found')
            topologies.extend(pv_topologies(pv))
        return topologies, None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        topologies, status = self._pv_topologies_of_pod(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, topologies)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.spec.get("volumes"):
            return None
        topologies = state.get(PRE_FILTER_STATE_KEY)
        if topologies is None:
            topologies, status = self._pv_topologies_of_pod(pod)
            if status is not None:
                return status
        labels = node.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            # A node without zone labels is not constrained (upstream keeps this for old clusters).
            return None
        for topology in topologies:
            value = labels.get(topology.key)
            if value is None:
                value = labels.get(_GA_LABEL.get(topology.key, topology.key))
            if value is None or value not in topology.values:
                return _unresolvable(ERR_REASON_CONFLICT)
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.StorageClass, ActionType.Add),
                self.is_schedulable_after_storage_class_added,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeLabel)),
            ClusterEventWithHint(
                ClusterEvent(Resource.PersistentVolumeClaim, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PersistentVolume, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_pv_change,
            ),
        ]

    @safe_hint
    def is_schedulable_after_pvc_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if new_obj is None or meta(pod).get("namespace") != meta(new_obj).get("namespace"):
            return QueueingHint.Skip
        return QueueingHint.Queue if name_of(new_obj) in _claim_names(pod) else QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_storage_class_added(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if new_obj.get("volumeBindingMode") != WAIT_FOR_FIRST_CONSUMER:
            return QueueingHint.Skip
        return QueueingHint.Queue

    @safe_hint
    def is_schedulable_after_pv_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if old_obj is None:
            return QueueingHint.Queue
        if pv_topologies(old_obj) != pv_topologies(new_obj):
            return QueueingHint.Queue
        return QueueingHint.Skip
