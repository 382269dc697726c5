"""NodeResourceTopologyMatch: cases of scheduler-plugins v0.34.7's ``filter_test.go``
(TestNodeResourceTopology), ``score_test.go`` (TestNodeResourceScorePlugin,
TestNodeResourceScorePluginLeastNUMA, TestNodeResourcePartialDataScorePlugin),
``nodeconfig/topologymanager_test.go`` and ``cache/passthrough_test.go`` (the cases and their expected
verdicts and scores, not the code), plus the args, the QoS class and what explain is told."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.framework import ActionType, Resource
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import NODE_RESOURCE_TOPOLOGIES
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.helper.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, pod_qos
from scheduler.plugins.noderesourcetopology import NodeResourceTopologyMatch, misfit_detail, parse_args
from scheduler.plugins.noderesourcetopology.topology import TopologyManagerConfig, topology_manager_config
from scheduler.plugins.registry import IN_TREE_REGISTRY
from tests.unit.plugins.plugin_testlib import FakeHandle, node, node_info

CPU, MEMORY = "cpu", "memory"
NIC = "vendor/nic1"
NIC_NO_NUMA = "vendor.com/old-nic-model"
MISSING_NIC = "vendor/notexistingnic"
EXTENDED = "namespace/extended"
HUGEPAGES = "hugepages-2Mi"
GPU = "gpu"


# --- builders ---------------------------------------------------------------------------------------


def res(name: str, available: str, capacity: str | None = None) -> dict[str, str]:
    capacity = capacity or available
    return {"name": name, "capacity": capacity, "allocatable": capacity, "available": available}


def zone(
    name: str, resources: Sequence[Mapping[str, str]], costs: Mapping[str, int] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": "Node", "resources": [dict(r) for r in resources]}
    if costs:
        out["costs"] = [{"name": k, "value": v} for k, v in costs.items()]
    return out


def nrt(
    name: str,
    zones: Sequence[Mapping[str, Any]],
    policies: Sequence[str] = (),
    attributes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name, "resourceVersion": "1"},
        "zones": [dict(z) for z in zones],
    }
    if policies:
        out["topologyPolicies"] = list(policies)
    if attributes:
        out["attributes"] = [{"name": k, "value": v} for k, v in attributes.items()]
    return out


def node_of(topology: Mapping[str, Any], extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A node whose allocatable is the sum of its zones' available amounts (upstream's
    makeResourceListFromZones), plus ``extra``."""
    from scheduler.framework.quantity import parse_quantity

    sums: dict[str, Any] = {}
    for z in topology["zones"]:
        for r in z["resources"]:
            sums[r["name"]] = sums.get(r["name"], 0) + parse_quantity(r["available"])
    alloc = {
        name: str(int(amount)) if amount == int(amount) else f"{float(amount)}"
        for name, amount in sums.items()
    }
    return node(topology["metadata"]["name"], allocatable={**alloc, **(extra or {})})


def limited(*containers: Mapping[str, str], init: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
    """A pod whose containers request and limit the same amounts (upstream's makePodByResourceList)."""

    def c(i: int, r: Mapping[str, str]) -> dict[str, Any]:
        return {"name": f"c{i}", "resources": {"requests": dict(r), "limits": dict(r)}}

    spec: dict[str, Any] = {"containers": [c(i, r) for i, r in enumerate(containers)]}
    if init:
        spec["initContainers"] = [c(100 + i, r) for i, r in enumerate(init)]
    return {"metadata": {"name": "p", "namespace": "default", "uid": "p"}, "spec": spec}


def requested(r: Mapping[str, str]) -> dict[str, Any]:
    """A pod that requests without limits (upstream's makePodWithReqByResourceList)."""
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": dict(r)}}]},
    }


def plugin(
    nrts: Sequence[Mapping[str, Any]], args: Mapping[str, Any] | None = None
) -> NodeResourceTopologyMatch:
    return NodeResourceTopologyMatch(args, FakeHandle(objects={NODE_RESOURCE_TOPOLOGIES: list(nrts)}))


# --- Filter: filter_test.go's TestNodeResourceTopology --------------------------------------------

