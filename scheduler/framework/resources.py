"""Resource vectors and a pod's requests: the program's one ``PodRequests``.

Request arithmetic follows ``k8s.io/component-helpers/resource/helpers.go`` (``PodRequests`` with the
options kube-scheduler v1.36 passes, its feature gates at their defaults): regular containers add up;
restartable init containers (sidecars) run alongside them; each ordinary init container runs alone
but next to the sidecars started before it; pod-level ``spec.resources.requests`` replace the container
sum for the resources they support (cpu, memory, ``hugepages-*``); ``spec.overhead`` is added last.

In-place resize (InPlacePodVerticalScaling GA, InPlacePodLevelResourcesVerticalScaling beta and on):
a container with ``status.containerStatuses[].resources`` counts at max(spec, actuated, allocated) per
resource (max(actuated, allocated) when the resize is Infeasible); so do pod-level requests with
``status.resources`` / ``status.allocatedResources``. Sums are exact (Fractions) and rounded up once
at the end, as upstream sums Quantities before ``MilliValue()``/``Value()``.

The non-zero variant charges 100m CPU / 200Mi memory for containers that request none, as upstream's
``PodInfo.CalculateResource`` does, so that many best-effort pods do not pile onto one node; when
pod-level requests are set, only a resource missing at both levels gets the defaults.

The scheduling queue cannot import this package (imports flow scheduler -> scheduling_queue), so the
scheduler hands ``pod_request_amounts`` to the queue's constructor for its scale-down classification.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler.framework.objects import pod_spec, pod_status, resources_of
from scheduler.framework.quantity import QuantityError, milli_value, parse_quantity, value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

HUGEPAGES_PREFIX = "hugepages-"

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

POD_RESIZE_PENDING = "PodResizePending"
REASON_INFEASIBLE = "Infeasible"

# An exact ResourceList: resource name -> quantity.
Amounts = dict[str, Fraction]

NON_ZERO_DEFAULTS: Mapping[str, Fraction] = {
    CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}


@dataclass(slots=True)
class Resource:
    """Upstream's framework.Resource: CPU in millicores, everything else in whole units."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_amounts(cls, amounts: Mapping[str, Fraction]) -> Resource:
        """From exact amounts, rounded up as upstream's ``Resource.Add(ResourceList)``."""
        out = cls()
        for name, amount in amounts.items():
            if name == CPU:
                out.milli_cpu += _ceil(amount * 1000)
            elif name == MEMORY:
                out.memory += _ceil(amount)
            elif name == EPHEMERAL_STORAGE:
                out.ephemeral_storage += _ceil(amount)
            elif name == PODS:
                out.allowed_pod_number += _ceil(amount)
            else:
                out.scalar[name] = out.scalar.get(name, 0) + _ceil(amount)
        return out

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


