"""DynamicResources' counting Filter (``fastpath.py``) gives the allocator's answers.

Random clusters: node-local pools of one or two slices (some incomplete, some with duplicate device
names), devices with and without attributes, taints, binding conditions and counters, now and then a
slice for all nodes; classes whose selectors fail at run time on some devices. Random pods with one or
two claims of one to three requests (counts, selectors, tolerations, and now and then a shape only the
allocator handles: constraints, firstAvailable, All, adminAccess), one after another, each reserving
its devices on a random feasible node (the informer then shows the claim allocated). Every node's
verdict from ``filter_nodes`` over a NodeSubset equals the per-node ``filter`` of a second plugin, and
Reserve after the counting Filter writes the allocation the allocator found on that node.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from scheduler.cache.columns import NodeColumns
from scheduler.framework import Code, CycleState, NodeInfo, NodeSubset, PodInfo, Status
from scheduler.framework.listers import DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_SLICES, StaticLister
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.plugins.dynamicresources.claims import AllocatedDevicesTracker, InFlightClaims
from scheduler.plugins.dynamicresources.plugin import STATE_KEY
from tests.unit.plugins.dra_testlib import (
    CLASS_A,
    CLASS_B,
    DRIVER_A,
    DRIVER_B,
    allocation,
    claim,
    device,
    device_class,
    request,
    result,
    slice_,
    sub_request,
)
from tests.unit.plugins.plugin_testlib import FakeHandle

CLASS_NUMA = "class-numa"  # fails at run time on devices without a numa attribute
CLASSES = [
    device_class(CLASS_A, f'device.driver == "{DRIVER_A}"'),
    device_class(CLASS_B, f'device.driver == "{DRIVER_B}"'),
    device_class(CLASS_NUMA, f'device.attributes["{DRIVER_A}"].numa >= 1'),
]


def _devices(rng: random.Random, prefix: str, duplicate: bool) -> list[dict[str, Any]]:
    out = []
    for d in range(rng.randint(0, 5)):
        attrs: dict[str, Any] = {"model": rng.choice(["a100", "h100"])}
        if rng.random() < 0.8:
            attrs["numa"] = rng.randint(0, 2)
        extra: dict[str, Any] = {}
        if rng.random() < 0.15:
            extra["taints"] = [{"key": "k", "value": rng.choice(["x", "y"]), "effect": "NoSchedule"}]
        if rng.random() < 0.05:
            extra["bindingConditions"] = ["ready"]
            extra["bindingFailureConditions"] = ["failed"]
        out.append(device(f"{prefix}-{d}", attrs, **extra))
    if duplicate and out:
        out.append(device(out[0]["name"], {"model": "a100"}))
    return out


def _cluster(rng: random.Random) -> tuple[list[NodeInfo], list[dict[str, Any]]]:
    nodes = [NodeInfo({"metadata": {"name": f"node-{i}", "labels": {}}}) for i in range(rng.randint(1, 8))]
    slices: list[dict[str, Any]] = []
    for info in nodes:
        for p in range(rng.randint(0, 2)):
            driver = rng.choice([DRIVER_A, DRIVER_A, DRIVER_B])
            pool = f"{info.name}-p{p}"
            parts = rng.choice([1, 1, 2])
            declared = parts + (1 if rng.random() < 0.1 else 0)  # one slice never published: incomplete
            for s in range(parts):
                devices = _devices(rng, f"{pool}-s{s}", duplicate=rng.random() < 0.05)
                slices.append(slice_(f"{pool}-s{s}", info.name, pool, driver, *devices, count=declared))
    if rng.random() < 0.1:
        slices.append(
            slice_("everywhere", None, "shared", DRIVER_A, *_devices(rng, "shared", False), allNodes=True)
        )
    return nodes, slices


def _request(rng: random.Random, name: str) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if rng.random() < 0.3:
        model = rng.choice(["a100", "h100"])
        extra["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER_A}"].model == "{model}"'}}]
    if rng.random() < 0.2:
        extra["tolerations"] = [{"key": "k", "operator": "Exists"}]
    class_name = rng.choice([CLASS_A, CLASS_A, CLASS_A, CLASS_B, CLASS_NUMA])
    odd = rng.random()
    if odd < 0.04:
        return {
            "name": name,
            "firstAvailable": [sub_request("s0", class_name, 2), sub_request("s1", class_name)],
        }
    if odd < 0.08:
        return request(name, class_name, count=None, mode="All")
    if odd < 0.1:
        extra["adminAccess"] = True
    return request(name, class_name, count=rng.choice([0, 1, 1, 1, 2, 3]), **extra)


def _claim(rng: random.Random, name: str) -> dict[str, Any]:
    requests = [_request(rng, f"req-{r}") for r in range(rng.choice([1, 1, 2, 3]))]
    constraints = [{"matchAttribute": f"{DRIVER_A}/model"}] if rng.random() < 0.1 else None
    return claim(name, *requests, constraints=constraints)


def _pod(name: str, claim_names: list[str]) -> PodInfo:
    entries = [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claim_names)]
    body = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c"}], "resourceClaims": entries},
    }
    return PodInfo(body)


def _key(status: Status | None) -> tuple[Any, ...] | None:
    return None if status is None else (status.code, tuple(status.reasons))


def _subset(nodes: list[NodeInfo], rng: random.Random) -> NodeSubset:
    columns = NodeColumns(nodes)
    positions = np.asarray(rng.sample(range(len(nodes)), len(nodes)), dtype=np.int64)
    return NodeSubset(columns, positions)


@pytest.mark.parametrize("followed", [True, False], ids=["tracker", "listed-claims"])
@pytest.mark.parametrize("seed", range(60))
def test_counting_filter_equals_the_allocator_node_by_node(seed: int, followed: bool) -> None:
    """``followed``: the allocated devices come from the tracker (a lister with events, as in the
    scheduler), or from the listed claims (a lister without)."""
    rng = random.Random(seed)
    nodes, slices = _cluster(rng)
    claims: list[dict[str, Any]] = []
    fh = FakeHandle(objects={RESOURCE_CLAIMS: [], RESOURCE_SLICES: slices, DEVICE_CLASSES: CLASSES})
    fast, reference = DynamicResources({}, fh), DynamicResources({}, fh)
    if not followed:
        fast.allocated_tracker = None
    counted = 0
    for index in range(10):
        names = []
        for _ in range(rng.choice([1, 1, 2])):
            body = _claim(rng, f"c{len(claims)}")
            claims.append(body)
            fh.listers[RESOURCE_CLAIMS].add(body)
            names.append(body["metadata"]["name"])
        pod = _pod(f"p{index}", names)

        want_state = CycleState()
        _, status = reference.pre_filter(want_state, pod, nodes)
        got_state = CycleState()
        _, got_pre = fast.pre_filter(got_state, pod, nodes)
        assert _key(got_pre) == _key(status)
        if status is not None:
            continue
        want = {info.name: _key(reference.filter(want_state, pod, info)) for info in nodes}
        subset = _subset(nodes, rng)
        verdicts = fast.filter_nodes(got_state, pod, subset)
        got = {info.name: _key(v) for info, v in zip(subset, verdicts, strict=True)}
        assert got == want
        s = got_state.get(STATE_KEY)
        counted += s.fast is not None
        fitting = [name for name, verdict in want.items() if verdict is None]
        if not fitting:
            continue
        chosen = rng.choice(fitting)
        assert fast.reserve(got_state, pod, chosen) is None
        assert [got_state.get(STATE_KEY).allocations[i] for i in range(len(names))] == want_state.get(
            STATE_KEY
        ).node_allocations[chosen]
        for i, claim_name in enumerate(names):
            body = next(c for c in claims if c["metadata"]["name"] == claim_name)
            written = {**body, "metadata": {**body["metadata"], "resourceVersion": "2"}}
            written["status"] = {"allocation": got_state.get(STATE_KEY).allocations[i]}
            fh.listers[RESOURCE_CLAIMS].add(written)
    if seed == 0:
        assert counted > 0


def _fast_state(
    slices: list[dict[str, Any]], claims: list[dict[str, Any]], pod: PodInfo, nodes: list[NodeInfo]
) -> tuple[DynamicResources, CycleState, list[tuple[Any, ...] | None]]:
    fh = FakeHandle(objects={RESOURCE_CLAIMS: claims, RESOURCE_SLICES: slices, DEVICE_CLASSES: CLASSES})
    plugin = DynamicResources({}, fh)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, nodes)
    assert status is None
    subset = NodeSubset(NodeColumns(nodes), np.arange(len(nodes), dtype=np.int64))
    verdicts = [_key(v) for v in plugin.filter_nodes(state, pod, subset)]
    assert verdicts == [_key(plugin.filter(state, pod, n)) for n in nodes]
    return plugin, state, verdicts


NODES = [NodeInfo({"metadata": {"name": n, "labels": {}}}) for n in ("node-1", "node-2")]
FULL = (Code.UnschedulableAndUnresolvable, ("cannot allocate all claims",))


def test_counting_sums_requests_that_draw_on_the_same_devices() -> None:
    """Two claims of one class on one node of three devices: fits; a third claim of two: does not."""
    slices = [slice_("s1", "node-1", "node-1", DRIVER_A, *(device(f"gpu-{i}") for i in range(3)))]
    claims = [claim("a", request("req-0")), claim("b", request("req-0", count=2))]
    _, state, verdicts = _fast_state(slices, claims, _pod("p", ["a", "b"]), NODES)
    assert state.get(STATE_KEY).fast is not None
    assert verdicts == [None, FULL]
    claims.append(claim("c", request("req-0", count=2)))
    _, _, verdicts = _fast_state(slices, claims, _pod("p", ["a", "b", "c"]), NODES)
    assert verdicts == [FULL, FULL]


def test_partly_overlapping_requests_go_to_the_allocator() -> None:
    """Request 1 wants any driver-a device, request 2 an h100: the sets overlap partly, so counting cannot
    tell; the allocator finds gpu-0 for request 1 and gpu-1 for request 2."""
    slices = [
        slice_(
            "s1",
            "node-1",
            "node-1",
            DRIVER_A,
            device("gpu-0", {"model": "h100"}),
            device("gpu-1", {"model": "h100"}),
            device("gpu-2", {"model": "a100"}),
        )
    ]
    h100 = [{"cel": {"expression": f'device.attributes["{DRIVER_A}"].model == "h100"'}}]
    claims = [claim("a", request("req-0", count=2), request("req-1", selectors=h100))]
    plugin, state, verdicts = _fast_state(slices, claims, _pod("p", ["a"]), NODES)
    fast = state.get(STATE_KEY).fast
    assert fast is not None
    _, to_allocator = fast.positions(["node-1", "node-2"])
    assert to_allocator.tolist() == [True, False]
    assert verdicts == [None, FULL]
    assert plugin.reserve(state, _pod("p", ["a"]), "node-1") is None


def test_a_selector_failing_on_a_free_device_goes_to_the_allocator() -> None:
    """The allocator's error depends on the order it meets devices: that node is its to judge."""
    slices = [
        slice_(
            "s1",
            "node-1",
            "node-1",
            DRIVER_A,
            device("gpu-0", {"model": "a100"}),
            device("gpu-1", {"numa": 1}),
        )
    ]
    claims = [claim("a", request("req-0", CLASS_NUMA))]
    _, state, verdicts = _fast_state(slices, claims, _pod("p", ["a"]), NODES)
    assert state.get(STATE_KEY).fast.positions(["node-1"])[1].tolist() == [True]
    assert verdicts[0] is not None and "CEL runtime error" in verdicts[0][1][0]


