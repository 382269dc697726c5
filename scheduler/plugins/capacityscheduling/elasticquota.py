"""ElasticQuota bookkeeping (scheduler-plugins v0.34.7 ``pkg/capacityscheduling/elasticquota.go``, and
``computePodResourceRequest`` of ``capacity_scheduling.go``).

Amounts are upstream's ``framework.Resource``: cpu in millicores, memory, ephemeral-storage and pods in
units, and scalar resources (extended, hugepages, ``kubernetes.io/``-prefixed, attachable volumes) by
name; any other resource name in a quota or a pod (``foo``) is not counted at all, as upstream's
``NewResource`` drops it. Sums are int64 and wrap around as Go's do.

A quota without ``spec.min`` has min 0 for cpu, memory and ephemeral-storage; without ``spec.max``,
max "unbounded" (MaxInt64) for those three. A resource missing from a given ``min``/``max`` counts 0
for cpu/memory/ephemeral-storage/pods and the bound (0 for min, unbounded for max) for scalars.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.objects import name_of, namespace_of, pod_spec, resources_of, uid_of
from scheduler.framework.quantity import QuantityError, milli_value, value
from scheduler.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from scheduler.util.resource_names import is_scalar_resource_name

UPPER_BOUND_OF_MAX = 2**63 - 1
LOWER_BOUND_OF_MIN = 0
_INT64_MIN = -(2**63)


def wrap(x: int) -> int:
    """Go's int64 arithmetic wraps around."""
    return (x - _INT64_MIN) % 2**64 + _INT64_MIN


@dataclass(slots=True)
class Amounts:
    """Upstream's ``framework.Resource`` as the quota code uses it."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    def clone(self) -> Amounts:
        return Amounts(
            self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar)
        )

    def add(self, other: Amounts) -> None:
        self.milli_cpu = wrap(self.milli_cpu + other.milli_cpu)
        self.memory = wrap(self.memory + other.memory)
        self.ephemeral_storage = wrap(self.ephemeral_storage + other.ephemeral_storage)
        self.allowed_pod_number = wrap(self.allowed_pod_number + other.allowed_pod_number)
        for name, amount in other.scalar.items():
            self.scalar[name] = wrap(self.scalar.get(name, 0) + amount)

    def subtract(self, other: Amounts) -> None:
        self.milli_cpu = wrap(self.milli_cpu - other.milli_cpu)
        self.memory = wrap(self.memory - other.memory)
        self.ephemeral_storage = wrap(self.ephemeral_storage - other.ephemeral_storage)
        self.allowed_pod_number = wrap(self.allowed_pod_number - other.allowed_pod_number)
        for name, amount in other.scalar.items():
            self.scalar[name] = wrap(self.scalar.get(name, 0) - amount)

    def as_list(self) -> dict[str, int]:
        """Non-zero amounts by resource name (cpu in millicores): for messages and metrics."""
        out = {
            CPU: self.milli_cpu,
            MEMORY: self.memory,
            EPHEMERAL_STORAGE: self.ephemeral_storage,
            PODS: self.allowed_pod_number,
            **self.scalar,
        }
        return {name: amount for name, amount in out.items() if amount}


def _add_list(out: Amounts, resources: Mapping[str, Any], *, take_max: bool = False) -> None:
    """``Resource.Add`` (or ``SetMaxResource`` with ``take_max``) of a ResourceList."""
    for name, quantity in resources.items():
        if name == CPU:
            amount = milli_value(quantity)
            out.milli_cpu = max(out.milli_cpu, amount) if take_max else wrap(out.milli_cpu + amount)
        elif name == MEMORY:
            amount = value(quantity)
            out.memory = max(out.memory, amount) if take_max else wrap(out.memory + amount)
        elif name == EPHEMERAL_STORAGE:
            amount = value(quantity)
            out.ephemeral_storage = (
                max(out.ephemeral_storage, amount) if take_max else wrap(out.ephemeral_storage + amount)
            )
        elif name == PODS:
            # SetMaxResource ignores pods; Add counts them.
            if not take_max:
                out.allowed_pod_number = wrap(out.allowed_pod_number + value(quantity))
        elif is_scalar_resource_name(name):
            amount = value(quantity)
            current = out.scalar.get(name, 0)
            out.scalar[name] = max(current, amount) if take_max else wrap(current + amount)


def amounts_of(resources: Mapping[str, Any] | None) -> Amounts:
    """``framework.NewResource(list)``. Raises QuantityError on an unreadable quantity."""
    out = Amounts()
    if resources:
        _add_list(out, resources)
    return out


def _bound_list(bound: int) -> Amounts:
    """``makeResourceListForBound``: cpu (in millicores), memory and ephemeral-storage at ``bound``."""
    return Amounts(milli_cpu=bound, memory=bound, ephemeral_storage=bound)


def pod_request(pod: Mapping[str, Any]) -> Amounts:
    """``computePodResourceRequest``: the containers' requests summed, raised to any init container's
    (each resource on its own), plus the overhead. No defaults, no pod-level requests, no sidecars."""
    spec = pod_spec(pod)
    out = Amounts()
    for container in spec.get("containers") or ():
        _add_list(out, resources_of(container).get("requests") or {})
    for container in spec.get("initContainers") or ():
        _add_list(out, resources_of(container).get("requests") or {}, take_max=True)
    overhead = spec.get("overhead")
    if overhead:
        _add_list(out, overhead)
    return out


def cmp2(x1: Amounts, x2: Amounts, y: Amounts, bound: int) -> bool:
    """Whether ``x1 + x2`` exceeds ``y`` in any resource (scalars of ``x1`` only; a scalar ``y`` lacks
    compares with ``bound``)."""
    if wrap(x1.milli_cpu + x2.milli_cpu) > y.milli_cpu:
        return True
    if wrap(x1.memory + x2.memory) > y.memory:
        return True
    if wrap(x1.ephemeral_storage + x2.ephemeral_storage) > y.ephemeral_storage:
        return True
    if wrap(x1.allowed_pod_number + x2.allowed_pod_number) > y.allowed_pod_number:
        return True
    for name, amount in x1.scalar.items():
        limit = y.scalar.get(name, bound)
        if wrap(amount + x2.scalar.get(name, 0)) > limit:
            return True
    return False


def cmp(x: Amounts, y: Amounts, bound: int) -> bool:
    return cmp2(x, Amounts(), y, bound)


class ElasticQuotaInfo:
    """One namespace's quota: min, max, what its counted pods use, and which pods those are."""

    __slots__ = ("max", "min", "namespace", "pods", "used")

    def __init__(
        self,
        namespace: str,
        min_list: Mapping[str, Any] | None,
        max_list: Mapping[str, Any] | None,
        used: Amounts | None = None,
    ) -> None:
        self.namespace = namespace
        self.pods: set[str] = set()
        self.min = _bound_list(LOWER_BOUND_OF_MIN) if min_list is None else amounts_of(min_list)
        self.max = _bound_list(UPPER_BOUND_OF_MAX) if max_list is None else amounts_of(max_list)
        self.used = used or Amounts()

    def clone(self) -> ElasticQuotaInfo:
        out = ElasticQuotaInfo.__new__(ElasticQuotaInfo)
        out.namespace = self.namespace
        out.pods = set(self.pods)
        out.min = self.min.clone()
        out.max = self.max.clone()
        out.used = self.used.clone()
        return out

    def used_over_min_with(self, request: Amounts) -> bool:
        return cmp2(request, self.used, self.min, LOWER_BOUND_OF_MIN)

    def used_over_max_with(self, request: Amounts) -> bool:
        return cmp2(request, self.used, self.max, UPPER_BOUND_OF_MAX)

    def used_over_min(self) -> bool:
        return cmp(self.used, self.min, LOWER_BOUND_OF_MIN)

    def add_pod_if_not_present(self, key: str, request: Amounts) -> None:
        if key in self.pods:
            return
        self.pods.add(key)
        self.used.add(request)

    def delete_pod_if_present(self, key: str, request: Amounts) -> None:
        if key not in self.pods:
            return
        self.pods.discard(key)
        self.used.subtract(request)


