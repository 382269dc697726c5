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

from collections.abc import Callable, Iterator, Mapping, Sequence
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

# The label-code column of this pseudo key holds node names (matchFields on metadata.name).
NAME_KEY = "\x00metadata.name"

TaintKey = tuple[tuple[Any, Any, Any], ...]


def _taint_key(taints: Sequence[Mapping[str, Any]]) -> TaintKey:
    return tuple((t.get("key"), t.get("value"), t.get("effect")) for t in taints)


class NodeColumns:
    """One row per snapshot position. ``infos`` holds the NodeInfo of each row.

    ``num_tainted`` and ``num_unschedulable`` count the rows with those flags, so plugins can skip
    the per-node look at taints and cordons when no node has any.
    """

    __slots__ = (
        "_label_codes",
        "_label_vocabulary",
        "_taint_vocabulary",
        "infos",
        "num_tainted",
        "num_unschedulable",
        "taint_code",
        "taint_sets",
        *_INT_COLUMNS,
        *_BOOL_COLUMNS,
    )

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
    # Nodes with the same taints share a code (0: no taints); taint_sets[code] is one such list, so a
    # plugin judges each distinct set of taints once per pod instead of once per node.
    taint_code: IntArray
    taint_sets: list[Sequence[Mapping[str, Any]]]

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        size = len(infos)
        self.infos = np.empty(size, dtype=object)
        for name in _INT_COLUMNS:
            setattr(self, name, np.zeros(size, dtype=np.int64))
        for name in _BOOL_COLUMNS:
            setattr(self, name, np.zeros(size, dtype=np.bool_))
        self.num_tainted = 0
        self.num_unschedulable = 0
        self.taint_code = np.zeros(size, dtype=np.int64)
        self.taint_sets = [()]
        self._taint_vocabulary: dict[TaintKey, int] = {(): 0}
        # Label key -> code per row (0: no such label), built on first use; value -> code per key.
        self._label_codes: dict[str, IntArray] = {}
        self._label_vocabulary: dict[str, dict[str, int]] = {}
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
        tainted = bool(info.taints)
        self.num_tainted += tainted - bool(self.tainted[position])
        self.tainted[position] = tainted
        unschedulable = bool(info.unschedulable)
        self.num_unschedulable += unschedulable - bool(self.unschedulable[position])
        self.unschedulable[position] = unschedulable
        self.taint_code[position] = self._taint_code(info.taints) if tainted else 0
        for key, codes in self._label_codes.items():
            codes[position] = self._code(key, _label(info, key))

    def _taint_code(self, taints: Sequence[Mapping[str, Any]]) -> int:
        key = _taint_key(taints)
        code = self._taint_vocabulary.get(key)
        if code is None:
            code = self._taint_vocabulary[key] = len(self.taint_sets)
            self.taint_sets.append(taints)
        return code

    def _code(self, key: str, value: str | None) -> int:
        if value is None:
            return 0
        vocabulary = self._label_vocabulary[key]
        code = vocabulary.get(value)
        if code is None:
            code = vocabulary[value] = len(vocabulary) + 1
        return code

    def label_codes(self, key: str) -> IntArray:
        """Per row, a code for the node's value of label ``key`` (0: the node has no such label).
        ``NAME_KEY`` gives the node names. Equal values have equal codes."""
        codes = self._label_codes.get(key)
        if codes is None:
            self._label_vocabulary[key] = {}
            codes = np.fromiter(
                (self._code(key, _label(info, key)) for info in self.infos), dtype=np.int64, count=len(self)
            )
            self._label_codes[key] = codes
        return codes

    def label_code(self, key: str, value: str) -> int:
        """The code of ``value`` for label ``key``; -1 if no node has that value (matches no row)."""
        self.label_codes(key)
        return self._label_vocabulary[key].get(value, -1)


def _label(info: NodeInfo, key: str) -> str | None:
    if key == NAME_KEY:
        return info.name
    return info.labels.get(key)


