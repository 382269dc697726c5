"""Resource-based scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Mirrors ``noderesources/resource_allocation.go``, ``least_allocated.go``, ``most_allocated.go`` and
``requested_to_capacity_ratio.go`` (v1.36). For every configured resource a node contributes
``allocatable``, ``allocated`` (already requested on it) and ``requested`` (allocated plus this pod):

* cpu and memory count *non-zero* requests (100m / 200Mi for containers that request none) unless
  the scorer uses plain requests (BalancedAllocation does); ephemeral-storage and scalar resources
  always use plain requests;
* a scalar resource (extended, hugepages...) the pod does not request is left out, and so is any
  resource the node has none of.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from scheduler.framework import MAX_NODE_SCORE, ColumnSpec, IntArray, NodeColumn, NodeInfo, PodInfo, as_subset
from scheduler.framework.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NON_ZERO_DEFAULTS,
    Resource,
    pod_level_requests,
    pod_request_amounts,
)
from scheduler.plugins.helper.gomath import go_round
from scheduler.plugins.helper.shape import broken_linear_function
from scheduler.plugins.noderesources import columns
from scheduler.util.resource_names import is_scalar_resource_name

# The score range of a RequestedToCapacityRatio shape point (config.MaxCustomPriorityScore).
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100

# (requested, allocated, allocatable) per resource, aligned with the configured resources.
Scorer = Callable[[list[int], list[int], list[int]], int]
# The same over many nodes at once: one array per resource, every capacity non-zero.
ArrayScorer = Callable[[list[IntArray], list[IntArray], list[IntArray]], IntArray]


def _scoring_non_zero(pod: PodInfo) -> Resource:
    return Resource.from_amounts(
        pod_request_amounts(pod.pod, non_missing=NON_ZERO_DEFAULTS, use_status=False, pod_level=False)
    )


def scoring_non_zero_requests(pod: PodInfo) -> Resource:
    """The non-zero requests upstream's ``calculatePodResourceRequest`` scores with.

    Fit's scorer is built without enablePodLevelResources (fit.go, nodeResourceStrategyTypeMap), so
    pod-level requests are skipped: only the containers' requests count, every container getting the
    cpu/memory defaults it lacks. ``PodInfo.non_zero_requests`` (the node's accounting) honours the
    pod-level requests. The two differ only for pods with pod-level requests, so only those pay for a
    second pass.
    """
    if pod_level_requests(pod.spec) is None:
        return pod.non_zero_requests
    return pod.derived("noderesources.scoring_non_zero", _scoring_non_zero)


class ResourceSpec(NamedTuple):
    name: str
    weight: int


DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))

_KIND_CPU, _KIND_MEMORY, _KIND_EPHEMERAL, _KIND_SCALAR = range(4)


def _kind(name: str) -> int:
    if name == CPU:
        return _KIND_CPU
    if name == MEMORY:
        return _KIND_MEMORY
    if name == EPHEMERAL_STORAGE:
        return _KIND_EPHEMERAL
    return _KIND_SCALAR


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # Non-zero defaults can push requested past capacity; that counts as full.
    requested = min(requested, capacity)
    return requested * MAX_NODE_SCORE // capacity


def _weighted_scorer(resources: Sequence[ResourceSpec], per_resource: Callable[[int, int], int]) -> Scorer:
    weights = [r.weight for r in resources]

    def score(requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, capacity in enumerate(allocatable):
            if capacity == 0:
                continue
            node_score += per_resource(requested[i], capacity) * weights[i]
            weight_sum += weights[i]
        return node_score // weight_sum if weight_sum else 0

    return score


def _weighted_array_scorer(
    resources: Sequence[ResourceSpec], per_resource: Callable[[IntArray, IntArray], IntArray]
) -> ArrayScorer:
    weights = [r.weight for r in resources]

    def score(requested: list[IntArray], allocated: list[IntArray], allocatable: list[IntArray]) -> IntArray:
        # Every capacity is non-zero (see ResourceAllocationScorer.score_nodes), so all weights count.
        # Each per-resource array is fresh, so the first one holds the sum; weight 1 needs no multiply.
        total: IntArray | None = None
        for i, capacity in enumerate(allocatable):
            term = per_resource(requested[i], capacity)
            if weights[i] != 1:
                term *= weights[i]
            if total is None:
                total = term
            else:
                total += term
        weight_sum = sum(weights[: len(allocatable)])
        if total is None or not weight_sum:
            return np.zeros(len(allocatable[0]) if allocatable else 0, dtype=np.int64)
        if weight_sum == 1:
            return total
        result: IntArray = total // weight_sum
        return result

    return score


def _least_requested_array(requested: IntArray, capacity: IntArray) -> IntArray:
    # A request over capacity scores 0: the free room clipped at 0 gives 0 * MAX // capacity.
    free: IntArray = capacity - requested
    np.maximum(free, 0, out=free)
    free *= MAX_NODE_SCORE
    free //= capacity
    return free


def _most_requested_array(requested: IntArray, capacity: IntArray) -> IntArray:
    score: IntArray = np.minimum(requested, capacity)
    score *= MAX_NODE_SCORE
    score //= capacity
    return score


def least_resource_array_scorer(resources: Sequence[ResourceSpec]) -> ArrayScorer:
    return _weighted_array_scorer(resources, _least_requested_array)


def most_resource_array_scorer(resources: Sequence[ResourceSpec]) -> ArrayScorer:
    return _weighted_array_scorer(resources, _most_requested_array)


def least_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    """LeastAllocated: favours nodes with more free capacity after placing the pod."""
    return _weighted_scorer(resources, least_requested_score)


def most_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    """MostAllocated: favours fuller nodes (bin packing)."""
    return _weighted_scorer(resources, most_requested_score)


def requested_to_capacity_ratio_scorer(
    resources: Sequence[ResourceSpec], shape: Sequence[tuple[int, int]]
) -> Scorer:
    """RequestedToCapacityRatio: a user-defined piecewise-linear score of utilization (0-100).

    Shape scores (0-10) are scaled to the node score range; resources scoring 0 are left out of the
    weighted mean, which is rounded half away from zero as Go's ``math.Round``.
    """
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = broken_linear_function([(u, s * scale) for u, s in shape])
    weights = [r.weight for r in resources]

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def score(requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, capacity in enumerate(allocatable):
            if capacity == 0:
                continue
            value = resource_score(requested[i], capacity)
            if value > 0:
                node_score += value * weights[i]
                weight_sum += weights[i]
        return go_round(node_score / weight_sum) if weight_sum else 0

    return score


class ResourceAllocationScorer:
    """Builds the per-resource vectors for a node and hands them to a scorer."""

    __slots__ = ("_kinds", "array_scorer", "resources", "scorer", "use_requested")

    def __init__(
        self,
        resources: Sequence[ResourceSpec],
        scorer: Scorer,
        *,
        use_requested: bool,
        array_scorer: ArrayScorer | None = None,
    ) -> None:
        self.resources = tuple(resources)
        self.scorer = scorer
        self.use_requested = use_requested
        self.array_scorer = array_scorer
        self._kinds = tuple(_kind(r.name) for r in self.resources)

    def _columns_of(self, kind: int) -> tuple[NodeColumn, NodeColumn] | None:
        """(allocatable, in use) columns of a resource kind; None for scalars (per-node only)."""
        if kind == _KIND_CPU:
            return (
                columns.ALLOCATABLE_CPU,
                columns.REQUESTED_CPU if self.use_requested else columns.NON_ZERO_CPU,
            )
        if kind == _KIND_MEMORY:
            used = columns.REQUESTED_MEMORY if self.use_requested else columns.NON_ZERO_MEMORY
            return columns.ALLOCATABLE_MEMORY, used
        if kind == _KIND_EPHEMERAL:
            return columns.ALLOCATABLE_EPHEMERAL, columns.REQUESTED_EPHEMERAL
        return None

    def node_vectors(self, info: NodeInfo) -> tuple[list[int], list[int]]:
        """(in use, allocatable) of each configured resource on the node: ``score``'s ``allocated``
        and ``allocatable`` before it drops the resources the node lacks."""
        used = info.requested if self.use_requested else info.non_zero_requested
        alloc = info.allocatable
        in_use: list[int] = []
        capacity: list[int] = []
        for spec, kind in zip(self.resources, self._kinds, strict=True):
            if kind == _KIND_CPU:
                in_use.append(used.milli_cpu)
                capacity.append(alloc.milli_cpu)
            elif kind == _KIND_MEMORY:
                in_use.append(used.memory)
                capacity.append(alloc.memory)
            elif kind == _KIND_EPHEMERAL:
                in_use.append(info.requested.ephemeral_storage)
                capacity.append(alloc.ephemeral_storage)
            else:
                in_use.append(info.requested.scalar.get(spec.name, 0))
                capacity.append(alloc.scalar.get(spec.name, 0))
        return in_use, capacity

    @property
    def all_columnar(self) -> bool:
        """Every configured resource has columns (no scalar resource): the array path can serve."""
        return _KIND_SCALAR not in self._kinds

    def node_columns(self) -> tuple[ColumnSpec, ...]:
        """The columns ``score_nodes`` reads for the configured resources (none without an array
        scorer: it would never read them)."""
        if self.array_scorer is None:
            return ()
        return tuple(
            column for kind in self._kinds if (pair := self._columns_of(kind)) is not None for column in pair
        )

    def pod_requests(self, pod: PodInfo) -> list[int]:
        """The pod's request of each configured resource (``calculatePodResourceRequestList``)."""
        requests = pod.requests if self.use_requested else scoring_non_zero_requests(pod)
        return [requests.get(r.name) for r in self.resources]

    def entries(self, pod_requests: Sequence[int]) -> tuple[tuple[int, int, str, int], ...]:
        """(index, kind, name, pod request) of the resources that can count; computed once per pod."""
        return tuple(
            (i, kind, spec.name, pod_requests[i])
            for i, (spec, kind) in enumerate(zip(self.resources, self._kinds, strict=True))
            if pod_requests[i] != 0 or not is_scalar_resource_name(spec.name)
        )

    def score(self, node: NodeInfo, entries: Sequence[tuple[int, int, str, int]]) -> int:
        size = len(self.resources)
        requested = [0] * size
        allocated = [0] * size
        allocatable = [0] * size
        node_alloc = node.allocatable
        used = node.requested if self.use_requested else node.non_zero_requested
        for i, kind, name, pod_request in entries:
            if kind == _KIND_CPU:
                capacity, in_use = node_alloc.milli_cpu, used.milli_cpu
            elif kind == _KIND_MEMORY:
                capacity, in_use = node_alloc.memory, used.memory
            elif kind == _KIND_EPHEMERAL:
                capacity, in_use = node_alloc.ephemeral_storage, node.requested.ephemeral_storage
            else:
                scalar = node_alloc.scalar.get(name)
                if scalar is None:
                    continue
                capacity, in_use = scalar, node.requested.scalar.get(name, 0)
            if capacity == 0:
                continue
            allocatable[i] = capacity
            allocated[i] = in_use
            requested[i] = in_use + pod_request
        return self.scorer(requested, allocated, allocatable)

    def score_nodes(
        self, nodes: Sequence[NodeInfo], entries: Sequence[tuple[int, int, str, int]]
    ) -> IntArray | None:
        """``score`` for every node of a NodeSubset at once, or None when only the per-node path can
        answer: no columns, no array scorer, a scalar resource, or a node without some resource."""
        if self.array_scorer is None:
            return None
        arrays = self.gather_arrays(nodes, entries)
        if arrays is None:
            return None
        return self.array_scorer(*arrays)

    def gather_arrays(
        self, nodes: Sequence[NodeInfo], entries: Sequence[tuple[int, int, str, int]]
    ) -> tuple[list[IntArray], list[IntArray], list[IntArray]] | None:
        """(requested, allocated, allocatable) per configured resource over a NodeSubset, every
        capacity non-zero; None when only the per-node path can answer (see ``score_nodes``)."""
        subset = as_subset(nodes)
        if subset is None or len(entries) != len(self.resources) or not entries:
            return None
        requested: list[IntArray] = []
        allocated: list[IntArray] = []
        allocatable: list[IntArray] = []
        for _, kind, _, pod_request in entries:
            pair = self._columns_of(kind)
            if pair is None:
                return None
            capacity_column, used_column = pair
            if not subset.all_positive(capacity_column):
                # A resource some node lacks drops out of that node's mean: per-node arithmetic.
                return None
            in_use = subset.gather(used_column)
            allocatable.append(subset.gather(capacity_column))
            allocated.append(in_use)
            requested.append(in_use + pod_request)
        return requested, allocated, allocatable
