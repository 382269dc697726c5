"""NodePorts (``pkg/scheduler/framework/plugins/nodeports/node_ports.go``)."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import Any

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    HostPort,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
)
from scheduler.framework.types import DEFAULT_BIND_ALL_HOST_IP
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import is_assigned_or_nominated, pod_info, safe_hint

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PRE_FILTER_STATE_KEY = "PreFilter" + names.NODE_PORTS


def port_conflicts(wanted: HostPort, in_use: Collection[HostPort]) -> bool:
    """``HostPortInfo.CheckConflict``: 0.0.0.0 clashes with the same protocol/port on any IP."""
    if wanted.ip == DEFAULT_BIND_ALL_HOST_IP:
        return any(used.port == wanted.port and used.protocol == wanted.protocol for used in in_use)
    return wanted in in_use or HostPort(DEFAULT_BIND_ALL_HOST_IP, wanted.protocol, wanted.port) in in_use


def fits_ports(wanted: Sequence[HostPort], in_use: Collection[HostPort]) -> bool:
    if not in_use:
        return True
    return not any(port_conflicts(port, in_use) for port in wanted)


class NodePorts:
    """Filter: the pod's host ports (containers and sidecars) must be free on the node.

    Upstream: ``pkg/scheduler/framework/plugins/nodeports/node_ports.go`` (v1.37.2).
    """

    name = names.NODE_PORTS

    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        return pod.host_ports

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, pod.host_ports)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.used_ports:
            return None
        wanted = state.get(PRE_FILTER_STATE_KEY)
        if wanted is None:
            wanted = pod.host_ports
        if fits_ports(wanted, node.used_ports):
            return None
        return Status.unschedulable(ERR_REASON)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.AssignedPod, ActionType.Delete),
                self.is_schedulable_after_assigned_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Add)),
        ]

    @safe_hint
    def is_schedulable_after_assigned_pod_deleted(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if old_obj is None or not is_assigned_or_nominated(old_obj):
            return QueueingHint.Skip
        deleted_ports = frozenset(pod_info(old_obj).host_ports)
        if not deleted_ports:
            return QueueingHint.Skip
        # Only a deleted pod holding a port this pod wants can make room for it.
        if fits_ports(pod_info(pod).host_ports, deleted_ports):
            return QueueingHint.Skip
        return QueueingHint.Queue
