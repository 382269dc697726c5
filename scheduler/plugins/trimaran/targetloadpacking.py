"""TargetLoadPacking: best-fit packing of measured CPU utilisation around a target (scheduler-plugins
v0.34.7 ``pkg/trimaran/targetloadpacking/targetloadpacking.go``).

Score: the node's measured CPU utilisation (the last CPU metric of operator AVG or Latest, a percentage
of the node's ``status.capacity`` cpu), plus the predicted CPU of the pod and of the pods bound to the
node since the sample was taken, as a percentage of capacity. A container's predicted CPU is its cpu
limit, else its cpu request times ``defaultRequestsMultiplier``, else ``defaultRequests.cpu``; the pod's
overhead is added. Up to ``targetUtilization`` the score rises linearly from the target (an idle node)
to 100 (a node at target); above it, it falls linearly to 0 at 100 %, and is 0 beyond. A node without
a sample, or without a CPU metric, scores 0. Scores are final (no normalisation).

A pod bound to the node counts as missing from the sample when the watch showed it after the sample's
window ended, or less than 60 s (a metrics agent's reporting interval) before (``pod_assign.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from informers.resource import PODS
from scheduler.framework import MIN_NODE_SCORE, CycleState, Handle, NodeInfo, PodInfo, Status
from scheduler.framework.listers import WatchedLister
from scheduler.framework.load_metrics import AVERAGE, CPU, LATEST
from scheduler.framework.objects import node_status, pod_spec, resources_of
from scheduler.framework.quantity import milli_value
from scheduler.plugins import names
from scheduler.plugins.trimaran.args import parse_target_load_packing
from scheduler.plugins.trimaran.node_load import NO_CPU_METRIC, NodeLoad, source_for
from scheduler.plugins.trimaran.pod_assign import (
    METRICS_AGENT_REPORTING_INTERVAL_SECONDS,
    ScheduledPodsCache,
    assigned,
)

NAME = names.TARGET_LOAD_PACKING


def go_round(x: float) -> int:
    """Go's ``math.Round``: halves away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def _cpu_of(listed: Mapping[str, Any]) -> int | None:
    cpu = listed.get("cpu")
    return None if cpu is None else milli_value(cpu)


class TargetLoadPacking:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        self.args = parse_target_load_packing(args, NAME)
        clock = handle.now if handle is not None else _zero_clock
        self.load = NodeLoad(NAME, source_for(handle, self.args.spec), clock)
        self.scheduled = ScheduledPodsCache(clock)
        if handle is not None:
            pods = handle.lister(PODS)
            if isinstance(pods, WatchedLister):
                pods.add_event_handler(self.scheduled, accept=assigned)

    def predict_container(self, container: Mapping[str, Any]) -> int:
        """Millicores a container is expected to use (``PredictUtilisation``)."""
        resources = resources_of(container)
        limit = _cpu_of(resources.get("limits") or {})
        if limit is not None:
            return limit
        request = _cpu_of(resources.get("requests") or {})
        if request is not None:
            return go_round(float(request) * self.args.default_requests_multiplier)
        return self.args.default_requests_milli_cpu

    def predict_pod(self, pod: Mapping[str, Any]) -> int:
        spec = pod_spec(pod)
        total = sum(self.predict_container(c) for c in spec.get("containers") or ())
        overhead = _cpu_of(spec.get("overhead") or {})
        return total + (overhead or 0)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        node_metrics, sample = self.load.metrics_of(state, node.name)
        if node_metrics is None:
            return MIN_NODE_SCORE, None
        pod_cpu = self.predict_pod(pod.pod)
        util_percent = 0.0
        found = False
        for metric in node_metrics:
            if metric.type == CPU and metric.operator in (AVERAGE, LATEST):
                util_percent = metric.value
                found = True
        if not found:
            self.load.fallback(state, node.name, NO_CPU_METRIC, sample)
            return MIN_NODE_SCORE, None
        capacity = float(_node_capacity_milli_cpu(node))
        util_millis = (util_percent / 100) * capacity
        end = sample.window.end
        missing = 0
        for entry in self.scheduled.pods_on(node.name):
            seen = int(entry.timestamp)
            if seen > end or end - seen < METRICS_AGENT_REPORTING_INTERVAL_SECONDS:
                missing += self.predict_pod(entry.pod)
        predicted = 100 * (util_millis + float(pod_cpu) + float(missing)) / capacity if capacity != 0 else 0.0
        target = float(self.args.target_utilization)
        if predicted > target:
            if predicted > 100:
                return MIN_NODE_SCORE, None
            return go_round(target * (100 - predicted) / (100 - target)), None
        return go_round((100 - target) * predicted / target + target), None


def _node_capacity_milli_cpu(node: NodeInfo) -> int:
    """The node's ``status.capacity`` cpu (upstream reads capacity here, not allocatable)."""
    capacity = node_status(node.node or {}).get("capacity") or {}
    cpu = capacity.get("cpu")
    return 0 if cpu is None else milli_value(cpu)


def _zero_clock() -> float:
    return 0.0
