"""InterPodAffinity support: the NodeInfo / Snapshot lists of pods with affinity, and a property test that
the batch Filter/Score paths (label codes over a NodeSubset) equal the per-node reference on random
clusters."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cache.cache import SchedulerCache
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.interpodaffinity.filtering import PreFilterState
from tests.unit.plugins.ipa_testlib import BOTH, PREF, REQ, P, everything, expr, n, setup, term

# --- NodeInfo lists -----------------------------------------------------------------------------------


def _pods() -> tuple[PodInfo, PodInfo, PodInfo, PodInfo]:
    plain = PodInfo(P("plain").node("n1").obj())
    preferred = PodInfo(P("pref").node("n1").affinity_exists("a", "zone", PREF).obj())
    anti = PodInfo(P("anti").node("n1").anti_exists("a", "zone", REQ).obj())
    # An empty podAffinity still counts as "with affinity", as a non-nil pointer does upstream.
    empty = PodInfo(P("empty").node("n1").raw_affinity({"podAffinity": {}}).obj())
    return plain, preferred, anti, empty


def test_node_info_add_pod_sorts_pods_into_the_affinity_lists() -> None:
    plain, preferred, anti, empty = _pods()
    info = NodeInfo(n("n1"))
    for pod in (plain, preferred, anti, empty):
        info.add_pod(pod)
    assert list(info.pods_with_affinity) == [preferred.key, anti.key, empty.key]
    assert list(info.pods_with_required_anti_affinity) == [anti.key]
    assert not plain.has_pod_affinity and not preferred.has_required_anti_affinity


def test_node_info_remove_pod_and_clone_keep_lists_independent() -> None:
    plain, preferred, anti, empty = _pods()
    info = NodeInfo(n("n1"))
    for pod in (plain, preferred, anti, empty):
        info.add_pod(pod)
    clone = info.clone()
    info.remove_pod(anti.key)
    info.remove_pod(plain.key)
    assert list(info.pods_with_affinity) == [preferred.key, empty.key]
    assert info.pods_with_required_anti_affinity == {}
    # The clone kept its own lists.
    assert list(clone.pods_with_affinity) == [preferred.key, anti.key, empty.key]
    assert list(clone.pods_with_required_anti_affinity) == [anti.key]
    clone.remove_pod(preferred.key)
    assert list(info.pods_with_affinity) == [preferred.key, empty.key]


def test_bad_affinity_type_never_breaks_pod_info() -> None:
    info = PodInfo(P("odd").obj() | {"spec": {"containers": [], "affinity": ["not", "a", "map"]}})
    assert not info.has_pod_affinity and not info.has_required_anti_affinity


# --- Snapshot lists -----------------------------------------------------------------------------------


def _names(nodes: Any) -> set[str]:
    return {node.name for node in nodes}


def _brute(snapshot: Snapshot) -> tuple[set[str], set[str]]:
    infos = snapshot.node_infos()
    return (
        {i.name for i in infos if i.pods_with_affinity},
        {i.name for i in infos if i.pods_with_required_anti_affinity},
    )


def test_snapshot_lists_follow_cache_updates() -> None:
    cache = SchedulerCache()
    for name in ("n1", "n2", "n3"):
        cache.add_node(n(name, {"zone": name}))
    anti = P("anti").node("n1").anti_exists("a", "zone", REQ).obj()
    pref = P("pref").node("n2").affinity_exists("a", "zone", PREF).obj()
    cache.add_pod(anti)
    cache.add_pod(pref)
    cache.add_pod(P("plain").node("n3").obj())
    snapshot = cache.snapshot()
    assert _names(snapshot.have_pods_with_affinity_list()) == {"n1", "n2"}
    assert _names(snapshot.have_pods_with_required_anti_affinity_list()) == {"n1"}

    cache.remove_pod(anti)
    cache.add_pod(P("anti2").node("n3").anti_exists("a", "zone", BOTH).obj())
    cache.update_snapshot(snapshot)
    assert _names(snapshot.have_pods_with_affinity_list()) == {"n2", "n3"}
    assert _names(snapshot.have_pods_with_required_anti_affinity_list()) == {"n3"}

    cache.remove_node(n("n3", {"zone": "n3"}))
    cache.update_snapshot(snapshot)
    with_affinity, with_anti = _brute(snapshot)
    assert _names(snapshot.have_pods_with_affinity_list()) == with_affinity == {"n2"}
    assert _names(snapshot.have_pods_with_required_anti_affinity_list()) == with_anti == set()


# --- PreFilterExtensions AddPod / RemovePod -----------------------------------------------------------


def test_add_then_remove_pod_restores_the_pre_filter_state() -> None:
    incoming = (
        P("in").label("app", "web").affinity_exists("db", "zone", REQ).anti_exists("app", "host", REQ).obj()
    )
    nodes = [n("a", {"zone": "z1", "host": "a"}), n("b", {"zone": "z2", "host": "b"})]
    existing = [P("db").node("a").label("db", "1").anti_exists("app", "zone", REQ).obj()]
    plugin, snapshot = setup(nodes, existing)
    state = CycleState()
    pod = PodInfo(incoming)
    plugin.pre_filter(state, pod, snapshot.node_infos())
    pre: PreFilterState = state.read("PreFilterInterPodAffinity")
    before = pre.clone()
    node_b = snapshot.get("b")
    assert node_b is not None
    added = PodInfo(
        P("more").node("b").labels({"db": "2", "app": "web"}).anti_exists("app", "zone", REQ).obj()
    )
    assert plugin.add_pod(state, pod, added, node_b) is None
    assert pre.affinity_counts == {("zone", "z1"): 1, ("zone", "z2"): 1}
    assert pre.anti_affinity_counts == {("host", "b"): 1}
    assert pre.existing_anti_affinity_counts == {("zone", "z1"): 1, ("zone", "z2"): 1}
    assert plugin.filter(state, pod, node_b) is not None
    assert plugin.remove_pod(state, pod, added, node_b) is None
    assert pre == before


# --- batch == per node on random clusters ----------------------------------------------------------------

KEYS = ("zone", "region", "host", "missing")
LABEL_KEYS = ("app", "tier", "db")
NAMESPACES = ("", "subteam1.team1", "subteam1.team2")

label_sets = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(("a", "b")), max_size=2)
raw_terms = st.builds(
    lambda key, op, values, topo, ns: term(
        topo,
        expr(key, op, *values) if op in ("In", "NotIn") else expr(key, op),
        **ns,
    ),
    st.sampled_from(LABEL_KEYS),
    st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")),
    st.lists(st.sampled_from(("a", "b")), min_size=1, max_size=2),
    st.sampled_from(KEYS),
    st.sampled_from(
        (
            {},
            {"namespaces": ["subteam1.team1"]},
            {"namespace_selector": {"matchLabels": {"team": "team1"}}},
            {"namespace_selector": {}},
        )
    ),
)
term_lists = st.lists(
    st.tuples(st.sampled_from(("aff", "anti")), st.sampled_from((REQ, PREF, BOTH)), raw_terms), max_size=3
)


def _pod(
    labels: dict[str, str], namespace: str, terms: list[tuple[str, str, dict[str, Any]]], node: str = ""
) -> dict[str, Any]:
    builder = P().labels(labels).namespace(namespace).node(node)
    for section, kind, raw in terms:
        if section == "aff":
            builder.affinity_term(raw, kind, weight=3)
        else:
            builder.anti_affinity_term(raw, kind, weight=2)
    return builder.obj()


node_labels = st.fixed_dictionaries(
    {},
    optional={
        "zone": st.sampled_from(("z1", "z2")),
        "region": st.sampled_from(("r1", "r2")),
        "host": st.sampled_from(("h1", "h2", "h3")),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(node_labels, min_size=1, max_size=6),
    existing=st.lists(
        st.tuples(label_sets, st.sampled_from(NAMESPACES), term_lists, st.integers(0, 5)), max_size=8
    ),
    incoming=st.tuples(label_sets, st.sampled_from(NAMESPACES), term_lists),
    weight=st.sampled_from((0, 1, 5)),
)
def test_batch_paths_equal_per_node_paths(
    nodes: list[dict[str, str]],
    existing: list[tuple[dict[str, str], str, list[Any], int]],
    incoming: tuple[dict[str, str], str, list[Any]],
    weight: int,
) -> None:
    node_dicts = [n(f"node{i}", labels) for i, labels in enumerate(nodes)]
    pods = [_pod(labels, ns, terms, f"node{index % len(nodes)}") for labels, ns, terms, index in existing]
    plugin, snapshot = setup(node_dicts, pods, args={"hardPodAffinityWeight": weight})
    pod = PodInfo(_pod(*incoming))
    subset = everything(snapshot)
    infos = list(subset)

    state = CycleState()
    _, status = plugin.pre_filter(state, pod, snapshot.node_infos())
    if status is None:
        per_node = [plugin.filter(state, pod, info) for info in infos]
        batched = plugin.filter_nodes(state, pod, subset)
        assert [_key(s) for s in per_node] == [_key(batched[i]) for i in range(len(infos))]

    state = CycleState()
    if plugin.pre_score(state, pod, infos) is None:
        per_node_scores = [plugin.score(state, pod, info)[0] for info in infos]
        batch_scores = np.asarray(plugin.score_nodes(state, pod, subset))
        assert per_node_scores == batch_scores.tolist()


def _key(status: Any) -> Any:
    return None if status is None else (status.code, status.message())
