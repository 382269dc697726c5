"""Typed views of the storage objects the volume plugins read: PersistentVolume, PersistentVolumeClaim
(``v1``), StorageClass, CSINode, CSIDriver, CSIStorageCapacity and VolumeAttachment
(``storage.k8s.io/v1``).

Same rules as ``scheduler.framework.objects``: ``TypedDict`` shapes over the raw JSON dicts, all fields
optional, read-only, and accessors that read a missing field and an explicit null alike as empty.
Volume sources (``csi``, ``awsElasticBlockStore``...) stay ``Any``: the plugins hand them on whole.
"""

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from scheduler.framework.objects import ObjectMeta

__all__ = [
    "CSIDriver",
    "CSIDriverSpec",
    "CSINode",
    "CSINodeDriver",
    "CSINodeSpec",
    "CSIStorageCapacity",
    "ObjectReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimSpec",
    "PersistentVolumeClaimStatus",
    "PersistentVolumeSpec",
    "PersistentVolumeStatus",
    "StorageClass",
    "VolumeAttachment",
    "VolumeAttachmentSource",
    "VolumeAttachmentSpec",
    "VolumeNodeAffinity",
    "csi_driver_spec",
    "csi_node_driver_limit",
    "csi_node_drivers",
    "pv_claim_ref",
    "pv_node_affinity",
    "pv_spec",
    "pv_status",
    "pvc_spec",
    "pvc_status",
    "pvc_storage_requests",
    "volume_attachment_pv_name",
    "volume_attachment_spec",
]


class ObjectReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    namespace: str
    name: str
    uid: str
    resourceVersion: str


class VolumeNodeAffinity(TypedDict, total=False):
    required: dict[str, Any]


class PersistentVolumeSpec(TypedDict, total=False):
    capacity: dict[str, Any]
    accessModes: list[str]
    claimRef: ObjectReference
    nodeAffinity: VolumeNodeAffinity
    storageClassName: str
    volumeAttributesClassName: str
    volumeMode: str
    csi: dict[str, Any]


class PersistentVolumeStatus(TypedDict, total=False):
    phase: str


class PersistentVolume(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: PersistentVolumeSpec
    status: PersistentVolumeStatus


class PersistentVolumeClaimSpec(TypedDict, total=False):
    accessModes: list[str]
    resources: dict[str, Any]
    selector: dict[str, Any]
    storageClassName: str
    volumeAttributesClassName: str
    volumeMode: str
    volumeName: str


class PersistentVolumeClaimStatus(TypedDict, total=False):
    phase: str
    capacity: dict[str, Any]
    accessModes: list[str]


class PersistentVolumeClaim(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: PersistentVolumeClaimSpec
    status: PersistentVolumeClaimStatus


class StorageClass(TypedDict, total=False):
    # StorageClass has no spec: its fields sit at the top level.
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    provisioner: str
    parameters: dict[str, str]
    volumeBindingMode: str
    allowedTopologies: list[dict[str, Any]]
    allowVolumeExpansion: bool
    reclaimPolicy: str


class CSINodeDriver(TypedDict, total=False):
    name: str
    nodeID: str
    topologyKeys: list[str]
    allocatable: dict[str, Any]


class CSINodeSpec(TypedDict, total=False):
    drivers: list[CSINodeDriver]


class CSINode(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: CSINodeSpec


class CSIDriverSpec(TypedDict, total=False):
    attachRequired: bool
    storageCapacity: bool
    volumeLifecycleModes: list[str]


class CSIDriver(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: CSIDriverSpec


class VolumeAttachmentSource(TypedDict, total=False):
    persistentVolumeName: str
    inlineVolumeSpec: dict[str, Any]


class VolumeAttachmentSpec(TypedDict, total=False):
    attacher: str
    nodeName: str
    source: VolumeAttachmentSource


class VolumeAttachment(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: VolumeAttachmentSpec
    status: dict[str, Any]


class CSIStorageCapacity(TypedDict, total=False):
    # No spec either: top-level fields.
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    storageClassName: str
    nodeTopology: dict[str, Any]
    capacity: str
    maximumVolumeSize: str


def pv_spec(pv: Mapping[str, Any]) -> PersistentVolumeSpec:
    """A PersistentVolume's ``spec``, or ``{}`` when missing or null."""
    return pv.get("spec") or PersistentVolumeSpec()


def pv_status(pv: Mapping[str, Any]) -> PersistentVolumeStatus:
    """A PersistentVolume's ``status``, or ``{}`` when missing or null."""
    return pv.get("status") or PersistentVolumeStatus()


def pv_node_affinity(pv: Mapping[str, Any]) -> VolumeNodeAffinity:
    """A PersistentVolume's ``spec.nodeAffinity``, or ``{}`` when it or the spec is missing or null."""
    return (pv.get("spec") or {}).get("nodeAffinity") or VolumeNodeAffinity()


def pv_claim_ref(pv: Mapping[str, Any]) -> ObjectReference:
    """A PersistentVolume's ``spec.claimRef`` (the claim it is bound or pre-bound to), or ``{}`` when it
    or the spec is missing or null."""
    return (pv.get("spec") or {}).get("claimRef") or ObjectReference()


def pvc_spec(pvc: Mapping[str, Any]) -> PersistentVolumeClaimSpec:
    """A PersistentVolumeClaim's ``spec``, or ``{}`` when missing or null."""
    return pvc.get("spec") or PersistentVolumeClaimSpec()


def pvc_status(pvc: Mapping[str, Any]) -> PersistentVolumeClaimStatus:
    """A PersistentVolumeClaim's ``status``, or ``{}`` when missing or null."""
    return pvc.get("status") or PersistentVolumeClaimStatus()


def pvc_storage_requests(pvc: Mapping[str, Any]) -> Mapping[str, Any]:
    """A claim's ``spec.resources.requests``, or ``{}`` when any level is missing or null."""
    return ((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}


def csi_node_drivers(csi_node: Mapping[str, Any] | None) -> Sequence[CSINodeDriver]:
    """A CSINode's ``spec.drivers``, or ``()`` when the CSINode (None: not there), its spec or the list
    is missing or null."""
    if not csi_node:
        return ()
    return (csi_node.get("spec") or {}).get("drivers") or ()


def csi_node_driver_limit(driver: Mapping[str, Any]) -> int | None:
    """A CSINode driver's ``allocatable.count`` (how many volumes of it the node takes), or None when
    the driver publishes no limit."""
    count: int | None = (driver.get("allocatable") or {}).get("count")
    return count


def csi_driver_spec(driver: Mapping[str, Any]) -> CSIDriverSpec:
    """A CSIDriver's ``spec``, or ``{}`` when missing or null."""
    return driver.get("spec") or CSIDriverSpec()


def volume_attachment_spec(va: Mapping[str, Any]) -> VolumeAttachmentSpec:
    """A VolumeAttachment's ``spec``, or ``{}`` when missing or null."""
    return va.get("spec") or VolumeAttachmentSpec()


def volume_attachment_pv_name(va: Mapping[str, Any]) -> str | None:
    """A VolumeAttachment's ``spec.source.persistentVolumeName``, or None when it or any level above is
    missing or null (an inline volume's attachment)."""
    name: str | None = (volume_attachment_spec(va).get("source") or {}).get("persistentVolumeName")
    return name
