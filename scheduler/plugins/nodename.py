"""NodeName (``pkg/scheduler/framework/plugins/nodename/node_name.go``)."""

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
    Resource,
    Status,
)
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    """Filter: a pod that names its node (``spec.nodeName``) fits only that node.

    Since v1.37 upstream has a PreFilter too, narrowing the candidates to that one node; the one here
    also skips the Filter for the usual pod that names no node (upstream's returns no result and runs
    the Filter, which passes every node: the same outcome).

    Upstream: ``pkg/scheduler/framework/plugins/nodename/node_name.go`` (v1.37.2).
    """

    name = names.NODE_NAME
    # Filter reads the pod's spec.nodeName against the node's name, never the pods on the node (preemption dry
    # runs ask once per node).
    filter_ignores_pods_on_node = True

    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        return pod.node_name

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.node_name:
            return None, Status.skip()
        return PreFilterResult({pod.node_name}), None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if pod.node_name and pod.node_name != node.name:
            return Status.unschedulable(ERR_REASON, resolvable=False)
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Add))]
