"""The Filter loop of a scheduling cycle, run a window of nodes at a time (``findNodesThatPassFilters``).

Batch plugins judge a whole window of the snapshot's columns at once; per-node plugins are called only
for the nodes the one-node-at-a-time loop would reach, so the outcome is exactly that loop's.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol, overload

import numpy as np
import numpy.typing as npt

from scheduler.framework.columns import BoolArray, ColumnStore, IntArray, NodeSubset, consecutive_subset
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.masked import ok_mask, rejection_lookup
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo


class _Filter(Protocol):
    name: str

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...


class _BatchFilter(Protocol):
    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]: ...


# The first window is as large as the nodes still needed; later ones follow the rejection rate seen.
_MIN_WINDOW = 32

# Per snapshot size, the positions 0..count-1 twice over (read-only): every cycle's visiting order
# is a view of it, rather than three fresh arrays the size of the snapshot.
_RINGS: dict[int, IntArray] = {}
_MAX_RINGS = 16


def _round_robin(count: int, start: int) -> IntArray:
    """Positions ``start, start + 1, ... count - 1, 0, ... start - 1``: the snapshot from ``start``."""
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    ring = _RINGS.get(count)
    if ring is None:
        if len(_RINGS) >= _MAX_RINGS:
            _RINGS.clear()
        ring = np.tile(np.arange(count, dtype=np.int64), 2)
        ring.flags.writeable = False
        _RINGS[count] = ring
    start %= count
    return ring[start : start + count]


def find_feasible(
    columns: ColumnStore,
    start: int,
    num_to_find: int,
    state: CycleState,
    pod: PodInfo,
    plugins: Sequence[_Filter],
    batch_of: Callable[[Any], _BatchFilter | None],
    special: Collection[int] = (),
    special_filter: Callable[[NodeInfo], Status | None] | None = None,
    special_many: Callable[[list[NodeInfo]], list[Status | None]] | None = None,
) -> tuple[NodeSubset, int, list[tuple[NodeInfo, Status]]]:
    """The Filter loop of a cycle, run a window of nodes at a time.

    ``special``: positions whose verdict is ``special_filter(node)`` instead of the plugins' (the nodes
    with nominated pods, which take RunFilterPluginsWithNominatedPods' two passes); its statuses carry
    their plugin already. Every other node takes the batch path. ``special_many``, if given, gives
    ``[special_filter(node) for node in nodes]`` in one call (judged up front, all batch plugins).

    Visits nodes from ``start`` round the snapshot and stops at the ``num_to_find``-th feasible one,
    with the outcome of the one-node-at-a-time loop: each node's status is that of its first failing
    plugin, in plugin order. Batch plugins judge a whole window at once (they are pure, so judging a
    few nodes past the stopping point changes nothing); per-node plugins are called only for nodes
    the loop reaches, exactly as before. Returns the feasible nodes, how many nodes were processed,
    and (node, status) for each processed node that failed, in visit order.
    """
    count = len(columns)
    order = _round_robin(count, start)
    # Per snapshot position, whether it is special: each window's hits by one lookup (np.isin sorts).
    is_special: BoolArray | None = None
    if special and special_filter is not None:
        is_special = np.zeros(count, dtype=np.bool_)
        is_special[np.fromiter(special, dtype=np.int64, count=len(special))] = True
    batches = [batch_of(plugin) for plugin in plugins]
    all_batch = all(batch is not None for batch in batches)
    found_parts: list[IntArray] = []
    found_spans: list[int | None] = []
    failures: list[tuple[NodeInfo, Status]] = []
    infos = columns.infos
    alive: IntArray | slice
    processed = found = 0
    while processed < count and found < num_to_find:
        need = num_to_find - found
        size = need if processed == 0 else need * processed // max(found, 1)
        window = order[processed : processed + min(max(size, _MIN_WINDOW), count - processed)]
        first = (start + processed) % count
        subset = consecutive_subset(columns, window, first)
        results, masks = _run_batches(batches, state, pod, subset)
        overrides: dict[int, Status | None] = {}
        if is_special is not None:
            assert special_filter is not None
            found_hits = np.flatnonzero(is_special[window])
            hits = found_hits.tolist()
            if hits and all_batch:
                # Judged up front, like the batch plugins: a few nodes past the stopping point cost a
                # little work and change nothing (the filters are pure).
                nodes: list[NodeInfo] = infos[window[found_hits]].tolist()
                if special_many is not None:
                    verdicts = special_many(nodes)
                else:
                    verdicts = [special_filter(node) for node in nodes]
                overrides = dict(zip(hits, verdicts, strict=True))
            elif hits:
                overrides = dict.fromkeys(hits)
        if all_batch:
            alive, cut, rejected = _judge_window(masks, results, len(window), need, overrides)
        else:
            lazy = special_filter if overrides else None
            alive, cut, rejected = _walk_window(
                plugins, masks, results, subset, need, state, pod, overrides, lazy
            )
        processed += cut
        found += alive.stop - alive.start if isinstance(alive, slice) else len(alive)
        found_parts.append(window[alive])
        # A window whose first nodes all passed: the feasible nodes are consecutive too.
        found_spans.append(first if isinstance(alive, slice) and alive.start == 0 else None)
        failures.extend(_failures(rejected, window, infos, plugins, results, overrides))
    if len(found_parts) == 1:
        only, span = found_parts[0], found_spans[0]
        subset = NodeSubset(columns, only) if span is None else consecutive_subset(columns, only, span)
        return subset, processed, failures
    positions = np.concatenate(found_parts) if found_parts else np.zeros(0, dtype=np.int64)
    return NodeSubset(columns, positions), processed, failures


def _run_batches(
    batches: Sequence[_BatchFilter | None], state: CycleState, pod: PodInfo, subset: NodeSubset
) -> tuple[list[Sequence[Status | None] | None], list[BoolArray | None]]:
    """Every batch plugin's statuses over a window and their pass masks (None for per-node plugins)."""
    results: list[Sequence[Status | None] | None] = []
    masks: list[BoolArray | None] = []
    for batch in batches:
        if batch is None:
            results.append(None)
            masks.append(None)
        else:
            statuses = batch.filter_nodes(state, pod, subset)
            results.append(statuses)
            masks.append(ok_mask(statuses))
    return results, masks


