"""NodeResourceTopologyMatch's reserve-side caches: cases of scheduler-plugins v0.34.7's
``cache/overreserve_test.go``, ``cache/store_test.go``, ``cache/foreign_pods_test.go`` and
``cache/discardreserved_test.go`` (the cases and their expectations, not the code), the pod fingerprint
against vectors produced by github.com/k8stopologyawareschedwg/podfingerprint v0.2.2 itself, the cache
args, and the plugin with the cache: Reserve charging, the resync timer, what explain is told."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import NODE_RESOURCE_TOPOLOGIES, PODS, StaticLister
from scheduler.framework.types import PodInfo
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.noderesourcetopology import (
    NodeResourceTopologyMatch,
    misfit_detail,
    parse_args,
    placement_detail,
    podfingerprint,
)
from scheduler.plugins.noderesourcetopology.args import CacheSettings
from scheduler.plugins.noderesourcetopology.foreign_pods import ForeignPodsRegistry
from scheduler.plugins.noderesourcetopology.overreserve import (
    OverReserveCache,
    charge,
    expected_fingerprint,
)
from scheduler.plugins.noderesourcetopology.requests import pod_requests
from scheduler.plugins.noderesourcetopology.topology import NUMANode
from tests.unit.plugins.plugin_testlib import FakeHandle, node, node_info

CPU, MEMORY, NIC = "cpu", "memory", "vendor/nic1"
GI = 1024**3

# --- the pod fingerprint -----------------------------------------------------------------------------

# (namespace, name) sets -> the signature podfingerprint v0.2.2's Fingerprint.Sign() gives (a `go run`
# of the library), and upstream's TestResyncMatchFingerprint's namespace1/pod1.
GO_VECTORS: list[tuple[list[tuple[str, str]], str]] = [
    ([], "pfp0v001ef46db3751d8e999"),
    ([("default", "pod-0")], "pfp0v0014b86611ae68e2f40"),
    ([("ns1", "a"), ("ns2", "b")], "pfp0v001ec0e1eb18b83cc01"),
    ([("ns2", "b"), ("ns1", "a")], "pfp0v001ec0e1eb18b83cc01"),
    ([("", "")], "pfp0v001c47d32effa0690e8"),
    (
        [
            ("kube-system", "coredns-0123456789-abcde"),
            ("default", "nginx"),
            ("production", "a-very-long-pod-name-exceeding-thirty-two-bytes-of-input-for-xxh64"),
        ],
        "pfp0v001834bc75731c36d74",
    ),
    ([("test", f"burst-{i}") for i in range(4)], "pfp0v001f6512c0ba4805bd1"),
    (
        [("namespace-with-exactly-32-bytes!", "n"), ("x", "0123456789012345678901234567890")],
        "pfp0v00192ad04ff98f8c8c2",
    ),
    ([("namespace1", "pod1")], "pfp0v0019e0420efb37746c6"),
]


@pytest.mark.parametrize(("pods", "want"), GO_VECTORS)
def test_fingerprint_matches_the_go_library(pods: list[tuple[str, str]], want: str) -> None:
    assert podfingerprint.sign(pods) == want


def test_fingerprint_check() -> None:
    computed = podfingerprint.sign([("namespace1", "pod1")])
    assert podfingerprint.check("pfp0v0019e0420efb37746c6", computed) == podfingerprint.MATCH
    assert podfingerprint.check("pfp0v001ef46db3751d8e999", computed) == podfingerprint.MISMATCH
    assert podfingerprint.check("pfp0v001abc", computed) == podfingerprint.MALFORMED
    assert podfingerprint.check("xxxxv0019e0420efb37746c6", computed) == podfingerprint.MALFORMED
    assert podfingerprint.check("pfp0v0029e0420efb37746c6", computed) == podfingerprint.INCOMPATIBLE_VERSION


# --- args ------------------------------------------------------------------------------------------


def test_cache_args_defaults_and_kinds() -> None:
    assert parse_args(None).cache == CacheSettings()
    over = parse_args({"cacheResyncPeriodSeconds": 5}).cache
    assert over == CacheSettings("OverReserve", 5, "All", "Autodetect", "Dedicated", "All")
    # discardReservedNodes takes precedence over the resync period (upstream's initNodeTopologyInformer).
    both = parse_args({"cacheResyncPeriodSeconds": 5, "discardReservedNodes": True}).cache
    assert both.kind == "DiscardReserved"
    assert parse_args({"cacheResyncPeriodSeconds": -1}).cache.kind == "Passthrough"
    tuned = parse_args(
        {
            "cacheResyncPeriodSeconds": 3,
            "cache": {
                "foreignPodsDetect": "OnlyExclusiveResources",
                "resyncMethod": "All",
                "informerMode": "Shared",
                "resyncScope": "OnlyResources",
            },
        }
    ).cache
    assert tuned == CacheSettings(
        "OverReserve", 3, "OnlyExclusiveResources", "All", "Shared", "OnlyResources"
    )


@pytest.mark.parametrize(
    ("field", "supported"),
    [
        ("foreignPodsDetect", '"None", "All", "OnlyExclusiveResources"'),
        ("resyncMethod", '"Autodetect", "All", "OnlyExclusiveResources"'),
        ("informerMode", '"Shared", "Dedicated"'),
        ("resyncScope", '"All", "OnlyResources"'),
    ],
)
def test_cache_args_unknown_values_are_refused(field: str, supported: str) -> None:
    with pytest.raises(PluginArgsError) as err:
        parse_args({"cacheResyncPeriodSeconds": 1, "cache": {field: "Foo"}})
    assert str(err.value) == (
        f'NodeResourceTopologyMatch: cache.{field}: Unsupported value: "Foo": supported values: {supported}'
    )


# --- builders ---------------------------------------------------------------------------------------


def res(name: str, available: str) -> dict[str, str]:
    return {"name": name, "capacity": available, "allocatable": available, "available": available}


def nrt(
    name: str,
    cpu: str = "30",
    memory: str = "60Gi",
    *,
    attributes: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    policy: str = "SingleNUMANodeContainerLevel",
) -> dict[str, Any]:
    """Upstream's makeDefaultTestTopology shape: two NUMA zones of ``cpu``/``memory`` and 16 NICs."""
    zones = [
        {
            "name": f"node-{i}",
            "type": "Node",
            "resources": [res(CPU, cpu), res(MEMORY, memory), res(NIC, "16")],
        }
        for i in range(2)
    ]
    meta: dict[str, Any] = {"name": name, "resourceVersion": "1"}
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    out: dict[str, Any] = {"metadata": meta, "zones": zones, "topologyPolicies": [policy]}
    if attributes:
        out["attributes"] = [{"name": k, "value": v} for k, v in attributes.items()]
    return out


