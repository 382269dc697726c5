"""The per-cycle view of the cluster (upstream's ``snapshot.go``).

A Snapshot holds clones of the cache's NodeInfos, so a scheduling cycle reads a consistent state while
informer events keep changing the cache. ``SchedulerCache.update_snapshot`` refreshes it in place,
re-cloning only the nodes changed since ``generation``, through the operations under "updates".
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from scheduler.cache.columns import NodeColumns
from scheduler.framework.columns import ColumnSpec, merge_column_specs
from scheduler.framework.types import NodeInfo, PodInfo

_NO_IMAGES: Mapping[str, int] = {}
# Generations of nodes changed inside a snapshot (``add_pod``/``remove_pod``): negative, so they never
# equal a cache generation, and what caches keyed by generation (batching) learnt of a changed node
# is never taken for the node as the cache has it.
_mutation_generations = itertools.count(-1, -1)


class Snapshot:
    """Implements ``SnapshotLister``. Nodes are listed in the cache's zone-interleaved order.

    ``column_specs`` are the node columns to keep (every enabled plugin's ``node_columns()``); a cycle
    may ask for more through ``columns(required)``, and those are kept from then on.
    """

    __slots__ = (
        "_column_specs",
        "_columns",
        "_image_num_nodes",
        "_image_sizes",
        "_index",
        "_list",
        "_map",
        "_originals",
        "_stale_rows",
        "_tree_version",
        "_with_affinity",
        "_with_required_anti_affinity",
        "generation",
    )

    def __init__(self, column_specs: Iterable[ColumnSpec] = ()) -> None:
        self._map: dict[str, NodeInfo] = {}
        self._list: list[NodeInfo] = []
        self._index: dict[str, int] = {}
        # Shared with the cache, which copies it before its next change (copy on write).
        self._image_num_nodes: Mapping[str, int] = _NO_IMAGES
        self._image_sizes: Mapping[str, int] = _NO_IMAGES
        # The cache's node-tree version the list was built from; -1 forces the first full build.
        self._tree_version = -1
        # The cache generation this snapshot reflects.
        self.generation = 0
        self._column_specs = merge_column_specs([("the snapshot", tuple(column_specs))])
        # Built on first use after the list changes, then kept up to date row by row.
        self._columns: NodeColumns | None = None
        # Nodes hosting pods with pod (anti-)affinity, by name; see have_pods_with_affinity_list().
        self._with_affinity: dict[str, NodeInfo] = {}
        self._with_required_anti_affinity: dict[str, NodeInfo] = {}
        # The cache's clones of the nodes changed by ``add_pod``/``remove_pod`` since ``restore``.
        self._originals: dict[str, NodeInfo] = {}
        # Column rows of nodes changed inside the snapshot, brought up to date when the columns are next
        # read: a what-if run changes thousands of nodes and reads no column in between.
        self._stale_rows: dict[int, NodeInfo] = {}

    # -- SnapshotLister ------------------------------------------------------------------------------

    def node_infos(self) -> Sequence[NodeInfo]:
        return self._list

    def get(self, node_name: str) -> NodeInfo | None:
        return self._map.get(node_name)

    def num_nodes(self) -> int:
        return len(self._list)

    def image_num_nodes(self, image: str) -> int:
        return self._image_num_nodes.get(image, 0)

    def image_size(self, image: str) -> int:
        return self._image_sizes.get(image, 0)

    def index_of(self, node_name: str) -> int | None:
        """The node's position in ``node_infos()``; it changes only when nodes are added or removed."""
        return self._index.get(node_name)

    def columns(self, required: Sequence[ColumnSpec] = ()) -> NodeColumns:
        """The nodes' columns, aligned with ``node_infos()``, for batch Filter/Score plugins: the
        snapshot's own specs plus ``required`` (a profile's columns; built once, then kept)."""
        if self._columns is None:
            self._columns = NodeColumns(self._list, self._column_specs)
            self._stale_rows.clear()
        elif self._stale_rows:
            # Only pods changed in these rows since they were last set: a node's Node object changes
            # only through ``put``, which sets its row at once.
            for position, info in self._stale_rows.items():
                self._columns.set(position, info, pods_only=True)
            self._stale_rows.clear()
        if required:
            self._columns.require(required)
        return self._columns

    # -- nodes hosting pods with pod (anti-)affinity (upstream's HavePodsWith*List) ---------------------

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        """The nodes with at least one pod that has pod affinity or anti-affinity (any kind)."""
        return list(self._with_affinity.values())

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        """The nodes with at least one pod that has required pod anti-affinity."""
        return list(self._with_required_anti_affinity.values())

    def _track_pod_affinity(self, info: NodeInfo) -> None:
        """Kept up to date on every ``_replace``, so the lists cost nothing per cycle. Spelt out per
        list: it runs for every node a snapshot update puts, where most nodes are in neither."""
        name = info.name
        if info.pods_with_affinity:
            self._with_affinity[name] = info
        elif self._with_affinity:
            self._with_affinity.pop(name, None)
        if info.pods_with_required_anti_affinity:
            self._with_required_anti_affinity[name] = info
        elif self._with_required_anti_affinity:
            self._with_required_anti_affinity.pop(name, None)

    def _untrack_pod_affinity(self, keep: Mapping[str, NodeInfo]) -> None:
        for nodes in (self._with_affinity, self._with_required_anti_affinity):
            for name in [name for name in nodes if name not in keep]:
                del nodes[name]

    def __repr__(self) -> str:
        return f"Snapshot(nodes={len(self._list)}, gen={self.generation})"

    # -- updates (SchedulerCache.update_snapshot) ----------------------------------------------------

    @property
    def tree_version(self) -> int:
        """The cache's node-tree version the node list was built from (-1: never built)."""
        return self._tree_version

    def put(self, info: NodeInfo, *, pods_only: bool = False) -> None:
        """Stores a fresh clone; if the node is already listed, it takes over the same position.
        ``pods_only``: the clone differs from the node as this snapshot has it only in its pods (the
        cache's Node object is the one this snapshot's copy has), so its column row is brought up to
        date with the columns that read pods alone (``NodeColumns.set``)."""
        # A fresh clone from the cache supersedes the changes made inside the snapshot.
        if self._originals:
            self._originals.pop(info.name, None)
        self._replace(info, pods_only=pods_only)

    def _replace(self, info: NodeInfo, *, defer_columns: bool = False, pods_only: bool = False) -> None:
        """``defer_columns``: a change inside the snapshot (``add_pod``, ``remove_pod``, ``restore``),
        which changes pods only; its row is brought up to date when the columns are next read."""
        self._map[info.name] = info
        self._track_pod_affinity(info)
        position = self._index.get(info.name)
        if position is not None:
            self._list[position] = info
            if self._columns is not None:
                if defer_columns:
                    self._stale_rows[position] = info
                else:
                    if self._stale_rows:
                        self._stale_rows.pop(position, None)
                    self._columns.set(position, info, pods_only=pods_only)

    def relist(self, names: Sequence[str], tree_version: int) -> list[str]:
        """Rebuilds the list in ``names`` order (the cache's tree at ``tree_version``), dropping nodes
        not named; returns the names that have no stored NodeInfo."""
        missing: list[str] = []
        node_list: list[NodeInfo] = []
        for name in names:
            info = self._map.get(name)
            if info is None:
                missing.append(name)
            else:
                node_list.append(info)
        if len(self._map) != len(node_list):
            keep = {info.name for info in node_list}
            self._map = {name: info for name, info in self._map.items() if name in keep}
            self._untrack_pod_affinity(self._map)
        self._list = node_list
        self._index = {info.name: position for position, info in enumerate(node_list)}
        self._tree_version = tree_version
        if self._columns is not None:
            # Rows moved: rebuild on next use, keeping every column asked for so far.
            self._column_specs = self._columns.specs
            self._columns = None
            self._stale_rows.clear()
        return missing

    def share_image_counts(self, counts: Mapping[str, int], sizes: Mapping[str, int]) -> None:
        """Nodes and cluster-wide size per image, shared with the cache (which copies before its next
        change)."""
        self._image_num_nodes = counts
        self._image_sizes = sizes

    # -- changes inside the snapshot (upstream's snapshot AssumePod/ForgetPod and mutable snapshot) ----

    def add_pod(self, pod: PodInfo, node_name: str) -> None:
        """Counts ``pod`` on ``node_name`` in this snapshot only (the cache is not told): a pod group
        cycle's trial placements, and preemption's what-if runs over many nodes. ``restore`` undoes it."""
        changed = self._changed_copy(node_name)
        if changed is not None:
            changed.add_pod(pod)
            self._replace(changed, defer_columns=True)

    def remove_pod(self, pod: PodInfo, node_name: str) -> None:
        """Takes ``pod`` off ``node_name`` in this snapshot only; ``restore`` undoes it."""
        changed = self._changed_copy(node_name)
        if changed is not None:
            changed.remove_pod(pod.key)
            self._replace(changed, defer_columns=True)

    def restore(self) -> None:
        """Puts back the cache's view of every node changed by ``add_pod``/``remove_pod``."""
        originals, self._originals = self._originals, {}
        for name, info in originals.items():
            if name in self._map:  # a node dropped by ``relist`` meanwhile stays dropped
                self._replace(info, defer_columns=True)

    def has_changes(self) -> bool:
        """Whether ``add_pod``/``remove_pod`` changed a node since the last ``restore``."""
        return bool(self._originals)

    def _changed_copy(self, node_name: str) -> NodeInfo | None:
        """The node's own copy for changes (made on its first change since ``restore``; the cache's
        clone stays as it was, to be put back), with a new generation for every change."""
        current = self._map.get(node_name)
        if current is None:
            return None
        if node_name not in self._originals:
            self._originals[node_name] = current
            current = current.clone()
        current.generation = next(_mutation_generations)
        return current