def _failures(
    rejected: Sequence[tuple[int, int]],
    window: IntArray,
    infos: npt.NDArray[np.object_],
    plugins: Sequence[_Filter],
    results: Sequence[Sequence[Status | None] | None],
    overrides: Mapping[int, Status | None],
) -> list[tuple[NodeInfo, Status]]:
    """(node, status) of each rejection of a window: ``(window index, plugin index)`` pairs, where the
    plugin index ``len(plugins)`` stands for ``special_filter``.

    Every rejected node is reported (a pod that fits nowhere has one per node), so the nodes are
    looked up as one array and each plugin's statuses through its cheapest accessor."""
    if not rejected:
        return []
    overridden = len(plugins)
    nodes: list[NodeInfo] = infos[window[[index for index, _ in rejected]]].tolist()
    lookups: dict[int, Callable[[int], Status | None]] = {}
    out: list[tuple[NodeInfo, Status]] = []
    for node, (index, plugin_index) in zip(nodes, rejected, strict=True):
        if plugin_index == overridden:
            override = overrides[index]
            assert override is not None
            out.append((node, override))
            continue
        lookup = lookups.get(plugin_index)
        if lookup is None:
            judged = results[plugin_index]
            assert judged is not None
            lookup = lookups[plugin_index] = rejection_lookup(judged)
        rejection = lookup(index)
        assert rejection is not None
        out.append((node, rejection.with_plugin(plugins[plugin_index].name)))
    return out