def test_incomplete_pools_go_to_the_allocator_and_slices_for_all_nodes_turn_counting_off() -> None:
    incomplete = [slice_("s1", "node-1", "node-1", DRIVER_A, device("gpu-0"), count=2)]
    claims = [claim("a", request("req-0"))]
    _, state, verdicts = _fast_state(incomplete, claims, _pod("p", ["a"]), NODES)
    assert state.get(STATE_KEY).fast.positions(["node-1"])[1].tolist() == [True]
    assert verdicts == [FULL, FULL]
    everywhere = [slice_("s1", None, "shared", DRIVER_A, device("gpu-0"), allNodes=True)]
    _, state, verdicts = _fast_state(everywhere, claims, _pod("p", ["a"]), NODES)
    assert state.get(STATE_KEY).fast is None
    assert verdicts == [None, None]


# --- the allocated devices followed from the claim informer's events --------------------------------


class LaggingLister(StaticLister):
    """A claim lister whose handlers hear the store's changes only on ``deliver()``, as the informer's
    handlers run after its store has changed."""

    def __init__(self) -> None:
        super().__init__()
        self._queued: list[Callable[[], None]] = []

    def add_event_handler(self, handler: Any, accept: Any = None) -> None:
        class Queued:
            def on_add(inner, obj: Any) -> None:  # noqa: N805
                self._queued.append(lambda: handler.on_add(obj))

            def on_update(inner, old: Any, new: Any) -> None:  # noqa: N805
                self._queued.append(lambda: handler.on_update(old, new))

            def on_delete(inner, obj: Any) -> None:  # noqa: N805
                self._queued.append(lambda: handler.on_delete(obj))

        super().add_event_handler(Queued(), accept)

    def deliver(self) -> None:
        queued, self._queued = self._queued, []
        for event in queued:
            event()