def pod(
    name: str = "pod1",
    namespace: str = "namespace1",
    *,
    node_name: str = "",
    phase: str = "",
    cpu: str = "8",
    memory: str = "16Gi",
    scheduler: str = "py-scheduler",
    extra: Mapping[str, str] | None = None,
    limits: bool = True,
) -> dict[str, Any]:
    requests = {CPU: cpu, MEMORY: memory, **(extra or {})}
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = dict(requests)
    out: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "resources": resources}]},
    }
    if node_name:
        out["spec"]["nodeName"] = node_name
    if phase:
        out["status"] = {"phase": phase}
    return out


def cache(
    nrts: Sequence[Mapping[str, Any]] = (),
    pods: Sequence[Mapping[str, Any]] = (),
    seed: bool = True,
    **settings: Any,
) -> tuple[OverReserveCache, StaticLister, StaticLister]:
    nrt_lister, pod_lister = StaticLister(nrts), StaticLister(pods)
    conf = CacheSettings("OverReserve", 1, **settings)
    made = OverReserveCache(conf, nrt_lister, pod_lister, pod_requests)
    if seed:
        # Upstream's cache lists the objects when it is made; this one when first read.
        made.seed()
    return made, nrt_lister, pod_lister


def zone_amounts(view_numa: Sequence[NUMANode], name: str) -> list[Fraction]:
    return [n.resources[name] for n in view_numa]


# --- store_test.go ------------------------------------------------------------------------------------

PFP = "pfp0v0019e0420efb37746c6"


