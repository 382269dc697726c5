"""Kept dry-run verdicts while PodDisruptionBudgets exist: a node's victims are kept with the parsed
budgets they were chosen with (``ParsedBudgets`` returns the same tuple while the lister's objects stay
the same), and given only to a dry run reading that very tuple. Every dry run must give what the plain
path of test_dry_run_equivalence gives (upstream's steps with eager clones, no kept verdicts), while
budgets are updated, added and removed between preemptors."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from informers.store import Indexer
from scheduler.cache.informer_listers import InformerLister
from scheduler.framework.listers import POD_DISRUPTION_BUDGETS, StaticLister
from scheduler.framework.types import PodInfo
from scheduler.plugins.defaultpreemption import DefaultPreemption
from scheduler.preemption.pdb import ParsedBudgets, PodDisruptionBudget, parse_pdbs
from tests.unit.plugins.plugin_testlib import node
from tests.unit.preemption.test_amounts_trial import Verdict, _cluster, _KeptNominator, _observe
from tests.unit.preemption.test_dry_run_equivalence import _key, _plain_dry_run, _status_key
from tests.unit.preemption.test_preemption import Env, mk, pdb


def _lister_of(plugin: DefaultPreemption) -> StaticLister:
    lister = plugin._pdbs.lister
    assert isinstance(lister, StaticLister)
    return lister


def _dry_run_matches_plain(env: Env, preemptor: dict[str, Any], offset: int, num: int) -> list[Any]:
    state, info = env.prefilter(preemptor)
    nodes = env.snapshot.node_infos()
    pdbs = env.plugin._pdbs()
    found, statuses, _ = env.plugin.evaluator.dry_run_preemption(state, info, nodes, pdbs, offset, num)
    expected, expected_statuses = _plain_dry_run(env.fwk, env.plugin, state, info, nodes, pdbs, offset, num)
    assert _key(found) == _key(expected)
    assert _status_key(statuses) == _status_key(expected_statuses)
    return _key(found)


# --- the parse kept while the objects stay --------------------------------------------------------


def _facts(budgets: Sequence[PodDisruptionBudget]) -> list[tuple[str, int, frozenset[str], str]]:
    """What a budget says (a LabelSelector has no equality: the app it matches, of a few)."""
    return [
        (
            b.namespace,
            b.disruptions_allowed,
            b.disrupted_pods,
            next((app for app in "abcxy" if b.selector.matches({"app": app})), ""),
        )
        for b in budgets
    ]


def test_parsed_budgets_stay_the_same_object_until_an_object_changes() -> None:
    lister = StaticLister([pdb("a", {"app": "a"}, 1), pdb("b", {"app": "b"}, 0)])
    budgets = ParsedBudgets(lister)
    first = budgets()
    assert isinstance(first, tuple) and _facts(first) == _facts(parse_pdbs(lister.list()))
    # The lister lists a new list of the same dicts: the same parse, the same object.
    assert budgets() is first
    # The disruption controller updates a status: a new dict, parsed again.
    lister.add(pdb("b", {"app": "b"}, 3))
    second = budgets()
    assert second is not first
    assert [b.disruptions_allowed for b in second] == [1, 3]
    assert budgets() is second
    # A budget added, then one removed: parsed again each time.
    lister.add(pdb("c", {"app": "c"}, 2))
    third = budgets()
    assert third is not second and len(third) == 3
    lister.delete("a", "default")
    fourth = budgets()
    assert fourth is not third and [b.disruptions_allowed for b in fourth] == [3, 2]
    # None left: the empty parse (any two empty ones mean the same).
    lister.delete("b", "default")
    lister.delete("c", "default")
    assert budgets() == ()


class _Informer:
    """What InformerLister.bind reads of a SharedInformer."""

    def __init__(self, store: Indexer) -> None:
        self.store = store


def test_parsed_budgets_over_the_informer_store() -> None:
    """The informer's store lists its dicts in key order of first insertion (an update keeps the
    place) and stores the newly decoded dict on every update, never changing a stored one."""
    store = Indexer()
    lister = InformerLister(POD_DISRUPTION_BUDGETS)
    lister.bind(_Informer(store))  # type: ignore[arg-type]
    for obj in (pdb("a", {"app": "a"}, 1), pdb("b", {"app": "b"}, 1)):
        store.upsert(obj)
    budgets = ParsedBudgets(lister)
    first = budgets()
    assert budgets() is first
    # An update with an equal content is still a new dict: parsed again (never wrongly kept).
    store.upsert(pdb("a", {"app": "a"}, 1))
    second = budgets()
    assert second is not first and _facts(second) == _facts(first)
    store.upsert(pdb("a", {"app": "a"}, 0))
    assert [b.disruptions_allowed for b in budgets()] == [0, 1]
    # A relist with new dicts: parsed again.
    kept = budgets()
    store.replace({"default/a": pdb("a", {"app": "a"}, 0), "default/b": pdb("b", {"app": "b"}, 1)})
    assert budgets() is not kept


# --- kept victims with budgets ----------------------------------------------------------------------


def _two_pod_node() -> Env:
    """One node with room for two pods of one cpu: "old" (started first, so the more important) and
    "new". A preemptor of one cpu needs one gone: "new" without a budget on it (the more important is
    reprieved first), "old" when a budget with no allowance protects "new" (reprieved first)."""
    pods = [
        mk("old", 0, {"cpu": "1"}, node_name="n0", start=0, labels={"app": "old"}),
        mk("new", 0, {"cpu": "1"}, node_name="n0", start=10, labels={"app": "new"}),
    ]
    nodes = [node("n0", allocatable={"cpu": "2", "memory": "10Gi"}, labels={"kubernetes.io/hostname": "n0"})]
    env = Env(nodes, pods, [pdb("keep-new", {"app": "new"}, 1), pdb("other", {"app": "x"}, 5)])
    env.fwk.nominator = _KeptNominator()
    return env


def test_a_budget_change_has_the_node_judged_again() -> None:
    env = _two_pod_node()
    lister = _lister_of(env.plugin)
    kept: list[Verdict] = []
    verdicts = env.plugin._verdicts
    _observe(verdicts, kept)
    step = iter(range(100))

    def victims() -> list[str]:
        [(_, names, _)] = _dry_run_matches_plain(env, mk(f"pre{next(step)}", 10, {"cpu": "1"}), 0, 1)
        return [name.split("/")[1] for name in names]

    def judged_then_kept(expected: list[str]) -> None:
        before = len(kept)
        assert victims() == expected
        assert len(kept) == before  # judged again
        assert victims() == expected
        assert len(kept) == before + 1  # the next preemptor of that shape takes the kept victims

    judged_then_kept(["new"])
    # The budget on "new" runs out of allowance: "new" is reprieved first, "old" goes.
    lister.add(pdb("keep-new", {"app": "new"}, 0))
    judged_then_kept(["old"])
    # The budget removed: "new" again.
    lister.delete("keep-new", "default")
    judged_then_kept(["new"])
    # Added back without allowance: "old".
    lister.add(pdb("keep-new", {"app": "new"}, 0))
    judged_then_kept(["old"])
    # A budget that protects neither: the victims stay, but the node is judged again all the same.
    lister.add(pdb("unrelated", {"app": "y"}, 0))
    judged_then_kept(["old"])


def test_kept_victims_with_budgets_match_a_fresh_dry_run() -> None:
    """Random clusters with budgets throughout; between preemptors nominations come and go, nodes
    change, and budgets are updated (their allowance), added and removed. Some dry runs take kept
    victims while budgets exist."""
    kept_with_budgets: list[Verdict] = []
    for seed in range(60):
        rng = random.Random(seed)
        env, _, _ = _cluster(seed)
        lister = _lister_of(env.plugin)
        for i in range(rng.randint(1, 3)):
            lister.add(pdb(f"b{i}", {"app": rng.choice(["a", "b", "c"])}, rng.randint(0, 2)))
        nominator = _KeptNominator()
        env.fwk.nominator = nominator
        verdicts = env.plugin._verdicts
        _observe(verdicts, kept_with_budgets, with_budgets=True)
        shapes = [{"cpu": rng.choice(["1", "2", "2500m"]), "memory": "1Gi"} for _ in range(2)]
        preemptors = [mk(f"pre{step}", rng.choice([10, 15]), rng.choice(shapes)) for step in range(14)]
        for step, preemptor in enumerate(preemptors[:12]):
            nodes = env.snapshot.node_infos()
            _dry_run_matches_plain(env, preemptor, rng.randrange(len(nodes)), rng.randint(1, len(nodes)))
            change = rng.random()
            target = rng.choice(nodes)
            if change < 0.15:
                nominator.nominate(target.name, PodInfo(mk(f"nom{step}", 20, {"cpu": "500m"})))
            elif change < 0.25 and target.pods:
                target.remove_pod(next(iter(target.pods)))
                target.generation += 1
            elif change < 0.35:
                nominator.nominate(target.name, PodInfo(preemptors[step + rng.choice([1, 2])]))
            elif change < 0.5:
                # The disruption controller recomputes a budget's allowance (a new dict), or one is added.
                i = rng.randrange(3)
                lister.add(pdb(f"b{i}", {"app": rng.choice(["a", "b", "c"])}, rng.randint(0, 2)))
            elif change < 0.6 and len(lister.list()) > 1:
                lister.delete(f"b{rng.randrange(3)}", "default")
    assert any(victims for victims, _, _ in kept_with_budgets)


def test_victims_are_not_kept_with_budgets_that_can_change() -> None:
    """Budgets in a list (not ParsedBudgets' tuple) may change under the kept verdict: not kept."""
    env = _two_pod_node()
    pdbs = list(env.plugin._pdbs())
    for step, allowed in enumerate((1, 0)):
        pdbs[0] = parse_pdbs([pdb("keep-new", {"app": "new"}, allowed)])[0]
        state, info = env.prefilter(mk(f"pre{step}", 10, {"cpu": "1"}))
        nodes = env.snapshot.node_infos()
        found, _, _ = env.plugin.evaluator.dry_run_preemption(state, info, nodes, pdbs, 0, 1)
        expected, _ = _plain_dry_run(env.fwk, env.plugin, state, info, nodes, pdbs, 0, 1)
        assert _key(found) == _key(expected) == [("n0", ["default/new" if allowed else "default/old"], 0)]
