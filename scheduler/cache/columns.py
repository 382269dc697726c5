"""The snapshot's node columns: the arrays plugins declared (``scheduler.framework.columns``), kept
aligned with ``Snapshot.node_infos()`` and updated row by row as nodes change.

Besides the declared columns it holds the node-label codes, a core node fact every selector-like
plugin reads: built per label key on first use, then kept up to date with the rest.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from scheduler.framework.columns import (
    NAME_KEY,
    ColumnConflictError,
    ColumnSpec,
    IntArray,
    InternedColumn,
    NodeColumn,
    column_name,
    reads_pods,
)
from scheduler.framework.types import NodeInfo

_T = TypeVar("_T")


class _Vocabulary:
    """Codes of an interned column's values: ``values[code]`` is the value first seen with that code."""

    __slots__ = ("codes", "key", "values")

    def __init__(self, key: Callable[[Any], Hashable] | None) -> None:
        self.key = key
        self.codes: dict[Hashable, int] = {}
        self.values: list[Any] = [None]

    def code(self, value: Any) -> int:
        if value is None:
            return 0
        key = value if self.key is None else self.key(value)
        code = self.codes.get(key)
        if code is None:
            code = self.codes[key] = len(self.values)
            self.values.append(value)
        return code


# At most this many row-count columns and tallies are kept; the least recently used goes first.
MAX_DERIVED = 64


class _RowCounts:
    """One ``row_counts`` column: ``count(info)`` per row, current up to ``seen`` in the dirty log."""

    __slots__ = ("array", "count", "seen")

    def __init__(self, array: IntArray, count: Callable[[NodeInfo], int], seen: int) -> None:
        self.array = array
        self.count = count
        self.seen = seen


class RowTally:
    """Per row, a small multiset of facts derived from the row's NodeInfo (``tally(info)``), with
    totals over all rows and, on demand, one column per fact. Read through ``NodeColumns.row_tally``,
    which brings it up to date first."""

    __slots__ = ("_columns", "rows", "seen", "tally", "totals")

    def __init__(
        self, infos: Sequence[NodeInfo], tally: Callable[[NodeInfo], Mapping[Hashable, int]]
    ) -> None:
        self.tally = tally
        self.rows: list[Mapping[Hashable, int]] = [tally(info) for info in infos]
        self.totals: dict[Hashable, int] = {}
        for row in self.rows:
            for fact, number in row.items():
                self.totals[fact] = self.totals.get(fact, 0) + number
        self._columns: dict[Hashable, IntArray] = {}
        self.seen = 0

    def _update(self, position: int, info: NodeInfo) -> None:
        old, new = self.rows[position], self.tally(info)
        if old is new or (not old and not new):
            return
        self.rows[position] = new
        totals = self.totals
        for fact, number in old.items():
            left = totals[fact] - number
            if left:
                totals[fact] = left
            else:
                del totals[fact]
        for fact, number in new.items():
            totals[fact] = totals.get(fact, 0) + number
        for fact, column in self._columns.items():
            column[position] = new.get(fact, 0)
        # Columns of facts no row has any more are dropped rather than kept at zero.
        for fact in [fact for fact in self._columns if fact not in totals]:
            del self._columns[fact]

    def column(self, fact: Hashable) -> IntArray:
        """Per row, the number of ``fact`` in the row's tally (read-only)."""
        column = self._columns.get(fact)
        if column is None:
            column = np.fromiter(
                (row.get(fact, 0) for row in self.rows), dtype=np.int64, count=len(self.rows)
            )
            if fact in self.totals:
                self._columns[fact] = column
        return column


# Per declared column, what ``set`` does for one row: (name, array, value-or-code of a NodeInfo,
# counted, the dtype's range for an integer column or None).
_RowUpdate = tuple[str, npt.NDArray[Any], Callable[[NodeInfo], Any], bool, tuple[int, int] | None]


