"""Decision records: what one scheduling attempt saw and decided, small enough to keep thousands.

A :class:`Trace` rides in the CycleState (``algorithm.TRACE_KEY``). The algorithm hands it references to
what it computed anyway (the Diagnosis, the feasible nodes, the total scores) and the framework appends
each Score plugin's arrays to a list under ``SCORE_BREAKDOWN_KEY``. Nothing is copied or summarised
during Filter/Score: :func:`summarise` condenses the trace once, when the attempt's outcome is known.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np
import orjson

from scheduler.cycle.algorithm import TRACE_KEY
from scheduler.framework.columns import IntArray, NodeSubset
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.load_metrics import MEASURED_LOAD_KEY, LoadNote
from scheduler.framework.runtime import SCORE_BREAKDOWN_KEY
from scheduler.framework.status import Status, distinct_statuses
from scheduler.framework.types import Diagnosis, NodeInfo

# Per rejecting plugin, the names of at most this many nodes (the counts are always complete).
NODE_NAMES_PER_PLUGIN = 5
# Rejected nodes examined for those names; counting stays complete. Bounds the Python loop on
# large clusters where thousands of nodes fail.
NAME_SCAN_LIMIT = 1000
# Scored nodes kept with their per-plugin breakdown (the chosen one is always kept too).
TOP_K = 3
_NEVER = np.iinfo(np.int64).min


# Outcomes of an attempt (the last one wins as the attempt progresses).
SCHEDULING = "Scheduling"
WAITING_ON_PERMIT = "WaitingOnPermit"
BINDING = "Binding"
BOUND = "Bound"
UNSCHEDULABLE = "Unschedulable"
ERROR = "Error"
BIND_FAILED = "BindFailed"


@dataclass(slots=True)
class PluginVerdicts:
    """One Filter (or PreFilter) plugin's rejections in an attempt."""

    rejected: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    nodes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"rejected": self.rejected, "reasons": dict(self.reasons), "nodes": list(self.nodes)}


@dataclass(slots=True)
class NodeScores:
    node: str
    total: int
    # plugin -> (raw, normalised, weighted)
    plugins: dict[str, tuple[int, int, int]]
    chosen: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "total": self.total,
            "chosen": self.chosen,
            "plugins": {
                name: {"raw": raw, "normalized": norm, "weighted": weighted}
                for name, (raw, norm, weighted) in self.plugins.items()
            },
        }


@dataclass(slots=True)
class ScoreTable:
    """The chosen node and the runners-up as plain ints, by column (that is how they are read out of
    the score arrays, on the loop); NodeScores are built on read."""

    # (plugin, weight) in Score order
    plugins: tuple[tuple[str, int], ...]
    nodes: tuple[str, ...]
    totals: list[int]
    # which of ``nodes`` was chosen (-1: none)
    chosen: int
    # per plugin, its raw and its normalised score at each of ``nodes``
    raws: list[list[int]]
    norms: list[list[int]]

    def node_scores(self) -> list[NodeScores]:
        out: list[NodeScores] = []
        for row, node in enumerate(self.nodes):
            plugins = {
                name: (raw[row], norm[row], norm[row] * weight)
                for (name, weight), raw, norm in zip(self.plugins, self.raws, self.norms, strict=True)
            }
            out.append(NodeScores(node, self.totals[row], plugins, row == self.chosen))
        return out


@dataclass(slots=True)
class Miss:
    """A node that failed exactly one Filter plugin, with what is short in the user's terms."""

    node: str
    plugin: str
    detail: str

    def text(self) -> str:
        return f"{self.node}: {self.detail}"

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "plugin": self.plugin, "detail": self.detail}


@dataclass(slots=True)
class AttemptRecord:
    """One attempt, condensed. Mutated only through the DecisionStore (under its lock, but for the
    single outcome store of ``DecisionStore.finish``'s bound pod)."""

    pod: str
    uid: str
    profile: str
    attempt: int
    time: float
    outcome: str = SCHEDULING
    node: str = ""
    message: str = ""
    nodes_total: int = 0
    nodes_evaluated: int = 0
    feasible: int = 0
    pre_filter: str = ""
    filters: dict[str, PluginVerdicts] = field(default_factory=dict)
    score_table: ScoreTable | None = None
    post_filter: str = ""
    nominated_node: str = ""
    nearest_misses: list[Miss] = field(default_factory=list)
    misses_probed: int = 0
    # What plugins say of the chosen node (explain/notes.py), e.g. the NUMA node a pod fits on.
    node_notes: list[str] = field(default_factory=list)
    # Node -> the measured load a load-aware plugin read for it (the top scored nodes only).
    measured_load: dict[str, LoadNote] = field(default_factory=dict)

    @property
    def scores(self) -> list[NodeScores]:
        """The top-K nodes with their per-plugin scores (built on each read: readers are rare)."""
        table = self.score_table
        return table.node_scores() if table is not None else []

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "uid": self.uid,
            "profile": self.profile,
            "attempt": self.attempt,
            "time": self.time,
            "outcome": self.outcome,
            "node": self.node,
            "message": self.message,
            "nodes": {
                "total": self.nodes_total,
                "evaluated": self.nodes_evaluated,
                "feasible": self.feasible,
            },
            "preFilter": self.pre_filter,
            "filter": {name: verdicts.to_json() for name, verdicts in self.filters.items()},
            "scores": [s.to_json() for s in self.scores],
            "postFilter": self.post_filter,
            "nominatedNode": self.nominated_node,
            "nearestMisses": [m.to_json() for m in self.nearest_misses],
            "nearestMissesProbed": self.misses_probed,
            "nodeNotes": list(self.node_notes),
            "measuredLoad": {node: note.to_json() for node, note in self.measured_load.items()},
        }


