"""The scheduler's volume binder (``pkg/scheduler/framework/plugins/volumebinding/binder.go``).

Classifies a pod's claims (bound, unbound immediate, unbound WaitForFirstConsumer), finds per node the
PVs to bind or the claims to provision, assumes those choices in the assume caches at Reserve, writes
them at PreBind and then waits for the PV controller (and provisioner) to finish.

Not ported: the in-tree to CSI translation of PVs (``tryTranslatePVToCSI``). It rewrites the node
affinity of gcePersistentDisk/awsElasticBlockStore/azureDisk/cinder/portworx PVs on nodes whose CSINode
lists the plugin as migrated; such PVs are matched with their own node affinity here.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from informers.objects import resource_version, revision
from scheduler.framework import (
    CSI_DRIVERS,
    CSI_STORAGE_CAPACITIES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    Lister,
)
from scheduler.framework.objects import annotations_of, name_of, namespaced_name
from scheduler.framework.objects_storage import pv_claim_ref, pv_node_affinity
from scheduler.framework.quantity import QuantityError, value
from scheduler.plugins.helper.volumes import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    KubeObject,
    bind_volume_to_claim,
    check_node_affinity,
    claim_class,
    claim_has_request,
    claim_name,
    claim_request,
    find_matching_volume,
    is_claim_fully_bound,
    is_delay_binding_class,
    match_topology_selector_terms,
    meta,
    spec,
    volume_capacity,
    volume_class,
    volume_is_for_pod,
    with_selected_node,
)
from scheduler.plugins.volumebinding.assume_cache import AssumeCache, NotFoundError
from scheduler.util.labelselector import parse_label_selector
from scheduler.util.nodeselector import SelectorError

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


class BinderError(RuntimeError):
    """An internal error (upstream returns ``err``): the pod is retried with backoff."""


@dataclass(slots=True)
class BindingInfo:
    pvc: KubeObject
    pv: KubeObject

    def storage_class(self) -> str:
        return str(spec(self.pv).get("storageClassName") or "")

    def requested_and_capacity(self) -> tuple[int, int]:
        return claim_request(self.pvc), volume_capacity(self.pv)


@dataclass(slots=True)
class DynamicProvision:
    pvc: KubeObject
    # The CSIStorageCapacity that showed room, when the driver tracks capacity.
    node_capacity: KubeObject | None = None


@dataclass(slots=True)
class PodVolumes:
    """What binding the pod's volumes on one node takes."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)


@dataclass(slots=True)
class PodVolumeClaims:
    bound: list[KubeObject] = field(default_factory=list)
    unbound_delay_binding: list[KubeObject] = field(default_factory=list)
    unbound_immediate: list[KubeObject] = field(default_factory=list)
    # storage class -> its PVs (assumed versions included), for the delayed claims to match
    unbound_volumes_delay_binding: dict[str, list[KubeObject]] = field(default_factory=dict)
    # The bound claims' PVs that have a required node affinity, looked up at the first Filter of the
    # cycle (nothing changes them during it): in claim order, up to the first missing PV; and whether
    # one is missing.
    bound_pvs: list[KubeObject] | None = None
    bound_pv_missing: bool = False


@dataclass(frozen=True, slots=True)
class Listers:
    pvs: Lister
    pvcs: Lister
    classes: Lister
    csi_drivers: Lister
    capacities: Lister

    @classmethod
    def from_handle(cls, handle: Any) -> Listers:
        return cls(
            pvs=handle.lister(PERSISTENT_VOLUMES),
            pvcs=handle.lister(PERSISTENT_VOLUME_CLAIMS),
            classes=handle.lister(STORAGE_CLASSES),
            csi_drivers=handle.lister(CSI_DRIVERS),
            capacities=handle.lister(CSI_STORAGE_CAPACITIES),
        )


# PUT one object (PV or PVC); returns the stored object. Raises on any API failure.
Updater = Callable[[KubeObject], KubeObject]


def volume_limit(capacity: KubeObject) -> int | None:
    """``volumeLimit``: maximumVolumeSize when set, else capacity; None when neither is."""
    raw = capacity.get("maximumVolumeSize")
    if raw is None:
        raw = capacity.get("capacity")
    if raw is None:
        return None
    try:
        return value(raw)
    except QuantityError:
        return None