class NodeSubset(Sequence[NodeInfo]):
    """The NodeInfos at ``positions`` of a snapshot whose facts are in ``columns``, in that order.

    Batch plugins read arrays through ``gather`` (each gathered once per subset) and never need the
    NodeInfo objects, so the list of them is built only when something indexes or iterates it.
    """

    __slots__ = ("_gathered", "_infos", "columns", "positions")

    def __init__(self, columns: NodeColumns, positions: IntArray) -> None:
        self.columns = columns
        self.positions = positions
        self._infos: list[NodeInfo] | None = None
        self._gathered: dict[str, Any] = {}

    def _list(self) -> list[NodeInfo]:
        if self._infos is None:
            self._infos = self.columns.infos[self.positions].tolist()
        return self._infos

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, index: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeInfo]: ...

    def __getitem__(self, index: int | slice) -> NodeInfo | list[NodeInfo]:
        if self._infos is None and not isinstance(index, slice):
            # One node (the selected host, say): no need to build the whole list.
            info: NodeInfo = self.columns.infos[self.positions[index]]
            return info
        return self._list()[index]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self._list())

    def __repr__(self) -> str:
        return f"NodeSubset({len(self)} nodes)"

    def gather(self, column: str) -> npt.NDArray[Any]:
        """``columns.<column>`` at this subset's positions (computed once, then shared: read-only)."""
        values = self._gathered.get(column)
        if values is None:
            values = self._gathered[column] = getattr(self.columns, column)[self.positions]
        result: npt.NDArray[Any] = values
        return result

    def label_codes(self, key: str) -> IntArray:
        """``columns.label_codes(key)`` at this subset's positions."""
        cache_key = "label/" + key
        values = self._gathered.get(cache_key)
        if values is None:
            values = self._gathered[cache_key] = self.columns.label_codes(key)[self.positions]
        result: IntArray = values
        return result

    def all_positive(self, column: str) -> bool:
        """Whether every node of the subset has a positive value in ``column``."""
        key = column + "/all_positive"
        known = self._gathered.get(key)
        if known is None:
            known = self._gathered[key] = bool((self.gather(column) > 0).all())
        return bool(known)


def as_subset(nodes: Sequence[NodeInfo]) -> NodeSubset | None:
    """``nodes`` if it is a NodeSubset (columns available), else None (per-node path)."""
    return nodes if isinstance(nodes, NodeSubset) else None


class MaskedStatuses(Sequence["Status | None"]):
    """A batch Filter result: ``ok[i]`` says node i passed; the status of a failed one is made on demand.

    The scheduling cycle reads ``ok`` directly and builds statuses only for the nodes it reports.
    """

    __slots__ = ("_status_of", "all_ok", "ok")

    def __init__(self, ok: BoolArray, status_of: Callable[[int], Status], *, all_ok: bool = False) -> None:
        self.ok = ok
        self._status_of = status_of
        # Known to pass every node: the Filter loop can skip combining this mask.
        self.all_ok = all_ok

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

    return MaskedStatuses(np.ones(count, dtype=np.bool_), never, all_ok=True)


def ok_mask(statuses: Sequence[Status | None]) -> BoolArray:
    """Which entries of a Filter result are successes."""
    if isinstance(statuses, MaskedStatuses):
        return statuses.ok
    return np.fromiter(
        (s is None or s.code is Code.Success for s in statuses), dtype=np.bool_, count=len(statuses)
    )


def per_node_statuses(
    nodes: Sequence[NodeInfo], check: Callable[[NodeInfo], Status | None], candidates: Sequence[int]
) -> MaskedStatuses:
    """Runs ``check`` only on the ``candidates`` indices; every other node passes."""
    ok = np.ones(len(nodes), dtype=np.bool_)
    failed: dict[int, Status] = {}
    if not candidates:
        return MaskedStatuses(ok, failed.__getitem__, all_ok=True)
    for index in candidates:
        status = check(nodes[index])
        if status is not None and status.code is not Code.Success:
            ok[index] = False
            failed[index] = status
    return MaskedStatuses(ok, failed.__getitem__)


def trunc_div(numerator: IntArray, denominator: int) -> IntArray:
    """Go's integer division (truncates toward zero) for a positive ``denominator``."""
    quotient: IntArray = np.abs(numerator) // denominator * np.sign(numerator)
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
    alive: IntArray | slice
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
            alive, cut, rejected = _judge_window(masks, results, len(window), need)
        else:
            alive, cut, rejected = _walk_window(plugins, masks, results, subset, need, state, pod)
        processed += cut
        found += alive.stop - alive.start if isinstance(alive, slice) else len(alive)
        found_parts.append(window[alive])
        for index, plugin_index in rejected:
            judged = results[plugin_index]
            rejection = judged[index] if judged is not None else None
            assert rejection is not None
            failures.append((infos[window[index]], rejection.with_plugin(plugins[plugin_index].name)))
    if len(found_parts) == 1:
        positions = found_parts[0]
    else:
        positions = np.concatenate(found_parts) if found_parts else np.zeros(0, dtype=np.int64)
    return NodeSubset(columns, positions), processed, failures


def _judge_window(
    masks: Sequence[BoolArray | None],
    results: Sequence[Sequence[Status | None] | None],
    size: int,
    need: int,
) -> tuple[IntArray | slice, int, list[tuple[int, int]]]:
    """All plugins are batch plugins: combine their masks. Returns the feasible window indices up to
    the ``need``-th (a slice when all pass), the number of nodes processed, and (index, first failing
    plugin) per rejection."""
    failing = [
        (plugin_index, mask)
        for plugin_index, mask in enumerate(masks)
        if mask is not None and not getattr(results[plugin_index], "all_ok", False) and not mask.all()
    ]
    if not failing:
        cut = min(need, size)
        return slice(0, cut), cut, []
    first_failure: IntArray = np.full(size, -1, dtype=np.int64)
    for plugin_index, mask in failing:
        first_failure[(first_failure < 0) & ~mask] = plugin_index
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
