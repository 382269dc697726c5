"""NodeVolumeLimits (``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go``, v1.37.2).

A node's CSINode says how many volumes of each CSI driver it can attach (``allocatable.count``). The pod
fits when, per driver, the unique volumes already used by the node's pods (assumed ones included) plus the
pod's new ones stay within that count. Volumes attached to the node (its VolumeAttachments of CSI PVs) count
too, once, whether or not a pod the scheduler knows of uses them.

Differences from upstream, on purpose and named here:

* In-tree volumes migrated to CSI are counted through the storage class path only (an unbound claim of
  an in-tree provisioner counts against its CSI driver on nodes whose CSINode lists the plugin as
  migrated). Bound in-tree PVs are not translated (no volume handle), so they are not counted; inline
  in-tree cloud disks stay refused by the fail-closed guard (``scheduler.framework.unsupported``).

VolumeLimitScaling (beta and on by default since v1.37): a CSIDriver with
``spec.preventPodSchedulingIfMissing: true`` makes a node whose CSINode does not list that driver
unschedulable for a pod with a new volume of it (``checkCSIDriverOnNode``); a driver without a CSIDriver
object is assumed installed.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework import (
    CSI_DRIVERS,
    CSI_NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
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
from scheduler.framework.listers import (
    IndexedLister,
    KubeObject,
    Lister,
    WatchedLister,
    lister_version,
)
from scheduler.framework.objects import annotations_of, name_of
from scheduler.framework.objects_storage import (
    csi_node_driver_limit,
    csi_node_drivers,
    volume_attachment_pv_name,
    volume_attachment_spec,
)
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import is_assigned_or_nominated, safe_hint
from scheduler.plugins.helper.signature import volumes_signature
from scheduler.plugins.helper.volumes import (
    MIGRATED_PLUGINS_ANNOTATION,
    claim_class,
    claim_name,
    meta,
    spec,
    volume_is_for_pod,
)

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

# In-tree provisioner -> its CSI driver (csi-translation-lib's plugins).
IN_TREE_TO_CSI: dict[str, str] = {
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}
# Inline volume sources csi-translation-lib can migrate (``IsInlineMigratable``) -> their CSI driver.
INLINE_SOURCE_TO_CSI: dict[str, str] = {
    "gcePersistentDisk": "pd.csi.storage.gke.io",
    "awsElasticBlockStore": "ebs.csi.aws.com",
    "azureDisk": "disk.csi.azure.com",
    "azureFile": "file.csi.azure.com",
    "cinder": "cinder.csi.openstack.org",
    "vsphereVolume": "csi.vsphere.vmware.com",
    "portworxVolume": "pxd.portworx.com",
}
IN_TREE_INLINE_SOURCES = tuple(INLINE_SOURCE_TO_CSI)
# VolumeAttachments by ``spec.nodeName`` (the index upstream adds to the shared informer).
_VA_NODE_INDEX = "va.spec.nodename"
# Cached node answers of nodes gone from the snapshot tolerated before they are swept out.
_STALE_NODES_KEPT = 64


class LookupFailed(LookupError):
    """A claim of the pod being scheduled is missing or not its own."""


STATE_KEY = "Filter" + names.NODE_VOLUME_LIMITS
_CLAIMS_KEY = names.NODE_VOLUME_LIMITS + "/claims"
# (unique volume name, CSI driver, in-tree plugin the node's CSINode must list as migrated, or "").
_Volume = tuple[str, str, str]
# A node's CSI limits (driver -> count), its pods' CSI volumes (unique name -> driver), volumes per driver.
_NodeVolumes = tuple[dict[str, int], dict[str, str], dict[str, int]]


@dataclass(frozen=True, slots=True)
class _CycleView:
    """The pod's own volumes for one cycle (or why it cannot be scheduled), and the listers' versions."""

    resolved: list[_Volume] | str
    versions: Hashable | None


def _pod_claims(pod: PodInfo) -> tuple[str, tuple[tuple[str, bool], ...]]:
    """The pod's namespace and its claims (name, ephemeral) in volume order: once per pod version."""
    name = pod.name
    found = (claim_name(name, volume) for volume in pod.spec.get("volumes") or ())
    return pod.namespace, tuple(c for c in found if c is not None)


