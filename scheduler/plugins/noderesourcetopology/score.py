"""Score strategies of NodeResourceTopologyMatch (scheduler-plugins v0.34.7
``pkg/noderesourcetopology/score.go``, ``least_allocated.go``, ``most_allocated.go``,
``balanced_allocation.go``, ``least_numa.go``).

Only Guaranteed pods are scored against NUMA nodes; every other pod scores 100 on every node. A node
without a NodeResourceTopology scores 0. There is no normalisation: the raw score (0-100) is the
node's.

LeastAllocated, MostAllocated, BalancedAllocation apply under the single-numa-node policy only (other
policies score 0). Each NUMA node gets a score for the request (the pod's effective request in pod
scope; in container scope each init and app container's, and the node's score is the truncated mean
of the containers'); the request's score on the node is the lowest non-zero NUMA score (0 when all
are 0: a NUMA node that cannot hold the request is not one the kubelet would use). Amounts are read as
whole units rounded up (cpu ``1500m`` is 2), as upstream's ``Quantity.Value()``.

* LeastAllocated: per resource ``(available - requested) * 100 / available`` (0 when nothing is
  available or the request is larger), weighted mean with integer division.
* MostAllocated: per resource ``requested * 100 / available``, same rules.
* BalancedAllocation: ``(1 - variance) * 100`` truncated, over the fractions requested/available
  (1 when nothing is available); 0 as soon as one fraction is above 1. The variance is the sample
  variance (divided by n - 1), as gonum's ``stat.Variance``.

LeastNUMANodes applies under any policy: the fewest NUMA nodes whose combined ``available`` holds the
request (trying 1, 2, ... nodes, combinations in lexicographic order), preferring among those the
combination with the smallest average distance (``costs``; 255 when unknown). Score
``100 - count * (100 / maxNUMANodes)``, plus half of ``100 / maxNUMANodes`` when that combination has
the smallest average distance of all combinations of that size; 0 when nothing holds it; 100 when the
request names no resource any NUMA node reports. Container scope takes the largest count over the
containers (each charged to its NUMA nodes before the next) and adds the half only if every
container got the smallest distance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from itertools import combinations

import numpy as np

from scheduler.framework import MAX_NODE_SCORE, MIN_NODE_SCORE
from scheduler.plugins.noderesourcetopology.args import (
    BALANCED_ALLOCATION,
    LEAST_ALLOCATED,
    LEAST_NUMA_NODES,
    MOST_ALLOCATED,
    NodeResourceTopologyMatchArgs,
)
from scheduler.plugins.noderesourcetopology.filter import is_resource_set_suitable
from scheduler.plugins.noderesourcetopology.requests import PodRequests, Requests
from scheduler.plugins.noderesourcetopology.topology import (
    POLICY_SINGLE_NUMA_NODE,
    SCOPE_CONTAINER,
    SCOPE_POD,
    NUMANode,
    TopologyManagerConfig,
)

MAX_DISTANCE = 255

Strategy = Callable[[Requests, Mapping[str, Fraction], NodeResourceTopologyMatchArgs], int]


def _ceil(amount: Fraction) -> int:
    return -((-amount.numerator) // amount.denominator)


def _go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _allocation(requested: Fraction, available: Fraction, most: bool) -> int:
    if available == 0 or requested > available:
        return 0
    cap = _ceil(available)
    want = _ceil(requested)
    if cap == 0:
        # Go would divide by zero here (an available amount in (0, 1) rounds up to 1, so unreachable).
        return 0
    return _go_div(want * MAX_NODE_SCORE if most else (cap - want) * MAX_NODE_SCORE, cap)


def _weighted(
    requested: Requests, available: Mapping[str, Fraction], args: NodeResourceTopologyMatchArgs, most: bool
) -> int:
    total = weights = 0
    for name, amount in requested.items():
        weight = args.weight(name)
        total += _allocation(amount, available.get(name, Fraction(0)), most) * weight
        weights += weight
    return _go_div(total, weights) if weights else 0


def least_allocated(
    requested: Requests, available: Mapping[str, Fraction], args: NodeResourceTopologyMatchArgs
) -> int:
    return _weighted(requested, available, args, most=False)


def most_allocated(
    requested: Requests, available: Mapping[str, Fraction], args: NodeResourceTopologyMatchArgs
) -> int:
    return _weighted(requested, available, args, most=True)


def balanced_allocation(
    requested: Requests, available: Mapping[str, Fraction], args: NodeResourceTopologyMatchArgs
) -> int:
    fractions: list[float] = []
    for name, amount in requested.items():
        cap = _ceil(available.get(name, Fraction(0)))
        fraction = 1.0 if cap == 0 else float(_ceil(amount)) / float(cap)
        if fraction > 1:
            return 0
        fractions.append(fraction)
    if len(fractions) < 2:
        # gonum's sample variance of fewer than two values is NaN; a Guaranteed pod always requests
        # cpu and memory, so only an empty or single-resource request gets here.
        return MIN_NODE_SCORE
    mean = sum(fractions) / len(fractions)
    squares = compensation = 0.0
    for value in fractions:
        d = value - mean
        squares += d * d
        compensation += d
    variance = (squares - compensation * compensation / len(fractions)) / (len(fractions) - 1)
    return int((1 - variance) * float(MAX_NODE_SCORE))


STRATEGIES: Mapping[str, Strategy] = {
    LEAST_ALLOCATED: least_allocated,
    MOST_ALLOCATED: most_allocated,
    BALANCED_ALLOCATION: balanced_allocation,
}


def score_for_each_numa_node(
    requested: Requests, numa: Sequence[NUMANode], strategy: Strategy, args: NodeResourceTopologyMatchArgs
) -> int:
    """The lowest non-zero NUMA score (0 when every NUMA node scores 0)."""
    lowest = 0
    for cell in numa:
        score = strategy(requested, cell.resources, args)
        if lowest == 0 or (score != 0 and score < lowest):
            lowest = score
    return lowest


def score_node(
    args: NodeResourceTopologyMatchArgs, conf: TopologyManagerConfig, numa: list[NUMANode], pod: PodRequests
) -> int:
    """The node's score for a Guaranteed pod, given its NRT's configuration and NUMA nodes."""
    if args.scoring_type == LEAST_NUMA_NODES:
        if conf.scope == SCOPE_POD:
            return least_numa_pod_scope(conf, numa, pod)
        if conf.scope == SCOPE_CONTAINER:
            return least_numa_container_scope(conf, numa, pod)
        return MIN_NODE_SCORE
    if conf.policy != POLICY_SINGLE_NUMA_NODE:
        return MIN_NODE_SCORE
    strategy = STRATEGIES[args.scoring_type]
    if conf.scope == SCOPE_POD:
        return score_for_each_numa_node(pod.effective, numa, strategy, args)
    if conf.scope == SCOPE_CONTAINER:
        containers = pod.all_containers
        if not containers:
            return MIN_NODE_SCORE
        scores = [float(score_for_each_numa_node(c.requests, numa, strategy, args)) for c in containers]
        return int(sum(scores) / len(scores))
    return MIN_NODE_SCORE


# --- LeastNUMANodes ------------------------------------------------------------------------------


def only_non_numa_resources(numa: Sequence[NUMANode], requested: Requests) -> bool:
    return not any(name in cell.resources for name in requested for cell in numa)


def _normalize(count: int, shortest: bool, max_numa_nodes: int) -> int:
    per_node = MAX_NODE_SCORE // max_numa_nodes
    score = MAX_NODE_SCORE - count * per_node
    return score + per_node // 2 if shortest else score


def _average_distance(numa: Sequence[NUMANode], combo: Sequence[int]) -> np.float32:
    if not combo:
        return np.float32(MAX_DISTANCE)
    total = 0
    for a in combo:
        for b in combo:
            total += numa[a].costs.get(numa[b].numa_id, MAX_DISTANCE)
    return np.float32(total) / np.float32(len(combo) * len(combo))


def _holds(qos: str, numa: Sequence[NUMANode], requested: Requests, combo: Sequence[int]) -> bool:
    for index in combo:
        for name in requested:
            if name not in numa[index].resources:
                return False
    combined: dict[str, Fraction] = {}
    for index in combo:
        for name, amount in numa[index].resources.items():
            combined[name] = combined.get(name, Fraction(0)) + amount
    for name, amount in requested.items():
        if amount == 0:
            continue
        if not is_resource_set_suitable(qos, name, amount, combined.get(name, Fraction(0))):
            return False
    return True


def numa_nodes_required(
    qos: str, numa: Sequence[NUMANode], requested: Requests
) -> tuple[list[int], bool] | None:
    """The NUMA ids of the smallest combination that holds ``requested`` (closest first), and whether
    it is as close as any combination of its size; None when none does."""
    for size in range(1, len(numa) + 1):
        combos = list(combinations(range(len(numa)), size))
        closest = min(_average_distance(numa, c) for c in combos)
        best: tuple[int, ...] | None = None
        best_distance = np.float32(256)
        for combo in combos:
            if not _holds(qos, numa, requested, combo):
                continue
            distance = _average_distance(numa, combo)
            if distance == closest:
                return sorted(numa[i].numa_id for i in combo), True
            if distance < best_distance:
                best_distance, best = distance, combo
        if best is not None:
            return sorted(numa[i].numa_id for i in best), False
    return None


def _take_from(numa: list[NUMANode], requested: Requests, numa_ids: Sequence[int]) -> None:
    """Upstream's ``subtractFromNUMAs``: each resource is taken from the NUMA nodes in id order until
    the request is covered. Upstream indexes the NUMA list by id; so does this (ids past the end of
    the list, where upstream would crash, are skipped)."""
    for name, amount in requested.items():
        left = amount
        for ident in numa_ids:
            if left == 0:
                break
            if ident >= len(numa):
                continue
            resources = numa[ident].resources
            if name not in resources:
                continue
            available = resources[name]
            if left >= available:
                left -= available
                resources[name] = Fraction(0)
            else:
                resources[name] = available - left
                left = Fraction(0)


def least_numa_container_scope(conf: TopologyManagerConfig, numa: list[NUMANode], pod: PodRequests) -> int:
    numa = [cell.copy() for cell in numa]  # charged container by container; the caller's stays as it was
    largest = 0
    all_closest = True
    for container in pod.all_containers:
        if only_non_numa_resources(numa, container.requests):
            continue
        required = numa_nodes_required(pod.qos, numa, container.requests)
        if required is None:
            return MIN_NODE_SCORE
        ids, closest = required
        all_closest = all_closest and closest
        largest = max(largest, len(ids))
        _take_from(numa, container.requests, ids)
    if largest == 0:
        return MAX_NODE_SCORE
    return _normalize(largest, all_closest, conf.max_numa_nodes)


def least_numa_pod_scope(conf: TopologyManagerConfig, numa: list[NUMANode], pod: PodRequests) -> int:
    if only_non_numa_resources(numa, pod.effective):
        return MAX_NODE_SCORE
    required = numa_nodes_required(pod.qos, numa, pod.effective)
    if required is None:
        return MIN_NODE_SCORE
    ids, closest = required
    return _normalize(len(ids), closest, conf.max_numa_nodes)
