"""Typed views of the raw API objects the scheduler reads (pods, nodes and their parts).

API objects stay the orjson-decoded JSON dicts from the watch (docs/architecture.md): these are
``TypedDict`` shapes over them, the way kopf types its bodies, plus a few accessors that encode the
"missing or null means empty" rule once. ``pod_spec(pod)`` is ``pod.get("spec") or {}`` typed as a
``PodSpec``; nothing is copied or validated, so a view is exactly as cheap as the lookup it replaces.

The shapes list the fields the scheduler reads, all optional (``total=False``); nested structures the
scheduler only passes on to a parser (affinity, volumes, resources...) stay ``Any``. Treat the views
as read-only: the cache and the informers share the same dicts.

The other kinds plugins read have their views beside this module: ``objects_resource`` (ResourceClaim,
ResourceSlice, DeviceClass), ``objects_storage`` (PersistentVolume, PersistentVolumeClaim,
StorageClass, CSINode, CSIDriver) and ``objects_scheduling`` (both PodGroups, Workload,
PodDisruptionBudget).
"""

from collections.abc import Mapping
from typing import Any, TypedDict

__all__ = [
    "DEFAULT_POD_SCHEDULER_NAME",
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
    "ResourceRequirements",
    "annotations_of",
    "labels_of",
    "meta_namespace_key",
    "name_of",
    "namespace_of",
    "namespaced_name",
    "node_spec",
    "node_status",
    "nominated_node_name",
    "object_meta",
    "pod_spec",
    "pod_status",
    "resources_of",
    "scheduler_name_of",
    "uid_of",
]

# The profile a pod with no (or an empty) ``spec.schedulerName`` belongs to: the API server defaults
# the field to it, and objects built without the defaulting (tests, manifests) read the same. Not the
# name of py-scheduler's own profile (``config.types.DEFAULT_SCHEDULER_NAME``, "py-scheduler").
DEFAULT_POD_SCHEDULER_NAME = "default-scheduler"


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


class ResourceRequirements(TypedDict, total=False):
    requests: dict[str, Any]
    limits: dict[str, Any]
    claims: list[dict[str, Any]]


class Container(TypedDict, total=False):
    name: str
    image: str
    ports: list[dict[str, Any]]
    resources: ResourceRequirements
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
    schedulingGroup: dict[str, Any]
    overhead: dict[str, Any]
    resources: ResourceRequirements
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
# return ``obj.get(field) or {}``: a missing field and an explicit JSON null both read as empty. They
# run per pod and per node, so each is one call: no ``typing.cast`` (a second call), the empty value
# built only when the field is absent (``PodSpec()`` is a plain ``{}``), nested reads inlined rather
# than made through another accessor.


def object_meta(obj: Mapping[str, Any]) -> ObjectMeta:
    """``metadata``, or ``{}`` when missing or null."""
    return obj.get("metadata") or ObjectMeta()


def pod_spec(pod: Mapping[str, Any]) -> PodSpec:
    """A pod's ``spec``, or ``{}`` when missing or null."""
    return pod.get("spec") or PodSpec()


def pod_status(pod: Mapping[str, Any]) -> PodStatus:
    """A pod's ``status``, or ``{}`` when missing or null."""
    return pod.get("status") or PodStatus()


def nominated_node_name(pod: Mapping[str, Any]) -> str:
    """A pod's ``status.nominatedNodeName``, or ``""`` when it has none."""
    return str(pod_status(pod).get("nominatedNodeName") or "")


def node_spec(node: Mapping[str, Any]) -> NodeSpec:
    """A node's ``spec``, or ``{}`` when missing or null."""
    return node.get("spec") or NodeSpec()


def node_status(node: Mapping[str, Any]) -> NodeStatus:
    """A node's ``status``, or ``{}`` when missing or null."""
    return node.get("status") or NodeStatus()


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """Any object's ``spec`` (kinds without a view of their own), or ``{}`` when missing or null."""
    return obj.get("spec") or {}


def pod_template_of(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod template of a Deployment, ReplicaSet, StatefulSet or Job (``spec.template``), or ``{}``."""
    spec = workload.get("spec") or {}
    return spec.get("template") or {}


def list_continue(page: Mapping[str, Any]) -> str:
    """The ``metadata.continue`` token of a LIST page ("" on the last page)."""
    meta = page.get("metadata") or {}
    return str(meta.get("continue") or "")


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.labels``, or ``{}`` when metadata or labels are missing or null."""
    return (obj.get("metadata") or {}).get("labels") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.annotations``, or ``{}`` when metadata or annotations are missing or null."""
    return (obj.get("metadata") or {}).get("annotations") or {}


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name``, or ``""`` when it or the metadata is missing or null."""
    return (obj.get("metadata") or {}).get("name") or ""


def namespace_of(obj: Mapping[str, Any]) -> str:
    """``metadata.namespace``, or ``""`` when it or the metadata is missing or null (cluster-scoped)."""
    return (obj.get("metadata") or {}).get("namespace") or ""


def uid_of(obj: Mapping[str, Any]) -> str:
    """``metadata.uid``, or ``""`` when it or the metadata is missing or null."""
    return (obj.get("metadata") or {}).get("uid") or ""


def namespaced_name(obj: Mapping[str, Any]) -> str:
    """The scheduler's object key: ``namespace/name``, with ``""`` for a missing part, so ``/name``
    for an object without a namespace.

    Pods, claims and groups (all namespaced) are keyed by it in the cache, the queue, the plugins and
    the explain tool. Stores of any kind key by ``meta_namespace_key`` (bare ``name`` when there is no
    namespace; ``listers.object_key`` builds it from parts): the two agree on every namespaced object,
    and each keeps the format its users already compare against. ``scheduling_queue`` and
    ``informers`` keep their own copies (``pod_key``, ``meta_namespace_key``): they must not import
    ``scheduler``.
    """
    m = obj.get("metadata") or {}
    return f"{m.get('namespace', '')}/{m.get('name', '')}"


def meta_namespace_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for an object without a namespace: the informer stores' key
    (client-go's MetaNamespaceKeyFunc, as ``informers.objects.meta_namespace_key``) and what klog.KObj
    prints. It differs from ``namespaced_name`` only for cluster-scoped objects."""
    m = obj.get("metadata") or {}
    namespace = m.get("namespace")
    return f"{namespace}/{m.get('name', '')}" if namespace else str(m.get("name", ""))


def scheduler_name_of(pod: Mapping[str, Any]) -> str:
    """The profile a pod asks for: ``spec.schedulerName``, ``default-scheduler`` when missing, null or
    empty (the API server's default)."""
    return (pod.get("spec") or {}).get("schedulerName") or DEFAULT_POD_SCHEDULER_NAME


def resources_of(obj: Mapping[str, Any]) -> ResourceRequirements:
    """``resources`` of a container, a container status or a pod spec (pod-level resources), or ``{}``
    when missing or null."""
    return obj.get("resources") or ResourceRequirements()
