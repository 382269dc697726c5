"""A dry run's node judged by arithmetic (``Framework.amounts_trial``) must decide exactly as Filter runs
on a copy of the node do: the same victims, PDB violations and node statuses (code, message, plugin).

Oracles: the plain dry run of test_dry_run_equivalence (upstream's steps with eager clones), and the
general trial (``CopyTrial``) step by step. The random clusters here are the ones the arithmetic takes
(Filter plugins that ignore the pods, and NodeResourcesFit): cpu, memory, an extended resource, pod-count
limits, taints, cordoned nodes, nominated pods of every priority, PDBs. The shapes it must refuse fall
back to a copy, and are checked to.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, cast

import pytest

from scheduler.framework.cycle_state import CycleState, scratch_copy
from scheduler.framework.resources import comparable_amounts
from scheduler.framework.status import Status
from scheduler.framework.trial import AmountsTrial
from scheduler.framework.types import PodInfo
from scheduler.preemption.pdb import PodDisruptionBudget, parse_pdbs
from scheduler.preemption.trial import CopyTrial, DryRunVerdicts, copy_or_amounts
from tests.unit.plugins.plugin_testlib import node
from tests.unit.preemption.test_dry_run_equivalence import _key, _Nominator, _plain_dry_run, _status_key
from tests.unit.preemption.test_preemption import Env, mk

GPU = "example.com/gpu"


def _cluster(seed: int) -> tuple[Env, dict[str, Any], dict[str, list[PodInfo]]]:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(2, 10))]
    nodes = []
    for name in names:
        taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if rng.random() < 0.15 else None
        alloc = {
            "cpu": rng.choice(["1", "2", "3", "4"]),
            "memory": rng.choice(["2Gi", "4Gi", "10Gi"]),
        }
        if rng.random() < 0.3:
            alloc[GPU] = str(rng.randint(0, 4))
        nodes.append(
            node(
                name,
                allocatable=alloc,
                # Small pod limits: "Too many pods" is decided by the count alone.
                pods=rng.randint(2, 8),
                taints=taints,
                unschedulable=rng.random() < 0.1,
                labels={"kubernetes.io/hostname": name},
            )
        )
    pods = []
    for i in range(rng.randint(len(names), 6 * len(names))):
        res = {
            "cpu": f"{rng.choice([0, 100, 300, 500, 900, 1200])}m",
            "memory": rng.choice(["0", "500Mi", "1Gi"]),
        }
        if rng.random() < 0.2:
            res[GPU] = str(rng.randint(1, 2))
        pods.append(
            mk(
                f"p{i}",
                rng.choice([0, 5, 10, 20]),
                res,
                node_name=rng.choice(names),
                start=rng.choice([None, rng.randint(0, 50)]),
                labels={"app": rng.choice(["a", "b", "c"])},
            )
        )
    pdbs = []
    if rng.random() < 0.5:
        pdbs.append(
            {
                "metadata": {"name": "pdb", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": rng.choice(["a", "b"])}}},
                "status": {"disruptionsAllowed": rng.randint(0, 2)},
            }
        )
    env = Env(nodes, pods, pdbs)
    wanted = {
        "cpu": rng.choice(["0", "500m", "1", "1500m", "2500m"]),
        "memory": rng.choice(["0", "1Gi", "3Gi"]),
    }
    if rng.random() < 0.3:
        wanted[GPU] = str(rng.randint(1, 3))
    extra: dict[str, Any] = {}
    if rng.random() < 0.3:
        extra["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    preemptor = mk("preemptor", rng.choice([10, 15, 30]), wanted, extra_spec=extra)
    nominated: dict[str, list[PodInfo]] = {}
    for i in range(rng.randint(0, 6)):
        res = {"cpu": rng.choice(["0", "500m", "1"]), "memory": rng.choice(["0", "1Gi"])}
        other = mk(f"nom{i}", rng.choice([5, 10, 15, 30]), res)
        nominated.setdefault(rng.choice(names), []).append(PodInfo(other))
    if rng.random() < 0.2:
        # The preemptor's own nomination never counts against it.
        nominated.setdefault(rng.choice(names), []).append(PodInfo(preemptor))
    return env, preemptor, nominated


def _explained(status: Status | None) -> tuple[Any, ...] | None:
    return None if status is None else (status.code, status.message(), status.plugin)


@pytest.mark.parametrize("seed", range(300))
def test_dry_run_by_arithmetic_matches_the_plain_path(seed: int) -> None:
    env, preemptor, nominated = _cluster(seed)
    env.fwk.nominator = _Nominator(nominated)
    state, info = env.prefilter(preemptor)
    nodes = env.snapshot.node_infos()
    # These clusters are the arithmetic's: every node is judged without a copy.
    assert all(env.fwk.amounts_trial(state, info, n) is not None for n in nodes)
    pdbs = env.plugin._pdbs()
    offset = seed % len(nodes)
    num = 1 + seed % len(nodes)
    found, statuses, _ = env.plugin.evaluator.dry_run_preemption(state, info, nodes, pdbs, offset, num)
    expected, expected_statuses = _plain_dry_run(env.fwk, env.plugin, state, info, nodes, pdbs, offset, num)
    assert _key(found) == _key(expected)
    assert _status_key(statuses) == _status_key(expected_statuses)
    assert {n: s.plugin for n, s in statuses.items()} == {n: s.plugin for n, s in expected_statuses.items()}


@pytest.mark.parametrize("seed", range(150))
def test_each_step_matches_filter_on_a_copy(seed: int) -> None:
    """Any sequence of pods taken off and given back: after each, the same verdict as on a copy."""
    env, preemptor, nominated = _cluster(seed)
    env.fwk.nominator = _Nominator(nominated)
    state, info = env.prefilter(preemptor)
    rng = random.Random(seed)
    for n in env.snapshot.node_infos():
        trial = env.fwk.amounts_trial(state, info, n)
        assert isinstance(trial, AmountsTrial)
        copy = CopyTrial(env.plugin.handle, state, info, n)
        original, requested = dict(n.pods), comparable_amounts(n.requested)
        off: list[PodInfo] = []
        on = list(n.pods.values())
        assert _explained(trial.filter()) == _explained(copy.filter())
        for _ in range(2 * len(on) + 2):
            if on and (not off or rng.random() < 0.6):
                pod = on.pop(rng.randrange(len(on)))
                off.append(pod)
                trial.remove(pod)
                copy.remove(pod)
            elif off:
                pod = off.pop(rng.randrange(len(off)))
                on.append(pod)
                trial.add(pod)
                copy.add(pod)
            assert _explained(trial.filter()) == _explained(copy.filter()), (n.name, [p.key for p in off])
        # The snapshot's node is never changed by either.
        assert list(n.pods) == list(original)
        assert comparable_amounts(n.requested) == requested


def _refused(env: Env, preemptor: dict[str, Any], nominated: dict[str, list[PodInfo]] | None = None) -> bool:
    env.fwk.nominator = _Nominator(nominated or {})
    state, info = env.prefilter(preemptor)
    [n] = env.snapshot.node_infos()
    refused = env.fwk.amounts_trial(state, info, n) is None
    assert isinstance(copy_or_amounts(env.plugin.handle, state, info, n), CopyTrial) is refused
    return refused


def _one_node(*pods: dict[str, Any]) -> Env:
    return Env([node("n0", allocatable={"cpu": "2", "memory": "4Gi"})], list(pods))


def test_a_plain_pod_is_judged_by_arithmetic() -> None:
    env = _one_node(mk("low", 0, {"cpu": "1"}, node_name="n0"))
    assert not _refused(env, mk("high", 10, {"cpu": "2"}))


def test_a_pod_with_host_ports_needs_a_copy() -> None:
    """NodePorts reads the ports of the pods on the node: not amounts."""
    env = _one_node(mk("low", 0, {"cpu": "1"}, node_name="n0"))
    ports = {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 80}]}]}
    assert _refused(env, mk("high", 10, {"cpu": "2"}, extra_spec=ports))


def test_a_pod_with_anti_affinity_needs_a_copy() -> None:
    """InterPodAffinity's PreFilter extension keeps state on the pods removed and added."""
    env = _one_node(mk("low", 0, {"cpu": "1"}, node_name="n0", labels={"app": "a"}))
    term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    assert _refused(env, mk("high", 10, {"cpu": "2"}, extra_spec=affinity))


