"""Columnar node facts for vectorised Filter and Score (the BatchFilterPlugin/BatchScorePlugin fast path).

Per-node Python calls dominate a cycle: with 1,000 nodes upstream's adaptive percentageOfNodesToScore
still filters and scores about 420 of them for every pod. The Snapshot therefore keeps the numbers
plugins compare (allocatable, requested, pod counts, taint and cordon flags) as numpy arrays aligned
with ``Snapshot.node_infos()``, updated row by row as nodes change.

The scheduling cycle hands batch plugins a :class:`NodeSubset`: an ordinary list of NodeInfos that
also carries the snapshot positions of its nodes and the columns, so a plugin can judge all of them
with a few array operations. A plugin given a plain list (a test, an out-of-tree caller) falls back
to its per-node code; both paths give the same answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, overload

import numpy as np
import numpy.typing as npt

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_INT_COLUMNS = (
    "alloc_cpu",
    "alloc_mem",
    "alloc_eph",
    "alloc_pods",
    "req_cpu",
    "req_mem",
    "req_eph",
    "nz_cpu",
    "nz_mem",
    "num_pods",
)
_BOOL_COLUMNS = ("tainted", "unschedulable")


class NodeColumns:
    """One row per snapshot position. ``infos`` holds the NodeInfo of each row."""

    __slots__ = ("infos", *_INT_COLUMNS, *_BOOL_COLUMNS)

    infos: npt.NDArray[np.object_]
    alloc_cpu: IntArray  # millicores
    alloc_mem: IntArray
    alloc_eph: IntArray
    alloc_pods: IntArray
    req_cpu: IntArray  # plain requests of the pods on the node (assumed ones included)
    req_mem: IntArray
    req_eph: IntArray
    nz_cpu: IntArray  # non-zero requests (100m / 200Mi for containers that request none)
    nz_mem: IntArray
    num_pods: IntArray
    tainted: BoolArray  # any taint at all
    unschedulable: BoolArray  # spec.unschedulable

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        size = len(infos)
        self.infos = np.empty(size, dtype=object)
        for name in _INT_COLUMNS:
            setattr(self, name, np.zeros(size, dtype=np.int64))
        for name in _BOOL_COLUMNS:
            setattr(self, name, np.zeros(size, dtype=np.bool_))
        for position, info in enumerate(infos):
            self.set(position, info)

    def __len__(self) -> int:
        return len(self.infos)

    def set(self, position: int, info: NodeInfo) -> None:
        """Row ``position`` now describes ``info``."""
        self.infos[position] = info
        alloc = info.allocatable
        self.alloc_cpu[position] = alloc.milli_cpu
        self.alloc_mem[position] = alloc.memory
        self.alloc_eph[position] = alloc.ephemeral_storage
        self.alloc_pods[position] = alloc.allowed_pod_number
        requested = info.requested
        self.req_cpu[position] = requested.milli_cpu
        self.req_mem[position] = requested.memory
        self.req_eph[position] = requested.ephemeral_storage
        non_zero = info.non_zero_requested
        self.nz_cpu[position] = non_zero.milli_cpu
        self.nz_mem[position] = non_zero.memory
        self.num_pods[position] = len(info.pods)
        self.tainted[position] = bool(info.taints)
        self.unschedulable[position] = info.unschedulable


class NodeSubset(list[NodeInfo]):
    """NodeInfos at ``positions`` of a snapshot whose facts are in ``columns``, in that order."""

    __slots__ = ("columns", "positions")

    def __init__(self, columns: NodeColumns, positions: IntArray) -> None:
        super().__init__(columns.infos[positions].tolist())
        self.columns = columns
        self.positions = positions


def columns_of(nodes: Sequence[NodeInfo]) -> tuple[NodeColumns, IntArray] | None:
    """The columns and positions behind ``nodes`` if it is a NodeSubset, else None (per-node path)."""
    if isinstance(nodes, NodeSubset):
        return nodes.columns, nodes.positions
    return None


class MaskedStatuses(Sequence["Status | None"]):
    """A batch Filter result: ``ok[i]`` says node i passed; the status of a failed one is made on demand.

    The scheduling cycle reads ``ok`` directly and builds statuses only for the nodes it reports.
    """

    __slots__ = ("_status_of", "ok")

    def __init__(self, ok: BoolArray, status_of: Callable[[int], Status]) -> None:
        self.ok = ok
        self._status_of = status_of

    def __len__(self) -> int:
        return len(self.ok)

    @overload
    def __getitem__(self, index: int) -> Status | None: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Status | None]: ...

    def __getitem__(self, index: int | slice) -> Status | Sequence[Status | None] | None:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self.ok)
        if self.ok[index]:
            return None
        return self._status_of(index)


def all_pass(count: int) -> MaskedStatuses:
    def never(index: int) -> Status:
        raise IndexError(index)

    return MaskedStatuses(np.ones(count, dtype=np.bool_), never)


def ok_mask(statuses: Sequence[Status | None]) -> BoolArray:
    """Which entries of a Filter result are successes."""
    if isinstance(statuses, MaskedStatuses):
        return statuses.ok
    return np.fromiter(
        (s is None or s.code is Code.Success for s in statuses), dtype=np.bool_, count=len(statuses)
    )


def per_node_statuses(
    nodes: Sequence[NodeInfo], check: Callable[[NodeInfo], Status | None], candidates: Iterable[int]
) -> MaskedStatuses:
    """Runs ``check`` only on the ``candidates`` indices; every other node passes."""
    ok = np.ones(len(nodes), dtype=np.bool_)
    failed: dict[int, Status] = {}
    for index in candidates:
        status = check(nodes[index])
        if status is not None and status.code is not Code.Success:
            ok[index] = False
            failed[index] = status
    return MaskedStatuses(ok, failed.__getitem__)


def trunc_div(numerator: IntArray, denominator: int) -> IntArray:
    """Go's integer division (truncates toward zero) for a positive ``denominator``."""
    quotient: IntArray = np.where(numerator >= 0, numerator // denominator, -((-numerator) // denominator))
    return quotient


def as_int_array(values: Any) -> IntArray:
    array: IntArray = np.asarray(values, dtype=np.int64)
    return array


class _Filter(Protocol):
    name: str

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...


class _BatchFilter(Protocol):
    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]: ...


