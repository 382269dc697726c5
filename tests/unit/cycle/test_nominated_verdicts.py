"""Verdicts on nodes with nominated pods, kept across cycles (scheduler.cycle.nominated_verdicts): every
cycle's Filter outcome (feasible nodes, processed count, every rejection's status) must be exactly what
the per-node two-pass loop gives (upstream findNodesThatPassFilters with nominated pods), while the
nodes, their nominations and the pods' shapes and priorities change between cycles.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Any

from scheduler.cycle.algorithm import SchedulingAlgorithm, num_feasible_nodes_to_find
from scheduler.cycle.nominated_verdicts import MISSING, NominatedVerdicts
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo
from tests.unit.cycle.test_batch_equivalence import _cluster, _pod
from tests.unit.cycle.test_nominated_filter_equivalence import _reference


class _KeptNominator:
    """As the scheduler's NominatedPods: a node's tuple stays the same object until its nominations
    change (which is what the kept verdicts compare)."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[PodInfo, ...]] = {}

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self.kept.get(node_name, ())

    def nominated_node_names(self) -> Sequence[str]:
        return list(self.kept)

    def nominate(self, node_name: str, pod: PodInfo) -> None:
        for name, pods in list(self.kept.items()):
            rest = tuple(p for p in pods if p.uid != pod.uid)
            if len(rest) != len(pods):
                if rest:
                    self.kept[name] = rest
                else:
                    del self.kept[name]
        self.kept[node_name] = (*self.kept.get(node_name, ()), pod)

    def clear(self, node_name: str) -> None:
        self.kept.pop(node_name, None)


def _renamed(raw: dict[str, Any], name: str, priority: int) -> dict[str, Any]:
    pod = copy.deepcopy(raw)
    pod["metadata"].update(name=name, uid=f"uid-{name}")
    pod["spec"]["priority"] = priority
    return pod


def _hits(algorithm: SchedulingAlgorithm, found: list[Status | None]) -> None:
    verdicts = algorithm.nominated_verdicts
    get = verdicts.get

    def counted(*args: Any) -> Status | None:
        status = get(*args)
        if status is not MISSING:
            found.append(status)
        return status

    verdicts.get = counted  # type: ignore[method-assign, assignment]
    many = verdicts.kept_or_judged

    def counted_many(
        key: Any, pod: PodInfo, nodes: Sequence[NodeInfo], nominated_for: Any, judge: Any
    ) -> list[Status | None]:
        # The Filter loop's batch path asks for all its nodes at once: a kept verdict is one whose node
        # was not judged.
        judged: set[str] = set()

        def judging(node: NodeInfo) -> Status | None:
            judged.add(node.name)
            return judge(node)  # type: ignore[no-any-return]

        out = many(key, pod, nodes, nominated_for, judging)
        found.extend(status for node, status in zip(nodes, out, strict=True) if node.name not in judged)
        return out

    verdicts.kept_or_judged = counted_many  # type: ignore[method-assign]


def _key(status: Status | None) -> tuple[Any, ...] | None:
    return None if status is None else (status.code, tuple(status.reasons), status.plugin)