def _add_volumes(volumes: Sequence[_Volume], csi_node: KubeObject | None, into: dict[str, str]) -> None:
    for unique_name, driver, migrated_plugin in volumes:
        if not migrated_plugin or _migrated(csi_node, migrated_plugin):
            into[unique_name] = driver


def _va_node(va: KubeObject) -> list[str]:
    return [volume_attachment_spec(va).get("nodeName") or ""]


class _AttachmentGenerations:
    """Per node, a number that changes whenever a VolumeAttachment naming it (``spec.nodeName``, before
    or after an update) is added, changed or deleted: what a node's cached volume count keys on, so a
    VolumeAttachment change refreshes only the node(s) it names instead of every node.

    A node left without VolumeAttachments (its last one deleted or moved away, as when the node itself
    is deleted) is forgotten, and ``forget`` drops whatever the plugin keyed by its number at the same
    moment: the node then reads 0 again, and no cache entry keyed by 0 (or any older number) survives
    for it. Events and Filter both run on the scheduling loop, so no Filter is half-way between."""

    __slots__ = ("_attachments_of", "_by_node", "_counter", "_forget")

    def __init__(
        self, attachments_of: Callable[[str], Sequence[KubeObject]], forget: Callable[[str], None]
    ) -> None:
        # Values come from one counter, never reused: while a node is remembered its number never
        # returns to one an older cache entry was keyed by.
        self._counter = itertools.count(1)
        self._by_node: dict[str, int] = {}
        # The VolumeAttachments naming a node now (the lister's store is updated before its handlers run).
        self._attachments_of = attachments_of
        self._forget = forget

    def of(self, node_name: str) -> int:
        return self._by_node.get(node_name, 0)

    def __len__(self) -> int:
        return len(self._by_node)

    def _named(self, va: KubeObject) -> None:
        self._by_node[_va_node(va)[0]] = next(self._counter)

    def _left(self, va: KubeObject) -> None:
        """``va`` no longer names its node: a new number, or none if the node has no other left."""
        node_name = _va_node(va)[0]
        if self._attachments_of(node_name):
            self._by_node[node_name] = next(self._counter)
        else:
            self._by_node.pop(node_name, None)
            self._forget(node_name)

    def on_add(self, obj: KubeObject) -> None:
        self._named(obj)

    def on_update(self, old: KubeObject, new: KubeObject) -> None:
        # A move names two nodes: the one it left and the one it names now.
        if _va_node(old) != _va_node(new):
            self._left(old)
        self._named(new)

    def on_delete(self, obj: KubeObject) -> None:
        self._left(obj)


def volume_unique_name(driver: str, volume_handle: str) -> str:
    """``getVolumeUniqueName``: how a volume is told apart from the others of a node."""
    return f"{driver}/{volume_handle}"


def is_inline_migratable(volume: Mapping[str, Any]) -> bool:
    return any(volume.get(source) is not None for source in IN_TREE_INLINE_SOURCES)


def volume_limits(csi_node: KubeObject | None) -> dict[str, int]:
    """``getVolumeLimits``: driver -> allocatable count, for drivers that publish one."""
    limits: dict[str, int] = {}
    for driver in csi_node_drivers(csi_node):
        count = csi_node_driver_limit(driver)
        if count is not None:
            limits[str(driver.get("name"))] = int(count)
    return limits


def _migrated(csi_node: KubeObject | None, plugin: str) -> bool:
    """``isCSIMigrationOn``: the node's CSINode lists the in-tree plugin as migrated."""
    if csi_node is None:
        return False
    listed = annotations_of(csi_node).get(MIGRATED_PLUGINS_ANNOTATION) or ""
    return plugin in {p.strip() for p in listed.split(",") if p.strip()}


