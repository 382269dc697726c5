"""Opportunistic batching (scheduler.cycle.batching) places every pod exactly where one-by-one scheduling
does: same node, same evaluated/feasible counts, same round-robin start index, same FitError text, and
the same scores (each Score plugin's raw and normalised scores of every scored node, and its weight).

Random clusters and random streams of pods drawn from a few templates (so signatures repeat), with
the state changing between pods: each placed pod lands in the cache (the node the next pod must
revalidate), earlier pods are deleted, nodes are updated (taints, cordons) or removed and added.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.cycle.algorithm import SchedulingAlgorithm
from scheduler.cycle.batching import BatchStats
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.runtime import SCORE_BREAKDOWN_KEY, Framework
from scheduler.framework.types import PodInfo
from tests.unit.cycle.test_batch_equivalence import _node, _pod
from tests.unit.fakes import PROFILE, build_frameworks, make_node, make_pod


class _Side:
    def __init__(self, cache: SchedulerCache, batching: bool, percentage: int | None) -> None:
        self.cache = cache
        self.snapshot: Snapshot = cache.snapshot()
        snapshot = self.snapshot
        self.fwk: Framework = build_frameworks(
            lambda: snapshot, None, lambda: 0.0, percentage_of_nodes_to_score=percentage
        )[PROFILE]
        self.algorithm = SchedulingAlgorithm(rng=random.Random(7), batching=batching)

    def schedule(self, pod: dict[str, Any], record: bool = False) -> tuple[Any, ...]:
        self.cache.update_snapshot(self.snapshot)
        info = PodInfo(pod)
        # As explain's recorder does (on by default): each Score plugin's raw and normalised scores
        # and weight, compared between the two sides as well.
        breakdown: list[tuple[str, Any, Any, int]] = []
        try:
            state = CycleState(record_plugin_metrics=record)
            state.write(SCORE_BREAKDOWN_KEY, breakdown)
            result = self.algorithm.schedule_pod(self.fwk, state, info, self.snapshot)
        except FitError as err:
            return ("fit-error", str(err), self.algorithm.next_start_node_index)
        # As a caller may: the pod it scheduled changes afterwards (kept specs must not follow).
        pod["spec"]["nodeName"] = result.node_name
        scores = tuple(
            (plugin, np.asarray(raw).tolist(), np.asarray(values).tolist(), weight)
            for plugin, raw, values, weight in breakdown
        )
        return (
            result.node_name,
            result.evaluated_nodes,
            result.feasible_nodes,
            self.algorithm.next_start_node_index,
            scores,
        )


def _templates(rng: random.Random, count: int) -> list[dict[str, Any]]:
    return [_pod(rng, f"template-{i}") for i in range(count)]


def _instance(template: dict[str, Any], name: str) -> dict[str, Any]:
    pod = copy.deepcopy(template)
    pod["metadata"].update(name=name, uid=f"uid-{name}")
    return pod


def _run(seed: int, nodes: int, percentage: int | None) -> tuple[list[tuple[Any, ...]], BatchStats]:
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
        # Cycles that time each plugin run PreFilter and PreScore even when their state is kept.
        record = rng.random() < 0.2
        answers = [side.schedule(copy.deepcopy(pod), record) for side in sides]
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
    return outcomes, batch.stats


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    nodes=st.sampled_from([5, 40, 150, 320]),
    percentage=st.sampled_from([None, 100, 30, 5]),
)
def test_batching_places_pods_as_one_by_one_scheduling(seed: int, nodes: int, percentage: int | None) -> None:
    _run(seed, nodes, percentage)


def test_identical_pods_hit_the_cache() -> None:
    stats = [_run(seed, 150, None)[1] for seed in range(5)]
    assert sum(s.hits for s in stats) > 50
    # Their PreFilter and PreScore state came from the earlier pod of the signature.
    assert sum(s.pre_filter_replays for s in stats) > 50
    assert sum(s.pre_score_replays for s in stats) > 50


def _contents(value: Any) -> Any:
    """A state value as comparable data: its fields or slots, recursively, else the value itself."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value), tuple(_contents(getattr(value, f.name)) for f in dataclasses.fields(value)))
    slots = getattr(type(value), "__slots__", None)
    if slots is not None and not isinstance(value, (tuple, frozenset, str)):
        return (type(value), tuple(_contents(getattr(value, slot, None)) for slot in slots))
    if isinstance(value, (list, tuple)):
        return tuple(_contents(item) for item in value)
    if isinstance(value, dict):
        return {key: _contents(item) for key, item in value.items()}
    return value


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_replayed_pre_state_is_what_the_plugins_write(seed: int) -> None:
    """The state a pod takes from the earlier pod of its signature holds what PreFilter and PreScore
    write for it, and skips the same plugins; nothing one pod's cycle does to its values reaches the
    next pod's."""
    rng = random.Random(seed)
    cache = SchedulerCache()
    for i in range(30):
        cache.add_node(_node(rng, i))
    side = _Side(cache, True, 100)
    batch = side.algorithm.batch
    assert batch is not None
    template = _pod(rng, "template")
    first = _instance(template, "first")
    side.schedule(first)
    second = PodInfo(_instance(template, "second"))
    signature = side.fwk.sign_pod(second)
    pre = batch.pre_state(PROFILE, signature) if signature is not None else None
    if pre is None or pre.score_data is None:
        # Not signed, or the first pod ended before PreScore (one feasible node, or none).
        return
    earlier = CycleState()
    pre.replay_pre_filter(earlier)
    for value in earlier.written().values():
        # What VolumeBinding's Reserve does to its state in an earlier pod's cycle.
        if hasattr(value, "all_bound"):
            value.all_bound = True
    replayed = CycleState()
    pre.replay_pre_filter(replayed)
    pre.replay_pre_score(replayed)
    computed = CycleState()
    nodes = side.snapshot.node_infos()
    assert side.fwk.run_pre_filter(computed, second, nodes) == (None, None)
    assert side.fwk.run_pre_score(computed, second, nodes) is None
    assert replayed.skip_filter_plugins == computed.skip_filter_plugins
    assert replayed.skip_score_plugins == computed.skip_score_plugins
    assert _contents(replayed.written()) == _contents(computed.written())


