"""Cases ported from ``structured/internal/allocatortesting/allocator_testing.go`` (v0.36.3)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    DeviceMatchCache,
    NodeView,
)
from scheduler.plugins.dynamicresources.cel import CelCache
from tests.unit.plugins.dra_testlib import (
    CLASS_A,
    CLASS_B,
    DRIVER_A,
    DRIVER_B,
    NODE_1,
    NODE_2,
    POOL_A,
    REQ_0,
    REQ_1,
    allocation,
    claim,
    device,
    device_class,
    request,
    result,
    slice_,
    sub_request,
)

CLASSES = {
    CLASS_A: device_class(CLASS_A, f'device.driver == "{DRIVER_A}"'),
    CLASS_B: device_class(CLASS_B, f'device.driver == "{DRIVER_B}"'),
}


def allocate(
    claims: list[dict[str, Any]],
    slices: list[dict[str, Any]],
    *,
    node: str = NODE_1,
    labels: dict[str, str] | None = None,
    allocated: set[tuple[str, str, str]] | None = None,
    classes: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]] | None:
    known = CLASSES if classes is None else classes
    allocator = Allocator(
        allocated=allocated or set(),
        classes=known.get,
        slices=slices,
        matches=DeviceMatchCache(CelCache()),
    )
    return allocator.allocate(NodeView(node, labels or {}), claims)


def two_devices(node: str = NODE_1, pool: str = POOL_A) -> dict[str, Any]:
    return slice_(f"s-{node}-{pool}", node, pool, DRIVER_A, device("dev-1"), device("dev-2"))


def test_empty_claim_allocates_nothing() -> None:
    assert allocate([claim("c")], []) == [{"devices": {"results": []}}]


def test_simple_one_device() -> None:
    assert allocate([claim("c", request(REQ_0))], [two_devices()]) == [
        allocation(result(REQ_0, DRIVER_A, POOL_A, "dev-1"))
    ]


def test_two_claims_get_distinct_devices() -> None:
    got = allocate([claim("c0", request(REQ_0)), claim("c1", request(REQ_0))], [two_devices()])
    assert got == [
        allocation(result(REQ_0, DRIVER_A, POOL_A, "dev-1")),
        allocation(result(REQ_0, DRIVER_A, POOL_A, "dev-2")),
    ]


def test_too_many_devices_requested() -> None:
    assert allocate([claim("c", request(REQ_0, count=3))], [two_devices()]) is None


def test_already_allocated_devices_are_skipped() -> None:
    got = allocate([claim("c", request(REQ_0))], [two_devices()], allocated={(DRIVER_A, POOL_A, "dev-1")})
    assert got == [allocation(result(REQ_0, DRIVER_A, POOL_A, "dev-2"))]
    exhausted = {(DRIVER_A, POOL_A, "dev-1"), (DRIVER_A, POOL_A, "dev-2")}
    assert allocate([claim("c", request(REQ_0))], [two_devices()], allocated=exhausted) is None


def test_slices_of_other_nodes_are_ignored() -> None:
    assert allocate([claim("c", request(REQ_0))], [two_devices(NODE_2)]) is None


def test_all_devices_mode() -> None:
    got = allocate([claim("c", request(REQ_0, mode="All", count=None))], [two_devices()])
    assert got == [
        allocation(result(REQ_0, DRIVER_A, POOL_A, "dev-1"), result(REQ_0, DRIVER_A, POOL_A, "dev-2"))
    ]


def test_all_devices_with_one_in_use_fails() -> None:
    got = allocate(
        [claim("c", request(REQ_0, mode="All", count=None))],
        [two_devices()],
        allocated={(DRIVER_A, POOL_A, "dev-1")},
    )
    assert got is None


def test_all_devices_of_incomplete_pool_is_an_error() -> None:
    incomplete = slice_("s", NODE_1, POOL_A, DRIVER_A, device("dev-1"), count=2)
    with pytest.raises(AllocationError, match="is currently being updated"):
        allocate([claim("c", request(REQ_0, mode="All", count=None))], [incomplete])


def test_class_selector_filters_by_driver() -> None:
    slices = [two_devices(), slice_("sb", NODE_1, "pool-b", DRIVER_B, device("dev-b"))]
    got = allocate([claim("c", request(REQ_0, class_name=CLASS_B))], slices)
    assert got == [allocation(result(REQ_0, DRIVER_B, "pool-b", "dev-b"))]


def test_request_selector_on_attributes_and_semver() -> None:
    devs = slice_(
        "s",
        NODE_1,
        POOL_A,
        DRIVER_A,
        device("old", {"driverVersion": "v1.0.0", "model": "a"}),
        device("new", {"driverVersion": "v2.1.0", "model": "a"}),
    )
    selector = {
        "cel": {"expression": f'device.attributes["{DRIVER_A}"].driverVersion.isGreaterThan(semver("1.5.0"))'}
    }
    got = allocate([claim("c", request(REQ_0, selectors=[selector]))], [devs])
    assert got == [allocation(result(REQ_0, DRIVER_A, POOL_A, "new"))]


def test_capacity_selector_with_quantity() -> None:
    devs = slice_(
        "s",
        NODE_1,
        POOL_A,
        DRIVER_A,
        device("small", capacity={"memory": {"value": "8Gi"}}),
        device("big", capacity={"memory": {"value": "80Gi"}}),
    )
    selector = {
        "cel": {"expression": f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("16Gi")) >= 0'}
    }
    got = allocate([claim("c", request(REQ_0, selectors=[selector]))], [devs])
    assert got == [allocation(result(REQ_0, DRIVER_A, POOL_A, "big"))]


def test_cel_runtime_error_is_reported_with_owner() -> None:
    selector = {"cel": {"expression": 'device.attributes["x"].missing == 1'}}
    # v0.37.2: the device is named and a "no such key" error gets upstream's hint (EnhanceRuntimeError).
    with pytest.raises(
        AllocationError,
        match=r"^claim default/c: selector #0 on device driver-a/pool-a/dev-1: CEL runtime error: "
        r"no such key: missing\. consider using CEL optional chaining \(\.\? followed by orValue\(\)\) "
        r"or guarding the check with has\(\) for optional fields$",
    ):
        allocate([claim("c", request(REQ_0, selectors=[selector]))], [two_devices()])


def test_cel_compile_error_of_class() -> None:
    classes = {CLASS_A: device_class(CLASS_A, "device.driver ==")}
    with pytest.raises(AllocationError, match="class class-a: selector #0: CEL compile error"):
        allocate([claim("c", request(REQ_0))], [two_devices()], classes=classes)


def test_missing_class_is_an_error() -> None:
    with pytest.raises(AllocationError, match="could not retrieve device class missing"):
        allocate([claim("c", request(REQ_0, class_name="missing"))], [two_devices()])


def test_match_attribute_constraint_picks_same_model() -> None:
    devs = slice_(
        "s",
        NODE_1,
        POOL_A,
        DRIVER_A,
        device("d1", {"model": "x"}),
        device("d2", {"model": "y"}),
        device("d3", {"model": "x"}),
    )
    constraint = [{"requests": [REQ_0, REQ_1], "matchAttribute": f"{DRIVER_A}/model"}]
    got = allocate(
        [
            claim(
                "c",
                request(REQ_0),
                request(
                    REQ_1,
                    selectors=[{"cel": {"expression": f'device.attributes["{DRIVER_A}"].model == "x"'}}],
                ),
                constraints=constraint,
            )
        ],
        [devs],
        allocated={(DRIVER_A, POOL_A, "d1")},
    )
    # d1 is taken: req-0 tries d2 (model y), then req-1 cannot match; backtracks to d3 for req-0... and
    # req-1 then has no other "x" device, so the claim does not fit.
    assert got is None
    got = allocate([claim("c", request(REQ_0), request(REQ_1), constraints=constraint)], [devs])
    assert got == [allocation(result(REQ_0, DRIVER_A, POOL_A, "d1"), result(REQ_1, DRIVER_A, POOL_A, "d3"))]


def test_match_attribute_missing_attribute_fails() -> None:
    constraint = [{"matchAttribute": f"{DRIVER_A}/model"}]
    assert allocate([claim("c", request(REQ_0), constraints=constraint)], [two_devices()]) is None


def test_first_available_falls_back_to_second_subrequest() -> None:
    req = {"name": REQ_0, "firstAvailable": [sub_request("big", count=3), sub_request("small", count=1)]}
    got = allocate([claim("c", req)], [two_devices()])
    assert got == [allocation(result(f"{REQ_0}/small", DRIVER_A, POOL_A, "dev-1"))]


def test_first_available_prefers_first_subrequest() -> None:
    req = {"name": REQ_0, "firstAvailable": [sub_request("two", count=2), sub_request("one")]}
    got = allocate([claim("c", req)], [two_devices()])
    assert got == [
        allocation(
            result(f"{REQ_0}/two", DRIVER_A, POOL_A, "dev-1"),
            result(f"{REQ_0}/two", DRIVER_A, POOL_A, "dev-2"),
        )
    ]


def test_admin_access_may_use_allocated_device_but_not_twice_in_claim() -> None:
    taken = {(DRIVER_A, POOL_A, "dev-1"), (DRIVER_A, POOL_A, "dev-2")}
    got = allocate([claim("c", request(REQ_0, adminAccess=True))], [two_devices()], allocated=taken)
    assert got == [allocation(result(REQ_0, DRIVER_A, POOL_A, "dev-1", adminAccess=True))]
    got = allocate([claim("c", request(REQ_0, count=3, adminAccess=True))], [two_devices()], allocated=taken)
    assert got is None


def test_network_attached_slice_with_node_selector() -> None:
    selector = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]
    }
    net = slice_("net", None, POOL_A, DRIVER_A, device("nic"), nodeSelector=selector)
    assert allocate([claim("c", request(REQ_0))], [net], labels={"rack": "r2"}) is None
    got = allocate([claim("c", request(REQ_0))], [net], labels={"rack": "r1"})
    assert got == [
        {"devices": {"results": [result(REQ_0, DRIVER_A, POOL_A, "nic")]}, "nodeSelector": selector}
    ]


def test_all_nodes_slice_has_no_node_selector() -> None:
    net = slice_("net", None, POOL_A, DRIVER_A, device("nic"), allNodes=True)
    assert allocate([claim("c", request(REQ_0))], [net]) == [
        allocation(result(REQ_0, DRIVER_A, POOL_A, "nic"), node=None)
    ]


def test_newer_pool_generation_wins() -> None:
    old = slice_("old", NODE_1, POOL_A, DRIVER_A, device("old-dev"), generation=1)
    new = slice_("new", NODE_1, POOL_A, DRIVER_A, device("new-dev"), generation=2)
    assert allocate([claim("c", request(REQ_0))], [old, new]) == [
        allocation(result(REQ_0, DRIVER_A, POOL_A, "new-dev"))
    ]


def test_duplicate_device_names_make_the_pool_invalid() -> None:
    s1 = slice_("s1", NODE_1, POOL_A, DRIVER_A, device("dup"), count=2)
    s2 = slice_("s2", NODE_1, POOL_A, DRIVER_A, device("dup"), count=2)
    with pytest.raises(AllocationError, match="invalid resource pools were encountered"):
        allocate([claim("c", request(REQ_0))], [s1, s2])


def test_tainted_device_needs_toleration() -> None:
    taint = {"key": "broken", "value": "yes", "effect": "NoSchedule"}
    devs = slice_("s", NODE_1, POOL_A, DRIVER_A, device("dev-1", taints=[taint]))
    assert allocate([claim("c", request(REQ_0))], [devs]) is None
    tol = [{"key": "broken", "operator": "Exists", "effect": "NoSchedule"}]
    got = allocate([claim("c", request(REQ_0, tolerations=tol))], [devs])
    assert got == [allocation(result(REQ_0, DRIVER_A, POOL_A, "dev-1", tolerations=tol))]


def test_devices_with_binding_conditions_or_counters_are_never_selected() -> None:
    devs = slice_(
        "s",
        NODE_1,
        POOL_A,
        DRIVER_A,
        device("bc", bindingConditions=["ready"]),
        device("ctr", consumesCounters=[{"counterSet": "x", "counters": {}}]),
    )
    assert allocate([claim("c", request(REQ_0))], [devs]) is None


def test_class_and_claim_config_in_result() -> None:
    classes = {
        CLASS_A: device_class(CLASS_A, config=[{"opaque": {"driver": DRIVER_A, "parameters": {"a": 1}}}])
    }
    c = claim("c", request(REQ_0))
    c["spec"]["devices"]["config"] = [
        {"requests": [REQ_0], "opaque": {"driver": DRIVER_A, "parameters": {"b": 2}}}
    ]
    got = allocate([c], [two_devices()], classes=classes)
    assert got is not None
    # v0.37.2: a config naming every request of the claim applies to all: its list is dropped.
    assert got[0]["devices"]["config"] == [
        {"source": "FromClass", "opaque": {"driver": DRIVER_A, "parameters": {"a": 1}}},
        {"source": "FromClaim", "opaque": {"driver": DRIVER_A, "parameters": {"b": 2}}},
    ]


def test_claim_config_naming_two_of_three_requests_is_added_once_and_kept() -> None:
    """v0.37.2 adds a claim config once (v0.36 once per request it names) and keeps its list unless it
    names every request."""
    c = claim("c", request(REQ_0), request(REQ_1), request("req-2"))
    both = {"requests": [REQ_0, REQ_1], "opaque": {"driver": DRIVER_A, "parameters": {"b": 2}}}
    c["spec"]["devices"]["config"] = [both]
    devs = slice_("s", NODE_1, POOL_A, DRIVER_A, device("d1"), device("d2"), device("d3"))
    got = allocate([c], [devs], classes={CLASS_A: device_class(CLASS_A)})
    assert got is not None
    assert got[0]["devices"]["config"] == [{"source": "FromClaim", **both}]


def test_request_crossing_the_claim_limit_is_named() -> None:
    c = claim("c", request(REQ_0, count=20), request(REQ_1, count=13))
    with pytest.raises(
        AllocationError,
        match=r"^claim default/c, request req-1: adding 13 devices exceeds the claim limit of 32, "
        r"with 20 already accounted for$",
    ):
        allocate([c], [two_devices()])


def test_too_many_devices_for_one_claim() -> None:
    with pytest.raises(AllocationError, match="exceeds the claim limit of 32"):
        allocate([claim("c", request(REQ_0, count=33))], [two_devices()])


def test_filter_timeout() -> None:
    many = slice_("s", NODE_1, POOL_A, DRIVER_A, *(device(f"d{i}", {"model": i}) for i in range(20)))
    ticks = iter(range(10**6))
    allocator = Allocator(
        allocated=set(),
        classes=CLASSES.get,
        slices=[many],
        matches=DeviceMatchCache(CelCache()),
        timeout=5.0,
        clock=lambda: float(next(ticks)),
    )
    with pytest.raises(AllocationTimeout):
        allocator.allocate(NodeView(NODE_1, {}), [claim("c", request(REQ_0, count=21))])


def test_slice_with_compatibility_groups_makes_its_pool_incomplete() -> None:
    """v0.37.2's GatherPools, DRADeviceCompatibilityGroups off: the slice is ignored and does not count
    towards the pool, so the pool's other devices are not allocated either."""
    grouped = device(
        "g", consumesCounters=[{"counterSet": "x", "counters": {}, "compatibilityGroups": ["a"]}]
    )
    plain = slice_("s1", NODE_1, POOL_A, DRIVER_A, device("d1"), count=2)
    with_groups = slice_("s2", NODE_1, POOL_A, DRIVER_A, grouped, count=2)
    assert allocate([claim("c", request(REQ_0))], [plain, with_groups]) is None
    with pytest.raises(
        AllocationError, match=r"asks for all devices, but resource pool .* is currently being updated"
    ):
        allocate([claim("c", request(REQ_0, mode="All"))], [plain, with_groups])
    # The same slice without the groups completes the pool.
    ungrouped = slice_("s2", NODE_1, POOL_A, DRIVER_A, device("g"), count=2)
    assert allocate([claim("c", request(REQ_0))], [plain, ungrouped]) is not None
