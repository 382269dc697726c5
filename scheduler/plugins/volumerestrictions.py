"""VolumeRestrictions (``pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go``,
v1.37.2)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework import (
    PERSISTENT_VOLUME_CLAIMS,
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
from scheduler.framework.objects import name_of
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import safe_hint
from scheduler.plugins.helper.signature import volumes_signature
from scheduler.plugins.helper.volumes import meta, spec

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by "
    "another pod"
)
PRE_FILTER_STATE_KEY = "PreFilter" + names.VOLUME_RESTRICTIONS
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
_LEGACY_DISKS = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")

Volume = Mapping[str, Any]


def needs_restrictions_check(volume: Volume) -> bool:
    return any(volume.get(kind) is not None for kind in _LEGACY_DISKS)


def _have_overlap(a: Sequence[str] | None, b: Sequence[str] | None) -> bool:
    return bool(set(a or ()) & set(b or ()))


def is_volume_conflict(volume: Volume, pod: Mapping[str, Any]) -> bool:
    """Whether ``volume`` clashes with a volume of ``pod``: the same disk, unless both mount read-only
    (an EBS volume clashes even then)."""
    for existing in spec(pod).get("volumes") or ():
        disk, other = volume.get("gcePersistentDisk"), existing.get("gcePersistentDisk")
        if (
            disk is not None
            and other is not None
            and disk.get("pdName") == other.get("pdName")
            and not (disk.get("readOnly") and other.get("readOnly"))
        ):
            return True
        ebs, other = volume.get("awsElasticBlockStore"), existing.get("awsElasticBlockStore")
        if ebs is not None and other is not None and ebs.get("volumeID") == other.get("volumeID"):
            return True
        iscsi, other = volume.get("iscsi"), existing.get("iscsi")
        if (
            iscsi is not None
            and other is not None
            and iscsi.get("iqn") == other.get("iqn")
            and not (iscsi.get("readOnly") and other.get("readOnly"))
        ):
            return True
        rbd, other = volume.get("rbd"), existing.get("rbd")
        if (
            rbd is not None
            and other is not None
            and _have_overlap(rbd.get("monitors"), other.get("monitors"))
            and (rbd.get("pool") or "rbd") == (other.get("pool") or "rbd")
            and rbd.get("image") == other.get("image")
            and not (rbd.get("readOnly") and other.get("readOnly"))
        ):
            return True
    return False


def satisfy_volume_conflicts(pod: Mapping[str, Any], node_pods: Sequence[Mapping[str, Any]]) -> bool:
    for volume in spec(pod).get("volumes") or ():
        if not needs_restrictions_check(volume):
            continue
        if any(is_volume_conflict(volume, existing) for existing in node_pods):
            return False
    return True


def _claim_names(pod: Mapping[str, Any]) -> list[str]:
    return [
        str(v["persistentVolumeClaim"].get("claimName") or "")
        for v in spec(pod).get("volumes") or ()
        if v.get("persistentVolumeClaim") is not None
    ]


@dataclass(slots=True)
class PreFilterState:
    read_write_once_pod_pvcs: frozenset[str]
    conflicting_pvc_ref_count: int
    # The namespace of the pod being scheduled: claim names only mean something within it.
    namespace: str = ""

    def clone(self) -> PreFilterState:
        return PreFilterState(self.read_write_once_pod_pvcs, self.conflicting_pvc_ref_count, self.namespace)

    def update_with_pod(self, other: PodInfo, multiplier: int) -> None:
        """upstream updateWithPod: each volume of ``other`` naming one of our ReadWriteOncePod claims
        counts once. Unlike upstream, a pod of another namespace never counts (a claim of the same name
        there is a different claim)."""
        if not self.read_write_once_pod_pvcs or other.namespace != self.namespace:
            return
        refs = sum(1 for c in _claim_names(other.pod) if c in self.read_write_once_pod_pvcs)
        self.conflicting_pvc_ref_count += multiplier * refs


class VolumeRestrictions:
    """Filter: legacy disk conflicts on the node, and ReadWriteOncePod claims in use anywhere.

    Upstream: ``pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go`` (v1.37.2).
    """

    name = names.VOLUME_RESTRICTIONS

    # A signed pod has no claims and no volume needing the check: PreFilter skips.
    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        return volumes_signature(pod)

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())
        if handle is None:
            raise ValueError("VolumeRestrictions needs a Handle")
        self._handle = handle
        self._pvcs = handle.lister(PERSISTENT_VOLUME_CLAIMS)

    def _rwop_claims(self, pod: PodInfo) -> tuple[frozenset[str], Status | None]:
        found = set()
        for claim in _claim_names(pod.pod):
            pvc = self._pvcs.get(claim, pod.namespace)
            if pvc is None:
                return frozenset(), Status.unschedulable(
                    f'persistentvolumeclaim "{claim}" not found', resolvable=False
                )
            if READ_WRITE_ONCE_POD in (spec(pvc).get("accessModes") or ()):
                found.add(name_of(pvc))
        return frozenset(found), None

    def _claims_in_use(self, namespace: str, claims: frozenset[str]) -> int:
        """How many of ``claims`` a pod in the snapshot (any node, assumed pods included) uses.

        Upstream keeps a set of used claims in the snapshot; scanning the pods is fine here because
        only pods with ReadWriteOncePod claims get this far.
        """
        used: set[str] = set()
        for node in self._handle.snapshot.node_infos():
            for other in node.pods.values():
                if other.namespace == namespace:
                    used.update(c for c in _claim_names(other.pod) if c in claims)
        return len(used)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        needs_check = any(needs_restrictions_check(v) for v in pod.spec.get("volumes") or ())
        claims, status = self._rwop_claims(pod)
        if status is not None:
            return None, status
        conflicts = self._claims_in_use(pod.namespace, claims) if claims else 0
        if not needs_check and conflicts == 0:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(claims, conflicts, pod.namespace))
        return None, None

    # --- PreFilterExtensions: what-if runs (preemption victims removed, nominated pods added) ---
    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        data = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(data, PreFilterState):
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        data.update_with_pod(to_add, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        data = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(data, PreFilterState):
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        data.update_with_pod(to_remove, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not satisfy_volume_conflicts(pod.pod, [p.pod for p in node.pods.values()]):
            return Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        data = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(data, PreFilterState):
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        if data.conflicting_pvc_ref_count > 0:
            return Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.AssignedPod, ActionType.Delete),
                self.is_schedulable_after_assigned_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Add)),
            ClusterEventWithHint(
                ClusterEvent(Resource.PersistentVolumeClaim, ActionType.Add),
                self.is_schedulable_after_pvc_added,
            ),
        ]

    @safe_hint
    def is_schedulable_after_pvc_added(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if meta(new_obj).get("namespace") != meta(pod).get("namespace"):
            return QueueingHint.Skip
        return QueueingHint.Queue if name_of(new_obj) in _claim_names(pod) else QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_assigned_pod_deleted(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if old_obj is None or meta(old_obj).get("namespace") != meta(pod).get("namespace"):
            return QueueingHint.Skip
        if not satisfy_volume_conflicts(pod, [old_obj]):
            return QueueingHint.Queue
        claims = set(_claim_names(pod))
        if any(c in claims for c in _claim_names(old_obj)):
            return QueueingHint.Queue
        return QueueingHint.Skip
