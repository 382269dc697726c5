"""The structured-parameters device allocator (``k8s.io/dynamic-resource-allocation/structured``).

A port of ``structured/internal/stable/allocator_stable.go`` and ``pools_stable.go`` (v0.37.2) over raw
JSON objects: for one node, an exhaustive depth-first search that picks devices for every request of
every claim, in claim, request and pool/slice/device order, checking constraints as it goes, and returns
the first full solution as ``status.allocation`` dicts (``AllocationResult``), or None when the claims do
not fit on the node.

Supported as upstream: ``exactly`` requests with ``ExactCount`` and ``All``, ``firstAvailable``
(prioritized lists), CEL selectors of the class and of the request, ``matchAttribute`` constraints,
``adminAccess`` (a device in use may be handed out again, not twice to one claim), device taints with
request tolerations (NoSchedule/NoExecute), node-local, ``nodeSelector``, ``allNodes`` and
``perDeviceNodeSelection`` slices, pool generations and incomplete/invalid pools, class and claim
config in the result, the result's node selector.

Not supported, conservatively: devices that consume shared counters (partitionable devices) and
devices with ``bindingConditions`` are never selected, and capacity sharing (consumable capacity) is
not implemented; such devices stay free rather than being double-booked. See docs/dra.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.objects import meta_namespace_key, name_of, object_meta, spec_of
from scheduler.framework.objects_resource import (
    claim_devices,
    device_class_spec,
    selector_expression,
    slice_pool,
    slice_spec,
)
from scheduler.plugins.dynamicresources.cel import CelCache, CelError, device_activation
from scheduler.util.nodeselector import SelectorError, parse_node_selector

Obj = Mapping[str, Any]
DeviceID = tuple[str, str, str]  # (driver, pool, device)

# resourceapi.AllocationResultsMaxSize
ALLOCATION_RESULTS_MAX_SIZE = 32


def enhance_runtime_error(message: str) -> str:
    """``cel.EnhanceRuntimeError`` (v0.37): a "no such key" error gets a hint about optional access."""
    if "no such key:" in message:
        return (
            f"{message}. consider using CEL optional chaining (.? followed by orValue()) or guarding the "
            "check with has() for optional fields"
        )
    return message


class AllocationError(Exception):
    """Allocation cannot work for these claims at all (upstream returns an error: Filter's status Error)."""


class FailedOnNode(AllocationError):
    """Not fatal: other nodes may still work (upstream's ErrFailedAllocationOnNode, Unschedulable)."""


class AllocationTimeout(AllocationError):
    """filterTimeout elapsed."""


# How upstream's errors name a claim (klog.KObj).
_klog = meta_namespace_key


def device_id_str(device_id: DeviceID) -> str:
    return "/".join(device_id)


# --- nodes ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    labels: Mapping[str, str]


_SELECTOR_CACHE: dict[int, Any] = {}


def node_matches(node: NodeView, node_name: str, all_nodes: bool, node_selector: Obj | None) -> bool:
    """``NodeMatches`` of pools_stable.go. A selector that does not parse raises AllocationError."""
    if node_name:
        return node.name == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        try:
            selector = parse_node_selector(node_selector, "nodeSelector")
        except SelectorError as err:
            raise AllocationError(f"failed to parse node selector: {err}") from err
        return selector.matches(node.labels, node.name)
    return False


# --- pools ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Pool:
    driver: str
    pool: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[Obj] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.pool}"


def _pool_key(slice_: Obj) -> tuple[str, str]:
    return slice_spec(slice_).get("driver", ""), slice_pool(slice_).get("name", "")


def _generation(slice_: Obj) -> int:
    return int(slice_pool(slice_).get("generation") or 0)


def _slice_count(slice_: Obj) -> int:
    return int(slice_pool(slice_).get("resourceSliceCount") or 0)


def uses_compatibility_groups(slice_: Obj) -> bool:
    """``sliceUsesCompatibilityGroups`` (v0.37): a device declares compatibility groups on one of its
    counter consumptions (DRADeviceCompatibilityGroups, alpha and off)."""
    return any(
        consumption.get("compatibilityGroups")
        for device in slice_spec(slice_).get("devices") or ()
        for consumption in device.get("consumesCounters") or ()
    )


