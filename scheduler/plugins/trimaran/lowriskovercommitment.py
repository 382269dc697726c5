"""LowRiskOverCommitment: place burstable pods where over-commitment is least risky (scheduler-plugins
v0.34.7 ``pkg/trimaran/lowriskovercommitment/lowriskovercommitment.go``).

PreScore: the pod's requests and limits (limits raised to the requests). Score: 0 for a best-effort pod
(no cpu or memory request or limit) and for a node without metrics; else (1 - the larger of the cpu and
memory risks) * 100, rounded. A resource's risk is ``w * riskLimit + (1 - w) * riskLoad`` within [0, 1],
``w`` its ``riskLimitWeights`` entry (default 0.5):

* riskLimit: how far the node's summed limits (its pods' and this pod's) exceed allocatable, as a share
  of limits minus requests (0 when they fit);
* riskLoad: 1 - P(load <= the node's requests without this pod), P from a beta distribution fitted to
  the measured average and deviation (the deviation scaled by sqrt(``smoothingWindowSize``), capped
  below the largest a beta distribution of that mean allows), conditioned on load <= the summed limits
  when those are below allocatable (``beta.py``).

Scores are final (no normalisation). Requests are capped by allocatable; memory counts in bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework import MAX_NODE_SCORE, MIN_NODE_SCORE, CycleState, Handle, NodeInfo, PodInfo, Status
from scheduler.framework.load_metrics import CPU as CPU_METRIC
from scheduler.framework.load_metrics import MEMORY as MEMORY_METRIC
from scheduler.framework.load_metrics import Metric
from scheduler.framework.resources import CPU, MEMORY
from scheduler.plugins import names
from scheduler.plugins.trimaran.args import parse_low_risk_over_commitment
from scheduler.plugins.trimaran.beta import MAX_VARIANCE_ALLOWANCE, max_variance, probability_at_most
from scheduler.plugins.trimaran.node_load import NodeLoad, source_for
from scheduler.plugins.trimaran.resourcestats import (
    CpuMemory,
    NodeRequestsAndLimits,
    mu_sigma,
    node_requests_and_limits,
    requests_and_limits,
    resource_stats,
)
from scheduler.plugins.trimaran.targetloadpacking import go_round

NAME = names.LOW_RISK_OVER_COMMITMENT
POD_RESOURCES_KEY = NAME + ".PodResources"


def _requests_and_limits(pod: PodInfo) -> tuple[CpuMemory, CpuMemory]:
    return pod.derived(POD_RESOURCES_KEY, lambda p: requests_and_limits(p.pod))


class LowRiskOverCommitment:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        self.args = parse_low_risk_over_commitment(args, NAME)
        clock = handle.now if handle is not None else (lambda: 0.0)
        self.load = NodeLoad(NAME, source_for(handle, self.args.spec), clock)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(POD_RESOURCES_KEY, requests_and_limits(pod.pod))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        resources = state.get(POD_RESOURCES_KEY)
        requests, limits = resources if resources is not None else requests_and_limits(pod.pod)
        if requests.milli_cpu == 0 and requests.memory == 0 and limits.milli_cpu == 0 and limits.memory == 0:
            return MIN_NODE_SCORE, None
        node_metrics, _ = self.load.metrics_of(state, node.name)
        if node_metrics is None:
            return MIN_NODE_SCORE, None
        on_node = node_requests_and_limits(
            (_requests_and_limits(info) for info in node.pods.values()), node, requests, limits
        )
        risk = max(
            self.risk(node_metrics, node, CPU, CPU_METRIC, on_node),
            self.risk(node_metrics, node, MEMORY, MEMORY_METRIC, on_node),
        )
        return go_round((1 - risk) * MAX_NODE_SCORE), None

    def risk(
        self,
        node_metrics: Sequence[Metric],
        node: NodeInfo,
        resource: str,
        metric_type: str,
        on_node: NodeRequestsAndLimits,
    ) -> float:
        """The risk of placing the pod on ``node`` for one resource (upstream's ``computeRisk``)."""

        def pick(amounts: CpuMemory) -> int:
            return amounts.milli_cpu if resource == CPU else amounts.memory

        request, limit = pick(on_node.request), pick(on_node.limit)
        request_minus_pod, limit_minus_pod = pick(on_node.request_minus_pod), pick(on_node.limit_minus_pod)
        capacity = pick(on_node.capacity)
        risk_limit = float(limit - capacity) / float(limit - request) if limit > capacity else 0.0
        risk_load = 0.0
        stats = resource_stats(node_metrics, node, CpuMemory(), resource, metric_type)
        if stats is not None:
            mu, sigma = mu_sigma(stats)
            sigma *= math.pow(float(self.args.smoothing_window_size), 0.5)
            sigma = min(sigma, math.sqrt(max_variance(mu) * MAX_VARIANCE_ALLOWANCE))
            threshold = _ratio(request_minus_pod, capacity)
            threshold = min(max(threshold, 0.0), 1.0)
            probability, fitted = probability_at_most(mu, sigma, threshold)
            if limit_minus_pod < capacity and request_minus_pod <= limit_minus_pod:
                limit_threshold = _ratio(limit_minus_pod, capacity)
                if limit_threshold == 0:
                    probability = 1.0
                elif fitted is not None:
                    below_limit = fitted.cdf(limit_threshold)
                    if below_limit > 0:
                        probability = min(max(probability / below_limit, 0.0), 1.0)
            risk_load = 1 - probability
        weight = self.args.risk_limit_weight(resource)
        total = weight * risk_limit + (1 - weight) * risk_load
        return min(max(total, 0.0), 1.0)


def _ratio(numerator: int, denominator: int) -> float:
    """Go's float64 division: x/0 is +Inf (or NaN for 0/0, which the clamps that follow read as 0)."""
    if denominator == 0:
        return math.inf if numerator > 0 else (-math.inf if numerator < 0 else 0.0)
    return float(numerator) / float(denominator)
