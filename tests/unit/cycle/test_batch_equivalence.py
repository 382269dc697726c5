"""The vectorised Filter/Score path (plugin-declared node columns, scheduler.cycle.filter_loop) gives the
per-node path's answers.

Random clusters (taints, cordons, full nodes, extended resources, ephemeral storage) and random pods
(tolerations, node selectors, host ports, scalar requests) are judged both ways: plugin by plugin, and
by the whole Filter loop (feasible nodes, processed count, every rejection's status) and Score.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.cache.columns import NodeColumns
from scheduler.cycle.algorithm import SchedulingAlgorithm, num_feasible_nodes_to_find
from scheduler.framework import InternedColumn, NodeSubset, ok_mask
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import BatchScoreExtensions, BatchScorePlugin, ScoreExtensions
from scheduler.framework.resources import pod_requests, pod_requests_and_non_zero
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, NodeScore, PodInfo
from scheduler.plugins.nodeaffinity import NodeAffinity
from tests.unit.fakes import PROFILE, build_frameworks

EXT = "example.com/gpu"


def _node(rng: random.Random, i: int) -> dict[str, Any]:
    alloc = {
        "cpu": rng.choice(["1", "4", "500m", "8", "16"]),
        "memory": rng.choice(["1Gi", "4Gi", "16Gi", "3000Mi", "64Gi"]),
        "pods": str(rng.choice([3, 110, 110, 110])),
    }
    if rng.random() < 0.3:
        alloc["ephemeral-storage"] = rng.choice(["1Gi", "10Gi"])
    if rng.random() < 0.2:
        alloc[EXT] = str(rng.choice([0, 1, 4]))
    spec: dict[str, Any] = {}
    taints = []
    if rng.random() < 0.2:
        taints.append({"key": "dedicated", "value": rng.choice(["a", "b"]), "effect": "NoSchedule"})
    if rng.random() < 0.3:
        taints.append({"key": rng.choice(["x", "y"]), "effect": "PreferNoSchedule"})
    if taints:
        spec["taints"] = taints
    if rng.random() < 0.1:
        spec["unschedulable"] = True
    return {
        "metadata": {
            "name": f"n{i:03d}",
            "uid": f"node-{i}",
            "resourceVersion": "1",
            "labels": {
                "kubernetes.io/hostname": f"n{i:03d}",
                "zone": rng.choice(["a", "b", "c"]),
                **({"disk": rng.choice(["ssd", "hdd"])} if rng.random() < 0.6 else {}),
                **({"rank": str(rng.randrange(10))} if rng.random() < 0.5 else {}),
            },
        },
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }


def _requirement(rng: random.Random) -> dict[str, Any]:
    kind = rng.randrange(6)
    if kind == 0:
        return {"key": "zone", "operator": "In", "values": rng.sample(["a", "b", "c", "z"], 2)}
    if kind == 1:
        return {"key": "disk", "operator": "NotIn", "values": ["hdd"]}
    if kind == 2:
        return {"key": "disk", "operator": rng.choice(["Exists", "DoesNotExist"])}
    if kind == 3:
        return {"key": "rank", "operator": rng.choice(["Gt", "Lt"]), "values": [str(rng.randrange(10))]}
    if kind == 4:
        return {"key": "missing", "operator": "NotIn", "values": ["x"]}
    return {"key": "zone", "operator": "In", "values": ["b"]}


def _term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": [_requirement(rng) for _ in range(rng.randrange(1, 3))]}
    if rng.random() < 0.1:
        term["matchFields"] = [
            {"key": "metadata.name", "operator": rng.choice(["In", "NotIn"]), "values": ["n001"]}
        ]
    return term


def _affinity(rng: random.Random) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    if rng.random() < 0.25:
        terms = [_term(rng) for _ in range(rng.randrange(1, 3))]
        if rng.random() < 0.3:
            # A term the API server accepts but that does not parse: it matches nothing (lazy error).
            bad = {"key": "rank", "operator": rng.choice(["Gt", "Lt"]), "values": ["1_0"]}
            terms.insert(rng.randrange(len(terms) + 1), {"matchExpressions": [bad]})
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if rng.random() < 0.25:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randrange(1, 100), "preference": _term(rng)} for _ in range(rng.randrange(1, 3))
        ]
    return affinity


def _pod(rng: random.Random, name: str, node_name: str = "") -> dict[str, Any]:
    requests: dict[str, str] = {}
    if rng.random() < 0.8:
        requests["cpu"] = rng.choice(["100m", "250m", "1", "3"])
    if rng.random() < 0.8:
        requests["memory"] = rng.choice(["128Mi", "1Gi", "6Gi"])
    if rng.random() < 0.15:
        requests["ephemeral-storage"] = rng.choice(["500Mi", "5Gi"])
    if rng.random() < 0.1:
        requests[EXT] = "1"
    container: dict[str, Any] = {"name": "c", "image": "busybox", "resources": {"requests": requests}}
    if rng.random() < 0.1:
        container["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    spec: dict[str, Any] = {"schedulerName": PROFILE, "containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    if rng.random() < 0.3:
        spec["tolerations"] = [
            {"key": "dedicated", "operator": "Equal", "value": rng.choice(["a", "b"]), "effect": "NoSchedule"}
        ]
    if rng.random() < 0.1:
        spec["tolerations"] = [{"operator": "Exists"}]
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"zone": rng.choice(["a", "b"])}
    affinity = _affinity(rng)
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def _cluster(seed: int, nodes: int = 150) -> tuple[SchedulerCache, Snapshot, Framework, random.Random]:
    rng = random.Random(seed)
    cache = SchedulerCache()
    for i in range(nodes):
        cache.add_node(_node(rng, i))
    for j in range(nodes // 2):
        cache.add_pod(_pod(rng, f"existing-{j}", node_name=f"n{rng.randrange(nodes):03d}"))
    snapshot = cache.snapshot()
    fwk = build_frameworks(lambda: snapshot, None, lambda: 0.0)[PROFILE]
    return cache, snapshot, fwk, rng


def _key(status: Status | None) -> tuple[Any, ...] | None:
    return None if status is None else (status.code, tuple(status.reasons), status.plugin)


def _reference_filter(
    fwk: Framework, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], start: int, num_to_find: int
) -> tuple[list[str], int, dict[str, tuple[Any, ...] | None]]:
    """The one-node-at-a-time loop the batch path replaces."""
    plugins = fwk.filter_plugins_for(state)
    feasible: list[str] = []
    rejected: dict[str, tuple[Any, ...] | None] = {}
    processed = 0
    for i in range(len(nodes)):
        node = nodes[(start + i) % len(nodes)]
        processed += 1
        status = fwk.run_filters(state, pod, node, plugins)
        if status is None:
            feasible.append(node.name)
            if len(feasible) >= num_to_find:
                break
        else:
            rejected[node.name] = _key(status)
    return feasible, processed, rejected


@pytest.mark.parametrize("seed", range(12))
def test_filter_loop_matches_the_per_node_loop(seed: int) -> None:
    # Small clusters run out of feasible nodes; large ones stop early, mid-window.
    _, snapshot, fwk, rng = _cluster(seed, nodes=150 if seed % 2 else 600)
    nodes = list(snapshot.node_infos())
    for attempt in range(15):
        pod = PodInfo(_pod(rng, f"p{attempt}"))
        start = rng.randrange(len(nodes))
        num_to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, len(nodes))

        state = CycleState()
        pre_result, pre_status = fwk.run_pre_filter(state, pod, nodes)
        if pre_status is not None or (pre_result is not None and pre_result.node_names is not None):
            continue
        want = _reference_filter(fwk, state, pod, nodes, start, num_to_find)

        algorithm = SchedulingAlgorithm(rng=random.Random(0))
        algorithm.next_start_node_index = start
        batch_state = CycleState()
        feasible, diagnosis = algorithm._find_nodes_that_fit(fwk, batch_state, pod, nodes, snapshot)
        assert isinstance(feasible, NodeSubset)
        got_rejected = {name: _key(status) for name, status in diagnosis.node_to_status.items()}
        assert [n.name for n in feasible] == want[0]
        assert algorithm.next_start_node_index == (start + want[1]) % len(nodes)
        assert got_rejected == want[2]

        if len(feasible) > 1:
            assert fwk.run_pre_score(batch_state, pod, feasible) is None
            reference_state = CycleState()
            fwk.run_pre_filter(reference_state, pod, nodes)
            assert fwk.run_pre_score(reference_state, pod, list(feasible)) is None
            batch_scores = fwk.run_score_array(batch_state, pod, feasible).tolist()
            assert batch_scores == _reference_scores(fwk, reference_state, pod, list(feasible))


def _reference_scores(fwk: Framework, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[int]:
    totals = [0] * len(nodes)
    for plugin in fwk.plugins.score:
        if plugin.name in state.skip_score_plugins:
            continue
        scores = [NodeScore(node.name, plugin.score(state, pod, node)[0]) for node in nodes]
        normalize = getattr(plugin, "normalize_score", None)
        if normalize is not None:
            normalize(state, pod, scores)
        weight = fwk.score_weights.get(plugin.name, 1)
        totals = [total + s.score * weight for total, s in zip(totals, scores, strict=True)]
    return totals


@pytest.mark.parametrize("seed", range(8))
def test_each_batch_plugin_matches_its_per_node_answers(seed: int) -> None:
    _, snapshot, fwk, rng = _cluster(seed, nodes=60)
    columns = snapshot.columns(fwk.node_columns)
    everything = NodeSubset(columns, np.arange(len(columns), dtype=np.int64))
    for attempt in range(10):
        pod = PodInfo(_pod(rng, f"p{attempt}"))
        state = CycleState()
        fwk.run_pre_filter(state, pod, everything)
        for plugin in fwk.plugins.filter:
            batch = fwk.batch_filter(plugin)
            if batch is None:
                continue
            statuses = batch.filter_nodes(state, pod, everything)
            ok = ok_mask(statuses)
            for index, node in enumerate(everything):
                want = plugin.filter(state, pod, node)
                assert ok[index] == (want is None), (plugin.name, node.name)
                assert _key(statuses[index]) == _key(want), (plugin.name, node.name)
        if fwk.run_pre_score(state, pod, everything) is not None:
            continue
        for scorer in fwk.plugins.score:
            if scorer.name in state.skip_score_plugins or not isinstance(scorer, BatchScorePlugin):
                continue
            got = np.asarray(scorer.score_nodes(state, pod, everything), dtype=np.int64)
            want_scores = [NodeScore(n.name, scorer.score(state, pod, n)[0]) for n in everything]
            assert got.tolist() == [s.score for s in want_scores], scorer.name
            if isinstance(scorer, BatchScoreExtensions) and isinstance(scorer, ScoreExtensions):
                scorer.normalize_score(state, pod, want_scores)
                normalised = scorer.normalize_score_array(state, pod, got)
                assert normalised.tolist() == [s.score for s in want_scores], scorer.name


@pytest.mark.parametrize("seed", range(6))
def test_fit_filter_on_small_windows_matches_its_per_node_answers(seed: int) -> None:
    """Windows of a few nodes often all fit: NodeResourcesFit then answers from the room-left columns
    alone (``all_fit_batch``). Overcommitted nodes (negative room) and pods requesting nothing of a
    resource are among them."""
    cache, snapshot, fwk, rng = _cluster(seed, nodes=60)
    for j in range(20):
        # Overcommit some nodes: bound pods count whatever they request.
        cache.add_pod(
            {
                **_pod(rng, f"big-{j}", node_name=f"n{rng.randrange(60):03d}"),
                "spec": {
                    "nodeName": f"n{rng.randrange(60):03d}",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "20", "memory": "64Gi"}}}],
                },
            }
        )
    cache.update_snapshot(snapshot)
    columns = snapshot.columns(fwk.node_columns)
    [fit] = [p for p in fwk.plugins.filter if p.name == "NodeResourcesFit"]
    batch = fwk.batch_filter(fit)
    assert batch is not None
    all_passed = 0
    for attempt in range(60):
        pod = PodInfo(_pod(rng, f"p{attempt}"))
        state = CycleState()
        fwk.run_pre_filter(state, pod, snapshot.node_infos())
        size = rng.randrange(1, 6)
        window = NodeSubset(columns, np.asarray(rng.sample(range(len(columns)), size), dtype=np.int64))
        statuses = batch.filter_nodes(state, pod, window)
        wanted = [fit.filter(state, pod, node) for node in window]
        assert [_key(s) for s in statuses] == [_key(w) for w in wanted]
        all_passed += all(w is None for w in wanted)
    assert all_passed > 0


def test_columns_follow_the_cache_through_snapshot_updates() -> None:
    cache, snapshot, fwk, rng = _cluster(3, nodes=40)
    built = snapshot.columns(fwk.node_columns)
    for j in range(60):
        name = f"n{rng.randrange(40):03d}"
        cache.add_pod(_pod(rng, f"later-{j}", node_name=name))
        if j % 7 == 0:
            cache.remove_pod(_pod(rng, f"existing-{j}", node_name=name))
        if j % 11 == 0:
            node = _node(rng, rng.randrange(40))
            cache.update_node(None, node)
        cache.update_snapshot(snapshot)
    kept = snapshot.columns(fwk.node_columns)
    assert kept is built, "updated row by row, not rebuilt"
    fresh = cache.snapshot().columns(fwk.node_columns)
    assert fwk.node_columns
    for spec in fwk.node_columns:
        if isinstance(spec, InternedColumn):
            # Codes depend on the order values were first seen: compare what they stand for.
            key = spec.key or (lambda value: value)
            assert [key(v) if v is not None else None for v in _decoded(kept, spec)] == [
                key(v) if v is not None else None for v in _decoded(fresh, spec)
            ], spec.name
        else:
            assert kept.array(spec).tolist() == fresh.array(spec).tolist(), spec.name
        if isinstance(spec, InternedColumn) or spec.count_nonzero:
            assert kept.nonzero_rows(spec) == fresh.nonzero_rows(spec), spec.name
    assert [info.name for info in kept.infos] == [info.name for info in snapshot.node_infos()]


def _decoded(columns: NodeColumns, spec: InternedColumn) -> list[Any]:
    values = columns.distinct(spec)
    return [values[code] for code in columns.array(spec).tolist()]


@pytest.mark.parametrize("seed", range(4))
def test_node_affinity_with_added_affinity_matches_per_node(seed: int) -> None:
    _, snapshot, _, rng = _cluster(seed, nodes=80)
    columns = snapshot.columns()
    everything = NodeSubset(columns, np.arange(len(columns), dtype=np.int64))
    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_term(rng)]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 7, "preference": _term(rng)}],
    }
    plugin = NodeAffinity({"addedAffinity": added})
    for attempt in range(10):
        pod = PodInfo(_pod(rng, f"p{attempt}"))
        state = CycleState()
        plugin.pre_filter(state, pod, everything)
        statuses = plugin.filter_nodes(state, pod, everything)
        for index, node in enumerate(everything):
            assert _key(statuses[index]) == _key(plugin.filter(state, pod, node)), node.name
        if plugin.pre_score(state, pod, everything) is None:
            got = np.asarray(plugin.score_nodes(state, pod, everything)).tolist()
            assert got == [plugin.score(state, pod, node)[0] for node in everything]


@pytest.mark.parametrize("seed", range(6))
def test_one_pass_pod_requests_match_the_general_rules(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        containers = []
        for i in range(rng.randrange(0, 4)):
            requests = {
                name: rng.choice(values)
                for name, values in (("cpu", ["0", "100m", "2"]), ("memory", ["0", "64Mi"]), (EXT, ["1"]))
                if rng.random() < 0.6
            }
            containers.append({"name": f"c{i}", "resources": {"requests": requests}})
        spec: dict[str, Any] = {"containers": containers}
        if rng.random() < 0.2:
            spec["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]
        if rng.random() < 0.1:
            spec["overhead"] = {"cpu": "10m"}
        pod = {"spec": spec}
        plain, non_zero = pod_requests_and_non_zero(pod)
        assert plain == pod_requests(pod)
        assert non_zero == pod_requests(pod, non_zero=True)
