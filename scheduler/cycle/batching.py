"""Opportunistic batching: identical pods reuse the last Filter verdicts and raw Scores.

Upstream (``framework/runtime/batch.go``, OpportunisticBatching) hands the next pod of the same
signature the runner-up node of the last cycle, skipping Filter and Score. That changes placements
where ``percentageOfNodesToScore`` limits the search (the hinted pod does not advance the round-robin
start index, and its candidates are the last pod's window) and where normalisation depends on the
feasible set. This cache keeps placements exactly those of one-by-one scheduling instead:

* per signature it keeps, for every snapshot row, the first failing Filter plugin and its Status, and
  each Score plugin's raw score, with the NodeInfo generation each was computed at;
* the next pod of that signature re-judges only the rows whose generation changed (usually the node
  the previous pod went to), then runs the ordinary round-robin window over the cached verdicts from
  the same start index, with the same ``numFeasibleNodesToFind``, and scores the same feasible nodes,
  normalising over them as before. Only raw scores of changed or never-scored rows are computed.

The signature (``Framework.sign_pod``) promises that a plugin's verdict and raw score on a node
depend only on that node's state and the pod's signature, so a row whose generation is unchanged
keeps its answers. Rows move only when nodes are added or removed, which builds new columns: entries
of other columns are discarded.

Per signature it also keeps what PreFilter and PreScore wrote to the CycleState (``PreState``) when
every such plugin of the profile promises that this is a function of the signature alone
(``pre_state_from_signature``): the next pod of that signature takes shallow copies of those values
instead of running the two points. Changed rows, usually one, are judged and scored through the
plugins' per-node methods: a vectorised call on one row costs about what it does on hundreds.

The scheduler keeps this cache under upstream's gate, ``--feature-gates=OpportunisticBatching`` (beta,
on by default; ``scheduler.features``). Its counters are py-scheduler's own
(``py_scheduler_batching_{hits,misses}_total``): upstream's ``scheduler_batch_*`` metrics count hints
and flushes, which this cache has none of.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.cycle.shallow_copy import shallow_copy
from scheduler.framework.columns import GENERATION_COLUMN, IntArray, NodeSubset, consecutive_subset
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BatchFilterPlugin,
    BatchScorePlugin,
    FilterPlugin,
    ScorePlugin,
)
from scheduler.framework.masked import ok_mask
from scheduler.framework.runtime import (
    SCORE_BREAKDOWN_KEY,
    Framework,
    PluginError,
    ScoreStep,
    _out_of_range,
)
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo

# Raw scores are MIN_NODE_SCORE..MAX_NODE_SCORE, 0..100 (checked before they are kept); this marks a
# row not scored since it last changed.
_UNKNOWN = -1
# Signatures kept per profile: a few interleaved ReplicaSets each keep their entry.
MAX_ENTRIES = 8
# Past this share of changed rows, judging everything afresh costs no more than patching.
_REBUILD_SHARE = 4
# Up to this many rows are judged and scored through the per-node plugin methods (same answers as the
# batch ones: tests/unit/cycle/test_batch_equivalence.py); more go through one batch call per plugin.
_PER_NODE_ROWS = 8
# Normalised windows kept per PreState (``window_scores``): a window shrinks as nodes fill, so each new
# length is a new key; past this many the memo starts afresh rather than grow with the cluster.
_NORMALIZED_KEPT = 32


@dataclass(slots=True)
class BatchStats:
    """Counters exported as py_scheduler_batching_{hits,misses}_total."""

    hits: int = 0
    misses: int = 0
    unsignable: int = 0
    # PreFilter and PreScore points answered from the state kept for the pod's signature.
    pre_filter_replays: int = 0
    pre_score_replays: int = 0


@dataclass(slots=True)
class BatchEntry:
    columns: Any  # the NodeColumns the rows index; other columns mean other rows
    filters: tuple[str, ...]
    generations: IntArray
    # Per row: index in ``filters`` of the first plugin that rejects it, -1 when all pass.
    first_failure: IntArray
    statuses: dict[int, Status]
    raw: dict[str, IntArray] = field(default_factory=dict)
    # The Filter plugin list ``filters`` was last found equal to: the framework hands pods that skip
    # alike the same list, so the names need no comparing then.
    filter_list: Sequence[FilterPlugin] | None = None
    # Rows 0..count-1 twice over, read-only: the round-robin order from any start is a slice of it.
    ring: IntArray | None = None
    # ``window_scores``: the Score plan (``Framework.score_plan``) for the skip set ``plan_skip``; per
    # row, the weighted sum of the raw scores of the plan's plugins without NormalizeScore (_UNKNOWN:
    # some plugin of the plan has no raw score there); per plugin with NormalizeScore, the raw score
    # every known row holds (None: they differ).
    plan_skip: frozenset[str] | None = None
    plan: tuple[ScoreStep, ...] | None = None
    total: IntArray | None = None
    uniform: dict[str, int | None] = field(default_factory=dict)


@dataclass(slots=True)
class PreState:
    """What PreFilter and PreScore wrote to the CycleState of a pod of one signature, and the plugins
    they skipped. Kept only when both points passed without narrowing the nodes."""

    filter_data: dict[str, Any]
    skip_filter: frozenset[str]
    score_data: dict[str, Any] | None = None
    skip_score: frozenset[str] = frozenset()
    # ``window_scores``: per (plugin, window length, raw score), the read-only raw window, its
    # normalised scores and those times the weight. An array NormalizeScore reads the CycleState, the
    # pod and the scores; the state is this object's (replayed), the pod's answers are its signature's.
    normalized: dict[tuple[str, int, int], tuple[IntArray, IntArray, IntArray]] = field(default_factory=dict)

    def replay_pre_filter(self, state: CycleState) -> None:
        for key, value in self.filter_data.items():
            state.write(key, shallow_copy(value))
        state.skip_filter_plugins.update(self.skip_filter)

    def replay_pre_score(self, state: CycleState) -> None:
        assert self.score_data is not None
        for key, value in self.score_data.items():
            state.write(key, shallow_copy(value))
        state.skip_score_plugins.update(self.skip_score)

    def keep_pre_score(self, before: dict[str, Any], state: CycleState) -> None:
        """Record what PreScore wrote (``before``: ``state.written()`` taken just before it ran)."""
        score_data = _written_since(before, state)
        if score_data is not None:
            self.score_data = score_data
            self.skip_score = frozenset(state.skip_score_plugins)


def _written_since(before: dict[str, Any], state: CycleState) -> dict[str, Any] | None:
    """The keys a phase wrote, with their values as written, or None when it deleted a key (not a
    state a copy of the values can reproduce)."""
    after = state.written()
    if any(key not in after for key in before):
        return None
    changed: dict[str, Any] = {}
    for key, value in after.items():
        if before.get(key, _ABSENT) is not value:
            # Copied now, so later phases of this cycle cannot change what the next pod receives.
            changed[key] = shallow_copy(value)
    return changed


_ABSENT: Any = object()


class BatchCache:
    """The per-profile cache of one SchedulingAlgorithm (the loop's only scheduling task uses it)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: dict[str, OrderedDict[Hashable, BatchEntry]] = {}
        self._pre_states: dict[str, OrderedDict[Hashable, PreState]] = {}
        self._max_entries = max_entries
        self.stats = BatchStats()
        # Called with "hit" or "miss" per signed pod (metrics); unsignable pods count as misses.
        self.observe: Callable[[str], None] = _ignore

    def pre_state(self, profile: str, signature: Hashable) -> PreState | None:
        """The PreFilter/PreScore state kept for this signature, if any."""
        kept = self._pre_states.get(profile)
        return kept.get(signature) if kept is not None else None

    def keep_pre_filter(
        self, profile: str, signature: Hashable, before: dict[str, Any], state: CycleState
    ) -> PreState | None:
        """Record what PreFilter wrote for this signature (``before``: ``state.written()`` taken just
        before it ran); PreScore's part is added when it runs."""
        filter_data = _written_since(before, state)
        if filter_data is None:
            return None
        kept = self._pre_states.setdefault(profile, OrderedDict())
        pre = kept[signature] = PreState(filter_data, frozenset(state.skip_filter_plugins))
        kept.move_to_end(signature)
        while len(kept) > self._max_entries:
            kept.popitem(last=False)
        return pre

    def unsignable(self) -> None:
        self.stats.unsignable += 1
        self.stats.misses += 1
        self.observe("miss")

    def find_feasible(
        self,
        profile: str,
        signature: Hashable,
        columns: Any,
        start: int,
        num_to_find: int,
        state: CycleState,
        pod: PodInfo,
        plugins: Sequence[FilterPlugin],
        batch_of: Callable[[FilterPlugin], BatchFilterPlugin | None],
    ) -> tuple[NodeSubset, int, list[tuple[NodeInfo, Status]], BatchEntry | None]:
        """The Filter loop's answer (feasible nodes, processed count, failures in visit order) from
        the cached verdicts, patched for the rows that changed. Returns the entry for scoring (None
        when the verdicts were not cacheable)."""
        entries = self._entries.setdefault(profile, OrderedDict())
        generations: IntArray = columns.array(GENERATION_COLUMN)
        entry = entries.get(signature)
        count = len(columns)
        if (
            entry is not None
            and entry.columns is columns
            and (entry.filter_list is plugins or entry.filters == tuple(p.name for p in plugins))
        ):
            entry.filter_list = plugins
            # ``nonzero`` on the 1-d mask: flatnonzero's ravel and dispatch cost more than the search.
            dirty = (generations != entry.generations).nonzero()[0]
            if len(dirty) * _REBUILD_SHARE > count:
                entry = None
            else:
                self.stats.hits += 1
                self.observe("hit")
                entries.move_to_end(signature)
                if len(dirty):
                    self._judge(entry, dirty, columns, state, pod, plugins, batch_of)
                    entry.generations[dirty] = generations[dirty]
                    for raw in entry.raw.values():
                        raw[dirty] = _UNKNOWN
                    if entry.total is not None:
                        entry.total[dirty] = _UNKNOWN
        else:
            entry = None
        if entry is None:
            self.stats.misses += 1
            self.observe("miss")
            every = np.arange(count, dtype=np.int64)
            names = tuple(p.name for p in plugins)
            first_failure = np.full(count, -1, dtype=np.int64)
            entry = BatchEntry(columns, names, generations.copy(), first_failure, {}, filter_list=plugins)
            self._judge(entry, every, columns, state, pod, plugins, batch_of)
            entries[signature] = entry
            entries.move_to_end(signature)
            while len(entries) > self._max_entries:
                entries.popitem(last=False)
        feasible, processed, failures = _window(entry, columns, start, num_to_find)
        if any(status.code is Code.Error for status in entry.statuses.values()):
            # An internal error is not a verdict to keep: judge afresh next time.
            entries.pop(signature, None)
            return feasible, processed, failures, None
        return feasible, processed, failures, entry

    @staticmethod
    def _judge(
        entry: BatchEntry,
        rows: IntArray,
        columns: Any,
        state: CycleState,
        pod: PodInfo,
        plugins: Sequence[FilterPlugin],
        batch_of: Callable[[FilterPlugin], BatchFilterPlugin | None],
    ) -> None:
        """Each row's first failing plugin (plugin order, as the per-node loop) and its Status.
        Batch plugins are pure, so judging a row another plugin already rejected changes nothing."""
        statuses = entry.statuses
        for row in rows.tolist():
            statuses.pop(row, None)
        if len(rows) <= _PER_NODE_ROWS:
            _judge_per_node(entry, rows, columns, state, pod, plugins)
            return
        subset = NodeSubset(columns, rows)
        first: IntArray = np.full(len(rows), -1, dtype=np.int64)
        for plugin_index, plugin in enumerate(plugins):
            batch = batch_of(plugin)
            assert batch is not None, "only profiles whose Filter plugins are all batch plugins batch"
            results = batch.filter_nodes(state, pod, subset)
            if getattr(results, "all_ok", False):
                continue
            mask = ok_mask(results)
            newly = np.flatnonzero((first < 0) & ~mask)
            if not len(newly):
                continue
            first[newly] = plugin_index
            for index in newly.tolist():
                status = results[index]
                assert status is not None
                statuses[int(rows[index])] = status.with_plugin(plugin.name)
        entry.first_failure[rows] = first

    def raw_scores(
        self,
        entry: BatchEntry,
        feasible: NodeSubset,
        state: CycleState,
        pod: PodInfo,
        plugins: Sequence[ScorePlugin],
        batch_scores: Callable[[str], BatchScorePlugin | None],
    ) -> dict[str, IntArray]:
        """Raw scores of ``feasible`` per Score plugin not skipped: cached rows as they were, the
        rest computed now (PreScore has run) and kept."""
        rows = feasible.positions
        out: dict[str, IntArray] = {}
        skip = state.skip_score_plugins
        for plugin in plugins:
            name = plugin.name
            if name in skip:
                continue
            raw = entry.raw.get(name)
            if raw is None:
                raw = entry.raw[name] = np.full(len(entry.first_failure), _UNKNOWN, dtype=np.int64)
            values = raw[rows]
            # Whether some row misses a score: the smallest value is the marker (kept scores are
            # 0..100). ``argmin`` and one item cost a fifth of a comparison over the window or of min.
            if len(values) and values[values.argmin()] == _UNKNOWN:
                missing = (values == _UNKNOWN).nonzero()[0]
                if len(missing) <= _PER_NODE_ROWS:
                    kept = _fill_per_node(plugin, raw, values, missing, rows, feasible, state, pod)
                else:
                    kept = _fill_batch(
                        plugin, batch_scores(name), raw, values, missing, rows, feasible, state, pod
                    )
                if not kept:
                    # Out of range (the framework reports it) or an error: never cache it.
                    continue
                # A plugin's raw score that was the same on every node may differ now.
                common = entry.uniform.get(name, _ABSENT)
                if (
                    common is not None
                    and common is not _ABSENT
                    and any(value != common for value in values[missing].tolist())
                ):
                    entry.uniform[name] = None
            out[name] = values
        return out

    def window_scores(
        self,
        entry: BatchEntry,
        feasible: NodeSubset,
        state: CycleState,
        pod: PodInfo,
        fwk: Framework,
        pre: PreState,
    ) -> IntArray | None:
        """``Framework.run_score_array`` over the cached raw scores, for a cycle that replayed ``pre``
        (its PreScore state): the same totals, and the same score breakdown when one is asked for,
        without a normalisation and a weighted sum per plugin and cycle. Plugins without NormalizeScore
        add their kept weighted sum per row; one with NormalizeScore whose raw score is the same on
        every node (the common case: no taints, no claims) adds its normalised window kept in ``pre``.
        None: the caller scores as usual (a raw score failed or is out of range, a normaliser needs
        node names, or a normalised score is out of range: the usual path reports those)."""
        skip = state.skip_score_plugins
        plan = entry.plan
        if entry.plan_skip is None or entry.plan_skip != skip:
            plan = entry.plan = fwk.score_plan(skip)
            entry.plan_skip = frozenset(skip)
            entry.total = None
        if plan is None:
            return None
        rows = feasible.positions
        size = len(rows)
        total = entry.total
        if total is None:
            total = entry.total = np.full(len(entry.first_failure), _UNKNOWN, dtype=np.int64)
        totals = total[rows]
        if size and totals[totals.argmin()] == _UNKNOWN:
            # Rows changed since (or never) scored: their raw scores through ``raw_scores``, kept.
            missing = (totals == _UNKNOWN).nonzero()[0]
            positions = rows[missing]
            if len(missing) <= _PER_NODE_ROWS:
                # Usually the node or two that changed since: Python ints, no numpy call per plugin.
                sums = _score_rows(entry, plan, positions.tolist(), feasible.columns.infos, state, pod)
                if sums is None:
                    return None
                for column, row, fixed_sum in zip(missing.tolist(), positions.tolist(), sums, strict=True):
                    total[row] = fixed_sum
                    totals[column] = fixed_sum
            else:
                plugins = [step.plugin for step in plan]
                known = self.raw_scores(
                    entry, NodeSubset(feasible.columns, positions), state, pod, plugins, fwk.batch_score
                )
                if len(known) != len(plan):
                    return None
                fixed = np.zeros(len(missing), dtype=np.int64)
                for step in plan:
                    if step.normalizer is None:
                        fixed += known[step.plugin.name] * step.weight
                total[positions] = fixed
                totals[missing] = fixed
        breakdown: list[tuple[str, Sequence[int] | IntArray, IntArray, int]] | None = state.get(
            SCORE_BREAKDOWN_KEY
        )
        # Appended to ``breakdown`` only once every plugin is through: a None answer adds nothing.
        parts: list[tuple[str, Sequence[int] | IntArray, IntArray, int]] = []
        for plugin, weight, normalizer in plan:
            name = plugin.name
            if normalizer is None:
                if breakdown is not None:
                    values = entry.raw[name][rows]
                    parts.append((name, values, values, weight))
                continue
            common = self._uniform(entry, name)
            kept = pre.normalized.get((name, size, common)) if common is not None else None
            if kept is None:
                raw = entry.raw[name][rows]
                try:
                    normalized = fwk.normalize_array(name, state, pod, feasible, raw)
                except PluginError:
                    return None
                if len(normalized) and _out_of_range(normalized):
                    return None
                weighted = normalized * weight
                if common is not None:
                    raw.flags.writeable = False
                    normalized.flags.writeable = False
                    weighted.flags.writeable = False
                    if len(pre.normalized) >= _NORMALIZED_KEPT:
                        pre.normalized.clear()
                    pre.normalized[(name, size, common)] = (raw, normalized, weighted)
            else:
                raw, normalized, weighted = kept
            totals += weighted
            parts.append((name, raw, normalized, weight))
        if breakdown is not None:
            breakdown.extend(parts)
        return totals

    @staticmethod
    def _uniform(entry: BatchEntry, name: str) -> int | None:
        """The raw score of plugin ``name`` every row with a known one holds, or None."""
        common = entry.uniform.get(name, _ABSENT)
        if common is _ABSENT:
            raw = entry.raw[name]
            values = raw[raw != _UNKNOWN]
            first = int(values[0]) if len(values) else None
            common = entry.uniform[name] = (
                first if first is not None and values.min() == values.max() else None
            )
        found: int | None = common
        return found


def _score_rows(
    entry: BatchEntry,
    plan: Sequence[ScoreStep],
    rows: list[int],
    infos: Any,
    state: CycleState,
    pod: PodInfo,
) -> list[int] | None:
    """Raw scores of every plugin of ``plan`` on a few ``rows``, kept in ``entry.raw`` (a score known
    there already is reused), and per row the weighted sum over the plugins without NormalizeScore.
    None, nothing kept for the row, when a score fails or is out of range (the usual path reports it).
    Plugins with NormalizeScore lose their uniform raw score (``BatchEntry.uniform``) to a new value."""
    count = len(entry.first_failure)
    uniform = entry.uniform
    sums: list[int] = []
    for row in rows:
        node = infos[row]
        scores: list[tuple[IntArray, int]] = []
        fixed_sum = 0
        for plugin, weight, normalizer in plan:
            name = plugin.name
            raw = entry.raw.get(name)
            if raw is None:
                raw = entry.raw[name] = np.full(count, _UNKNOWN, dtype=np.int64)
            score = int(raw[row])
            if score == _UNKNOWN:
                score, status = plugin.score(state, pod, node)
                if (
                    status is not None and status.code is not Code.Success
                ) or not MIN_NODE_SCORE <= score <= MAX_NODE_SCORE:
                    return None
                scores.append((raw, score))
                if normalizer is not None:
                    common = uniform.get(name, _ABSENT)
                    if common is not None and common is not _ABSENT and common != score:
                        uniform[name] = None
            if normalizer is None:
                fixed_sum += score * weight
        for raw, score in scores:
            raw[row] = score
        sums.append(fixed_sum)
    return sums


def _judge_per_node(
    entry: BatchEntry,
    rows: IntArray,
    columns: Any,
    state: CycleState,
    pod: PodInfo,
    plugins: Sequence[FilterPlugin],
) -> None:
    """``BatchCache._judge`` for a few rows: each row's plugins in order, stopping at the first that
    rejects it, as the per-node Filter loop does."""
    infos = columns.infos
    first_failure = entry.first_failure
    statuses = entry.statuses
    for row in rows.tolist():
        node = infos[row]
        failed = -1
        for plugin_index, plugin in enumerate(plugins):
            status = plugin.filter(state, pod, node)
            if status is not None and status.code is not Code.Success:
                failed = plugin_index
                statuses[row] = status.with_plugin(plugin.name)
                break
        first_failure[row] = failed


def _fill_per_node(
    plugin: ScorePlugin,
    raw: IntArray,
    values: IntArray,
    missing: IntArray,
    rows: IntArray,
    feasible: NodeSubset,
    state: CycleState,
    pod: PodInfo,
) -> bool:
    """Score the few ``missing`` entries of ``values`` (the window's raw scores; ``raw``, the entry's)
    through the plugin's per-node ``score`` and keep them: False, nothing kept, when one fails or is
    out of range. Python ints throughout, as a numpy call on one row costs more than the score."""
    infos = feasible.columns.infos
    computed: list[tuple[int, int, int]] = []
    for column in missing.tolist():
        row = int(rows[column])
        score, status = plugin.score(state, pod, infos[row])
        if (
            status is not None and status.code is not Code.Success
        ) or not MIN_NODE_SCORE <= score <= MAX_NODE_SCORE:
            return False
        computed.append((column, row, score))
    for column, row, score in computed:
        values[column] = score
        raw[row] = score
    return True


def _fill_batch(
    plugin: ScorePlugin,
    batch: BatchScorePlugin | None,
    raw: IntArray,
    values: IntArray,
    missing: IntArray,
    rows: IntArray,
    feasible: NodeSubset,
    state: CycleState,
    pod: PodInfo,
) -> bool:
    """``_fill_per_node`` for many missing rows: one batch Score call over them (per node for a plugin
    without a batch method)."""
    if batch is None:
        return _fill_per_node(plugin, raw, values, missing, rows, feasible, state, pod)
    positions = rows[missing]
    nodes = NodeSubset(feasible.columns, positions)
    computed = np.asarray(batch.score_nodes(state, pod, nodes), dtype=np.int64)
    if len(computed) != len(nodes) or (
        len(computed) and (computed.min() < MIN_NODE_SCORE or computed.max() > MAX_NODE_SCORE)
    ):
        return False
    values[missing] = computed
    raw[positions] = computed
    return True


def _window(
    entry: BatchEntry, columns: Any, start: int, num_to_find: int
) -> tuple[NodeSubset, int, list[tuple[NodeInfo, Status]]]:
    """The round-robin Filter window over cached verdicts: visit rows from ``start``, stop at the
    ``num_to_find``-th feasible one (``scheduler.cycle.filter_loop.find_feasible``'s contract)."""
    count = len(entry.first_failure)
    ring = entry.ring
    if ring is None:
        ring = np.arange(2 * count, dtype=np.int64)
        ring %= count
        ring.flags.writeable = False
        entry.ring = ring
    if not entry.statuses:
        # Nothing rejected anywhere: the first ``num_to_find`` rows from ``start``, consecutive round
        # the end (plugins then gather slices).
        size = min(num_to_find, count)
        return consecutive_subset(columns, ring[start : start + size], start), size, []
    order: IntArray = ring[start : start + count]
    ok = entry.first_failure[order] < 0
    alive = ok.nonzero()[0]
    if len(alive) >= num_to_find:
        cut = int(alive[num_to_find - 1]) + 1
        alive = alive[:num_to_find]
    else:
        cut = count
    failed_rows = order[:cut][~ok[:cut]].tolist()
    infos = columns.infos
    statuses = entry.statuses
    failures = [(infos[row], statuses[row]) for row in failed_rows]
    return NodeSubset(columns, order[alive]), cut, failures


def _ignore(result: str) -> None:
    return None