def _judge_window(
    masks: Sequence[BoolArray | None],
    results: Sequence[Sequence[Status | None] | None],
    size: int,
    need: int,
    overrides: Mapping[int, Status | None] | None = None,
) -> tuple[IntArray | slice, int, list[tuple[int, int]]]:
    """All plugins are batch plugins: combine their masks. Returns the feasible window indices up to
    the ``need``-th (a slice when all pass), the number of nodes processed, and (index, first failing
    plugin) per rejection. ``overrides``: window indices whose verdict is given (None passes; a status
    rejects, reported as plugin index ``len(masks)``)."""
    failing = [
        (plugin_index, mask)
        for plugin_index, mask in enumerate(masks)
        if mask is not None and not getattr(results[plugin_index], "all_ok", False) and not mask.all()
    ]
    if not failing and not overrides:
        cut = min(need, size)
        return slice(0, cut), cut, []
    first_failure: IntArray = np.full(size, -1, dtype=np.int64)
    for plugin_index, mask in failing:
        first_failure[(first_failure < 0) & ~mask] = plugin_index
    for index, verdict in (overrides or {}).items():
        first_failure[index] = -1 if verdict is None else len(masks)
    alive: IntArray = np.flatnonzero(first_failure < 0)
    if len(alive) >= need:
        cut = int(alive[need - 1]) + 1
        alive = alive[:need]
    else:
        cut = size
    failed = np.flatnonzero(first_failure[:cut] >= 0)
    return alive, cut, list(zip(failed.tolist(), first_failure[failed].tolist(), strict=True))


def _walk_window(
    plugins: Sequence[_Filter],
    masks: Sequence[BoolArray | None],
    results: list[Sequence[Status | None] | None],
    subset: NodeSubset,
    need: int,
    state: CycleState,
    pod: PodInfo,
    overrides: dict[int, Status | None] | None = None,
    special_filter: Callable[[NodeInfo], Status | None] | None = None,
) -> tuple[IntArray, int, list[tuple[int, int]]]:
    """Some plugins only judge one node at a time: walk the window in order, calling them only for
    nodes every earlier plugin passed, until ``need`` nodes fit. Their rejections are stored in
    ``results`` (as dicts by index) for the caller. The window indices in ``overrides`` are judged by
    ``special_filter`` instead, when reached; the verdict is stored there (rejections reported as
    plugin index ``len(plugins)``)."""
    ok_lists = [mask.tolist() if mask is not None else None for mask in masks]
    per_node: dict[int, dict[int, Status]] = {k: {} for k, mask in enumerate(masks) if mask is None}
    alive: list[int] = []
    rejected: list[tuple[int, int]] = []
    cut = len(subset)
    for index, node in enumerate(subset):
        failed_at = -1
        if overrides is not None and special_filter is not None and index in overrides:
            verdict = overrides[index] = special_filter(node)
            if verdict is None:
                alive.append(index)
                if len(alive) == need:
                    cut = index + 1
                    break
            else:
                rejected.append((index, len(plugins)))
            continue
        for plugin_index, plugin in enumerate(plugins):
            ok = ok_lists[plugin_index]
            if ok is not None:
                if not ok[index]:
                    failed_at = plugin_index
                    break
                continue
            status = plugin.filter(state, pod, node)
            if status is not None and status.code is not Code.Success:
                per_node[plugin_index][index] = status
                failed_at = plugin_index
                break
        if failed_at < 0:
            alive.append(index)
            if len(alive) == need:
                cut = index + 1
                break
        else:
            rejected.append((index, failed_at))
    for plugin_index, statuses in per_node.items():
        results[plugin_index] = _SparseStatuses(statuses, len(subset))
    return np.asarray(alive, dtype=np.int64), cut, rejected


class _SparseStatuses(Sequence["Status | None"]):
    """Statuses of the nodes a per-node plugin rejected; None for every other index."""

    __slots__ = ("_by_index", "_size")

    def __init__(self, by_index: dict[int, Status], size: int) -> None:
        self._by_index = by_index
        self._size = size

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> Status | None: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Status | None]: ...

    def __getitem__(self, index: int | slice) -> Status | Sequence[Status | None] | None:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._size))]
        return self._by_index.get(index)


def first_nodes(columns: ColumnStore, start: int, how_many: int) -> NodeSubset:
    """The first ``how_many`` nodes visited from ``start`` (no Filter plugins to run)."""
    count = len(columns)
    return NodeSubset(columns, (np.arange(min(how_many, count), dtype=np.int64) + start) % count)
