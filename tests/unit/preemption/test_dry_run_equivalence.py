"""The preemption dry run takes shortcuts that must not change a decision: lazy CycleState copies
(``scratch_copy``), no AddPod/RemovePod calls when no PreFilter extension is active for the pod, the
Filter plugin list kept on the state, nominated PodInfos kept per node, and (in the Filter loop) the
snapshot node with its nominated pods added kept across cycles. On random clusters (nominated pods,
PDBs, pod anti-affinity and topology spread that activate PreFilter extensions, taints) the dry run must
give exactly the candidates, victims, PDB violations and node statuses of the plain path below, which
does what upstream's code does step by step with eager clones."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.framework.cycle_state import CycleState, scratch_copy
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.defaultpreemption import NO_VICTIMS_MSG, DefaultPreemption
from scheduler.preemption.evaluator import Candidate
from scheduler.preemption.pdb import PodDisruptionBudget, filter_pods_with_pdb_violation
from tests.unit.plugins.plugin_testlib import node
from tests.unit.preemption.test_preemption import Env, mk


class _Nominator:
    def __init__(self, by_node: dict[str, list[PodInfo]]) -> None:
        self.by_node = by_node

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return tuple(self.by_node.get(node_name, ()))

    def nominated_node_names(self) -> Sequence[str]:
        return list(self.by_node)


# --- the plain path (the oracle) ---------------------------------------------------------------------


def _plain_filters_with_nominated(
    fwk: Framework, state: CycleState, pod: PodInfo, node: NodeInfo
) -> Status | None:
    plugins = [p for p in fwk.plugins.filter if p.name not in state.skip_filter_plugins]
    node_with, state_with, added = node, state, False
    for other in fwk.nominated_pods_for_node(node.name):
        if other.priority < pod.priority or other.uid == pod.uid:
            continue
        if not added:
            node_with, state_with, added = node.clone(), state.clone(), True
        node_with.add_pod(other)
        status = fwk.run_pre_filter_extension_add_pod(state_with, pod, other, node_with)
        if status is not None:
            return status
    status = fwk.run_filters(state_with, pod, node_with, plugins)
    if status is not None or not added:
        return status
    return fwk.run_filters(state, pod, node, plugins)


def _plain_select_victims(
    fwk: Framework,
    plugin: DefaultPreemption,
    state: CycleState,
    pod: PodInfo,
    node: NodeInfo,
    pdbs: Sequence[PodDisruptionBudget],
) -> tuple[list[PodInfo], int, Status | None]:
    created = {p.key: i for i, p in enumerate(node.pods.values())}
    potential = [p for p in node.pods.values() if p.priority < pod.priority]
    for victim in potential:
        node.remove_pod(victim.key)
        status = fwk.run_pre_filter_extension_remove_pod(state, pod, victim, node)
        if status is not None:
            return [], 0, status
    if not potential:
        return [], 0, Status(Code.UnschedulableAndUnresolvable, [NO_VICTIMS_MSG])
    status = _plain_filters_with_nominated(fwk, state, pod, node)
    if status is not None:
        return [], 0, status
    violating, non_violating = filter_pods_with_pdb_violation(plugin.order_victims(potential, created), pdbs)
    victims: list[PodInfo] = []
    num_violating = 0
    for group in (violating, non_violating):
        for victim in group:
            node.add_pod(victim)
            status = fwk.run_pre_filter_extension_add_pod(state, pod, victim, node)
            if status is not None:
                return [], 0, status
            if _plain_filters_with_nominated(fwk, state, pod, node) is None:
                continue
            node.remove_pod(victim.key)
            status = fwk.run_pre_filter_extension_remove_pod(state, pod, victim, node)
            if status is not None:
                return [], 0, status
            victims.append(victim)
            num_violating += group is violating
    if violating and non_violating:
        victims = plugin.order_victims(victims, created)
    return victims, num_violating, None


def _plain_dry_run(
    fwk: Framework,
    plugin: DefaultPreemption,
    state: CycleState,
    pod: PodInfo,
    nodes: Sequence[NodeInfo],
    pdbs: Sequence[PodDisruptionBudget],
    offset: int,
    num_candidates: int,
) -> tuple[list[Candidate], dict[str, Status]]:
    non_violating: list[Candidate] = []
    violating: list[Candidate] = []
    statuses: dict[str, Status] = {}
    for i in range(len(nodes)):
        n = nodes[(offset + i) % len(nodes)]
        victims, count, status = _plain_select_victims(fwk, plugin, state.clone(), pod, n.clone(), pdbs)
        if status is None and victims:
            (violating if count else non_violating).append(Candidate(n.name, tuple(victims), count))
            if non_violating and len(non_violating) + len(violating) >= num_candidates:
                break
            continue
        statuses[n.name] = status or Status.as_error(f'expected at least one victim pod on node "{n.name}"')
    return non_violating + violating, statuses


# --- random clusters ---------------------------------------------------------------------------------


def _cluster(seed: int) -> tuple[Env, dict[str, Any], dict[str, list[PodInfo]]]:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(2, 9))]
    nodes = []
    for name in names:
        taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if rng.random() < 0.15 else None
        cpu = rng.choice(["1", "2", "3", "4"])
        labels = {"kubernetes.io/hostname": name}
        alloc = {"cpu": cpu, "memory": "10Gi"}
        nodes.append(node(name, allocatable=alloc, pods=rng.randint(3, 8), taints=taints, labels=labels))
    pods = []
    for i in range(rng.randint(len(names), 5 * len(names))):
        labels = {"app": rng.choice(["a", "b", "c"])}
        cpu = f"{rng.choice([100, 300, 500, 900, 1200])}m"
        priority = rng.choice([0, 5, 10, 20])
        pods.append(
            mk(
                f"p{i}",
                priority,
                {"cpu": cpu},
                node_name=rng.choice(names),
                start=rng.randint(0, 50),
                labels=labels,
            )
        )
    pdbs = []
    if rng.random() < 0.5:
        app = rng.choice(["a", "b"])
        pdbs.append(
            {
                "metadata": {"name": "pdb", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": app}}},
                "status": {"disruptionsAllowed": rng.randint(0, 1)},
            }
        )
    env = Env(nodes, pods, pdbs)
    extra: dict[str, Any] = {}
    shape = rng.random()
    if shape < 0.25:
        # Pod anti-affinity: InterPodAffinity's PreFilter extension is active.
        term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
        extra["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    elif shape < 0.5:
        # A hard spread constraint: PodTopologySpread's PreFilter extension is active.
        extra["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "b"}},
            }
        ]
    preemptor = mk(
        "preemptor",
        rng.choice([10, 15, 30]),
        {"cpu": rng.choice(["500m", "1", "1500m", "2500m"])},
        labels={"app": rng.choice(["a", "b"])},
        extra_spec=extra,
    )
    nominated: dict[str, list[PodInfo]] = {}
    for i in range(rng.randint(0, 4)):
        where = rng.choice(names)
        other = mk(
            f"nom{i}", rng.choice([5, 10, 15, 30]), {"cpu": rng.choice(["500m", "1"])}, labels={"app": "a"}
        )
        nominated.setdefault(where, []).append(PodInfo(other))
    return env, preemptor, nominated


def _key(candidates: Sequence[Candidate]) -> list[tuple[str, list[str], int]]:
    return [(c.name, [v.key for v in c.victims], c.num_pdb_violations) for c in candidates]


def _status_key(statuses: dict[str, Status]) -> dict[str, tuple[Code, str]]:
    return {name: (s.code, s.message()) for name, s in statuses.items()}


@pytest.mark.parametrize("seed", range(150))
def test_dry_run_matches_the_plain_path(seed: int) -> None:
    env, preemptor, nominated = _cluster(seed)
    env.fwk.nominator = _Nominator(nominated)
    state, info = env.prefilter(preemptor)
    nodes = env.snapshot.node_infos()
    pdbs = env.plugin._pdbs()
    offset = seed % len(nodes)
    num = 1 + seed % len(nodes)
    # The cycle's Filter asked for its plugins before PostFilter: the dry run reuses that list.
    env.fwk.filter_plugins_for(state)
    found, statuses, _ = env.plugin.evaluator.dry_run_preemption(state, info, nodes, pdbs, offset, num)
    expected, expected_statuses = _plain_dry_run(env.fwk, env.plugin, state, info, nodes, pdbs, offset, num)
    assert _key(found) == _key(expected)
    assert _status_key(statuses) == _status_key(expected_statuses)


@pytest.mark.parametrize("seed", range(60))
def test_filter_with_nominated_pods_kept_across_cycles_matches_the_plain_path(seed: int) -> None:
    env, preemptor, nominated = _cluster(seed)
    nominator = _Nominator(nominated)
    env.fwk.nominator = nominator
    rng = random.Random(seed)
    for cycle in range(4):
        state, info = env.prefilter(preemptor)
        for n in env.snapshot.node_infos():
            kept = env.fwk.run_filters_with_nominated_pods(state, info, n, snapshot_node=True)
            plain = _plain_filters_with_nominated(env.fwk, state, info, n)
            assert (kept and (kept.code, kept.message())) == (plain and (plain.code, plain.message())), (
                cycle,
                n.name,
            )
        # Between cycles a node's nominations change, or one of its nominated pods is replaced.
        name = rng.choice([n.name for n in env.snapshot.node_infos()])
        extra = mk(f"late{cycle}", rng.choice([10, 30]), {"cpu": "1"})
        nominator.by_node[name] = [*nominator.by_node.get(name, [])[1:], PodInfo(extra)]


class _Clonable:
    def __init__(self, items: list[int]) -> None:
        self.items = items

    def clone(self) -> _Clonable:
        return _Clonable(list(self.items))


@pytest.mark.parametrize("seed", range(40))
def test_scratch_copy_behaves_as_a_clone(seed: int) -> None:
    rng = random.Random(seed)
    base = CycleState()
    for key in "abcd":
        base.write(key, _Clonable([1]) if rng.random() < 0.5 else [1])
    base.skip_filter_plugins.add("X")
    before = {
        key: list(base.read(key).items if isinstance(base.read(key), _Clonable) else base.read(key))
        for key in "abcd"
    }
    copies: list[CycleState] = [base.clone(), scratch_copy(base)]
    nested = rng.random() < 0.5
    if nested:
        # A copy of a copy (a Filter run with nominated pods inside a dry run's node).
        copies = [copies[0].clone(), scratch_copy(copies[1])]
    for _ in range(30):
        op, key = rng.choice(["read", "get", "write", "delete", "contains", "mutate"]), rng.choice("abcde")
        results: list[Any] = []
        for copy in copies:
            if op == "read":
                try:
                    value = copy.read(key)
                    results.append(("v", value.items if isinstance(value, _Clonable) else value))
                except KeyError:
                    results.append(("missing",))
            elif op == "get":
                value = copy.get(key, "default")
                results.append(value.items if isinstance(value, _Clonable) else value)
            elif op == "write":
                copy.write(key, _Clonable([7]))
            elif op == "delete":
                copy.delete(key)
            elif op == "contains":
                results.append(key in copy)
            else:
                value = copy.get(key)
                if isinstance(value, _Clonable):
                    value.items.append(9)
        assert len(results) in (0, 2) and (not results or results[0] == results[1]), (op, key, results)
    for copy in copies:
        assert copy.skip_filter_plugins == {"X"}
    clones = [copy.clone() for copy in copies]
    assert sorted(k for k in "abcde" if k in clones[0]) == sorted(k for k in "abcde" if k in clones[1])
    # The clonable values of the base are untouched by either copy (plain lists are shared, as clone does).
    after = {key: base.read(key).items for key in "abcd" if isinstance(base.read(key), _Clonable)}
    assert after == {key: before[key] for key in after}