class Trace(AttemptRecord):
    """The record of the attempt in progress, collecting references during the cycle (see the module
    docstring). Filed as is when the outcome is known: no second object, nothing copied."""

    __slots__ = ("best", "breakdown", "diagnosis", "feasible_nodes", "load_notes", "ties", "totals")

    def __init__(self, pod: str, uid: str, profile: str, attempt: int, time: float) -> None:
        # Every AttemptRecord field at its default, assigned here rather than through the dataclass's
        # __init__ (its sixteen defaulted parameters cost twice these stores; one Trace per attempt).
        # tests/unit/explain/test_record.py checks that this stays the dataclass's defaults.
        self.pod = pod
        self.uid = uid
        self.profile = profile
        self.attempt = attempt
        self.time = time
        self.outcome = SCHEDULING
        self.node = ""
        self.message = ""
        self.nodes_total = 0
        self.nodes_evaluated = 0
        self.feasible = 0
        self.pre_filter = ""
        self.filters = {}
        self.score_table = None
        self.post_filter = ""
        self.nominated_node = ""
        self.nearest_misses = []
        self.misses_probed = 0
        self.node_notes = []
        self.measured_load = {}
        self.diagnosis: Diagnosis | None = None
        self.feasible_nodes: Sequence[NodeInfo] = ()
        self.totals: Sequence[int] | IntArray | None = None
        self.best = -1
        # The rows sharing the best total, ascending (what the algorithm selected ``best`` among).
        self.ties: IntArray | None = None
        self.breakdown: list[tuple[str, Sequence[int] | IntArray, IntArray, int]] = []
        # Filled by load-aware plugins during Score (every scored node); cut to the top nodes on record.
        self.load_notes: dict[str, LoadNote] = {}

    def attach(self, state: CycleState) -> None:
        state.write(TRACE_KEY, self)
        state.write(SCORE_BREAKDOWN_KEY, self.breakdown)
        state.write(MEASURED_LOAD_KEY, self.load_notes)

    def filtered(self, total_nodes: int, diagnosis: Diagnosis, feasible: Sequence[NodeInfo]) -> None:
        self.nodes_total = total_nodes
        self.diagnosis = diagnosis
        self.feasible_nodes = feasible

    def scored(self, scores: Sequence[int] | IntArray, best: int, ties: IntArray | None = None) -> None:
        self.totals = scores
        self.best = best
        self.ties = ties

    def record(self, outcome: str, chosen: str = "", message: str = "") -> AttemptRecord:
        """Condense this attempt (filter verdicts per plugin, top-K scores) and drop the references
        to the cycle's structures."""
        self.outcome = outcome
        self.node = chosen
        self.message = message
        diagnosis = self.diagnosis
        feasible = len(self.feasible_nodes)
        self.feasible = feasible
        if diagnosis is not None:
            self.nodes_evaluated = feasible + len(diagnosis.node_to_status)
            self.pre_filter = diagnosis.pre_filter_msg
            if diagnosis.node_to_status:
                self.filters = filter_verdicts(diagnosis.node_to_status)
            self.post_filter = diagnosis.post_filter_msg
        totals, ties, best, feasible_nodes = self.totals, self.ties, self.best, self.feasible_nodes
        if (
            ties is not None
            and best >= 0
            and len(ties) >= TOP_K == 3
            and type(totals) is np.ndarray
            and type(feasible_nodes) is NodeSubset
        ):
            self.score_table = _top_of_ties(totals, best, ties, self.breakdown, feasible_nodes, chosen)
        else:
            self.score_table = top_scores(self, chosen)
        if self.load_notes:
            table = self.score_table
            shown = table.nodes if table else (chosen,)
            self.measured_load = {node: self.load_notes[node] for node in shown if node in self.load_notes}
            self.load_notes = {}
        self.diagnosis = None
        self.feasible_nodes = ()
        self.totals = None
        self.ties = None
        self.breakdown = []
        return self


