"""DynamicResources' Filter for a window of nodes at once: the allocator's answer, counted with numpy.

The allocator (``allocator.py``) searches one node at a time, device by device; it stays the reference,
and Filter falls back to it wherever this module cannot be sure of giving its answer.

The common claim shape (scheduler_perf's DRA cases, a GPU per pod) asks only whether a node has
enough free devices of a kind. A pod's claims compile once, at PreFilter, into a :class:`Demand`: per
*signature* (device class, request selectors, tolerations) the number of devices wanted. The devices
of node-local ResourceSlices are laid out once per slice set in a :class:`DeviceTable` (in the order
the allocator visits them on their node), and each signature's usable devices (selectors matched, not
a kind the allocator leaves alone, no untolerated taint) are a boolean column computed once per
signature and slice set, so a CEL selector runs once per device, not per node or pod. Per pod the
free devices are one mask (kept up to date from the set of allocated devices), and the devices a node
can give each signature are one ``bincount``.

Why counting is exact: the allocator's search backtracks over every device, so it finds an allocation
whenever one exists. When the signatures' free usable devices on a node are, pair by pair, either the
same set or disjoint sets, an allocation exists exactly when each such set holds the devices of every
request drawing on it. Where two sets overlap partly, or a selector fails at run time on a free device
(the allocator's error depends on the order it meets devices), or a pool of the node is incomplete or
invalid, that node goes to the allocator. Claims with constraints, ``firstAvailable``, ``All``,
``adminAccess``, and slices that select nodes by label or serve all nodes, go to the allocator whole.
One difference, in the fast path's favour: it answers at once where the allocator's exhaustive search
of a node that cannot fit could run into ``filterTimeout``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from scheduler.framework import IntArray
from scheduler.framework.columns import BoolArray
from scheduler.framework.objects_resource import (
    claim_devices,
    device_class_spec,
    selector_expression,
    slice_pool,
    slice_spec,
)
from scheduler.plugins.dynamicresources.allocator import (
    ALLOCATION_RESULTS_MAX_SIZE,
    DeviceID,
    DeviceMatchCache,
    NodeView,
    gather_pools,
    taint_prevents_allocation,
)
from scheduler.plugins.dynamicresources.cel import CelError
from scheduler.plugins.dynamicresources.claims import AllocatedDevicesTracker

Obj = Mapping[str, Any]

# Where a node stands in a DeviceTable: its row, or one of these.
NO_DEVICES = -1  # no node-local slice names it: it has no devices
TO_ALLOCATOR = -2  # a pool of the node is incomplete or invalid: the allocator decides


@dataclass(frozen=True, slots=True)
class Signature:
    """What makes a device usable for a request: its class (by identity, held), the request's own
    selectors and its tolerations; ``key`` says it as a hashable."""

    class_: Obj
    selectors: tuple[str, ...]
    tolerations: tuple[Obj, ...]
    key: Hashable

    @classmethod
    def of(cls, class_: Obj, selectors: tuple[str, ...], tolerations: tuple[Obj, ...]) -> Signature:
        key = (id(class_), selectors, orjson.dumps(tolerations, option=orjson.OPT_SORT_KEYS))
        return cls(class_, selectors, tolerations, key)


@dataclass(frozen=True, slots=True)
class Demand:
    """A pod's unallocated claims as devices wanted per signature (one entry per distinct signature)."""

    signatures: tuple[Signature, ...]
    counts: tuple[int, ...]


def compile_demand(
    claims: Sequence[Obj], class_of: Callable[[str], Obj | None], matches: DeviceMatchCache
) -> Demand | None:
    """The claims' demand, or None when the allocator must judge them (a shape counting cannot
    answer, or anything the allocator would refuse: its error is the answer then)."""
    by_key: dict[Hashable, int] = {}
    signatures: list[Signature] = []
    counts: list[int] = []
    for claim in claims:
        devices = claim_devices(claim)
        if devices.get("constraints"):
            return None
        per_claim = 0
        for raw in devices.get("requests") or ():
            exactly = raw.get("exactly")
            if exactly is None or raw.get("firstAvailable"):
                return None
            if exactly.get("adminAccess") or exactly.get("derivedAttributes"):
                return None
            if (exactly.get("allocationMode") or "ExactCount") != "ExactCount":
                return None
            raw_count = exactly.get("count")
            count = 1 if raw_count is None else raw_count
            if not isinstance(count, int) or count < 0:
                return None
            class_name = exactly.get("deviceClassName") or ""
            class_ = class_of(class_name) if class_name else None
            if class_ is None:
                return None
            selectors = tuple(selector_expression(s) for s in exactly.get("selectors") or ())
            class_selectors = [
                selector_expression(s) for s in device_class_spec(class_).get("selectors") or ()
            ]
            for expression in (*class_selectors, *selectors):
                if not expression or matches.cel.get_or_compile(expression).program is None:
                    return None
            per_claim += count
            signature = Signature.of(class_, selectors, tuple(exactly.get("tolerations") or ()))
            key = signature.key
            index = by_key.get(key)
            if index is None:
                by_key[key] = len(signatures)
                signatures.append(signature)
                counts.append(count)
            else:
                counts[index] += count
        if per_claim > ALLOCATION_RESULTS_MAX_SIZE:
            return None
    return Demand(tuple(signatures), tuple(counts))


