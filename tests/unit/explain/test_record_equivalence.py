"""The score table a record keeps, checked against a plain reference over the cycle's own inputs.

Every attempt of a run through the product's cycle (CoreEnv: batching on, default plugins, preemption)
is recorded; at each ``Trace.record`` the inputs are copied (totals, each Score plugin's raw and
normalised arrays, the feasible nodes' names, the chosen row) and the expected table is computed the
obvious way: the chosen row, then the others by total, ties to the lower row. After the run (later
cycles have moved on, bindings have finished) each filed record must show exactly that, through
``to_json`` (what /debug/pods and ``explain`` print) and ``summary`` (the pod annotation).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from scheduler.explain.record import (
    BOUND,
    TOP_K,
    UNSCHEDULABLE,
    AttemptRecord,
    Trace,
    summary,
)
from tests.unit.fakes import CoreEnv, make_node, make_pod

MakeEnv = Callable[..., CoreEnv]


def _expected_scores(
    totals: list[int] | None,
    best: int,
    breakdown: list[tuple[str, list[int], list[int], int]],
    names: list[str],
    chosen: str,
) -> list[dict[str, Any]]:
    if totals is None:
        return [{"node": chosen, "total": 0, "chosen": True, "plugins": {}}] if chosen else []
    others = sorted((i for i in range(len(totals)) if i != best), key=lambda i: (-totals[i], i))
    rows = ([best] if best >= 0 else []) + others
    return [
        {
            "node": names[i],
            "total": totals[i],
            "chosen": i == best,
            "plugins": {
                name: {"raw": raw[i], "normalized": norm[i], "weighted": norm[i] * weight}
                for name, raw, norm, weight in breakdown
            },
        }
        for i in rows[:TOP_K]
    ]


@pytest.fixture
def expected(monkeypatch: pytest.MonkeyPatch) -> dict[int, list[dict[str, Any]]]:
    """id(record) -> its expected scores, computed from copies taken when the attempt is recorded."""
    out: dict[int, list[dict[str, Any]]] = {}
    record = Trace.record

    def spy(trace: Trace, outcome: str, chosen: str = "", message: str = "") -> AttemptRecord:
        totals = None if trace.totals is None else [int(v) for v in trace.totals]
        breakdown = [
            (name, [int(v) for v in raw], [int(v) for v in norm], weight)
            for name, raw, norm, weight in trace.breakdown
        ]
        names = [node.name for node in trace.feasible_nodes]
        out[id(trace)] = _expected_scores(totals, trace.best, breakdown, names, chosen)
        return record(trace, outcome, chosen, message)

    monkeypatch.setattr(Trace, "record", spy)
    return out


def _filed(env: CoreEnv, keys: list[str]) -> list[AttemptRecord]:
    records: list[AttemptRecord] = []
    for key in keys:
        latest = env.decisions.store.latest(key)
        assert latest is not None, key
        records.append(latest)
    return records


async def test_every_recorded_score_table_equals_the_reference(
    make_env: MakeEnv, expected: dict[int, list[dict[str, Any]]]
) -> None:
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    nodes = [make_node(f"same-{i}", cpu="4") for i in range(6)]
    nodes += [
        make_node("odd-a", cpu="8", labels={"pair": "yes"}),
        make_node("odd-b", cpu="2", labels={"pair": "yes"}),
        make_node("tainted", cpu="16", taints=[taint]),
        make_node("tiny", cpu="1", labels={"tiny": "yes"}),
        make_node("roomy", cpu="32"),
    ]
    env = make_env(nodes)
    env.cache.add_pod(make_pod("low", cpu="1", node_name="tiny"))
    keys: list[str] = []

    async def add(pod: dict[str, Any]) -> None:
        env.queue.add(pod)
        keys.append(f"default/{pod['metadata']['name']}")
        await env.schedule_next()

    # Identical pods: the first a batching miss, the next ones hits; the identical nodes tie.
    for i in range(12):
        await add(make_pod(f"web-{i}", cpu="500m"))
    await add(make_pod("wide", cpu="3"))
    await add(make_pod("pair", cpu="100m", node_selector={"pair": "yes"}))  # two feasible nodes
    await add(make_pod("alone", cpu="20"))  # one feasible node, unopposed
    await add(make_pod("huge", cpu="64"))  # fits nowhere
    urgent = make_pod("urgent", cpu="1", node_selector={"tiny": "yes"})
    urgent["spec"]["priority"] = 1000  # preempts "low" on tiny: nominated
    await add(urgent)
    for i in range(4):
        # Batching again after other shapes; "urgent"'s nomination keeps tiny out of the cache's reach.
        await add(make_pod(f"late-{i}", cpu="500m"))
    scheduled = sum(1 for record in _filed(env, keys) if record.outcome != UNSCHEDULABLE)
    await env.wait_bindings(scheduled)

    records = _filed(env, keys)
    for key, record in zip(keys, records, strict=True):
        want = expected[id(record)]
        doc = record.to_json()
        assert doc["scores"] == want, key
        table = record.score_table
        if table is not None and table.plugins:
            annotated = orjson.loads(summary(record, 4096))["scores"]
            assert annotated == {row["node"]: row["total"] for row in want}, key

    stats = env.sched.algorithm.batch.stats  # type: ignore[union-attr]
    assert stats.hits > 0 and stats.misses > 0
    by_key = dict(zip(keys, records, strict=True))
    rows = [record.to_json()["scores"] for record in records]
    # What the run had to cover: ties among the runners-up, fewer rows than TOP_K, filtered nodes, a
    # nomination, a failure, bindings finished.
    assert any(len(r) == TOP_K and r[1]["total"] == r[2]["total"] for r in rows)
    assert any(len(r) == TOP_K and r[1]["total"] != r[2]["total"] for r in rows)
    assert len(by_key["default/pair"].to_json()["scores"]) == 2
    assert by_key["default/alone"].to_json()["scores"][0]["plugins"] == {}
    assert by_key["default/pair"].filters and by_key["default/web-0"].filters
    assert by_key["default/huge"].outcome == UNSCHEDULABLE and by_key["default/huge"].nearest_misses
    assert by_key["default/urgent"].nominated_node == "tiny"
    assert by_key["default/web-3"].outcome == BOUND


def test_reference_rows_put_the_chosen_row_first_then_totals_ties_to_the_lower_row() -> None:
    """The reference itself, on a hand-made case: chosen row 3 of four tied rows."""
    totals = [5, 9, 9, 9, 9, 2]
    rows = _expected_scores(totals, 3, [("P", totals, totals, 1)], [f"n{i}" for i in range(6)], "n3")
    assert [(r["node"], r["chosen"]) for r in rows] == [("n3", True), ("n1", False), ("n2", False)]
    assert [r["total"] for r in rows] == [9, 9, 9]


@pytest.mark.parametrize("seed", range(4))
async def test_randomized_clusters_record_the_reference_tables(
    make_env: MakeEnv, expected: dict[int, list[dict[str, Any]]], seed: int
) -> None:
    """Random clusters (groups of identical nodes, so ties and the tied-rows shortcut; odd sizes,
    labels, a taint) and random pods (runs of identical ones for batching hits, selectors down to one
    feasible node, pods that fit nowhere): every filed record shows the reference table."""
    rng = random.Random(seed)
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    nodes: list[dict[str, Any]] = []
    for group in range(rng.randint(1, 3)):
        cpu = rng.choice(["4", "8", "16"])
        size = rng.randint(1, 8)
        nodes += [make_node(f"g{group}-{i}", cpu=cpu, labels={"group": str(group)}) for i in range(size)]
    nodes += [make_node(f"odd-{i}", cpu=rng.choice(["1", "2", "32"])) for i in range(rng.randint(0, 3))]
    if rng.random() < 0.5:
        nodes.append(make_node("tainted", cpu="64", taints=[taint]))
    env = make_env(nodes)
    keys: list[str] = []
    for number in range(rng.randint(15, 30)):
        shape = rng.random()
        selector: dict[str, str] | None = None
        if shape < 0.6:
            run, cpu = rng.randint(1, 5), rng.choice(["100m", "500m", "1"])
        elif shape < 0.8:
            run, cpu, selector = 1, "100m", {"group": str(rng.randint(0, 3))}
        else:
            run, cpu = 1, rng.choice(["3", "20", "128"])
        for i in range(run):
            env.queue.add(make_pod(f"p{number}-{i}", cpu=cpu, node_selector=selector))
            keys.append(f"default/p{number}-{i}")
            await env.schedule_next()
    scheduled = sum(1 for record in _filed(env, keys) if record.outcome != UNSCHEDULABLE)
    await env.wait_bindings(scheduled)
    for key, record in zip(keys, _filed(env, keys), strict=True):
        assert record.to_json()["scores"] == expected[id(record)], key