def filter_verdicts(node_to_status: dict[str, Status]) -> dict[str, PluginVerdicts]:
    """Rejections per plugin: complete counts per reason, the names of the first few nodes.

    Only the distinct Status objects are looked at in Python (``distinct_statuses``).
    """
    if not node_to_status:
        return {}
    verdicts: dict[str, PluginVerdicts] = {}
    for status, count in distinct_statuses(node_to_status.values()):
        verdict = verdicts.get(status.plugin)
        if verdict is None:
            verdict = verdicts[status.plugin] = PluginVerdicts()
        verdict.rejected += count
        for reason in status.reasons:
            verdict.reasons[reason] += count
    for name, status in islice(node_to_status.items(), NAME_SCAN_LIMIT):
        names = verdicts[status.plugin].nodes
        if len(names) < NODE_NAMES_PER_PLUGIN:
            names.append(name)
    return verdicts


def top_scores(trace: Trace, chosen: str) -> ScoreTable | None:
    """The best ``TOP_K`` scored nodes (the chosen one first, then by total, ties to the lower row),
    each with every plugin's scores.

    Runs once per attempt on the scheduling loop, right after Score: the arrays it reads were just
    written, so they are still in the CPU caches (read a batch of records later, they were not, and
    condensing cost several times more; keeping the arrays until someone reads the record would hold
    tens of kilobytes per stored record). The node names are read now (the NodeSubset resolves names
    through the snapshot, which later cycles change), and a few plain ints per plugin with ``.item``
    (no numpy scalars, no fancy index). Nothing of the cycle is kept.
    """
    if trace.totals is None:
        # One feasible node (or no Score plugins): nothing was scored, the node won unopposed.
        return ScoreTable((), (chosen,), [0], 0, [], []) if chosen else None
    totals = trace.totals
    best = trace.best
    picked = _top_rows(totals, best, trace.ties)
    feasible = trace.feasible_nodes
    if len(picked) == 3:
        i, j, k = picked
        if isinstance(totals, np.ndarray):
            item = totals.item
            total_row = [item(i), item(j), item(k)]
        else:
            total_row = [int(totals[i]), int(totals[j]), int(totals[k])]
        plugins, raws, norms = _three_rows(trace.breakdown, i, j, k)
    else:
        plugins = []
        raws = []
        norms = []
        total_row = [_at(totals, i) for i in picked]
        for name, raw, norm, weight in trace.breakdown:
            plugins.append((name, weight))
            values = [norm.item(i) for i in picked]
            norms.append(values)
            if raw is norm:
                raws.append(values)
            elif isinstance(raw, np.ndarray):
                raws.append([raw.item(i) for i in picked])
            else:
                raws.append([int(raw[i]) for i in picked])
    return ScoreTable(
        tuple(plugins),
        _names(feasible, picked, chosen if best >= 0 else ""),
        total_row,
        picked.index(best) if best in picked else -1,
        raws,
        norms,
    )


def _top_of_ties(
    totals: IntArray,
    best: int,
    ties: IntArray,
    breakdown: Sequence[tuple[str, Sequence[int] | IntArray, IntArray, int]],
    feasible: NodeSubset,
    chosen: str,
) -> ScoreTable:
    """``top_scores`` when at least three rows share the best total (every attempt on identical
    nodes): the table is ``best`` and the first two other tied rows, all with the same total. The
    general path's steps in one frame, each value read once: this runs for nearly every pod."""
    first, second, third = ties.item(0), ties.item(1), ties.item(2)
    # The two lowest tied rows other than ``best`` (ties are ascending).
    if best == first:
        j, k = second, third
    elif best == second:
        j, k = first, third
    else:
        j, k = first, second
    i = best
    total = totals.item(i)
    plugins, raws, norms = _three_rows(breakdown, i, j, k)
    info_at = feasible.columns.infos.item
    position_at = feasible.positions.item
    names = (
        chosen or info_at(position_at(i)).name,
        info_at(position_at(j)).name,
        info_at(position_at(k)).name,
    )
    return ScoreTable(tuple(plugins), names, [total, total, total], 0, raws, norms)