class DeviceTable:
    """The devices of node-local slices, one row per device, grouped by node in the allocator's order.

    Built for one list of slices (the same objects: the informer replaces a changed slice). ``usable``
    is False when some slice does not name its node (``allNodes``, a node selector, per-device node
    selection): then nothing here is used.
    """

    def __init__(self, slices: Sequence[Obj]) -> None:
        self.slices = slices  # held: the key names their identities
        self.key = tuple(map(id, slices))
        self.usable = True
        self.node_rows: dict[str, int] = {}
        ids: list[DeviceID] = []
        devices: list[tuple[Obj, Obj, int]] = []
        rows: list[int] = []
        by_pool: dict[tuple[str, str], list[Obj]] = {}
        pools_of_node: dict[str, set[tuple[str, str]]] = {}
        for slice_ in slices:
            spec = slice_spec(slice_)
            node_name = spec.get("nodeName") or ""
            if (
                not node_name
                or spec.get("allNodes")
                or spec.get("nodeSelector") is not None
                or spec.get("perDeviceNodeSelection")
            ):
                self.usable = False
                break
            key = (spec.get("driver", ""), slice_pool(slice_).get("name", ""))
            by_pool.setdefault(key, []).append(slice_)
            pools_of_node.setdefault(node_name, set()).add(key)
        rows_count = 0
        if self.usable:
            for node_name, keys in pools_of_node.items():
                # Only the slices of the node's pools can matter for it (completeness is per pool).
                relevant = [s for key in sorted(keys) for s in by_pool[key]]
                pools = gather_pools(relevant, NodeView(node_name, {}))
                if any(p.incomplete or p.invalid for p in pools):
                    self.node_rows[node_name] = TO_ALLOCATOR
                    continue
                row = self.node_rows[node_name] = rows_count
                rows_count += 1
                for pool in pools:
                    for slice_ in pool.slices:
                        for index, device in enumerate(slice_spec(slice_).get("devices") or ()):
                            ids.append((pool.driver, pool.pool, device.get("name", "")))
                            devices.append((device, slice_, index))
                            rows.append(row)
        # Rows are numbered densely over the nodes the table judges; TO_ALLOCATOR nodes have none.
        self.rows_count = rows_count
        self.ids = ids
        self.devices = devices
        self.row_of_device: IntArray = np.asarray(rows, dtype=np.int64)
        self.index_of: dict[DeviceID, int] = {d: i for i, d in enumerate(ids)}
        self._usable: dict[Hashable, tuple[Signature, BoolArray, BoolArray]] = {}
        self._in_use: BoolArray = np.zeros(len(ids), dtype=np.bool_)
        self._allocated: set[DeviceID] = set()
        # Following a tracker: which one, and where in its log.
        self._tracker: AllocatedDevicesTracker | None = None
        self._cursor = (0, 0)

    def usable_for(self, signature: Signature, matches: DeviceMatchCache) -> tuple[BoolArray, BoolArray]:
        """Per device: usable for the signature, and whether one of its selectors failed on it."""
        key = signature.key
        found = self._usable.get(key)
        if found is None:
            found = (signature, *self._judge(signature, matches))
            self._usable[key] = found
        return found[1], found[2]

    def _judge(self, signature: Signature, matches: DeviceMatchCache) -> tuple[BoolArray, BoolArray]:
        expressions = [
            selector_expression(s) for s in device_class_spec(signature.class_).get("selectors") or ()
        ]
        expressions += signature.selectors
        usable = np.zeros(len(self.ids), dtype=np.bool_)
        failed = np.zeros(len(self.ids), dtype=np.bool_)
        for i, (device, slice_, index) in enumerate(self.devices):
            # The allocator's order: kinds it never selects, selectors (class first), then taints.
            if device.get("bindingConditions") or device.get("consumesCounters"):
                continue
            driver = self.ids[i][0]
            ok = True
            for expression in expressions:
                try:
                    if not matches.matches(expression, slice_, index, driver):
                        ok = False
                        break
                except CelError:
                    failed[i] = True
                    ok = False
                    break
            if ok and not taint_prevents_allocation(device, signature.tolerations):
                usable[i] = True
        return usable, failed

    def free(self, allocated: set[DeviceID]) -> BoolArray:
        """Per device: not in ``allocated`` (kept from the last call: only the difference is read)."""
        in_use = self._in_use
        if self._tracker is not None:  # the state followed a tracker until now: start afresh
            in_use[:] = False
            self._tracker, self._allocated = None, set()
        index_of = self.index_of
        for device_id in allocated ^ self._allocated:
            i = index_of.get(device_id)
            if i is not None:
                in_use[i] = device_id in allocated
        self._allocated = allocated
        return ~in_use

    def free_following(self, tracker: AllocatedDevicesTracker, in_flight: Iterable[DeviceID]) -> BoolArray:
        """Per device: neither held by an allocated claim (as ``tracker`` says: only its changes since
        the last call are read) nor by an allocation ``in_flight``."""
        in_use = self._in_use
        index_of = self.index_of
        changes = tracker.changes(*self._cursor) if self._tracker is tracker else None
        if changes is None:
            in_use[:] = False
            for device_id in tracker.held:
                i = index_of.get(device_id)
                if i is not None:
                    in_use[i] = True
            self._tracker, self._cursor, self._allocated = tracker, tracker.cursor(), set()
        else:
            for device_id, held in changes[0]:
                i = index_of.get(device_id)
                if i is not None:
                    in_use[i] = held
            self._cursor = (self._cursor[0], changes[1])
        free = ~in_use
        for device_id in in_flight:
            i = index_of.get(device_id)
            if i is not None:
                free[i] = False
        return free


