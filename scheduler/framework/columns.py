"""Node columns: how a vectorised plugin declares the per-node facts it reads as arrays.

Per-node Python calls dominate a cycle: with 1,000 nodes upstream's adaptive percentageOfNodesToScore
still filters and scores about 420 of them for every pod. A plugin with a fast path therefore declares,
in ``node_columns()``, the facts it compares (allocatable cpu, "is cordoned", the node's taints...) and
how to derive each from a NodeInfo. The snapshot keeps exactly the declared columns of the enabled
plugins as numpy arrays aligned with ``Snapshot.node_infos()``, updated row by row as nodes change
(``scheduler.cache.columns``).

The Filter loop hands batch plugins a :class:`NodeSubset`: an ordinary list of NodeInfos that also
carries the snapshot positions of its nodes and the columns, so a plugin can judge all of them with a
few array operations. A plugin given a plain list (a test, an out-of-tree caller) falls back to its
per-node code; both paths give the same answers.

Column names are namespaced by their owner (``"TaintToleration/taints"``). A column two plugins share
is one spec object in a module both import (``noderesources/columns.py``): equal specs are kept once,
two different specs under one name stop startup.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, overload

import numpy as np
import numpy.typing as npt

from scheduler.framework.types import NodeInfo

_T = TypeVar("_T")

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def int_max(values: IntArray) -> int:
    """The largest value of a non-empty integer array. Found by ``argmax``: a ufunc reduction
    (``max()``) has about a microsecond of fixed cost, five times argmax's on the few hundred values
    of a cycle's window, and scoring asks several times per pod."""
    return int(values[values.argmax()])


# The label-code column of this pseudo key holds node names (matchFields on metadata.name).
NAME_KEY = "\x00metadata.name"


@dataclass(frozen=True, slots=True)
class NodeColumn:
    """One number (or flag) per node: ``compute(info)`` stored in an array of ``dtype``.

    ``count_nonzero`` keeps a count of the rows whose value is non-zero, so a plugin can skip its work
    when no node has the fact at all (no cordoned node: nothing for NodeUnschedulable to do).

    ``reads_pods`` declares whether the value can change when a pod is added to or removed from the
    node. False: ``compute`` reads only what the Node object gives (its name, labels, taints,
    ``spec.unschedulable``, allocatable, images), so after a change that only added or removed pods (the
    assume and bind of every scheduled pod) the snapshot keeps the row's value instead of computing it
    again. True: it reads the node's pods, their requests, or anything else that moves with them (the
    generation). None, not declared: treated as True, recomputed on every change of the node. Every
    in-tree column declares it (tests/unit/cache/test_pod_only_columns.py checks that the False ones
    hold).
    """

    name: str
    dtype: type[np.generic]
    compute: Callable[[NodeInfo], Any]
    count_nonzero: bool = False
    reads_pods: bool | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class InternedColumn:
    """A value per node that is costly to compare (a list of taints), stored as a code per row.

    Nodes whose values have equal ``key(value)`` share a code, and one such value is kept per code, so
    a plugin judges each distinct value once per pod instead of once per node. ``compute`` returns None
    for "nothing" (code 0, the value kept for code 0 is None). The rows with a non-zero code are
    always counted. ``reads_pods``: as for a NodeColumn.
    """

    name: str
    compute: Callable[[NodeInfo], Any]
    key: Callable[[Any], Hashable] | None = None
    reads_pods: bool | None = field(default=None, kw_only=True)


ColumnSpec = NodeColumn | InternedColumn


def reads_pods(spec: ColumnSpec) -> bool:
    """Whether ``spec`` must be recomputed after a change that only added or removed pods (an
    undeclared column must)."""
    return spec.reads_pods is not False


def _generation(info: NodeInfo) -> int:
    return info.generation


# Each row's NodeInfo generation, kept row by row like every column: the batching cache compares it
# with the generations its results were computed at to find the few nodes that changed since.
# The generation moves with every change, pods included.
GENERATION_COLUMN = NodeColumn("framework/generation", np.int64, _generation, reads_pods=True)


class ColumnConflictError(ValueError):
    """Two plugins declared different columns under one name."""


def merge_column_specs(declared: Iterable[tuple[str, Sequence[ColumnSpec]]]) -> tuple[ColumnSpec, ...]:
    """The specs of every (owner, specs) pair, each kept once, in first-declared order.

    Equal specs under one name are one column; different ones raise ColumnConflictError naming both
    owners, so a clash stops startup instead of one plugin reading another's numbers.
    """
    merged: dict[str, tuple[str, ColumnSpec]] = {}
    for owner, specs in declared:
        for spec in specs:
            known = merged.get(spec.name)
            if known is None:
                merged[spec.name] = (owner, spec)
            elif known[1] != spec:
                raise ColumnConflictError(
                    f"node column {spec.name!r} is declared differently by {known[0]} and {owner}"
                )
    return tuple(spec for _, spec in merged.values())


class Tally(Protocol):
    """Per node, a small multiset of facts about its pods, with totals over the snapshot
    (``scheduler.cache.columns.RowTally``)."""

    @property
    def totals(self) -> Mapping[Hashable, int]: ...

    def column(self, fact: Hashable) -> IntArray: ...