@pytest.mark.parametrize("seed", range(80))
def test_a_sampled_cycle_records_the_series_filter_on_a_copy_would(seed: int) -> None:
    """A cycle that records per-plugin metrics: the dry run by arithmetic decides the same and adds
    time under the same (plugin, "Filter", code) keys as the runs on a copy."""
    env, preemptor, nominated = _cluster(seed)
    env.fwk.nominator = _Nominator(nominated)
    nodes = env.snapshot.node_infos()
    pdbs = env.plugin._pdbs()
    offset, num = seed % len(nodes), 1 + seed % len(nodes)
    results = []
    for by_amounts in (True, False):
        state, info = env.prefilter(preemptor)
        state.record_plugin_metrics = True
        handle = env.plugin.handle
        if not by_amounts:
            handle.amounts_trial = lambda *args: None  # type: ignore[method-assign]
        found, statuses, _ = env.plugin.evaluator.dry_run_preemption(state, info, nodes, pdbs, offset, num)
        results.append((_key(found), _status_key(statuses), sorted(state.plugin_seconds)))
    assert results[0] == results[1]
    assert results[0][2]


def test_a_nominated_pod_already_on_the_node_needs_a_copy() -> None:
    """Added again to the node it would not count as one more pod: the arithmetic cannot say that."""
    low = mk("low", 20, {"cpu": "1"}, node_name="n0")
    env = _one_node(low)
    assert _refused(env, mk("high", 10, {"cpu": "1"}), {"n0": [PodInfo(low)]})