def gather_pools(slices: Sequence[Obj], node: NodeView) -> list[Pool]:
    """The pools with slices for ``node`` (``GatherPools``), newest generation only.

    Slices with shared counters (partitionable devices) are not supported and are left out. As
    upstream while DRADeviceCompatibilityGroups is off, a slice whose devices declare compatibility
    groups is ignored and does not count towards its pool's completeness, so the pool is incomplete.
    """
    pools: dict[tuple[str, str], list[Obj]] = {}
    for slice_ in slices:
        spec = slice_spec(slice_)
        if spec.get("sharedCounters") or uses_compatibility_groups(slice_):
            continue
        node_name, all_nodes, selector = spec.get("nodeName") or "", bool(spec.get("allNodes")), None
        selector = spec.get("nodeSelector")
        if node_name or all_nodes or selector is not None:
            if not node_matches(node, node_name, all_nodes, selector):
                continue
        elif spec.get("perDeviceNodeSelection"):
            if not any(
                node_matches(node, d.get("nodeName") or "", bool(d.get("allNodes")), d.get("nodeSelector"))
                for d in spec.get("devices") or ()
            ):
                continue
        else:
            continue
        key = _pool_key(slice_)
        existing = pools.get(key)
        if existing is None or _generation(slice_) > _generation(existing[0]):
            pools[key] = [slice_]
        elif _generation(slice_) == _generation(existing[0]):
            existing.append(slice_)

    result: list[Pool] = []
    for (driver, pool_name), pool_slices in pools.items():
        generation = _generation(pool_slices[0])
        if len(pool_slices) != _slice_count(pool_slices[0]):
            # Some slices of the pool are not for this node, or the driver is still publishing.
            others = [s for s in slices if _pool_key(s) == (driver, pool_name)]
            if any(_generation(s) > generation for s in others):
                continue  # obsolete: a newer generation exists (for other nodes)
            same = [s for s in others if _generation(s) == generation and not uses_compatibility_groups(s)]
            if len(same) != _slice_count(pool_slices[0]):
                result.append(Pool(driver, pool_name, incomplete=True))
                continue
        names: set[str] = set()
        pool = Pool(driver, pool_name, slices=pool_slices)
        for slice_ in pool_slices:
            for device in slice_spec(slice_).get("devices") or ():
                name = device.get("name", "")
                if name in names:
                    pool.invalid, pool.invalid_reason = True, f"duplicate device name {name}"
                names.add(name)
        if pool.invalid:
            pool.slices = []
        result.append(pool)
    # Go iterates a map here (random order); a stable order makes py-scheduler deterministic.
    result.sort(key=lambda p: (p.driver, p.pool))
    return result


def apply_taint_rules(slice_: Obj, rules: Sequence[Obj]) -> Obj:
    """``Tracker.applyPatches`` (``resourceslice/tracker``, v0.37.2): each DeviceTaintRule adds its
    taint to the devices of ``slice_`` its selector matches (driver, pool and device name; all unset
    matches every device, no selector none). The slice is copied only when a rule applies."""
    spec = slice_spec(slice_)
    pool = slice_pool(slice_).get("name", "")
    devices: list[Any] | None = None
    for rule in rules:
        rule_spec = spec_of(rule)
        selector = rule_spec.get("deviceSelector")
        if not isinstance(selector, Mapping):
            continue
        if selector.get("driver") is not None and selector.get("driver") != spec.get("driver"):
            continue
        if selector.get("pool") is not None and selector.get("pool") != pool:
            continue
        name = selector.get("device")
        for index, device in enumerate(spec.get("devices") or ()):
            if name is not None and name != device.get("name"):
                continue
            if devices is None:
                devices = list(spec.get("devices") or ())
            taints = [*(devices[index].get("taints") or ()), rule_spec.get("taint") or {}]
            devices[index] = {**devices[index], "taints": taints}
    if devices is None:
        return slice_
    return {**slice_, "spec": {**spec, "devices": devices}}


class TaintedSlices:
    """The slices as the allocator sees them (``ListPatchedResourceSlices``): with the DeviceTaintRules'
    taints applied, kept while the slices and the rules stay the same objects (so PoolCache, which
    keys on the slices' identities, keeps working)."""

    def __init__(self) -> None:
        self._key: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
        self._held: tuple[Sequence[Obj], Sequence[Obj]] = ((), ())
        self._patched: Sequence[Obj] = ()

    def patched(self, slices: Sequence[Obj], rules: Sequence[Obj]) -> Sequence[Obj]:
        if not rules:
            return slices
        key = (tuple(map(id, slices)), tuple(map(id, rules)))
        if key != self._key:
            self._key, self._held = key, (slices, rules)
            self._patched = [apply_taint_rules(s, rules) for s in slices]
        return self._patched