FILTER_NRTS = [
    nrt(
        "node1",
        [
            zone("node-0", [res(CPU, "4", "20"), res(MEMORY, "8Gi"), res(NIC, "10", "30")]),
            zone("node-1", [res(CPU, "8", "30"), res(MEMORY, "8Gi"), res(NIC, "10", "30")]),
        ],
        ["SingleNUMANodeContainerLevel"],
    ),
    nrt(
        "node2",
        [
            zone("node-0", [res(CPU, "2"), res(MEMORY, "4Gi"), res(HUGEPAGES, "128Mi"), res(NIC, "5")]),
            zone("node-1", [res(CPU, "4"), res(MEMORY, "4Gi"), res(HUGEPAGES, "128Mi"), res(NIC, "2")]),
        ],
        ["SingleNUMANodeContainerLevel"],
    ),
    nrt(
        "node3",
        [
            zone("node-0", [res(CPU, "2"), res(MEMORY, "4Gi"), res(NIC, "5")]),
            zone("node-1", [res(CPU, "4"), res(MEMORY, "4Gi"), res(NIC, "2")]),
        ],
        ["SingleNUMANodePodLevel"],
    ),
    nrt(
        "badly_formed_node",
        [
            zone("node-0", [res(CPU, "2"), res(MEMORY, "4Gi"), res(NIC, "5")]),
            zone("node-75", [res(CPU, "4"), res(MEMORY, "4Gi"), res(NIC, "2")]),
        ],
        ["SingleNUMANodePodLevel"],
    ),
    nrt(
        "extended",
        [
            zone("node-0", [res(CPU, "4"), res(MEMORY, "8Gi"), res(NIC, "10")]),
            zone("node-1", [res(CPU, "8"), res(MEMORY, "8Gi"), res(NIC, "10")]),
        ],
        ["SingleNUMANodeContainerLevel"],
    ),
]
FILTER_NODES = [
    node_of(FILTER_NRTS[0]),
    node_of(FILTER_NRTS[1], {NIC_NO_NUMA: "4"}),
    node_of(FILTER_NRTS[2]),
    node_of(FILTER_NRTS[3]),
    node_of(FILTER_NRTS[4], {EXTENDED: "1"}),
]
ALIGN_CONTAINER, ALIGN_POD = "cannot align container", "cannot align pod"

