"""The scheduler cache: what every node holds, assumed pods included (upstream's ``cache.go``).

Concurrency: the cache belongs to the scheduler's asyncio event loop. Informer handlers, the scheduling
cycle and the binding results (marshalled back with ``call_soon_threadsafe``) all run on that loop, so
no method takes a lock and no method may be called from another thread.

Pods are keyed by ``namespace/name`` (``PodInfo.key``), the key NodeInfo uses. Pod states follow
upstream::

    assume_pod -> assumed (counted on its node at once)
        finish_binding  -> binding finished; with a TTL it may now expire (cleanup_assumed)
        forget_pod      -> gone (binding failed)
        add_pod         -> added (the informer saw the binding: assumed pod confirmed)
    add_pod -> added -> update_pod ... -> remove_pod

The cache counts every assigned pod, whichever scheduler bound it; otherwise py-scheduler would
overcommit nodes that kube-scheduler also fills. Terminal pods (Succeeded/Failed) free their node's
resources, as upstream's pod informer drops them with a field selector.

A node deleted while its pods are still cached stays as a ghost NodeInfo (node=None) until the pods'
deletions arrive, because pod and node events come from different watches. Ghosts never reach a
snapshot.

Every change takes a new value of one global generation counter and stores it on the NodeInfo it
touched; ``_nodes`` keeps NodeInfos ordered by last change, so ``update_snapshot`` walks back only over
the nodes changed since the snapshot's generation. The one exception is a new version no snapshot reader
can tell from the cached one (the bind's echo, ``_swap_in_place``): it replaces the PodInfo in place and
snapshots keep the previous one.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.cache.echo import same_but_unread
from scheduler.cache.node_tree import NodeTree, node_zone_key
from scheduler.cache.pod_infos import PodInfoCache
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.objects import namespaced_name, object_meta, pod_spec, pod_status
from scheduler.framework.resources import Resource
from scheduler.framework.types import NodeInfo, PodInfo, PodSpecError

log = logging.getLogger(__name__)

PodLike = Mapping[str, Any] | PodInfo

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class CacheError(Exception):
    """A call the cache's state does not allow (assuming a pod that is already cached)."""


@dataclass(slots=True)
class _PodState:
    info: PodInfo
    assumed: bool = False
    binding_finished: bool = False
    # Monotonic time after which an assumed pod whose binding finished is dropped; None: never.
    deadline: float | None = None


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return pod_status(pod).get("phase") in TERMINAL_PHASES


def _identity(pod: PodLike) -> tuple[str, str]:
    """(key, uid) without parsing the pod."""
    if isinstance(pod, PodInfo):
        return pod.key, pod.uid
    return namespaced_name(pod), object_meta(pod).get("uid", "")


def with_node_name(info: PodInfo, node_name: str) -> PodInfo:
    """A copy of ``info`` whose pod has ``spec.nodeName`` set, reusing the parsed requests and ports."""
    spec = dict(info.spec)
    spec["nodeName"] = node_name
    pod = dict(info.pod)
    pod["spec"] = spec
    copy = info._copy_for(pod, spec, info.resource_version)
    copy.node_name = node_name
    return copy