class ColumnStore(Protocol):
    """What a NodeSubset reads: the snapshot's columns (``scheduler.cache.columns.NodeColumns``)."""

    infos: npt.NDArray[np.object_]

    def __len__(self) -> int: ...

    def array(self, column: ColumnSpec | str) -> npt.NDArray[Any]: ...

    def distinct(self, column: InternedColumn | str) -> Sequence[Any]: ...

    def nonzero_rows(self, column: ColumnSpec | str) -> int: ...

    def all_positive(self, column: ColumnSpec | str) -> bool: ...

    def label_codes(self, key: str) -> IntArray: ...

    def label_code(self, key: str, value: str) -> int: ...

    def label_values(self, key: str) -> Sequence[str | None]: ...

    def label_memo(self, key: Hashable, build: Callable[[], _T]) -> _T: ...

    def row_counts(self, key: Hashable, count: Callable[[NodeInfo], int]) -> IntArray: ...

    def row_tally(self, key: Hashable, tally: Callable[[NodeInfo], Mapping[Hashable, int]]) -> Tally: ...


def column_name(column: ColumnSpec | str) -> str:
    # Called per gather, several times a cycle: an exact type check is the cheapest test.
    return column if type(column) is str else column.name  # type: ignore[union-attr]


class NodeSubset(Sequence[NodeInfo]):
    """The NodeInfos at ``positions`` of a snapshot whose columns are ``columns``, in that order.

    Batch plugins read arrays through ``gather`` (each gathered once per subset) and never need the
    NodeInfo objects, so the list of them is built only when something indexes or iterates it.
    """

    __slots__ = ("_gathered", "_infos", "_span", "columns", "positions")

    def __init__(self, columns: ColumnStore, positions: IntArray) -> None:
        self.columns = columns
        self.positions = positions
        # See ``consecutive_subset``: the first position of a run of consecutive ones, or None.
        self._span: int | None = None
        self._infos: list[NodeInfo] | None = None
        self._gathered: dict[str, Any] = {}

    def _take(self, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """``values[self.positions]``; for a span, one or two slices (read-only when a view)."""
        first = self._span
        if first is None:
            return values[self.positions]
        end = first + len(self.positions)
        if end <= len(values):
            view = values[first:end]
            view.flags.writeable = False
            return view
        return np.concatenate((values[first:], values[: end - len(values)]))

    def _list(self) -> list[NodeInfo]:
        if self._infos is None:
            self._infos = self._take(self.columns.infos).tolist()
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

    def gather(self, column: ColumnSpec | str) -> npt.NDArray[Any]:
        """The column's values (codes, for an interned column) at this subset's positions; computed
        once per subset, then shared: read-only. KeyError if no enabled plugin declared the column."""
        name = column_name(column)
        values = self._gathered.get(name)
        if values is None:
            values = self._gathered[name] = self._take(self.columns.array(name))
        result: npt.NDArray[Any] = values
        return result

    def distinct(self, column: InternedColumn | str) -> Sequence[Any]:
        """The kept value of each code of an interned column (index 0: None). Covers the snapshot."""
        return self.columns.distinct(column)

    def nonzero_rows(self, column: ColumnSpec | str) -> int:
        """How many nodes of the whole snapshot have a non-zero value in ``column``: 0 lets a plugin
        skip its work without gathering."""
        return self.columns.nonzero_rows(column)

    def label_codes(self, key: str) -> IntArray:
        """Per node, a code for its value of label ``key`` (0: no such label); ``NAME_KEY`` gives the
        node names. Equal values have equal codes."""
        cache_key = "label/" + key
        values = self._gathered.get(cache_key)
        if values is None:
            values = self._gathered[cache_key] = self._take(self.columns.label_codes(key))
        result: IntArray = values
        return result

    def label_code(self, key: str, value: str) -> int:
        """The code of ``value`` for label ``key``; -1 if no node has that value (matches no node)."""
        return self.columns.label_code(key, value)

    def all_positive(self, column: ColumnSpec | str) -> bool:
        """Whether every node of the subset has a positive value in ``column``."""
        key = column_name(column) + "/all_positive"
        known = self._gathered.get(key)
        if known is None:
            # Positive in every row of the snapshot (the usual answer, kept by the store) covers
            # every subset; otherwise this subset's rows decide.
            known = self._gathered[key] = self.columns.all_positive(column) or bool(
                (self.gather(column) > 0).all()
            )
        return bool(known)


def consecutive_subset(columns: ColumnStore, positions: IntArray, first: int) -> NodeSubset:
    """``NodeSubset(columns, positions)`` for positions known to be ``first, first + 1, ...`` round
    the end of the snapshot (a window of the Filter loop, or the nodes of one that all passed): its
    gathers are then slices of the columns (read-only views) rather than fancy-indexed copies."""
    subset = NodeSubset(columns, positions)
    subset._span = first
    return subset


def as_subset(nodes: Sequence[NodeInfo]) -> NodeSubset | None:
    """``nodes`` if it is a NodeSubset (columns available), else None (per-node path)."""
    return nodes if isinstance(nodes, NodeSubset) else None