def _depends_on_labels(slice_: Obj) -> bool:
    """Whether the slice's node matching reads node labels (a node selector, of the slice or a device)."""
    spec = slice_spec(slice_)
    return spec.get("nodeSelector") is not None or bool(spec.get("perDeviceNodeSelection"))


class PoolCache:
    """``gather_pools`` per node name, kept while the slices stay the same objects.

    Every node gathers its pools from all slices, once per node per pod; with the slices unchanged
    between pods (the common case: drivers publish rarely) the answer for a node is the same. The
    informer replaces a changed slice by a new object, so the identities of the listed slices (held
    here, so they cannot be reused) tell whether anything changed. Slices that select nodes by label
    make the answer depend on more than the name: then nothing is cached.
    """

    def __init__(self) -> None:
        self._slices: Sequence[Obj] = ()
        self._key: tuple[int, ...] = ()
        self._by_node: dict[str, list[Pool]] | None = {}

    @property
    def caching(self) -> bool:
        """Whether the last ``pools_for`` answers from the cache (a node's pools keep their identity)."""
        return self._by_node is not None

    def pools_for(self, slices: Sequence[Obj]) -> Callable[[NodeView], list[Pool]]:
        """A ``gather_pools`` over ``slices``, answered from the cache where it can be."""
        key = tuple(map(id, slices))
        if key != self._key:
            self._slices, self._key = slices, key
            self._by_node = None if any(_depends_on_labels(s) for s in slices) else {}
        by_node = self._by_node
        current = self._slices
        if by_node is None:
            return lambda node: gather_pools(current, node)

        def cached(node: NodeView) -> list[Pool]:
            found = by_node.get(node.name)
            if found is None:
                found = by_node[node.name] = gather_pools(current, node)
            return found

        return cached


class AllocationMemo:
    """Allocation results per node for claims of equal specs, while the node's pools and the use of
    their devices stay the same.

    On one node, ``Allocator.allocate`` reads the node's pools (the same list object from a
    PoolCache while the slices are unchanged), which of their devices are in use, the device
    classes and the claims' specs (claim names appear only in errors, which are not kept). Pods of
    one workload ask every node the same; between two of them only the nodes where devices were
    taken change, so a cycle reads most nodes' answers here. Entries hold the pools and classes
    whose identities their keys name, so those identities are not reused while they live. Results
    are shared: read-only, as every allocation result is (PreBind writes a copy).
    """

    MAX_ENTRIES = 16384

    def __init__(self) -> None:
        self._results: dict[Hashable, tuple[Any, list[dict[str, Any]] | None]] = {}
        self._devices: dict[int, tuple[list[Pool], frozenset[DeviceID]]] = {}

    def _device_ids(self, pools: list[Pool]) -> frozenset[DeviceID]:
        entry = self._devices.get(id(pools))
        if entry is None:
            ids = frozenset(
                (pool.driver, pool.pool, device.get("name", ""))
                for pool in pools
                for slice_ in pool.slices
                for device in slice_spec(slice_).get("devices") or ()
            )
            entry = self._devices[id(pools)] = (pools, ids)
        return entry[1]

    def key(self, pools: list[Pool], allocated: set[DeviceID], context: Hashable) -> Hashable:
        # Which of the node's devices are in use (a set intersection: no Python loop per device).
        return (id(pools), context, self._device_ids(pools) & allocated)

    def get(self, key: Hashable) -> tuple[Any, list[dict[str, Any]] | None] | None:
        return self._results.get(key)

    def put(self, key: Hashable, held: Any, result: list[dict[str, Any]] | None) -> None:
        if len(self._results) >= self.MAX_ENTRIES:
            self._results.clear()
            self._devices.clear()
        self._results[key] = (held, result)


