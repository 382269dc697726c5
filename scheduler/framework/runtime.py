"""Runs a profile's plugins at each extension point (``pkg/scheduler/framework/runtime/framework.go``).

One Framework per profile. Loop-side points (PreEnqueue .. Permit) are called on the event loop;
binding-side points (PreBind, Bind, PostBind) from binding threads. The framework itself keeps no
mutable state after construction, so both sides may share it.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import time
from collections.abc import Callable, Coroutine, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

import numpy as np

from scheduler.framework.columns import GENERATION_COLUMN, ColumnSpec, IntArray, merge_column_specs
from scheduler.framework.cycle_state import CycleState, scratch_copy
from scheduler.framework.handle import PreemptionExecutorHandle
from scheduler.framework.interface import (
    EXTENSION_POINTS,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    AmountsFilterPlugin,
    AwaitingPostFilterPlugin,
    BatchFilterPlugin,
    BatchScoreExtensions,
    BatchScorePlugin,
    BindPlugin,
    BlockingPostFilterPlugin,
    ColumnarPlugin,
    EnqueueExtensions,
    ExtenderPostFilterPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterCall,
    PostFilterPlugin,
    PreBindPlugin,
    PreBindPreFlightPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    SignPlugin,
    filter_ignores_pods_on_node,
    pre_state_from_signature,
    sign_reads_spec_only,
    sign_splits_spec,
)
from scheduler.framework.masked import ok_mask
from scheduler.framework.podgroup import (
    PlacementFeasiblePlugin,
    PodGroupInfo,
    PodGroupPostFilterPlugin,
    PodGroupSchedulingFunc,
)
from scheduler.framework.resources import has_status_resources
from scheduler.framework.status import Code, Status
from scheduler.framework.trial import AmountsTrial, FilterChecks
from scheduler.framework.types import NodeInfo, NodeScore, PodInfo, PreFilterResult
from scheduler.framework.unsupported import UnsupportedFieldGuard
from scheduling_queue.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueuedPodInfo,
    Resource,
    priority_sort_less,
)

if TYPE_CHECKING:
    from scheduler.framework.extender import Extenders

log = logging.getLogger(__name__)

ALL_EVENTS = ClusterEventWithHint(ClusterEvent(Resource.WildCard, ActionType.All, "WildCardEvent"))

# CycleState key: the PreFilter plugins that narrowed the candidate nodes (a list of names).
PRE_FILTER_NARROWING_KEY = "framework/preFilterNarrowingPlugins"

# CycleState key: when a list is stored here (decision recording is on), run_score_array appends
# (plugin, raw, normalised, weight) per Score plugin: references to what scoring computed anyway (raw
# may be a list), aligned with the scored nodes.
SCORE_BREAKDOWN_KEY = "framework/scoreBreakdown"

# Upstream's maxTimeout for a Permit Wait.
MAX_PERMIT_WAIT = 15 * 60.0
# RunPermitPlugins appends this reason to a Wait status.
PERMIT_WAIT_MSG = "one or more plugins asked to wait and no plugin rejected pod"

# Upstream samples per-plugin timings in 10% of cycles: timing every call costs more than the plugins.
PLUGIN_METRICS_SAMPLE_PERCENT = 10

# Specs whose signature parts sign_pod keeps: a few ReplicaSets interleaved each keep theirs.
_SPEC_PARTS_KEPT = 8

# (extension_point, status_code_name, seconds) and (plugin, extension_point, status, seconds)
PointObserver = Callable[[str, str, float], None]
PluginObserver = Callable[[str, str, str, float], None]


class PodNominator(Protocol):
    """The pods nominated to nodes by preemption, as PodInfos (upstream's PodNominator on the Handle)."""

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]: ...

    def nominated_node_names(self) -> Sequence[str]:
        """The nodes with at least one nominated pod."""
        ...

    # Optional: ``version``, an int (>= 0) that changes with every change to the nominations, lets
    # the framework keep what it derived from all of them (read with getattr); with it,
    # ``changed_since(version) -> Sequence[str]``, the nodes whose nominations changed after that
    # version, lets it read only those again (each pod nominated to one node at most).


def _noop_point(point: str, status: str, seconds: float) -> None:
    return None


def _noop_plugin(plugin: str, point: str, status: str, seconds: float) -> None:
    return None


@dataclass
class PluginSet:
    """The plugin instances enabled at each extension point, in order."""

    pre_enqueue: list[PreEnqueuePlugin] = field(default_factory=list)
    queue_sort: list[QueueSortPlugin] = field(default_factory=list)
    pre_filter: list[PreFilterPlugin] = field(default_factory=list)
    filter: list[FilterPlugin] = field(default_factory=list)
    post_filter: list[PostFilterPlugin] = field(default_factory=list)
    pre_score: list[PreScorePlugin] = field(default_factory=list)
    score: list[ScorePlugin] = field(default_factory=list)
    reserve: list[ReservePlugin] = field(default_factory=list)
    permit: list[PermitPlugin] = field(default_factory=list)
    pre_bind: list[PreBindPlugin] = field(default_factory=list)
    bind: list[BindPlugin] = field(default_factory=list)
    post_bind: list[PostBindPlugin] = field(default_factory=list)


def _status_label(status: Status | None) -> str:
    """Upstream's ``status.Code().String()``: a nil status is Success."""
    return "Success" if status is None else status.code.name


_perf = time.perf_counter
# Orders kept by run_pre_enqueue: one per gating plugin name a queue passes (a pod's gating plugin is
# always one of the profile's; the bound only guards against a caller passing arbitrary names).
_MAX_PRE_ENQUEUE_ORDERS = 64


def _add_seconds(
    timings: dict[tuple[str, str, str], float], key: tuple[str, str, str], seconds: float
) -> None:
    timings[key] = timings.get(key, 0.0) + seconds


class _TimedFilter:
    """A Filter plugin seen through a stopwatch: handed out by ``filter_plugins_for`` in the cycles
    that record plugin metrics, so the Filter loops need no branch of their own for it. Its time
    goes into the cycle's ``plugin_seconds``, observed once per cycle."""

    __slots__ = ("_plugin", "_timings", "batch", "name")

    def __init__(
        self,
        plugin: FilterPlugin,
        batch: BatchFilterPlugin | None,
        timings: dict[tuple[str, str, str], float],
    ) -> None:
        self.name = plugin.name
        self._plugin = plugin
        self._timings = timings
        self.batch = None if batch is None else _TimedBatchFilter(batch, timings)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        start = _perf()
        status = self._plugin.filter(state, pod, node)
        _add_seconds(self._timings, (self.name, "Filter", _status_label(status)), _perf() - start)
        return status


class _TimedBatchFilter:
    """A batch call judges a window of nodes at once: its time counts under the first rejection's
    code, or Success when every node of the window passed."""

    __slots__ = ("_plugin", "_timings", "name")

    def __init__(self, plugin: BatchFilterPlugin, timings: dict[tuple[str, str, str], float]) -> None:
        self.name = plugin.name
        self._plugin = plugin
        self._timings = timings

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        start = _perf()
        statuses = self._plugin.filter_nodes(state, pod, nodes)
        seconds = _perf() - start
        label = "Success"
        if not getattr(statuses, "all_ok", False):
            # Find the first rejection through the mask: iterating would build every failed status.
            failed = np.flatnonzero(~ok_mask(statuses))
            if len(failed):
                first = statuses[int(failed[0])]
                label = first.code.name if first is not None else "Success"
        _add_seconds(self._timings, (self.name, "Filter", label), seconds)
        return statuses


