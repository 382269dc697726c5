"""The column-based fast paths of PodTopologySpread and InterPodAffinity against their per-node
references, and the snapshot's incremental per-node pod counts and tallies against recounts, on random
clusters changed by random pod adds and removes."""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import pytest

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.framework import NodeSubset, ok_mask
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import StaticLister
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.interpodaffinity import InterPodAffinity
from scheduler.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY, PRE_SCORE_STATE_KEY
from scheduler.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, parse_constraints
from scheduler.plugins.podtopologyspread.filtering import build_filter_state, filter_node, filter_subset
from scheduler.plugins.podtopologyspread.scoring import build_score_state, score_node, score_subset

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
REGION = "region"
APPS = ("a", "b", "c")
NAMESPACES = ("ns1", "ns2")


def _node(rng: random.Random, i: int) -> dict[str, Any]:
    labels = {HOST: f"n{i:03d}"}
    zone = rng.choice(("z1", "z2", "z3", "", None))
    if zone is not None:
        labels[ZONE] = zone
    if rng.random() < 0.7:
        labels[REGION] = rng.choice(("r1", "r2"))
    if rng.random() < 0.3:
        labels["disk"] = rng.choice(("ssd", "hdd"))
    spec: dict[str, Any] = {}
    if rng.random() < 0.2:
        spec["taints"] = [{"key": "dedicated", "value": rng.choice(("x", "y")), "effect": "NoSchedule"}]
    return {
        "metadata": {"name": f"n{i:03d}", "labels": labels},
        "spec": spec,
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"}},
    }


def _labels(rng: random.Random) -> dict[str, str]:
    labels = {"app": rng.choice(APPS)}
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(("x", "y"))
    return labels


def _pod(rng: random.Random, name: str, node_name: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": rng.choice(NAMESPACES),
        "uid": name,
        "labels": _labels(rng),
    }
    if node_name and rng.random() < 0.05:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "10m"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": meta, "spec": spec}