# --- requests -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Request:
    """One request, or one subrequest of a ``firstAvailable`` list (upstream's requestAccessor)."""

    name: str
    parent: str  # the parent request's name for a subrequest, else ""
    spec: Obj  # the ``exactly`` object or the subrequest
    class_: Obj | None = None
    num_devices: int = 0
    all_devices: list[tuple[DeviceID, Obj, Obj]] | None = None  # for All: (id, device, slice)

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name

    @property
    def class_name(self) -> str:
        return str(self.spec.get("deviceClassName") or "")

    @property
    def mode(self) -> str:
        return str(self.spec.get("allocationMode") or "ExactCount")

    @property
    def count(self) -> int:
        count = self.spec.get("count")
        return 1 if count is None else int(count)

    @property
    def admin_access(self) -> bool:
        return not self.parent and bool(self.spec.get("adminAccess"))

    @property
    def selectors(self) -> Sequence[Obj]:
        return self.spec.get("selectors") or ()

    @property
    def tolerations(self) -> Sequence[Obj]:
        return self.spec.get("tolerations") or ()


@dataclass(slots=True)
class MatchAttribute:
    """``matchAttributeConstraint``: every device of the named requests has the same attribute value."""

    requests: frozenset[str]
    attribute: str
    value: Any = None
    num_devices: int = 0

    def _applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (bool(sub) and f"{request}/{sub}" in self.requests)

    def add(self, request: str, sub: str, device: Obj, device_id: DeviceID) -> bool:
        if not self._applies(request, sub):
            return True
        value = lookup_attribute(device, device_id, self.attribute)
        if value is None:
            return False
        if self.num_devices == 0:
            self.value, self.num_devices = value, 1
            return True
        if value != self.value:
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub: str) -> None:
        if self._applies(request, sub):
            self.num_devices -= 1


def lookup_attribute(device: Obj, device_id: DeviceID, name: str) -> tuple[str, Any] | None:
    """The typed value of a fully-qualified attribute; unqualified names in the slice use the driver."""
    attributes = device.get("attributes") or {}
    attr = attributes.get(name)
    if attr is None:
        domain, sep, ident = name.partition("/")
        if not sep or domain != device_id[0]:
            return None
        attr = attributes.get(ident)
        if attr is None:
            return None
    for kind in ("string", "int", "bool", "version"):
        if kind in attr:
            return kind, attr[kind]
    return None


def _taint_tolerated(taint: Obj, tolerations: Iterable[Obj]) -> bool:
    """``resourceclaim.ToleratesTaint``."""
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        operator = tol.get("operator") or "Equal"
        key = tol.get("key") or ""
        if key and key != taint.get("key"):
            continue
        if operator == "Exists":
            return True
        if operator == "Equal" and (tol.get("value") or "") == (taint.get("value") or "") and key:
            return True
    return False


def taint_prevents_allocation(device: Obj, tolerations: Sequence[Obj]) -> bool:
    return any(
        taint.get("effect") in ("NoSchedule", "NoExecute") and not _taint_tolerated(taint, tolerations)
        for taint in device.get("taints") or ()
    )


# --- the allocator --------------------------------------------------------------------------------


class DeviceMatchCache:
    """Selector results per (expression, driver, pool, slice uid+resourceVersion, device): a device's match
    does not depend on node or pods, so it is computed once per device version across cycles."""

    def __init__(self, cel: CelCache, max_size: int = 200_000) -> None:
        self.cel = cel
        self._results: dict[tuple[str, str, str, int], bool] = {}
        self._activations: dict[tuple[str, str, int], dict[str, Any]] = {}
        self._max_size = max_size

    def matches(self, expression: str, slice_: Obj, index: int, driver: str) -> bool:
        meta = object_meta(slice_)
        version = f"{meta.get('uid', '')}@{meta.get('resourceVersion', '')}"
        key = (expression, version, driver, index)
        found = self._results.get(key)
        if found is not None:
            return found
        compiled = self.cel.get_or_compile(expression)
        if compiled.driver_equals is not None:
            return compiled.driver_equals == driver
        act_key = (version, driver, index)
        activation = self._activations.get(act_key)
        if activation is None:
            activation = device_activation(driver, (slice_spec(slice_).get("devices") or ())[index])
            if len(self._activations) >= self._max_size:
                self._activations.clear()
            self._activations[act_key] = activation
        result = compiled.matches(activation)
        if len(self._results) >= self._max_size:
            self._results.clear()
        self._results[key] = result
        return result


