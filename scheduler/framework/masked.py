"""Filter results of batch plugins: a pass/fail mask, with the status of a failed node made on demand.

The Filter loop reads ``ok`` directly and builds statuses only for the nodes it reports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import overload

import numpy as np

from scheduler.framework.columns import BoolArray
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo


class MaskedStatuses(Sequence["Status | None"]):
    """A batch Filter result: ``ok[i]`` says node i passed; ``status_of(i)`` makes a failed one's."""

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


def rejection_lookup(statuses: Sequence[Status | None]) -> Callable[[int], Status | None]:
    """``statuses[index]`` for indices known to have failed: a MaskedStatuses's maker directly,
    without indexing's checks (the Filter loop reports every rejected node of a window)."""
    if isinstance(statuses, MaskedStatuses):
        return statuses._status_of
    return statuses.__getitem__


def _never(index: int) -> Status:
    raise IndexError(index)


# Read-only all-true masks by length: a batch plugin that passes every node (the usual answer of
# NodeUnschedulable, TaintToleration, ...) would otherwise allocate one per window of every cycle.
_ALL_TRUE: dict[int, BoolArray] = {}
_ALL_TRUE_MAX = 256


def all_pass(count: int) -> MaskedStatuses:
    ok = _ALL_TRUE.get(count)
    if ok is None:
        if len(_ALL_TRUE) >= _ALL_TRUE_MAX:
            _ALL_TRUE.clear()
        ok = np.ones(count, dtype=np.bool_)
        ok.flags.writeable = False
        _ALL_TRUE[count] = ok
    return MaskedStatuses(ok, _never, all_ok=True)


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