def test_signature_parts_kept_per_spec_match_signing_afresh() -> None:
    """sign_pod's parts kept per spec give the signature a framework that never saw the spec gives,
    also after the signed pod changed, and are not used for a pod whose status reports resources."""
    rng = random.Random(3)
    cache = SchedulerCache()
    for i in range(10):
        cache.add_node(_node(rng, i))
    warm = _Side(cache, True, None).fwk
    pods = [_pod(rng, f"p{i}") for i in range(40)]
    for pod in pods:
        warm.sign_pod(PodInfo(pod))
        pod["spec"]["nodeName"] = "n000"
    for pod in pods:
        pod["spec"].pop("nodeName")
        fresh = _Side(cache, True, None).fwk
        assert warm.sign_pod(PodInfo(pod)) == fresh.sign_pod(PodInfo(pod))
    resized = copy.deepcopy(pods[0])
    resized["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "100m"}
    resized["status"] = {
        "phase": "Pending",
        "containerStatuses": [{"name": "c", "allocatedResources": {"cpu": "2"}}],
    }
    fresh = _Side(cache, True, None).fwk
    plain = copy.deepcopy(resized)
    plain.pop("status")
    warm.sign_pod(PodInfo(plain))
    assert warm.sign_pod(PodInfo(resized)) == fresh.sign_pod(PodInfo(resized))
    assert warm.sign_pod(PodInfo(resized)) != warm.sign_pod(PodInfo(plain))


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


def _score_observations(fwk: Framework) -> dict[str, float]:
    name = "scheduler_plugin_execution_duration_seconds_count"
    return {
        plugin.name: REGISTRY.get_sample_value(
            name, {"plugin": plugin.name, "extension_point": "Score", "status": "Success"}
        )
        or 0.0
        for plugin in fwk.plugins.score
    }


def test_cycles_that_time_plugins_observe_every_score_plugin_as_without_batching() -> None:
    """Plugin durations stay complete with batching on (the gate's default): a cycle that times plugins
    reports each Score plugin once, as without batching, even when the cache knows the raw scores."""
    deltas = []
    for batching in (False, True):
        cache = SchedulerCache()
        for i in range(12):
            cache.add_node(make_node(f"n{i}"))
        side = _Side(cache, batching, None)
        before = _score_observations(side.fwk)
        for step in range(5):
            pod = make_pod(f"p{step}")
            node = side.schedule(copy.deepcopy(pod), record=True)[0]
            pod["spec"]["nodeName"] = node
            cache.add_pod(pod)
        after = _score_observations(side.fwk)
        deltas.append({name: after[name] - before[name] for name in after})
    batch = side.algorithm.batch
    assert batch is not None and batch.stats.hits == 4
    assert deltas[1] == deltas[0]
    # Plugins whose PreScore skipped the pod (no spread constraints, no affinity) are observed by neither.
    assert deltas[0]["NodeResourcesFit"] == deltas[0]["TaintToleration"] == 5.0