@pytest.mark.parametrize(
    ("attributes", "annotations", "want"),
    [
        ({podfingerprint.ATTRIBUTE: PFP}, None, PFP),
        (None, {}, ""),
        (None, {podfingerprint.ANNOTATION: ""}, ""),
        (None, {podfingerprint.ANNOTATION: PFP}, PFP),
        ({podfingerprint.ATTRIBUTE: PFP}, {podfingerprint.ANNOTATION: "pfp0v001ef46db3751d8e999"}, PFP),
        ({podfingerprint.ATTRIBUTE: PFP}, {}, PFP),
    ],
    ids=[
        "no anns, attr",
        "no attrs, empty anns",
        "no attrs, empty pfp ann",
        "no attrs, pfp ann",
        "attr overrides, pfp ann",
        "attr, no ann",
    ],
)
def test_fingerprint_from_nrt(
    attributes: Mapping[str, str] | None, annotations: Mapping[str, str] | None, want: str
) -> None:
    assert expected_fingerprint(nrt("n", attributes=attributes, annotations=annotations), "All")[0] == want


@pytest.mark.parametrize(
    ("method_attr", "resync_method", "only_exclusive"),
    [
        (None, "Autodetect", False),
        ("foobar", "Autodetect", False),
        (podfingerprint.METHOD_ALL, "Autodetect", False),
        (podfingerprint.METHOD_WITH_EXCLUSIVE_RESOURCES, "Autodetect", True),
        (podfingerprint.METHOD_WITH_EXCLUSIVE_RESOURCES, "All", False),
        (None, "OnlyExclusiveResources", True),
    ],
    ids=[
        "no attr",
        "unrecognized attr",
        "all (old default)",
        "exclusive only",
        "forced all",
        "forced exclusive",
    ],
)
def test_fingerprint_method_from_nrt(
    method_attr: str | None, resync_method: str, only_exclusive: bool
) -> None:
    attrs = {podfingerprint.ATTRIBUTE: PFP}
    if method_attr is not None:
        attrs[podfingerprint.ATTRIBUTE_METHOD] = method_attr
    assert expected_fingerprint(nrt("n", attributes=attrs), resync_method) == (PFP, only_exclusive)
    # The legacy annotation cannot say "exclusive resources only".
    legacy = nrt("n", annotations={podfingerprint.ANNOTATION: PFP})
    assert expected_fingerprint(legacy, resync_method) == (PFP, False)


def test_charge_takes_each_request_from_every_zone() -> None:
    """resourceStore.UpdateNRT: a reserved pod's request leaves every zone that reports the resource;
    a resource no zone reports is skipped; a zone with less than asked is left with 0."""
    numa = [NUMANode(0, {CPU: Fraction(30), MEMORY: Fraction(60 * GI)}), NUMANode(1, {CPU: Fraction(4)})]
    charged = charge(numa, [{CPU: Fraction(8), MEMORY: Fraction(16 * GI), NIC: Fraction(1)}])
    assert [n.resources for n in charged] == [{CPU: 22, MEMORY: 44 * GI}, {CPU: 0}]
    assert numa[0].resources[CPU] == 30, "the cached zones are left as they were"


# --- overreserve_test.go ---------------------------------------------------------------------------


def test_init_empty_lister() -> None:
    c, _, _ = cache()
    view = c.view("node1")
    assert (view.fresh, view.topology, c.dirty_nodes()) == (True, None, ([], []))


def test_dirty_nodes_mark_discarded_and_unmarked_on_reserve() -> None:
    c, _, _ = cache()
    for name in ("node-1", "node-4"):
        c.reserve(name, pod())
    assert c.dirty_nodes() == ([], [])
    for name in ("node-1", "node-4"):
        c.node_maybe_over_reserved(name)
    assert c.dirty_nodes() == (["node-1", "node-4"], [])
    # A node that takes a pod again is not dirty any more.
    c.reserve("node-4", pod("other"))
    assert c.dirty_nodes() == (["node-1"], [])


def test_reserve_charges_every_zone_and_unreserve_releases() -> None:
    c, _, _ = cache([nrt("node1")])
    c.reserve("node1", pod())
    view = c.view("node1")
    assert view.topology is not None and view.reserved == ("namespace1/pod1",)
    assert zone_amounts(view.topology[1], CPU) == [22, 22]
    assert zone_amounts(view.topology[1], MEMORY) == [44 * GI, 44 * GI]
    assert zone_amounts(view.topology[1], NIC) == [16, 16]
    c.unreserve("node1", pod())
    view = c.view("node1")
    assert view.topology is not None and zone_amounts(view.topology[1], CPU) == [30, 30]
    # Releasing a pod never reserved is harmless (TestGetCachedNRTCopyReleaseNone).
    c.unreserve("node1", pod("never"))
    c.unreserve("node9", pod("never"))
    assert c.view("node1").reserved == ()