def _three_rows(
    breakdown: Sequence[tuple[str, Sequence[int] | IntArray, IntArray, int]], i: int, j: int, k: int
) -> tuple[list[tuple[str, int]], list[list[int]], list[list[int]]]:
    """Each plugin's (name, weight), raw and normalised scores of rows ``i``, ``j``, ``k``: the usual
    table (three rows), spelt out, as three ``.item`` calls cost less than a comprehension's frame."""
    plugins: list[tuple[str, int]] = []
    raws: list[list[int]] = []
    norms: list[list[int]] = []
    for name, raw, norm, weight in breakdown:
        plugins.append((name, weight))
        item = norm.item
        values = [item(i), item(j), item(k)]
        norms.append(values)
        if raw is norm:
            raws.append(values)
        elif isinstance(raw, np.ndarray):
            item = raw.item
            raws.append([item(i), item(j), item(k)])
        else:
            raws.append([int(raw[i]), int(raw[j]), int(raw[k])])
    return plugins, raws, norms


def _names(feasible: Sequence[NodeInfo], picked: list[int], chosen: str) -> tuple[str, ...]:
    """The names of the ``picked`` rows. The first is the ``chosen`` node's if given (its name is
    known: only the other nodes' objects are read, cold in the CPU caches by now)."""
    rows = picked[1:] if chosen else picked
    if isinstance(feasible, NodeSubset):
        # Through the subset's columns with ``.item``: its indexing goes through numpy scalars, which
        # costs several times more.
        info_at = feasible.columns.infos.item
        position_at = feasible.positions.item
        names = tuple([info_at(position_at(index)).name for index in rows])
    else:
        names = tuple([feasible[index].name for index in rows])
    return (chosen, *names) if chosen else names


def _top_rows(totals: Sequence[int] | IntArray, best: int, ties: IntArray | None) -> list[int]:
    """``best`` (if any), then the rows with the highest totals, ties to the lower row, ``TOP_K`` in
    all. The rows sharing the best total (``ties``, ascending, as the algorithm found them) come
    first; only when they run out, the rest are found with ``argmax`` over the totals, masking the
    rows already picked in place and restoring them (no copy)."""
    picked: list[int] = [best] if best >= 0 else []
    want = min(TOP_K, len(totals))
    if ties is not None and best >= 0:
        # The first ``want`` tied rows hold every one needed, ``best`` among them or not.
        for row in ties[:want].tolist():
            if row != best and len(picked) < want:
                picked.append(row)
    if len(picked) < want:
        array = totals if isinstance(totals, np.ndarray) else np.asarray(totals, dtype=np.int64)
        saved: list[tuple[int, int]] = []
        for index in picked:
            saved.append((index, array.item(index)))
            array[index] = _NEVER
        while len(picked) < want:
            index = int(array.argmax())
            picked.append(index)
            saved.append((index, array.item(index)))
            array[index] = _NEVER
        for index, value in saved:
            array[index] = value
    return picked


def _at(values: Sequence[int] | IntArray, index: int) -> int:
    """One score as a Python int: ``.item`` on an array (no numpy scalar), plain indexing on a list."""
    if isinstance(values, np.ndarray):
        value: int = values.item(index)
        return value
    return int(values[index])


def summary(record: AttemptRecord, max_bytes: int) -> str:
    """The attempt in one compact JSON line of at most ``max_bytes`` (the pod annotation).

    Outcome, node, node counts, the rejections per Filter plugin, the chosen node's and runners-up's
    totals, the nearest misses. What does not fit is dropped from the least telling end: misses, then
    runners-up, then Filter plugins with the fewest rejections; the message is cut last.
    """
    doc: dict[str, Any] = {
        "attempt": record.attempt,
        "outcome": record.outcome,
        "node": record.node,
        "nodes": [record.nodes_total, record.nodes_evaluated, record.feasible],
    }
    if record.message and record.outcome != BOUND:
        doc["message"] = record.message
    if record.filters:
        ranked = sorted(record.filters.items(), key=lambda kv: -kv[1].rejected)
        doc["filtered"] = {plugin or "?": verdict.rejected for plugin, verdict in ranked}
    table = record.score_table
    if table is not None and table.plugins:
        doc["scores"] = dict(zip(table.nodes, table.totals, strict=True))
    if record.nearest_misses:
        doc["nearestMisses"] = [miss.text() for miss in record.nearest_misses]
    encoded = orjson.dumps(doc)
    while len(encoded) > max_bytes:
        if doc.get("nearestMisses"):
            doc["nearestMisses"].pop()
        elif len(doc.get("scores") or ()) > 1:
            doc["scores"].popitem()
        elif len(doc.get("filtered") or ()) > 1:
            doc["filtered"].popitem()
        elif len(doc.get("message") or "") > 16:
            doc["message"] = doc["message"][: max(16, len(doc["message"]) - (len(encoded) - max_bytes) - 4)]
            doc["message"] = doc["message"][:-1] + "\u2026"
        else:
            # Pathological names: keep what always fits.
            doc = {key: doc[key] for key in ("attempt", "outcome", "nodes")}
        encoded = orjson.dumps(doc)
    return encoded.decode()
