"""The scheduling algorithm (``scheduler.cycle.algorithm``): how many nodes to look at, where to start, what
to tell the user when nothing fits, and how ties are broken. Mirrors upstream's ``schedule_one_test.go``.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.cycle.algorithm import PreFilterError, SchedulingAlgorithm, num_feasible_nodes_to_find
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.interface import PluginFactory
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Status
from scheduler.framework.types import Diagnosis, NodeInfo, PodInfo, PreFilterResult
from tests.unit.fakes import PROFILE, build_frameworks, make_node, make_pod

AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"


class SpyFilter:
    """Passes every node and remembers which ones it was asked about, in order."""

    name = "Spy"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self.seen.append(node.name)
        return None


class RejectingPreFilter:
    name = "Nope"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, Status.unschedulable("the pod asked for the impossible")


class ErrorPreFilter:
    name = "Broken"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, Status.as_error("backend unavailable")


class Setup:
    def __init__(
        self,
        nodes: Sequence[Mapping[str, Any]],
        *,
        extra: Mapping[str, PluginFactory] | None = None,
        profile: Mapping[str, Any] | None = None,
        percentage: int | None = None,
    ) -> None:
        self.cache = SchedulerCache()
        for node in nodes:
            self.cache.add_node(node)
        self.snapshot: Snapshot = self.cache.snapshot()
        self.fwk: Framework = build_frameworks(
            lambda: self.snapshot,
            None,
            lambda: 0.0,
            profile=profile,
            extra_registry=extra,
            percentage_of_nodes_to_score=percentage,
        )[PROFILE]
        self.algorithm = SchedulingAlgorithm(rng=random.Random(7))

    def plugin(self, name: str) -> Any:
        for plugin in self.fwk.all_plugins():
            if plugin.name == name:
                return plugin
        raise KeyError(name)

    def schedule(self, pod: Mapping[str, Any]) -> Any:
        self.cache.update_snapshot(self.snapshot)
        return self.algorithm.schedule_pod(self.fwk, CycleState(), PodInfo(pod), self.snapshot)

    def fit_error(self, pod: Mapping[str, Any]) -> FitError:
        with pytest.raises(FitError) as info:
            self.schedule(pod)
        return info.value


def with_plugin(name: str, point: str) -> dict[str, Any]:
    return {"schedulerName": PROFILE, "plugins": {point: {"enabled": [{"name": name}]}}}


# --- numFeasibleNodesToFind -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("percentage", "num_all_nodes", "want"),
    [
        # upstream TestNumFeasibleNodesToFind
        (None, 10, 10),
        (40, 10, 10),
        (None, 1000, 420),
        (40, 1000, 400),
        (None, 6000, 300),
        (40, 6000, 2400),
        # the adaptive formula at its edges: 50% - n/125, never below 5% nor 100 nodes
        (0, 50, 50),
        (None, 99, 99),
        (None, 100, 100),
        (None, 200, 100),
        (None, 500, 230),
        (None, 5000, 500),
        (None, 10000, 500),
        (None, 20000, 1000),
        # explicit percentages
        (100, 1000, 1000),
        (50, 1000, 500),
        (1, 1000, 100),
        (5, 3000, 150),
    ],
)
def test_num_feasible_nodes_to_find_matches_upstream(
    percentage: int | None, num_all_nodes: int, want: int
) -> None:
    assert num_feasible_nodes_to_find(percentage, num_all_nodes) == want


def test_zero_and_unset_percentage_both_mean_adaptive() -> None:
    for n in (100, 1000, 4321, 7000):
        assert num_feasible_nodes_to_find(0, n) == num_feasible_nodes_to_find(None, n)


# --- FitError messages ------------------------------------------------------------------------------


def test_fit_error_message_is_upstreams_histogram() -> None:
    setup = Setup(
        [
            make_node("n1", cpu="1", labels={"disk": "ssd"}),
            make_node("n2", cpu="8"),
            make_node("n3", cpu="8"),
        ]
    )
    err = setup.fit_error(make_pod("p", cpu="2", node_selector={"disk": "ssd"}))
    assert str(err) == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector."
    )
    assert err.diagnosis.unschedulable_plugins == {"NodeAffinity", "NodeResourcesFit"}
    assert set(err.diagnosis.node_to_status) == {"n1", "n2", "n3"}


def test_fit_error_reasons_sort_as_strings_like_upstream() -> None:
    # Go's sort.Strings puts "10 ..." before "2 ...": the message must read the same.
    nodes = [make_node(f"small-{i}", cpu="1", labels={"disk": "ssd"}) for i in range(2)]
    nodes += [make_node(f"plain-{i}", cpu="8") for i in range(10)]
    err = Setup(nodes).fit_error(make_pod("p", cpu="2", node_selector={"disk": "ssd"}))
    assert str(err) == f"0/12 nodes are available: 10 {AFFINITY_REASON}, 2 Insufficient cpu."


def test_one_node_with_several_reasons_counts_each() -> None:
    err = Setup([make_node("n1", cpu="1", memory="1Gi")]).fit_error(make_pod("p", cpu="2", memory="2Gi"))
    assert str(err) == "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."


def test_prefilter_rejection_message_is_not_repeated_per_node() -> None:
    setup = Setup(
        [make_node("n1"), make_node("n2"), make_node("n3")],
        extra={"Nope": lambda args, handle: RejectingPreFilter()},
        profile=with_plugin("Nope", "preFilter"),
    )
    err = setup.fit_error(make_pod("p"))
    assert str(err) == "0/3 nodes are available: the pod asked for the impossible."
    assert err.diagnosis.pre_filter_msg == "the pod asked for the impossible"
    assert err.diagnosis.unschedulable_plugins == {"Nope"}
    # Every node carries the status, for PostFilter (preemption) to read.
    assert set(err.diagnosis.node_to_status) == {"n1", "n2", "n3"}


def test_post_filter_message_is_appended() -> None:
    diagnosis = Diagnosis(pre_filter_msg="no way", post_filter_msg="preemption: 0/3 nodes are available")
    err = FitError(PodInfo(make_pod("p")), 3, diagnosis)
    # Upstream's FitError.Error appends the PostFilter message as it is, with no full stop of its own.
    assert err.message() == "0/3 nodes are available: no way. preemption: 0/3 nodes are available"


def test_prefilter_error_is_an_error_not_a_rejection() -> None:
    setup = Setup(
        [make_node("n1")],
        extra={"Broken": lambda args, handle: ErrorPreFilter()},
        profile=with_plugin("Broken", "preFilter"),
    )
    with pytest.raises(PreFilterError) as info:
        setup.schedule(make_pod("p"))
    assert info.value.status.plugin == "Broken"
    assert "backend unavailable" in str(info.value)


def test_no_nodes_at_all_says_so_like_upstream() -> None:
    err = Setup([]).fit_error(make_pod("p"))
    assert str(err) == "no nodes available to schedule pods"
    assert not err.diagnosis.unschedulable_plugins


# --- PreFilterResult narrowing ----------------------------------------------------------------------


def _name_affinity(*names: str) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                # matchFields on metadata.name takes one value; terms are ORed.
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
                    for name in names
                ]
            }
        }
    }


def test_prefilter_result_restricts_the_nodes_filtered() -> None:
    setup = Setup(
        [make_node(f"n{i}") for i in range(6)],
        extra={"Spy": lambda args, handle: SpyFilter()},
        profile=with_plugin("Spy", "filter"),
    )
    result = setup.schedule(make_pod("p", affinity=_name_affinity("n2", "n4")))
    assert sorted(setup.plugin("Spy").seen) == ["n2", "n4"]
    assert result.node_name in {"n2", "n4"}
    assert (result.evaluated_nodes, result.feasible_nodes) == (2, 2)


def test_narrowed_to_missing_nodes_blames_the_narrowing_plugin() -> None:
    # Upstream: nodes PreFilter left out get "node(s) didn't satisfy plugin(s) [X]" and X is a rejector,
    # so a NodeAdd can wake the pod through X's hints.
    setup = Setup([make_node("n1"), make_node("n2"), make_node("n3")])
    err = setup.fit_error(make_pod("p", affinity=_name_affinity("gone")))
    assert str(err) == "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    assert err.diagnosis.unschedulable_plugins == {"NodeAffinity"}


def test_narrowed_node_that_fails_filter_and_absent_nodes_both_count() -> None:
    setup = Setup([make_node("n1", cpu="1"), make_node("n2"), make_node("n3")])
    err = setup.fit_error(make_pod("p", cpu="2", affinity=_name_affinity("n1")))
    assert str(err) == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    assert err.diagnosis.unschedulable_plugins == {"NodeAffinity", "NodeResourcesFit"}


# --- round robin over the nodes ---------------------------------------------------------------------


def test_start_index_advances_by_processed_nodes_and_stops_at_enough_feasible() -> None:
    # 200 nodes -> 100 feasible nodes are enough. The first 10 nodes are cordoned.
    nodes = [make_node(f"n{i:03d}", unschedulable=i < 10) for i in range(200)]
    setup = Setup(
        nodes, extra={"Spy": lambda args, handle: SpyFilter()}, profile=with_plugin("Spy", "filter")
    )
    order = [info.name for info in setup.snapshot.node_infos()]
    spy: SpyFilter = setup.plugin("Spy")

    first = setup.schedule(make_pod("a"))
    assert (first.evaluated_nodes, first.feasible_nodes) == (110, 100)
    assert setup.algorithm.next_start_node_index == 110
    assert spy.seen == order[10:110]

    spy.seen.clear()
    second = setup.schedule(make_pod("b"))
    # Starts where the last one stopped, wraps, skips the cordoned nodes again.
    assert (second.evaluated_nodes, second.feasible_nodes) == (110, 100)
    assert spy.seen == order[110:200] + order[10:20]
    assert setup.algorithm.next_start_node_index == 20


def test_small_clusters_check_every_node() -> None:
    setup = Setup(
        [make_node(f"n{i}") for i in range(30)],
        extra={"Spy": lambda args, handle: SpyFilter()},
        profile=with_plugin("Spy", "filter"),
    )
    result = setup.schedule(make_pod("p"))
    assert result.feasible_nodes == 30
    assert len(setup.plugin("Spy").seen) == 30


def test_percentage_of_nodes_to_score_limits_the_search() -> None:
    setup = Setup([make_node(f"n{i:03d}") for i in range(400)], percentage=50)
    result = setup.schedule(make_pod("p"))
    assert result.feasible_nodes == 200
    assert setup.algorithm.next_start_node_index == 200


def test_profile_without_score_plugins_takes_the_first_feasible_node() -> None:
    """Upstream findNodesThatPassFilters: no Score plugin (and no extender) means numNodesToFind = 1,
    so the first feasible node from the round-robin start wins instead of a random one of many."""
    nodes = [make_node(f"n{i:03d}", unschedulable=i < 3) for i in range(10)]
    profile = {
        "schedulerName": PROFILE,
        "plugins": {"filter": {"enabled": [{"name": "Spy"}]}, "score": {"disabled": [{"name": "*"}]}},
    }
    setup = Setup(nodes, extra={"Spy": lambda args, handle: SpyFilter()}, profile=profile)
    assert not setup.fwk.has_score_plugins()
    order = [info.name for info in setup.snapshot.node_infos()]
    spy: SpyFilter = setup.plugin("Spy")
    first = setup.schedule(make_pod("a"))
    # The three cordoned nodes are rejected, the fourth is taken; the search stops there.
    assert (first.node_name, first.evaluated_nodes, first.feasible_nodes) == (order[3], 4, 1)
    assert spy.seen == order[3:4]
    assert setup.algorithm.next_start_node_index == 4
    second = setup.schedule(make_pod("b"))
    assert (second.node_name, second.evaluated_nodes) == (order[4], 1)


def test_single_feasible_node_skips_scoring() -> None:
    class ExplodingScore:
        name = "Explode"

        def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
            raise AssertionError("scored although only one node fit")

    setup = Setup(
        [make_node("n1", cpu="1"), make_node("n2", cpu="8")],
        extra={"Explode": lambda args, handle: ExplodingScore()},
        profile=with_plugin("Explode", "score"),
    )
    result = setup.schedule(make_pod("p", cpu="2"))
    assert (result.node_name, result.feasible_nodes, result.evaluated_nodes) == ("n2", 1, 2)


def test_scores_pick_the_emptier_node() -> None:
    setup = Setup([make_node("busy", cpu="4"), make_node("idle", cpu="4")])
    setup.cache.add_pod(make_pod("hog", cpu="3", node_name="busy", scheduler_name="default-scheduler"))
    for i in range(5):
        assert setup.schedule(make_pod(f"p{i}", cpu="500m")).node_name == "idle"


# --- selectHost -------------------------------------------------------------------------------------


def _infos(count: int) -> list[NodeInfo]:
    return [NodeInfo(make_node(f"n{i}")) for i in range(count)]


def test_select_host_always_picks_a_maximum_and_breaks_ties_uniformly() -> None:
    algorithm = SchedulingAlgorithm(rng=random.Random(42))
    nodes = _infos(5)
    scores = [5, 9, 9, 3, 9]
    picks = Counter(algorithm._select_host(nodes, scores) for _ in range(3000))
    assert set(picks) == {"n1", "n2", "n4"}
    for name in ("n1", "n2", "n4"):
        assert 850 < picks[name] < 1150, picks


def test_select_host_with_one_best_is_deterministic() -> None:
    algorithm = SchedulingAlgorithm(rng=random.Random(1))
    nodes = _infos(4)
    assert {algorithm._select_host(nodes, [1, 2, 100, 3]) for _ in range(50)} == {"n2"}
    assert algorithm._select_host(nodes[:1], [0]) == "n0"


def test_select_host_is_reproducible_for_a_seed() -> None:
    nodes = _infos(6)
    scores = [7] * 6
    one, two = SchedulingAlgorithm(rng=random.Random(3)), SchedulingAlgorithm(rng=random.Random(3))
    first = [one._select_host(nodes, scores) for _ in range(20)]
    assert first == [two._select_host(nodes, scores) for _ in range(20)]
    assert len(set(first)) > 1
