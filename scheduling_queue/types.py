"""Types the SchedulingQueue shares with the scheduler, kept free of scheduler and informer imports.

Pods travel as raw JSON dicts (``Mapping[str, Any]``). Cluster events, queueing hints and the record of
a queued pod mirror kube-scheduler's ``pkg/scheduler/framework/types.go`` and
``pkg/scheduler/backend/queue/scheduling_queue.go``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

Pod = Mapping[str, Any]


class ActionType(enum.IntFlag):
    """What happened to an object; upstream's framework.ActionType bits, same names."""

    Add = 1 << 0
    Delete = 1 << 1
    UpdateNodeAllocatable = 1 << 2
    UpdateNodeLabel = 1 << 3
    UpdateNodeTaint = 1 << 4
    UpdateNodeCondition = 1 << 5
    UpdateNodeAnnotation = 1 << 6
    UpdatePodLabel = 1 << 7
    UpdatePodScaleDown = 1 << 8
    UpdatePodToleration = 1 << 9
    UpdatePodSchedulingGatesEliminated = 1 << 10
    UpdatePodGeneratedResourceClaim = 1 << 11
    # Any update we cannot classify more precisely; hint functions see it as "something changed".
    UpdateOther = 1 << 12
    # A change of the node's status.declaredFeatures (upstream's bit sits after UpdateNodeAnnotation;
    # only the names matter outside this process).
    UpdateNodeDeclaredFeature = 1 << 13
    # Some resource request of the pod grew or appeared (v1.37; upstream's bit sits after
    # UpdatePodScaleDown).
    UpdatePodScaleUp = 1 << 14

    Update = (
        UpdateNodeAllocatable
        | UpdateNodeLabel
        | UpdateNodeTaint
        | UpdateNodeCondition
        | UpdateNodeAnnotation
        | UpdateNodeDeclaredFeature
        | UpdatePodLabel
        | UpdatePodScaleDown
        | UpdatePodScaleUp
        | UpdatePodToleration
        | UpdatePodSchedulingGatesEliminated
        | UpdatePodGeneratedResourceClaim
        | UpdateOther
    )
    All = Add | Delete | Update


class Resource(enum.StrEnum):
    """The kind of object an event is about (upstream's framework.EventResource)."""

    Pod = "Pod"
    # A pod that is already bound to a node (upstream: assignedPod / framework.Pod with nodeName).
    AssignedPod = "AssignedPod"
    # A pod that is not yet bound (another pending pod).
    UnscheduledPod = "UnscheduledPod"
    # The pending pod an update is about, as that pod's own event (v1.37: a pod's own update is a
    # TargetPod event; ``Pod`` registrations hear it, ``UnscheduledPod`` ones do not).
    TargetPod = "TargetPod"
    Node = "Node"
    PersistentVolume = "PersistentVolume"
    PersistentVolumeClaim = "PersistentVolumeClaim"
    StorageClass = "StorageClass"
    CSINode = "CSINode"
    CSIDriver = "CSIDriver"
    CSIStorageCapacity = "CSIStorageCapacity"
    VolumeAttachment = "storage.k8s.io/VolumeAttachment"
    # DynamicResources' kinds, spelled as upstream's framework.EventResource values.
    ResourceClaim = "resource.k8s.io/ResourceClaim"
    ResourceSlice = "resource.k8s.io/ResourceSlice"
    DeviceClass = "resource.k8s.io/DeviceClass"
    # scheduler-plugins' PodGroup, named as upstream names custom resources (resource.version.group).
    PodGroup = "podgroups.v1alpha1.scheduling.x-k8s.io"
    # scheduler-plugins' ElasticQuota (CapacityScheduling registers for it under this name).
    ElasticQuota = "elasticquotas.v1alpha1.scheduling.x-k8s.io"
    # The NodeResourceTopology CRD (NodeResourceTopologyMatch registers for it under this name).
    NodeResourceTopology = "noderesourcetopologies.v1alpha2.topology.node.k8s.io"
    # Upstream's own PodGroup (scheduling.k8s.io/v1beta1), as upstream's framework.PodGroup.
    WorkloadPodGroup = "scheduling.k8s.io/PodGroup"
    WildCard = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A change in the cluster that may make pending pods schedulable.

    Which registrations hear an event is decided by ``scheduling_queue.events.event_matches``.
    """

    resource: Resource
    action: ActionType
    label: str = ""

    def __str__(self) -> str:
        return self.label or f"{self.resource}{self.action.name or int(self.action)}"


class QueueingHint(enum.Enum):
    """A plugin's answer to "could this event make the pod I rejected schedulable?"."""

    Skip = 0
    Queue = 1


# hint(pod, old_obj, new_obj) -> QueueingHint. old_obj is None for Add, new_obj is None for Delete.
QueueingHintFn = Callable[[Pod, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A plugin's registration: this event may help; ask ``hint`` (None means always Queue)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


def pod_key(pod: Pod) -> str:
    """``namespace/name``, the key the queue and the informer stores share.

    The same key as ``scheduler.framework.objects.namespaced_name``, kept here because
    ``scheduling_queue`` must not import ``scheduler``."""
    meta = pod.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """One pending pod as the queue tracks it (upstream's framework.QueuedPodInfo).

    ``info`` is an opaque slot for the scheduler's parsed view of the pod; the queue never reads it.
    """

    pod: Pod
    key: str
    # Wall-clock (injected clock) time the pod was first added; used for the SLI metric.
    initial_attempt_timestamp: float
    # Time it last entered activeQ/backoffQ/unschedulable; PrioritySort breaks ties on it.
    timestamp: float
    attempts: int = 0
    # Plugins that rejected the pod in its last attempt (Unschedulable / UnschedulableAndUnresolvable).
    unschedulable_plugins: set[str] = field(default_factory=set)
    # Plugins that returned Pending (e.g. waiting for an external component); events for them requeue.
    pending_plugins: set[str] = field(default_factory=set)
    # The plugin whose PreEnqueue held the pod back (scheduling gates), or "" when not gated.
    gating_plugin: str = ""
    info: Any = None

    @property
    def priority(self) -> int:
        value = self.pod.get("spec", {}).get("priority")
        return value if isinstance(value, int) else 0


class QueueSortLess(Protocol):
    def __call__(self, a: QueuedPodInfo, b: QueuedPodInfo, /) -> bool: ...


# pre_enqueue(pod, gating_plugin) -> "" when the pod may enter activeQ, else the name of the plugin that
# gates it. ``gating_plugin`` is the plugin that gated the pod last time ("" if none): upstream runs it
# first, and alone while it still gates.
PreEnqueueCheck = Callable[[Pod, str], str]
# A pod's requests by resource name, as exact numbers (the scheduler's PodRequests). The queue
# cannot read quantities itself: it must not import the scheduler, which owns that one implementation.
PodRequestsFn = Callable[[Pod], Mapping[str, Any]]
# True when two versions of a pod have equal requests without computing them (the scheduler's
# same_request_inputs): most updates change nothing requests read, and each update is classified.
SameRequestInputsFn = Callable[[Pod, Pod], bool]


class Clock(Protocol):
    def now(self) -> float: ...


def priority_sort_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort: higher ``spec.priority`` first, then earlier timestamp.

    Mirrors ``pkg/scheduler/framework/plugins/queuesort/priority_sort.go``.
    """
    pa, pb = a.priority, b.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)
