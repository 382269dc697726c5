"""NodeVolumeLimits (``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go``, v1.36).

A node's CSINode says how many volumes of each CSI driver it can attach (``allocatable.count``). The pod
fits when, per driver, the unique volumes already used by the node's pods (assumed ones included) plus the
pod's new ones stay within that count.

Differences from upstream, on purpose and named here:

* In-tree volumes migrated to CSI are counted through the storage class path only (an unbound claim of
  an in-tree provisioner counts against its CSI driver on nodes whose CSINode lists the plugin as
  migrated). Bound in-tree PVs are not translated (no volume handle), so they are not counted; inline
  in-tree cloud disks stay refused by the fail-closed guard (``scheduler.framework.unsupported``).
* VolumeAttachments are not watched: volumes attached to the node but used by no pod the scheduler
  knows of are not counted.
* VolumeLimitScaling (alpha, off in v1.36) is not implemented.
"""

from __future__ import annotations

import secrets
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from scheduler.framework import (
    CSI_NODES,
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
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import is_assigned_or_nominated, safe_hint
from scheduler.plugins.helper.signature import volumes_signature
from scheduler.plugins.helper.volumes import (
    MIGRATED_PLUGINS_ANNOTATION,
    KubeObject,
    annotations_of,
    claim_class,
    claim_name,
    meta,
    name_of,
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
# Inline volume sources csi-translation-lib can migrate (``IsInlineMigratable``).
IN_TREE_INLINE_SOURCES = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cinder",
    "vsphereVolume",
    "portworxVolume",
)


class LookupFailed(LookupError):
    """A claim of the pod being scheduled is missing or not its own."""


def is_inline_migratable(volume: Mapping[str, Any]) -> bool:
    return any(volume.get(source) is not None for source in IN_TREE_INLINE_SOURCES)


def volume_limits(csi_node: KubeObject | None) -> dict[str, int]:
    """``getVolumeLimits``: driver -> allocatable count, for drivers that publish one."""
    limits: dict[str, int] = {}
    for driver in spec(csi_node or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
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

    Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`` (v1.36).
    """

    name = names.NODE_VOLUME_LIMITS

    def sign(self, pod: PodInfo) -> Hashable | None:
        return volumes_signature(pod)

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())
        if handle is None:
            raise ValueError("NodeVolumeLimits needs a Handle")
        self._pvs = handle.lister(PERSISTENT_VOLUMES)
        self._pvcs = handle.lister(PERSISTENT_VOLUME_CLAIMS)
        self._classes = handle.lister(STORAGE_CLASSES)
        self._csi_nodes = handle.lister(CSI_NODES)
        # Unbound claims get a volume handle unique to this scheduler (upstream's randomVolumeIDPrefix).
        self._random_prefix = secrets.token_hex(16)

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
        csi_node = self._csi_nodes.get(node.name)
        new_volumes: dict[str, str] = {}
        try:
            self._attachable_volumes(pod.pod, csi_node, new_volumes, new_pod=True)
        except LookupFailed as err:
            return Status.unschedulable(str(err), resolvable=False)
        if not new_volumes:
            return None
        limits = volume_limits(csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for existing in node.pods.values():
            self._attachable_volumes(existing.pod, csi_node, attached, new_pod=False)
        attached_count: dict[str, int] = {}
        for unique_name, driver in attached.items():
            # A volume the node already has costs nothing more.
            new_volumes.pop(unique_name, None)
            attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _attachable_volumes(
        self, pod: KubeObject, csi_node: KubeObject | None, result: dict[str, str], *, new_pod: bool
    ) -> None:
        """``filterAttachableVolumes``: unique volume name -> CSI driver, for the pod's claims."""
        namespace = str(meta(pod).get("namespace") or "")
        for volume in spec(pod).get("volumes") or ():
            found = claim_name(name_of(pod), volume)
            if found is None:
                continue  # inline in-tree volumes: see the module docstring
            pvc_name, ephemeral = found
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
                problem = volume_is_for_pod(pod, pvc)
                if problem:
                    if new_pod:
                        raise LookupFailed(problem)
                    continue
            driver, handle = self._csi_driver_info(csi_node, pvc)
            if driver and handle:
                result[f"{driver}/{handle}"] = driver

    def _csi_driver_info(self, csi_node: KubeObject | None, pvc: KubeObject) -> tuple[str, str]:
        pv_name = spec(pvc).get("volumeName")
        if pv_name:
            pv = self._pvs.get(str(pv_name))
            if pv is not None:
                csi = spec(pv).get("csi")
                if csi is None:
                    return "", ""  # in-tree PV: not translated (module docstring)
                return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        return self._csi_driver_info_from_class(csi_node, pvc)

    def _csi_driver_info_from_class(self, csi_node: KubeObject | None, pvc: KubeObject) -> tuple[str, str]:
        """An unbound claim counts against its class's provisioner, with a handle of its own."""
        class_name = claim_class(pvc)
        if not class_name:
            return "", ""
        storage_class = self._classes.get(class_name)
        if storage_class is None:
            return "", ""
        handle = f"{self._random_prefix}-{meta(pvc).get('namespace', '')}/{name_of(pvc)}"
        provisioner = str(storage_class.get("provisioner") or "")
        if provisioner in IN_TREE_TO_CSI:
            if not _migrated(csi_node, provisioner):
                return "", ""
            return IN_TREE_TO_CSI[provisioner], handle
        return provisioner, handle

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.CSINode, ActionType.Add)),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSINode, ActionType.Update), self.is_schedulable_after_csinode_updated
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.Pod, ActionType.Delete), self.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PersistentVolumeClaim, ActionType.Add),
                self.is_schedulable_after_pvc_added,
            ),
        ]

    @safe_hint
    def is_schedulable_after_pod_deleted(
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
            str(d.get("name")): int((d.get("allocatable") or {}).get("count") or 0)
            for d in spec(old_obj).get("drivers") or ()
        }
        for driver in spec(new_obj).get("drivers") or ():
            new_limit = int((driver.get("allocatable") or {}).get("count") or 0)
            if new_limit > old_limits.get(str(driver.get("name")), 0):
                return QueueingHint.Queue
        return QueueingHint.Skip
