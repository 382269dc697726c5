"""NodeDeclaredFeatures (``pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures.go``,
v1.37.2, with the feature registry of ``k8s.io/component-helpers/nodedeclaredfeatures`` v0.37.2).

GA and locked on since v1.37 (feature gate ``NodeDeclaredFeatures``): a node lists the features its
kubelet supports in ``status.declaredFeatures``; a pod that needs one of them fits only nodes that
declare it. What a pod needs is inferred from its spec by the registry's features:

* ``RestartAllContainersOnContainerExits``: a container or init container has a ``restartPolicyRules``
  entry with action ``RestartAllContainers``;
* ``UserNamespacesHostNetworkSupport``: ``hostNetwork: true`` with ``hostUsers: false``;
* ``VolumeBindMountOptions`` (v0.37): a container, init container or ephemeral container has a
  ``volumeMounts`` entry with ``bindMountOptions`` (a field the API server keeps only with its alpha
  gate on).

The registry's other features (``ExtendWebSocketsToKubelet``, ``InPlacePodLevelResourcesVerticalScaling``,
``InPlacePodVerticalScalingInitContainers``, and v0.37's ``InPlacePodVerticalScalingMemoryBackedVolumes``,
``DRANodeAllocatableResources``, ``DRAOptionalNodeOperations``) are never required for scheduling, but a
node's declaration of them is read like any other. Names a node declares that the registry does not
know are ignored, as upstream's ``TryMap`` does.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from scheduler.framework import (
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
from scheduler.framework.objects import node_status, pod_spec
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import safe_hint

ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"
# The registry's features (features.AllFeatures, v0.37.2), all without a MaxVersion.
KNOWN_FEATURES = frozenset(
    {
        "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        "InPlacePodVerticalScalingMemoryBackedVolumes",
        "DRANodeAllocatableResources",
        "DRAOptionalNodeOperations",
        RESTART_ALL_CONTAINERS,
        USER_NAMESPACES_HOST_NETWORK,
        VOLUME_BIND_MOUNT_OPTIONS,
    }
)

_STATE_KEY = "PreFilter" + names.NODE_DECLARED_FEATURES


def _restarts_all_containers(spec: Mapping[str, Any]) -> bool:
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            if not isinstance(container, Mapping):
                continue
            for rule in container.get("restartPolicyRules") or ():
                if isinstance(rule, Mapping) and rule.get("action") == "RestartAllContainers":
                    return True
    return False


def required_features(spec: Mapping[str, Any]) -> frozenset[str]:
    """The features a pod with this spec needs from its node (upstream's InferForPodScheduling)."""
    needed: set[str] = set()
    if _restarts_all_containers(spec):
        needed.add(RESTART_ALL_CONTAINERS)
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        needed.add(USER_NAMESPACES_HOST_NETWORK)
    if _uses_bind_mount_options(spec):
        needed.add(VOLUME_BIND_MOUNT_OPTIONS)
    return frozenset(needed)


def _uses_bind_mount_options(spec: Mapping[str, Any]) -> bool:
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(key) or ():
            if not isinstance(container, Mapping):
                continue
            for mount in container.get("volumeMounts") or ():
                if isinstance(mount, Mapping) and mount.get("bindMountOptions"):
                    return True
    return False


def declared_features(node: Mapping[str, Any] | None) -> frozenset[str]:
    """The registry's features a node declares (unknown names dropped, as TryMap)."""
    if not node:
        return frozenset()
    declared = node_status(node).get("declaredFeatures") or ()
    return frozenset(name for name in declared if name in KNOWN_FEATURES)


def _pod_requirements(pod: PodInfo) -> frozenset[str]:
    return pod.derived("nodedeclaredfeatures/required", lambda p: required_features(p.spec))


class NodeDeclaredFeatures:
    """PreFilter + Filter: the pod's inferred feature requirements must be a subset of the node's
    ``status.declaredFeatures``; otherwise UnschedulableAndUnresolvable "node(s) didn't match Pod's
    required features". PreFilter skips pods that need nothing (the common case), so the Filter runs
    only for the rare pod that does.

    Upstream: ``pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures.go`` (v1.37.2).
    """

    name = names.NODE_DECLARED_FEATURES
    # Filter reads the node's declared features and what the pod needs, never the pods on the node (preemption
    # dry runs ask once per node).
    filter_ignores_pods_on_node = True

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())

    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        return tuple(sorted(_pod_requirements(pod)))

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        needed = _pod_requirements(pod)
        if not needed:
            return None, Status.skip()
        state.write(_STATE_KEY, needed)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        needed: frozenset[str] | None = state.get(_STATE_KEY)
        if needed is None:
            return Status.as_error(f'error reading "{_STATE_KEY}" from cycle-state: not found')
        if needed <= declared_features(node.node):
            return None
        return Status.unschedulable(ERR_REASON_UNSATISFIED_REQUIREMENTS, resolvable=False)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeDeclaredFeature),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.TargetPod, ActionType.Update),
                self.is_schedulable_after_target_pod_update,
            ),
        ]

    @safe_hint
    def is_schedulable_after_node_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if old_obj is not None and _declared_list(old_obj) == _declared_list(new_obj):
            return QueueingHint.Skip
        return QueueingHint.Queue

    @safe_hint
    def is_schedulable_after_target_pod_update(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # v1.37.2 compares the updated pod's requirements without comparing its uid with the rejected
        # pod's (a TargetPod event is a pending pod's own update; replayed in-flight events included).
        if required_features(pod_spec(old_obj)) == required_features(pod_spec(new_obj)):
            return QueueingHint.Skip
        return QueueingHint.Queue


def _declared_list(node: Mapping[str, Any]) -> list[Any]:
    # Upstream compares the lists (the API server keeps them sorted).
    return list(node_status(node).get("declaredFeatures") or ())