class Framework:
    def __init__(
        self,
        profile_name: str,
        plugins: PluginSet,
        *,
        score_weights: Mapping[str, int],
        percentage_of_nodes_to_score: int | None = None,
        observe_point: PointObserver = _noop_point,
        observe_plugin: PluginObserver = _noop_plugin,
        rng: random.Random | None = None,
        guard: UnsupportedFieldGuard | None = None,
        plugin_metrics_sample_percent: int = PLUGIN_METRICS_SAMPLE_PERCENT,
    ) -> None:
        self.profile_name = profile_name
        # Refuses pods using fields no plugin of this build implements (see framework/unsupported.py).
        self.guard = guard
        self.plugins = plugins
        self.score_weights = dict(score_weights)
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self._observe_point = observe_point
        self._observe_plugin = observe_plugin
        self._rng = rng or random.Random()
        self._sample_percent = plugin_metrics_sample_percent
        self._batch_filters: dict[str, BatchFilterPlugin] = {
            p.name: p for p in plugins.filter if isinstance(p, BatchFilterPlugin)
        }
        self._batch_scores: dict[str, BatchScorePlugin] = {
            p.name: p for p in plugins.score if isinstance(p, BatchScorePlugin)
        }
        self._normalizers: dict[str, ScoreExtensions] = {
            p.name: p for p in plugins.score if isinstance(p, ScoreExtensions)
        }
        self._array_normalizers: dict[str, BatchScoreExtensions] = {
            p.name: p for p in plugins.score if isinstance(p, BatchScoreExtensions)
        }
        # (owner, specs) per plugin that declares node columns, and their merge: what the snapshot must
        # keep for this profile. Two plugins declaring one name differently fail here, at startup.
        self.column_declarations: tuple[tuple[str, tuple[ColumnSpec, ...]], ...] = tuple(
            (f"plugin {p.name} of profile {profile_name}", tuple(p.node_columns()))
            for p in self.all_plugins()
            if isinstance(p, ColumnarPlugin)
        )
        # Opportunistic batching: every plugin that decides where a pod goes must sign pods (upstream's
        # computeBatchablePlugins); otherwise the profile never batches. Extenders are checked by the
        # algorithm, which only batches on the extender-free path.
        deciding = {
            p.name: p for p in (*plugins.pre_filter, *plugins.filter, *plugins.pre_score, *plugins.score)
        }
        self.signers: tuple[SignPlugin, ...] | None = (
            tuple(p for p in deciding.values() if isinstance(p, SignPlugin))
            if all(isinstance(p, SignPlugin) for p in deciding.values())
            else None
        )
        # A pod whose signature was seen before may take the PreFilter and PreScore state of the last
        # pod of that signature instead of running those points (scheduler.cycle.batching.PreState).
        self.pre_state_replayable: bool = self.signers is not None and all(
            pre_state_from_signature(p) for p in (*plugins.pre_filter, *plugins.pre_score)
        )
        # Signers that read only the spec, whose parts are kept per spec (sign_pod), and the rest; of
        # the rest, those whose first step reads only the spec (``sign_splits_spec``), which is kept
        # per spec too: (position of its first step in the kept parts, or -1; plugin).
        self._spec_signers = tuple(p for p in self.signers or () if sign_reads_spec_only(p))
        self._other_signers = tuple(p for p in self.signers or () if not sign_reads_spec_only(p))
        # Typed Any: sign_spec and sign_with are promised by sign_splits_spec, not by SignPlugin.
        self._split_signers: tuple[Any, ...] = tuple(p for p in self._other_signers if sign_splits_spec(p))
        self._other_steps: tuple[tuple[int, Any], ...] = tuple(
            (
                len(self._spec_signers) + self._split_signers.index(p) if p in self._split_signers else -1,
                p,
            )
            for p in self._other_signers
        )
        # (a copy of a spec, the spec signers' parts for it), most recent last: identical pods share a
        # spec, so their parts are one dict comparison away.
        self._spec_parts: list[tuple[Mapping[str, Any], tuple[Hashable, ...]]] = []
        declarations = self.column_declarations
        if self.signers is not None:
            declarations = (*declarations, ("the batching cache", (GENERATION_COLUMN,)))
        self.node_columns: tuple[ColumnSpec, ...] = merge_column_specs(declarations)
        # PreFilter plugins that keep their state right under AddPod/RemovePod (what-if runs).
        self._pre_filter_extensions: list[tuple[str, PreFilterExtensions]] = [
            (p.name, p) for p in plugins.pre_filter if isinstance(p, PreFilterExtensions)
        ]
        # Which optional PostFilter protocols each plugin speaks, by id: a runtime-checkable Protocol's
        # isinstance walks its members, and PostFilter runs for every unschedulable attempt.
        self._post_filter_kinds: dict[int, tuple[bool, bool, bool]] = {}
        self._pre_filter_extension_names = frozenset(name for name, _ in self._pre_filter_extensions)
        # Set by the scheduler that runs this framework; None (tests, simulate) means no nominations,
        # and no executor means preemption decides but does not act.
        self.nominator: PodNominator | None = None
        self.preemption_executor: PreemptionExecutorHandle | None = None
        # gating plugin ("" for none) -> the PreEnqueue plugins in the order run_pre_enqueue runs them.
        self._pre_enqueue_orders: dict[str, tuple[PreEnqueuePlugin, ...]] = {}
        # node name -> (the snapshot's NodeInfo, its generation, the nominated pods added, the copy with
        # them added): see run_filters_with_nominated_pods.
        self._nominated_nodes: dict[str, tuple[NodeInfo, int, tuple[PodInfo, ...], NodeInfo]] = {}
        # nodes_with_nominated_pods_for's last answer for a priority, while the nominations stay (the
        # nominator's version): (version, priority, nodes, pod -> the node where it alone counts).
        self._counted_nominations: tuple[int, int, frozenset[str], dict[str, str]] | None = None
        # The same per node (the one pod counted there, None for several) and the nominator read.
        self._counted_per_node: dict[str, str | None] = {}
        self._counted_from: PodNominator | None = None
        # A cycle's Filter plugins (filter_plugins_for) -> the same as an AmountsTrial checks them, or
        # None when some plugin reads the pods on the node otherwise (see amounts_trial). A
        # runtime-checkable Protocol's isinstance is slow, and a dry run asks once per node.
        self._amounts_checks: dict[tuple[FilterPlugin, ...], FilterChecks | None] = {}
        # The Filter plugins left by each set of PreFilter skips seen: pods of one kind skip alike, so
        # a cycle takes the list (shared, never changed) instead of building it.
        self._unskipped_by_skip: dict[frozenset[str], list[FilterPlugin]] = {}

    # --- queue side ---------------------------------------------------------------------------
    def queue_sort_less(self) -> Callable[[QueuedPodInfo, QueuedPodInfo], bool]:
        if not self.plugins.queue_sort:
            return priority_sort_less
        return self.plugins.queue_sort[0].less

    def run_pre_enqueue(self, pod: PodInfo, gating_plugin: str = "") -> Status | None:
        """Upstream's runPreEnqueuePluginsForPod: the plugin that gated the pod last time
        (``gating_plugin``) runs first and, while it still gates, alone; then the others in order,
        stopping at the first that gates. Plugin timings are sampled per call (there is no cycle).

        The extension point's duration is observed with status Success whatever the plugins answer,
        as v1.37.2's is (the deferred observation there reads a status variable the plugin runs
        shadow, so it is always nil: pkg/scheduler/backend/queue/scheduling_queue.go)."""
        # Runs for every held pod on every event its gate registered (a preemptor's, on each victim's
        # deletion), so the plugins are timed only in a sampled call, and the order for each gating
        # plugin is kept rather than rebuilt.
        start = _perf()
        plugins = self._pre_enqueue_orders.get(gating_plugin)
        if plugins is None:
            plugins = self._pre_enqueue_order(gating_plugin)
        record = self.should_sample_plugin_metrics()
        result: Status | None = None
        for plugin in plugins:
            began = _perf() if record else 0.0
            status = plugin.pre_enqueue(pod)
            if record:
                self._observe_plugin(plugin.name, "PreEnqueue", _status_label(status), _perf() - began)
            if status is not None and status.code is not Code.Success:
                result = status.with_plugin(plugin.name)
                break
        self._observe_point("PreEnqueue", "Success", _perf() - start)
        return result

    def _pre_enqueue_order(self, gating_plugin: str) -> tuple[PreEnqueuePlugin, ...]:
        """The PreEnqueue plugins with ``gating_plugin`` first (the configured order when it is not
        one of them), kept for the next pod it gates."""
        plugins: Sequence[PreEnqueuePlugin] = self.plugins.pre_enqueue
        first = [plugin for plugin in plugins if plugin.name == gating_plugin]
        order = (*first, *(plugin for plugin in plugins if plugin.name != gating_plugin))
        if len(self._pre_enqueue_orders) < _MAX_PRE_ENQUEUE_ORDERS:
            self._pre_enqueue_orders[gating_plugin] = order
        return order

    def all_plugins(self) -> Iterable[Plugin]:
        seen: set[int] = set()
        for point in vars(self.plugins).values():
            for plugin in point:
                if id(plugin) not in seen:
                    seen.add(id(plugin))
                    yield plugin

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Each plugin's cluster-event registrations.

        A plugin without EnqueueExtensions hears every event, as upstream's fillEventToPluginMap does:
        a pod it rejected must not wait for the 5-minute flush.
        """
        out: dict[str, list[ClusterEventWithHint]] = {}
        for plugin in self.all_plugins():
            if isinstance(plugin, EnqueueExtensions):
                out[plugin.name] = list(plugin.events_to_register())
            else:
                out[plugin.name] = [ALL_EVENTS]
        return out

    def should_sample_plugin_metrics(self) -> bool:
        """Upstream's ``rand.Intn(100) < pluginMetricsSamplePercent``, once per scheduling cycle."""
        return self._rng.randrange(100) < self._sample_percent

    def new_cycle_state(self) -> CycleState:
        """A CycleState for one scheduling cycle, with this cycle's plugin-metrics sampling decision."""
        return CycleState(record_plugin_metrics=self._rng.randrange(100) < self._sample_percent)

    def flush_plugin_metrics(self, state: CycleState) -> None:
        """Observe the per-node plugin time the cycle summed (Filter, Score, AddPod/RemovePod): one
        observation per (plugin, point, status) per sampled cycle. See docs/metrics.md."""
        timings = state.plugin_seconds
        if timings:
            for (plugin, point, status), seconds in timings.items():
                self._observe_plugin(plugin, point, status, seconds)
            timings.clear()

    def observe_point(self, point: str, status: str, seconds: float) -> None:
        """For the points the framework does not run as one call (Filter is timed by the algorithm,
        across all nodes of the cycle, as upstream's findNodesThatPassFilters)."""
        self._observe_point(point, status, seconds)

    # --- scheduling cycle ---------------------------------------------------------------------
    def sign_pod(self, pod: PodInfo) -> Hashable | None:
        """The pod's scheduling signature (upstream's SignPod), or None: cannot batch this pod."""
        if self.signers is None:
            return None
        spec_parts = self._parts_of_spec(pod)
        if spec_parts is None:
            return None
        parts: list[Hashable] = [pod.scheduler_name, spec_parts]
        for position, plugin in self._other_steps:
            part = plugin.sign(pod) if position < 0 else plugin.sign_with(pod, spec_parts[position])
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)

    def _parts_of_spec(self, pod: PodInfo) -> tuple[Hashable, ...] | None:
        """The parts of the signers that read only the spec, then the first steps of the split
        signers: kept for the last few specs seen, unless the pod's status reports resources (its
        requests then read the status too)."""
        spec = pod.spec
        known = self._spec_parts
        reusable = not has_status_resources(pod.pod)
        if reusable:
            for index in range(len(known) - 1, -1, -1):
                if known[index][0] == spec:
                    return known[index][1]
        parts: list[Hashable] = []
        for plugin in self._spec_signers:
            part = plugin.sign(pod)
            if part is None:
                return None
            parts.append(part)
        for plugin in self._split_signers:
            part = plugin.sign_spec(pod)
            if part is None:
                return None
            parts.append(part)
        frozen = tuple(parts)
        if reusable:
            # A deep copy: a caller may change the pod it scheduled (the kept spec must not follow).
            known.append((copy.deepcopy(spec), frozen))
            if len(known) > _SPEC_PARTS_KEPT:
                del known[0]
        return frozen

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        start = _perf()
        result: PreFilterResult | None = None
        status: Status | None = None
        narrowing: list[str] = []
        if self.guard is not None:
            status = self.guard.check(pod)
            if status is not None:
                self._observe_point("PreFilter", _status_label(status), _perf() - start)
                return None, status
        record = state.record_plugin_metrics
        for plugin in self.plugins.pre_filter:
            began = _perf()
            plugin_result, plugin_status = plugin.pre_filter(state, pod, nodes)
            if record:
                self._observe_plugin(plugin.name, "PreFilter", _status_label(plugin_status), _perf() - began)
            if plugin_status is not None and plugin_status.code is not Code.Success:
                if plugin_status.code is Code.Skip:
                    state.skip_filter_plugins.add(plugin.name)
                    continue
                status = plugin_status.with_plugin(plugin.name)
                break
            if plugin_result is not None and plugin_result.node_names is not None:
                if not narrowing:
                    # The cycle blames them for the nodes they left out (upstream's pluginsWithNodes).
                    state.write(PRE_FILTER_NARROWING_KEY, narrowing)
                narrowing.append(plugin.name)
                result = plugin_result if result is None else result.merge(plugin_result)
                if not result.node_names:
                    names = sorted(narrowing)
                    message = (
                        f"node(s) didn't satisfy plugin {names[0]}"
                        if len(names) == 1
                        else f"node(s) didn't satisfy plugin(s) {go_list(names)} simultaneously"
                    )
                    status = Status.unschedulable(message, resolvable=False).with_plugin(plugin.name)
                    break
        self._observe_point("PreFilter", _status_label(status), _perf() - start)
        return result, status

    def filter_plugins_for(self, state: CycleState, *, timed: bool = True) -> list[FilterPlugin]:
        """The Filter plugins of this cycle. In a cycle that records plugin metrics they come wrapped
        in stopwatches (``timed=False`` for re-runs that are not part of the cycle, e.g. explain)."""
        skip = state.skip_filter_plugins
        if timed and state.record_plugin_metrics:
            timings = state.plugin_seconds
            return [_TimedFilter(p, self._batch_filters.get(p.name), timings) for p in self._unskipped(skip)]
        # Kept on the state (its copies share it): a preemption dry run asks once per Filter run.
        memo = state._filter_plugins
        if memo is not None and memo[0] is self and memo[1] == skip:
            return memo[2]  # type: ignore[no-any-return]
        frozen = frozenset(skip)
        plugins = self._unskipped_by_skip.get(frozen)
        if plugins is None:
            if len(self._unskipped_by_skip) >= _UNSKIPPED_KEPT:
                self._unskipped_by_skip.clear()
            plugins = self._unskipped_by_skip[frozen] = self._unskipped(skip)
        state._filter_plugins = (self, frozen, plugins)
        return plugins

    def _unskipped(self, skip: set[str]) -> list[FilterPlugin]:
        return [p for p in self.plugins.filter if p.name not in skip] if skip else self.plugins.filter

    def run_filters(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, plugins: Sequence[FilterPlugin]
    ) -> Status | None:
        """The first non-success status among ``plugins`` for one node (upstream stops there too)."""
        for plugin in plugins:
            status = plugin.filter(state, pod, node)
            if status is not None and status.code is not Code.Success:
                return status.with_plugin(plugin.name)
        return None

    # --- what-if runs: nominated pods and preemption (framework.go) ------------------------------
    def pre_filter_extensions_active(self, state: CycleState) -> bool:
        """Whether a PreFilter extension runs for this cycle's pod (one its PreFilter did not skip)."""
        return not self._pre_filter_extension_names <= state.skip_filter_plugins

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        """Upstream's RunPreFilterExtensionAddPod: plugins skipped at PreFilter are skipped here too."""
        return self._run_pre_filter_extension(state, pod, to_add, node, remove=False)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        """Upstream's RunPreFilterExtensionRemovePod."""
        return self._run_pre_filter_extension(state, pod, to_remove, node, remove=True)

    def _run_pre_filter_extension(
        self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo, *, remove: bool
    ) -> Status | None:
        verb = "RemovePod" if remove else "AddPod"
        point = "PreFilterExtension" + verb
        skip = state.skip_filter_plugins
        for name, plugin in self._pre_filter_extensions:
            if name in skip:
                continue
            began = _perf()
            if remove:
                status = plugin.remove_pod(state, pod, other, node)
            else:
                status = plugin.add_pod(state, pod, other, node)
            if state.record_plugin_metrics:
                _add_seconds(state.plugin_seconds, (name, point, _status_label(status)), _perf() - began)
            if status is not None and status.code is not Code.Success:
                return Status.as_error(
                    f"running {verb} on PreFilter plugin {name!r}: {status.message()}"
                ).with_plugin(name)
        return None

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return () if self.nominator is None else self.nominator.nominated_pods_for_node(node_name)

    def amounts_trial(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> AmountsTrial | None:
        """A preemption dry run's what-if on ``node`` (which it leaves alone) by arithmetic, when that
        gives exactly what Filter runs on a copy would (``scheduler.framework.trial``); else None.

        None when a PreFilter extension is active for the pod (its state follows the pods), when a
        Filter plugin of the cycle neither ignores the pods on the node nor sees them only as amounts,
        and when a nominated pod to count is already on the node (adding it there would not add one
        pod). In a cycle that records per-plugin metrics the trial adds to them the series the runs on
        a copy would."""
        if self.pre_filter_extensions_active(state):
            return None
        checks = self._filter_checks(state)
        if checks is None:
            return None
        counted: tuple[PodInfo, ...] = ()
        nominated = self.nominated_pods_for_node(node.name)
        if nominated:
            counted = tuple(other for other in nominated if _counts_for(other, pod))
            keys = {other.key for other in counted}
            if len(keys) != len(counted) or not keys.isdisjoint(node.pods):
                return None
        timings = state.plugin_seconds if state.record_plugin_metrics else None
        return AmountsTrial(state, pod, node, checks, counted, timings)

    def _filter_checks(self, state: CycleState) -> FilterChecks | None:
        plugins = tuple(self.filter_plugins_for(state, timed=False))
        try:
            return self._amounts_checks[plugins]
        except KeyError:
            pass
        checks: list[tuple[FilterPlugin, AmountsFilterPlugin | None]] = []
        result: FilterChecks | None = None
        for plugin in plugins:
            if isinstance(plugin, AmountsFilterPlugin):
                checks.append((plugin, plugin))
            elif filter_ignores_pods_on_node(plugin):
                checks.append((plugin, None))
            else:
                break
        else:
            result = tuple(checks)
        self._amounts_checks[plugins] = result
        return result

    def nodes_with_nominated_pods_for(self, pod: PodInfo) -> AbstractSet[str]:
        """The nodes where a nominated pod of higher or equal priority (not ``pod``) changes Filter:
        only these need ``run_filters_with_nominated_pods``; every other node filters as usual."""
        nominator = self.nominator
        if nominator is None:
            return set()
        version: int = getattr(nominator, "version", -1)
        counted = self._counted_nominations
        if counted is None or version < 0 or counted[0] != version or counted[1] != pod.priority:
            names = nominator.nominated_node_names()
            kept = self._nominated_nodes
            if len(kept) > len(names):
                # Nodes whose nominations are gone: their kept copies would only hold memory.
                current = set(names)
                for name in [name for name in kept if name not in current]:
                    del kept[name]
            # Each preemption changes one node's nominations, and every cycle of a preemptor asks anew:
            # from a nominator that says which nodes changed since a version, only those are read
            # again (the answer for the same priority and nominator is otherwise the last one's).
            changed: Sequence[str] | None = None
            changed_since = getattr(nominator, "changed_since", None)
            if (
                counted is not None
                and version >= 0
                and counted[1] == pod.priority
                and self._counted_from is nominator
                and changed_since is not None
            ):
                changed = changed_since(counted[0])
            per_node = self._counted_per_node if changed is not None else {}
            priority = pod.priority
            # Per node, the nominated pods of this priority or higher; the pod never counts against
            # itself, so a node where it is the only one is left out for it alone.
            for name in names if changed is None else changed:
                per_node.pop(name, None)
                idents = [
                    other.uid or other.key
                    for other in nominator.nominated_pods_for_node(name)
                    if other.priority >= priority
                ]
                if idents:
                    per_node[name] = idents[0] if len(set(idents)) == 1 else None
            # A pod is nominated to one node at most (the Nominator's rule): which node holds it
            # alone does not depend on the order the nodes were read in.
            alone = {ident: name for name, ident in per_node.items() if ident is not None}
            counted = (version, priority, frozenset(per_node), alone)
            if version >= 0:
                self._counted_nominations = counted
                self._counted_per_node = per_node
                self._counted_from = nominator
        only_there = counted[3].get(pod.uid or pod.key)
        return counted[2] - {only_there} if only_there is not None else counted[2]

    def run_filters_with_nominated_pods(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        plugins: Sequence[FilterPlugin] | None = None,
        *,
        snapshot_node: bool = False,
    ) -> Status | None:
        """Upstream's RunFilterPluginsWithNominatedPods: Filter with the higher-or-equal-priority pods
        nominated to ``node`` added (so two preemptors never claim the same freed room), then, if any
        were added and that passed, Filter again without them (pod affinity must not be satisfied by
        pods that are not running yet).

        ``snapshot_node``: ``node`` is the snapshot's, which nobody changes without giving it a new
        generation (the Filter loop's nodes; a preemption dry run's copies are not). Then the node with
        the nominated pods added is kept for the next cycles while that node and those pods stay."""
        if plugins is None:
            plugins = self.filter_plugins_for(state)
        added, state_with, node_with = self._add_ge_nominated_pods(state, pod, node, snapshot_node)
        if isinstance(added, Status):
            return added
        status = self.run_filters(state_with, pod, node_with, plugins)
        if status is not None or not added:
            return status
        return self.run_filters(state, pod, node, plugins)

    def _add_ge_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, snapshot_node: bool = False
    ) -> tuple[bool | Status, CycleState, NodeInfo]:
        nominated = self.nominated_pods_for_node(node.name)
        if not nominated:
            return False, state, node
        counted = tuple(other for other in nominated if _counts_for(other, pod))
        if not counted:
            return False, state, node
        # Lives for this Filter run only, while ``state`` stays as it is: a lazy copy does.
        state_out = scratch_copy(state)
        if snapshot_node and not self.pre_filter_extensions_active(state):
            # Only the node changes (no PreFilter extension of this pod keeps state on the pods), and
            # the same node with the same pods added is the same NodeInfo: build it once. Filter
            # plugins only read the node they judge.
            kept = self._nominated_nodes.get(node.name)
            if kept is not None and kept[0] is node and kept[1] == node.generation and kept[2] == counted:
                return True, state_out, kept[3]
            node_out = node.clone()
            for other in counted:
                node_out.add_pod(other)
            self._nominated_nodes[node.name] = (node, node.generation, counted, node_out)
            return True, state_out, node_out
        node_out = node.clone()
        for other in counted:
            node_out.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(state_out, pod, other, node_out)
            if status is not None:
                return status, state, node
        return True, state_out, node_out

    def batch_filter(self, plugin: FilterPlugin) -> BatchFilterPlugin | None:
        if isinstance(plugin, _TimedFilter):
            return plugin.batch
        return self._batch_filters.get(plugin.name)

    def batch_score(self, name: str) -> BatchScorePlugin | None:
        return self._batch_scores.get(name)

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None] | PausedPostFilter:
        """Upstream's RunPostFilterPlugins, synchronously as far as it goes: the result, or, when a
        ``BlockingPostFilterPlugin`` handed over a blocking call, the paused run. The cycle then awaits
        ``resume_post_filter``, which runs the call in a worker thread and the plugins after it."""
        run = PausedPostFilter(state, pod, node_statuses, None, _perf())
        return self._advance_post_filter(run)

    async def resume_post_filter(self, run: PausedPostFilter) -> tuple[str | None, Status | None]:
        """Finish a paused PostFilter run on the loop, awaiting each blocking call (in the loop's
        default executor) and each extender consultation."""
        loop = asyncio.get_running_loop()
        while True:
            assert run.pending is not None, "resume_post_filter needs a paused run"
            plugin, began, call, awaitable = run.pending
            run.pending = None
            if call is not None:
                try:
                    answer = await loop.run_in_executor(None, call)
                except Exception as err:  # the call's own errors should already be a Status
                    log.exception("PostFilter plugin %s: blocking call failed", plugin.name)
                    answer = (None, Status.as_error(err))
            else:
                assert awaitable is not None
                answer = await awaitable
            done = self._fold_post_filter(run, plugin, answer, began)
            if done is not None:
                return self._end_post_filter(run, done)
            outcome = self._advance_post_filter(run)
            if not isinstance(outcome, PausedPostFilter):
                return outcome

    async def run_post_filter_with_extenders(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status], extenders: Extenders
    ) -> tuple[str | None, Status | None]:
        """``run_post_filter`` when extenders are configured: plugins that consult them (their
        ``post_filter_with_extenders``) are awaited on the loop, the others run as usual."""
        run = PausedPostFilter(state, pod, node_statuses, extenders, _perf())
        outcome = self._advance_post_filter(run)
        if isinstance(outcome, PausedPostFilter):
            return await self.resume_post_filter(outcome)
        return outcome

    def _advance_post_filter(
        self, run: PausedPostFilter
    ) -> tuple[str | None, Status | None] | PausedPostFilter:
        """Run the plugins from ``run.index`` until the result is decided or one must be awaited."""
        plugins = self.plugins.post_filter
        while run.index < len(plugins):
            plugin = plugins[run.index]
            run.index += 1
            began = _perf()
            answer: tuple[str | None, Status | None]
            extender, awaiting, blocking = self._post_filter_kind(plugin)
            if run.extenders is not None and extender:
                run.pending = (
                    plugin,
                    began,
                    None,
                    cast(ExtenderPostFilterPlugin, plugin).post_filter_with_extenders(
                        run.state, run.pod, run.node_statuses, run.extenders
                    ),
                )
                return run
            if awaiting:
                awaited = cast(AwaitingPostFilterPlugin, plugin).post_filter_awaitable(
                    run.state, run.pod, run.node_statuses
                )
                if not isinstance(awaited, tuple):
                    run.pending = (plugin, began, None, awaited)
                    return run
                answer = awaited
            elif blocking:
                outcome = cast(BlockingPostFilterPlugin, plugin).post_filter_call(
                    run.state, run.pod, run.node_statuses
                )
                if not isinstance(outcome, tuple):
                    run.pending = (plugin, began, outcome, None)
                    return run
                answer = outcome
            else:
                answer = plugin.post_filter(run.state, run.pod, run.node_statuses)
            done = self._fold_post_filter(run, plugin, answer, began)
            if done is not None:
                return self._end_post_filter(run, done)
        return self._end_post_filter(run, run.fold.result())

    def _post_filter_kind(self, plugin: PostFilterPlugin) -> tuple[bool, bool, bool]:
        """(extender-aware, awaiting, blocking): the optional protocols ``plugin`` implements."""
        kind = self._post_filter_kinds.get(id(plugin))
        if kind is None:
            kind = self._post_filter_kinds[id(plugin)] = (
                isinstance(plugin, ExtenderPostFilterPlugin),
                isinstance(plugin, AwaitingPostFilterPlugin),
                isinstance(plugin, BlockingPostFilterPlugin),
            )
        return kind

    def _fold_post_filter(
        self,
        run: PausedPostFilter,
        plugin: PostFilterPlugin,
        answer: tuple[str | None, Status | None],
        began: float,
    ) -> tuple[str | None, Status | None] | None:
        nominated, status = answer
        if run.state.record_plugin_metrics:
            self._observe_plugin(plugin.name, "PostFilter", _status_label(status), _perf() - began)
        return run.fold.add(plugin.name, nominated, status)

    def _end_post_filter(
        self, run: PausedPostFilter, result: tuple[str | None, Status | None]
    ) -> tuple[str | None, Status | None]:
        self._observe_point("PostFilter", _status_label(result[1]), _perf() - run.start)
        return result

    # --- pod group cycle (GenericWorkload) -----------------------------------------------------
    @property
    def placement_feasible_plugins(self) -> list[PlacementFeasiblePlugin]:
        """Upstream asks the GangScheduling plugin, wherever the profile enables it."""
        return [p for p in self.all_plugins() if isinstance(p, PlacementFeasiblePlugin)]

    def run_placement_feasible(
        self, state: CycleState, pod_group: Mapping[str, Any], scheduled: int, remaining: int
    ) -> Status | None:
        """Upstream's RunPlacementFeasiblePlugins: Success when every plugin succeeds; the first
        Unschedulable ends it; else Wait if one waited; any other code is an error."""
        start = _perf()
        result: Status | None = None
        for plugin in self.placement_feasible_plugins:
            began = _perf()
            status = plugin.placement_feasible(state, pod_group, scheduled, remaining)
            if state.record_plugin_metrics:
                self._observe_plugin(plugin.name, "PlacementFeasible", _status_label(status), _perf() - began)
            if status is None or status.code is Code.Success:
                continue
            if status.code is Code.Wait:
                result = status.with_plugin(plugin.name)
                continue
            if status.code is Code.Unschedulable:
                result = status.with_plugin(plugin.name)
                break
            text = (
                f"running PlacementFeasible plugin: {status.message()}"
                if status.code is Code.Error
                else f"unexpected status from PlacementFeasible plugin: {status.code.name}"
            )
            result = Status.as_error(text).with_plugin(plugin.name)
            break
        self._observe_point("PlacementFeasible", _status_label(result), _perf() - start)
        return result

    def run_pod_group_post_filter(
        self, state: CycleState, group: PodGroupInfo, schedule: PodGroupSchedulingFunc
    ) -> tuple[Mapping[str, str] | None, Status]:
        """Upstream's RunPodGroupPostFilterPlugins over the profile's PostFilter plugins that have a
        pod group part (py-scheduler has no separate ``podGroupPostFilter`` plugin set): the first
        success or UnschedulableAndUnresolvable ends it; Unschedulable reasons add up; any other code is
        an error naming the plugin."""
        start = _perf()
        reasons: list[str] = []
        rejector = ""
        result: tuple[Mapping[str, str] | None, Status] | None = None
        for plugin in self.plugins.post_filter:
            if not isinstance(plugin, PodGroupPostFilterPlugin):
                continue
            began = _perf()
            nominations, status = plugin.pod_group_post_filter(state, group, schedule)
            if state.record_plugin_metrics:
                self._observe_plugin(
                    plugin.name, "PodGroupPostFilter", _status_label(status), _perf() - began
                )
            if status is None or status.code is Code.Success:
                result = nominations, status or Status()
                break
            if status.code is Code.UnschedulableAndUnresolvable:
                result = nominations, status.with_plugin(plugin.name)
                break
            if status.code is Code.Unschedulable:
                reasons.extend(status.reasons)
                rejector = rejector or plugin.name
                continue
            error = Status.as_error(
                f'error in "{plugin.name}" PodGroupPostFilter plugins: {status.message()}'
            )
            result = None, error.with_plugin(plugin.name)
            break
        if result is None:
            result = None, Status(Code.Unschedulable, reasons, plugin=rejector)
        self._observe_point("PodGroupPostFilter", _status_label(result[1]), _perf() - start)
        return result

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        start = _perf()
        record = state.record_plugin_metrics
        result: Status | None = None
        for plugin in self.plugins.pre_score:
            began = _perf()
            status = plugin.pre_score(state, pod, nodes)
            if record:
                self._observe_plugin(plugin.name, "PreScore", _status_label(status), _perf() - began)
            if status is not None and status.code is not Code.Success:
                if status.code is Code.Skip:
                    state.skip_score_plugins.add(plugin.name)
                    continue
                result = status.with_plugin(plugin.name)
                break
        self._observe_point("PreScore", _status_label(result), _perf() - start)
        return result

    def run_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """Weighted, normalised total score per node, aligned with ``nodes``. Raises on plugin error."""
        totals: list[int] = self.run_score_array(state, pod, nodes).tolist()
        return totals

    def run_score_array(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        raw_scores: Mapping[str, IntArray] | None = None,
        *,
        raw_in_range: bool = False,
    ) -> IntArray:
        """``run_score`` as an int64 array: batch plugins and normalizers stay vectorised throughout.

        The Score point covers scoring, normalising and weighting, as upstream's RunScorePlugins.
        ``raw_scores``: plugins' raw (un-normalised) scores aligned with ``nodes``, already known (the
        batching cache); each array is the caller's to give away, normalizers may rewrite it.
        ``raw_in_range``: the caller checked those are within [MIN_NODE_SCORE, MAX_NODE_SCORE], so a
        plugin without NormalizeScore needs no second check."""
        start = _perf()
        try:
            totals = self._score_array(state, pod, nodes, raw_scores, raw_in_range)
        except PluginError as err:
            self._observe_point("Score", _status_label(err.status), _perf() - start)
            raise
        self._observe_point("Score", "Success", _perf() - start)
        return totals

    def _score_array(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        raw_scores: Mapping[str, IntArray] | None,
        raw_in_range: bool = False,
    ) -> IntArray:
        record = state.record_plugin_metrics
        observe = self._observe_plugin
        totals: IntArray = np.zeros(len(nodes), dtype=np.int64)
        skip = state.skip_score_plugins
        breakdown: list[tuple[str, Sequence[int] | IntArray, IntArray, int]] | None = state.get(
            SCORE_BREAKDOWN_KEY
        )
        for plugin in self.plugins.score:
            if plugin.name in skip:
                continue
            batch = self._batch_scores.get(plugin.name)
            raw: Sequence[int] | IntArray
            known = raw_scores.get(plugin.name) if raw_scores is not None else None
            if known is not None:
                raw = known
            elif batch is not None:
                # One observation per batch call over all the scored nodes (docs/metrics.md).
                began = _perf()
                raw = batch.score_nodes(state, pod, nodes)
                if record:
                    observe(plugin.name, "Score", "Success", _perf() - began)
            else:
                raw = _score_node_by_node(plugin, state, pod, nodes)
            # For the breakdown: a reference, not a copy (array normalizers return a new array; the
            # list path normalises NodeScore objects and leaves ``raw`` alone).
            given = raw
            checked = raw_in_range and known is not None
            if plugin.name in self._normalizers:
                raw = self._normalize(plugin.name, state, pod, nodes, raw)
                checked = False
            weight = self.score_weights.get(plugin.name, 1)
            values_array = _checked_array(plugin.name, nodes, raw)
            if not checked and len(values_array) and _out_of_range(values_array):
                bad = (values_array < MIN_NODE_SCORE) | (values_array > MAX_NODE_SCORE)
                index = int(np.flatnonzero(bad)[0])
                raise _invalid_score(plugin.name, int(values_array[index]), nodes[index].name)
            if weight == 1:
                totals += values_array
            else:
                totals += values_array * weight
            if breakdown is not None:
                breakdown.append((plugin.name, given, values_array, weight))
        return totals

    def score_plan(self, skip: AbstractSet[str]) -> tuple[ScoreStep, ...] | None:
        """The Score plugins a cycle that skips ``skip`` runs, in order, each with its weight and its
        array normalizer (None: no NormalizeScore). None when some plugin normalises only through
        NodeScore lists: those read node names, so the batching cache's memo of normalised windows
        (``scheduler.cycle.batching``) does not apply."""
        steps: list[ScoreStep] = []
        for plugin in self.plugins.score:
            name = plugin.name
            if name in skip:
                continue
            normalizer = self._array_normalizers.get(name)
            if normalizer is None and name in self._normalizers:
                return None
            steps.append(ScoreStep(plugin, self.score_weights.get(name, 1), normalizer))
        return tuple(steps)

    def normalize_array(
        self, name: str, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], raw: IntArray
    ) -> IntArray:
        """Plugin ``name``'s NormalizeScore over ``raw`` (scores of ``nodes``; it may rewrite them), as
        ``_score_array`` runs it, for a plugin of ``score_plan`` with a normalizer."""
        return _checked_array(name, nodes, self._normalize(name, state, pod, nodes, raw))

    def _normalize(
        self,
        name: str,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        raw: Sequence[int] | IntArray,
    ) -> Sequence[int] | IntArray:
        """A plugin's NormalizeScore: over the array when the plugin has one, else over NodeScores."""
        began = _perf()
        record = state.record_plugin_metrics
        array_normalizer = self._array_normalizers.get(name)
        if array_normalizer is not None:
            normalized: IntArray = array_normalizer.normalize_score_array(
                state, pod, _checked_array(name, nodes, raw)
            )
            if record:
                self._observe_plugin(name, "ScoreExtensionNormalize", "Success", _perf() - began)
            return normalized
        values = raw.tolist() if isinstance(raw, np.ndarray) else list(raw)
        scores = [NodeScore(node.name, value) for node, value in zip(nodes, values, strict=True)]
        status = self._normalizers[name].normalize_score(state, pod, scores)
        if record:
            self._observe_plugin(name, "ScoreExtensionNormalize", _status_label(status), _perf() - began)
        if status is not None and status.code is not Code.Success:
            raise PluginError(status.with_plugin(name))
        return [s.score for s in scores]

    def has_score_plugins(self) -> bool:
        return bool(self.plugins.score)

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = _perf()
        result: Status | None = None
        for plugin in self.plugins.reserve:
            began = _perf()
            status = plugin.reserve(state, pod, node_name)
            if state.record_plugin_metrics:
                self._observe_plugin(plugin.name, "Reserve", _status_label(status), _perf() - began)
            if status is not None and status.code is not Code.Success:
                result = status.with_plugin(plugin.name)
                break
        self._observe_point("Reserve", _status_label(result), _perf() - start)
        return result

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        # Upstream labels Unreserve Success always: it has no status.
        start = _perf()
        # Reverse order, as upstream, so later plugins undo first.
        for plugin in reversed(self.plugins.reserve):
            began = _perf()
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception:
                log.exception("Unreserve of plugin %s failed for pod %s", plugin.name, pod.key)
            if state.record_plugin_metrics:
                self._observe_plugin(plugin.name, "Unreserve", "Success", _perf() - began)
        self._observe_point("Unreserve", "Success", _perf() - start)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        """Success, a rejection, or Wait naming the plugin whose timeout expires first, and that timeout."""
        status, timeouts = self.run_permit_plugins(state, pod, node_name)
        if status is None or status.code is not Code.Wait:
            return status, 0.0
        return status, timeouts[status.plugin]

    def run_permit_plugins(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, dict[str, float]]:
        """Success, a rejection, or Wait with the timeout of every plugin that asked to wait.

        Upstream arms one timer per waiting plugin; the pod goes on when all of them allow it and the
        first timer to fire rejects it. Each timeout is capped at 15 minutes. The Wait status names
        the plugin whose timeout expires first.
        """
        start = _perf()
        status, timeouts = self._run_permit_plugins(state, pod, node_name)
        self._observe_point("Permit", _status_label(status), _perf() - start)
        return status, timeouts

    def _run_permit_plugins(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, dict[str, float]]:
        timeouts: dict[str, float] = {}
        waiting: Status | None = None
        for plugin in self.plugins.permit:
            began = _perf()
            status, timeout = plugin.permit(state, pod, node_name)
            if state.record_plugin_metrics:
                self._observe_plugin(plugin.name, "Permit", _status_label(status), _perf() - began)
            if status is None or status.code is Code.Success:
                continue
            if status.code is Code.Wait:
                timeouts[plugin.name] = min(max(timeout, 0.0), MAX_PERMIT_WAIT)
                waiting = status
                continue
            return status.with_plugin(plugin.name), {}
        if timeouts:
            first = min(timeouts, key=timeouts.__getitem__)
            # Upstream's message: the last waiting plugin's reasons, then this one.
            reasons = [*(waiting.reasons if waiting is not None else ()), PERMIT_WAIT_MSG]
            return Status(Code.Wait, reasons, plugin=first), timeouts
        return None, {}

    # --- binding cycle (threads) --------------------------------------------------------------
    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Upstream's RunPreBindPreFlights: None (Success) when a PreBind plugin will act, Skip when
        none will, the first error otherwise. With NominatedNodeNameForExpectation (beta, on in v1.36)
        a Success makes the binding cycle publish ``status.nominatedNodeName`` before PreBind."""
        start = _perf()
        result: Status | None = Status.skip()
        for plugin in self.plugins.pre_bind:
            if not isinstance(plugin, PreBindPreFlightPlugin):
                continue
            status = plugin.pre_bind_pre_flight(state, pod, node_name)
            if status is None or status.code is Code.Success:
                result = None
            elif status.code is not Code.Skip:
                detail = status.message() or status.code.name
                error = Status.as_error(f"running PreBindPreFlight {plugin.name!r}: {detail}")
                result = error.with_plugin(plugin.name)
                break
        self._observe_point("PreBindPreFlight", _status_label(result), _perf() - start)
        return result

    def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = _perf()
        result: Status | None = None
        for plugin in self.plugins.pre_bind:
            began = _perf()
            status = plugin.pre_bind(state, pod, node_name)
            if state.record_plugin_metrics:
                self._observe_plugin(plugin.name, "PreBind", _status_label(status), _perf() - began)
            if status is not None and status.code not in (Code.Success, Code.Skip):
                result = status.with_plugin(plugin.name)
                break
        self._observe_point("PreBind", _status_label(result), _perf() - start)
        return result

    def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = _perf()
        result = self._run_bind(state, pod, node_name)
        self._observe_point("Bind", _status_label(result), _perf() - start)
        return result

    def _run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for plugin in self.plugins.bind:
            began = _perf()
            status = plugin.bind(state, pod, node_name)
            if state.record_plugin_metrics:
                self._observe_plugin(plugin.name, "Bind", _status_label(status), _perf() - began)
            if status is not None and status.code is Code.Skip:
                continue
            return None if status is None else status.with_plugin(plugin.name)
        return Status.as_error("no bind plugin handled the pod")

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        # Upstream labels PostBind Success always: PostBind is informational.
        start = _perf()
        for plugin in self.plugins.post_bind:
            began = _perf()
            try:
                plugin.post_bind(state, pod, node_name)
            except Exception:
                log.exception("PostBind of plugin %s failed for pod %s", plugin.name, pod.key)
            if state.record_plugin_metrics:
                self._observe_plugin(plugin.name, "PostBind", "Success", _perf() - began)
        self._observe_point("PostBind", "Success", _perf() - start)


def _counts_for(nominated: PodInfo, pod: PodInfo) -> bool:
    """addGENominatedPods: a nominated pod of higher or equal priority, other than the pod itself."""
    return nominated.priority >= pod.priority and (nominated.uid or nominated.key) != (pod.uid or pod.key)


def go_list(names: Iterable[str]) -> str:
    """A list of names as Go's ``%v`` prints a ``[]string``, the form upstream's messages use."""
    return "[" + " ".join(names) + "]"


def _invalid_score(plugin: str, value: Any, node_name: str) -> PluginError:
    return PluginError(
        Status.as_error(
            f"plugin {plugin!r} returned an invalid score {value} for node "
            f"{node_name!r}; scores must be in [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}]"
        ).with_plugin(plugin)
    )


def _score_node_by_node(
    plugin: ScorePlugin, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
) -> list[int]:
    """A per-node Score plugin over the nodes. Timed as one loop: the loop stops at the first failure,
    so every call before it succeeded, and the cycle's sum per status is the same as timing each call."""
    record = state.record_plugin_metrics
    per_node: list[int] = []
    began = _perf()
    for node in nodes:
        value, status = plugin.score(state, pod, node)
        if status is not None and status.code is not Code.Success:
            if record:
                _add_seconds(state.plugin_seconds, (plugin.name, "Score", status.code.name), _perf() - began)
            raise PluginError(status.with_plugin(plugin.name))
        per_node.append(value)
    if record:
        _add_seconds(state.plugin_seconds, (plugin.name, "Score", "Success"), _perf() - began)
    return per_node