def test_an_allocation_stays_in_flight_until_the_tracker_has_counted_it() -> None:
    lister = LaggingLister()
    tracker = AllocatedDevicesTracker()
    lister.add_event_handler(tracker)
    pending = claim("a", request("req-0"))
    lister.add(pending)
    lister.deliver()
    in_flight = InFlightClaims()
    chosen = allocation(result("req-0", DRIVER_A, "node-1", "gpu-0"))
    in_flight.add(pending, chosen)
    written = {
        **pending,
        "metadata": {**pending["metadata"], "resourceVersion": "2"},
        "status": {"allocation": chosen},
    }
    in_flight.written("uid-a", written)
    lister.add(written)  # the store shows the allocation; the tracker has not heard of it yet
    in_flight.prune(lister, tracker)
    assert in_flight.devices() == [(DRIVER_A, "node-1", "gpu-0")]
    assert tracker.devices() == set()
    lister.deliver()
    in_flight.prune(lister, tracker)
    assert in_flight.devices() == []
    assert tracker.devices() == {(DRIVER_A, "node-1", "gpu-0")}
    # Deleted: the tracker lets the device go once it hears of it.
    lister.delete("a", "default")
    assert tracker.devices() == {(DRIVER_A, "node-1", "gpu-0")}
    lister.deliver()
    assert tracker.devices() == set()