def _ceil(amount: Fraction) -> int:
    return -((-amount.numerator) // amount.denominator)


def parse_resource_list(raw: Any, what: str = "") -> Amounts:
    """A ResourceList's exact amounts. Raises QuantityError naming the resource (and ``what``)."""
    out: Amounts = {}
    if not raw:
        return out
    if not isinstance(raw, Mapping):
        raise QuantityError(f"{what or 'resources'}: must be a map of quantities")
    for name, quantity in raw.items():
        try:
            out[name] = parse_quantity(quantity)
        except QuantityError as err:
            raise QuantityError(f"resource {name!r}: {err}") from None
        except TypeError:
            raise QuantityError(f"resource {name!r}: quantity {quantity!r} is not a string") from None
    return out


def _add(total: Amounts, other: Mapping[str, Fraction]) -> None:
    for name, amount in other.items():
        total[name] = total.get(name, 0) + amount


def _max_into(total: Amounts, other: Mapping[str, Fraction]) -> None:
    for name, amount in other.items():
        current = total.get(name)
        if current is None or amount > current:
            total[name] = amount


def _max(*lists: Mapping[str, Fraction]) -> Amounts:
    out: Amounts = {}
    for amounts in lists:
        _max_into(out, amounts)
    return out


def is_resize_infeasible(pod: Mapping[str, Any]) -> bool:
    """Upstream ``IsPodResizeInfeasible``: the PodResizePending condition says Infeasible."""
    for condition in pod_status(pod).get("conditions") or ():
        if condition.get("type") == POD_RESIZE_PENDING:
            return bool(condition.get("reason") == REASON_INFEASIBLE)
    return False


def _effective(spec: Amounts, actuated: Any, allocated: Any, infeasible: bool) -> Amounts:
    """Upstream ``determineEffectiveRequests``."""
    actuated_amounts = parse_resource_list(actuated, "status resources")
    allocated_amounts = parse_resource_list(allocated, "allocatedResources")
    if infeasible:
        return _max(actuated_amounts, allocated_amounts)
    return _max(spec, actuated_amounts, allocated_amounts)


def is_pod_level_resource(name: str) -> bool:
    """Upstream ``IsSupportedPodLevelResource``: cpu, memory and hugepages."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def pod_level_requests(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``spec.resources.requests`` when it names a supported resource (``IsPodLevelRequestsSet``)."""
    requests = resources_of(spec).get("requests")
    if requests and any(is_pod_level_resource(name) for name in requests):
        return requests
    return None


def pod_request_amounts(
    pod: Mapping[str, Any],
    *,
    non_missing: Mapping[str, Fraction] | None = None,
    use_status: bool = True,
    pod_level: bool = True,
) -> Amounts:
    """Upstream ``PodRequests(pod, {UseStatusResources, InPlacePodLevelResourcesVerticalScalingEnabled,
    NonMissingContainerRequests: non_missing, SkipPodLevelResources: not pod_level})``: exact amounts
    by resource name.

    Raises QuantityError (a ValueError) on an unreadable quantity.
    """
    spec = pod_spec(pod)
    status: Mapping[str, Any] = pod_status(pod) if use_status else {}
    statuses: dict[Any, Mapping[str, Any]] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for container_status in status.get(key) or ():
            statuses[container_status.get("name")] = container_status
    infeasible = bool(statuses) and is_resize_infeasible(pod)

    def container_requests(container: Mapping[str, Any], consider_status: bool) -> Amounts:
        requests = parse_resource_list(resources_of(container).get("requests"))
        if consider_status:
            container_status = statuses.get(container.get("name"))
            if container_status is not None and container_status.get("resources") is not None:
                requests = _effective(
                    requests,
                    resources_of(container_status).get("requests"),
                    container_status.get("allocatedResources"),
                    infeasible,
                )
        if non_missing:
            # Upstream applyNonMissing: a resource the container does not name gets the default;
            # one it names, even as zero, is left alone.
            requests = dict(requests)
            for name, amount in non_missing.items():
                if name not in requests:
                    requests[name] = amount
        return requests

    total: Amounts = {}
    for container in spec.get("containers") or ():
        _add(total, container_requests(container, bool(statuses)))

    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.get("initContainers") or ():
        sidecar = container.get("restartPolicy") == "Always"
        # Only sidecars keep running, so only their status reflects a resize.
        requests = container_requests(container, sidecar and bool(statuses))
        if sidecar:
            _add(total, requests)
            _add(sidecars, requests)
            running = dict(sidecars)
        else:
            running = dict(requests)
            _add(running, sidecars)
        _max_into(init_peak, running)
    _max_into(total, init_peak)

    level_requests = pod_level_requests(spec) if pod_level else None
    if level_requests is not None:
        spec_amounts = parse_resource_list(level_requests, "spec.resources.requests")
        effective: Amounts | None = None
        pod_status_resources = status.get("resources")
        if pod_status_resources is not None:
            effective = _effective(
                spec_amounts,
                pod_status_resources.get("requests"),
                status.get("allocatedResources"),
                is_resize_infeasible(pod),
            )
        for name, amount in spec_amounts.items():
            if is_pod_level_resource(name):
                # As upstream: with status resources, a resource absent from the effective list is 0.
                total[name] = amount if effective is None else effective.get(name, Fraction(0))

    _add(total, parse_resource_list(spec.get("overhead"), "spec.overhead"))
    return total


def non_missing_defaults(pod: Mapping[str, Any], requests: Mapping[str, Fraction]) -> Mapping[str, Fraction]:
    """Upstream ``getNonMissingContainerRequests``: without pod-level requests every container gets
    the defaults; with them, only a resource missing at both levels does."""
    if pod_level_requests(pod_spec(pod)) is None:
        return NON_ZERO_DEFAULTS
    return {name: amount for name, amount in NON_ZERO_DEFAULTS.items() if name not in requests}


def pod_requests(pod: Mapping[str, Any], *, non_zero: bool = False) -> Resource:
    """The resources a pod needs on a node (see the module docstring for the rules).

    ``non_zero``: with upstream's defaults for cpu/memory a container does not request, as
    ``PodInfo.CalculateResource`` counts them (pod-level aware).
    """
    amounts = pod_request_amounts(pod)
    if non_zero:
        defaults = non_missing_defaults(pod, amounts)
        if defaults:
            amounts = pod_request_amounts(pod, non_missing=defaults)
    return Resource.from_amounts(amounts)


def has_status_resources(pod: Mapping[str, Any]) -> bool:
    """The pod's status reports container resources (in-place resize): requests read them."""
    status = pod.get("status")
    if not status:
        return False
    if status.get("resources") is not None:
        return True
    for key in ("containerStatuses", "initContainerStatuses"):
        for container_status in status.get(key) or ():
            if container_status.get("resources") is not None:
                return True
    return False


def pod_requests_and_non_zero(pod: Mapping[str, Any]) -> tuple[Resource, Resource]:
    """``(pod_requests(pod), pod_requests(pod, non_zero=True))``, in one pass for the usual pod.

    Without init containers, pod-level resources, overhead or status resources, both are plain
    sums over the containers, and the non-zero one differs only by the defaults of containers that
    omit cpu or memory. Parsed on every new pod version, so it is worth the shortcut.
    """
    spec = pod_spec(pod)
    if (
        spec.get("initContainers")
        or spec.get("overhead")
        or resources_of(spec).get("requests")
        or has_status_resources(pod)
    ):
        amounts = pod_request_amounts(pod)
        requests = Resource.from_amounts(amounts)
        defaults = non_missing_defaults(pod, amounts)
        if not defaults:
            return requests, requests.copy()
        return requests, Resource.from_amounts(pod_request_amounts(pod, non_missing=defaults))
    total: Amounts = {}
    missing_cpu = missing_memory = 0
    for container in spec.get("containers") or ():
        requests_raw = resources_of(container).get("requests") or {}
        _add(total, parse_resource_list(requests_raw))
        if CPU not in requests_raw:
            missing_cpu += 1
        if MEMORY not in requests_raw:
            missing_memory += 1
    plain = Resource.from_amounts(total)
    non_zero = plain.copy()
    non_zero.milli_cpu += missing_cpu * DEFAULT_MILLI_CPU_REQUEST
    non_zero.memory += missing_memory * DEFAULT_MEMORY_REQUEST
    return plain, non_zero