def test_flush() -> None:
    c, _, _ = cache([nrt("node1")])
    c.reserve("node1", pod())
    c.node_maybe_over_reserved("node1")
    generation = c.generation
    c.flush({"node1": nrt("node1", cpu="22", memory="44Gi")})
    assert c.generation == generation + 1
    assert c.dirty_nodes() == ([], [])
    view = c.view("node1")
    assert view.topology is not None and view.reserved == () and view.generation == generation + 1
    assert zone_amounts(view.topology[1], CPU) == [22, 22]
    c.flush({})
    assert c.generation == generation + 1, "flushing nothing leaves the generation"


def test_resync_without_pod_fingerprint_keeps_the_node_dirty() -> None:
    running = pod(node_name="node1", phase="Running")
    c, nrts, _ = cache([nrt("node1")], [running])
    c.reserve("node1", running)
    c.node_maybe_over_reserved("node1")
    nrts.add(nrt("node1", cpu="22", memory="44Gi"))
    outcome = c.resync()
    assert outcome.flushed == () and outcome.kept == {"node1": "no pod fingerprint published"}
    assert c.dirty_nodes() == (["node1"], [])
    view = c.view("node1")
    assert view.topology is not None and zone_amounts(view.topology[1], CPU) == [22, 22]
    assert view.reserved == ("namespace1/pod1",)


def test_resync_with_matching_fingerprint_takes_the_new_object() -> None:
    running = pod(node_name="node1", phase="Running")
    c, nrts, _ = cache([nrt("node1")], [running])
    c.reserve("node1", running)
    c.node_maybe_over_reserved("node1")
    published = nrt("node1", cpu="22", memory="44Gi", attributes={podfingerprint.ATTRIBUTE: PFP})
    published["zones"][0]["resources"] = [res(CPU, "30"), res(MEMORY, "60Gi"), res(NIC, "16")]
    nrts.add(published)
    outcome = c.resync()
    assert outcome.flushed == ("node1",) and c.dirty_nodes() == ([], [])
    view = c.view("node1")
    assert view.topology is not None and view.reserved == ()
    assert zone_amounts(view.topology[1], CPU) == [30, 22]


def test_resync_with_a_mismatched_fingerprint_or_no_pod_keeps_the_node_dirty() -> None:
    running = pod(node_name="node1", phase="Running")
    other = pod("pod2", node_name="node1", phase="Running")
    c, nrts, _ = cache([nrt("node1"), nrt("node2")], [running, other])
    c.node_maybe_over_reserved("node1")
    c.node_maybe_over_reserved("node2")
    nrts.add(nrt("node1", attributes={podfingerprint.ATTRIBUTE: PFP}))
    nrts.add(nrt("node2", attributes={podfingerprint.ATTRIBUTE: PFP}))
    assert c.resync().kept == {"node1": podfingerprint.MISMATCH, "node2": "no pod on the node"}
    assert c.dirty_nodes() == (["node1", "node2"], [])


def test_resync_counts_only_pods_with_exclusive_resources_when_the_agent_says_so() -> None:
    pinned = pod(node_name="node1", phase="Running")
    shared = pod("burstable", node_name="node1", phase="Running", cpu="1500m", limits=False)
    attrs = {
        podfingerprint.ATTRIBUTE: PFP,
        podfingerprint.ATTRIBUTE_METHOD: podfingerprint.METHOD_WITH_EXCLUSIVE_RESOURCES,
    }
    c, nrts, _ = cache([nrt("node1")], [pinned, shared])
    c.node_maybe_over_reserved("node1")
    nrts.add(nrt("node1", attributes=attrs))
    assert c.resync().flushed == ("node1",)
    forced_all, nrts, _ = cache([nrt("node1")], [pinned, shared], resync_method="All")
    forced_all.node_maybe_over_reserved("node1")
    nrts.add(nrt("node1", attributes=attrs))
    assert forced_all.resync().kept == {"node1": podfingerprint.MISMATCH}