class ElasticQuotaInfos(dict[str, ElasticQuotaInfo]):
    """Namespace -> its quota (one ElasticQuota per namespace, as upstream)."""

    def clone(self) -> ElasticQuotaInfos:
        return ElasticQuotaInfos({ns: info.clone() for ns, info in self.items()})

    def aggregated_used_over_min_with(self, request: Amounts) -> bool:
        """Whether the sum of every quota's used, plus ``request``, exceeds the sum of their min."""
        used = Amounts()
        total_min = Amounts()
        for info in self.values():
            used.add(info.used)
            total_min.add(info.min)
        used.add(request)
        return cmp(used, total_min, LOWER_BOUND_OF_MIN)


def pod_key(pod: Mapping[str, Any]) -> str:
    """Upstream's ``GetPodKey``: the pod's uid."""
    return uid_of(pod) or f"{namespace_of(pod)}/{name_of(pod)}"


def readable_quota(spec: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """``spec.min`` and ``spec.max`` (None when absent). Raises QuantityError on an unreadable amount."""
    min_list = spec.get("min")
    max_list = spec.get("max")
    for listed in (min_list, max_list):
        if listed is not None:
            amounts_of(listed)
    return min_list, max_list


def total_request(pods: Iterable[Mapping[str, Any]]) -> Amounts:
    out = Amounts()
    for pod in pods:
        out.add(pod_request(pod))
    return out


__all__ = [
    "LOWER_BOUND_OF_MIN",
    "UPPER_BOUND_OF_MAX",
    "Amounts",
    "ElasticQuotaInfo",
    "ElasticQuotaInfos",
    "QuantityError",
    "amounts_of",
    "cmp",
    "cmp2",
    "pod_key",
    "pod_request",
    "readable_quota",
    "total_request",
]