def test_the_tracker_log_tells_a_follower_every_change() -> None:
    tracker = AllocatedDevicesTracker()
    lister = StaticLister()
    lister.add_event_handler(tracker)
    start = tracker.cursor()
    one = allocation(result("req-0", DRIVER_A, "node-1", "gpu-0"))
    lister.add(claim("a", request("req-0"), allocation=one))
    lister.add(claim("b", request("req-0"), allocation=one))  # the same device twice: held once
    lister.delete("a", "default")
    changes = tracker.changes(*start)
    assert changes is not None and list(changes[0]) == [((DRIVER_A, "node-1", "gpu-0"), True)]
    lister.delete("b", "default")
    later = tracker.changes(start[0], changes[1])
    assert later is not None and list(later[0]) == [((DRIVER_A, "node-1", "gpu-0"), False)]
    tracker.LOG_MAX = 1
    lister.add(claim("c", request("req-0"), allocation=one))
    lister.delete("c", "default")
    assert tracker.changes(*start) is None  # cut: the follower reads ``held`` whole


def test_an_entry_written_after_the_tracker_saw_it_deallocated_again_is_pruned() -> None:
    """The informer may never show the allocation (deallocated again before the watch delivered it):
    the entry leaves once the tracker has seen the written version or a later one, even when that event
    came before PreBind reported the write."""
    in_flight = InFlightClaims()
    tracker = AllocatedDevicesTracker(interest=in_flight.pending)
    lister = StaticLister()
    lister.add_event_handler(tracker)
    pending = claim("a", request("req-0"))
    lister.add(pending)
    in_flight.add(pending, allocation(result("req-0", DRIVER_A, "node-1", "gpu-0")))
    later = {**pending, "metadata": {**pending["metadata"], "resourceVersion": "5"}}
    lister.add(later)  # unallocated at version 5
    in_flight.prune(lister, tracker)
    assert in_flight.devices() == [(DRIVER_A, "node-1", "gpu-0")]  # not written yet: kept
    in_flight.written("uid-a", {**pending, "metadata": {**pending["metadata"], "resourceVersion": "3"}})
    in_flight.prune(lister, tracker)
    assert in_flight.devices() == []
    lister.add(claim("b", request("req-0")))
    assert tracker.drain_touched() == set()  # only claims with an allocation in flight are reported
