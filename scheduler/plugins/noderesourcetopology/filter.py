"""Filter for the single-numa-node topology manager policy, container and pod scope (scheduler-plugins
v0.34.7 ``pkg/noderesourcetopology/filter.go`` and ``numaresources.go``).

A node passes unless its NodeResourceTopology says ``single-numa-node``; the restricted, best-effort
and none policies pass every pod, as upstream's Filter does. Under single-numa-node:

* pod scope: the pod's effective request must fit in one NUMA node;
* container scope: each init container must fit in one NUMA node on its own (init containers are not
  charged), then each app container in turn, charged to the NUMA node the kubelet would pick (the
  lowest id that fits) before the next one is judged.

Fitting one request: every resource with a non-zero amount must exist on the node (its allocatable:
cpu, memory, pods, ephemeral-storage and the scalar resources), else the node fails at once. A
resource that no NUMA node reports is fine when it is host-level (ephemeral-storage, storage, any
non-native resource); otherwise the NUMA nodes that can hold it are kept: a non-Guaranteed pod's cpu,
memory and hugepages fit any NUMA node that reports them (they are not pinned), and any other
amount must be at most the NUMA node's ``available``. Some NUMA node must remain for every resource.
NUMA ids of 64 and above never fit (upstream's 64-bit mask).

Messages as upstream's: ``cannot align container``, ``cannot align init container``, ``cannot align
sidecar container``, ``cannot align pod``. ``explain`` says more: which resource, and what each NUMA
node has (``Misfit.detail``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from scheduler.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from scheduler.plugins.helper.qos import GUARANTEED
from scheduler.plugins.noderesourcetopology.requests import APP, PodRequests, Requests
from scheduler.plugins.noderesourcetopology.topology import (
    MAX_NUMA_ID,
    POLICY_SINGLE_NUMA_NODE,
    SCOPE_CONTAINER,
    SCOPE_POD,
    NUMANode,
    TopologyManagerConfig,
)
from scheduler.util.resource_names import HUGE_PAGES_PREFIX, is_native_resource

CANNOT_ALIGN_POD = "cannot align pod"
STORAGE = "storage"
_ALL_NUMA = (1 << MAX_NUMA_ID) - 1


def cannot_align_container(kind: str) -> str:
    return "cannot align container" if kind == APP else f"cannot align {kind} container"


def is_host_level_resource(name: str) -> bool:
    return name in (EPHEMERAL_STORAGE, STORAGE) or not is_native_resource(name)


def is_numa_affine_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith(HUGE_PAGES_PREFIX)


def is_resource_set_suitable(qos: str, name: str, wanted: Fraction, available: Fraction) -> bool:
    if qos != GUARANTEED and is_numa_affine_resource(name):
        return True
    return available >= wanted


@dataclass(frozen=True, slots=True)
class Fit:
    """Where one request fits: the NUMA id (when it does) or the resource that failed it."""

    numa_id: int
    resource: str = ""

    @property
    def fits(self) -> bool:
        return not self.resource


def fit_in_one_numa_node(
    qos: str, node_resources: Iterable[str], numa: list[NUMANode], requests: Requests
) -> Fit:
    """Upstream's ``resourcesAvailableInAnyNUMANodes``."""
    on_node = set(node_resources)
    mask = _ALL_NUMA
    for name, wanted in requests.items():
        if wanted == 0:
            continue
        if name not in on_node:
            return Fit(-1, name)
        reported = False
        resource_mask = 0
        for cell in numa:
            available = cell.resources.get(name)
            if available is None:
                continue
            reported = True
            if is_resource_set_suitable(qos, name, wanted, available) and cell.numa_id < MAX_NUMA_ID:
                resource_mask |= 1 << cell.numa_id
        if not reported and is_host_level_resource(name):
            continue
        mask &= resource_mask
        if not mask:
            return Fit(-1, name)
    return Fit((mask & -mask).bit_length() - 1)


