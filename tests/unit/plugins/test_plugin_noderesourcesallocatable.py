"""NodeResourcesAllocatable: scheduler-plugins v0.34.7's ``allocatable_test.go`` cases (the cases, not the
code), args defaults and validation, int64 edge cases, and the vectorised path against the per-node one."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.cache import SchedulerCache
from scheduler.framework import NodeSubset
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.types import NodeInfo, NodeScore, PodInfo
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.noderesourcesallocatable import (
    DEFAULT_RESOURCES,
    NodeResourcesAllocatable,
    normalize,
    parse_args,
    raw_score,
)
from scheduler.plugins.registry import IN_TREE_REGISTRY
from tests.unit.plugins.plugin_testlib import node, node_info, pod

MIN, MAX = 0, 100
DEFAULT_SET = [{"name": "cpu", "weight": 1 << 20}, {"name": "memory", "weight": 1}]
CPU_SET = [{"name": "cpu", "weight": 1 << 30}, {"name": "memory", "weight": 1}]


def _machine(name: str, milli_cpu: int, memory: int) -> NodeInfo:
    return node_info(node(name, allocatable={"cpu": f"{milli_cpu}m", "memory": str(memory)}))


CPU_AND_MEMORY = pod("cpuAndMemory", requests=[{"cpu": "1000m", "memory": "1Gi"}])
BIG_CPU = pod("bigCpu", requests=[{"cpu": "8000m", "memory": "1Gi"}])
NO_RESOURCES = pod("none")
SCHEDULED = pod("scheduled", node_name="machine1", requests=[{"cpu": "1000m", "memory": "0"}, {"cpu": "2"}])


def _scores(args: dict[str, Any], the_pod: dict[str, Any], infos: list[NodeInfo]) -> list[int]:
    plugin = NodeResourcesAllocatable(args)
    state = CycleState()
    pi = PodInfo(the_pod)
    scores = [NodeScore(info.name, plugin.score(state, pi, info)[0]) for info in infos]
    assert plugin.normalize_score(state, pi, scores) is None
    return [s.score for s in scores]


# (name, pod, nodes (name, milliCPU, memory), pods on machine1, args, expected)
CASES: list[tuple[str, dict[str, Any], list[tuple[str, int, int]], bool, dict[str, Any], list[int]]] = [
    (
        "nothing scheduled, nothing requested",
        NO_RESOURCES,
        [("machine1", 4000, 10000), ("machine2", 4000, 10000)],
        False,
        {"resources": DEFAULT_SET, "mode": "Least"},
        [MIN, MIN],
    ),
    (
        "differently sized machines, least mode",
        CPU_AND_MEMORY,
        [("machine1", 4000, 10000), ("machine2", 6000, 10000)],
        False,
        {"resources": DEFAULT_SET, "mode": "Least"},
        [MAX, MIN],
    ),
    (
        "differently sized machines, most mode",
        CPU_AND_MEMORY,
        [("machine1", 4000, 10000), ("machine2", 6000, 10000)],
        False,
        {"resources": DEFAULT_SET, "mode": "Most"},
        [MIN, MAX],
    ),
    (
        "resources requested, pods scheduled with resources",
        CPU_AND_MEMORY,
        [("machine1", 10000, 20000), ("machine2", 10000, 20000)],
        True,
        {"resources": DEFAULT_SET, "mode": "Least"},
        [MIN, MIN],
    ),
    (
        "requested more than the node, least mode",
        BIG_CPU,
        [("machine1", 4000, 1000), ("machine2", 5000, 1000)],
        False,
        {"resources": DEFAULT_SET, "mode": "Least"},
        [MAX, MIN],
    ),
    (
        "requested more than the node, most mode",
        BIG_CPU,
        [("machine1", 4000, 1000), ("machine2", 5000, 1000)],
        False,
        {"resources": DEFAULT_SET, "mode": "Most"},
        [MIN, MAX],
    ),
    (
        "cpu weighted, least mode",
        CPU_AND_MEMORY,
        [("machine1", 1000, 2000), ("machine2", 1005, 1000)],
        False,
        {"resources": CPU_SET, "mode": "Least"},
        [MAX, MIN],
    ),
    (
        "cpu weighted, most mode",
        CPU_AND_MEMORY,
        [("machine1", 1000, 2000), ("machine2", 1005, 1000)],
        False,
        {"resources": CPU_SET, "mode": "Most"},
        [MIN, MAX],
    ),
    (
        "3 differently sized machines, least mode",
        CPU_AND_MEMORY,
        [("machine1", 1000, 1000 << 20), ("machine2", 2000, 2000 << 20), ("machine3", 3000, 3000 << 20)],
        False,
        {"resources": DEFAULT_SET, "mode": "Least"},
        [MAX, (MIN + MAX) // 2, MIN],
    ),
    (
        "3 differently sized machines, most mode",
        CPU_AND_MEMORY,
        [("machine1", 1000, 1000 << 20), ("machine2", 2000, 2000 << 20), ("machine3", 3000, 3000 << 20)],
        False,
        {"resources": DEFAULT_SET, "mode": "Most"},
        [MIN, (MIN + MAX) // 2, MAX],
    ),
]


@pytest.mark.parametrize(("name", "the_pod", "machines", "scheduled", "args", "want"), CASES)
def test_upstream_cases(
    name: str,
    the_pod: dict[str, Any],
    machines: list[tuple[str, int, int]],
    scheduled: bool,
    args: dict[str, Any],
    want: list[int],
) -> None:
    infos = [_machine(*m) for m in machines]
    if scheduled:
        infos[0].add_pod(PodInfo(SCHEDULED))
    assert _scores(args, the_pod, infos) == want


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"resources": [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}]},
            "NodeResourcesAllocatable: resources[0].weight: Invalid value: -1: resource weight of memory "
            "should be a positive value, got :-1",
        ),
        (
            {"resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 0}]},
            "NodeResourcesAllocatable: resources[1].weight: Invalid value: 0: resource weight of cpu should "
            "be a positive value, got :0",
        ),
        ({"resources": [{"name": "cpu"}]}, "resources[0].weight: Invalid value: 0"),
        (
            {"mode": "Fewest"},
            'NodeResourcesAllocatable: mode: Invalid value: "Fewest": invalid support ModeType',
        ),
        ({"modes": "Least"}, "NodeResourcesAllocatable: modes: unknown field"),
        ({"resources": [{"name": "cpu", "weight": 1, "x": 1}]}, "resources[0].x: unknown field"),
        ({"kind": "CapacitySchedulingArgs"}, "kind: Invalid value"),
    ],
)
def test_bad_args_are_refused_naming_the_field(args: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError) as err:
        NodeResourcesAllocatable(args)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_defaults_as_scheduler_plugins_v1() -> None:
    raws: list[dict[str, Any] | None] = [None, {}, {"mode": ""}, {"resources": []}]
    for raw in raws:
        args = parse_args(raw)
        assert args.mode == "Least"
        assert args.resources == DEFAULT_RESOURCES == (("cpu", 1 << 20), ("memory", 1))
    assert parse_args({"mode": "Most", "resources": DEFAULT_SET}).mode == "Most"
    # A repeated name keeps its last weight (upstream builds a map).
    twice = [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 7}]
    assert parse_args({"resources": twice}).resources == (("cpu", 7),)


def test_registered_out_of_the_default_profile() -> None:
    assert IN_TREE_REGISTRY["NodeResourcesAllocatable"] is NodeResourcesAllocatable


def test_scalar_and_unknown_resources_and_go_division() -> None:
    # Least: -(3*1 + 5*2) / 3 truncates toward zero in Go (-4), where Python's // floors (-5).
    info = node_info(node("n", allocatable={"cpu": "3m", "example.com/gpu": "5", "memory": "1"}))
    args = parse_args(
        {
            "resources": [
                {"name": "cpu", "weight": 1},
                {"name": "example.com/gpu", "weight": 2},
                {"name": "foo", "weight": 1},
            ]
        }
    )
    # foo is no scalar resource: it counts 0 but its weight still divides.
    assert raw_score(info, args) == -3
    assert normalize([-3, -3]) == [0, 0]
    assert normalize([]) == []
    # int64 wrap-around of Go: a huge range overflows (score - lowest) * 100 as upstream does.
    big = 2**62
    got = normalize([big, -big])
    assert got[1] == 0


def _random_node(rng: random.Random, i: int) -> dict[str, Any]:
    alloc = {
        "cpu": rng.choice(["1", "4", "500m", "8", "16", "3100m"]),
        "memory": rng.choice(["1Gi", "4Gi", "16Gi", "3000Mi", "64Gi"]),
    }
    if rng.random() < 0.4:
        alloc["ephemeral-storage"] = rng.choice(["1Gi", "10Gi"])
    if rng.random() < 0.4:
        alloc["example.com/gpu"] = str(rng.choice([0, 1, 4, 8]))
    return node(f"n{i:03d}", allocatable=alloc)


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_path_matches_the_per_node_path(seed: int) -> None:
    rng = random.Random(seed)
    cache = SchedulerCache()
    for i in range(120):
        cache.add_node(_random_node(rng, i))
    snapshot = cache.snapshot()
    configs: list[dict[str, Any]] = [
        {},
        {"mode": "Most"},
        {
            "mode": rng.choice(["Least", "Most"]),
            "resources": [
                {"name": "cpu", "weight": rng.randint(1, 1 << 22)},
                {"name": "memory", "weight": rng.randint(1, 5)},
                {"name": "ephemeral-storage", "weight": rng.randint(1, 3)},
                {"name": "example.com/gpu", "weight": rng.randint(1, 1 << 40)},
            ],
        },
    ]
    the_pod = PodInfo(pod("p", requests=[{"cpu": "1"}]))
    for args in configs:
        plugin = NodeResourcesAllocatable(args)
        columns = snapshot.columns(plugin.node_columns())
        infos = list(snapshot.node_infos())
        rows = np.asarray(rng.sample(range(len(columns)), 80), dtype=np.int64)
        subset = NodeSubset(columns, rows)
        state = CycleState()
        batch = np.asarray(plugin.score_nodes(state, the_pod, subset), dtype=np.int64)
        per_node = [plugin.score(state, the_pod, infos[int(r)])[0] for r in rows]
        assert batch.tolist() == per_node
        scores = [NodeScore(infos[int(r)].name, s) for r, s in zip(rows, per_node, strict=True)]
        plugin.normalize_score(state, the_pod, scores)
        assert plugin.normalize_score_array(state, the_pod, batch).tolist() == [s.score for s in scores]