# --- nodes found hopeless, kept across preemptors ----------------------------------------------------


class _KeptNominator(_Nominator):
    """As the scheduler's NominatedPods: a node's tuple stays the same object until its nominations
    change (which is what the kept verdicts compare)."""

    def __init__(self) -> None:
        super().__init__({})
        self.kept: dict[str, tuple[PodInfo, ...]] = {}

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self.kept.get(node_name, ())

    def nominate(self, node_name: str, pod: PodInfo) -> None:
        self.kept[node_name] = (*self.kept.get(node_name, ()), pod)


Verdict = tuple[list[PodInfo], int, Status | None]


def _budget(app: str) -> dict[str, Any]:
    return {
        "metadata": {"name": f"pdb-{app}", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": 0},
    }


def _observe(verdicts: Any, found: list[Verdict], *, with_budgets: bool = False) -> None:
    """Note every kept verdict a dry run takes (``with_budgets``: only those given a dry run that reads
    budgets): from ``get`` (select_victims_on_node's) and from ``lookup``'s reader (the Evaluator's
    loop, which asks before calling select_victims_on_node)."""
    get = verdicts.get
    lookup = verdicts.lookup

    def counted_get(*args: Any) -> Verdict | None:
        verdict: Verdict | None = get(*args)
        if verdict is not None and (args[-1] or not with_budgets):
            found.append(verdict)
        return verdict

    def counted_lookup(key: Any, pod: PodInfo, pdbs: Sequence[object]) -> Callable[..., Verdict | None]:
        known = lookup(key, pod, pdbs)

        def counted(node: Any) -> Verdict | None:
            verdict: Verdict | None = known(node)
            if verdict is not None and (pdbs or not with_budgets):
                found.append(verdict)
            return verdict

        return counted

    verdicts.get = counted_get
    verdicts.lookup = counted_lookup


def test_kept_node_verdicts_are_used_only_while_nothing_they_read_changes() -> None:
    """Preemptors of a few shapes, one after another, while nominations come and go and nodes change:
    each dry run gives what the plain path gives, and some of them skip nodes found hopeless before,
    or take the victims found on a node before (clusters without PDBs)."""
    skipped: list[Verdict] = []
    for seed in range(60):
        rng = random.Random(seed)
        env, _, _ = _cluster(seed)
        nominator = _KeptNominator()
        env.fwk.nominator = nominator
        verdicts = env.plugin._verdicts
        _observe(verdicts, skipped)
        shapes = [{"cpu": rng.choice(["1", "2", "2500m"]), "memory": "1Gi"} for _ in range(2)]
        preemptors = [mk(f"pre{step}", rng.choice([10, 15]), rng.choice(shapes)) for step in range(12)]
        for step, preemptor in enumerate(preemptors[:10]):
            state, info = env.prefilter(preemptor)
            nodes = env.snapshot.node_infos()
            pdbs: Sequence[PodDisruptionBudget] = env.plugin._pdbs()
            if not pdbs and rng.random() < 0.3:
                # A budget appears for this preemptor only: victims kept without one must not be used.
                pdbs = parse_pdbs([_budget(rng.choice(["a", "b", "c"]))])
            offset = rng.randrange(len(nodes))
            num = rng.randint(1, len(nodes))
            found, statuses, _ = env.plugin.evaluator.dry_run_preemption(
                state, info, nodes, pdbs, offset, num
            )
            expected, expected_statuses = _plain_dry_run(
                env.fwk, env.plugin, state, info, nodes, pdbs, offset, num
            )
            assert _key(found) == _key(expected), (seed, step)
            assert _status_key(statuses) == _status_key(expected_statuses), (seed, step)
            change = rng.random()
            target = rng.choice(nodes)
            if change < 0.3:
                # A preemptor nominated: that node's nominations change.
                nominator.nominate(target.name, PodInfo(mk(f"nom{step}", 20, {"cpu": "500m"})))
            elif change < 0.5 and target.pods:
                # A victim leaves: the node changes, and so does its generation (as the cache does).
                target.remove_pod(next(iter(target.pods)))
                target.generation += 1
            elif change < 0.7:
                # A later preemptor is itself nominated somewhere (its earlier attempt): never counted
                # against itself, though it counts against the preemptors before it.
                nominator.nominate(target.name, PodInfo(preemptors[step + rng.choice([1, 2])]))
    assert any(status is not None for _, _, status in skipped)
    assert any(victims for victims, _, _ in skipped)


def test_a_preemptor_is_signed_again_in_each_cycle() -> None:
    """A pod retried unchanged keeps its PodInfo, while its signature reads the cluster too
    (InterPodAffinity signs only while no pod with required anti-affinity runs): the key a dry run
    uses is computed once per cycle, never carried into the next one."""
    answers: list[Any] = [("signature",)]

    class Handle:
        def sign_pod(self, pod: PodInfo) -> Any:
            return answers[0]

        def nominated_pods_for_node(self, name: str) -> Sequence[PodInfo]:
            return ()

    verdicts = DryRunVerdicts(cast(Any, Handle()))
    pod = PodInfo(mk("p", 10, {"cpu": "1"}))
    first = CycleState()
    key = verdicts.key(scratch_copy(first), pod)
    assert key is not None
    answers[0] = None  # a pod with required anti-affinity lands: the pod can no longer be signed
    assert verdicts.key(scratch_copy(first), pod) is key  # the same cycle: signed once per dry run
    assert verdicts.key(scratch_copy(CycleState()), pod) is None


def test_a_subclass_that_selects_victims_itself_is_asked_for_every_node() -> None:
    """The Evaluator takes kept verdicts without calling select_victims_on_node only from the plugin
    whose select_victims_on_node would give them: a subclass overriding it is called for every node."""
    from scheduler.plugins.defaultpreemption import DefaultPreemption

    env, _, _ = _cluster(0)
    env.fwk.nominator = _KeptNominator()
    asked: list[str] = []

    class Selecting(DefaultPreemption):
        def select_victims_on_node(
            self, state: CycleState, pod: PodInfo, node: Any, pdbs: Sequence[PodDisruptionBudget]
        ) -> tuple[list[PodInfo], int, Status | None]:
            asked.append(node.name)
            return super().select_victims_on_node(state, pod, node, pdbs)

    plugin = Selecting(None, env.plugin.handle)
    nodes = env.snapshot.node_infos()
    for step in range(3):
        state, info = env.prefilter(mk(f"pre{step}", 10, {"cpu": "1", "memory": "1Gi"}))
        assert env.plugin.kept_verdicts(state, info, ()) is not None
        assert plugin.kept_verdicts(state, info, ()) is None
        asked.clear()
        plugin.evaluator.dry_run_preemption(state, info, nodes, (), 0, len(nodes))
        assert asked == [n.name for n in nodes][: len(asked)] and asked