def test_kept_verdicts_give_the_two_pass_loop_while_nodes_and_nominations_change() -> None:
    hits: list[Status | None] = []
    for seed in range(16):
        cache, snapshot, fwk, rng = _cluster(seed, nodes=60 if seed % 2 else 200)
        nominator = _KeptNominator()
        fwk.nominator = nominator
        algorithm = SchedulingAlgorithm(rng=random.Random(0))
        _hits(algorithm, hits)
        shapes = [_pod(rng, f"shape-{k}") for k in range(2)]
        pods = [
            _renamed(rng.choice(shapes), f"p{step}", rng.choice([0, 100, 100, 1000])) for step in range(14)
        ]
        nodes = snapshot.node_infos()
        # Nodes with nominations from the start: most cycles walk past some.
        for k, node in enumerate(rng.sample(list(nodes), len(nodes) // 2)):
            nominator.nominate(
                node.name, PodInfo(_renamed(_pod(rng, "nom"), f"nom{k}", rng.choice([0, 1000])))
            )
        for step, raw in enumerate(pods[:12]):
            nodes = snapshot.node_infos()
            pod = PodInfo(raw)
            start = rng.randrange(len(nodes))
            num_to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, len(nodes))
            state = CycleState()
            pre_result, pre_status = fwk.run_pre_filter(state, pod, nodes)
            if pre_status is None and (pre_result is None or pre_result.node_names is None):
                want = _reference(fwk, state, pod, nodes, start, num_to_find)
                algorithm.next_start_node_index = start
                feasible, diagnosis = algorithm._find_nodes_that_fit(fwk, CycleState(), pod, nodes, snapshot)
                assert [n.name for n in feasible] == want[0], (seed, step)
                assert algorithm.next_start_node_index == (start + want[1]) % len(nodes), (seed, step)
                got = {name: _key(s) for name, s in diagnosis.node_to_status.items()}
                assert got == want[2], (seed, step)
            for _ in range(3):
                _change(rng, cache, snapshot, nominator, nodes, pods, step)
        fwk.nominator = None
    assert any(hit is None for hit in hits) and any(hit is not None for hit in hits)


def _change(
    rng: random.Random,
    cache: Any,
    snapshot: Any,
    nominator: _KeptNominator,
    nodes: Sequence[NodeInfo],
    pods: list[dict[str, Any]],
    step: int,
) -> None:
    """One change between cycles, of what a kept verdict reads (or nothing)."""
    change = rng.random()
    target = rng.choice(list(nodes))
    if change < 0.25:
        # A pod nominated: that node's nominations change (a new tuple).
        nominated = _renamed(_pod(rng, "late"), f"late{step}-{rng.random()}", rng.choice([0, 100, 1000]))
        if rng.random() < 0.5:
            # One that claims the node's free room: the verdict there turns.
            nominated["spec"]["containers"][0]["resources"]["requests"] = _free_room(target)
        nominator.nominate(target.name, PodInfo(nominated))
    elif change < 0.35:
        nominator.clear(target.name)
    elif change < 0.55:
        # A pod bound to the node (or one leaving): the snapshot's node changes generation.
        existing = [p for p in target.pods.values()]
        if existing and rng.random() < 0.5:
            cache.remove_pod(existing[0].pod)
        else:
            bound = _pod(rng, f"bound{step}-{rng.random()}", node_name=target.name)
            if rng.random() < 0.5:
                bound["spec"]["containers"][0]["resources"]["requests"] = _free_room(target)
            cache.add_pod(bound)
        cache.update_snapshot(snapshot)
    elif change < 0.75:
        # A later pod is itself nominated to the node (its earlier attempt): it never counts against
        # itself, though it counts against pods of the same shape.
        later = pods[step + rng.choice([1, 2])]
        nominator.nominate(target.name, PodInfo(later))


def _free_room(node: NodeInfo) -> dict[str, str]:
    """Requests that take the node's free cpu (or a little, on a full node)."""
    return {"cpu": f"{max(node.allocatable.milli_cpu - node.requested.milli_cpu, 1)}m"}


def test_a_pod_nominated_to_the_node_keeps_nothing_there() -> None:
    verdicts = NominatedVerdicts()
    _, snapshot, _, rng = _cluster(1, nodes=4)
    node = snapshot.node_infos()[0]
    me = PodInfo(_renamed(_pod(rng, "me"), "me", 100))
    other = PodInfo(_renamed(_pod(rng, "other"), "other", 100))
    nominated = (me,)
    key = verdicts.key(("sig",), me)
    verdicts.put(key, me, node, nominated, None)
    assert verdicts.get(key, me, node, nominated) is MISSING
    assert verdicts.get(key, other, node, nominated) is MISSING
    verdicts.put(key, other, node, nominated, None)
    assert verdicts.get(key, other, node, nominated) is None
    assert verdicts.get(key, me, node, nominated) is MISSING
    assert (
        verdicts.get(verdicts.key(("sig",), PodInfo(_renamed(dict(me.pod), "x", 0))), other, node, nominated)
        is MISSING
    )
    assert verdicts.key(None, me) is None


def test_kept_or_judged_is_get_then_put_node_by_node() -> None:
    """The Filter loop's one call for a window's nodes with nominations must answer, judge and keep
    exactly as ``get`` and, where nothing is kept, ``put`` of the judged verdict, node after node: the
    same verdicts, the same nodes judged in the same order, the same kept entries; while nodes change
    generation, nominations change (a new tuple), the pod itself is nominated somewhere, and pods of
    other shapes and priorities ask in between."""
    _, snapshot, _, rng = _cluster(3, nodes=12)
    nodes = list(snapshot.node_infos())
    pods = [PodInfo(_renamed(_pod(rng, "p"), f"p{i}", rng.choice([0, 100]))) for i in range(5)]
    others = [PodInfo(_renamed(_pod(rng, "o"), f"o{i}", rng.choice([0, 100]))) for i in range(4)]
    statuses = [None, None, Status.unschedulable("Insufficient cpu").with_plugin("NodeResourcesFit")]
    statuses.append(Status.unschedulable("node(s) had untolerated taint").with_plugin("TaintToleration"))
    statuses.append(Status.as_error("boom").with_plugin("NodeResourcesFit"))
    asked_total = judged_total = 0
    for seed in range(30):
        rng = random.Random(seed)
        batch, single = NominatedVerdicts(), NominatedVerdicts()
        nominations: dict[str, tuple[PodInfo, ...]] = {}
        for node in nodes:
            nominations[node.name] = tuple(rng.sample(others, rng.choice([1, 1, 2])))
        for step in range(40):
            # Mostly one pod of one shape (as a run of like preemptors), sometimes another.
            pod = pods[0] if rng.random() < 0.7 else rng.choice(pods)
            signature = ("shape", 1 if rng.random() < 0.8 else 2)
            # Verdicts per (node, step): both sides judge a node alike, whenever they do.
            verdict = {node.name: rng.choice(statuses) for node in nodes}
            asked = rng.sample(nodes, rng.randrange(1, len(nodes)))
            judged_batch: list[str] = []
            judged_single: list[str] = []

            def judge(node: NodeInfo, judged: list[str], verdict: dict[str, Status | None] = verdict) -> Any:
                judged.append(node.name)
                return verdict[node.name]

            got = batch.kept_or_judged(
                batch.key(signature, pod),
                pod,
                asked,
                nominations.__getitem__,
                lambda node, judged=judged_batch: judge(node, judged),  # type: ignore[misc]
            )
            key = single.key(signature, pod)
            want: list[Status | None] = []
            for node in asked:
                nominated = nominations[node.name]
                status = single.get(key, pod, node, nominated)
                if status is MISSING:
                    status = single.put(key, pod, node, nominated, judge(node, judged_single))
                want.append(status)
            assert [_key(s) for s in got] == [_key(s) for s in want], (seed, step)
            assert judged_batch == judged_single, (seed, step)
            asked_total += len(asked)
            judged_total += len(judged_batch)
            assert {n: (k[0], k[1], k[2], k[4] is None) for n, k in batch._kept.items()} == {
                n: (k[0], k[1], k[2], k[4] is None) for n, k in single._kept.items()
            }, (seed, step)
            for _ in range(rng.randrange(3)):
                target = rng.choice(nodes)
                change = rng.random()
                if change < 0.4:
                    target.generation += 1
                elif change < 0.8:
                    nominations[target.name] = tuple(rng.sample(others, rng.choice([1, 2])))
                else:
                    # A pod nominated to the node: it never counts against itself there.
                    nominations[target.name] = (rng.choice(others), rng.choice(pods))
    # Both kinds of answer were given: kept ones and judged ones.
    assert 0 < judged_total < asked_total * 0.8, (judged_total, asked_total)
