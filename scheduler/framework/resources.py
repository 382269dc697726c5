"""Resource vectors and a pod's requests: the program's one ``PodRequests``.

Request arithmetic follows ``k8s.io/component-helpers/resource/helpers.go`` v0.37.2 (``PodRequests`` with
the options kube-scheduler v1.37.2 passes, its feature gates at their defaults): regular containers add up;
restartable init containers (sidecars) run alongside them; each ordinary init container runs alone
but next to the sidecars started before it; pod-level ``spec.resources.requests`` replace the container
sum for the resources they support (cpu, memory, ``hugepages-*``); ``spec.overhead`` is added last.

In-place resize (InPlacePodVerticalScaling GA, InPlacePodLevelResourcesVerticalScaling beta and on):
the pod counts at max(spec, actuated, allocated) per resource, each of the three aggregated over the
containers by the rules above (max(actuated, allocated) when the resize is Infeasible). A container's
allocated requests are its status's ``allocatedResources`` (else its spec), its actuated ones its status's
``resources.requests`` (else allocated, else spec); when the pod's status carries both
``allocatedResources`` and ``resources.requests``, those pod-wide sums are used instead. Pod-level
requests with ``status.resources`` count at max(spec, actuated, allocated) too. (v0.36 took the maximum
per container, so a resize that moved CPU from one container to another counted twice.) Sums are exact
(Fractions) and rounded up once at the end, as upstream sums Quantities before
``MilliValue()``/``Value()``.

The non-zero variant charges 100m CPU / 200Mi memory for containers that request none, as upstream's
``PodInfo.CalculateResource`` does, so that many best-effort pods do not pile onto one node; when
pod-level requests are set, only a resource missing at both levels gets the defaults.

The scheduling queue cannot import this package (imports flow scheduler -> scheduling_queue), so the
scheduler hands ``pod_request_amounts`` to the queue's constructor for its scale-down classification.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
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
                out.milli_cpu += _ceil_milli(amount)
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


def comparable_amounts(resource: Resource) -> tuple[int, int, int, int, tuple[tuple[str, int], ...]]:
    """Every amount of ``resource`` as one comparable value: an extended resource counted down to 0 (a
    pod added, then removed) is no resource, so two Resources holding the same amounts compare equal
    (the dataclass's own ``==`` tells them apart by that leftover key)."""
    scalar = tuple(sorted((name, amount) for name, amount in resource.scalar.items() if amount))
    return (
        resource.milli_cpu,
        resource.memory,
        resource.ephemeral_storage,
        resource.allowed_pod_number,
        scalar,
    )


def _ceil(amount: Fraction) -> int:
    return -((-amount.numerator) // amount.denominator)


def _ceil_milli(amount: Fraction) -> int:
    """``_ceil(amount * 1000)`` on the numerator: no intermediate Fraction (its operator checks the
    operand types against the numbers ABCs, once per resource of every parsed pod)."""
    return -((-amount.numerator * 1000) // amount.denominator)


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
        current = total.get(name)
        # A first amount is taken as it is: ``0 + Fraction`` goes through Fraction's reflected add
        # (an ABC check and a new Fraction), a cost every parsed pod paid once per resource.
        total[name] = amount if current is None else current + amount


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


def is_pod_level_resource(name: str) -> bool:
    """Upstream ``IsSupportedPodLevelResource``: cpu, memory and hugepages."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def pod_level_requests(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``spec.resources.requests`` when it names a supported resource (``IsPodLevelRequestsSet``)."""
    requests = resources_of(spec).get("requests")
    if requests and any(is_pod_level_resource(name) for name in requests):
        return requests
    return None


# Every field pod_request_amounts reads, besides the PodResizePending condition (is_resize_infeasible).
_REQUEST_SPEC_FIELDS = ("containers", "initContainers", "resources", "overhead")
_REQUEST_STATUS_FIELDS = ("containerStatuses", "initContainerStatuses", "resources", "allocatedResources")


def same_request_inputs(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when ``pod_request_amounts`` reads the same values from both pods, so their requests are
    equal without being computed. Most pod updates change nothing it reads (a bind sets spec.nodeName,
    the scheduler and kubelet write conditions), and the queue classifies every one of them.

    Compares the fields whole (in C); a pair that differs somewhere these requests do not look (a
    container's image, a container status's restart count) is answered False and computed instead."""
    spec_a, spec_b = pod_spec(a), pod_spec(b)
    for name in _REQUEST_SPEC_FIELDS:
        if spec_a.get(name) != spec_b.get(name):
            return False
    status_a, status_b = pod_status(a), pod_status(b)
    for name in _REQUEST_STATUS_FIELDS:
        if status_a.get(name) != status_b.get(name):
            return False
    return is_resize_infeasible(a) == is_resize_infeasible(b)


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
    total = _aggregate(spec, _spec_requests, {}, False, non_missing)
    status: Mapping[str, Any] = pod_status(pod) if use_status else {}
    if use_status:
        total = _with_status_resources(spec, status, total, is_resize_infeasible(pod), non_missing)

    level_requests = pod_level_requests(spec) if pod_level else None
    if level_requests is not None:
        effective = parse_resource_list(level_requests, "spec.resources.requests")
        status_resources = status.get("resources")
        if status_resources is not None:
            # Upstream's effectivePodLevelResources: the spec does not count while a resize is Infeasible.
            effective = _max(
                {} if is_resize_infeasible(pod) else effective,
                parse_resource_list(resources_of(status).get("requests"), "status.resources.requests"),
                parse_resource_list(status.get("allocatedResources"), "status.allocatedResources"),
            )
        for name, amount in effective.items():
            if is_pod_level_resource(name):
                total[name] = amount

    _add(total, parse_resource_list(spec.get("overhead"), "spec.overhead"))
    return total


# A container's requests from its spec and its status (None: none), given whether the resize is
# Infeasible (upstream's containerSpecRequests / containerAllocatedRequests / containerActuatedRequests).
_ContainerRequests = Callable[[Mapping[str, Any], Mapping[str, Any] | None, bool], Any]


def _spec_requests(container: Mapping[str, Any], _status: Mapping[str, Any] | None, _infeasible: bool) -> Any:
    return resources_of(container).get("requests")


def _allocated_requests(
    container: Mapping[str, Any], status: Mapping[str, Any] | None, infeasible: bool
) -> Any:
    if status is not None and status.get("allocatedResources") is not None:
        return status.get("allocatedResources")
    return None if infeasible else resources_of(container).get("requests")


def _actuated_requests(
    container: Mapping[str, Any], status: Mapping[str, Any] | None, infeasible: bool
) -> Any:
    if status is not None:
        actuated = resources_of(status).get("requests")
        if status.get("resources") is not None and actuated is not None:
            return actuated
        if status.get("allocatedResources") is not None:
            return status.get("allocatedResources")
    return None if infeasible else resources_of(container).get("requests")


def _aggregate(
    spec: Mapping[str, Any],
    requests_of: _ContainerRequests,
    statuses: Mapping[Any, Mapping[str, Any]],
    infeasible: bool,
    non_missing: Mapping[str, Fraction] | None,
) -> Amounts:
    """Upstream's aggregateContainerResourcesByFn: regular containers and sidecars add up; each ordinary
    init container runs beside the sidecars started before it; the pod needs the larger of the two."""

    def container_requests(container: Mapping[str, Any]) -> Amounts:
        requests = parse_resource_list(
            requests_of(container, statuses.get(container.get("name")), infeasible)
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
        _add(total, container_requests(container))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.get("initContainers") or ():
        requests = container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            running = dict(sidecars)
        else:
            running = dict(requests)
            _add(running, sidecars)
        _max_into(init_peak, running)
    _max_into(total, init_peak)
    return total


def _with_status_resources(
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    spec_requests: Amounts,
    infeasible: bool,
    non_missing: Mapping[str, Fraction] | None,
) -> Amounts:
    """Upstream's AggregateContainerRequests with UseStatusResources: the per-resource maximum of the
    spec, actuated and allocated aggregates (the spec left out while a resize is Infeasible)."""
    pod_allocated = status.get("allocatedResources")
    pod_actuated = resources_of(status).get("requests")
    if pod_allocated is not None and status.get("resources") is not None and pod_actuated is not None:
        # InPlacePodLevelResourcesVerticalScaling: the kubelet's pod-wide sums.
        allocated = parse_resource_list(pod_allocated, "status.allocatedResources")
        actuated = parse_resource_list(pod_actuated, "status.resources.requests")
    else:
        statuses: dict[Any, Mapping[str, Any]] = {}
        # Upstream's findContainerStatus: the first container status of that name, then init ones.
        for key in ("initContainerStatuses", "containerStatuses"):
            for container_status in reversed(status.get(key) or ()):
                statuses[container_status.get("name")] = container_status
        allocated = _aggregate(spec, _allocated_requests, statuses, infeasible, non_missing)
        actuated = _aggregate(spec, _actuated_requests, statuses, infeasible, non_missing)
    if infeasible:
        return _max(actuated, allocated)
    return _max(spec_requests, actuated, allocated)


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
    """The pod's status reports resources (in-place resize: actuated or allocated, for the pod or a
    container) or an Infeasible resize: requests read them."""
    status = pod.get("status")
    if not status:
        return False
    if status.get("resources") is not None or status.get("allocatedResources") is not None:
        return True
    for key in ("containerStatuses", "initContainerStatuses"):
        for container_status in status.get(key) or ():
            if (
                container_status.get("resources") is not None
                or container_status.get("allocatedResources") is not None
            ):
                return True
    return is_resize_infeasible(pod)


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
    containers = spec.get("containers")
    if type(containers) is list and len(containers) == 1:
        key = _one_container_key(containers[0])
        if key is not None:
            known = _ONE_CONTAINER.get(key)
            if known is None:
                known = _containers_sum(containers)
                if len(_ONE_CONTAINER) >= _ONE_CONTAINER_MAX:
                    _ONE_CONTAINER.clear()
                _ONE_CONTAINER[key] = known
            return known
    return _containers_sum(containers or ())


# The usual pod's (requests, non-zero requests) by its one container's requests, as written. Pods of
# one template differ in names and volumes, not in requests, and summing them (quantities to exact
# amounts, amounts to a Resource, the non-zero copy) was half of building each new pod's PodInfo.
# The two Resources are shared by every pod of those requests: PodInfo's are never written to (its
# copies for newer versions already share them). Keys hold only strings, so equal keys are equal
# requests (a tuple key would find 1, 1.0 and True equal). Cleared when full: a few keys are usual.
_ONE_CONTAINER: dict[tuple[tuple[str, str], ...], tuple[Resource, Resource]] = {}
_ONE_CONTAINER_MAX = 1024


def _one_container_key(container: Any) -> tuple[tuple[str, str], ...] | None:
    """The container's ``resources.requests`` as a key, or None when it is not a map of strings
    (no requests at all, or a malformed value left to ``_containers_sum`` and its errors)."""
    if type(container) is not dict:
        return None
    resources = container.get("resources")
    requests = resources.get("requests") if type(resources) is dict else None
    if type(requests) is not dict:
        return None
    key = tuple(requests.items())
    for name, quantity in key:
        if type(name) is not str or type(quantity) is not str:
            return None
    return key


def _containers_sum(containers: Iterable[Any]) -> tuple[Resource, Resource]:
    """``pod_requests_and_non_zero`` of a pod whose requests are the plain sum of its containers'."""
    total: Amounts = {}
    missing_cpu = missing_memory = 0
    for container in containers:
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