class ScoreStep(NamedTuple):
    """One Score plugin of a cycle (``Framework.score_plan``)."""

    plugin: ScorePlugin
    weight: int
    # Its NormalizeScore over arrays; None when it has none.
    normalizer: BatchScoreExtensions | None


# Distinct PreFilter skip sets whose Filter plugin lists are kept (filter_plugins_for).
_UNSKIPPED_KEPT = 64


def _out_of_range(values: IntArray) -> bool:
    """Whether some int64 score is outside [MIN_NODE_SCORE, MAX_NODE_SCORE], in one reduction: shifted
    by the minimum and read as unsigned, a score below the range wraps to a huge value."""
    shifted = values - MIN_NODE_SCORE if MIN_NODE_SCORE else values
    unsigned = shifted.view(np.uint64)
    return bool(unsigned[unsigned.argmax()] > MAX_NODE_SCORE - MIN_NODE_SCORE)


def _checked_array(plugin: str, nodes: Sequence[NodeInfo], raw: Sequence[int] | IntArray) -> IntArray:
    """The scores as int64; one too large for that is reported like any other out-of-range score."""
    if isinstance(raw, np.ndarray) and raw.dtype == np.int64:
        return raw
    try:
        return np.asarray(raw, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        for index, value in enumerate(raw):
            if not MIN_NODE_SCORE <= value <= MAX_NODE_SCORE:
                raise _invalid_score(plugin, value, nodes[index].name) from None
        raise


class PluginError(Exception):
    """A plugin returned Error (or an invalid value) in a phase that has no per-node status."""

    def __init__(self, status: Status) -> None:
        super().__init__(str(status))
        self.status = status


def node_columns_of(frameworks: Iterable[Framework]) -> tuple[ColumnSpec, ...]:
    """The node columns of every profile, each once; a name declared differently raises
    ColumnConflictError naming both plugins."""
    return merge_column_specs(declaration for fwk in frameworks for declaration in fwk.column_declarations)


def implemented_points(plugin: Any) -> set[str]:
    """The extension points (camelCase, as in the config file) an object implements."""
    return {point for point, proto in EXTENSION_POINTS.items() if isinstance(plugin, proto)}


class PausedPostFilter:
    """A PostFilter run waiting for one plugin's I/O (``Framework.run_post_filter``): the plugins
    still to run, the fold so far, and what to await (a blocking call, or a coroutine: an extender's or an
    ``AwaitingPostFilterPlugin``'s)."""

    __slots__ = ("extenders", "fold", "index", "node_statuses", "pending", "pod", "start", "state")

    def __init__(
        self,
        state: CycleState,
        pod: PodInfo,
        node_statuses: Mapping[str, Status],
        extenders: Extenders | None,
        start: float,
    ) -> None:
        self.state = state
        self.pod = pod
        self.node_statuses = node_statuses
        self.extenders = extenders
        self.start = start
        self.index = 0
        self.fold = _PostFilterFold()
        # (plugin, when it began, blocking call, coroutine): exactly one of the last two is set.
        self.pending: (
            tuple[
                PostFilterPlugin,
                float,
                PostFilterCall | None,
                Coroutine[Any, Any, tuple[str | None, Status | None]] | None,
            ]
            | None
        ) = None


class _PostFilterFold:
    """Upstream's RunPostFilterPlugins rules, one plugin result at a time: the first success wins;
    UnschedulableAndUnresolvable stops at once; an error stops with no nomination; otherwise every
    plugin's reasons are joined and the last nomination a plugin made (``""`` clears one) is kept."""

    __slots__ = ("nominated", "reasons", "rejector")

    def __init__(self) -> None:
        self.nominated: str | None = None
        self.reasons: list[str] = []
        self.rejector = ""

    def add(
        self, plugin: str, nominated: str | None, status: Status | None
    ) -> tuple[str | None, Status | None] | None:
        """The final result if this plugin's result decides it, else None (ask the next plugin)."""
        if status is None or status.code is Code.Success:
            # Upstream returns the plugin's own status: its message (v1.37 DefaultPreemption's "found a
            # potential placement ...") becomes the FailedScheduling message's PostFilter part.
            return nominated, status if status is not None and status.reasons else None
        if status.code is Code.UnschedulableAndUnresolvable:
            return nominated, status.with_plugin(plugin)
        if not status.is_rejection():
            return None, Status(Code.Error, list(status.reasons), error=status.error).with_plugin(plugin)
        if nominated is not None:
            self.nominated = nominated
        self.reasons.extend(status.reasons)
        if not self.rejector:  # upstream records the first plugin that rejected
            self.rejector = plugin
        return None

    def result(self) -> tuple[str | None, Status | None]:
        return self.nominated, Status(Code.Unschedulable, self.reasons, self.rejector)
