"""The overreserve cache of NodeResourceTopologyMatch (scheduler-plugins v0.34.7
``pkg/noderesourcetopology/cache/overreserve.go``, ``store.go``, ``attr_watch.go``).

A node agent publishes what each NUMA zone has left some time after a pod lands. Until it does, this
cache charges every pod reserved on a node to *all* of the node's NUMA zones: the kubelet will pick one
zone, which one cannot be known here, and charging all of them can refuse a pod that would fit (the
node is then marked "maybe over-reserved") but never admits one that would not.

A node is *dirty* when a pod was refused there while this cache charged it, when pods of other
schedulers were seen on it (foreign pods: until resynced the node fits nothing, "invalid node topology
data"), or when its topology manager configuration changed (resync scope All). The resync, on a timer
of ``cacheResyncPeriodSeconds``, takes each dirty node's latest NodeResourceTopology and replaces the
cached one, dropping the charges, when the pod-set fingerprint the agent published with it is the one
of the pods this scheduler sees on the node: the agent's view then includes every pod charged.
A configuration change is taken without that check.

The cached objects are the ones present when the cache is first read (upstream lists them at
start-up); an object created later is not cached until the resync takes it for a dirty node, and
a node without one passes the filter, as upstream's.

Everything here runs on the scheduler's event loop: no locks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler.framework.listers import Lister
from scheduler.framework.objects import annotations_of, object_meta, pod_spec, pod_status
from scheduler.framework.quantity import QuantityError
from scheduler.plugins.noderesourcetopology import podfingerprint
from scheduler.plugins.noderesourcetopology.args import CacheSettings
from scheduler.plugins.noderesourcetopology.exclusive import has_exclusive_resources
from scheduler.plugins.noderesourcetopology.requests import PodRequests, Requests
from scheduler.plugins.noderesourcetopology.topology import (
    NUMANode,
    TopologyManagerConfig,
    parse_topology,
    topology_manager_config,
)

Topology = tuple[TopologyManagerConfig, list[NUMANode]]
RequestsOf = Callable[[Mapping[str, Any]], PodRequests]


@dataclass(frozen=True, slots=True)
class CachedView:
    """What the cache says of a node for one cycle. ``fresh`` False: foreign pods were seen there
    (upstream's ``CachedNRTInfo.Fresh``). ``topology`` None: no (readable) object cached. ``reserved``:
    the pods charged to every NUMA zone of it, ``namespace/name``."""

    fresh: bool
    topology: Topology | None
    reserved: tuple[str, ...] = ()
    generation: int = 0


def charge(numa: list[NUMANode], reserved: Iterable[Requests]) -> list[NUMANode]:
    """Copies of ``numa`` with each request taken from every zone that reports the resource; an
    amount that does not fit leaves 0 (upstream's ``resourceStore.UpdateNRT``)."""
    charged = [n.copy() for n in numa]
    for requests in reserved:
        for n in charged:
            for name, amount in requests.items():
                if name in n.resources:
                    n.resources[name] = max(n.resources[name] - amount, Fraction(0))
    return charged


def pod_relevant_shared(pod: Mapping[str, Any]) -> bool:
    """Informer mode Shared: the pods that are Running."""
    return bool(pod_status(pod).get("phase") == "Running")


def pod_relevant_dedicated(pod: Mapping[str, Any]) -> bool:
    """Informer mode Dedicated: every bound pod that is not Pending."""
    return bool(pod_spec(pod).get("nodeName")) and pod_status(pod).get("phase") != "Pending"


def expected_fingerprint(nrt: Mapping[str, Any], method: str) -> tuple[str, bool]:
    """The signature the agent published and whether it counts only pods with exclusive resources
    (upstream's ``podFingerprintForNodeTopology``): the attribute first (its method attribute read when
    ``resyncMethod`` is Autodetect), else the legacy annotation (all pods)."""
    attrs = {a.get("name"): a.get("value") for a in nrt.get("attributes") or () if isinstance(a, Mapping)}
    value = attrs.get(podfingerprint.ATTRIBUTE)
    if isinstance(value, str):
        if method == "OnlyExclusiveResources":
            return value, True
        if method == "Autodetect":
            return value, attrs.get(podfingerprint.ATTRIBUTE_METHOD) == (
                podfingerprint.METHOD_WITH_EXCLUSIVE_RESOURCES
            )
        return value, False
    annotations = annotations_of(nrt)
    legacy = annotations.get(podfingerprint.ANNOTATION, "")
    return (legacy if isinstance(legacy, str) else ""), False


@dataclass(frozen=True, slots=True)
class ResyncOutcome:
    """What one resync did: the nodes flushed, and why each dirty node that was not."""

    flushed: tuple[str, ...]
    kept: dict[str, str]


class OverReserveCache:
    def __init__(
        self,
        settings: CacheSettings,
        nrt_lister: Lister,
        pod_lister: Lister,
        requests_of: RequestsOf,
    ) -> None:
        self.settings = settings
        self._nrts = nrt_lister
        self._pods = pod_lister
        self._requests_of = requests_of
        self._relevant = pod_relevant_shared if settings.informer_mode == "Shared" else pod_relevant_dedicated
        self.generation = 0
        self._store: dict[str, Mapping[str, Any]] | None = None
        self._parsed: dict[str, Topology | None] = {}
        # node -> pod key -> its effective request, charged to every zone.
        self._assumed: dict[str, dict[str, Requests]] = {}
        # node -> how many times it was refused a pod while charged (upstream's discard counter).
        self.maybe_over_reserved: dict[str, int] = {}
        self.foreign: dict[str, int] = {}
        self.config_changed: dict[str, int] = {}
        # Foreign pods seen before the store is seeded: applied then (only nodes it holds count).
        self._foreign_early: list[str] = []

    # --- the cached objects -------------------------------------------------------------------
    def _seeded(self) -> dict[str, Mapping[str, Any]]:
        if self._store is None:
            self._store = {str(object_meta(o).get("name", "")): o for o in self._nrts.list()}
            early, self._foreign_early = self._foreign_early, []
            for node in early:
                self.node_has_foreign_pods(node)
        return self._store

    def seed(self) -> None:
        """Takes the objects the lister holds now as the cached ones (first read does it otherwise)."""
        self._seeded()

    def cached_object(self, node_name: str) -> Mapping[str, Any] | None:
        return self._seeded().get(node_name)

    def _topology(self, node_name: str) -> Topology | None:
        if node_name not in self._parsed:
            obj = self._seeded().get(node_name)
            self._parsed[node_name] = None if obj is None else parse_topology(obj)
        return self._parsed[node_name]

    def view(self, node_name: str) -> CachedView:
        """Upstream's ``GetCachedNRTCopy``: the cached object with the reserved pods charged."""
        store = self._seeded()
        if node_name in self.foreign:
            return CachedView(False, None, generation=self.generation)
        if node_name not in store:
            return CachedView(True, None, generation=self.generation)
        topology = self._topology(node_name)
        assumed = self._assumed.get(node_name)
        if topology is None or not assumed:
            return CachedView(True, topology, generation=self.generation)
        conf, numa = topology
        return CachedView(
            True, (conf, charge(numa, assumed.values())), tuple(sorted(assumed)), self.generation
        )

    # --- what the plugin tells it -------------------------------------------------------------
    def node_maybe_over_reserved(self, node_name: str) -> None:
        self.maybe_over_reserved[node_name] = self.maybe_over_reserved.get(node_name, 0) + 1

    def node_has_foreign_pods(self, node_name: str) -> None:
        if self._store is None:
            self._foreign_early.append(node_name)
            return
        if node_name not in self._store:
            return
        self.foreign[node_name] = self.foreign.get(node_name, 0) + 1

    def reserve(self, node_name: str, pod: Mapping[str, Any]) -> None:
        """Charges the pod to the node, and clears its discard count: a node that takes a pod still has
        room, so an earlier refusal was of a pod too large (upstream's ``ReserveNodeResources``)."""
        self._assumed.setdefault(node_name, {})[_pod_key(pod)] = dict(self._requests_of(pod).effective)
        self.maybe_over_reserved.pop(node_name, None)

    def unreserve(self, node_name: str, pod: Mapping[str, Any]) -> None:
        assumed = self._assumed.get(node_name)
        if assumed is not None:
            assumed.pop(_pod_key(pod), None)

    def nrt_updated(self, new: Mapping[str, Any]) -> None:
        """An object was modified: with resync scope All, a change of its topology manager
        configuration against the cached one marks the node for resync (upstream's ``Watcher``)."""
        if self.settings.resync_scope != "All" or self._store is None:
            return
        name = str(object_meta(new).get("name", ""))
        cached = self._store.get(name)
        if cached is None:
            return
        if topology_manager_config(cached) != topology_manager_config(new):
            self.config_changed[name] = self.config_changed.get(name, 0) + 1

    # --- resync -------------------------------------------------------------------------------
    def dirty_nodes(self) -> tuple[list[str], list[str]]:
        """(maybe over-reserved or with foreign pods, configuration changed), each sorted."""
        return sorted(set(self.foreign) | set(self.maybe_over_reserved)), sorted(self.config_changed)

    def resync(self) -> ResyncOutcome:
        """One step of upstream's resync loop (``OverReserve.Resync``)."""
        self._seeded()
        over, changed = self.dirty_nodes()
        kept: dict[str, str] = {}
        updates: dict[str, Mapping[str, Any]] = {}
        if not over and not changed:
            return ResyncOutcome((), kept)
        pods_by_node = self._pods_by_node() if over else {}
        for node in over:
            latest = self._nrts.get(node)
            if latest is None:
                kept[node] = "no NodeResourceTopology"
                continue
            pods = pods_by_node.get(node)
            if pods is None:
                kept[node] = "no pod on the node"
                continue
            expected, only_exclusive = expected_fingerprint(latest, self.settings.resync_method)
            if not expected:
                kept[node] = "no pod fingerprint published"
                continue
            computed = podfingerprint.sign(
                (ns, name) for ns, name, exclusive in pods if exclusive or not only_exclusive
            )
            verdict = podfingerprint.check(expected, computed)
            if verdict != podfingerprint.MATCH:
                kept[node] = verdict
                continue
            updates[node] = latest
        for node in changed:
            latest = self._nrts.get(node)
            if latest is None:
                kept[node] = "no NodeResourceTopology"
                continue
            updates[node] = latest
        self.flush(updates)
        return ResyncOutcome(tuple(sorted(updates)), kept)

    def flush(self, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Replaces the cached objects of these nodes, clean (upstream's ``FlushNodes``)."""
        if not updates:
            return
        store = self._seeded()
        for node, obj in updates.items():
            store[node] = obj
            self._parsed.pop(node, None)
            self._assumed.pop(node, None)
            self.maybe_over_reserved.pop(node, None)
            self.foreign.pop(node, None)
            self.config_changed.pop(node, None)
        self.generation += 1

    def _pods_by_node(self) -> dict[str, list[tuple[str, str, bool]]]:
        """node -> (namespace, name, has exclusive resources) of the relevant pods there."""
        out: dict[str, list[tuple[str, str, bool]]] = {}
        for pod in self._pods.list():
            if not self._relevant(pod):
                continue
            meta = object_meta(pod)
            node = str(pod_spec(pod).get("nodeName") or "")
            try:
                exclusive = has_exclusive_resources(self._requests_of(pod))
            except QuantityError:
                exclusive = False
            out.setdefault(node, []).append(
                (str(meta.get("namespace", "")), str(meta.get("name", "")), exclusive)
            )
        return out


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = object_meta(pod)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"
