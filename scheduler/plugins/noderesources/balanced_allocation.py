"""NodeResourcesBalancedAllocation (``noderesources/balanced_allocation.go``, v1.37.2)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.framework import (
    MAX_NODE_SCORE,
    ColumnSpec,
    CycleState,
    Handle,
    IntArray,
    NodeColumn,
    NodeInfo,
    PodInfo,
    Status,
    as_subset,
)
from scheduler.framework.resources import CPU, MEMORY
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.gomath import go_div, go_div_array
from scheduler.plugins.helper.signature import requests_part
from scheduler.plugins.noderesources.args import parse_balanced_allocation_args
from scheduler.plugins.noderesources.resource_allocation import ResourceAllocationScorer

PRE_SCORE_STATE_KEY = "PreScore" + names.NODE_RESOURCES_BALANCED_ALLOCATION


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``(1 - std) * 100`` of the utilization fractions (each capped at 1) of resources the node has.
    Runs for every changed node (its idle-balance column) and every node scored one at a time, so the
    cap is a comparison rather than a ``min`` call and the sum is taken only where it is needed; the
    float operations are the same, in the same order."""
    fractions = []
    for used, capacity in zip(requested, allocatable, strict=True):
        if capacity:
            fraction = used / capacity
            fractions.append(1.0 if fraction > 1.0 else fraction)
    count = len(fractions)
    if count == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif count > 2:
        # Plain left-to-right sums, as Go does (Python 3.12's sum() compensates and can differ).
        total = 0.0
        for fraction in fractions:
            total += fraction
        mean = total / count
        squares = 0.0
        for fraction in fractions:
            squares += (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / count)
    else:
        return MAX_NODE_SCORE
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_resource_scorer(requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
    """v1.36 scores the change in balance the pod brings: 50 +- half the (shifted) difference.

    A node the pod makes more balanced scores above 50, one it unbalances below.
    """
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without_pod, 2)


def balanced_resource_score_array(requested: list[IntArray], allocatable: list[IntArray]) -> IntArray:
    """``balanced_resource_score`` over many nodes, every capacity non-zero; the same float operations
    in the same order, so the same results."""
    fractions = [
        np.minimum(used / capacity, 1.0) for used, capacity in zip(requested, allocatable, strict=True)
    ]
    count = len(fractions)
    if count == 2:
        std = np.abs((fractions[0] - fractions[1]) / 2)
    elif count > 2:
        total = fractions[0]
        for fraction in fractions[1:]:
            total = total + fraction
        mean = total / count
        squares = (fractions[0] - mean) * (fractions[0] - mean)
        for fraction in fractions[1:]:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = np.sqrt(squares / count)
    else:
        std = np.zeros(len(allocatable[0]))
    score: IntArray = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return score


def balanced_resource_array_scorer(
    requested: list[IntArray], allocated: list[IntArray], allocatable: list[IntArray]
) -> IntArray:
    with_pod = balanced_resource_score_array(requested, allocatable)
    without_pod = balanced_resource_score_array(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    score: IntArray = half + go_div_array(half + with_pod - without_pod, 2)
    return score


# The balance of each node without the pod, per configured resource list: one column object per list,
# so profiles configuring the same resources share it (a name declared twice must be one spec).
_IDLE_COLUMNS: dict[tuple[str, ...], NodeColumn] = {}


def _idle_balance_column(scorer: ResourceAllocationScorer) -> NodeColumn:
    """Per node, ``balanced_resource_score`` of what its pods use: the "without the pod" half of the
    score depends on the node alone, so it is computed when the node changes, not per pod and node.
    Read only where every capacity is non-zero, where it equals the array path's value."""
    names_key = tuple(spec.name for spec in scorer.resources)
    column = _IDLE_COLUMNS.get(names_key)
    if column is None:

        def idle_balance(info: NodeInfo) -> int:
            return balanced_resource_score(*scorer.node_vectors(info))

        def idle_balance_cpu_memory(info: NodeInfo) -> int:
            used, alloc = info.requested, info.allocatable
            cpu_capacity, memory_capacity = alloc.milli_cpu, alloc.memory
            if not (cpu_capacity and memory_capacity):
                # Fewer than two fractions: no spread.
                return MAX_NODE_SCORE
            cpu = used.milli_cpu / cpu_capacity
            memory = used.memory / memory_capacity
            cpu = 1.0 if cpu > 1.0 else cpu
            memory = 1.0 if memory > 1.0 else memory
            return int((1 - abs((cpu - memory) / 2)) * MAX_NODE_SCORE)

        # The default resources (cpu, memory, plain requests): balanced_resource_score of the two spelt
        # out, the same float operations in the same order, without node_vectors' lists. It runs for
        # every node a snapshot update changes (each placed pod); the lists cost twice the arithmetic.
        default_pair = names_key == (CPU, MEMORY) and scorer.use_requested
        compute = idle_balance_cpu_memory if default_pair else idle_balance
        column = _IDLE_COLUMNS[names_key] = NodeColumn(
            "noderesources/balanced-allocation.idle/" + ",".join(names_key),
            np.int64,
            compute,
            reads_pods=True,
        )
    return column


class NodeResourcesBalancedAllocation:
    """Score: favours nodes whose resource utilizations end up close to each other.

    Counts plain (not non-zero) requests. Best-effort pods (no requests of the configured resources)
    are not scored at all, so they do not pile onto one node (kubernetes#129138).

    Upstream: ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go`` (v1.37.2).
    """

    name = names.NODE_RESOURCES_BALANCED_ALLOCATION

    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        return requests_part(pod)

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        resources = parse_balanced_allocation_args(ArgsReader(self.name), args)
        self.scorer = ResourceAllocationScorer(
            resources,
            balanced_resource_scorer,
            use_requested=True,
            array_scorer=balanced_resource_array_scorer,
        )
        self._idle = _idle_balance_column(self.scorer) if self.scorer.all_columnar else None

    def node_columns(self) -> Sequence[ColumnSpec]:
        columns = self.scorer.node_columns()
        if self._idle is not None:
            columns = (*columns, self._idle)
        return columns

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        requests = self.scorer.pod_requests(pod)
        if not any(requests):
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, self.scorer.entries(requests))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        entries = state.get(PRE_SCORE_STATE_KEY)
        if entries is None:
            requests = self.scorer.pod_requests(pod)
            if not any(requests):
                return 0, None
            entries = self.scorer.entries(requests)
        return self.scorer.score(node, entries), None

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[int] | IntArray:
        entries = state.get(PRE_SCORE_STATE_KEY)
        if entries is None:
            requests = self.scorer.pod_requests(pod)
            if not any(requests):
                return [0] * len(nodes)
            entries = self.scorer.entries(requests)
        subset = as_subset(nodes)
        if self._idle is not None and subset is not None:
            arrays = self.scorer.gather_arrays(subset, entries)
            if arrays is not None:
                requested, _, allocatable = arrays
                with_pod = balanced_resource_score_array(requested, allocatable)
                half = MAX_NODE_SCORE // 2
                score: IntArray = half + go_div_array(half + with_pod - subset.gather(self._idle), 2)
                return score
        scores = self.scorer.score_nodes(nodes, entries)
        if scores is None:
            return [self.scorer.score(node, entries) for node in nodes]
        return scores