def _charge(numa: list[NUMANode], numa_id: int, qos: str, requests: Requests) -> str:
    """Takes a container's requests off the NUMA node it was placed on; returns an error, or ''."""
    for cell in numa:
        if cell.numa_id != numa_id:
            continue
        for name, wanted in requests.items():
            if qos != GUARANTEED and is_numa_affine_resource(name):
                continue
            if wanted == 0 or name not in cell.resources:
                continue
            left = cell.resources[name] - wanted
            if left < 0:
                return f'resource "{name}" request exceeds NUMA {numa_id} availability'
            cell.resources[name] = left
    return ""


@dataclass(frozen=True, slots=True)
class Misfit:
    """A rejection: upstream's message, and for explain what was short."""

    message: str
    detail: str
    error: bool = False


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the pod (pod scope) or each app container (container scope) would go: (who, NUMA id)."""

    numa_ids: tuple[tuple[str, int], ...]

    def __str__(self) -> str:
        return ", ".join(f"{who} on NUMA node-{numa_id}" for who, numa_id in self.numa_ids)


def node_resource_names(allocatable_scalar: Iterable[str]) -> list[str]:
    """The resources upstream finds on a node: cpu, memory, pods, ephemeral-storage and the scalar
    resources of its allocatable."""
    return [CPU, MEMORY, PODS, EPHEMERAL_STORAGE, *allocatable_scalar]


def judge(
    conf: TopologyManagerConfig,
    numa: list[NUMANode],
    pod: PodRequests,
    node_resources: list[str],
) -> Misfit | Placement | None:
    """Upstream's Filter body once it has the NRT: None when no handler applies (the policy is not
    single-numa-node), a Placement when the pod fits, a Misfit when it does not. ``numa`` is left as it
    was (container scope charges a copy)."""
    if conf.policy != POLICY_SINGLE_NUMA_NODE:
        return None
    if conf.scope == SCOPE_POD:
        fit = fit_in_one_numa_node(pod.qos, node_resources, numa, pod.effective)
        if not fit.fits:
            return Misfit(CANNOT_ALIGN_POD, _short(fit.resource, pod.effective, numa, "pod", node_resources))
        return Placement((("pod", fit.numa_id),))
    if conf.scope != SCOPE_CONTAINER:
        return None
    for container in pod.init_containers:
        fit = fit_in_one_numa_node(pod.qos, node_resources, numa, container.requests)
        if not fit.fits:
            who = f"{container.kind} container {container.name}"
            return Misfit(
                cannot_align_container(container.kind),
                _short(fit.resource, container.requests, numa, who, node_resources),
            )
    numa = [cell.copy() for cell in numa]
    placed: list[tuple[str, int]] = []
    for container in pod.containers:
        fit = fit_in_one_numa_node(pod.qos, node_resources, numa, container.requests)
        if not fit.fits:
            who = f"container {container.name}"
            return Misfit(
                cannot_align_container(APP),
                _short(fit.resource, container.requests, numa, who, node_resources),
            )
        error = _charge(numa, fit.numa_id, pod.qos, container.requests)
        if error:
            return Misfit("inconsistent resource accounting", error, error=True)
        placed.append((f"container {container.name}", fit.numa_id))
    return Placement(tuple(placed))


def _short(
    resource: str, requests: Mapping[str, Fraction], numa: list[NUMANode], who: str, node_resources: list[str]
) -> str:
    wanted = _fmt(requests.get(resource, Fraction(0)))
    if resource not in node_resources:
        return f"{who}: {resource} {wanted}: the node has no {resource}"
    cells = [f"node-{c.numa_id} has {_fmt(c.resources[resource])}" for c in numa if resource in c.resources]
    where = ", ".join(cells) if cells else "no NUMA node reports it"
    return f"{who}: {resource} {wanted} fits no single NUMA node ({where})"


def _fmt(amount: Fraction) -> str:
    if amount.denominator == 1:
        return str(amount.numerator)
    milli = amount * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    return str(float(amount))