FILTER_CASES: list[tuple[str, dict[str, Any], int, str | None]] = [
    (
        "guaranteed, extended resource fit",
        limited({CPU: "2", MEMORY: "2Gi", EXTENDED: "1", NIC: "3"}),
        4,
        None,
    ),
    (
        "guaranteed, extended resource no devices; fit",
        limited({CPU: "2", MEMORY: "2Gi", EXTENDED: "1"}),
        4,
        None,
    ),
    ("best effort, fit", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, 0, None),
    ("best effort with devices, pod scope; fit", limited({NIC: "5"}), 2, None),
    ("best effort with devices, pod scope; no fit", limited({NIC: "20"}), 2, ALIGN_POD),
    ("best effort with devices, container scope; fit", limited({NIC: "5"}), 1, None),
    ("best effort with devices, container scope; no fit", limited({NIC: "20"}), 0, ALIGN_CONTAINER),
    (
        "best effort with devices and extended, container scope; fit",
        limited({EXTENDED: "1", NIC: "10"}),
        4,
        None,
    ),
    ("guaranteed, minimal, fit", limited({CPU: "2", MEMORY: "2Gi"}), 0, None),
    ("guaranteed, minimal, saturating zone, fit", limited({CPU: "8", MEMORY: "8Gi"}), 0, None),
    (
        "guaranteed, zero quantity of an unavailable resource, fit",
        limited({CPU: "2", MEMORY: "2Gi", HUGEPAGES: "0", NIC: "3"}),
        0,
        None,
    ),
    ("guaranteed, fit", limited({CPU: "2", MEMORY: "2Gi", NIC: "3"}), 1, None),
    ("guaranteed, hugepages, fit", limited({CPU: "2", MEMORY: "2Gi", HUGEPAGES: "64Mi", NIC: "3"}), 1, None),
    ("burstable, fit", limited({CPU: "4", NIC: "3"}), 1, None),
    (
        "burstable, cpu and devices (not enough), container scope",
        limited({CPU: "4", NIC: "11"}),
        1,
        ALIGN_CONTAINER,
    ),
    ("burstable, cpu and devices (not enough), pod scope", limited({CPU: "2", NIC: "6"}), 2, ALIGN_POD),
    ("burstable, cpu (enough) and devices, pod scope; fit", limited({CPU: "2", NIC: "5"}), 2, None),
    ("burstable, cpu (not enough) and devices, pod scope; fit", limited({CPU: "20", NIC: "5"}), 2, None),
    ("burstable, cpu (enough) and devices, container scope; fit", limited({CPU: "2", NIC: "5"}), 1, None),
    ("burstable, cpu (not enough) and devices, container scope; fit", limited({CPU: "4", NIC: "5"}), 1, None),
    (
        "burstable, memory and devices (not enough), container scope",
        limited({MEMORY: "2Gi", NIC: "11"}),
        1,
        ALIGN_CONTAINER,
    ),
    (
        "burstable, memory and devices (not enough), pod scope",
        limited({MEMORY: "2Gi", NIC: "6"}),
        2,
        ALIGN_POD,
    ),
    ("burstable, memory (enough) and devices, pod scope; fit", limited({MEMORY: "2Gi", NIC: "5"}), 2, None),
    (
        "burstable, memory (not enough) and devices, pod scope; fit",
        limited({MEMORY: "5Gi", NIC: "5"}),
        2,
        None,
    ),
    (
        "burstable, memory (enough) and devices, container scope; fit",
        limited({MEMORY: "4Gi", NIC: "5"}),
        1,
        None,
    ),
    (
        "burstable, memory (not enough) and devices, container scope; fit",
        limited({MEMORY: "5Gi", NIC: "5"}),
        1,
        None,
    ),
    (
        "burstable, cpu, memory and devices (not enough), container scope",
        requested({CPU: "4", MEMORY: "4Gi", NIC: "11"}),
        1,
        ALIGN_CONTAINER,
    ),
    (
        "burstable, cpu, memory and devices (not enough), pod scope",
        requested({CPU: "2", MEMORY: "2Gi", NIC: "6"}),
        2,
        ALIGN_POD,
    ),
    (
        "burstable, cpu, memory, devices, pod scope; fit",
        requested({CPU: "2", MEMORY: "2Gi", NIC: "5"}),
        2,
        None,
    ),
    (
        "burstable, cpu, memory (not enough), devices, pod scope; fit",
        requested({CPU: "20", MEMORY: "5Gi", NIC: "5"}),
        2,
        None,
    ),
    (
        "burstable, cpu, memory, devices, container scope; fit",
        requested({CPU: "4", MEMORY: "4Gi", NIC: "5"}),
        1,
        None,
    ),
    (
        "burstable, cpu, memory (not enough), devices, container scope; fit",
        requested({CPU: "5", MEMORY: "5Gi", NIC: "5"}),
        1,
        None,
    ),
    ("burstable with extended resources, fit", limited({EXTENDED: "1", CPU: "4", NIC: "3"}), 4, None),
    (
        "guaranteed, hugepages, no fit",
        limited({CPU: "2", MEMORY: "2Gi", HUGEPAGES: "256Mi", NIC: "3"}),
        1,
        ALIGN_CONTAINER,
    ),
    ("guaranteed, no fit", limited({CPU: "9", MEMORY: "1Gi", NIC: "3"}), 0, ALIGN_CONTAINER),
    (
        "guaranteed, zero of a missing resource, fit",
        limited({CPU: "2", MEMORY: "1Gi", MISSING_NIC: "0"}),
        0,
        None,
    ),
    (
        "guaranteed, pod scope, no fit",
        limited(*[{CPU: "3", MEMORY: "1Gi", MISSING_NIC: "0"}] * 3),
        2,
        ALIGN_POD,
    ),
    ("guaranteed, pod scope, minimal, fit", limited({CPU: "1", MEMORY: "1Gi"}), 2, None),
    ("guaranteed, pod scope, saturating zone, fit", limited({CPU: "2", MEMORY: "4Gi"}), 3, None),
    ("guaranteed, pod scope, fit", limited(*[{CPU: "1", MEMORY: "1Gi", MISSING_NIC: "0"}] * 3), 2, None),
    (
        "guaranteed, pod scope, zone id above 64 ignored",
        limited(*[{CPU: "1", MEMORY: "1Gi"}] * 3),
        3,
        ALIGN_POD,
    ),
    (
        "guaranteed, hugepages, NIC without NUMA affinity, fit",
        limited({CPU: "2", MEMORY: "2Gi", HUGEPAGES: "64Mi", NIC_NO_NUMA: "3"}),
        1,
        None,
    ),
    (
        "guaranteed, ephemeral-storage (not NUMA), fit",
        limited({CPU: "2", MEMORY: "2Gi", "ephemeral-storage": "100Mi"}),
        1,
        None,
    ),
]