@dataclass(slots=True)
class _Result:
    request: Request
    device_id: DeviceID
    device: Obj
    slice_: Obj


class Allocator:
    """Allocates the devices of a pod's claims on one node (``Allocator.Allocate``)."""

    def __init__(
        self,
        *,
        allocated: set[DeviceID],
        classes: Callable[[str], Obj | None],
        slices: Sequence[Obj],
        matches: DeviceMatchCache,
        timeout: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        pools: Callable[[NodeView], list[Pool]] | None = None,
        memo: AllocationMemo | None = None,
        memo_context: tuple[Hashable, Any] | None = None,
    ) -> None:
        self.allocated = allocated
        self.classes = classes
        self.slices = slices
        # The pools of a node (``gather_pools`` over ``slices``, or a PoolCache's answer). Runs only
        # read them.
        self.pools_of: Callable[[NodeView], list[Pool]] = pools or (lambda node: gather_pools(slices, node))
        # With ``pools`` from a PoolCache that caches: results kept across pods. The context is the
        # claims' specs (hashable) with the objects the key names by identity (the classes).
        self.memo = memo
        self.memo_context = memo_context
        self.match_cache = matches
        self.timeout = timeout
        self.clock = clock
        self.allocate_one_calls = 0

    def allocate(self, node: NodeView, claims: Sequence[Obj]) -> list[dict[str, Any]] | None:
        """The allocation results for ``claims`` (those the memo context describes) on ``node``,
        or None when they do not fit there."""
        memo, context = self.memo, self.memo_context
        if memo is None or context is None:
            return _Run(self, node, claims).run()
        pools = self.pools_of(node)
        key = memo.key(pools, self.allocated, context[0])
        found = memo.get(key)
        if found is not None:
            return found[1]
        result = _Run(self, node, claims).run()
        memo.put(key, (pools, context), result)
        return result


