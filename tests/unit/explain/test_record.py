"""The attempt record's score table: which rows it keeps and that it owns its values."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.cache.columns import NodeColumns
from scheduler.explain.record import BINDING, TOP_K, AttemptRecord, Trace, top_scores
from scheduler.framework.columns import NodeSubset
from scheduler.framework.types import NodeInfo
from tests.unit.fakes import make_node

PLUGINS = (("Fit", 1), ("Taints", 3), ("Listed", 2))


def _score_inputs(n: int, *, subset: bool) -> tuple[Any, list[Any], list[np.ndarray]]:
    """The feasible nodes and per plugin (name, raw, normalised, weight) as Score leaves them, and the
    arrays; "Fit" shares one array for raw and normalised, "Listed" has its raw scores in a plain
    list. ``subset``: the nodes as the Filter step hands them over, a NodeSubset of a snapshot's
    columns (rows in reverse order); else a list."""
    feasible: Any
    if subset:
        columns = NodeColumns([NodeInfo(make_node(f"n{i}")) for i in reversed(range(n))])
        feasible = NodeSubset(columns, np.arange(n, dtype=np.int64)[::-1].copy())
    else:
        feasible = [NodeInfo(make_node(f"n{i}")) for i in range(n)]
    fit = np.arange(n, dtype=np.int64) * 7 % 101
    taints_raw = np.arange(n, dtype=np.int64) % 5
    taints = 100 - taints_raw * 20
    listed = np.arange(n, dtype=np.int64)[::-1].copy()
    breakdown = [
        ("Fit", fit, fit, 1),
        ("Taints", taints_raw, taints, 3),
        ("Listed", [int(v) * 2 for v in listed], listed, 2),
    ]
    return feasible, breakdown, [fit, taints_raw, taints, listed]


def _trace(
    totals: list[int], best: int, *, ties: bool = False, subset: bool = False
) -> tuple[Trace, list[np.ndarray]]:
    """A trace as Score leaves it: totals, one chosen row, each plugin's scores (``_score_inputs``)."""
    trace = Trace("ns/p", "uid", "profile", 1, 0.0)
    trace.feasible_nodes, trace.breakdown, arrays = _score_inputs(len(totals), subset=subset)
    scores = np.asarray(totals, dtype=np.int64)
    # ``ties``: as the algorithm hands them over, the rows of the best total (``best`` among them).
    trace.scored(scores, best, (scores == scores.max()).nonzero()[0] if ties else None)
    return trace, [scores, *arrays]


def _expected_rows(totals: list[int], best: int) -> list[int]:
    """The chosen row, then the highest totals, ties to the lower index."""
    rest = sorted((i for i in range(len(totals)) if i != best), key=lambda i: (-totals[i], i))
    return ([best] if best >= 0 else []) + rest[: TOP_K - (1 if best >= 0 else 0)]


@given(st.lists(st.integers(-5, 5), min_size=2, max_size=12), st.data())
def test_score_table_keeps_the_chosen_row_and_the_best_others(totals: list[int], data: st.DataObject) -> None:
    ties = data.draw(st.booleans())
    subset = data.draw(st.booleans())
    if ties:
        best = data.draw(st.sampled_from([i for i, total in enumerate(totals) if total == max(totals)]))
    else:
        best = data.draw(st.integers(-1, len(totals) - 1))
    trace, arrays = _trace(totals, best, ties=ties, subset=subset)
    before = [array.copy() for array in arrays]
    chosen = f"n{best}" if best >= 0 else ""
    record = trace.record(BINDING, chosen)

    rows = _expected_rows(totals, best)
    scores = record.scores
    assert [s.node for s in scores] == [f"n{i}" for i in rows]
    assert [s.total for s in scores] == [totals[i] for i in rows]
    assert [s.chosen for s in scores] == [i == best for i in rows]
    fit, taints_raw, taints, listed = before[1:]
    for s, i in zip(scores, rows, strict=True):
        assert s.plugins == {
            "Fit": (int(fit[i]), int(fit[i]), int(fit[i])),
            "Taints": (int(taints_raw[i]), int(taints[i]), int(taints[i]) * 3),
            "Listed": (int(listed[i]) * 2, int(listed[i]), int(listed[i]) * 2),
        }
    # Picking masks rows of the totals in place: every array is as Score left it.
    for array, copy in zip(arrays, before, strict=True):
        assert np.array_equal(array, copy)


def test_the_record_owns_its_scores_once_condensed() -> None:
    """Filed records outlive the cycle: their scores are plain values read at record time, not views of
    Score's arrays (which the record does not keep alive)."""
    totals = [3, 9, 1, 9, 4]
    trace, arrays = _trace(totals, 1)
    record = trace.record(BINDING, "n1")
    for array in arrays:
        array[:] = -1
    assert [(s.node, s.total, s.plugins["Fit"]) for s in record.scores] == [
        ("n1", 9, (7, 7, 7)),
        ("n3", 9, (21, 21, 21)),
        ("n4", 4, (28, 28, 28)),
    ]
    assert (trace.totals, trace.breakdown, trace.feasible_nodes) == (None, [], ())


@given(st.integers(3, 9), st.integers(0, 4), st.data())
def test_the_tied_rows_shortcut_builds_the_general_table(tied: int, lower: int, data: st.DataObject) -> None:
    """With three or more rows sharing the best total (every attempt on identical nodes) the record's
    table is read by ``_top_of_ties``; it must equal what the general path (``top_scores``) builds from
    the same arrays, whichever tied row was selected, filed with the chosen name or without (a
    failure after Score)."""
    totals = [7] * tied + [3] * lower
    order = data.draw(st.permutations(range(len(totals))))
    totals = [totals[i] for i in order]
    best = data.draw(st.sampled_from([i for i, total in enumerate(totals) if total == 7]))
    chosen = data.draw(st.sampled_from([f"n{best}", ""]))
    shortcut = _trace(totals, best, ties=True, subset=True)[0].record(BINDING, chosen).score_table
    general = top_scores(_trace(totals, best, ties=True, subset=True)[0], chosen)
    assert shortcut == general
    assert shortcut is not None and shortcut.nodes[0] == f"n{best}" and len(shortcut.nodes) == TOP_K


def test_a_trace_starts_as_a_default_attempt_record() -> None:
    """Trace assigns AttemptRecord's fields itself (cheaper than the dataclass __init__): each must
    start at the dataclass's default, and none may be left out."""
    trace = Trace("ns/p", "uid", "profile", 2, 1.5)
    plain = AttemptRecord("ns/p", "uid", "profile", 2, 1.5)
    for f in fields(AttemptRecord):
        assert getattr(trace, f.name) == getattr(plain, f.name), f.name
    assert trace.to_json() == plain.to_json()
