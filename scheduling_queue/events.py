"""Cluster events the queue itself emits, their metric labels, and pod-update classification.

Mirrors ``pkg/scheduler/framework/events.go`` and ``types.go`` (``ClusterEvent.Label``,
``MatchClusterEvents``, ``PodSchedulingPropertiesChange``) and ``isPodUpdated`` from
``pkg/scheduler/backend/queue/scheduling_queue.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduling_queue.types import ActionType, ClusterEvent, Pod, PodRequestsFn, Resource, SameRequestInputsFn

# Labels of the special, non-resource events (upstream's framework constants, same strings).
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"

EVENT_ASSIGNED_POD_ADD = ClusterEvent(Resource.AssignedPod, ActionType.Add)
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(Resource.AssignedPod, ActionType.Update)
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(Resource.AssignedPod, ActionType.Delete)
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UnscheduledPod, ActionType.Add)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(Resource.UnscheduledPod, ActionType.Update)
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(Resource.UnscheduledPod, ActionType.Delete)
EVENT_NODE_ADD = ClusterEvent(Resource.Node, ActionType.Add)
EVENT_NODE_DELETE = ClusterEvent(Resource.Node, ActionType.Delete)
# Wildcard events move every unschedulable pod regardless of hints.
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WildCard, ActionType.All, UNSCHEDULABLE_TIMEOUT)
EVENT_FORCE_ACTIVATE = ClusterEvent(Resource.WildCard, ActionType.All, FORCE_ACTIVATE)

# Upstream spells some resources differently from our enum values; metric labels must match upstream.
_RESOURCE_LABELS: dict[Resource, str] = {
    Resource.Pod: "Pod",
    Resource.AssignedPod: "AssignedPod",
    Resource.UnscheduledPod: "UnscheduledPod",  # v1.37 (v1.36: "UnschedulablePod")
    Resource.TargetPod: "TargetPod",  # v1.37
    Resource.Node: "Node",
    Resource.PersistentVolume: "PersistentVolume",
    Resource.PersistentVolumeClaim: "PersistentVolumeClaim",
    Resource.StorageClass: "storage.k8s.io/StorageClass",
    Resource.CSINode: "storage.k8s.io/CSINode",
    Resource.CSIDriver: "storage.k8s.io/CSIDriver",
    Resource.CSIStorageCapacity: "storage.k8s.io/CSIStorageCapacity",
    Resource.ResourceClaim: "resource.k8s.io/ResourceClaim",
    Resource.ResourceSlice: "resource.k8s.io/ResourceSlice",
    Resource.DeviceClass: "resource.k8s.io/DeviceClass",
    Resource.WildCard: "*",
}

_label_cache: dict[ClusterEvent, str] = {}


def _action_label(action: ActionType) -> str:
    if action == ActionType.All:
        return "All"
    if action in (ActionType.Update, ActionType.UpdateOther):
        # UpdateOther is our name for upstream's generic Update on an unclassified change.
        return "Update"
    return action.name or str(int(action))


def event_label(event: ClusterEvent) -> str:
    """The label upstream's ``ClusterEvent.Label()`` gives, e.g. ``NodeAdd``, ``UnscheduledPodAdd``."""
    label = _label_cache.get(event)
    if label is None:
        label = event.label or _RESOURCE_LABELS.get(event.resource, str(event.resource)) + _action_label(
            event.action
        )
        if len(_label_cache) < 4096:
            _label_cache[event] = label
    return label


def is_wildcard(event: ClusterEvent) -> bool:
    """Upstream's ``ClusterEventIsWildCard``: resource ``*`` with every action."""
    return event.resource is Resource.WildCard and event.action == ActionType.All


# What a ``Pod`` registration hears (upstream's matchEventResources).
_POD_RESOURCES = (Resource.AssignedPod, Resource.UnscheduledPod, Resource.TargetPod)


