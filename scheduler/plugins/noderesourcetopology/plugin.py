"""NodeResourceTopologyMatch: NUMA-aware placement from the NodeResourceTopology objects a node agent
publishes (scheduler-plugins v0.34.7 ``pkg/noderesourcetopology/plugin.go``, ``filter.go``,
``score.go``, ``reserve.go``, ``postbind.go``, with the passthrough cache of ``cache/passthrough.go``).

* Filter (``filter.py``): under the single-numa-node policy the pod, or each of its containers, must
  fit in one NUMA node. A BestEffort pod that asks for no non-native resource passes; so does a node
  without a NodeResourceTopology (or with one that cannot be read), and a node whose policy is not
  single-numa-node.
* Score (``score.py``): the configured strategy over the NUMA nodes, for Guaranteed pods (100 for
  the others, 0 for a node without a NodeResourceTopology). No normalisation.
* Reserve, Unreserve, PostBind: nothing to do with the passthrough cache (upstream's are no-ops too).
* Events: a pod deleted, a node added or its allocatable changed, a NodeResourceTopology added or
  updated wake the pods this plugin rejected (upstream registers them without hints).

The passthrough cache reads each node's last published object: a pod bound since the agent last
published is not seen until the agent publishes again. Upstream reads it with a GET per node and
cycle; py-scheduler reads its informer's copy, parsed once per object version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from informers.resource import NODE_RESOURCE_TOPOLOGIES
from scheduler.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    Resource,
    Status,
)
from scheduler.framework.listers import WatchedLister
from scheduler.framework.objects import object_meta
from scheduler.framework.quantity import QuantityError
from scheduler.plugins.helper.qos import BEST_EFFORT, GUARANTEED
from scheduler.plugins.noderesourcetopology.args import NAME, parse_args
from scheduler.plugins.noderesourcetopology.filter import Misfit, Placement, judge, node_resource_names
from scheduler.plugins.noderesourcetopology.requests import PodRequests, pod_requests
from scheduler.plugins.noderesourcetopology.score import score_node
from scheduler.plugins.noderesourcetopology.topology import (
    NUMANode,
    TopologyManagerConfig,
    UnreadableTopology,
    numa_nodes,
    topology_manager_config,
)
from scheduler.util.resource_names import is_scalar_resource_name

# CycleState keys: node name -> what explain says of this plugin's verdict there: the rejections, and
# where the pod (or each container) would go on the nodes it passed.
MISFITS_KEY = NAME + "/misfits"
PLACEMENTS_KEY = NAME + "/placements"

Topology = tuple[TopologyManagerConfig, list[NUMANode]]


def _pod_requests(pod: PodInfo) -> PodRequests:
    return pod.derived(NAME + ".requests", lambda p: pod_requests(p.pod))


class TopologyReader:
    """The node's NodeResourceTopology, read as upstream reads it, parsed once per object version."""

    def __init__(self, handle: Handle) -> None:
        self._lister = handle.lister(NODE_RESOURCE_TOPOLOGIES)
        self._parsed: dict[str, tuple[object, Topology | None]] = {}
        if isinstance(self._lister, WatchedLister):
            # A deleted object's parse is dropped at once (a node that goes with it is never asked again).
            self._lister.add_event_handler(self)

    def on_add(self, obj: Mapping[str, Any]) -> None:
        return None

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        return None

    def on_delete(self, obj: Mapping[str, Any]) -> None:
        self._parsed.pop(str(object_meta(obj).get("name", "")), None)

    def topology(self, node_name: str) -> Topology | None:
        """(configuration, NUMA nodes), or None when the node has no readable object. The NUMA nodes
        are shared by every cycle: whoever charges them works on a copy (``filter.judge``,
        ``score.least_numa_container_scope``)."""
        nrt = self._lister.get(node_name)
        if nrt is None:
            self._parsed.pop(node_name, None)
            return None
        version = object_meta(nrt).get("resourceVersion") or id(nrt)
        cached = self._parsed.get(node_name)
        if cached is None or cached[0] != version:
            cached = (version, _parse(nrt))
            self._parsed[node_name] = cached
        parsed = cached[1]
        if parsed is None:
            return None
        return parsed


def _parse(nrt: Mapping[str, Any]) -> Topology | None:
    try:
        return topology_manager_config(nrt), numa_nodes(nrt)
    except UnreadableTopology:
        return None


def _node_resources(node: NodeInfo) -> list[str]:
    return node_resource_names(name for name in node.allocatable.scalar if is_scalar_resource_name(name))


class NodeResourceTopologyMatch:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.args = parse_args(args)
        self.reader = TopologyReader(handle)

    # --- Filter ---------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        try:
            requests = _pod_requests(pod)
        except QuantityError as err:
            return Status.as_error(str(err))
        if requests.qos == BEST_EFFORT and not requests.includes_non_native:
            return None
        verdict = self.verdict(requests, node)
        if isinstance(verdict, Placement):
            placements = state.get(PLACEMENTS_KEY)
            if placements is None:
                placements = {}
                state.write(PLACEMENTS_KEY, placements)
            placements[node.name] = verdict
            return None
        if verdict is None:
            return None
        misfits = state.get(MISFITS_KEY)
        if misfits is None:
            misfits = {}
            state.write(MISFITS_KEY, misfits)
        misfits[node.name] = verdict.detail
        if verdict.error:
            return Status(Code.Error, [verdict.message, verdict.detail])
        return Status.unschedulable(verdict.message)

    def verdict(self, requests: PodRequests, node: NodeInfo) -> Misfit | Placement | None:
        """The Filter's judgement of a pod on ``node``: None when no NUMA rule applies there."""
        topology = self.reader.topology(node.name)
        if topology is None:
            return None
        conf, numa = topology
        return judge(conf, numa, requests, _node_resources(node))

    # --- Score ----------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        try:
            requests = _pod_requests(pod)
        except QuantityError as err:
            return 0, Status.as_error(str(err))
        if requests.qos != GUARANTEED:
            return MAX_NODE_SCORE, None
        topology = self.reader.topology(node.name)
        if topology is None:
            return MIN_NODE_SCORE, None
        conf, numa = topology
        return score_node(self.args, conf, numa, requests), None

    # --- Reserve, PostBind: the passthrough cache keeps nothing -----------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.Delete)),
            ClusterEventWithHint(
                ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeAllocatable)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NodeResourceTopology, ActionType.Add | ActionType.Update)
            ),
        ]


def placement_detail(state: CycleState, node_name: str) -> str:
    """Where the pod's containers (or the pod) fit on ``node_name`` in the cycle of ``state``: ''
    when this plugin placed nothing there (no NodeResourceTopology, or a policy other than
    single-numa-node)."""
    placements = state.get(PLACEMENTS_KEY)
    if not isinstance(placements, dict) or node_name not in placements:
        return ""
    return str(placements[node_name])


def misfit_detail(state: CycleState, node_name: str) -> str:
    """What explain says of a node this plugin rejected in the cycle of ``state`` ('' if none)."""
    misfits = state.get(MISFITS_KEY)
    return str(misfits.get(node_name, "")) if isinstance(misfits, dict) else ""
