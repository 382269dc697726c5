"""Opportunistic batching (scheduler.cycle.batching) places every pod exactly where one-by-one scheduling
does: same node, same evaluated/feasible counts, same round-robin start index, same FitError text.

Random clusters and random streams of pods drawn from a few templates (so signatures repeat), with
the state changing between pods: each placed pod lands in the cache (the node the next pod must
revalidate), earlier pods are deleted, nodes are updated (taints, cordons) or removed and added.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.cycle.algorithm import SchedulingAlgorithm
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.runtime import Framework
from scheduler.framework.types import PodInfo
from tests.unit.cycle.test_batch_equivalence import _node, _pod
from tests.unit.fakes import PROFILE, build_frameworks


class _Side:
    def __init__(self, cache: SchedulerCache, batching: bool, percentage: int | None) -> None:
        self.cache = cache
        self.snapshot: Snapshot = cache.snapshot()
        snapshot = self.snapshot
        self.fwk: Framework = build_frameworks(
            lambda: snapshot, None, lambda: 0.0, percentage_of_nodes_to_score=percentage
        )[PROFILE]
        self.algorithm = SchedulingAlgorithm(rng=random.Random(7), batching=batching)

    def schedule(self, pod: dict[str, Any]) -> tuple[Any, ...]:
        self.cache.update_snapshot(self.snapshot)
        info = PodInfo(pod)
        try:
            result = self.algorithm.schedule_pod(self.fwk, CycleState(), info, self.snapshot)
        except FitError as err:
            return ("fit-error", str(err), self.algorithm.next_start_node_index)
        return (
            result.node_name,
            result.evaluated_nodes,
            result.feasible_nodes,
            self.algorithm.next_start_node_index,
        )


def _templates(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return [_pod(rng, f"template-{i}") for i in range(count)]


def _instance(template: dict[str, Any], name: str) -> dict[str, Any]:
    pod = copy.deepcopy(template)
    pod["metadata"].update(name=name, uid=f"uid-{name}")
    return pod


def _run(seed: int, nodes: int, percentage: int | None) -> tuple[list[tuple[Any, ...]], int]:
    rng = random.Random(seed)
    node_objs = [_node(rng, i) for i in range(nodes)]
    caches = [SchedulerCache(), SchedulerCache()]
    for cache in caches:
        for node in node_objs:
            cache.add_node(copy.deepcopy(node))
    sides = [_Side(caches[0], False, percentage), _Side(caches[1], True, percentage)]
    templates = _templates(rng, rng.randrange(1, 4))
    placed: list[dict[str, Any]] = []
    outcomes: list[tuple[Any, ...]] = []
    for step in range(60):
        pod = _instance(rng.choice(templates), f"p{step}")
        answers = [side.schedule(copy.deepcopy(pod)) for side in sides]
        assert answers[0] == answers[1], (step, answers)
        outcomes.append(answers[0])
        if answers[0][0] != "fit-error":
            pod["spec"]["nodeName"] = answers[0][0]
            placed.append(pod)
            for cache in caches:
                cache.add_pod(copy.deepcopy(pod))
        roll = rng.random()
        if roll < 0.15 and placed:
            gone = placed.pop(rng.randrange(len(placed)))
            for cache in caches:
                cache.remove_pod(copy.deepcopy(gone))
        elif roll < 0.25:
            index = rng.randrange(nodes)
            fresh = _node(rng, index)
            fresh["metadata"]["resourceVersion"] = str(step + 2)
            for cache in caches:
                cache.update_node(None, copy.deepcopy(fresh))
        elif roll < 0.28:
            # A node leaves and comes back: rows move, so the cache must start over.
            index = rng.randrange(nodes)
            for cache in caches:
                cache.remove_node(copy.deepcopy(node_objs[index]))
                cache.add_node(copy.deepcopy(node_objs[index]))
    batch = sides[1].algorithm.batch
    assert batch is not None
    return outcomes, batch.stats.hits


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    nodes=st.sampled_from([5, 40, 150, 320]),
    percentage=st.sampled_from([None, 100, 30, 5]),
)
def test_batching_places_pods_as_one_by_one_scheduling(seed: int, nodes: int, percentage: int | None) -> None:
    _run(seed, nodes, percentage)


def test_identical_pods_hit_the_cache() -> None:
    hits = sum(_run(seed, 150, None)[1] for seed in range(5))
    assert hits > 50


def test_pods_with_pod_affinity_do_not_sign() -> None:
    cache = SchedulerCache()
    rng = random.Random(1)
    for i in range(10):
        cache.add_node(_node(rng, i))
    side = _Side(cache, True, None)
    pod = _pod(rng, "a")
    assert side.fwk.sign_pod(PodInfo(pod)) is not None
    pod["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "x"}}}
            ]
        }
    }
    assert side.fwk.sign_pod(PodInfo(pod)) is None
    spread = _pod(rng, "b")
    spread["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
    ]
    assert side.fwk.sign_pod(PodInfo(spread)) is None