class VolumeBinder:
    def __init__(
        self,
        listers: Listers,
        *,
        update_pv: Updater,
        update_pvc: Updater,
        bind_timeout: float,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self.listers = listers
        self.pv_cache = AssumeCache(listers.pvs, "persistentvolume")
        self.pvc_cache = AssumeCache(listers.pvcs, "persistentvolumeclaim")
        self._update_pv = update_pv
        self._update_pvc = update_pvc
        self.bind_timeout = bind_timeout
        self._sleep = sleep
        self._clock = clock
        self._stopping = stopping

    # --- PreFilter --------------------------------------------------------------------------
    def _claim(self, pod: KubeObject, volume: Mapping[str, Any]) -> tuple[bool, KubeObject | None]:
        """``isVolumeBound``: (fully bound, the claim) for a PVC-backed volume, (True, None) otherwise."""
        found = claim_name(str(meta(pod).get("name") or ""), volume)
        if found is None:
            return True, None
        pvc_name, ephemeral = found
        key = f"{meta(pod).get('namespace', '')}/{pvc_name}"
        try:
            pvc = self.pvc_cache.get(key)
        except NotFoundError as err:
            raise BinderError(f'error getting PVC "{key}": {err}') from err
        if ephemeral:
            problem = volume_is_for_pod(pod, pvc)
            if problem:
                raise BinderError(problem)
        return is_claim_fully_bound(pvc), pvc

    def get_pod_volume_claims(self, pod: KubeObject) -> PodVolumeClaims:
        claims = PodVolumeClaims()
        for volume in spec(pod).get("volumes") or ():
            bound, pvc = self._claim(pod, volume)
            if pvc is None:
                continue
            if bound:
                claims.bound.append(pvc)
                continue
            if self._is_delay_binding(pvc) and not spec(pvc).get("volumeName"):
                claims.unbound_delay_binding.append(pvc)
            else:
                claims.unbound_immediate.append(pvc)
        classes = {claim_class(pvc) for pvc in claims.unbound_delay_binding}
        if classes:
            by_class: dict[str, list[KubeObject]] = {c: [] for c in classes}
            for pv in self.pv_cache.list():
                bucket = by_class.get(volume_class(pv))
                if bucket is not None:
                    bucket.append(pv)
            claims.unbound_volumes_delay_binding = by_class
        return claims

    def _is_delay_binding(self, pvc: KubeObject) -> bool:
        """``IsDelayBindingMode``: a missing class or StorageClass means immediate binding."""
        class_name = claim_class(pvc)
        if not class_name:
            return False
        storage_class = self.listers.classes.get(class_name)
        if storage_class is None:
            return False
        if storage_class.get("volumeBindingMode") is None:
            raise BinderError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
        return is_delay_binding_class(storage_class)

    def are_pod_volumes_bound(self, pod: KubeObject) -> bool:
        try:
            return all(self._claim(pod, volume)[0] for volume in spec(pod).get("volumes") or ())
        except BinderError:
            return False

    # --- Filter -----------------------------------------------------------------------------
    def find_pod_volumes(
        self, claims: PodVolumeClaims, node_name: str, node_labels: Mapping[str, str]
    ) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: the bindings and provisions for this node, or the reasons it cannot work."""
        volumes = PodVolumes()
        bound_ok = pvs_found = unbound_ok = enough_storage = True
        if claims.bound:
            bound_ok, pvs_found = self._check_bound_claims(claims, node_labels)
        if claims.unbound_delay_binding:
            unbound_ok, enough_storage = self._check_unbound(claims, node_name, node_labels, volumes)
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not enough_storage:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return volumes, reasons

    def resolve_bound_volumes(self, claims: PodVolumeClaims) -> list[KubeObject]:
        """Fills ``claims.bound_pvs`` and ``bound_pv_missing`` (once per cycle); the PVs that have a
        required node affinity, up to the first missing one."""
        if claims.bound_pvs is None:
            claims.bound_pvs = []
            for pvc in claims.bound:
                try:
                    pv = self.pv_cache.get(str(spec(pvc).get("volumeName") or ""))
                except NotFoundError:
                    claims.bound_pv_missing = True
                    break
                # Without a required node affinity a PV fits every node (check_node_affinity).
                if pv_node_affinity(pv).get("required") is not None:
                    claims.bound_pvs.append(pv)
        return claims.bound_pvs

    def _check_bound_claims(self, claims: PodVolumeClaims, labels: Mapping[str, str]) -> tuple[bool, bool]:
        """``checkBoundClaims``: (node affinity of every PV fits, every PV exists), the first failing
        claim deciding."""
        for pv in self.resolve_bound_volumes(claims):
            if check_node_affinity(pv, labels) is not None:
                return False, True
        return True, not claims.bound_pv_missing

    def _check_unbound(
        self, claims: PodVolumeClaims, node_name: str, labels: Mapping[str, str], volumes: PodVolumes
    ) -> tuple[bool, bool]:
        to_match: list[KubeObject] = []
        to_provision: list[KubeObject] = []
        for pvc in claims.unbound_delay_binding:
            selected = annotations_of(pvc).get(ANN_SELECTED_NODE)
            if selected is not None:
                # Provisioning already started for another node: only that node can work.
                if selected != node_name:
                    return False, True
                to_provision.append(pvc)
            else:
                to_match.append(pvc)
        unbound_ok = True
        if to_match:
            unbound_ok, leftover = self._find_matching_volumes(
                to_match, claims.unbound_volumes_delay_binding, labels, volumes
            )
            to_provision.extend(leftover)
        enough = True
        if to_provision:
            unbound_ok, enough = self._check_volume_provisions(to_provision, labels, volumes)
        return unbound_ok, enough

    def _find_matching_volumes(
        self,
        claims: list[KubeObject],
        by_class: Mapping[str, list[KubeObject]],
        labels: Mapping[str, str],
        volumes: PodVolumes,
    ) -> tuple[bool, list[KubeObject]]:
        # Smallest claims first, so they don't take the PVs the larger ones need (byPVCSize).
        chosen: dict[str, KubeObject] = {}
        unbound: list[KubeObject] = []
        found = True
        for pvc in sorted(claims, key=claim_request):
            try:
                pv = find_matching_volume(
                    pvc, by_class.get(claim_class(pvc), ()), labels, chosen, delay_binding=True
                )
            except ValueError as err:
                raise BinderError(str(err)) from err
            if pv is None:
                unbound.append(pvc)
                found = False
                continue
            chosen[name_of(pv)] = pv
            volumes.static_bindings.append(BindingInfo(pvc=pvc, pv=pv))
        return found, unbound

    def _check_volume_provisions(
        self, claims: list[KubeObject], labels: Mapping[str, str], volumes: PodVolumes
    ) -> tuple[bool, bool]:
        provisions: list[DynamicProvision] = []
        for pvc in claims:
            class_name = claim_class(pvc)
            if not class_name:
                raise BinderError(f'no class for claim "{namespaced_name(pvc)}"')
            storage_class = self.listers.classes.get(class_name)
            if storage_class is None:
                raise BinderError(f'failed to find storage class "{class_name}"')
            provisioner = str(storage_class.get("provisioner") or "")
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True
            if not match_topology_selector_terms(storage_class.get("allowedTopologies"), labels):
                return False, True
            sufficient, capacity = self._has_enough_capacity(provisioner, pvc, class_name, labels)
            if not sufficient:
                return True, False
            provisions.append(DynamicProvision(pvc=pvc, node_capacity=capacity))
        volumes.dynamic_provisions = provisions
        return True, True

    def _has_enough_capacity(
        self, provisioner: str, pvc: KubeObject, class_name: str, labels: Mapping[str, str]
    ) -> tuple[bool, KubeObject | None]:
        """Storage capacity tracking: only for CSI drivers that ask for it (``CSIDriver.storageCapacity``)."""
        if not claim_has_request(pvc):
            return True, None
        driver = self.listers.csi_drivers.get(provisioner)
        if driver is None or not spec(driver).get("storageCapacity"):
            return True, None
        size = claim_request(pvc)
        for capacity in self.listers.capacities.list():
            if capacity.get("storageClassName") != class_name:
                continue
            limit = volume_limit(capacity)
            if limit is None or limit < size:
                continue
            if _node_has_access(capacity, labels):
                return True, capacity
        return False, None

    # --- Reserve / Unreserve ----------------------------------------------------------------
    def assume_pod_volumes(self, pod: KubeObject, node_name: str, volumes: PodVolumes) -> bool:
        """Records the node's bindings in the caches; True when every volume is already bound."""
        if self.are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for binding in volumes.static_bindings:
            new_pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except (NotFoundError, RuntimeError) as err:
                    self._revert_pvs(new_bindings)
                    raise BinderError(str(err)) from err
            new_bindings.append(BindingInfo(pvc=binding.pvc, pv=new_pv))
        new_provisions: list[DynamicProvision] = []
        for provision in volumes.dynamic_provisions:
            claim = with_selected_node(provision.pvc, node_name)
            try:
                self.pvc_cache.assume(claim)
            except (NotFoundError, RuntimeError) as err:
                self._revert_pvs(new_bindings)
                self._revert_pvcs([p.pvc for p in new_provisions])
                raise BinderError(str(err)) from err
            new_provisions.append(DynamicProvision(pvc=claim))
        volumes.static_bindings = new_bindings
        volumes.dynamic_provisions = new_provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        self._revert_pvs(volumes.static_bindings)
        self._revert_pvcs([p.pvc for p in volumes.dynamic_provisions])

    def _revert_pvs(self, bindings: Sequence[BindingInfo]) -> None:
        for binding in bindings:
            self.pv_cache.restore(binding.pv)

    def _revert_pvcs(self, claims: Sequence[KubeObject]) -> None:
        for claim in claims:
            self.pvc_cache.restore(claim)

    # --- PreBind (binding thread) -----------------------------------------------------------
    def bind_pod_volumes(
        self, pod: KubeObject, node_name: str, volumes: PodVolumes, *, node_labels: Mapping[str, str]
    ) -> None:
        """Writes the bindings, then waits until the PV controller has bound them all.

        ``node_labels`` are the node's labels when the pod was reserved there (upstream re-reads the
        node; the snapshot belongs to the loop, so the plugin hands them over).

        Raises BinderError (or the updater's error) on failure or after ``bind_timeout`` seconds.
        """
        bindings = volumes.static_bindings
        claims = [p.pvc for p in volumes.dynamic_provisions]
        self._bind_api_update(bindings, claims)
        deadline = self._clock() + self.bind_timeout
        # Upstream polls every second; the listers are local, so ask more often at first.
        interval = 0.1
        while True:
            if self._check_bindings(node_name, node_labels, bindings, claims):
                return
            if self._clock() >= deadline:
                raise BinderError("binding volumes: context deadline exceeded")
            if self._stopping():
                raise BinderError("binding volumes: the scheduler is shutting down")
            self._sleep(interval)
            interval = min(1.0, interval * 2)

    def _bind_api_update(self, bindings: list[BindingInfo], claims: list[KubeObject]) -> None:
        done_pvs = done_pvcs = 0
        try:
            for binding in bindings:
                binding.pv = self._update_pv(binding.pv)
                done_pvs += 1
            for i, claim in enumerate(claims):
                claims[i] = self._update_pvc(claim)
                done_pvcs += 1
        finally:
            # What was not written must not stay assumed; what was written the informer will show.
            self._revert_pvs(bindings[done_pvs:])
            self._revert_pvcs(claims[done_pvcs:])

    def _check_bindings(
        self,
        node_name: str,
        labels: Mapping[str, str],
        bindings: Sequence[BindingInfo],
        claims: Sequence[KubeObject],
    ) -> bool:
        for binding in bindings:
            try:
                pv = self.pv_cache.get_api_obj(name_of(binding.pv))
                pvc = self.pvc_cache.get_api_obj(namespaced_name(binding.pvc))
            except NotFoundError as err:
                raise BinderError(f"failed to check binding: {err}") from err
            if _newer(binding.pv, pv):
                return False  # the informer has not seen our write yet
            problem = check_node_affinity(pv, labels)
            if problem is not None:
                raise BinderError(_affinity_mismatch(pv, node_name, problem))
            ref = pv_claim_ref(pv)
            if not ref.get("uid"):
                raise BinderError(f'ClaimRef got reset for pv "{name_of(pv)}"')
            if not is_claim_fully_bound(pvc):
                return False
        for claim in claims:
            try:
                pvc = self.pvc_cache.get_api_obj(namespaced_name(claim))
            except NotFoundError as err:
                raise BinderError(f"failed to check provisioning pvc: {err}") from err
            if _newer(claim, pvc):
                return False
            selected = annotations_of(pvc).get(ANN_SELECTED_NODE)
            if selected is None and not annotations_of(pvc):
                raise BinderError(f'selectedNode annotation reset for PVC "{name_of(pvc)}"')
            if selected != node_name:
                # The provisioner gave up on this node (it removes the annotation to reschedule).
                raise BinderError(f'provisioning failed for PVC "{name_of(pvc)}"')
            volume_name = spec(pvc).get("volumeName")
            if volume_name:
                provisioned = self.listers.pvs.get(str(volume_name))
                if provisioned is None:
                    return False
                problem = check_node_affinity(provisioned, labels)
                if problem is not None:
                    raise BinderError(_affinity_mismatch(provisioned, node_name, problem))
            if not is_claim_fully_bound(pvc):
                return False
        return True


def _affinity_mismatch(pv: KubeObject, node_name: str, problem: str) -> str:
    return f'pv "{name_of(pv)}" node affinity doesn\'t match node "{node_name}": {problem}'


def _newer(written: KubeObject, seen: KubeObject) -> bool:
    """The object we wrote is newer than what the informer holds (resourceVersions as integers)."""
    ours, theirs = revision(written), revision(seen)
    if ours is None or theirs is None:
        return resource_version(written) != resource_version(seen)
    return ours > theirs


def _node_has_access(capacity: KubeObject, labels: Mapping[str, str]) -> bool:
    topology = capacity.get("nodeTopology")
    if topology is None:
        return False
    try:
        return parse_label_selector(topology, "nodeTopology").matches(labels)
    except SelectorError:
        return False


def stopping_flag() -> Callable[[], bool]:
    """True once the interpreter is shutting down, so a volume wait never holds up the exit.

    ThreadPoolExecutor joins its workers in a threading-atexit hook; ours is registered later, so it runs
    first and ends the waits. (``threading._register_atexit`` is private but present since 3.9.)
    """
    event = threading.Event()
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        # RuntimeError: already shutting down, where nothing waits any more anyway.
        with contextlib.suppress(RuntimeError):
            register(event.set)
    return event.is_set