class _Run:
    def __init__(self, allocator: Allocator, node: NodeView, claims: Sequence[Obj]) -> None:
        self.a = allocator
        self.node = node
        self.claims = claims
        self.deadline = allocator.clock() + allocator.timeout if allocator.timeout > 0 else None
        # claim index -> request index -> [Request] (one for a plain request, one per subrequest).
        self.requests: list[list[list[Request]]] = []
        self.selected_sub: dict[tuple[int, int], int] = {}
        self.constraints: list[list[MatchAttribute]] = []
        self.allocating: dict[DeviceID, set[int]] = {}
        self.results: list[list[_Result]] = [[] for _ in claims]
        self.selectable_cache: dict[tuple[DeviceID, int, int, int], bool] = {}
        self.pools: list[Pool] = []

    # -- setup ------------------------------------------------------------------------------------
    def run(self) -> list[dict[str, Any]] | None:
        self.pools = self.a.pools_of(self.node)
        for ci, claim in enumerate(self.claims):
            devices = claim_devices(claim)
            per_request: list[list[Request]] = []
            min_devices = 0
            for ri, raw in enumerate(devices.get("requests") or ()):
                name = raw.get("name", "")
                if raw.get("firstAvailable"):
                    subs = [
                        self._validate(ci, ri, si, Request(sub.get("name", ""), name, sub))
                        for si, sub in enumerate(raw["firstAvailable"])
                    ]
                    per_request.append(subs)
                    request_devices = min(s.num_devices for s in subs)
                elif raw.get("exactly") is not None:
                    per_request.append([self._validate(ci, ri, 0, Request(name, "", raw["exactly"]))])
                    request_devices = per_request[-1][0].num_devices
                else:
                    raise AllocationError(
                        f"claim {_klog(claim)}, request {name}: missing device class name "
                        "(unsupported request type?)"
                    )
                # v0.37: checked per request, before adding (only a lower bound: a subrequest may pick
                # more, so _allocate_one checks the limit again).
                if request_devices > ALLOCATION_RESULTS_MAX_SIZE - min_devices:
                    raise AllocationError(
                        f"claim {_klog(claim)}, request {name}: adding {request_devices} devices exceeds "
                        f"the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}, with {min_devices} already "
                        "accounted for"
                    )
                min_devices += request_devices
            self.requests.append(per_request)
            constraints: list[MatchAttribute] = []
            for i, raw_constraint in enumerate(devices.get("constraints") or ()):
                attribute = raw_constraint.get("matchAttribute")
                if not attribute:
                    raise AllocationError(
                        f"claim {_klog(claim)}, constraint #{i}: empty constraint "
                        "(unsupported constraint type?)"
                    )
                constraints.append(MatchAttribute(frozenset(raw_constraint.get("requests") or ()), attribute))
            self.constraints.append(constraints)

        try:
            done = self._allocate_one(0, 0, 0, 0, False)
        except _MaxSizeExceeded as err:
            raise AllocationError("allocation max size exceeded") from err
        if not done:
            if any(p.invalid for p in self.pools):
                raise FailedOnNode("invalid resource pools were encountered")
            return None
        return [self._result(ci, claim) for ci, claim in enumerate(self.claims)]

    def _validate(self, ci: int, ri: int, si: int, request: Request) -> Request:
        claim = self.claims[ci]
        if not request.parent and request.spec.get("derivedAttributes"):
            # DRADerivedAttributes (alpha, off in v1.37): not supported by the stable variant either.
            raise AllocationError(
                f"claim {_klog(claim)}, request {request.name}: cannot handle request with derived "
                "attributes, the feature is disabled"
            )
        for i, selector in enumerate(request.selectors):
            if not selector_expression(selector):
                raise AllocationError(
                    f"claim {_klog(claim)}, request {request.name}, selector #{i}: CEL expression empty "
                    "(unsupported selector type?)"
                )
        if not request.class_name:
            raise AllocationError(
                f"claim {_klog(claim)}, request {request.name}: missing device class name "
                "(unsupported request type?)"
            )
        request.class_ = self.a.classes(request.class_name)
        if request.class_ is None:
            raise AllocationError(
                f"claim {_klog(claim)}, request {request.name}: could not retrieve device class "
                f'{request.class_name}: deviceclass.resource.k8s.io "{request.class_name}" not found'
            )
        if request.mode == "ExactCount":
            request.num_devices = request.count
        elif request.mode == "All":
            request.all_devices = []
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {_klog(claim)}, request {request.name}: asks for all devices, but resource "
                        f"pool {pool.id} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {_klog(claim)}, request {request.name}: asks for all devices, but resource "
                        f"pool {pool.id} is currently invalid"
                    )
                for slice_ in pool.slices:
                    for di, device in enumerate(slice_spec(slice_).get("devices") or ()):
                        if self._selectable(ci, ri, si, request, slice_, di):
                            device_id = (pool.driver, pool.pool, device.get("name", ""))
                            request.all_devices.append((device_id, device, slice_))
            request.num_devices = len(request.all_devices)
        else:
            raise AllocationError(
                f"claim {_klog(claim)}, request {request.name}: unsupported count mode {request.mode}"
            )
        return request

    # -- search -----------------------------------------------------------------------------------
    def _allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub: bool) -> bool:
        self.a.allocate_one_calls += 1
        if (
            self.deadline is not None
            and self.a.allocate_one_calls % 64 == 0
            and self.a.clock() > self.deadline
        ):
            raise AllocationTimeout(f"node {self.node.name}: timed out trying to allocate devices")
        if ci >= len(self.claims):
            return True
        if ri >= len(self.requests[ci]):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, False)
            except _MaxSizeExceeded:
                return False
        alternatives = self.requests[ci][ri]
        if not in_sub and alternatives[0].parent:
            exceeded = True
            for sub_index in range(len(alternatives)):
                try:
                    ok = self._allocate_one(ci, ri, sub_index, di, True)
                except _MaxSizeExceeded:
                    continue
                exceeded = False
                if ok:
                    self.selected_sub[(ci, ri)] = sub_index
                    return True
            if exceeded:
                raise _MaxSizeExceeded
            return False

        request = alternatives[si]
        if request.all_devices is not None and not request.all_devices:
            return False
        if di >= request.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False)
        if len(self.results[ci]) + request.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded

        if request.all_devices is not None:
            device_id, device, slice_ = request.all_devices[di]
            undo = self._allocate_device(ci, request, device_id, device, slice_, must=True)
            if undo is None:
                return False
            if self._allocate_one(ci, ri, si, di + 1, in_sub):
                return True
            undo()
            return False

        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for slice_ in pool.slices:
                for index, device in enumerate(slice_spec(slice_).get("devices") or ()):
                    device_id = (pool.driver, pool.pool, device.get("name", ""))
                    if request.admin_access:
                        if ci in self.allocating.get(device_id, ()):
                            continue
                    elif self._in_use(device_id):
                        continue
                    if not self._selectable(ci, ri, si, request, slice_, index):
                        continue
                    undo = self._allocate_device(ci, request, device_id, device, slice_, must=False)
                    if undo is None:
                        continue
                    if self._allocate_one(ci, ri, si, di + 1, in_sub):
                        return True
                    undo()
        return False

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated or bool(self.allocating.get(device_id))

    def _selectable(self, ci: int, ri: int, si: int, request: Request, slice_: Obj, index: int) -> bool:
        spec = slice_spec(slice_)
        device = (spec.get("devices") or ())[index]
        driver = spec.get("driver", "")
        device_id = (driver, (spec.get("pool") or {}).get("name", ""), device.get("name", ""))
        key = (device_id, ci, ri, si)
        found = self.selectable_cache.get(key)
        if found is not None:
            return found
        result = self._selectable_uncached(ci, request, slice_, index, device, device_id)
        self.selectable_cache[key] = result
        return result

    def _selectable_uncached(
        self, ci: int, request: Request, slice_: Obj, index: int, device: Obj, device_id: DeviceID
    ) -> bool:
        # Unsupported device kinds stay unallocated rather than being double-booked.
        if device.get("bindingConditions") or device.get("consumesCounters"):
            return False
        if request.class_ is not None:
            selectors = device_class_spec(request.class_).get("selectors") or ()
            if not self._selectors_match(ci, request, selectors, slice_, index, device_id, request.class_):
                return False
        if not self._selectors_match(ci, request, request.selectors, slice_, index, device_id, None):
            return False
        if slice_spec(slice_).get("perDeviceNodeSelection"):
            return node_matches(
                self.node,
                device.get("nodeName") or "",
                bool(device.get("allNodes")),
                device.get("nodeSelector"),
            )
        return True

    def _selectors_match(
        self,
        ci: int,
        request: Request,
        selectors: Sequence[Obj],
        slice_: Obj,
        index: int,
        device_id: DeviceID,
        class_: Obj | None,
    ) -> bool:
        driver = device_id[0]
        for i, selector in enumerate(selectors):
            expression = selector_expression(selector)
            compiled = self.a.match_cache.cel.get_or_compile(expression)
            owner = f"class {name_of(class_)}" if class_ is not None else f"claim {_klog(self.claims[ci])}"
            if compiled.program is None:
                raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {compiled.error}")
            try:
                matched = self.a.match_cache.matches(expression, slice_, index, driver)
            except CelError as err:
                raise AllocationError(
                    f"{owner}: selector #{i} on device {'/'.join(device_id)}: CEL runtime error: "
                    f"{enhance_runtime_error(str(err))}"
                ) from err
            if not matched:
                return False
        return True

    def _allocate_device(
        self, ci: int, request: Request, device_id: DeviceID, device: Obj, slice_: Obj, *, must: bool
    ) -> Callable[[], None] | None:
        """Marks the device for claim ``ci``; returns the undo, or None when it cannot be used."""
        if request.admin_access:
            if ci in self.allocating.get(device_id, ()):
                return None
        elif self._in_use(device_id):
            return None
        if device.get("bindingConditions") or device.get("consumesCounters"):
            return None
        if taint_prevents_allocation(device, request.tolerations):
            return None
        base, sub = (request.parent, request.name) if request.parent else (request.name, "")
        added: list[MatchAttribute] = []
        for constraint in self.constraints[ci]:
            if not constraint.add(base, sub, device, device_id):
                for done in reversed(added):
                    done.remove(base, sub)
                if must:
                    raise AllocationError(
                        f"claim {_klog(self.claims[ci])}, request {request.name}: cannot add device "
                        f"{device_id_str(device_id)} because a claim constraint would not be satisfied"
                    )
                return None
            added.append(constraint)
        self.allocating.setdefault(device_id, set()).add(ci)
        self.results[ci].append(_Result(request, device_id, device, slice_))
        count = len(self.results[ci])

        def undo() -> None:
            del self.results[ci][count - 1 :]
            self.allocating[device_id].discard(ci)
            for done in reversed(added):
                done.remove(base, sub)

        return undo

    # -- results ----------------------------------------------------------------------------------
    def _result(self, ci: int, claim: Obj) -> dict[str, Any]:
        results: list[dict[str, Any]] = []
        for r in self.results[ci]:
            entry: dict[str, Any] = {
                "request": r.request.full_name,
                "driver": r.device_id[0],
                "pool": r.device_id[1],
                "device": r.device_id[2],
            }
            if r.request.admin_access:
                entry["adminAccess"] = True
            if r.request.tolerations:
                entry["tolerations"] = list(r.request.tolerations)
            results.append(entry)
        devices: dict[str, Any] = {"results": results}
        config = self._config(ci, claim)
        if config:
            devices["config"] = config
        allocation: dict[str, Any] = {"devices": devices}
        selector = self._node_selector(self.results[ci])
        if selector is not None:
            allocation["nodeSelector"] = selector
        return allocation

    def _chosen(self, ci: int, ri: int) -> Request:
        alternatives = self.requests[ci][ri]
        return alternatives[self.selected_sub.get((ci, ri), 0)] if alternatives[0].parent else alternatives[0]

    def _config(self, ci: int, claim: Obj) -> list[dict[str, Any]]:
        config: list[dict[str, Any]] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        for ri in range(len(self.requests[ci])):
            request = self._chosen(ci, ri)
            if request.class_ is None:
                continue
            class_name = name_of(request.class_)
            if class_name in class_ranges:
                start, end = class_ranges[class_name]
                for i in range(start, end):
                    config[i]["requests"].append(request.full_name)
                continue
            start = len(config)
            for entry in device_class_spec(request.class_).get("config") or ():
                config.append({"source": "FromClass", "requests": [request.full_name], **_opaque(entry)})
            class_ranges[class_name] = (start, len(config))
        devices = claim_devices(claim)
        raw_requests = devices.get("requests") or ()
        for entry in devices.get("config") or ():
            names = entry.get("requests") or []
            if not names:
                config.append({"source": "FromClaim", **_opaque(entry)})
                continue
            for ri, raw in enumerate(raw_requests):
                chosen = self._chosen(ci, ri)
                if raw.get("name") in names or (chosen.parent and chosen.full_name in names):
                    # Once, at the first request it names (v0.37; v0.36 added it once per request).
                    config.append({"source": "FromClaim", "requests": list(names), **_opaque(entry)})
                    break
        # v0.37: a config that names every request (or the chosen subrequest of each) applies to all,
        # which an empty list says.
        chosen_names = [
            (str(raw.get("name") or ""), self._chosen(ci, ri)) for ri, raw in enumerate(raw_requests)
        ]
        for item in config:
            requests = item.get("requests")
            if not requests:
                continue
            if all(
                name in requests or (chosen.parent and chosen.full_name in requests)
                for name, chosen in chosen_names
            ):
                del item["requests"]
        return config

    @staticmethod
    def _node_selector(results: Sequence[_Result]) -> dict[str, Any] | None:
        fields: list[Obj] = []
        expressions: list[Obj] = []
        for r in results:
            spec = slice_spec(r.slice_)
            source = r.device if spec.get("perDeviceNodeSelection") else spec
            if source.get("nodeName"):
                return {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [source["nodeName"]]}
                            ]
                        }
                    ]
                }
            selector = source.get("nodeSelector")
            if selector is not None:
                terms = selector.get("nodeSelectorTerms") or []
                if len(terms) > 1:
                    raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
                if terms:
                    _add_requirements(terms[0].get("matchFields") or (), fields)
                    _add_requirements(terms[0].get("matchExpressions") or (), expressions)
        if not fields and not expressions:
            return None
        term: dict[str, Any] = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


def _opaque(entry: Obj) -> dict[str, Any]:
    return {"opaque": entry["opaque"]} if "opaque" in entry else {}


def _add_requirements(source: Iterable[Obj], into: list[Obj]) -> None:
    for requirement in source:
        values = set(requirement.get("values") or ())
        if not any(
            r.get("key") == requirement.get("key")
            and r.get("operator") == requirement.get("operator")
            and set(r.get("values") or ()) == values
            for r in into
        ):
            into.append(requirement)


class _MaxSizeExceeded(Exception):
    """Internal: the result would exceed AllocationResultsMaxSize (errAllocationResultMaxSizeExceeded)."""