class SchedulerCache:
    """NodeInfo per node name, fed by the node and assigned-pod informers and by assume/forget.

    ``ttl`` > 0 lets assumed pods whose binding finished expire ``ttl`` seconds later, in
    ``cleanup_assumed``; 0 (upstream's default since the binding result is always reported) never
    expires them. ``clock`` returns monotonic seconds.
    """

    def __init__(
        self,
        *,
        ttl: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        pod_infos: PodInfoCache | None = None,
    ) -> None:
        self._ttl = ttl
        self._clock = clock
        self.pod_infos = pod_infos if pod_infos is not None else PodInfoCache()
        # Ordered by last change, most recent last.
        self._nodes: OrderedDict[str, NodeInfo] = OrderedDict()
        self._pods: dict[str, _PodState] = {}
        self._assumed: set[str] = set()
        self._tree = NodeTree()
        # Bumped whenever the tree's membership or zones change: snapshots then rebuild their list.
        self._tree_version = 0
        self._generation = 0
        # Per node, the generation of the last change of its Node object (added, updated, deleted);
        # a node changed since a snapshot's generation only by pods has an older one, and the snapshot
        # then recomputes only the columns that read pods (``Snapshot.put(pods_only=True)``).
        self._node_changed: dict[str, int] = {}
        self._image_counts: dict[str, int] = {}
        # Per image, the size reported by the node that brought it into the cache, kept while any node
        # holds it: upstream's cache.imageStates, whose Size every holder's score uses.
        self._image_sizes: dict[str, int] = {}
        # True once the current dict was handed to a snapshot; the next change copies it first.
        self._images_shared = False

    # -- nodes ---------------------------------------------------------------------------------------

    def add_node(self, node: Mapping[str, Any]) -> None:
        name = object_meta(node).get("name", "")
        info = self._nodes.get(name)
        if info is None:
            info = NodeInfo(name=name)
            self._nodes[name] = info
        self._set_node(info, node)
        if self._tree.update(name, node_zone_key(node)):
            self._tree_version += 1
        self._touch(info)
        self._node_changed[name] = self._generation

    def update_node(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        """As upstream, an update for an unknown node adds it; the zone is read from the cached tree."""
        del old
        self.add_node(new)

    def remove_node(self, node: Mapping[str, Any]) -> None:
        name = object_meta(node).get("name", "")
        info = self._nodes.get(name)
        if info is None:
            log.debug("remove_node: node %s is not in the cache", name)
            return
        if info.node is not None:
            self._release_images(info.image_sizes)
        info.node = None
        if self._tree.remove(name):
            self._tree_version += 1
        if info.pods:
            self._touch(info)
            self._node_changed[name] = self._generation
        else:
            del self._nodes[name]
            self._node_changed.pop(name, None)

    # -- assigned pods (informer events) -------------------------------------------------------------

    def add_pod(self, pod: PodLike) -> None:
        """An assigned pod seen by the informer; it confirms the pod if it was assumed."""
        self._upsert(pod, None)

    def update_pod(self, old: PodLike | None, new: PodLike) -> None:
        """A new version of a cached pod. Also accepts the first assigned version (acts as add)."""
        self._upsert(new, old)

    def remove_pod(self, pod: PodLike) -> None:
        key, uid = _identity(pod)
        state = self._pods.get(key)
        if state is None:
            return
        if uid and state.info.uid and uid != state.info.uid:
            # The delete of an older incarnation of a pod recreated under the same name.
            log.debug("remove_pod: %s uid %s is not the cached uid %s; ignored", key, uid, state.info.uid)
            return
        self._remove_state(key, state)

    def _upsert(self, pod: PodLike, old: PodLike | None) -> None:
        key, _ = _identity(pod)
        if old is not None:
            old_key, _ = _identity(old)
            if old_key != key and old_key in self._pods:
                self._remove_state(old_key, self._pods[old_key])
        state = self._pods.get(key)
        raw = pod.pod if isinstance(pod, PodInfo) else pod
        if is_terminal(raw):
            if state is not None:
                self._remove_state(key, state)
            return
        # Decided before parsing: the comparison it makes is the one the parse of an unread change
        # (the bind's echo) would make again to reuse the cached version's facts.
        unread = state is not None and self._unread_change(key, state.info, raw)
        info = self._parse(pod, state.info if state is not None else None, compared=unread)
        if info is None:
            # Keep counting the previous version: overcounting a node beats overcommitting it.
            return
        if not info.node_name:
            # An unbound version says nothing about an assumption: the bind may still be in flight.
            if state is not None and not state.assumed:
                self._remove_state(key, state)
            return
        if state is not None:
            if unread and self._swap_in_place(key, state, info):
                return
            if state.assumed:
                if state.info.node_name != info.node_name:
                    log.info(
                        "pod %s was assumed on %s but bound to %s", key, state.info.node_name, info.node_name
                    )
            elif state.info.node_name != info.node_name and state.info.uid == info.uid:
                # nodeName is immutable once set; upstream exits here. Following the API is safer.
                log.error(
                    "pod %s moved from node %s to %s; cache was inconsistent",
                    key,
                    state.info.node_name,
                    info.node_name,
                )
            self._remove_state(key, state)
        self._add_state(info, assumed=False)

    def _unread_change(self, key: str, cached: PodInfo, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod``, a new version of the cached pod, may replace it in place
        (``_swap_in_place``): no reader of a snapshot can tell them apart (``same_but_unread``: the
        bind's echo) and the ordinary remove-then-add would leave every map of the node in the same
        order: the pod is the node's last (upstream's removal moves the last pod into the removed
        one's place, and the add appends) and has no host ports (a port freed and taken again moves to
        the end of ``used_ports``). The cheap checks come first: most updates fail one of them."""
        node = self._nodes.get(cached.node_name)
        if node is None or cached.host_ports or next(reversed(node.pods)) != key:
            return False
        # With equal specs (compared below) the same (anti-)affinity lists hold the pod, and it must
        # be their last too.
        if (cached.has_pod_affinity and next(reversed(node.pods_with_affinity)) != key) or (
            cached.has_required_anti_affinity and next(reversed(node.pods_with_required_anti_affinity)) != key
        ):
            return False
        return same_but_unread(cached.pod, pod)

    def _swap_in_place(self, key: str, state: _PodState, info: PodInfo) -> bool:
        """Holds ``info`` instead of the cached version without changing the node's generation (only
        for a version ``_unread_change`` allowed). The next snapshot update then clones nothing and no
        node column is recomputed; snapshots keep the previous version until the node changes for
        another reason. False: not done (a reference cache in tests takes the ordinary path)."""
        node = self._nodes[state.info.node_name]
        node.pods[key] = info
        if info.has_pod_affinity:
            node.pods_with_affinity[key] = info
        if info.has_required_anti_affinity:
            node.pods_with_required_anti_affinity[key] = info
        # The state confirmed, as a new _PodState(info) would be, without allocating one per echo.
        state.info = info
        state.assumed = False
        state.binding_finished = False
        state.deadline = None
        self._assumed.discard(key)
        return True

    def _parse(
        self, pod: PodLike, cached: PodInfo | None = None, *, compared: bool = False
    ) -> PodInfo | None:
        """``cached``: the version the cache holds (often the assumed copy of this very pod);
        ``compared``: ``pod`` was found equal to it but for what no reader reads (``_unread_change``)."""
        if isinstance(pod, PodInfo):
            return pod
        try:
            return self.pod_infos.get(pod, cached, compared=compared)
        except PodSpecError as err:
            log.warning("assigned pod not counted: %s", err)
            return None

    # -- assumed pods (scheduling cycle and binding results) -----------------------------------------

    def assume_pod(self, pod_info: PodInfo, node_name: str) -> PodInfo:
        """Counts the pod on ``node_name`` before it is bound; returns the copy with nodeName set."""
        if pod_info.key in self._pods:
            raise CacheError(f"pod {pod_info.key} is in the cache, so it can't be assumed")
        assumed = with_node_name(pod_info, node_name)
        self._add_state(assumed, assumed=True)
        return assumed

    def finish_binding(self, key: str, uid: str = "") -> None:
        """The bind call returned; with a TTL, the assumed pod may expire from now on. ``uid``: only
        if the assumed pod is that one (not a namesake assumed after it was removed)."""
        state = self._pods.get(key)
        if state is None or not state.assumed or (uid and state.info.uid != uid):
            return
        state.binding_finished = True
        state.deadline = self._clock() + self._ttl if self._ttl > 0 else None

    def forget_pod(self, key: str, uid: str = "") -> bool:
        """Undoes ``assume_pod`` (binding failed, or the pod's deletion started while it was assumed).
        False if the pod is not assumed (anymore). ``uid``: only if the assumed pod is that one: once
        a deleting pod was removed, a namesake may be assumed before the old binding cycle ends."""
        state = self._pods.get(key)
        if state is None or not state.assumed or (uid and state.info.uid != uid):
            return False
        self._remove_state(key, state)
        return True

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed

    def assumed_count(self) -> int:
        return len(self._assumed)

    def cleanup_assumed(self) -> list[str]:
        """Drops assumed pods whose binding finished more than ``ttl`` ago; returns their keys."""
        if self._ttl <= 0 or not self._assumed:
            return []
        now = self._clock()
        expired: list[str] = []
        for key in list(self._assumed):
            state = self._pods[key]
            if state.binding_finished and state.deadline is not None and now > state.deadline:
                log.warning("assumed pod %s on %s expired", key, state.info.node_name)
                self._remove_state(key, state)
                expired.append(key)
        return expired

    # -- snapshot ------------------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Brings ``snapshot`` up to date, cloning only the nodes changed since its generation.

        The node list is rebuilt only when nodes were added, removed or changed zone. A snapshot is
        meant to follow one cache; a new ``Snapshot()`` gets a full build.
        """
        since = snapshot.generation
        node_changed = self._node_changed
        for info in reversed(self._nodes.values()):
            if info.generation <= since:
                break
            if info.node is not None:
                # Only pods changed since the snapshot's copy when the Node object did not.
                pods_only = node_changed.get(info.name, since + 1) <= since
                snapshot.put(self._snapshot_copy(info), pods_only=pods_only)
        if snapshot.tree_version != self._tree_version:
            names = self._tree.list()
            missing = snapshot.relist(names, self._tree_version)
            if missing:
                # Unreachable if generations are right; recover rather than drop nodes.
                log.error("snapshot lacked nodes %s; re-cloning them", missing)
                for name in missing:
                    snapshot.put(self._snapshot_copy(self._nodes[name]))
                snapshot.relist(names, self._tree_version)
        snapshot.generation = self._generation
        snapshot.share_image_counts(self._image_counts, self._image_sizes)
        self._images_shared = True

    def _snapshot_copy(self, info: NodeInfo) -> NodeInfo:
        """``info`` for a snapshot, with the image maps of now (marked shared below, so frozen)."""
        clone = info.clone()
        clone.image_states = (self._image_counts, self._image_sizes)
        return clone

    def snapshot(self) -> Snapshot:
        """A new, fully built Snapshot."""
        snapshot = Snapshot()
        self.update_snapshot(snapshot)
        return snapshot

    # -- introspection -------------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        return self._generation

    def get_pod(self, key: str) -> PodInfo | None:
        state = self._pods.get(key)
        return None if state is None else state.info

    def node_info(self, name: str) -> NodeInfo | None:
        """A clone of the node's NodeInfo (ghosts included), for debugging and tests."""
        info = self._nodes.get(name)
        return None if info is None else info.clone()

    def has_node(self, name: str) -> bool:
        """Whether node ``name`` exists as the watch shows it (a ghost, deleted, does not)."""
        info = self._nodes.get(name)
        return info is not None and info.node is not None

    def node_names(self) -> list[str]:
        """Live nodes in snapshot order (zones interleaved)."""
        return self._tree.list()

    def image_num_nodes(self, image: str) -> int:
        return self._image_counts.get(image, 0)

    def image_size(self, image: str) -> int:
        return self._image_sizes.get(image, 0)

    def sizes(self) -> dict[str, int]:
        """Upstream's ``scheduler_cache_size`` gauge values."""
        return {"assumed_pods": len(self._assumed), "pods": len(self._pods), "nodes": len(self._nodes)}

    def dump(self) -> dict[str, Any]:
        """A plain-dict view of the whole cache, for a debug endpoint or a log line. O(cluster)."""
        nodes: dict[str, Any] = {}
        for name, info in sorted(self._nodes.items()):
            nodes[name] = {
                "ghost": info.node is None,
                "generation": info.generation,
                "zone": self._tree.zone_of(name),
                "allocatable": _resource_dict(info.allocatable),
                "requested": _resource_dict(info.requested),
                "non_zero_requested": _resource_dict(info.non_zero_requested),
                "pods": sorted(info.pods),
                "used_ports": sorted(f"{port.ip}/{port.protocol}/{port.port}" for port in info.used_ports),
            }
        return {
            "generation": self._generation,
            "nodes": nodes,
            "assumed_pods": sorted(self._assumed),
            "images": dict(sorted(self._image_counts.items())),
        }

    def compare(self, nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> list[str]:
        """Differences between the cache and the informer stores' contents (upstream's CacheComparer).

        ``nodes`` and ``pods`` are everything the stores hold; unassigned and terminal pods are skipped.
        Assumed pods are drift only if the store lost the pod or bound it to another node. Returns one
        message per difference; empty means consistent.
        """
        problems: list[str] = []
        store_nodes = {object_meta(node).get("name", "") for node in nodes}
        live_nodes = {name for name, info in self._nodes.items() if info.node is not None}
        problems += [f"node {name} is missing from the cache" for name in sorted(store_nodes - live_nodes)]
        problems += [
            f"node {name} is in the cache but not in the store" for name in sorted(live_nodes - store_nodes)
        ]

        store_pods: dict[str, Mapping[str, Any]] = {}
        for pod in pods:
            key, _ = _identity(pod)
            store_pods[key] = pod
        for key, pod in sorted(store_pods.items()):
            node_name = pod_spec(pod).get("nodeName") or ""
            if not node_name or is_terminal(pod):
                continue
            state = self._pods.get(key)
            if state is None:
                problems.append(f"pod {key} on node {node_name} is missing from the cache")
                continue
            if state.info.node_name != node_name:
                problems.append(
                    f"pod {key}: the cache has node {state.info.node_name}, the store {node_name}"
                )
            uid = object_meta(pod).get("uid", "")
            if uid and state.info.uid and uid != state.info.uid:
                problems.append(f"pod {key}: the cache has uid {state.info.uid}, the store {uid}")
        for key, state in sorted(self._pods.items()):
            stored = store_pods.get(key)
            if stored is None:
                kind = "assumed pod" if state.assumed else "pod"
                problems.append(
                    f"{kind} {key} on node {state.info.node_name} is in the cache but not in the store"
                )
            elif not state.assumed and (not pod_spec(stored).get("nodeName") or is_terminal(stored)):
                problems.append(f"pod {key} is in the cache but is not assigned and running in the store")
        return problems

    # -- internals -----------------------------------------------------------------------------------

    def _touch(self, info: NodeInfo) -> None:
        self._generation += 1
        info.generation = self._generation
        self._nodes.move_to_end(info.name)

    def _add_state(self, info: PodInfo, *, assumed: bool) -> None:
        node_name = info.node_name
        node = self._nodes.get(node_name)
        if node is None:
            # The pod's node has not been seen yet (or is gone): count the pod on a node-less NodeInfo.
            node = NodeInfo(name=node_name)
            self._nodes[node_name] = node
        node.add_pod(info)
        self._touch(node)
        self._pods[info.key] = _PodState(info, assumed=assumed)
        if assumed:
            self._assumed.add(info.key)

    def _remove_state(self, key: str, state: _PodState) -> None:
        del self._pods[key]
        self._assumed.discard(key)
        node_name = state.info.node_name
        node = self._nodes.get(node_name)
        if node is None:
            log.error("pod %s: node %s not found in the cache", key, node_name)
            return
        node.remove_pod(key)
        if node.node is None and not node.pods:
            del self._nodes[node_name]
            self._node_changed.pop(node_name, None)
        else:
            self._touch(node)

    def _set_node(self, info: NodeInfo, node: Mapping[str, Any]) -> None:
        old_images = info.image_sizes if info.node is not None else {}
        info.set_node(node)
        new_images = info.image_sizes
        if old_images.keys() != new_images.keys():
            self._release_images(old_images.keys() - new_images.keys())
            self._hold_images(new_images, new_images.keys() - old_images.keys())
        # Upstream removes an updated node's images and adds them again: an image no other node holds
        # takes this node's current size (one another node also holds keeps the size it has).
        counts, sizes = self._image_counts, self._image_sizes
        for image in old_images.keys() & new_images.keys():
            size = new_images[image]
            if counts.get(image) == 1 and sizes.get(image) != size:
                self._writable_images()[1][image] = size

    def _writable_images(self) -> tuple[dict[str, int], dict[str, int]]:
        """The image counts and sizes, copied first if a snapshot shares them."""
        if self._images_shared:
            self._image_counts = dict(self._image_counts)
            self._image_sizes = dict(self._image_sizes)
            self._images_shared = False
        return self._image_counts, self._image_sizes

    def _hold_images(self, sizes: Mapping[str, int], images: Iterable[str]) -> None:
        for image in images:
            counts, cluster_sizes = self._writable_images()
            counts[image] = counts.get(image, 0) + 1
            cluster_sizes.setdefault(image, sizes[image])

    def _release_images(self, images: Iterable[str]) -> None:
        for image in images:
            counts, sizes = self._writable_images()
            left = counts.get(image, 0) - 1
            if left > 0:
                counts[image] = left
            else:
                counts.pop(image, None)
                sizes.pop(image, None)


def _resource_dict(resource: Resource) -> dict[str, int]:
    out = {
        "milli_cpu": resource.milli_cpu,
        "memory": resource.memory,
        "ephemeral_storage": resource.ephemeral_storage,
        "pods": resource.allowed_pod_number,
    }
    out.update(resource.scalar)
    return out


def new_snapshot(nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> Snapshot:
    """A Snapshot of the given nodes and assigned pods (upstream's ``NewSnapshot``), for tests."""
    cache = SchedulerCache()
    for node in nodes:
        cache.add_node(node)
    for pod in pods:
        cache.add_pod(pod)
    return cache.snapshot()
