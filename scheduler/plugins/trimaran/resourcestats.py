"""What the Trimaran plugins share: a pod's requests and limits as they count them, a node's measured
load turned into absolute numbers, and the requests and limits already on a node (scheduler-plugins
v0.34.7 ``pkg/trimaran/resourcestats.go``).

Trimaran counts a pod its own way, not as NodeResourcesFit does: the containers' sum against each init
container (cpu and memory only, sidecars not set apart), plus the pod's overhead; pod-level resources are
not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.load_metrics import Metric, resource_data
from scheduler.framework.objects import pod_spec, resources_of
from scheduler.framework.quantity import milli_value, value
from scheduler.framework.resources import CPU, MEMORY
from scheduler.framework.types import NodeInfo

MEGA_FACTOR = 1.0 / 1024.0 / 1024.0


@dataclass(slots=True)
class CpuMemory:
    """Millicores and bytes (upstream's framework.Resource, of which Trimaran reads these two)."""

    milli_cpu: int = 0
    memory: int = 0


def _container_list(container: Mapping[str, Any], which: str) -> Mapping[str, Any]:
    resources = resources_of(container)
    listed = resources.get("limits") if which == "limits" else resources.get("requests")
    return listed or {}


def effective_resource(pod: Mapping[str, Any], which: str) -> CpuMemory:
    """Upstream's ``GetEffectiveResource`` over ``requests`` or ``limits``."""
    spec = pod_spec(pod)
    out = CpuMemory()
    for container in spec.get("containers") or ():
        listed = _container_list(container, which)
        if CPU in listed:
            out.milli_cpu += milli_value(listed[CPU])
        if MEMORY in listed:
            out.memory += value(listed[MEMORY])
    for container in spec.get("initContainers") or ():
        listed = _container_list(container, which)
        if CPU in listed:
            out.milli_cpu = max(out.milli_cpu, milli_value(listed[CPU]))
        if MEMORY in listed:
            out.memory = max(out.memory, value(listed[MEMORY]))
    overhead = spec.get("overhead") or {}  # a ResourceList, no view of its own
    if CPU in overhead:
        out.milli_cpu += milli_value(overhead[CPU])
    if MEMORY in overhead:
        out.memory += value(overhead[MEMORY])
    return out


def requests_and_limits(pod: Mapping[str, Any]) -> tuple[CpuMemory, CpuMemory]:
    """The pod's requests, and its limits raised to at least its requests (``SetMaxLimits``)."""
    requests = effective_resource(pod, "requests")
    limits = effective_resource(pod, "limits")
    limits.milli_cpu = max(limits.milli_cpu, requests.milli_cpu)
    limits.memory = max(limits.memory, requests.memory)
    return requests, limits


@dataclass(slots=True)
class ResourceStats:
    """Measured load of one resource on a node in absolute units (millicores, MiB), and a request."""

    used_avg: float
    used_stdev: float
    req: float
    capacity: float


def allocatable_of(node: NodeInfo, resource: str) -> int:
    return node.allocatable.milli_cpu if resource == CPU else node.allocatable.memory


def resource_stats(
    metrics: Sequence[Metric], node: NodeInfo, request: CpuMemory, resource: str, metric_type: str
) -> ResourceStats | None:
    """``CreateResourceStats``: None when the node has no metric of that type."""
    util, std, found = resource_data(metrics, metric_type)
    if not found:
        return None
    if resource == CPU:
        capacity = float(node.allocatable.milli_cpu)
        req = float(request.milli_cpu)
    else:
        capacity = float(node.allocatable.memory) * MEGA_FACTOR
        req = float(request.memory) * MEGA_FACTOR
    return ResourceStats(util * capacity / 100, std * capacity / 100, req, capacity)


def mu_sigma(stats: ResourceStats) -> tuple[float, float]:
    """``GetMuSigma``: (used + request) and deviation as fractions of capacity, within [0, 1]."""
    if stats.capacity <= 0:
        return 0.0, 0.0
    mu = (stats.used_avg + stats.req) / stats.capacity
    sigma = stats.used_stdev / stats.capacity
    return max(min(mu, 1.0), 0.0), max(min(sigma, 1.0), 0.0)


@dataclass(slots=True)
class NodeRequestsAndLimits:
    request: CpuMemory
    limit: CpuMemory
    request_minus_pod: CpuMemory
    limit_minus_pod: CpuMemory
    capacity: CpuMemory


def node_requests_and_limits(
    pods_on_node: Iterable[tuple[CpuMemory, CpuMemory]],
    node: NodeInfo,
    pod_requests: CpuMemory,
    pod_limits: CpuMemory,
) -> NodeRequestsAndLimits:
    """``GetNodeRequestsAndLimits``: the sums over the requests and limits of the node's pods, with and
    without the pending pod; requests (not limits) capped by the node's allocatable."""
    capacity = CpuMemory(node.allocatable.milli_cpu, node.allocatable.memory)
    request = CpuMemory()
    limit = CpuMemory()
    for requested, limits in pods_on_node:
        request.milli_cpu += requested.milli_cpu
        request.memory += requested.memory
        limit.milli_cpu += limits.milli_cpu
        limit.memory += limits.memory
    request_minus_pod = CpuMemory(request.milli_cpu, request.memory)
    limit_minus_pod = CpuMemory(limit.milli_cpu, limit.memory)
    request.milli_cpu += pod_requests.milli_cpu
    request.memory += pod_requests.memory
    limit.milli_cpu += pod_limits.milli_cpu
    limit.memory += pod_limits.memory
    for amounts in (request, request_minus_pod):
        amounts.milli_cpu = min(amounts.milli_cpu, capacity.milli_cpu)
        amounts.memory = min(amounts.memory, capacity.memory)
    return NodeRequestsAndLimits(request, limit, request_minus_pod, limit_minus_pod, capacity)
