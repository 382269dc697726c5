"""Resource vectors and a pod's effective requests.

Request arithmetic follows ``k8s.io/component-helpers/resource/helpers.go`` (PodRequests): regular
containers add up; restartable init containers (sidecars) run alongside them; each ordinary init
container runs alone but next to the sidecars started before it; pod-level ``spec.resources`` replace
the container sum for the resources they name; ``spec.overhead`` is added last. The non-zero variant
charges 100m CPU / 200Mi memory for containers that request none, as ``pkg/scheduler/util``'s
``GetNonzeroRequests`` does, so that many best-effort pods do not pile onto one node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.quantity import QuantityError, milli_value, value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


@dataclass(slots=True)
class Resource:
    """Upstream's framework.Resource: CPU in millicores, everything else in whole units."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, resources: Mapping[str, Any] | None) -> Resource:
        """From a ResourceList (``{"cpu": "500m", ...}``). Raises QuantityError naming the resource."""
        out = cls()
        if resources:
            for name, quantity in resources.items():
                out.add_quantity(name, quantity)
        return out

    def add_quantity(self, name: str, quantity: Any) -> None:
        try:
            if name == CPU:
                self.milli_cpu += milli_value(quantity)
            elif name == MEMORY:
                self.memory += value(quantity)
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage += value(quantity)
            elif name == PODS:
                self.allowed_pod_number += value(quantity)
            else:
                self.scalar[name] = self.scalar.get(name, 0) + value(quantity)
        except QuantityError as err:
            raise QuantityError(f"resource {name!r}: {err}") from None

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def names(self) -> Iterable[str]:
        yield CPU
        yield MEMORY
        yield EPHEMERAL_STORAGE
        yield from self.scalar

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + amount

    def subtract(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) - amount

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)
        for name, amount in other.scalar.items():
            self.scalar[name] = max(self.scalar.get(name, 0), amount)

    def copy(self) -> Resource:
        return Resource(
            self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar)
        )

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or any(self.scalar.values()))


def _container_requests(container: Mapping[str, Any], non_zero: bool) -> Resource:
    requests = (container.get("resources") or {}).get("requests") or {}
    out = Resource.from_list(requests)
    if non_zero:
        if CPU not in requests:
            out.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in requests:
            out.memory = DEFAULT_MEMORY_REQUEST
    return out


def pod_requests(spec: Mapping[str, Any], *, non_zero: bool = False) -> Resource:
    """The resources a pod needs on a node (see the module docstring for the rules)."""
    total = Resource()
    for container in spec.get("containers") or ():
        total.add(_container_requests(container, non_zero))

    sidecars = Resource()
    init_peak = Resource()
    for container in spec.get("initContainers") or ():
        requests = _container_requests(container, non_zero)
        if container.get("restartPolicy") == "Always":
            total.add(requests)
            sidecars.add(requests)
            running = sidecars.copy()
        else:
            running = requests
            running.add(sidecars)
        init_peak.set_max(running)
    total.set_max(init_peak)

    pod_level = (spec.get("resources") or {}).get("requests") or {}
    if pod_level:
        # Pod-level requests (PodLevelResources) win for cpu and memory, the resources they support.
        overriding = Resource.from_list({k: v for k, v in pod_level.items() if k in (CPU, MEMORY)})
        if CPU in pod_level:
            total.milli_cpu = overriding.milli_cpu
        if MEMORY in pod_level:
            total.memory = overriding.memory

    overhead = spec.get("overhead")
    if overhead:
        total.add(Resource.from_list(overhead))
    return total


def pod_requests_and_non_zero(spec: Mapping[str, Any]) -> tuple[Resource, Resource]:
    """``(pod_requests(spec), pod_requests(spec, non_zero=True))``, in one pass for the usual pod.

    Without init containers, pod-level resources or overhead, both are plain sums over the
    containers, and the non-zero one differs only by the defaults of containers that omit cpu or
    memory. Parsed on every new pod version, so it is worth the shortcut.
    """
    if spec.get("initContainers") or spec.get("overhead") or (spec.get("resources") or {}).get("requests"):
        return pod_requests(spec), pod_requests(spec, non_zero=True)
    total = Resource()
    missing_cpu = missing_memory = 0
    for container in spec.get("containers") or ():
        requests = (container.get("resources") or {}).get("requests") or {}
        for name, quantity in requests.items():
            total.add_quantity(name, quantity)
        if CPU not in requests:
            missing_cpu += 1
        if MEMORY not in requests:
            missing_memory += 1
    non_zero = total.copy()
    non_zero.milli_cpu += missing_cpu * DEFAULT_MILLI_CPU_REQUEST
    non_zero.memory += missing_memory * DEFAULT_MEMORY_REQUEST
    return total, non_zero