@dataclass(slots=True)
class NodeVerdicts:
    """Per row of a DeviceTable: the claims fit, or the allocator must decide."""

    fits: BoolArray
    to_allocator: BoolArray
    # Whether a node without devices fits (every count is 0).
    fits_empty: bool


def judge_rows(
    table: DeviceTable, demand: Demand, free: BoolArray, matches: DeviceMatchCache
) -> NodeVerdicts:
    rows, n = table.row_of_device, table.rows_count
    wanted = np.asarray(demand.counts, dtype=np.int64)
    usable: list[BoolArray] = []
    have: list[IntArray] = []
    to_allocator = np.zeros(n, dtype=np.bool_)
    for signature in demand.signatures:
        ok, failed = table.usable_for(signature, matches)
        mine = ok & free
        usable.append(mine)
        have.append(np.bincount(rows[mine], minlength=n))
        errors = failed & free
        if errors.any():
            to_allocator |= np.bincount(rows[errors], minlength=n) > 0
    need = [np.full(n, wanted[k], dtype=np.int64) for k in range(len(usable))]
    for a in range(len(usable)):
        for b in range(a + 1, len(usable)):
            overlap = np.bincount(rows[usable[a] & usable[b]], minlength=n)
            same = (overlap == have[a]) & (overlap == have[b])
            to_allocator |= ~same & (overlap != 0)
            # The same devices serve both: each must cover the other's requests too.
            need[a] += np.where(same, wanted[b], 0)
            need[b] += np.where(same, wanted[a], 0)
    fits = np.ones(n, dtype=np.bool_)
    for k in range(len(usable)):
        fits &= have[k] >= need[k]
    return NodeVerdicts(fits, to_allocator, bool((wanted == 0).all()))


class FastFilter:
    """One pod's demand against a DeviceTable and its free devices (``DeviceTable.free``)."""

    def __init__(
        self, table: DeviceTable, demand: Demand, free: BoolArray, matches: DeviceMatchCache
    ) -> None:
        self.table = table
        self.verdicts = judge_rows(table, demand, free, matches)

    def positions(self, names: Sequence[str]) -> tuple[BoolArray, BoolArray]:
        """For nodes by name: whether the claims fit, and whether the allocator must decide instead."""
        node_rows = self.table.node_rows
        codes = np.fromiter(
            (node_rows.get(name, NO_DEVICES) for name in names), dtype=np.int64, count=len(names)
        )
        verdicts = self.verdicts
        with_row = codes >= 0
        fits = np.full(len(names), verdicts.fits_empty, dtype=np.bool_)
        to_allocator = codes == TO_ALLOCATOR
        picked = codes[with_row]
        fits[with_row] = verdicts.fits[picked]
        to_allocator[with_row] = verdicts.to_allocator[picked]
        return fits, to_allocator
