"""NodeResourcesBalancedAllocation: cases from upstream's balanced_allocation_test.go (v1.36), which
scores the change in balance the pod brings."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.framework.status import Code
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balanced_resource_score,
    balanced_resource_scorer,
)
from tests.unit.plugins.plugin_testlib import node, node_info, pod, pre_score_code, run_score

GPU = "nvidia.com/gpu"
WITH_GPU = {
    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": GPU, "weight": 1}]
}


def make_node(name: str, milli_cpu: int, memory: int, gpus: int | None = None) -> dict[str, Any]:
    allocatable = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    if gpus is not None:
        allocatable[GPU] = str(gpus)
    return node(name, allocatable=allocatable)


def cm(cpu: str, memory: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory}


def on(node_name: str, *requests: dict[str, str]) -> dict[str, Any]:
    return pod("e", requests=requests, node_name=node_name)


REQUESTED = pod(requests=[cm("1000m", "2000"), cm("2000m", "3000")])

CASES: list[
    tuple[str, dict[str, Any], list[tuple[dict[str, Any], list[dict[str, Any]]]], dict[str, Any], list[int]]
] = [
    (
        # node1: cpu 0 -> 75%, memory 0 -> 50%: 100 -> 87; node2: 50%/50%: 100 -> 100
        "nothing scheduled, resources requested, differently sized nodes",
        REQUESTED,
        [(make_node("node1", 4000, 10000), []), (make_node("node2", 6000, 10000), [])],
        {},
        [68, 75],
    ),
    (
        "resources requested, pods scheduled with resources",
        REQUESTED,
        [
            (make_node("node1", 10000, 20000), [on("node1", {"cpu": "1000m"}, {"cpu": "2000m"})]),
            (make_node("node2", 10000, 20000), [on("node2", cm("1000m", "2000"), cm("2000m", "3000"))]),
        ],
        {},
        [73, 74],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        REQUESTED,
        [
            (make_node("node1", 10000, 20000), [on("node1", {"cpu": "1000m"}, {"cpu": "2000m"})]),
            (make_node("node2", 10000, 50000), [on("node2", cm("1000m", "2000"), cm("2000m", "3000"))]),
        ],
        {},
        [73, 70],
    ),
    (
        "nodes to reach min/max score",
        pod(requests=[{"memory": "2000"}, {"memory": "3000"}]),
        [
            (make_node("node1", 3000, 5000), [on("node1", {"cpu": "1000m"}, {"cpu": "2000m"})]),
            (make_node("node2", 3000, 5000), []),
        ],
        {},
        [100, 50],
    ),
    (
        "requested resources at node capacity",
        pod(requests=[{"cpu": "1000m"}, {"cpu": "2000m"}]),
        [
            (make_node("node1", 6000, 10000), [on("node1", {"cpu": "1000m"}, {"cpu": "2000m"})]),
            (make_node("node2", 6000, 10000), [on("node2", cm("1000m", "2000"), cm("2000m", "3000"))]),
        ],
        {},
        [62, 62],
    ),
    (
        "scalar resource is included if the pod requests it",
        pod(requests=[{"cpu": "0", "memory": "0", GPU: "1"}]),
        [
            (
                make_node("node1", 3500, 40000, 8),
                [on("node1", cm("1000m", "2000"), cm("2000m", "3000") | {GPU: "3"})],
            ),
            (make_node("node2", 3500, 40000, 8), [on("node2", cm("1000m", "2000"), cm("2000m", "3000"))]),
        ],
        WITH_GPU,
        [75, 76],
    ),
    (
        "scalar resource is not included if the pod doesn't request it",
        REQUESTED,
        [(make_node("node1", 3500, 40000, 8), []), (make_node("node2", 3500, 40000), [])],
        WITH_GPU,
        [56, 56],
    ),
]


@pytest.mark.parametrize(
    ("pod_dict", "nodes", "args", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize("pre_score", [True, False], ids=["with-prescore", "without-prescore"])
def test_scores(
    pod_dict: Any, nodes: Any, args: dict[str, Any], expected: list[int], pre_score: bool
) -> None:
    infos = [node_info(n, *pods) for n, pods in nodes]
    assert run_score(NodeResourcesBalancedAllocation(args), pod_dict, infos, pre_score=pre_score) == expected


def test_best_effort_pod_is_skipped() -> None:
    plugin = NodeResourcesBalancedAllocation({})
    infos = [node_info(make_node("node1", 4000, 10000))]
    assert pre_score_code(plugin, pod(), infos) is Code.Skip
    assert run_score(plugin, pod(), infos, pre_score=False) == [0]


def test_scorer_rounds_like_go() -> None:
    # with 100 -> without 100 -> 50 + (50 + 0) / 2 = 75; a worse balance truncates toward zero.
    assert balanced_resource_scorer([50, 50], [50, 50], [100, 100]) == 75
    # with: std 0.5 -> 50; without: 100 -> 50 + (50 - 50) / 2 = 50
    assert balanced_resource_scorer([100, 0], [0, 0], [100, 100]) == 50


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"resources": [{"name": "cpu", "weight": 2}]}, "resources[0].weight"),
        ({"resources": [{"name": "cpu"}, {"name": "cpu"}]}, "resources[1].name"),
        ({"resources": [{"weight": 1}]}, "resources[0].name"),
        ({"shape": []}, "shape"),
    ],
)
def test_invalid_args(args: dict[str, Any], field: str) -> None:
    with pytest.raises(PluginArgsError) as caught:
        NodeResourcesBalancedAllocation(args)
    assert caught.value.field == field


def test_default_resources() -> None:
    plugin = NodeResourcesBalancedAllocation({})
    assert [(r.name, r.weight) for r in plugin.scorer.resources] == [("cpu", 1), ("memory", 1)]


def test_the_idle_balance_column_is_one_spec_per_resource_list() -> None:
    # Two profiles configuring the same resources must declare the very same column (a name declared
    # twice differently stops startup); other resources get a column of their own; a scalar resource
    # leaves the array path, and the column, out.
    first = NodeResourcesBalancedAllocation({})
    second = NodeResourcesBalancedAllocation({"resources": [{"name": "cpu"}, {"name": "memory"}]})
    other = NodeResourcesBalancedAllocation({"resources": [{"name": "cpu"}, {"name": "ephemeral-storage"}]})
    gpu = NodeResourcesBalancedAllocation({"resources": [{"name": "cpu"}, {"name": "example.com/gpu"}]})

    def idle(plugin: NodeResourcesBalancedAllocation) -> list[Any]:
        return [c for c in plugin.node_columns() if "idle" in c.name]

    assert idle(first) == idle(second) and idle(first)[0] is idle(second)[0]
    assert idle(other)[0].name != idle(first)[0].name
    assert idle(gpu) == []
    info = node_info(make_node("n", 4000, 8 * 1024**3), on("n", cm("1", "1Gi")))
    # cpu 1/4 used, memory 1/8: std = |0.25 - 0.125| / 2, score int((1 - std) * 100) = 93.
    assert idle(first)[0].compute(info) == 93


def _reference_balance(requested: list[int], allocatable: list[int]) -> int:
    """Upstream's balancedResourceScorer without the pod, written out plainly (Go's float64 order)."""
    fractions = [
        min(used / capacity, 1.0) for used, capacity in zip(requested, allocatable, strict=True) if capacity
    ]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        total = 0.0
        for fraction in fractions:
            total += fraction
        mean = total / len(fractions)
        squares = 0.0
        for fraction in fractions:
            squares += (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / len(fractions))
    return int((1 - std) * 100)


_amount = st.one_of(st.integers(-3, 3), st.integers(0, 10**13), st.just(10**30))


@given(st.lists(st.tuples(_amount, _amount), max_size=5))
def test_balance_score_matches_the_plain_formula(pairs: list[tuple[int, int]]) -> None:
    requested, allocatable = [used for used, _ in pairs], [capacity for _, capacity in pairs]
    assert balanced_resource_score(requested, allocatable) == _reference_balance(requested, allocatable)