def _int_range(dtype: type[np.generic]) -> tuple[int, int] | None:
    """The range of an integer ``dtype`` (None for other dtypes). Amounts are Python ints and the API
    server accepts quantities far past int64 (a pod created with ``nodeName`` and ``cpu: 1e100``, an
    odd kubelet's allocatable): unclamped, one such node made every scheduling cycle raise
    OverflowError. Saturated, a node holding such a pod simply has no room left. Values are clamped
    only when numpy refuses one (OverflowError), so the common case pays no clamping call."""
    if not np.issubdtype(dtype, np.integer):
        return None
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def _clamp(value: Any, bounds: tuple[int, int]) -> Any:
    low, high = bounds
    return value if low <= value <= high else max(low, min(high, value))


class NodeColumns:
    """One row per snapshot position; ``infos`` holds the NodeInfo of each row. Implements the
    framework's ``ColumnStore``: ``array``, ``distinct``, ``nonzero_rows``, ``label_codes``."""

    __slots__ = (
        "_arrays",
        "_derived",
        "_dirty",
        "_dirty_start",
        "_label_codes",
        "_label_memo",
        "_label_values",
        "_label_vocabulary",
        "_last_required",
        "_nonzero",
        "_pod_columns",
        "_pod_row_updates",
        "_positive",
        "_row_updates",
        "_specs",
        "_vocabularies",
        "infos",
    )

    def __init__(self, infos: Sequence[NodeInfo], specs: Sequence[ColumnSpec] = ()) -> None:
        self.infos = np.empty(len(infos), dtype=object)
        for position, info in enumerate(infos):
            self.infos[position] = info
        self._specs: dict[str, ColumnSpec] = {}
        self._arrays: dict[str, npt.NDArray[Any]] = {}
        self._nonzero: dict[str, int] = {}
        # Columns known to be positive in every row (asked by ``all_positive``); a set() that writes
        # a value <= 0 into one forgets it.
        self._positive: set[str] = set()
        self._vocabularies: dict[str, _Vocabulary] = {}
        self._row_updates: list[_RowUpdate] = []
        # Those of the columns that read the node's pods (``reads_pods``): all ``set(pods_only=True)``
        # recomputes.
        self._pod_row_updates: list[_RowUpdate] = []
        self._pod_columns: set[str] = set()
        self._last_required: Sequence[ColumnSpec] | None = None
        # Label key -> code per row (0: no such label), built on first use; value -> code per key.
        self._label_codes: dict[str, IntArray] = {}
        self._label_vocabulary: dict[str, dict[str, int]] = {}
        self._label_values: dict[str, list[str | None]] = {}
        # Values derived from label codes alone (``label_memo``); dropped when a row's code changes.
        self._label_memo: dict[Hashable, Any] = {}
        # Row counts and tallies (plugin-keyed, built on first use) and the rows set since: positions
        # in ``_dirty``, the first of which is the ``_dirty_start``-th set() overall.
        self._derived: OrderedDict[Hashable, _RowCounts | RowTally] = OrderedDict()
        self._dirty: list[int] = []
        self._dirty_start = 0
        self.require(specs)

    def __len__(self) -> int:
        return len(self.infos)

    @property
    def specs(self) -> tuple[ColumnSpec, ...]:
        """The declared columns held, in the order they were added."""
        return tuple(self._specs.values())

    def has(self, column: ColumnSpec | str) -> bool:
        return column_name(column) in self._arrays

    def require(self, specs: Sequence[ColumnSpec]) -> None:
        """Builds the columns of ``specs`` not held yet. Cheap when called again with the same specs
        (the scheduling cycle asks for its profile's columns every time)."""
        if specs is self._last_required:
            return
        for spec in specs:
            known = self._specs.get(spec.name)
            if known is None:
                self._add(spec)
            elif known is not spec and known != spec:
                raise ColumnConflictError(f"node column {spec.name!r} is declared twice, differently")
        self._last_required = specs

    def _add(self, spec: ColumnSpec) -> None:
        size = len(self.infos)
        infos = self.infos.tolist()
        compute: Callable[[NodeInfo], Any]
        bounds: tuple[int, int] | None = None
        if isinstance(spec, NodeColumn):
            compute = spec.compute
            bounds = _int_range(spec.dtype)
            try:
                array = np.fromiter(map(compute, infos), dtype=spec.dtype, count=size)
            except OverflowError:
                if bounds is None:
                    raise
                limits = bounds
                array = np.fromiter(
                    (_clamp(compute(info), limits) for info in infos), dtype=spec.dtype, count=size
                )
            counted = spec.count_nonzero
        else:
            vocabulary = self._vocabularies[spec.name] = _Vocabulary(spec.key)
            value_of, code_of = spec.compute, vocabulary.code

            def compute(info: NodeInfo) -> int:
                return code_of(value_of(info))

            array = np.fromiter(map(compute, infos), dtype=np.int64, count=size)
            counted = True
        if counted:
            self._nonzero[spec.name] = int(np.count_nonzero(array))
        self._specs[spec.name] = spec
        self._arrays[spec.name] = array
        update = (spec.name, array, compute, counted, bounds)
        self._row_updates.append(update)
        if reads_pods(spec):
            self._pod_row_updates.append(update)
            self._pod_columns.add(spec.name)

    def set(self, position: int, info: NodeInfo, *, pods_only: bool = False) -> None:
        """Row ``position`` now describes ``info``. ``pods_only``: the caller knows ``info`` differs
        from the row's NodeInfo only in its pods (same Node object), so the columns declared not to
        read pods (``reads_pods=False``) and the label codes keep their values."""
        self.infos[position] = info
        nonzero = self._nonzero
        for name, array, compute, counted, bounds in (
            self._pod_row_updates if pods_only else self._row_updates
        ):
            value = compute(info)
            if counted:
                nonzero[name] += bool(value) - bool(array[position])
            try:
                array[position] = value
            except OverflowError:
                if bounds is None:
                    raise
                array[position] = _clamp(value, bounds)
        if not pods_only:
            for key, codes in self._label_codes.items():
                code = self._code(key, _label(info, key))
                if codes[position] != code:
                    codes[position] = code
                    self._label_memo.clear()
        positive = self._positive
        if positive and not (pods_only and positive.isdisjoint(self._pod_columns)):
            arrays = self._arrays
            self._positive = {name for name in positive if arrays[name][position] > 0}
        if self._derived:
            dirty = self._dirty
            dirty.append(position)
            if len(dirty) > max(256, len(self.infos)):
                # Whatever is this far behind is rebuilt in full on its next use.
                self._dirty_start += len(dirty)
                dirty.clear()

    # -- per-row facts about the pods on each node ---------------------------------------------------

    def _changed_since(self, seen: int) -> frozenset[int] | None:
        """The rows set since the ``seen``-th set() (None: too long ago, rebuild everything)."""
        if seen < self._dirty_start:
            return None
        return frozenset(self._dirty[seen - self._dirty_start :])

    def _remember(self, key: Hashable, derived: _RowCounts | RowTally) -> None:
        self._derived[key] = derived
        if len(self._derived) > MAX_DERIVED:
            self._derived.popitem(last=False)

    def row_counts(self, key: Hashable, count: Callable[[NodeInfo], int]) -> IntArray:
        """Per row, ``count(info)``: typically how many of the node's pods match something. Built on
        first use for ``key`` (which must name what ``count`` computes), then recounted only for the
        rows changed since, so a cycle pays for the nodes that changed, not for every pod. Read-only."""
        now = self._dirty_start + len(self._dirty)
        found = self._derived.get(key)
        if isinstance(found, _RowCounts):
            self._derived.move_to_end(key)
            if found.seen != now:
                changed = self._changed_since(found.seen)
                if changed is None:
                    found.array = np.fromiter(map(found.count, self.infos), dtype=np.int64, count=len(self))
                else:
                    array, count_of, infos = found.array, found.count, self.infos
                    for position in changed:
                        array[position] = count_of(infos[position])
                found.seen = now
            return found.array
        array = np.fromiter(map(count, self.infos), dtype=np.int64, count=len(self))
        self._remember(key, _RowCounts(array, count, now))
        return array

    def row_tally(self, key: Hashable, tally: Callable[[NodeInfo], Mapping[Hashable, int]]) -> RowTally:
        """Per row, ``tally(info)`` (a small mapping fact -> number, typically the distinct terms the
        node's pods carry), with totals over all rows kept up to date as rows change."""
        now = self._dirty_start + len(self._dirty)
        found = self._derived.get(key)
        if isinstance(found, RowTally):
            self._derived.move_to_end(key)
            if found.seen != now:
                changed = self._changed_since(found.seen)
                if changed is None:
                    found = RowTally(self.infos.tolist(), found.tally)
                    self._derived[key] = found
                else:
                    infos = self.infos
                    for position in changed:
                        found._update(position, infos[position])
                found.seen = now
            return found
        made = RowTally(self.infos.tolist(), tally)
        made.seen = now
        self._remember(key, made)
        return made

    # -- ColumnStore ---------------------------------------------------------------------------------

    def array(self, column: ColumnSpec | str) -> npt.NDArray[Any]:
        """The whole column (codes, for an interned one), one entry per row."""
        name = column_name(column)
        array = self._arrays.get(name)
        if array is None:
            raise KeyError(
                f"node column {name!r} is not built: no enabled plugin declares it in node_columns()"
            )
        return array

    def distinct(self, column: InternedColumn | str) -> Sequence[Any]:
        """An interned column's kept value per code (index 0: None)."""
        self.array(column)
        return self._vocabularies[column_name(column)].values

    def all_positive(self, column: ColumnSpec | str) -> bool:
        """Whether every row holds a value > 0 (a capacity every node has). A true answer is kept
        until a row is set to a value <= 0, so a cycle asking about the same few columns pays a
        set lookup rather than a pass over the rows."""
        name = column_name(column)
        if name in self._positive:
            return True
        if bool((self.array(name) > 0).all()):
            self._positive.add(name)
            return True
        return False

    def nonzero_rows(self, column: ColumnSpec | str) -> int:
        """The number of rows with a non-zero value (code), for counted and interned columns."""
        name = column_name(column)
        count = self._nonzero.get(name)
        if count is None:
            self.array(name)
            raise KeyError(f"node column {name!r} does not count its non-zero rows (count_nonzero=False)")
        return count

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

    def label_memo(self, key: Hashable, build: Callable[[], _T]) -> _T:
        """``build()``, kept until some row's code of a label key changes: for facts that depend on the
        nodes' labels only (which nodes have a topology key, their codes), not on their pods. ``key``
        must name what ``build`` computes; arrays built must be treated as read-only."""
        memo = self._label_memo
        if key in memo:
            found: _T = memo[key]
            return found
        if len(memo) >= MAX_DERIVED:
            memo.clear()
        made = memo[key] = build()
        return made

    def label_code(self, key: str, value: str) -> int:
        """The code of ``value`` for label ``key``; -1 if no node has that value (matches no row)."""
        self.label_codes(key)
        return self._label_vocabulary[key].get(value, -1)

    def label_values(self, key: str) -> Sequence[str | None]:
        """The value of each code of label ``key`` (index 0: None, no such label). Read-only."""
        self.label_codes(key)
        vocabulary = self._label_vocabulary[key]
        values = self._label_values.get(key)
        if values is None or len(values) != len(vocabulary) + 1:
            values = [None] * (len(vocabulary) + 1)
            for value, code in vocabulary.items():
                values[code] = value
            self._label_values[key] = values
        return values


def _label(info: NodeInfo, key: str) -> str | None:
    if key == NAME_KEY:
        return info.name
    return info.labels.get(key)