@pytest.mark.parametrize(
    ("pod", "node_index", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(pod: dict[str, Any], node_index: int, want: str | None) -> None:
    status = plugin(FILTER_NRTS).filter(CycleState(), PodInfo(pod), node_info(FILTER_NODES[node_index]))
    if want is None:
        assert status is None
    else:
        assert status is not None and status.code is Code.Unschedulable and status.reasons == [want]


def test_filter_container_scope_charges_each_container_to_its_numa_node() -> None:
    """Two NUMA nodes of 4 cpu: 3 + 3 fits (one per NUMA node), 3 + 3 + 3 does not; an init container
    is judged alone and not charged."""
    topology = nrt(
        "n",
        [
            zone("node-0", [res(CPU, "4"), res(MEMORY, "8Gi")]),
            zone("node-1", [res(CPU, "4"), res(MEMORY, "8Gi")]),
        ],
        attributes={"topologyManagerPolicy": "single-numa-node"},
    )
    info = node_info(node_of(topology))
    p = plugin([topology])
    two = limited({CPU: "3", MEMORY: "1Gi"}, {CPU: "3", MEMORY: "1Gi"})
    three = limited(*[{CPU: "3", MEMORY: "1Gi"}] * 3)
    assert p.filter(CycleState(), PodInfo(two), info) is None
    status = p.filter(CycleState(), PodInfo(three), info)
    assert status is not None and status.reasons == [ALIGN_CONTAINER]
    init_ok = limited({CPU: "4", MEMORY: "1Gi"}, {CPU: "4", MEMORY: "1Gi"}, init=[{CPU: "4", MEMORY: "1Gi"}])
    assert p.filter(CycleState(), PodInfo(init_ok), info) is None
    init_big = limited({CPU: "1", MEMORY: "1Gi"}, init=[{CPU: "5", MEMORY: "1Gi"}])
    status = p.filter(CycleState(), PodInfo(init_big), info)
    assert status is not None and status.reasons == ["cannot align init container"]
    sidecar = limited({CPU: "1", MEMORY: "1Gi"}, init=[{CPU: "5", MEMORY: "1Gi"}])
    sidecar["spec"]["initContainers"][0]["restartPolicy"] = "Always"
    status = p.filter(CycleState(), PodInfo(sidecar), info)
    assert status is not None and status.reasons == ["cannot align sidecar container"]


@pytest.mark.parametrize("policy", ["restricted", "best-effort", "none", None])
def test_filter_other_policies_pass(policy: str | None) -> None:
    attrs = {"topologyManagerPolicy": policy} if policy else None
    topology = nrt("n", [zone("node-0", [res(CPU, "1"), res(MEMORY, "1Gi")])], attributes=attrs)
    big = limited({CPU: "8", MEMORY: "8Gi"})
    assert (
        plugin([topology]).filter(CycleState(), PodInfo(big), node_info(node("n", allocatable={CPU: "16"})))
        is None
    )


def test_filter_node_without_nrt_or_unreadable_nrt_passes() -> None:
    """Passthrough: no object (or one the client cannot decode) means the node passes."""
    big = limited({CPU: "8", MEMORY: "8Gi"})
    info = node_info(node("n", allocatable={CPU: "16", MEMORY: "16Gi"}))
    assert plugin([]).filter(CycleState(), PodInfo(big), info) is None
    broken = nrt("n", [zone("node-0", [res(CPU, "1")])], ["SingleNUMANodePodLevel"])
    broken["zones"][0]["resources"][0]["available"] = "lots"
    assert plugin([broken]).filter(CycleState(), PodInfo(big), info) is None


def test_filter_resource_missing_on_node_fails_at_once() -> None:
    topology = nrt("n", [zone("node-0", [res(CPU, "8"), res(MEMORY, "8Gi")])], ["SingleNUMANodePodLevel"])
    pod = limited({CPU: "1", MEMORY: "1Gi", "example.com/fpga": "1"})
    status = plugin([topology]).filter(
        CycleState(), PodInfo(pod), node_info(node("n", allocatable={CPU: "8", MEMORY: "8Gi"}))
    )
    assert status is not None and status.reasons == [ALIGN_POD]


def test_filter_picks_lowest_numa_id_and_explains_misfits() -> None:
    topology = nrt(
        "n",
        [
            zone("node-1", [res(CPU, "4"), res(MEMORY, "8Gi")]),
            zone("node-0", [res(CPU, "4"), res(MEMORY, "8Gi")]),
        ],
        attributes={"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod"},
    )
    p = plugin([topology])
    info = node_info(node_of(topology))
    requests = PodInfo(limited({CPU: "2", MEMORY: "1Gi"}))
    from scheduler.plugins.noderesourcetopology.filter import Placement
    from scheduler.plugins.noderesourcetopology.requests import pod_requests

    assert p.verdict(pod_requests(requests.pod), info) == Placement((("pod", 0),))
    state = CycleState()
    status = p.filter(state, PodInfo(limited({CPU: "6", MEMORY: "1Gi"})), info)
    assert status is not None and status.reasons == [ALIGN_POD]
    assert misfit_detail(state, "n") == "pod: cpu 6 fits no single NUMA node (node-1 has 4, node-0 has 4)"


# --- Score: score_test.go --------------------------------------------------------------------------


def default_numa_nodes(policy: str) -> list[dict[str, Any]]:
    def two(cpu: str, memory: str) -> list[dict[str, Any]]:
        return [zone(f"node-{i}", [res(CPU, cpu), res(MEMORY, memory)]) for i in range(2)]

    return [
        nrt("Node1", two("4", "500Mi"), [policy]),
        nrt("Node2", two("2", "50Mi"), [policy]),
        nrt("Node3", two("6", "60Mi"), [policy]),
    ]


def scores(
    p: NodeResourceTopologyMatch, nrts: Sequence[Mapping[str, Any]], pod: dict[str, Any]
) -> dict[str, int]:
    out: dict[str, int] = {}
    for topology in nrts:
        value, status = p.score(CycleState(), PodInfo(pod), node_info(node_of(topology)))
        assert status is None
        out[topology["metadata"]["name"]] = value
    return out


POD1 = limited({CPU: "2", MEMORY: str(20 * 1024 * 1024)})


@pytest.mark.parametrize(
    ("strategy", "node_name", "score"),
    [("MostAllocated", "Node2", 70), ("BalancedAllocation", "Node3", 100), ("LeastAllocated", "Node1", 73)],
)
def test_score_strategies(strategy: str, node_name: str, score: int) -> None:
    nrts = default_numa_nodes("SingleNUMANodeContainerLevel")
    got = scores(plugin(nrts, {"scoringStrategy": {"type": strategy}}), nrts, POD1)
    best = max(got, key=lambda n: got[n])
    assert (best, got[best]) == (node_name, score)


@pytest.mark.parametrize(
    ("strategy", "score"), [("MostAllocated", 27), ("LeastAllocated", 73), ("BalancedAllocation", 89)]
)
def test_score_partial_data(strategy: str, score: int) -> None:
    """Only Node1 has an NRT: it scores, the others score 0; with no data at all every node scores 0."""
    nrts = default_numa_nodes("SingleNUMANodeContainerLevel")
    args = {"scoringStrategy": {"type": strategy}}
    only_first = plugin(nrts[:1], args)
    assert scores(only_first, nrts, POD1) == {"Node1": score, "Node2": 0, "Node3": 0}
    assert scores(plugin([], args), nrts, POD1) == {"Node1": 0, "Node2": 0, "Node3": 0}


def test_score_non_guaranteed_is_max_and_weights() -> None:
    nrts = default_numa_nodes("SingleNUMANodeContainerLevel")
    burstable = requested({CPU: "2"})
    assert scores(plugin(nrts), nrts, burstable) == {"Node1": 100, "Node2": 100, "Node3": 100}
    # Node1: cpu (4-2)*100/4 = 50, memory (500-20)*100/500 = 96; weights 3:1 -> (150 + 96) / 4 = 61.
    weighted = plugin(
        nrts,
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": CPU, "weight": 3}, {"name": MEMORY}],
            }
        },
    )
    assert scores(weighted, nrts[:1], POD1) == {"Node1": 61}
    # A weight below 1 counts as 1 (73 as unweighted).
    low = plugin(
        nrts, {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": CPU, "weight": -2}]}}
    )
    assert scores(low, nrts[:1], POD1) == {"Node1": 73}


def test_score_other_policies_are_zero_except_least_numa() -> None:
    nrts = default_numa_nodes("RestrictedContainerLevel")
    assert scores(plugin(nrts), nrts, POD1) == {"Node1": 0, "Node2": 0, "Node3": 0}


def four_numa_nodes() -> list[dict[str, Any]]:
    near = {0: 1, 1: 0, 2: 3, 3: 2}

    def costs(i: int) -> dict[str, int]:
        return {f"node-{j}": 10 if i == j else 12 if near[i] == j else 20 for j in range(4)}

    def zones(gpus: Sequence[str]) -> list[dict[str, Any]]:
        return [
            zone(f"node-{i}", [res(CPU, "2"), res(MEMORY, "50Mi"), res(GPU, g)], costs(i))
            for i, g in enumerate(gpus)
        ]

    return [
        nrt("Node1", zones(["1", "1", "0", "0"]), ["BestEffortContainerLevel"]),
        nrt("Node2", zones(["1", "0", "1", "0"]), ["BestEffortContainerLevel"]),
    ]


C50 = {CPU: "2", MEMORY: "50Mi"}
LEAST_NUMA_CASES: list[tuple[str, list[dict[str, str]], str, dict[str, int]]] = [
    (
        "container scope, one container 1",
        [C50],
        "BestEffortContainerLevel",
        {"Node1": 94, "Node2": 94, "Node3": 94},
    ),
    (
        "container scope, one container 2",
        [{CPU: "4", MEMORY: "50Mi"}],
        "BestEffortContainerLevel",
        {"Node1": 94, "Node2": 82, "Node3": 94},
    ),
    (
        "container scope, one container 3",
        [{CPU: "6", MEMORY: "50Mi"}],
        "BestEffortContainerLevel",
        {"Node1": 82, "Node2": 0, "Node3": 94},
    ),
    (
        "container scope, two containers 1",
        [C50, C50],
        "BestEffortContainerLevel",
        {"Node1": 94, "Node2": 94, "Node3": 94},
    ),
    (
        "container scope, two containers 2",
        [{CPU: "1", MEMORY: "50Mi"}, {CPU: "3", MEMORY: "50Mi"}],
        "BestEffortContainerLevel",
        {"Node1": 94, "Node2": 82, "Node3": 94},
    ),
    (
        "container scope, two containers 3",
        [{CPU: "5", MEMORY: "50Mi"}, {CPU: "3", MEMORY: "50Mi"}],
        "BestEffortContainerLevel",
        {"Node1": 82, "Node2": 0, "Node3": 94},
    ),
    (
        "container scope, non-NUMA resource",
        [{"non-numa-resource": "1"}, {"non-numa-resource": "2"}],
        "BestEffortContainerLevel",
        {"Node1": 100, "Node2": 100, "Node3": 100},
    ),
    (
        "pod scope, two containers 1",
        [C50, C50],
        "BestEffortPodLevel",
        {"Node1": 94, "Node2": 82, "Node3": 82},
    ),
    (
        "pod scope, two containers 2",
        [{CPU: "1", MEMORY: "50Mi"}, {CPU: "3", MEMORY: "50Mi"}],
        "BestEffortPodLevel",
        {"Node1": 94, "Node2": 82, "Node3": 82},
    ),
    (
        "pod scope, two containers 3",
        [{CPU: "5", MEMORY: "50Mi"}, {CPU: "3", MEMORY: "50Mi"}],
        "BestEffortPodLevel",
        {"Node1": 82, "Node2": 0, "Node3": 82},
    ),
    (
        "pod scope, non-NUMA resource",
        [{"non-numa-resource": "1"}],
        "BestEffortPodLevel",
        {"Node1": 100, "Node2": 100, "Node3": 100},
    ),
]


@pytest.mark.parametrize(
    ("containers", "policy", "want"), [c[1:] for c in LEAST_NUMA_CASES], ids=[c[0] for c in LEAST_NUMA_CASES]
)
def test_score_least_numa_nodes(containers: list[dict[str, str]], policy: str, want: dict[str, int]) -> None:
    nrts = default_numa_nodes(policy)
    p = plugin(nrts, {"scoringStrategy": {"type": "LeastNUMANodes"}})
    assert scores(p, nrts, limited(*containers)) == want


@pytest.mark.parametrize(
    ("containers", "want"),
    [
        ([{CPU: "2", MEMORY: "50Mi", GPU: "1"}], {"Node1": 94, "Node2": 94}),
        # Two GPUs: Node1's are on NUMA nodes 0 and 1 (distance 12, the closest pair: +6); Node2's on 0
        # and 2 (distance 20).
        ([{CPU: "2", MEMORY: "50Mi", GPU: "2"}], {"Node1": 82, "Node2": 76}),
        ([{CPU: "2", MEMORY: "50Mi", GPU: "2"}, C50], {"Node1": 82, "Node2": 76}),
    ],
    ids=["1 gpu", "2 gpu", "2 gpu in one of 2 containers"],
)
def test_score_least_numa_nodes_distances(containers: list[dict[str, str]], want: dict[str, int]) -> None:
    nrts = four_numa_nodes()
    p = plugin(nrts, {"scoringStrategy": {"type": "LeastNUMANodes"}})
    assert scores(p, nrts, limited(*containers)) == want


def test_score_least_numa_nodes_max_numa_nodes_attribute() -> None:
    nrts = default_numa_nodes("BestEffortPodLevel")
    nrts[0]["attributes"] = [{"name": "topologyManagerMaxNUMANodes", "value": "4"}]
    p = plugin(nrts, {"scoringStrategy": {"type": "LeastNUMANodes"}})
    # 100/4 = 25 per NUMA node: one NUMA node, closest: 100 - 25 + 12.
    assert scores(p, nrts[:1], limited(C50))["Node1"] == 87


# --- the NRT's configuration: nodeconfig/topologymanager_test.go ------------------------------------


@pytest.mark.parametrize(
    ("policies", "attributes", "want"),
    [
        ([], {}, TopologyManagerConfig("container", "none", 8)),
        (["SingleNUMANodePodLevel"], {}, TopologyManagerConfig("pod", "single-numa-node", 8)),
        (["SingleNUMANodeContainerLevel"], {}, TopologyManagerConfig("container", "single-numa-node", 8)),
        (["RestrictedContainerLevel"], {}, TopologyManagerConfig("container", "restricted", 8)),
        (
            ["BestEffortPodLevel", "SingleNUMANodeContainerLevel"],
            {},
            TopologyManagerConfig("pod", "best-effort", 8),
        ),
        (["Restricted"], {}, TopologyManagerConfig("container", "none", 8)),
        (["bogus"], {}, TopologyManagerConfig("container", "none", 8)),
        ([], {"topologyManagerScope": "pod"}, TopologyManagerConfig("pod", "none", 8)),
        ([], {"topologyManagerPolicy": "restricted"}, TopologyManagerConfig("container", "restricted", 8)),
        (
            ["SingleNUMANodePodLevel"],
            {"topologyManagerPolicy": "best-effort"},
            TopologyManagerConfig("pod", "best-effort", 8),
        ),
        (
            ["SingleNUMANodePodLevel"],
            {"topologyManagerPolicy": "restricted", "topologyManagerScope": "container"},
            TopologyManagerConfig("container", "restricted", 8),
        ),
        ([], {"topologyManagerPolicy": "bogus", "topologyManagerScope": "socket"}, TopologyManagerConfig()),
        ([], {"topologyManagerMaxNUMANodes": "x"}, TopologyManagerConfig()),
        ([], {"topologyManagerMaxNUMANodes": "0"}, TopologyManagerConfig()),
        ([], {"topologyManagerMaxNUMANodes": "1"}, TopologyManagerConfig()),
        ([], {"topologyManagerMaxNUMANodes": "-4"}, TopologyManagerConfig()),
        ([], {"topologyManagerMaxNUMANodes": "16"}, TopologyManagerConfig(max_numa_nodes=16)),
        ([], {"topologyManagerMaxNUMANodes": "4096"}, TopologyManagerConfig(max_numa_nodes=1024)),
    ],
)
def test_topology_manager_config(
    policies: list[str], attributes: dict[str, str], want: TopologyManagerConfig
) -> None:
    assert topology_manager_config(nrt("n", [], policies, attributes)) == want


# --- args, QoS, registration ----------------------------------------------------------------------


def test_args_defaults_and_validation() -> None:
    defaults = parse_args(None)
    assert (defaults.scoring_type, defaults.resources) == ("LeastAllocated", (("cpu", 1), ("memory", 1)))
    got = parse_args(
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu"}, {"name": "cpu", "weight": 5}],
            }
        }
    )
    assert (got.scoring_type, got.resources) == ("MostAllocated", (("cpu", 5),))
    assert parse_args({"scoringStrategy": {"type": "BalancedAllocation"}}).resources == (
        ("cpu", 1),
        ("memory", 1),
    )
    assert (
        parse_args({"cacheResyncPeriodSeconds": 0, "discardReservedNodes": False}).scoring_type
        == "LeastAllocated"
    )
    with pytest.raises(
        PluginArgsError, match=r'scoringStrategy\.type: Invalid value: "Foo": invalid ScoringStrategyType'
    ):
        parse_args({"scoringStrategy": {"type": "Foo"}})
    with pytest.raises(
        PluginArgsError, match=r'scoringStrategy\.type: Invalid value: "": invalid ScoringStrategyType'
    ):
        parse_args({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1}]}})
    with pytest.raises(PluginArgsError, match=r"scoringStrategy\.resources\[0\]\.weight"):
        parse_args(
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": "heavy"}]}}
        )
    with pytest.raises(PluginArgsError, match="bogus: unknown field"):
        parse_args({"bogus": 1})


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        (limited({CPU: "1", MEMORY: "1Gi"}), GUARANTEED),
        (limited({CPU: "1"}), BURSTABLE),
        (requested({CPU: "1", MEMORY: "1Gi"}), BURSTABLE),
        (limited({NIC: "1"}), BEST_EFFORT),
        (limited({CPU: "0", MEMORY: "0"}), BEST_EFFORT),
        (limited({CPU: "1", MEMORY: "1Gi"}, init=[{CPU: "1"}]), BURSTABLE),
        ({"spec": {"containers": [{"name": "c"}]}, "status": {"qosClass": "Guaranteed"}}, GUARANTEED),
        (
            {
                "spec": {
                    "resources": {"requests": {CPU: "1", MEMORY: "1Gi"}, "limits": {CPU: "1", MEMORY: "1Gi"}},
                    "containers": [{"name": "c"}],
                }
            },
            GUARANTEED,
        ),
    ],
    ids=[
        "guaranteed",
        "cpu only",
        "no limits",
        "only extended",
        "zero",
        "init without memory",
        "status",
        "pod-level",
    ],
)
def test_pod_qos(pod: dict[str, Any], want: str) -> None:
    assert pod_qos(pod) == want


