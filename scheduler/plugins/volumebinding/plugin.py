"""VolumeBinding (``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go``, v1.37.2).

PreFilter classifies the pod's claims; Filter finds per node the PVs to bind or the claims to
provision; Reserve assumes them so no other pod takes the same PV; PreBind (binding thread) writes the
PV ``claimRef`` / PVC ``selected-node`` and waits for the PV controller; Unreserve forgets the
assumptions. Score (StorageCapacityScoring, beta and on by default since v1.37) prefers nodes by the
utilisation of the PVs they would bind, along ``shape``.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    MAX_NODE_SCORE,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    all_pass,
)
from scheduler.framework.api_error import ApiError
from scheduler.framework.objects import annotations_of
from scheduler.framework.objects_storage import pvc_status
from scheduler.framework.runtime import PluginError
from scheduler.plugins import names
from scheduler.plugins.helper.hints import safe_hint
from scheduler.plugins.helper.shape import broken_linear_function
from scheduler.plugins.helper.signature import volumes_signature
from scheduler.plugins.helper.volumes import (
    MIGRATED_PLUGINS_ANNOTATION,
    KubeObject,
    claim_name,
    claim_request,
    meta,
    spec,
    volume_is_for_pod,
)
from scheduler.plugins.volumebinding.args import VolumeBindingArgs, parse_args
from scheduler.plugins.volumebinding.binder import (
    BinderError,
    Listers,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
    stopping_flag,
    volume_limit,
)

STATE_KEY = names.VOLUME_BINDING
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(slots=True)
class StateData:
    all_bound: bool = False
    # node name -> what binding the pod's volumes there takes (written by Filter)
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    claims: PodVolumeClaims | None = None
    has_static_bindings: bool = False
    # The node's labels at Reserve, for PreBind's checks off the loop.
    node_labels: Mapping[str, str] = field(default_factory=dict)


def _state(cs: CycleState) -> StateData:
    data = cs.get(STATE_KEY)
    if not isinstance(data, StateData):
        raise BinderError(f"reading {STATE_KEY!r} from cycleState: not found")
    return data


def _pod_claim_names(pod: Mapping[str, Any]) -> set[str]:
    name = str(meta(pod).get("name") or "")
    found = (claim_name(name, volume) for volume in spec(pod).get("volumes") or ())
    return {c[0] for c in found if c is not None}


class VolumeBinding:
    """PreFilter/Filter/Reserve/PreBind/Score for pods with PersistentVolumeClaims.

    Upstream: ``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go`` (v1.37.2).
    """

    name = names.VOLUME_BINDING

    # A signed pod has no claims: PreFilter writes an empty StateData (Reserve sets its attributes)
    # and skips; PreScore skips or scores by configuration alone.
    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        return volumes_signature(pod)

    def __init__(
        self,
        args: Mapping[str, Any] | None = None,
        handle: Handle | None = None,
        *,
        storage_capacity_scoring: bool = True,
    ) -> None:
        self.args: VolumeBindingArgs = parse_args(args, storage_capacity_scoring=storage_capacity_scoring)
        if handle is None:
            raise ValueError("VolumeBinding needs a Handle")
        self._handle = handle
        self.storage_capacity_scoring = storage_capacity_scoring
        self.binder = VolumeBinder(
            Listers.from_handle(handle),
            update_pv=lambda pv: handle.update_object(PERSISTENT_VOLUMES, pv),
            update_pvc=lambda pvc: handle.update_object(PERSISTENT_VOLUME_CLAIMS, pvc),
            bind_timeout=float(self.args.bind_timeout_seconds),
            stopping=stopping_flag(),
        )
        self._pvcs = handle.lister(PERSISTENT_VOLUME_CLAIMS)
        self._scorer = None
        if storage_capacity_scoring:
            # Shape scores are 0..10 in the config; nodes score 0..100.
            factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
            self._scorer = broken_linear_function([(u, s * factor) for u, s in self.args.shape])
        self._lock = threading.Lock()

    # --- PreFilter --------------------------------------------------------------------------
    def _pod_has_pvcs(self, pod: KubeObject) -> tuple[bool, str | None]:
        """``podHasPVCs``: whether the pod uses claims, and why it cannot be scheduled yet."""
        has_pvc = False
        namespace = str(meta(pod).get("namespace") or "")
        pod_name = str(meta(pod).get("name") or "")
        for volume in spec(pod).get("volumes") or ():
            found = claim_name(pod_name, volume)
            if found is None:
                continue
            has_pvc = True
            pvc_name, ephemeral = found
            pvc = self._pvcs.get(pvc_name, namespace)
            if pvc is None:
                if ephemeral:
                    return True, (
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim "
                        f'"{pvc_name}"'
                    )
                return True, f'persistentvolumeclaim "{pvc_name}" not found'
            if pvc_status(pvc).get("phase") == "Lost":
                return True, (
                    f'persistentvolumeclaim "{pvc_name}" bound to non-existent persistentvolume '
                    f'"{spec(pvc).get("volumeName") or ""}"'
                )
            if meta(pvc).get("deletionTimestamp"):
                return True, f'persistentvolumeclaim "{pvc_name}" is being deleted'
            if ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem:
                    return True, problem
        return has_pvc, None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        has_pvc, problem = self._pod_has_pvcs(pod.pod)
        if problem is not None:
            return None, Status.unschedulable(problem, resolvable=False)
        if not has_pvc:
            state.write(STATE_KEY, StateData())
            return None, Status.skip()
        try:
            claims = self.binder.get_pod_volume_claims(pod.pod)
        except BinderError as err:
            return None, Status.as_error(err)
        if claims.unbound_immediate:
            return None, Status.unschedulable(ERR_UNBOUND_IMMEDIATE, resolvable=False)
        state.write(STATE_KEY, StateData(claims=claims))
        return None, None

    # --- Filter -----------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        try:
            data = _state(state)
        except BinderError as err:
            return Status.as_error(err)
        if data.claims is None:
            return None
        try:
            volumes, reasons = self.binder.find_pod_volumes(data.claims, node.name, node.labels)
        except BinderError as err:
            return Status.as_error(err)
        if reasons:
            return Status.unschedulable(*reasons, resolvable=False)
        data.pod_volumes_by_node[node.name] = volumes
        data.has_static_bindings = data.has_static_bindings or bool(volumes.static_bindings)
        return None

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        """``filter`` for a window of nodes. A pod whose claims are all bound to volumes without a
        node affinity fits every node with nothing to bind: one shared empty PodVolumes per node
        (Reserve then finds every volume bound and assumes nothing)."""
        try:
            data = _state(state)
        except BinderError as err:
            return [Status.as_error(err)] * len(nodes)
        claims = data.claims
        if claims is None:
            return all_pass(len(nodes))
        if (
            claims.bound
            and not claims.unbound_delay_binding
            and not self.binder.resolve_bound_volumes(claims)
            and not claims.bound_pv_missing
        ):
            nothing = PodVolumes()
            data.pod_volumes_by_node.update((node.name, nothing) for node in nodes)
            return all_pass(len(nodes))
        return [self.filter(state, pod, node) for node in nodes]

    # --- Score ------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if self._scorer is None:
            return Status.skip()
        data = state.get(STATE_KEY)
        if isinstance(data, StateData) and (data.has_static_bindings or self.storage_capacity_scoring):
            return None
        return Status.skip()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        if self._scorer is None:
            return 0, None
        data = state.get(STATE_KEY)
        if not isinstance(data, StateData):
            return 0, Status.as_error(f"reading {STATE_KEY!r} from cycleState: not found")
        volumes = data.pod_volumes_by_node.get(node.name)
        if volumes is None:
            return 0, None
        return self.score_volumes(volumes), None

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[int] | npt.NDArray[np.int64]:
        """``score`` for many nodes. A pod without volumes to bind on any node (most pods: PreScore still
        lets the plugin score while StorageCapacityScoring is on, as upstream's) scores 0 everywhere:
        one array instead of a Python call per node."""
        data = state.get(STATE_KEY)
        if self._scorer is None or (isinstance(data, StateData) and not data.pod_volumes_by_node):
            return np.zeros(len(nodes), dtype=np.int64)
        scores: list[int] = []
        for node in nodes:
            value, status = self.score(state, pod, node)
            if status is not None and status.code is not Code.Success:
                raise PluginError(status.with_plugin(self.name))
            scores.append(value)
        return scores

    def score_volumes(self, volumes: PodVolumes) -> int:
        """Upstream's Score body: per storage class utilisation, averaged over classes."""
        assert self._scorer is not None
        classes: dict[str, list[int]] = {}
        if volumes.static_bindings:
            for binding in volumes.static_bindings:
                requested, capacity = binding.requested_and_capacity()
                totals = classes.setdefault(binding.storage_class(), [0, 0])
                totals[0] += requested
                totals[1] += capacity
        else:
            for provision in volumes.dynamic_provisions:
                if provision.node_capacity is None:
                    continue
                class_name = str(spec(provision.pvc).get("storageClassName") or "")
                totals = classes.setdefault(class_name, [0, 0])
                totals[1] = volume_limit({"capacity": provision.node_capacity.get("capacity")}) or 0
                totals[0] += claim_request(provision.pvc)
        if not classes:
            return 0
        total = 0
        for requested, capacity in classes.values():
            if capacity == 0 or requested > capacity:
                total += self._scorer(MAX_UTILIZATION)
            else:
                total += self._scorer(requested * MAX_UTILIZATION // capacity)
        # math.Round: halves away from zero (scores are never negative).
        return int(total / len(classes) + 0.5)

    # --- Reserve / Unreserve ----------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        try:
            data = _state(state)
        except BinderError as err:
            return Status.as_error(err)
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            data.all_bound = True
            return None
        node = self._handle.snapshot.get(node_name)
        data.node_labels = dict(node.labels) if node is not None else {}
        try:
            data.all_bound = self.binder.assume_pod_volumes(pod.pod, node_name, volumes)
        except BinderError as err:
            return Status.as_error(err)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if not isinstance(data, StateData):
            return
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    # --- PreBind (binding thread) -----------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Upstream's PreBindPreFlight: Skip when every claim is bound, Success when PreBind will bind."""
        try:
            data = _state(state)
        except BinderError as err:
            return Status.as_error(err)
        if data.all_bound:
            return Status.skip()
        if node_name not in data.pod_volumes_by_node:
            return Status.as_error(f'no pod volume found for node "{node_name}"')
        return None

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        try:
            data = _state(state)
        except BinderError as err:
            return Status.as_error(err)
        if data.all_bound:
            return None
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return Status.as_error(f'no pod volume found for node "{node_name}"')
        labels = data.node_labels
        try:
            self.binder.bind_pod_volumes(pod.pod, node_name, volumes, node_labels=labels)
        except (BinderError, ApiError) as err:
            return Status.as_error(err)
        return None

    # --- queueing hints ---------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.StorageClass, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_storage_class_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PersistentVolumeClaim, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.PersistentVolume, ActionType.Add | ActionType.Update)),
            ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeLabel)),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSINode, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_csinode_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSIDriver, ActionType.Update),
                self.is_schedulable_after_csidriver_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSIStorageCapacity, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_capacity_change,
            ),
        ]

    @safe_hint
    def is_schedulable_after_csinode_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if old_obj is None:
            return QueueingHint.Queue
        old = annotations_of(old_obj).get(MIGRATED_PLUGINS_ANNOTATION)
        new = annotations_of(new_obj).get(MIGRATED_PLUGINS_ANNOTATION)
        return QueueingHint.Queue if old != new else QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_pvc_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if meta(pod).get("namespace") != meta(new_obj).get("namespace"):
            return QueueingHint.Skip
        if meta(new_obj).get("name") in _pod_claim_names(pod):
            return QueueingHint.Queue
        return QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_storage_class_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if old_obj is None:
            return QueueingHint.Queue
        if (new_obj.get("allowedTopologies") or None) != (old_obj.get("allowedTopologies") or None):
            return QueueingHint.Queue
        return QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_capacity_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if old_obj is None:
            return QueueingHint.Queue
        old_limit, new_limit = volume_limit(old_obj), volume_limit(new_obj)
        if new_limit is not None and (old_limit is None or new_limit > old_limit):
            return QueueingHint.Queue
        return QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_csidriver_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        driver = meta(new_obj).get("name")
        for volume in spec(pod).get("volumes") or ():
            csi = volume.get("csi")
            if csi is None or csi.get("driver") != driver:
                continue
            if spec(old_obj).get("storageCapacity") and not spec(new_obj).get("storageCapacity"):
                return QueueingHint.Queue
        return QueueingHint.Skip
