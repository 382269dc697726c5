"""NodeResourceTopologyMatch: NUMA-aware placement from the NodeResourceTopology objects a node agent
publishes (scheduler-plugins v0.34.7 ``pkg/noderesourcetopology/plugin.go``, ``filter.go``,
``score.go``, ``reserve.go``, ``postbind.go``, with the passthrough cache of ``cache/passthrough.go``).

* Filter (``filter.py``): under the single-numa-node policy the pod, or each of its containers, must
  fit in one NUMA node. A BestEffort pod that asks for no non-native resource passes; so does a node
  without a NodeResourceTopology (or with one that cannot be read), and a node whose policy is not
  single-numa-node.
* Score (``score.py``): the configured strategy over the NUMA nodes, for Guaranteed pods (100 for
  the others, 0 for a node without a NodeResourceTopology). No normalisation.
* Reserve, Unreserve, PostBind: tell the cache (``overreserve.py``, ``discard_reserved.py``); nothing
  to do with the passthrough cache (upstream's are no-ops too).
* Events: a pod deleted, a node added or its allocatable changed, a NodeResourceTopology added or
  updated wake the pods this plugin rejected (upstream registers them without hints).

The passthrough cache reads each node's last published object: a pod bound since the agent last
published is not seen until the agent publishes again. Upstream reads it with a GET per node and
cycle; py-scheduler reads its informer's copy, parsed once per object version. The overreserve cache
(``cacheResyncPeriodSeconds`` > 0) charges reserved pods to every NUMA zone until a resync, run on a
timer of the event loop, takes the agent's new object; ``discardReservedNodes`` distrusts a node while a
pod reserved there is not bound.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from informers.resource import NODE_RESOURCE_TOPOLOGIES, PODS
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
from scheduler.framework.objects import object_meta, pod_spec
from scheduler.framework.quantity import QuantityError
from scheduler.plugins.helper.qos import BEST_EFFORT, GUARANTEED
from scheduler.plugins.noderesourcetopology.args import DISCARD_RESERVED, NAME, OVERRESERVE, parse_args
from scheduler.plugins.noderesourcetopology.discard_reserved import DiscardReservedCache
from scheduler.plugins.noderesourcetopology.filter import Misfit, Placement, judge, node_resource_names
from scheduler.plugins.noderesourcetopology.foreign_pods import PROCESS_REGISTRY, ForeignPodsRegistry
from scheduler.plugins.noderesourcetopology.overreserve import CachedView, OverReserveCache
from scheduler.plugins.noderesourcetopology.requests import PodRequests, pod_requests
from scheduler.plugins.noderesourcetopology.score import score_node
from scheduler.plugins.noderesourcetopology.topology import (
    NUMANode,
    TopologyManagerConfig,
    parse_topology,
)
from scheduler.util.resource_names import is_scalar_resource_name

# CycleState keys: node name -> what explain says of this plugin's verdict there: the rejections, and
# where the pod (or each container) would go on the nodes it passed.
MISFITS_KEY = NAME + "/misfits"
PLACEMENTS_KEY = NAME + "/placements"
# Upstream's Filter message for a node its cache does not trust (foreign pods, discardReservedNodes).
INVALID_TOPOLOGY = "invalid node topology data"

log = logging.getLogger(__name__)

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
            cached = (version, parse_topology(nrt))
            self._parsed[node_name] = cached
        parsed = cached[1]
        if parsed is None:
            return None
        return parsed


class _NRTUpdates:
    """Tells the overreserve cache of modified objects (its resync scope All)."""

    def __init__(self, cache: OverReserveCache) -> None:
        self._cache = cache

    def on_add(self, obj: Mapping[str, Any]) -> None:
        return None

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self._cache.nrt_updated(new)

    def on_delete(self, obj: Mapping[str, Any]) -> None:
        return None


class _ForeignPodsWatcher:
    """Marks the node of a foreign pod (added, updated or deleted) for the overreserve cache."""

    def __init__(self, plugin: NodeResourceTopologyMatch, registry: ForeignPodsRegistry) -> None:
        self._plugin = plugin
        self._registry = registry

    def _seen(self, pod: Mapping[str, Any]) -> None:
        cache = self._plugin.overreserve
        if cache is not None and self._registry.is_foreign(pod):
            cache.node_has_foreign_pods(str(pod_spec(pod).get("nodeName", "")))
            self._plugin.arm_resync()

    def on_add(self, obj: Mapping[str, Any]) -> None:
        self._seen(obj)

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self._seen(new)

    def on_delete(self, obj: Mapping[str, Any]) -> None:
        self._seen(obj)


def _reserved_note(view: CachedView) -> str:
    if not view.reserved:
        return ""
    return (
        f" (NUMA view reserved-over: {', '.join(view.reserved)} charged to every NUMA zone since the "
        "agent last published)"
    )


def _node_resources(node: NodeInfo) -> list[str]:
    return node_resource_names(name for name in node.allocatable.scalar if is_scalar_resource_name(name))


class NodeResourceTopologyMatch:
    name = NAME

    def __init__(
        self,
        args: Mapping[str, Any] | None,
        handle: Handle,
        foreign_pods: ForeignPodsRegistry = PROCESS_REGISTRY,
    ) -> None:
        self.args = parse_args(args)
        self.reader = TopologyReader(handle)
        settings = self.args.cache
        self.discard = DiscardReservedCache() if settings.kind == DISCARD_RESERVED else None
        self.overreserve: OverReserveCache | None = None
        self._resync_armed = False
        # The loop Reserve ran on (discardReservedNodes): PostBind, in a binding thread, defers to it.
        self._loop: asyncio.AbstractEventLoop | None = None
        if settings.kind != OVERRESERVE:
            return
        nrts, pods = handle.lister(NODE_RESOURCE_TOPOLOGIES), handle.lister(PODS)
        self.overreserve = OverReserveCache(settings, nrts, pods, pod_requests)
        if isinstance(nrts, WatchedLister):
            nrts.add_event_handler(_NRTUpdates(self.overreserve))
        if settings.foreign_pods_detect != "None":
            foreign_pods.register(handle.profile_name, settings.foreign_pods_detect)
            if isinstance(pods, WatchedLister):
                pods.add_event_handler(_ForeignPodsWatcher(self, foreign_pods))

    # --- the overreserve cache's resync: a timer on the event loop ---------------------------------
    def arm_resync(self) -> None:
        """Starts the resync timer the first time the cache has something to resync (upstream runs it
        from start-up; it does nothing while no node is dirty). Outside a running loop (unit tests)
        the caller runs ``resync`` itself."""
        if self.overreserve is None or self._resync_armed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._resync_armed = True
        loop.call_later(self.args.cache.resync_period_seconds, self._resync_tick, loop)

    def _resync_tick(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.overreserve is None:
            return
        outcome = self.overreserve.resync()
        if outcome.flushed or outcome.kept:
            log.info(
                "NodeResourceTopology cache resync: generation %d, flushed %s, kept dirty %s",
                self.overreserve.generation,
                list(outcome.flushed),
                outcome.kept,
            )
        loop.call_later(self.args.cache.resync_period_seconds, self._resync_tick, loop)

    def view(self, node_name: str) -> CachedView:
        """The node's NUMA view through the configured cache."""
        if self.overreserve is not None:
            return self.overreserve.view(node_name)
        if self.discard is not None and self.discard.is_reserved(node_name):
            return CachedView(False, None)
        return CachedView(True, self.reader.topology(node_name))

    # --- Filter ---------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        try:
            requests = _pod_requests(pod)
        except QuantityError as err:
            return Status.as_error(str(err))
        if requests.qos == BEST_EFFORT and not requests.includes_non_native:
            return None
        view = self.view(node.name)
        if not view.fresh:
            _record(state, MISFITS_KEY, node.name, self._distrust_detail(node.name))
            return Status.unschedulable(INVALID_TOPOLOGY)
        verdict = self._judge(view, requests, node)
        if isinstance(verdict, Placement):
            _record(state, PLACEMENTS_KEY, node.name, f"{verdict}{_reserved_note(view)}")
            return None
        if verdict is None:
            return None
        if self.overreserve is not None:
            self.overreserve.node_maybe_over_reserved(node.name)
            self.arm_resync()
        _record(state, MISFITS_KEY, node.name, verdict.detail + _reserved_note(view))
        if verdict.error:
            return Status(Code.Error, [verdict.message, verdict.detail])
        return Status.unschedulable(verdict.message)

    def verdict(self, requests: PodRequests, node: NodeInfo) -> Misfit | Placement | None:
        """The Filter's judgement of a pod on ``node``: None when no NUMA rule applies there."""
        return self._judge(self.view(node.name), requests, node)

    @staticmethod
    def _judge(view: CachedView, requests: PodRequests, node: NodeInfo) -> Misfit | Placement | None:
        if view.topology is None:
            return None
        conf, numa = view.topology
        return judge(conf, numa, requests, _node_resources(node))

    def _distrust_detail(self, node_name: str) -> str:
        if self.discard is not None:
            pods = ", ".join(self.discard.reserved(node_name))
            return f"discardReservedNodes: pod {pods} reserved here and not yet bound"
        return (
            "pods of other schedulers were bound here since the agent last published (dirty until the "
            "cache resyncs)"
        )

    # --- Score ----------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        try:
            requests = _pod_requests(pod)
        except QuantityError as err:
            return 0, Status.as_error(str(err))
        if requests.qos != GUARANTEED:
            return MAX_NODE_SCORE, None
        view = self.view(node.name)
        if not view.fresh or view.topology is None:
            return MIN_NODE_SCORE, None
        conf, numa = view.topology
        return score_node(self.args, conf, numa, requests), None

    # --- Reserve, Unreserve, PostBind: the cache's bookkeeping (none for passthrough) -------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if self.overreserve is not None:
            try:
                self.overreserve.reserve(node_name, pod.pod)
            except QuantityError as err:
                return Status.as_error(str(err))
            self.arm_resync()
        elif self.discard is not None:
            self.discard.reserve(node_name, _uid(pod))
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        if self.overreserve is not None:
            self.overreserve.unreserve(node_name, pod.pod)
        elif self.discard is not None:
            self.discard.release(node_name, _uid(pod))

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Runs in a binding thread: the release is handed to the loop that owns the cache."""
        if self.discard is None:
            return
        if self._loop is None:
            self.discard.release(node_name, _uid(pod))
        else:
            self._loop.call_soon_threadsafe(self.discard.release, node_name, _uid(pod))

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


def _uid(pod: PodInfo) -> str:
    return str(object_meta(pod.pod).get("uid", ""))


def _record(state: CycleState, key: str, node_name: str, detail: str) -> None:
    details = state.get(key)
    if details is None:
        details = {}
        state.write(key, details)
    details[node_name] = detail


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