def test_registered_with_upstream_events() -> None:
    assert IN_TREE_REGISTRY["NodeResourceTopologyMatch"] is NodeResourceTopologyMatch
    events = {(e.event.resource, e.event.action) for e in plugin([]).events_to_register()}
    assert events == {
        (Resource.Pod, ActionType.Delete),
        (Resource.Node, ActionType.Add | ActionType.UpdateNodeAllocatable),
        (Resource.NodeResourceTopology, ActionType.Add | ActionType.Update),
    }
    assert str(Resource.NodeResourceTopology) == "noderesourcetopologies.v1alpha2.topology.node.k8s.io"


def test_reserve_and_post_bind_keep_nothing() -> None:
    p = plugin([])
    pod = PodInfo(limited({CPU: "1", MEMORY: "1Gi"}))
    assert p.reserve(CycleState(), pod, "n") is None
    p.unreserve(CycleState(), pod, "n")
    p.post_bind(CycleState(), pod, "n")


def test_zone_ids_upstream_crashes_on_are_read_without_crashing() -> None:
    """node-64 is skipped (as ids above 64 are); zone ids that are not 0..n-1 score like any others."""
    with_64 = nrt(
        "n64",
        [
            zone("node-64", [res(CPU, "8"), res(MEMORY, "8Gi")]),
            zone("node-0", [res(CPU, "2"), res(MEMORY, "8Gi")]),
        ],
        ["SingleNUMANodePodLevel"],
    )
    pod = limited({CPU: "4", MEMORY: "1Gi"})
    status = plugin([with_64]).filter(CycleState(), PodInfo(pod), node_info(node_of(with_64)))
    assert status is not None and status.reasons == [ALIGN_POD]
    sparse = nrt(
        "sparse",
        [
            zone("node-0", [res(CPU, "4"), res(MEMORY, "500Mi")]),
            zone("node-2", [res(CPU, "4"), res(MEMORY, "500Mi")]),
        ],
        ["SingleNUMANodeContainerLevel"],
    )
    assert scores(plugin([sparse]), [sparse], POD1) == {"sparse": 73}
    least_numa = plugin([sparse], {"scoringStrategy": {"type": "LeastNUMANodes"}})
    assert scores(least_numa, [sparse], limited({CPU: "6", MEMORY: "50Mi"})) == {"sparse": 82}