def event_matches(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """Upstream's ``MatchClusterEvents(registered, incoming)``.

    Unlike :meth:`ClusterEvent.matches` this also requires ``incoming.action <= registered.action``:
    a plugin registered for ``Node/UpdateNodeLabel`` does not hear a generic ``Node/Update``, because
    the scheduler always reports the most specific update it can.
    """
    if is_wildcard(registered):
        return True
    r = registered.resource
    same_resource = (
        r is Resource.WildCard
        or r == incoming.resource
        or (r is Resource.Pod and incoming.resource in _POD_RESOURCES)
    )
    return (
        same_resource and bool(registered.action & incoming.action) and incoming.action <= registered.action
    )


# --- pod update classification -------------------------------------------------------------------


def _milli(amount: Any) -> int:
    # Upstream compares MilliValue(): thousandths, rounded up.
    return -((-amount * 1000) // 1)  # type: ignore[no-any-return]


def _exceeds(larger: Mapping[str, Any], smaller: Mapping[str, Any]) -> bool:
    """Some resource of ``larger`` is absent from ``smaller`` or more than there (in MilliValue)."""
    for name, quantity in larger.items():
        other = smaller.get(name)
        if other is None or _milli(quantity) > _milli(other):
            return True
    return False


def _scale_actions(
    new: Pod, old: Pod, requests: PodRequestsFn | None, same_inputs: SameRequestInputsFn | None = None
) -> list[ActionType]:
    """Upstream ``extractPodScaleDown`` (some resource of the old requests shrank or went away) and,
    v1.37, ``extractPodScaleUp`` (some resource of the new requests grew or appeared), over one reading
    of each pod's requests: every bound pod's echo comes through here, so ``same_inputs`` (when given)
    first tells the updates that cannot change requests, which are neither.

    Without a ``requests`` function (a queue built without one) neither is reported. Requests nobody
    can read count as a scale-down (it may have shrunk: better than stranding a pod), not a scale-up.
    """
    if requests is None or (same_inputs is not None and same_inputs(new, old)):
        return []
    try:
        new_req = requests(new)
        old_req = requests(old)
    except ValueError:
        return [ActionType.UpdatePodScaleDown]
    actions: list[ActionType] = []
    if _exceeds(old_req, new_req):
        actions.append(ActionType.UpdatePodScaleDown)
    if _exceeds(new_req, old_req):
        actions.append(ActionType.UpdatePodScaleUp)
    return actions


def _meta(pod: Pod) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def _spec(pod: Pod) -> Mapping[str, Any]:
    return pod.get("spec") or {}


def _status(pod: Pod) -> Mapping[str, Any]:
    return pod.get("status") or {}


def pod_scheduling_properties_change(
    new: Pod,
    old: Pod,
    requests: PodRequestsFn | None = None,
    *,
    target: bool = False,
    same_request_inputs: SameRequestInputsFn | None = None,
) -> list[ClusterEvent]:
    """The ``UpdatePodXYZ`` events one pod update stands for (upstream's ``PodSchedulingPropertiesChange``).

    The resource is ``AssignedPod`` when the new pod has a node, else ``TargetPod`` when ``target`` (the
    queue reporting a pending pod's own update, as v1.37's ``Update`` does), else ``UnscheduledPod``.
    When nothing more specific changed the result is one ``UpdateOther`` event, which only plugins
    registered for the general ``Update`` hear. ``requests`` computes a pod's requests (the scheduler's
    PodRequests); without it no ``UpdatePodScaleDown`` or ``UpdatePodScaleUp`` is reported.
    ``same_request_inputs`` (optional) answers, without computing them, that two pods' requests are equal.
    """
    if _spec(new).get("nodeName"):
        resource = Resource.AssignedPod
    else:
        resource = Resource.TargetPod if target else Resource.UnscheduledPod
    actions: list[ActionType] = []
    if (_meta(new).get("labels") or {}) != (_meta(old).get("labels") or {}):
        actions.append(ActionType.UpdatePodLabel)
    actions += _scale_actions(new, old, requests, same_request_inputs)
    if not _spec(new).get("schedulingGates") and _spec(old).get("schedulingGates"):
        actions.append(ActionType.UpdatePodSchedulingGatesEliminated)
    if len(_spec(new).get("tolerations") or ()) != len(_spec(old).get("tolerations") or ()):
        # API validation only lets tolerations be added, so a length change is every change.
        actions.append(ActionType.UpdatePodToleration)
    new_status, old_status = _status(new), _status(old)
    if new_status.get("resourceClaimStatuses") != old_status.get("resourceClaimStatuses") or new_status.get(
        "extendedResourceClaimStatus"
    ) != old_status.get("extendedResourceClaimStatus"):
        actions.append(ActionType.UpdatePodGeneratedResourceClaim)
    if not actions:
        actions.append(ActionType.UpdateOther)
    return [ClusterEvent(resource, a) for a in actions]


_IGNORED_META = frozenset({"resourceVersion", "generation", "managedFields", "finalizers"})
_KEPT_STATUS = ("resourceClaimStatuses", "extendedResourceClaimStatus")


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """True when ``new`` differs from ``old`` in a way that may change its scheduling (``isPodUpdated``).

    Ignores status (except the generated resource-claim fields), resourceVersion, generation,
    managedFields and finalizers: the scheduler's own PodScheduled condition patch must not requeue a pod.
    """
    for k in old.keys() | new.keys():
        if k == "status":
            o, n = _status(old), _status(new)
            if any(o.get(f) != n.get(f) for f in _KEPT_STATUS):
                return True
        elif k == "metadata":
            o, n = _meta(old), _meta(new)
            for mk in o.keys() | n.keys():
                if mk not in _IGNORED_META and o.get(mk) != n.get(mk):
                    return True
        elif old.get(k) != new.get(k):
            return True
    return False
