"""The scheduling algorithm of one attempt: filter, score, select (``pkg/scheduler/schedule_one.go``).

Pure and synchronous: it reads a snapshot and a framework and returns a node name or raises FitError.
Side effects (assume, Reserve, Permit, binding, events) live in ``scheduler.cycle.schedule_one``.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from scheduler.cache.columns import NodeColumns
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.batching import BatchCache, BatchEntry, PreState
from scheduler.cycle.filter_loop import find_feasible, first_nodes
from scheduler.cycle.nominated_verdicts import MISSING, NominatedVerdicts
from scheduler.extender.runner import EXTENDER_NAME, Extenders
from scheduler.framework.columns import IntArray, NodeSubset, int_max
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.interface import FilterPlugin
from scheduler.framework.objects import pod_status
from scheduler.framework.runtime import PRE_FILTER_NARROWING_KEY, Framework, go_list
from scheduler.framework.status import Code, Status
from scheduler.framework.types import Diagnosis, NodeInfo, PodInfo, PreFilterResult

log = logging.getLogger(__name__)

# Upstream constants (pkg/scheduler/schedule_one.go).
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
BASE_PERCENTAGE_OF_NODES_TO_SCORE = 50


def num_feasible_nodes_to_find(percentage_of_nodes_to_score: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to find before scoring: upstream's adaptive percentageOfNodesToScore."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = percentage_of_nodes_to_score or 0
    if percentage >= 100:
        return num_all_nodes
    if percentage <= 0:
        # Shrinks from 50% as the cluster grows (5000 nodes -> 10%), never below 5%.
        percentage = BASE_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125
        percentage = max(percentage, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num_nodes = num_all_nodes * percentage // 100
    return max(num_nodes, MIN_FEASIBLE_NODES_TO_FIND)


# Upstream's clearNominatedNode: NominatingInfo{ModeOverride, ""}.
CLEAR_NOMINATION = ""


def runs_post_filter(fwk: Framework, err: FitError) -> bool:
    """Upstream schedulingCycle runs PostFilter only with PostFilter plugins and some node judged."""
    return bool(fwk.plugins.post_filter) and bool(err.num_all_nodes or err.diagnosis.node_to_status)


@dataclass(slots=True)
class ScheduleResult:
    node_name: str
    evaluated_nodes: int
    feasible_nodes: int


# CycleState key: a decision trace (scheduler.explain.record.Trace) when recording is on. The algorithm
# hands it what it computed anyway (the diagnosis, the feasible nodes and their scores); no extra work.
TRACE_KEY = "explain/trace"


@dataclass(slots=True)
class _FilterRun:
    """What every Filter strategy of one attempt works with."""

    fwk: Framework
    state: CycleState
    pod: PodInfo
    plugins: Sequence[FilterPlugin]
    diagnosis: Diagnosis
    start: int
    num_to_find: int
    nominated_nodes: Collection[str]
    filter_start: float


class SchedulingAlgorithm:
    """Holds the round-robin start index that spreads filter work across calls."""

    def __init__(self, rng: random.Random | None = None, *, batching: bool = False) -> None:
        self.next_start_node_index = 0
        self._rng = rng or random.Random()
        # Identical pods reuse the last Filter verdicts, raw Scores and PreFilter/PreScore state
        # (scheduler.cycle.batching). Placements equal one-by-one scheduling. The scheduler turns it on
        # under the OpportunisticBatching gate (on by default); explain's simulation and the benches
        # choose for themselves.
        self.batch: BatchCache | None = BatchCache() if batching else None
        # The cache entry the current attempt filtered with; its Score step reads and fills it.
        self._batched: BatchEntry | None = None
        # Verdicts on nodes with nominated pods, kept while the node, its nominations and the pod's
        # shape stay (scheduler.cycle.nominated_verdicts).
        self.nominated_verdicts = NominatedVerdicts()
        # The PreFilter/PreScore state kept for the current attempt's signature: PreScore replays it,
        # or records into it when only PreFilter's part is known yet.
        self._pre_state: PreState | None = None

    def schedule_pod(
        self, fwk: Framework, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> ScheduleResult:
        all_nodes = snapshot.node_infos()
        if not all_nodes:
            raise FitError(pod, 0, Diagnosis())
        feasible, diagnosis = self._find_nodes_that_fit(fwk, state, pod, all_nodes, snapshot, batching=True)
        trace = state.get(TRACE_KEY)
        if trace is not None:
            trace.filtered(len(all_nodes), diagnosis, feasible)
        if not feasible:
            raise FitError(pod, len(all_nodes), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1:
            # Upstream skips scoring when there is nothing to choose between.
            return ScheduleResult(feasible[0].name, evaluated, 1)
        scores = self._prioritize(fwk, state, pod, feasible, batched=self._batched)
        best, ties = self._select(scores)
        if trace is not None:
            trace.scored(scores, best, ties)
        return ScheduleResult(feasible[best].name, evaluated, len(feasible))

    async def schedule_pod_with_extenders(
        self, fwk: Framework, state: CycleState, pod: PodInfo, snapshot: Snapshot, extenders: Extenders
    ) -> ScheduleResult:
        """``schedule_pod`` with the extenders' HTTP calls awaited: their filters after the Filter
        plugins, their scores added to the Score plugins'. Only used when extenders are configured, so
        the plain path stays synchronous."""
        all_nodes = snapshot.node_infos()
        if not all_nodes:
            raise FitError(pod, 0, Diagnosis())
        scoring = fwk.has_score_plugins() or extenders.has_prioritizers
        feasible, diagnosis = self._find_nodes_that_fit(
            fwk, state, pod, all_nodes, snapshot, find_all=extenders.has_filters or scoring
        )
        if feasible:
            passed = await extenders.find_nodes_that_pass(pod, feasible, diagnosis.node_to_status)
            if len(passed) != len(feasible):
                # Extenders have no queueing hints: any cluster event may help (upstream ExtenderName).
                diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
            feasible = passed
        if not feasible:
            raise FitError(pod, len(all_nodes), diagnosis)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, 1 + len(diagnosis.node_to_status), 1)
        scores = np.asarray(self._prioritize(fwk, state, pod, feasible, with_extenders=True), dtype=np.int64)
        extra = await extenders.prioritize(pod, feasible)
        if extra is not None:
            scores = scores + extra
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        return ScheduleResult(self._select_host(feasible, scores), evaluated, len(feasible))

    def _find_nodes_that_fit(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        all_nodes: Sequence[NodeInfo],
        snapshot: Snapshot,
        *,
        find_all: bool = False,
        batching: bool = False,
    ) -> tuple[Sequence[NodeInfo], Diagnosis]:
        """Upstream's findNodesThatFitPod: PreFilter, the nominated node, then Filter over the nodes
        from the round-robin start until enough are feasible, by one of four strategies (cached
        verdicts of identical pods, node columns as arrays, node by node, or no Filter plugin at all).

        ``find_all``: look for the full ``numFeasibleNodesToFind`` even without Score plugins
        (extenders filter or score the result). ``batching``: the cache may answer (schedule_pod
        only; extenders cannot sign pods)."""
        diagnosis = Diagnosis()
        self._batched = None
        self._pre_state = None
        signature: Hashable | None = None
        if batching and self.batch is not None and fwk.signers is not None:
            signature = fwk.sign_pod(pod)
            if signature is None:
                self.batch.unsignable()
        pre_result, status = self._pre_filter(fwk, state, pod, all_nodes, signature)
        if status is not None:
            self._pre_filter_rejected(state, status, all_nodes, diagnosis)
            return [], diagnosis

        nominated_node = self._evaluate_nominated_node(fwk, state, pod, snapshot, diagnosis)
        if nominated_node is not None:
            return [nominated_node], diagnosis

        nodes: Sequence[NodeInfo] = all_nodes
        restricted = pre_result is not None and pre_result.node_names is not None
        if pre_result is not None and pre_result.node_names is not None:
            nodes = [n for name in pre_result.node_names if (n := snapshot.get(name)) is not None]

        num_to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, len(nodes))
        if not fwk.has_score_plugins() and not find_all:
            # Nothing to rank by: upstream stops at the first feasible node.
            num_to_find = 1
        plugins = fwk.filter_plugins_for(state)
        count = len(nodes)
        run = _FilterRun(
            fwk,
            state,
            pod,
            plugins,
            diagnosis,
            start=0 if restricted else self.next_start_node_index % count,
            num_to_find=num_to_find,
            # Nodes where nominated pods of higher or equal priority must be counted take the two
            # passes of RunFilterPluginsWithNominatedPods, one node at a time; every other node the
            # batch path.
            nominated_nodes=fwk.nodes_with_nominated_pods_for(pod) if plugins else set(),
            # The Filter point is timed over all nodes of the cycle, as upstream's
            # findNodesThatPassFilters (RunFilterPlugins runs per node and is not observed per point).
            filter_start=time.perf_counter(),
        )
        columns = None if restricted else snapshot.columns(fwk.node_columns)
        feasible, processed = self._filter(run, nodes, columns, signature, snapshot)
        fwk.observe_point("Filter", "Success", time.perf_counter() - run.filter_start)
        if not restricted:
            self.next_start_node_index = (run.start + processed) % len(all_nodes)
        elif not feasible:
            self._blame_narrowing(state, diagnosis, all_nodes)
        return feasible, diagnosis

    def _pre_filter(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        all_nodes: Sequence[NodeInfo],
        signature: Hashable | None,
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Run PreFilter, or hand the pod what it wrote for the last pod of the same signature when
        every PreFilter and PreScore plugin promises that depends on the signature alone. Cycles that
        time each plugin (record_plugin_metrics) run the plugins, so their metrics stay complete."""
        if (
            signature is None
            or self.batch is None
            or not fwk.pre_state_replayable
            or state.record_plugin_metrics
        ):
            return fwk.run_pre_filter(state, pod, all_nodes)
        pre = self.batch.pre_state(fwk.profile_name, signature)
        if pre is not None and (fwk.guard is None or fwk.guard.check(pod) is None):
            began = time.perf_counter()
            pre.replay_pre_filter(state)
            self.batch.stats.pre_filter_replays += 1
            self._pre_state = pre
            fwk.observe_point("PreFilter", "Success", time.perf_counter() - began)
            return None, None
        before = state.written()
        pre_result, status = fwk.run_pre_filter(state, pod, all_nodes)
        if pre_result is None and status is None:
            self._pre_state = self.batch.keep_pre_filter(fwk.profile_name, signature, before, state)
        return pre_result, status

    def _filter(
        self,
        run: _FilterRun,
        nodes: Sequence[NodeInfo],
        columns: NodeColumns | None,
        signature: Hashable | None,
        snapshot: Snapshot,
    ) -> tuple[Sequence[NodeInfo], int]:
        """The Filter strategy for this attempt; returns the feasible nodes and how many were visited."""
        fwk, plugins, num_to_find, count = run.fwk, run.plugins, run.num_to_find, len(nodes)
        feasible: Sequence[NodeInfo]
        if columns is not None and len(columns) == count:
            # All nodes of the snapshot: filter (and later score) them as arrays.
            if (
                plugins
                and signature is not None
                and self.batch is not None
                # Nominated pods must be counted node by node: no reuse of another pod's verdicts.
                and not run.nominated_nodes
                and all(fwk.batch_filter(plugin) is not None for plugin in plugins)
            ):
                feasible, processed = self._filter_with_batch_cache(run, signature, columns)
            elif plugins:
                feasible, processed = self._filter_columns(run, columns, snapshot, signature)
            else:
                feasible = first_nodes(columns, run.start, num_to_find)
                processed = len(feasible)
        elif not plugins:
            feasible = [nodes[(run.start + i) % count] for i in range(min(num_to_find, count))]
            processed = len(feasible)
        else:
            feasible, processed = self._filter_node_by_node(run, nodes)
        return feasible, processed

    def _pre_filter_rejected(
        self, state: CycleState, status: Status, all_nodes: Sequence[NodeInfo], diagnosis: Diagnosis
    ) -> None:
        """PreFilter ruled the pod out on every node (or failed: raised)."""
        if status.code is Code.Error or status.code not in (
            Code.Unschedulable,
            Code.UnschedulableAndUnresolvable,
            Code.Pending,
        ):
            raise PreFilterError(status)
        diagnosis.pre_filter_msg = status.message()
        for node in all_nodes:
            diagnosis.node_to_status[node.name] = status
        self._note_rejector(diagnosis, status)
        narrowing = state.get(PRE_FILTER_NARROWING_KEY)
        if narrowing and status.plugin in narrowing:
            # The narrowed node sets did not intersect: every narrowing plugin shares the blame.
            diagnosis.unschedulable_plugins.update(narrowing)

    def _filter_with_batch_cache(
        self, run: _FilterRun, signature: Hashable, columns: NodeColumns
    ) -> tuple[Sequence[NodeInfo], int]:
        """Filter as arrays, reusing the verdicts of an identical earlier pod where they still hold."""
        assert self.batch is not None
        fwk = run.fwk
        feasible, processed, failures, self._batched = self.batch.find_feasible(
            fwk.profile_name,
            signature,
            columns,
            run.start,
            run.num_to_find,
            run.state,
            run.pod,
            run.plugins,
            fwk.batch_filter,
        )
        for rejected, rejection in failures:
            if rejection.code is Code.Error:
                fwk.observe_point("Filter", "Error", time.perf_counter() - run.filter_start)
                raise FilterError(rejection, rejected.name)
            run.diagnosis.node_to_status[rejected.name] = rejection
            self._note_rejector(run.diagnosis, rejection)
        return feasible, processed

    def _filter_columns(
        self, run: _FilterRun, columns: NodeColumns, snapshot: Snapshot, signature: Hashable | None = None
    ) -> tuple[Sequence[NodeInfo], int]:
        """Filter all nodes as arrays; nodes with nominated pods to count go node by node, their
        verdicts kept across cycles where nothing they read changed. ``signature``: the pod's, if signed
        already."""
        fwk, state, pod, plugins = run.fwk, run.state, run.pod, run.plugins
        special: list[int] = []
        for name in run.nominated_nodes:
            position = snapshot.index_of(name)
            if position is not None:
                special.append(position)

        with_nominated, many = self._nominated_filter(run, signature, bool(special))
        feasible, processed, failures = find_feasible(
            columns,
            run.start,
            run.num_to_find,
            state,
            pod,
            plugins,
            fwk.batch_filter,
            special,
            with_nominated,
            many,
        )
        noted: Status | None = None
        for rejected, rejection in failures:
            if rejection.code is Code.Error:
                raise FilterError(rejection, rejected.name)
            run.diagnosis.node_to_status[rejected.name] = rejection
            if rejection is not noted:
                # Batch plugins share one status among the nodes they reject alike.
                self._note_rejector(run.diagnosis, rejection)
                noted = rejection
        return feasible, processed

    def _nominated_filter(
        self, run: _FilterRun, signature: Hashable | None, needed: bool
    ) -> tuple[Callable[[NodeInfo], Status | None], Callable[[list[NodeInfo]], list[Status | None]] | None]:
        """The verdict of a node with nominated pods to count (RunFilterPluginsWithNominatedPods), kept
        across cycles for pods of the same signature and priority where that is exact; and, when kept
        verdicts are used, the same for a list of nodes in one call (the Filter loop walks past every
        node with nominations, nearly all kept)."""
        fwk, state, pod, plugins = run.fwk, run.state, run.pod, run.plugins

        def with_nominated(node: NodeInfo) -> Status | None:
            return fwk.run_filters_with_nominated_pods(state, pod, node, plugins, snapshot_node=True)

        if not needed or state.record_plugin_metrics:
            return with_nominated, None
        nominator = fwk.nominator
        if nominator is None:
            return with_nominated, None
        verdicts = self.nominated_verdicts
        key = verdicts.key(signature if signature is not None else fwk.sign_pod(pod), pod)
        if key is None:
            return with_nominated, None
        verdicts.prune(list(run.nominated_nodes))
        nominated_pods_for_node = nominator.nominated_pods_for_node

        def kept_or_judged(node: NodeInfo) -> Status | None:
            nominated = nominated_pods_for_node(node.name)
            status = verdicts.get(key, pod, node, nominated)
            if status is MISSING:
                status = verdicts.put(key, pod, node, nominated, with_nominated(node))
            return status

        def many(nodes: list[NodeInfo]) -> list[Status | None]:
            return verdicts.kept_or_judged(key, pod, nodes, nominated_pods_for_node, with_nominated)

        return kept_or_judged, many

    def _filter_node_by_node(
        self, run: _FilterRun, nodes: Sequence[NodeInfo]
    ) -> tuple[Sequence[NodeInfo], int]:
        """Filter a subset of the nodes (PreFilter narrowed them) one node at a time."""
        fwk, state, pod, plugins = run.fwk, run.state, run.pod, run.plugins
        run_filters = fwk.run_filters
        node_to_status = run.diagnosis.node_to_status
        passing: list[NodeInfo] = []
        processed = 0
        count = len(nodes)
        for i in range(count):
            node = nodes[(run.start + i) % count]
            processed += 1
            if node.name in run.nominated_nodes:
                node_status = fwk.run_filters_with_nominated_pods(
                    state, pod, node, plugins, snapshot_node=True
                )
            else:
                node_status = run_filters(state, pod, node, plugins)
            if node_status is None:
                passing.append(node)
                if len(passing) >= run.num_to_find:
                    break
            elif node_status.code is Code.Error:
                fwk.observe_point("Filter", "Error", time.perf_counter() - run.filter_start)
                raise FilterError(node_status, node.name)
            else:
                node_to_status[node.name] = node_status
                self._note_rejector(run.diagnosis, node_status)
        return passing, processed

    def _evaluate_nominated_node(
        self, fwk: Framework, state: CycleState, pod: PodInfo, snapshot: Snapshot, diagnosis: Diagnosis
    ) -> NodeInfo | None:
        """Upstream's evaluateNominatedNode: a pod nominated by an earlier preemption tries that node
        first, nominated pods counted, and takes it if it fits (no scoring)."""
        nominated = pod_status(pod.pod).get("nominatedNodeName")
        if not nominated:
            return None
        node = snapshot.get(nominated)
        if node is None:
            return None
        status = fwk.run_filters_with_nominated_pods(
            state, pod, node, fwk.filter_plugins_for(state), snapshot_node=True
        )
        if status is None:
            return node
        if status.code is Code.Error:
            # Upstream logs it and goes on to filter every node.
            log.warning("evaluating nominated node %s for %s: %s", node.name, pod.key, status)
            return None
        diagnosis.node_to_status[node.name] = status
        self._note_rejector(diagnosis, status)
        return None

    @staticmethod
    def _blame_narrowing(state: CycleState, diagnosis: Diagnosis, all_nodes: Sequence[NodeInfo]) -> None:
        """Nodes PreFilter left out count as rejected by the plugins that narrowed the set, as upstream's
        absent-nodes status: "node(s) didn't satisfy plugin(s) [NodeAffinity]". Only when nothing fit,
        so the common path stays O(candidates)."""
        plugins = sorted(state.get(PRE_FILTER_NARROWING_KEY) or ())
        if not plugins:
            return
        absent = Status.unschedulable(
            f"node(s) didn't satisfy plugin(s) {go_list(plugins)}", resolvable=False
        ).with_plugin(plugins[0])
        node_to_status = diagnosis.node_to_status
        for node in all_nodes:
            node_to_status.setdefault(node.name, absent)
        diagnosis.unschedulable_plugins.update(plugins)

    @staticmethod
    def _note_rejector(diagnosis: Diagnosis, status: Status) -> None:
        if status.code is Code.Pending:
            diagnosis.pending_plugins.add(status.plugin)
        elif status.plugin:
            diagnosis.unschedulable_plugins.add(status.plugin)

    def _prioritize(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        *,
        with_extenders: bool = False,
        batched: BatchEntry | None = None,
    ) -> list[int] | IntArray:
        if not fwk.has_score_plugins() and not with_extenders:
            return [1] * len(nodes)
        pre = self._pre_state if not with_extenders else None
        replayed = pre is not None and pre.score_data is not None
        if pre is not None and replayed:
            began = time.perf_counter()
            pre.replay_pre_score(state)
            if self.batch is not None:
                self.batch.stats.pre_score_replays += 1
            fwk.observe_point("PreScore", "Success", time.perf_counter() - began)
        else:
            before = state.written() if pre is not None else None
            status = fwk.run_pre_score(state, pod, nodes)
            if status is not None:
                raise PreScoreError(status)
            if pre is not None and before is not None:
                pre.keep_pre_score(before, state)
        # Cycles that time each plugin score afresh, so every Score plugin's duration is observed (the
        # cache keeps its raw scores; rows it does not know yet are filled by a later pod).
        if (
            batched is not None
            and self.batch is not None
            and isinstance(nodes, NodeSubset)
            and not state.record_plugin_metrics
        ):
            if pre is not None and replayed:
                # The Score point as run_score_array times it.
                began = time.perf_counter()
                totals = self.batch.window_scores(batched, nodes, state, pod, fwk, pre)
                if totals is not None:
                    fwk.observe_point("Score", "Success", time.perf_counter() - began)
                    return totals
                # A failure or an out-of-range score: the usual path below reports it.
            raw = self.batch.raw_scores(batched, nodes, state, pod, fwk.plugins.score, fwk.batch_score)
            # The cache keeps only raw scores within 0..100 (MIN_NODE_SCORE..MAX_NODE_SCORE).
            return fwk.run_score_array(state, pod, nodes, raw, raw_in_range=True)
        return fwk.run_score_array(state, pod, nodes)

    def _select_host(self, nodes: Sequence[NodeInfo], scores: Sequence[int] | IntArray) -> str:
        return nodes[self._select_index(scores)].name

    def _select_index(self, scores: Sequence[int] | IntArray) -> int:
        return self._select(scores)[0]

    def _select(self, scores: Sequence[int] | IntArray) -> tuple[int, IntArray]:
        """The index of the best-scoring node, and the indices of every node with that score in
        ascending order; ties broken uniformly at random (upstream samples a reservoir, which picks
        each tied node with the same probability). The decision record's runners-up start with the
        other tied nodes."""
        values = np.asarray(scores)
        # ``nonzero`` on the 1-d mask: flatnonzero's ravel and dispatch cost more than the search.
        ties: IntArray = (values == int_max(values)).nonzero()[0]
        best = int(ties[0]) if len(ties) == 1 else int(ties[self._rng.randrange(len(ties))])
        return best, ties


class SchedulingError(Exception):
    """An internal error of one phase; the pod backs off and is retried."""

    def __init__(self, status: Status, detail: str = "") -> None:
        super().__init__(detail or str(status))
        self.status = status


class PreFilterError(SchedulingError):
    pass


class FilterError(SchedulingError):
    def __init__(self, status: Status, node_name: str) -> None:
        super().__init__(status, f"running Filter plugin {status.plugin!r} on node {node_name!r}: {status}")


class PreScoreError(SchedulingError):
    pass