def _selector(rng: random.Random) -> dict[str, Any] | None:
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.1:
        return {}
    if roll < 0.6:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist"))
    expr: dict[str, Any] = {"key": rng.choice(("app", "tier")), "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = rng.sample((*APPS, "x", "y"), 2)
    return {"matchExpressions": [expr]}


def _constraints(rng: random.Random, when: str) -> list[dict[str, Any]]:
    out = []
    for key in rng.sample((ZONE, HOST, REGION), rng.randint(1, 3)):
        raw: dict[str, Any] = {
            "maxSkew": rng.randint(1, 3),
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": _selector(rng),
        }
        if rng.random() < 0.3:
            raw["minDomains"] = rng.randint(1, 5)
        if rng.random() < 0.3:
            raw["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.3:
            raw["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        out.append(raw)
    return out


def _incoming(rng: random.Random, name: str) -> PodInfo:
    raw = _pod(rng, name)
    if rng.random() < 0.3:
        raw["spec"]["nodeSelector"] = {"disk": "ssd"}
    if rng.random() < 0.3:
        raw["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "x"}]
    return PodInfo(raw)


def _cluster(seed: int, nodes: int) -> tuple[random.Random, SchedulerCache, Snapshot, list[dict[str, Any]]]:
    rng = random.Random(seed)
    cache = SchedulerCache()
    for i in range(nodes):
        cache.add_node(_node(rng, i))
    pods = [_pod(rng, f"e{j}", f"n{rng.randrange(nodes):03d}") for j in range(nodes * 2)]
    for raw in pods:
        cache.add_pod(raw)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return rng, cache, snapshot, pods


def _churn(
    rng: random.Random, cache: SchedulerCache, pods: list[dict[str, Any]], nodes: int, step: int
) -> None:
    for k in range(rng.randint(0, 6)):
        if pods and rng.random() < 0.5:
            cache.remove_pod(pods.pop(rng.randrange(len(pods))))
        else:
            raw = _pod(rng, f"s{step}-{k}", f"n{rng.randrange(nodes):03d}")
            pods.append(raw)
            cache.add_pod(raw)


def _count_app(app: str) -> Any:
    def count(info: NodeInfo) -> int:
        return sum(1 for p in info.pods.values() if (p.pod["metadata"].get("labels") or {}).get("app") == app)

    return count


def _tally_apps(info: NodeInfo) -> Mapping[Hashable, int]:
    out: dict[Hashable, int] = {}
    for p in info.pods.values():
        app = (p.pod["metadata"].get("labels") or {}).get("app")
        out[app] = out.get(app, 0) + 1
    return out


@pytest.mark.parametrize("seed", range(6))
def test_row_counts_and_tallies_follow_random_changes(seed: int) -> None:
    nodes = 40
    rng, cache, snapshot, pods = _cluster(seed, nodes)
    for step in range(60):
        columns = snapshot.columns()
        infos = list(snapshot.node_infos())
        # Ask for only some keys each step, so some fall behind by several updates.
        for app in rng.sample(APPS, rng.randint(1, 3)):
            got = columns.row_counts(("test", app), _count_app(app))
            assert got.tolist() == [_count_app(app)(info) for info in infos]
        if rng.random() < 0.6:
            tally = columns.row_tally("test/apps", _tally_apps)
            want: dict[Hashable, int] = {}
            for info in infos:
                for fact, number in _tally_apps(info).items():
                    want[fact] = want.get(fact, 0) + number
            assert dict(tally.totals) == want
            for app in APPS:
                assert tally.column(app).tolist() == [_tally_apps(info).get(app, 0) for info in infos]
        _churn(rng, cache, pods, nodes, step)
        if step % 17 == 16:
            cache.add_node(_node(rng, nodes))  # a new node: the list (and columns) are rebuilt
            nodes += 1
        cache.update_snapshot(snapshot)


def _subset(snapshot: Snapshot, rng: random.Random) -> NodeSubset:
    count = snapshot.num_nodes()
    positions = np.array(sorted(rng.sample(range(count), rng.randint(1, count))), dtype=np.int64)
    return NodeSubset(snapshot.columns(), positions)


@pytest.mark.parametrize("seed", range(10))
def test_spread_state_from_columns_matches_per_node_counting(seed: int) -> None:
    nodes = 30 + seed * 7
    rng, cache, snapshot, pods = _cluster(seed, nodes)
    for step in range(25):
        all_nodes = snapshot.node_infos()
        columns = snapshot.columns()
        pod = _incoming(rng, f"p{step}")
        labels = pod.pod["metadata"]["labels"]
        hard = parse_constraints(_constraints(rng, DO_NOT_SCHEDULE), labels, DO_NOT_SCHEDULE, "c")
        fast = build_filter_state(pod, hard, all_nodes, columns)
        reference = build_filter_state(pod, hard, list(all_nodes))
        assert fast.min_counts == reference.min_counts
        assert fast.self_match == reference.self_match
        subset = _subset(snapshot, rng)
        got = ok_mask(filter_subset(fast, subset)).tolist()
        want = [filter_node(reference, info) is None for info in subset]
        assert got == want
        assert fast.counts == reference.counts

        soft = parse_constraints(_constraints(rng, SCHEDULE_ANYWAY), labels, SCHEDULE_ANYWAY, "c")
        require_all = rng.random() < 0.5
        fast_score = build_score_state(
            pod, soft, subset, all_nodes, require_all_topologies=require_all, columns=columns
        )
        reference_score = build_score_state(
            pod, soft, list(subset), list(all_nodes), require_all_topologies=require_all
        )
        assert fast_score.weights == reference_score.weights
        assert fast_score.ignored == reference_score.ignored
        got_scores = score_subset(fast_score, pod, subset).tolist()
        assert got_scores == [score_node(reference_score, pod, info) for info in subset]
        assert fast_score.counts == reference_score.counts

        _churn(rng, cache, pods, nodes, step)
        if rng.random() < 0.3:
            # Labels change too: what PreFilter and PreScore keep of the nodes' labels must follow.
            _relabel(rng, cache, nodes)
        cache.update_snapshot(snapshot)


def _relabel(rng: random.Random, cache: SchedulerCache, nodes: int) -> None:
    """A node's labels drawn again (zone, region and disk may appear, change or go)."""
    i = rng.randrange(nodes)
    info = cache.node_info(f"n{i:03d}")
    assert info is not None and info.node is not None
    new = _node(rng, i)
    new["metadata"]["resourceVersion"] = str(rng.randrange(10**6))
    cache.update_node(info.node, new)


# --- InterPodAffinity -------------------------------------------------------------------------------

NAMESPACE_OBJECTS = [
    {"metadata": {"name": "ns1", "labels": {"team": "t1"}}},
    {"metadata": {"name": "ns2", "labels": {"team": "t2"}}},
]


class _Handle:
    """A handle over a real Snapshot (column fast paths) or one hiding its columns (references)."""

    def __init__(self, snapshot: Any, *, columns: bool) -> None:
        self._snapshot = snapshot if columns else _NoColumns(snapshot)
        self._namespaces = StaticLister(NAMESPACE_OBJECTS)

    @property
    def snapshot(self) -> Any:
        return self._snapshot

    def lister(self, resource: Any) -> StaticLister:
        return self._namespaces


class _NoColumns:
    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def node_infos(self) -> Any:
        return self._snapshot.node_infos()

    def have_pods_with_affinity_list(self) -> Any:
        return self._snapshot.have_pods_with_affinity_list()

    def have_pods_with_required_anti_affinity_list(self) -> Any:
        return self._snapshot.have_pods_with_required_anti_affinity_list()


def _affinity_term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {
        "labelSelector": _selector(rng),
        "topologyKey": rng.choice((ZONE, HOST, REGION)),
    }
    roll = rng.random()
    if roll < 0.3:
        term["namespaces"] = rng.sample(NAMESPACES, rng.randint(1, 2))
    elif roll < 0.45:
        term["namespaceSelector"] = rng.choice(({}, {"matchLabels": {"team": "t1"}}))
    return term


def _affinity(rng: random.Random, chance: float) -> dict[str, Any] | None:
    if rng.random() > chance:
        return None
    out: dict[str, Any] = {}
    for section in ("podAffinity", "podAntiAffinity"):
        part: dict[str, Any] = {}
        if rng.random() < 0.4:
            part["requiredDuringSchedulingIgnoredDuringExecution"] = [
                _affinity_term(rng) for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < 0.4:
            part["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _affinity_term(rng)}
                for _ in range(rng.randint(1, 2))
            ]
        if part:
            out[section] = part
    return out or None


def _affinity_pod(rng: random.Random, name: str, node_name: str = "", chance: float = 0.3) -> dict[str, Any]:
    raw = _pod(rng, name, node_name)
    affinity = _affinity(rng, chance)
    if affinity:
        raw["spec"]["affinity"] = affinity
    return raw


@pytest.mark.parametrize("seed", range(10))
def test_inter_pod_affinity_from_columns_matches_the_references(seed: int) -> None:
    rng = random.Random(seed)
    nodes = 30 + seed * 5
    cache = SchedulerCache()
    for i in range(nodes):
        cache.add_node(_node(rng, i))
    pods = [_affinity_pod(rng, f"e{j}", f"n{rng.randrange(nodes):03d}") for j in range(nodes * 2)]
    for raw in pods:
        cache.add_pod(raw)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    hard_weight = rng.choice((0, 1, 5))
    fast = InterPodAffinity({"hardPodAffinityWeight": hard_weight}, _Handle(snapshot, columns=True))  # type: ignore[arg-type]
    reference = InterPodAffinity({"hardPodAffinityWeight": hard_weight}, _Handle(snapshot, columns=False))  # type: ignore[arg-type]
    for step in range(25):
        pod = PodInfo(_affinity_pod(rng, f"p{step}", chance=0.8))
        all_nodes = snapshot.node_infos()
        fast_state, reference_state = CycleState(), CycleState()
        got = fast.pre_filter(fast_state, pod, all_nodes)
        want = reference.pre_filter(reference_state, pod, list(all_nodes))
        assert (got[0], _status(got[1])) == (want[0], _status(want[1]))
        subset = _subset(snapshot, rng)
        if got[1] is None:
            fast_pre = fast_state.read(PRE_FILTER_STATE_KEY)
            got_ok = ok_mask(fast.filter_nodes(fast_state, pod, subset)).tolist()
            want_statuses = [reference.filter(reference_state, pod, info) for info in subset]
            assert got_ok == [s is None for s in want_statuses]
            got_statuses = fast.filter_nodes(fast_state, pod, subset)
            assert [_status(got_statuses[i]) for i in range(len(subset))] == [
                _status(s) for s in want_statuses
            ]
            assert fast_pre == reference_state.read(PRE_FILTER_STATE_KEY)

        score_status = fast.pre_score(fast_state, pod, subset)
        assert _status(score_status) == _status(reference.pre_score(reference_state, pod, subset))
        if score_status is None:
            got_scores = fast.score_nodes(fast_state, pod, subset)
            want_scores = [reference.score(reference_state, pod, info)[0] for info in subset]
            assert list(np.asarray(got_scores).tolist()) == want_scores
            got_norm = fast.normalize_score_array(fast_state, pod, np.asarray(got_scores, dtype=np.int64))
            want_norm = reference.normalize_score_array(
                reference_state, pod, np.asarray(want_scores, dtype=np.int64)
            )
            assert got_norm.tolist() == want_norm.tolist()
            assert (
                fast_state.read(PRE_SCORE_STATE_KEY).topology_score
                == reference_state.read(PRE_SCORE_STATE_KEY).topology_score
            )

        for k in range(rng.randint(0, 6)):
            if pods and rng.random() < 0.5:
                cache.remove_pod(pods.pop(rng.randrange(len(pods))))
            else:
                raw = _affinity_pod(rng, f"s{step}-{k}", f"n{rng.randrange(nodes):03d}")
                pods.append(raw)
                cache.add_pod(raw)
        cache.update_snapshot(snapshot)


def _status(status: Any) -> Any:
    return None if status is None else (status.code, tuple(status.reasons))