@pytest.mark.parametrize(
    ("phase", "mode", "counted"),
    [
        ("Succeeded", "Dedicated", True),
        ("Failed", "Dedicated", True),
        ("Succeeded", "Shared", False),
        ("Failed", "Shared", False),
        ("Running", "Dedicated", True),
        ("Running", "Shared", True),
        ("Pending", "Dedicated", False),
    ],
)
def test_which_pods_the_resync_counts(phase: str, mode: str, counted: bool) -> None:
    """TestMakeNodeToPodDataMap: the informer mode decides which bound pods make the fingerprint."""
    c, nrts, _ = cache([nrt("node1")], [pod(node_name="node1", phase=phase)], informer_mode=mode)
    c.node_maybe_over_reserved("node1")
    nrts.add(nrt("node1", attributes={podfingerprint.ATTRIBUTE: PFP}))
    outcome = c.resync()
    assert (outcome.flushed == ("node1",)) is counted, outcome


def test_node_with_foreign_pods_is_not_fresh_until_resynced() -> None:
    c, _, _ = cache([nrt("node1"), nrt("node2")])
    c.node_has_foreign_pods("node2")
    assert c.dirty_nodes() == (["node2"], [])
    assert not c.view("node2").fresh and c.view("node1").fresh
    # A node the cache holds no object for is not marked (TestUnknownNodeWithForeignPods).
    c.node_has_foreign_pods("node3")
    assert c.dirty_nodes() == (["node2"], [])


def test_foreign_pods_seen_before_the_cache_is_read_apply_to_the_objects_it_holds() -> None:
    c, _, _ = cache([nrt("node1")], seed=False)
    c.node_has_foreign_pods("node1")
    c.node_has_foreign_pods("node3")
    c.seed()
    assert c.dirty_nodes() == (["node1"], [])


def test_objects_created_after_the_cache_is_read_are_not_cached() -> None:
    c, nrts, _ = cache([nrt("node1")])
    nrts.add(nrt("node2"))
    assert c.view("node2").topology is None


@pytest.mark.parametrize(("scope", "dirty"), [("All", ["node1"]), ("OnlyResources", [])])
def test_configuration_change_is_resynced_without_fingerprint(scope: str, dirty: list[str]) -> None:
    c, nrts, _ = cache([nrt("node1")], resync_scope=scope)
    changed = nrt("node1", policy="SingleNUMANodePodLevel")
    c.nrt_updated(nrt("node1", cpu="2"))
    assert c.dirty_nodes() == ([], []), "a change of resources only is not a configuration change"
    c.nrt_updated(changed)
    assert c.dirty_nodes() == ([], dirty)
    nrts.add(changed)
    assert c.resync().flushed == tuple(dirty)
    assert c.dirty_nodes() == ([], [])


# --- foreign_pods_test.go ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod_obj", "profiles", "only_exclusive", "foreign"),
    [
        ({"metadata": {}, "spec": {}}, [], False, False),
        (pod(scheduler="secondary"), [], False, False),
        (pod(node_name="n", scheduler="secondary", limits=False), [], False, True),
        (pod(node_name="n", scheduler="secondary", limits=False), [], True, False),
        (pod(node_name="n", scheduler="secondary", extra={NIC: "1"}, limits=False), [], False, True),
        (pod(node_name="n", scheduler="secondary", extra={NIC: "1"}, limits=False), [], True, True),
        (pod(node_name="n", scheduler="secondary"), [], True, True),
        (pod(node_name="n", scheduler="secondary"), ["secondary"], False, False),
        (pod(node_name="n", scheduler="secondary"), ["fooscheduler", "secondary"], False, False),
        (pod(node_name="n", scheduler="secondary"), ["fooscheduler"], False, True),
    ],
    ids=[
        "empty",
        "no-node-no-profile",
        "node-no-profile-no-devs",
        "node-no-profile-no-devs-exclusive",
        "node-no-profile-devs-only",
        "node-no-profile-devs-only-exclusive",
        "node-guaranteed-exclusive",
        "node-profile",
        "node-multi-profile",
        "node-other-profile",
    ],
)
def test_is_foreign_pod(
    pod_obj: dict[str, Any], profiles: list[str], only_exclusive: bool, foreign: bool
) -> None:
    registry = ForeignPodsRegistry()
    for name in profiles:
        registry.register(name, "OnlyExclusiveResources" if only_exclusive else "All")
    registry.only_exclusive_resources = only_exclusive
    assert registry.is_foreign(pod_obj) is foreign


