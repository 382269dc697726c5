"""Nominated pods no longer push the whole Filter loop onto the per-node path: only the nodes holding a
nominated pod of equal or higher priority take RunFilterPluginsWithNominatedPods' two passes, the rest
the batch path. The outcome (feasible nodes, processed count, every rejection) must be exactly the
per-node two-pass loop's (upstream findNodesThatPassFilters with nominated pods).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cache import Snapshot
from scheduler.cycle.algorithm import SchedulingAlgorithm, num_feasible_nodes_to_find
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.runtime import Framework
from scheduler.framework.types import NodeInfo, PodInfo
from tests.unit.cycle.test_batch_equivalence import _cluster, _key, _pod


class _Nominator:
    def __init__(self, by_node: dict[str, list[PodInfo]]) -> None:
        self._by_node = by_node

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self._by_node.get(node_name, [])

    def nominated_node_names(self) -> Sequence[str]:
        return list(self._by_node)


@functools.cache
def _setup(seed: int) -> tuple[Snapshot, Framework]:
    _, snapshot, fwk, _ = _cluster(seed, nodes=120 if seed % 2 else 400)
    return snapshot, fwk


def _with(raw: dict[str, Any], priority: int, anti: bool, labels: dict[str, str]) -> dict[str, Any]:
    raw["spec"]["priority"] = priority
    raw["metadata"]["labels"] = labels
    if anti:
        # Anti-affinity to the nominated pods puts InterPodAffinity (a per-node plugin) in the loop, and
        # makes the pass with nominated pods added differ from the pass without.
        raw["spec"].setdefault("affinity", {})["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "nom"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    return raw


def _reference(
    fwk: Framework, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], start: int, num_to_find: int
) -> tuple[list[str], int, dict[str, Any]]:
    """The per-node loop: nominated nodes take the two passes, every node is judged one at a time."""
    plugins = fwk.filter_plugins_for(state)
    special = fwk.nodes_with_nominated_pods_for(pod)
    feasible: list[str] = []
    rejected: dict[str, Any] = {}
    processed = 0
    for i in range(len(nodes)):
        node = nodes[(start + i) % len(nodes)]
        processed += 1
        if node.name in special:
            status = fwk.run_filters_with_nominated_pods(state, pod, node, plugins)
        else:
            status = fwk.run_filters(state, pod, node, plugins)
        if status is None:
            feasible.append(node.name)
            if len(feasible) >= num_to_find:
                break
        else:
            rejected[node.name] = _key(status)
    return feasible, processed, rejected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 3),
    sub_seed=st.integers(0, 2**32 - 1),
    nominated_nodes=st.integers(0, 40),
    priority=st.sampled_from([0, 100, 1000]),
    anti=st.booleans(),
    walk=st.booleans(),
)
def test_nominated_nodes_two_pass_rest_batch(
    seed: int, sub_seed: int, nominated_nodes: int, priority: int, anti: bool, walk: bool
) -> None:
    snapshot, fwk = _setup(seed)
    rng = random.Random(sub_seed)
    nodes = snapshot.node_infos()
    by_node: dict[str, list[PodInfo]] = {}
    for k, node in enumerate(rng.sample(list(nodes), nominated_nodes)):
        by_node[node.name] = [
            PodInfo(_with(_pod(rng, f"nom-{k}-{j}"), rng.choice([0, 100, 1000]), False, {"app": "nom"}))
            for j in range(rng.randint(1, 3))
        ]
    fwk.nominator = _Nominator(by_node)
    if walk:
        # One plugin without a batch form: the window is walked node by node (filter_loop._walk_window).
        batch_filter = Framework.batch_filter.__get__(fwk)
        fwk.batch_filter = lambda p: None if p.name == "TaintToleration" else batch_filter(p)  # type: ignore[method-assign, assignment]
    try:
        pod = PodInfo(_with(_pod(rng, "p"), priority, anti, {"app": "p"}))
        start = rng.randrange(len(nodes))
        num_to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, len(nodes))
        state = CycleState()
        pre_result, pre_status = fwk.run_pre_filter(state, pod, nodes)
        if pre_status is not None or (pre_result is not None and pre_result.node_names is not None):
            return
        want = _reference(fwk, state, pod, nodes, start, num_to_find)

        algorithm = SchedulingAlgorithm(rng=random.Random(0))
        algorithm.next_start_node_index = start
        feasible, diagnosis = algorithm._find_nodes_that_fit(fwk, CycleState(), pod, nodes, snapshot)
        assert [n.name for n in feasible] == want[0]
        assert algorithm.next_start_node_index == (start + want[1]) % len(nodes)
        assert {name: _key(s) for name, s in diagnosis.node_to_status.items()} == want[2]
    finally:
        fwk.nominator = None
        fwk.__dict__.pop("batch_filter", None)


def test_nominated_pod_takes_the_room_on_the_batch_path() -> None:
    """A node whose free room a higher-priority nominated pod claims is rejected, though the batch
    plugins alone would pass it; with a lower-priority nomination it passes."""
    snapshot, fwk = _setup(1)
    nodes = snapshot.node_infos()
    pod = PodInfo(_with(_pod(random.Random(1), "p"), 100, False, {}))
    state = CycleState()
    fwk.run_pre_filter(state, pod, nodes)
    plugins = fwk.filter_plugins_for(state)
    target = next(n for n in nodes if fwk.run_filters(state, pod, n, plugins) is None)
    hog = _pod(random.Random(2), "hog")
    hog["spec"]["containers"][0]["resources"]["requests"] = {
        "cpu": str(target.allocatable.milli_cpu) + "m",
    }
    for nominee_priority, fits in ((1000, False), (0, True)):
        fwk.nominator = _Nominator({target.name: [PodInfo(_with(dict(hog), nominee_priority, False, {}))]})
        try:
            algorithm = SchedulingAlgorithm(rng=random.Random(0))
            algorithm.next_start_node_index = snapshot.index_of(target.name) or 0
            feasible, diagnosis = algorithm._find_nodes_that_fit(fwk, CycleState(), pod, nodes, snapshot)
            assert (target.name in {n.name for n in feasible}) is fits
            if not fits:
                assert "Insufficient cpu" in diagnosis.node_to_status[target.name].reasons
        finally:
            fwk.nominator = None