# The first window is as large as the nodes still needed; later ones follow the rejection rate seen.
_MIN_WINDOW = 32


def find_feasible(
    columns: NodeColumns,
    start: int,
    num_to_find: int,
    state: CycleState,
    pod: PodInfo,
    plugins: Sequence[_Filter],
    batch_of: Callable[[Any], _BatchFilter | None],
) -> tuple[NodeSubset, int, list[tuple[NodeInfo, Status]]]:
    """The Filter loop of a cycle, run a window of nodes at a time.

    Visits nodes from ``start`` round the snapshot and stops at the ``num_to_find``-th feasible one,
    with the outcome of the one-node-at-a-time loop: each node's status is that of its first failing
    plugin, in plugin order. Batch plugins judge a whole window at once (they are pure, so judging a
    few nodes past the stopping point changes nothing); per-node plugins are called only for nodes
    the loop reaches, exactly as before. Returns the feasible nodes, how many nodes were processed,
    and (node, status) for each processed node that failed, in visit order.
    """
    count = len(columns)
    order: IntArray = (np.arange(count, dtype=np.int64) + start) % count
    batches = [batch_of(plugin) for plugin in plugins]
    all_batch = all(batch is not None for batch in batches)
    found_parts: list[IntArray] = []
    failures: list[tuple[NodeInfo, Status]] = []
    infos = columns.infos
    processed = found = 0
    while processed < count and found < num_to_find:
        need = num_to_find - found
        size = need if processed == 0 else need * processed // max(found, 1)
        window = order[processed : processed + min(max(size, _MIN_WINDOW), count - processed)]
        subset = NodeSubset(columns, window)
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
        if all_batch:
            alive, cut, rejected = _judge_window(masks, results, need)
        else:
            alive, cut, rejected = _walk_window(plugins, masks, results, subset, need, state, pod)
        processed += cut
        found += len(alive)
        found_parts.append(window[alive])
        for index, plugin_index in rejected:
            judged = results[plugin_index]
            rejection = judged[index] if judged is not None else None
            assert rejection is not None
            failures.append((infos[window[index]], rejection.with_plugin(plugins[plugin_index].name)))
    positions = np.concatenate(found_parts) if found_parts else np.zeros(0, dtype=np.int64)
    return NodeSubset(columns, positions), processed, failures


def _judge_window(
    masks: Sequence[BoolArray | None], results: Sequence[Sequence[Status | None] | None], need: int
) -> tuple[IntArray, int, list[tuple[int, int]]]:
    """All plugins are batch plugins: combine their masks. Returns the feasible window indices up to
    the ``need``-th, the number of nodes processed, and (index, first failing plugin) per rejection."""
    first_failure: IntArray = np.full(len(masks[0]), -1, dtype=np.int64)  # type: ignore[arg-type]
    for plugin_index, mask in enumerate(masks):
        assert mask is not None
        first_failure[(first_failure < 0) & ~mask] = plugin_index
    alive: IntArray = np.flatnonzero(first_failure < 0)
    if len(alive) >= need:
        cut = int(alive[need - 1]) + 1
        alive = alive[:need]
    else:
        cut = len(first_failure)
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
) -> tuple[IntArray, int, list[tuple[int, int]]]:
    """Some plugins only judge one node at a time: walk the window in order, calling them only for
    nodes every earlier plugin passed, until ``need`` nodes fit. Their rejections are stored in
    ``results`` (as dicts by index) for the caller."""
    ok_lists = [mask.tolist() if mask is not None else None for mask in masks]
    per_node: dict[int, dict[int, Status]] = {k: {} for k, mask in enumerate(masks) if mask is None}
    alive: list[int] = []
    rejected: list[tuple[int, int]] = []
    cut = len(subset)
    for index, node in enumerate(subset):
        failed_at = -1
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


def first_nodes(columns: NodeColumns, start: int, how_many: int) -> NodeSubset:
    """The first ``how_many`` nodes visited from ``start`` (no Filter plugins to run)."""
    count = len(columns)
    return NodeSubset(columns, (np.arange(min(how_many, count), dtype=np.int64) + start) % count)