# --- the plugin with the overreserve cache -----------------------------------------------------------


class FakeLoop:
    def __init__(self) -> None:
        self.timers: list[tuple[float, Callable[..., None], tuple[Any, ...]]] = []

    def call_later(self, delay: float, callback: Callable[..., None], *args: Any) -> None:
        self.timers.append((delay, callback, args))

    def fire(self) -> None:
        _, callback, args = self.timers.pop(0)
        callback(*args)


def burst_plugin(
    args: Mapping[str, Any] | None = None, pods: Sequence[Mapping[str, Any]] = ()
) -> tuple[NodeResourceTopologyMatch, FakeHandle, ForeignPodsRegistry]:
    """Two NUMA zones of 8 cpu, container scope; the overreserve cache with a 2 s resync."""
    topology = nrt("burst-0", cpu="8", memory="16Gi")
    handle = FakeHandle(objects={NODE_RESOURCE_TOPOLOGIES: [topology], PODS: list(pods)})
    registry = ForeignPodsRegistry()
    return (
        NodeResourceTopologyMatch(args or {"cacheResyncPeriodSeconds": 2}, handle, registry),
        handle,
        registry,
    )


BURST_NODE = node_info(node("burst-0", allocatable={CPU: "32", MEMORY: "64Gi", NIC: "32"}))


def schedule(p: NodeResourceTopologyMatch, pod_obj: dict[str, Any]) -> tuple[CycleState, Any]:
    state = CycleState()
    info = PodInfo(pod_obj)
    status = p.filter(state, info, BURST_NODE)
    if status is None:
        p.reserve(state, info, BURST_NODE.name)
    return state, status


