"""LoadVariationRiskBalancing: balance the risk of load variation across nodes (scheduler-plugins
v0.34.7 ``pkg/trimaran/loadvariationriskbalancing/loadvariationriskbalancing.go`` and ``analysis.go``).

Score, per resource (cpu and memory) with metrics on the node: mu = (measured average + the pod's
request) / allocatable and sigma = measured deviation / allocatable, both within [0, 1]; sigma is raised to
the power 1/``safeVarianceSensitivity``, multiplied by ``safeVarianceMargin`` and kept within [0, 1];
risk = (mu + sigma) / 2 and the resource's score (1 - risk) * 100. The node's score is the lower of the
two when both resources have metrics, else the one there is (0 with neither), rounded. A node without
a sample scores 0. Scores are final (no normalisation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from informers.resource import PODS
from scheduler.framework import MAX_NODE_SCORE, MIN_NODE_SCORE, CycleState, Handle, NodeInfo, PodInfo, Status
from scheduler.framework.listers import WatchedLister
from scheduler.framework.load_metrics import CPU as CPU_METRIC
from scheduler.framework.load_metrics import MEMORY as MEMORY_METRIC
from scheduler.framework.resources import CPU, MEMORY
from scheduler.plugins import names
from scheduler.plugins.trimaran.args import parse_load_variation_risk_balancing
from scheduler.plugins.trimaran.node_load import NodeLoad, source_for
from scheduler.plugins.trimaran.pod_assign import ScheduledPodsCache, assigned
from scheduler.plugins.trimaran.resourcestats import (
    ResourceStats,
    effective_resource,
    mu_sigma,
    resource_stats,
)
from scheduler.plugins.trimaran.targetloadpacking import go_round

NAME = names.LOAD_VARIATION_RISK_BALANCING


def risk_score(stats: ResourceStats, margin: float, sensitivity: float) -> float:
    """(1 - risk) * 100 for one resource (upstream's ``computeScore``); 0 without capacity."""
    if stats.capacity <= 0:
        return 0.0
    stats.req = max(stats.req, 0.0)
    stats.used_avg = max(min(stats.used_avg, stats.capacity), 0.0)
    stats.used_stdev = max(min(stats.used_stdev, stats.capacity), 0.0)
    mu, sigma = mu_sigma(stats)
    if sensitivity >= 0:
        # Go divides by zero into +Inf: sigma ** +Inf is 0 below 1.
        sigma = math.pow(sigma, 1 / sensitivity if sensitivity != 0 else math.inf)
    sigma = max(min(sigma * margin, 1.0), 0.0)
    risk = (mu + sigma) / 2
    return (1.0 - risk) * MAX_NODE_SCORE


class LoadVariationRiskBalancing:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        self.args = parse_load_variation_risk_balancing(args, NAME)
        clock = handle.now if handle is not None else (lambda: 0.0)
        self.load = NodeLoad(NAME, source_for(handle, self.args.spec), clock)
        # Upstream registers the bound-pods handler for this plugin too, though its score never reads it.
        self.scheduled = ScheduledPodsCache(clock)
        if handle is not None:
            pods = handle.lister(PODS)
            if isinstance(pods, WatchedLister):
                pods.add_event_handler(self.scheduled, accept=assigned)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        node_metrics, _ = self.load.metrics_of(state, node.name)
        if node_metrics is None:
            return MIN_NODE_SCORE, None
        request = effective_resource(pod.pod, "requests")
        margin, sensitivity = self.args.safe_variance_margin, self.args.safe_variance_sensitivity
        cpu_stats = resource_stats(node_metrics, node, request, CPU, CPU_METRIC)
        cpu_score = risk_score(cpu_stats, margin, sensitivity) if cpu_stats is not None else 0.0
        memory_stats = resource_stats(node_metrics, node, request, MEMORY, MEMORY_METRIC)
        memory_score = risk_score(memory_stats, margin, sensitivity) if memory_stats is not None else 0.0
        if cpu_stats is not None and memory_stats is not None:
            total = min(memory_score, cpu_score)
        else:
            total = max(memory_score, cpu_score)
        return go_round(total), None
