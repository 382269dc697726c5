"""NodeUnschedulable (``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go``)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    ColumnSpec,
    CycleState,
    Handle,
    MaskedStatuses,
    NodeColumn,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Resource,
    Status,
    all_pass,
    as_subset,
    per_node_statuses,
)
from scheduler.framework.objects import node_spec, pod_spec
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import safe_hint
from scheduler.plugins.helper.signature import spec_part
from scheduler.plugins.helper.taints import (
    NO_SCHEDULE,
    TAINT_NODE_UNSCHEDULABLE,
    Toleration,
    parse_tolerations,
    pod_tolerations,
    tolerates_taint,
)

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

# spec.unschedulable per node, with a count so the plugin does nothing while no node is cordoned.
CORDONED = NodeColumn(
    names.NODE_UNSCHEDULABLE + "/cordoned",
    np.bool_,
    lambda info: bool(info.unschedulable),
    count_nonzero=True,
    reads_pods=False,
)


def _tolerates_unschedulable(tolerations: Sequence[Toleration]) -> bool:
    return tolerates_taint(tolerations, TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)


def _is_unschedulable(node: Mapping[str, Any] | None) -> bool:
    return bool(node and node_spec(node).get("unschedulable"))


class NodeUnschedulable:
    """Filter: a cordoned node (``spec.unschedulable``) admits only pods tolerating
    ``node.kubernetes.io/unschedulable:NoSchedule``.

    Upstream: ``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go`` (v1.37.2).
    """

    name = names.NODE_UNSCHEDULABLE
    # Filter reads the node's spec.unschedulable and the pod's tolerations, never the pods on the node
    # (preemption dry runs ask once per node).
    filter_ignores_pods_on_node = True

    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        return spec_part(pod, "tolerations")

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())

    def node_columns(self) -> Sequence[ColumnSpec]:
        return (CORDONED,)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.unschedulable:
            return None
        if _tolerates_unschedulable(pod_tolerations(pod)):
            return None
        return Status.unschedulable(ERR_REASON_UNSCHEDULABLE, resolvable=False)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        subset = as_subset(nodes)
        if subset is None:
            candidates = [i for i, node in enumerate(nodes) if node.unschedulable]
            return per_node_statuses(nodes, lambda node: self.filter(state, pod, node), candidates)
        if not subset.nonzero_rows(CORDONED):
            return all_pass(len(subset))
        cordoned = subset.gather(CORDONED)
        if not cordoned.any() or _tolerates_unschedulable(pod_tolerations(pod)):
            return all_pass(len(subset))
        status = Status.unschedulable(ERR_REASON_UNSCHEDULABLE, resolvable=False)
        return MaskedStatuses(~cordoned, lambda index: status)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # With queueing hints, upstream classifies a spec.unschedulable change as UpdateNodeTaint.
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeTaint),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.TargetPod, ActionType.UpdatePodToleration),
                self.is_schedulable_after_target_pod_toleration_change,
            ),
        ]

    @safe_hint
    def is_schedulable_after_node_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if _is_unschedulable(new_obj):
            return QueueingHint.Skip
        if old_obj is None or _is_unschedulable(old_obj):
            return QueueingHint.Queue
        return QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_target_pod_toleration_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # v1.37.2 reads the updated pod's tolerations without comparing its uid with the rejected pod's
        # (a TargetPod event is a pending pod's own update; replayed in-flight events included).
        tolerations = parse_tolerations(pod_spec(new_obj).get("tolerations"))
        return QueueingHint.Queue if _tolerates_unschedulable(tolerations) else QueueingHint.Skip