def test_charging_containers_never_changes_the_published_numa_nodes() -> None:
    """Container scope and LeastNUMANodes charge containers to NUMA nodes on a copy: the same pod gets
    the same verdict and score on every cycle (passthrough: only the agent's next publish changes them)."""
    topology = nrt(
        "n",
        [
            zone("node-0", [res(CPU, "4"), res(MEMORY, "8Gi")]),
            zone("node-1", [res(CPU, "4"), res(MEMORY, "8Gi")]),
        ],
        ["SingleNUMANodeContainerLevel"],
    )
    info = node_info(node_of(topology))
    two = limited({CPU: "3", MEMORY: "1Gi"}, {CPU: "3", MEMORY: "1Gi"})
    p = plugin([topology], {"scoringStrategy": {"type": "LeastNUMANodes"}})
    verdicts = [p.filter(CycleState(), PodInfo(two), info) for _ in range(3)]
    assert verdicts == [None, None, None]
    assert [p.score(CycleState(), PodInfo(two), info)[0] for _ in range(3)] == [94, 94, 94]


def test_a_deleted_nrt_is_forgotten_and_a_new_version_is_read_again() -> None:
    handle = FakeHandle(
        objects={
            NODE_RESOURCE_TOPOLOGIES: [
                nrt("n", [zone("node-0", [res(CPU, "2"), res(MEMORY, "8Gi")])], ["SingleNUMANodePodLevel"])
            ]
        }
    )
    p = NodeResourceTopologyMatch(None, handle)
    info = node_info(node("n", allocatable={CPU: "8", MEMORY: "8Gi"}))
    pod = PodInfo(limited({CPU: "4", MEMORY: "1Gi"}))
    status = p.filter(CycleState(), pod, info)
    assert status is not None and status.reasons == [ALIGN_POD]
    bigger = nrt("n", [zone("node-0", [res(CPU, "4"), res(MEMORY, "8Gi")])], ["SingleNUMANodePodLevel"])
    bigger["metadata"]["resourceVersion"] = "2"
    handle.lister(NODE_RESOURCE_TOPOLOGIES).add(bigger)
    assert p.filter(CycleState(), pod, info) is None
    handle.lister(NODE_RESOURCE_TOPOLOGIES).delete("n")
    assert "n" not in p.reader._parsed
    assert p.filter(CycleState(), pod, info) is None