class NodeVolumeLimits:
    """Filter: CSI attach limits per node (CSINode ``allocatable.count``).

    Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`` (v1.37.2).
    """

    name = names.NODE_VOLUME_LIMITS

    # A signed pod has no claim or migratable volume: PreFilter skips.
    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        return volumes_signature(pod)

    def __init__(
        self,
        args: Mapping[str, Any] | None = None,
        handle: Handle | None = None,
        *,
        volume_limit_scaling: bool = True,
    ) -> None:
        ArgsReader(self.name).top(args, None, ())
        if handle is None:
            raise ValueError("NodeVolumeLimits needs a Handle")
        # Feature gate VolumeLimitScaling (beta, on by default since v1.37).
        self._csi_drivers = handle.lister(CSI_DRIVERS) if volume_limit_scaling else None
        self._pvs = handle.lister(PERSISTENT_VOLUMES)
        self._pvcs = handle.lister(PERSISTENT_VOLUME_CLAIMS)
        self._classes = handle.lister(STORAGE_CLASSES)
        self._csi_nodes = handle.lister(CSI_NODES)
        self._vas: Lister = handle.lister(VOLUME_ATTACHMENTS)
        if isinstance(self._vas, IndexedLister):
            self._vas.add_index(_VA_NODE_INDEX, _va_node)
        # With change events, a node's cached count is keyed by its own VolumeAttachments' generation;
        # without, by the whole lister's version (any VolumeAttachment change refreshes every node).
        self._va_generations: _AttachmentGenerations | None = None
        if isinstance(self._vas, WatchedLister):
            self._va_generations = _AttachmentGenerations(self._vas_naming, self._forget_node)
            self._vas.add_event_handler(self._va_generations)
        # Unbound claims get a volume handle unique to this scheduler (upstream's randomVolumeIDPrefix).
        self._random_prefix = secrets.token_hex(16)
        self._handle = handle
        # node name -> (key, the objects the key's identities belong to, answer); see _node_volumes.
        self._by_node: dict[str, tuple[Hashable, Any, _NodeVolumes]] = {}

    def _vas_naming(self, node_name: str) -> Sequence[KubeObject]:
        if isinstance(self._vas, IndexedLister):
            return self._vas.by_index(_VA_NODE_INDEX, node_name)
        return [va for va in self._vas.list() if _va_node(va)[0] == node_name]

    def _forget_node(self, node_name: str) -> None:
        self._by_node.pop(node_name, None)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        for volume in pod.spec.get("volumes") or ():
            if (
                volume.get("persistentVolumeClaim") is not None
                or volume.get("ephemeral") is not None
                or is_inline_migratable(volume)
            ):
                return None, None
        return None, Status.skip()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.spec.get("volumes"):
            return None
        # The pod's own volumes resolve the same on every node but for the CSINode's migration list:
        # looked up once per cycle (nothing changes the listers during one).
        view: _CycleView | None = state.get(STATE_KEY)
        if view is None:
            view = self._cycle_view(pod)
            state.write(STATE_KEY, view)
        if isinstance(view.resolved, str):
            return Status.unschedulable(view.resolved, resolvable=False)
        if not view.resolved:
            return None
        csi_node = self._csi_nodes.get(node.name)
        new_volumes: dict[str, str] = {}
        _add_volumes(view.resolved, csi_node, new_volumes)
        if not new_volumes:
            return None
        if self._csi_drivers is not None:
            for driver in new_volumes.values():
                if not self._driver_installed(driver, csi_node):
                    return Status.unschedulable(f"{driver} CSI driver is not installed on the node")
        try:
            limits, attached, attached_count = self._node_volumes(node, csi_node, view.versions)
        except LookupFailed as err:
            return Status.as_error(str(err))
        if not limits:
            return None
        for unique_name in [name for name in new_volumes if name in attached]:
            # A volume the node already has costs nothing more.
            del new_volumes[unique_name]
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _driver_installed(self, driver: str, csi_node: KubeObject | None) -> bool:
        """Upstream's checkCSIDriverOnNode: only a CSIDriver that opts in (preventPodSchedulingIfMissing)
        requires the node's CSINode to list it; an unknown driver may not be a CSI driver at all."""
        assert self._csi_drivers is not None
        csi_driver = self._csi_drivers.get(driver)
        if csi_driver is None or spec(csi_driver).get("preventPodSchedulingIfMissing") is not True:
            return True
        if csi_node is None:
            return False
        return any(d.get("name") == driver for d in spec(csi_node).get("drivers") or ())

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        """``filter`` for a window of nodes (no per-node dispatch by the Filter loop)."""
        return [self.filter(state, pod, node) for node in nodes]

    def _cycle_view(self, pod: PodInfo) -> _CycleView:
        try:
            resolved: list[_Volume] | str = self._resolve(pod, new_pod=True)
        except LookupFailed as err:
            resolved = str(err)
        versions = (
            lister_version(self._pvcs),
            lister_version(self._pvs),
            lister_version(self._classes),
            lister_version(self._vas) if self._va_generations is None else 0,
        )
        return _CycleView(resolved, None if None in versions else versions)

    def _node_volumes(
        self, node: NodeInfo, csi_node: KubeObject | None, versions: Hashable | None
    ) -> _NodeVolumes:
        """The node's CSINode limits, and (if it has any) the CSI volumes its pods use (unique name ->
        driver) with the count per driver of those and of the volumes attached to the node but used by
        none of its pods (VolumeAttachments). Raises LookupFailed on a pod's claim without a name.

        Kept per node until its pods, its CSINode, any claim, volume or class, or a VolumeAttachment
        naming this node changes (``versions`` is None when the listers cannot tell): a pod's cycle
        then reads each node's answer instead of resolving every claim of every pod on it.
        """
        pods = tuple(node.pods.values())
        key = None
        if versions is not None:
            # Identities, not names: a preemption what-if's node has other pods under the same
            # name, and an updated pod is a new PodInfo. The entry holds the objects, so their
            # identities are not reused while it lives.
            attachments = self._va_generations.of(node.name) if self._va_generations is not None else 0
            key = (versions, attachments, id(csi_node), tuple(map(id, pods)))
            entry = self._by_node.get(node.name)
            if entry is not None and entry[0] == key:
                return entry[2]
        limits = volume_limits(csi_node)
        attached: dict[str, str] = {}
        counts: dict[str, int] = {}
        if limits:
            for existing in pods:
                if existing.spec.get("volumes"):
                    _add_volumes(self._resolve(existing, new_pod=False), csi_node, attached)
            for driver in attached.values():
                counts[driver] = counts.get(driver, 0) + 1
            for unique_name, driver in self._attached_by_va(node.name).items():
                # A pod's new volume attached only through a VolumeAttachment still counts as new, as
                # upstream: only the pods' volumes are taken off the new ones.
                if unique_name not in attached:
                    counts[driver] = counts.get(driver, 0) + 1
        result = (limits, attached, counts)
        if key is not None:
            snapshot = self._handle.snapshot
            if len(self._by_node) > snapshot.num_nodes() + _STALE_NODES_KEPT:
                # Some are of deleted nodes (a node's entry goes with its VolumeAttachments, but one
                # that had none leaves nothing to say so): keep only the snapshot's nodes.
                for name in [name for name in self._by_node if snapshot.get(name) is None]:
                    del self._by_node[name]
            self._by_node[node.name] = (key, (pods, csi_node), result)
        return result

    def _attached_by_va(self, node_name: str) -> dict[str, str]:
        """``getNodeVolumeAttachmentInfo``: the node's VolumeAttachments of CSI PVs, unique volume name
        -> attacher. One without an attacher or a PV name, or whose PV is missing or not CSI, is
        skipped."""
        out: dict[str, str] = {}
        for va in self._vas_naming(node_name):
            va_spec = volume_attachment_spec(va)
            if va_spec.get("nodeName") != node_name:
                continue
            attacher = va_spec.get("attacher") or ""
            pv_name = volume_attachment_pv_name(va)
            if not attacher or pv_name is None:
                continue
            pv = self._pvs.get(pv_name)
            csi = spec(pv).get("csi") if pv is not None else None
            if csi is None:
                continue
            out[volume_unique_name(attacher, str(csi.get("volumeHandle") or ""))] = attacher
        return out

    def _resolve(self, pod: PodInfo, *, new_pod: bool) -> list[_Volume]:
        """``filterAttachableVolumes`` up to the CSINode: per claim of the pod, (unique volume name,
        CSI driver, the in-tree plugin the node must have migrated or "").

        For the pod being scheduled (``new_pod``) a missing or foreign claim raises LookupFailed; an
        existing pod's such claims are skipped.
        """
        namespace, claims = pod.derived(_CLAIMS_KEY, _pod_claims)
        out: list[_Volume] = []
        for pvc_name, ephemeral in claims:
            if not pvc_name:
                raise LookupFailed("PersistentVolumeClaim had no name")
            pvc = self._pvcs.get(pvc_name, namespace)
            if pvc is None:
                if new_pod:
                    raise LookupFailed(
                        f'looking up PVC {namespace}/{pvc_name}: persistentvolumeclaim "{pvc_name}" not found'
                    )
                continue
            if ephemeral:
                problem = volume_is_for_pod(pod.pod, pvc)
                if problem:
                    if new_pod:
                        raise LookupFailed(problem)
                    continue
            volume = self._csi_driver_info(pvc)
            if volume is not None:
                out.append(volume)
        return out

    def _csi_driver_info(self, pvc: KubeObject) -> _Volume | None:
        pv_name = spec(pvc).get("volumeName")
        if pv_name:
            pv = self._pvs.get(str(pv_name))
            if pv is not None:
                csi = spec(pv).get("csi")
                if csi is None:
                    return None  # in-tree PV: not translated (module docstring)
                driver, handle = str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
                return (volume_unique_name(driver, handle), driver, "") if driver and handle else None
        return self._csi_driver_info_from_class(pvc)

    def _csi_driver_info_from_class(self, pvc: KubeObject) -> _Volume | None:
        """An unbound claim counts against its class's provisioner, with a handle of its own; an
        in-tree provisioner's only on nodes that migrated it."""
        class_name = claim_class(pvc)
        if not class_name:
            return None
        storage_class = self._classes.get(class_name)
        if storage_class is None:
            return None
        handle = f"{self._random_prefix}-{meta(pvc).get('namespace', '')}/{name_of(pvc)}"
        provisioner = str(storage_class.get("provisioner") or "")
        if provisioner in IN_TREE_TO_CSI:
            driver = IN_TREE_TO_CSI[provisioner]
            return f"{driver}/{handle}", driver, provisioner
        return (f"{provisioner}/{handle}", provisioner, "") if provisioner else None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.CSINode, ActionType.Add)),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSINode, ActionType.Update), self.is_schedulable_after_csinode_updated
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.AssignedPod, ActionType.Delete),
                self.is_schedulable_after_assigned_pod_deleted,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PersistentVolumeClaim, ActionType.Add),
                self.is_schedulable_after_pvc_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.VolumeAttachment, ActionType.Delete),
                self.is_schedulable_after_volume_attachment_deleted,
            ),
        ]

    @safe_hint
    def is_schedulable_after_volume_attachment_deleted(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        """A detached volume frees a slot: worth a retry for a pod with a claim (any driver may be its
        own), or with an in-tree inline volume whose CSI driver is the VolumeAttachment's attacher."""
        attacher = spec(old_obj).get("attacher")
        for volume in spec(pod).get("volumes") or ():
            if volume.get("persistentVolumeClaim") is not None:
                return QueueingHint.Queue
            for source, driver in INLINE_SOURCE_TO_CSI.items():
                if volume.get(source) is not None and driver == attacher:
                    return QueueingHint.Queue
        return QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_assigned_pod_deleted(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if old_obj is None or not spec(old_obj).get("volumes") or not is_assigned_or_nominated(old_obj):
            return QueueingHint.Skip
        for volume in spec(old_obj).get("volumes") or ():
            if (
                volume.get("persistentVolumeClaim") is not None
                or volume.get("ephemeral") is not None
                or is_inline_migratable(volume)
            ):
                return QueueingHint.Queue
        return QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_pvc_added(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if meta(new_obj).get("namespace") != meta(pod).get("namespace"):
            return QueueingHint.Skip
        wanted = {
            c[0] for v in spec(pod).get("volumes") or () if (c := claim_name(name_of(pod), v)) is not None
        }
        return QueueingHint.Queue if name_of(new_obj) in wanted else QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_csinode_updated(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        old_limits = {
            str(d.get("name")): int(csi_node_driver_limit(d) or 0) for d in csi_node_drivers(old_obj)
        }
        for driver in csi_node_drivers(new_obj):
            new_limit = int(csi_node_driver_limit(driver) or 0)
            if new_limit > old_limits.get(str(driver.get("name")), 0):
                return QueueingHint.Queue
        return QueueingHint.Skip