def test_burst_is_charged_to_every_zone_until_the_agent_publishes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pods bound before the agent republishes: each is charged to both zones, so the third 4-cpu pod is
    refused (passthrough would admit four onto zone 0); the resync takes the agent's object once its
    fingerprint names the two pods, and the node takes pods again."""
    loop = FakeLoop()
    monkeypatch.setattr(asyncio, "get_running_loop", lambda: loop)
    p, handle, _ = burst_plugin()
    first = [pod(f"b{i}", "numa", cpu="4", memory="1Gi") for i in range(2)]
    for obj in first:
        state, status = schedule(p, obj)
        assert status is None
    assert [t[0] for t in loop.timers] == [2], "one resync timer, armed by the first Reserve"
    assert placement_detail(state, "burst-0") == (
        "container c on NUMA node-0 (NUMA view reserved-over: numa/b0 charged to every NUMA zone since the "
        "agent last published)"
    )
    state, status = schedule(p, pod("b2", "numa", cpu="4", memory="1Gi"))
    assert status is not None and status.reasons == ["cannot align container"]
    assert misfit_detail(state, "burst-0") == (
        "container c: cpu 4 fits no single NUMA node (node-0 has 0, node-1 has 0) (NUMA view "
        "reserved-over: numa/b0, numa/b1 charged to every NUMA zone since the agent last published)"
    )
    assert p.overreserve is not None and p.overreserve.dirty_nodes() == (["burst-0"], [])

    # The tick with nothing published yet: the node stays dirty; the timer re-arms.
    loop.fire()
    assert p.overreserve.dirty_nodes() == (["burst-0"], []) and len(loop.timers) == 1

    # The pods run; the agent publishes what is left and the fingerprint of the two.
    pods = handle.lister(PODS)
    for obj in first:
        pods.add({**obj, "spec": {**obj["spec"], "nodeName": "burst-0"}, "status": {"phase": "Running"}})
    published = nrt(
        "burst-0",
        cpu="8",
        memory="16Gi",
        attributes={podfingerprint.ATTRIBUTE: podfingerprint.sign([("numa", "b0"), ("numa", "b1")])},
    )
    published["zones"][0]["resources"][0] = res(CPU, "0")
    handle.lister(NODE_RESOURCE_TOPOLOGIES).add(published)
    loop.fire()
    assert p.overreserve.dirty_nodes() == ([], []) and p.overreserve.generation == 1
    state, status = schedule(p, pod("b3", "numa", cpu="8", memory="1Gi"))
    assert status is None and placement_detail(state, "burst-0") == "container c on NUMA node-1"


def test_pods_of_other_schedulers_make_the_node_untrusted() -> None:
    p, handle, registry = burst_plugin()
    assert registry.profile_names == {"py-scheduler"}
    assert p.overreserve is not None
    p.overreserve.seed()
    handle.lister(PODS).add(pod("theirs", node_name="burst-0", scheduler="default-scheduler"))
    handle.lister(PODS).add(pod("ours", node_name="burst-0"))
    state = CycleState()
    status = p.filter(state, PodInfo(pod("p", cpu="1", memory="1Gi")), BURST_NODE)
    assert status is not None and status.reasons == ["invalid node topology data"]
    assert misfit_detail(state, "burst-0") == (
        "pods of other schedulers were bound here since the agent last published (dirty until the "
        "cache resyncs)"
    )
    assert p.score(CycleState(), PodInfo(pod("p", cpu="1", memory="1Gi")), BURST_NODE) == (0, None)


def test_foreign_pods_detection_none_registers_nothing() -> None:
    p, handle, registry = burst_plugin(
        {"cacheResyncPeriodSeconds": 2, "cache": {"foreignPodsDetect": "None"}}
    )
    assert registry.profile_names == set()
    handle.lister(PODS).add(pod("theirs", node_name="burst-0", scheduler="default-scheduler"))
    assert p.filter(CycleState(), PodInfo(pod("p", cpu="1", memory="1Gi")), BURST_NODE) is None


def test_unreserve_releases_the_charge() -> None:
    p, _, _ = burst_plugin()
    big = pod("big", cpu="8", memory="1Gi")
    schedule(p, big)
    assert schedule(p, pod("next", cpu="8", memory="1Gi"))[1] is not None
    p.unreserve(CycleState(), PodInfo(big), "burst-0")
    assert schedule(p, pod("next", cpu="8", memory="1Gi"))[1] is None


# --- discardreserved_test.go ----------------------------------------------------------------------------


def test_discard_reserved_nodes_distrusts_a_node_until_its_pod_is_bound() -> None:
    p, _, _ = burst_plugin({"discardReservedNodes": True, "cacheResyncPeriodSeconds": 5})
    assert p.overreserve is None and p.discard is not None
    first = pod("first", cpu="1", memory="1Gi")
    assert schedule(p, first)[1] is None
    state = CycleState()
    status = p.filter(state, PodInfo(pod("second", cpu="1", memory="1Gi")), BURST_NODE)
    assert status is not None and status.reasons == ["invalid node topology data"]
    assert misfit_detail(state, "burst-0") == (
        "discardReservedNodes: pod uid-first reserved here and not yet bound"
    )
    p.post_bind(CycleState(), PodInfo(first), "burst-0")
    assert p.filter(CycleState(), PodInfo(pod("second", cpu="1", memory="1Gi")), BURST_NODE) is None
    assert schedule(p, pod("third", cpu="1", memory="1Gi"))[1] is None
    p.unreserve(CycleState(), PodInfo(pod("third")), "burst-0")
    assert p.filter(CycleState(), PodInfo(pod("fourth", cpu="1", memory="1Gi")), BURST_NODE) is None


async def test_discard_reserved_post_bind_from_a_binding_thread_releases_on_the_loop() -> None:
    p, _, _ = burst_plugin({"discardReservedNodes": True})
    first = pod("first", cpu="1", memory="1Gi")
    assert schedule(p, first)[1] is None
    assert p.discard is not None
    release, threads = p.discard.release, []

    def recording_release(node_name: str, pod_uid: str) -> None:
        threads.append(threading.get_ident())
        release(node_name, pod_uid)

    p.discard.release = recording_release  # type: ignore[method-assign]
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, p.post_bind, CycleState(), PodInfo(first), "burst-0")
    await asyncio.sleep(0)
    assert threads == [threading.get_ident()], "released on the loop's thread, not the binding thread"
    assert not p.discard.is_reserved("burst-0")
