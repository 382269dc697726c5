"""TaintToleration (``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.framework import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    ColumnSpec,
    CycleState,
    Handle,
    IntArray,
    InternedColumn,
    MaskedStatuses,
    NodeInfo,
    NodeScore,
    NodeSubset,
    PodInfo,
    QueueingHint,
    Resource,
    Status,
    all_pass,
    as_subset,
    per_node_statuses,
)
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import pod_info, safe_hint
from scheduler.plugins.helper.normalize import default_normalize_score, default_normalize_score_array
from scheduler.plugins.helper.signature import spec_part
from scheduler.plugins.helper.taints import (
    PREFER_NO_SCHEDULE,
    Toleration,
    find_untolerated_taint,
    node_taints,
    pod_tolerations,
    taint_fields,
    tolerates_taint,
)

ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
PRE_SCORE_STATE_KEY = "PreScore" + names.TAINT_TOLERATION


def _prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    # An empty effect tolerates every effect, PreferNoSchedule included.
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def _count_intolerable_prefer_no_schedule(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Toleration]
) -> int:
    count = 0
    for taint in taints:
        key, value, effect = taint_fields(taint)
        if effect == PREFER_NO_SCHEDULE and not tolerates_taint(tolerations, key, value, effect):
            count += 1
    return count


def _taints_key(taints: Sequence[Mapping[str, Any]]) -> tuple[tuple[Any, Any, Any], ...]:
    return tuple((t.get("key"), t.get("value"), t.get("effect")) for t in taints)


# Nodes with equal taints share a code (0: no taints), so the plugin judges each distinct set of
# taints once per pod instead of once per node.
TAINTS = InternedColumn(
    names.TAINT_TOLERATION + "/taints", lambda info: info.taints or None, key=_taints_key, reads_pods=False
)


def _tainted(nodes: Sequence[NodeInfo]) -> list[int]:
    """Indices of the nodes with any taint (per-node path)."""
    return [i for i, node in enumerate(nodes) if node.taints]


def _per_taint_set(
    subset: NodeSubset, judge: Callable[[Sequence[Mapping[str, Any]]], int]
) -> IntArray | None:
    """``judge(taints)`` for every node of ``subset``, calling it once per distinct set of taints;
    None when no node of the subset has taints (``judge(())`` is not asked)."""
    if not subset.nonzero_rows(TAINTS):
        return None
    codes = subset.gather(TAINTS)
    # The codes present, in order: counting them is linear, where np.unique sorts (and was the
    # plugin's largest cost on a cluster with tainted nodes).
    present = np.flatnonzero(np.bincount(codes))
    if len(present) == 1 and present[0] == 0:
        return None
    taint_sets = subset.distinct(TAINTS)
    verdicts = np.zeros(int(present[-1]) + 1, dtype=np.int64)
    for code in present.tolist():
        if code:
            verdicts[code] = judge(taint_sets[code])
    result: IntArray = verdicts[codes]
    return result


class TaintToleration:
    """Filter: NoSchedule/NoExecute taints must be tolerated (UnschedulableAndUnresolvable otherwise).

    Score: the number of PreferNoSchedule taints the pod does not tolerate, normalised reversed, so
    the node with the fewest scores 100.

    Upstream: ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`` (v1.37.2).
    """

    name = names.TAINT_TOLERATION
    # Filter reads the node's taints and the pod's tolerations, never the pods on the node (preemption dry
    # runs ask once per node).
    filter_ignores_pods_on_node = True

    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        return spec_part(pod, "tolerations")

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())

    def node_columns(self) -> Sequence[ColumnSpec]:
        return (TAINTS,)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.taints:
            return None
        if find_untolerated_taint(node.taints, pod_tolerations(pod)) is None:
            return None
        return Status.unschedulable(ERR_REASON_UNTOLERATED, resolvable=False)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        subset = as_subset(nodes)
        if subset is None:
            return per_node_statuses(nodes, lambda node: self.filter(state, pod, node), _tainted(nodes))
        tolerations = pod_tolerations(pod)
        untolerated = _per_taint_set(
            subset, lambda taints: find_untolerated_taint(taints, tolerations) is not None
        )
        if untolerated is None or not untolerated.any():
            return all_pass(len(subset))
        status = Status.unschedulable(ERR_REASON_UNTOLERATED, resolvable=False)
        return MaskedStatuses(untolerated == 0, lambda index: status)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, _prefer_no_schedule_tolerations(pod_tolerations(pod)))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        if not node.taints:
            return 0, None
        tolerations = state.get(PRE_SCORE_STATE_KEY)
        if tolerations is None:
            tolerations = _prefer_no_schedule_tolerations(pod_tolerations(pod))
        return _count_intolerable_prefer_no_schedule(node.taints, tolerations), None

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[int] | IntArray:
        subset = as_subset(nodes)
        if subset is None:
            scores = np.zeros(len(nodes), dtype=np.int64)
            for index in _tainted(nodes):
                scores[index] = self.score(state, pod, nodes[index])[0]
            return scores
        tolerations = state.get(PRE_SCORE_STATE_KEY)
        if tolerations is None:
            tolerations = _prefer_no_schedule_tolerations(pod_tolerations(pod))
        counts = _per_taint_set(
            subset, lambda taints: _count_intolerable_prefer_no_schedule(taints, tolerations)
        )
        return np.zeros(len(subset), dtype=np.int64) if counts is None else counts

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None

    def normalize_score_array(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return default_normalize_score_array(MAX_NODE_SCORE, True, scores)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeTaint),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.TargetPod, ActionType.UpdatePodToleration),
                self.is_schedulable_after_target_pod_toleration_change,
            ),
        ]

    @safe_hint
    def is_schedulable_after_node_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        tolerations = pod_tolerations(pod_info(pod))
        was_untolerated = (
            old_obj is None or find_untolerated_taint(node_taints(old_obj), tolerations) is not None
        )
        is_untolerated = find_untolerated_taint(node_taints(new_obj), tolerations) is not None
        return QueueingHint.Queue if was_untolerated and not is_untolerated else QueueingHint.Skip

    def is_schedulable_after_target_pod_toleration_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # v1.37.2: a TargetPod event is a pending pod's own update, so the hint no longer compares uids
        # (v1.36 skipped another pod's update). The queue replays an in-flight pod's TargetPod events to
        # every in-flight pod that fails, as upstream, and this answers Queue for those too.
        return QueueingHint.Queue
