"""Typed views of the raw API objects the scheduler reads (pods, nodes and their parts).

API objects stay the orjson-decoded JSON dicts from the watch (docs/architecture.md): these are
``TypedDict`` shapes over them, the way kopf types its bodies, plus a few accessors that encode the
"missing or null means empty" rule once. ``pod_spec(pod)`` is ``pod.get("spec") or {}`` typed as a
``PodSpec``; nothing is copied or validated, so a view is exactly as cheap as the lookup it replaces.

The shapes list the fields the scheduler reads, all optional (``total=False``); nested structures the
scheduler only passes on to a parser (affinity, volumes, resources...) stay ``Any``. Treat the views
as read-only: the cache and the informers share the same dicts.
"""

from collections.abc import Mapping
from typing import Any, TypedDict, cast

__all__ = [
    "Container",
    "Node",
    "NodeSpec",
    "NodeStatus",
    "ObjectMeta",
    "OwnerReference",
    "Pod",
    "PodCondition",
    "PodSpec",
    "PodStatus",
    "annotations_of",
    "labels_of",
    "namespaced_name",
    "node_spec",
    "node_status",
    "object_meta",
    "pod_spec",
    "pod_status",
]


class OwnerReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    finalizers: list[str]
    deletionTimestamp: str
    creationTimestamp: str


class Container(TypedDict, total=False):
    name: str
    image: str
    ports: list[dict[str, Any]]
    resources: dict[str, Any]
    resizePolicy: list[dict[str, Any]]
    restartPolicy: str


class PodSpec(TypedDict, total=False):
    nodeName: str
    schedulerName: str
    priority: int
    priorityClassName: str
    preemptionPolicy: str
    containers: list[Container]
    initContainers: list[Container]
    volumes: list[dict[str, Any]]
    affinity: dict[str, Any]
    tolerations: list[dict[str, Any]]
    nodeSelector: dict[str, str]
    topologySpreadConstraints: list[dict[str, Any]]
    resourceClaims: list[dict[str, Any]]
    schedulingGates: list[dict[str, Any]]
    overhead: dict[str, Any]
    resources: dict[str, Any]
    hostNetwork: bool
    runtimeClassName: str


class PodCondition(TypedDict, total=False):
    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str
    lastProbeTime: str


class PodStatus(TypedDict, total=False):
    phase: str
    conditions: list[PodCondition]
    nominatedNodeName: str
    resourceClaimStatuses: list[dict[str, Any]]
    containerStatuses: list[dict[str, Any]]
    initContainerStatuses: list[dict[str, Any]]
    resize: str
    startTime: str


class Pod(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: PodSpec
    status: PodStatus


class NodeSpec(TypedDict, total=False):
    unschedulable: bool
    taints: list[dict[str, Any]]
    podCIDR: str
    providerID: str


class NodeStatus(TypedDict, total=False):
    allocatable: dict[str, Any]
    capacity: dict[str, Any]
    conditions: list[dict[str, Any]]
    images: list[dict[str, Any]]
    addresses: list[dict[str, Any]]
    declaredFeatures: list[str]


class Node(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: NodeSpec
    status: NodeStatus


# The accessors take any object mapping (pods, nodes, claims... arrive as Mapping[str, Any]) and
# return ``obj.get(field) or {}``: a missing field and an explicit JSON null both read as empty.


def object_meta(obj: Mapping[str, Any]) -> ObjectMeta:
    """``metadata``, or ``{}`` when missing or null."""
    return cast(ObjectMeta, obj.get("metadata") or {})


def pod_spec(pod: Mapping[str, Any]) -> PodSpec:
    """A pod's ``spec``, or ``{}`` when missing or null."""
    return cast(PodSpec, pod.get("spec") or {})


def pod_status(pod: Mapping[str, Any]) -> PodStatus:
    """A pod's ``status``, or ``{}`` when missing or null."""
    return cast(PodStatus, pod.get("status") or {})


def node_spec(node: Mapping[str, Any]) -> NodeSpec:
    """A node's ``spec``, or ``{}`` when missing or null."""
    return cast(NodeSpec, node.get("spec") or {})


def node_status(node: Mapping[str, Any]) -> NodeStatus:
    """A node's ``status``, or ``{}`` when missing or null."""
    return cast(NodeStatus, node.get("status") or {})


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.labels``, or ``{}`` when metadata or labels are missing or null."""
    return object_meta(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.annotations``, or ``{}`` when metadata or annotations are missing or null."""
    return object_meta(obj).get("annotations") or {}


def namespaced_name(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` (upstream's klog.KObj), with ``""`` for a missing part: ``/name`` for a
    cluster-scoped object."""
    m = object_meta(obj)
    return f"{m.get('namespace', '')}/{m.get('name', '')}"
