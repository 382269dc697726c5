"""Typed views of the ``resource.k8s.io/v1`` objects DynamicResources reads: ResourceClaim (and its
template), ResourceSlice and DeviceClass.

Same rules as ``scheduler.framework.objects``: ``TypedDict`` shapes over the raw JSON dicts, all fields
optional, read-only, and accessors that read a missing field and an explicit null alike as empty. The
allocator runs per node and per device, so the accessors that reach two or three levels down do the
lookups inline rather than through each other: one call per read, never a chain of calls.
"""

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from scheduler.framework.objects import ObjectMeta

__all__ = [
    "AllocationResult",
    "CELDeviceSelector",
    "Device",
    "DeviceAllocationResult",
    "DeviceClaim",
    "DeviceClass",
    "DeviceClassSpec",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSelector",
    "DeviceSubRequest",
    "ExactDeviceRequest",
    "ResourceClaim",
    "ResourceClaimConsumerReference",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
    "ResourcePool",
    "ResourceSlice",
    "ResourceSliceSpec",
    "allocation_results",
    "claim_allocation",
    "claim_devices",
    "claim_requests",
    "claim_reserved_for",
    "claim_spec",
    "claim_status",
    "device_class_spec",
    "selector_expression",
    "slice_pool",
    "slice_spec",
]


class CELDeviceSelector(TypedDict, total=False):
    expression: str


class DeviceSelector(TypedDict, total=False):
    cel: CELDeviceSelector


class ExactDeviceRequest(TypedDict, total=False):
    deviceClassName: str
    selectors: list[DeviceSelector]
    allocationMode: str
    count: int
    adminAccess: bool
    tolerations: list[dict[str, Any]]
    capacity: dict[str, Any]


class DeviceSubRequest(TypedDict, total=False):
    name: str
    deviceClassName: str
    selectors: list[DeviceSelector]
    allocationMode: str
    count: int
    tolerations: list[dict[str, Any]]
    capacity: dict[str, Any]


class DeviceRequest(TypedDict, total=False):
    name: str
    exactly: ExactDeviceRequest
    firstAvailable: list[DeviceSubRequest]


class DeviceClaim(TypedDict, total=False):
    requests: list[DeviceRequest]
    constraints: list[dict[str, Any]]
    config: list[dict[str, Any]]


class ResourceClaimSpec(TypedDict, total=False):
    devices: DeviceClaim


class DeviceRequestAllocationResult(TypedDict, total=False):
    request: str
    driver: str
    pool: str
    device: str
    adminAccess: bool
    tolerations: list[dict[str, Any]]
    bindingConditions: list[str]
    bindingFailureConditions: list[str]


class DeviceAllocationResult(TypedDict, total=False):
    results: list[DeviceRequestAllocationResult]
    config: list[dict[str, Any]]


class AllocationResult(TypedDict, total=False):
    devices: DeviceAllocationResult
    nodeSelector: dict[str, Any]
    allocationTimestamp: str


class ResourceClaimConsumerReference(TypedDict, total=False):
    apiGroup: str
    resource: str
    name: str
    uid: str


class ResourceClaimStatus(TypedDict, total=False):
    allocation: AllocationResult
    reservedFor: list[ResourceClaimConsumerReference]
    devices: list[dict[str, Any]]


class ResourceClaim(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: ResourceClaimSpec
    status: ResourceClaimStatus


class ResourceClaimTemplateSpec(TypedDict, total=False):
    metadata: ObjectMeta
    spec: ResourceClaimSpec


class ResourceClaimTemplate(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: ResourceClaimTemplateSpec


class ResourcePool(TypedDict, total=False):
    name: str
    generation: int
    resourceSliceCount: int


class Device(TypedDict, total=False):
    name: str
    attributes: dict[str, dict[str, Any]]
    capacity: dict[str, dict[str, Any]]
    taints: list[dict[str, Any]]
    nodeName: str
    nodeSelector: dict[str, Any]
    allNodes: bool
    consumesCounters: list[dict[str, Any]]
    bindingConditions: list[str]


class ResourceSliceSpec(TypedDict, total=False):
    driver: str
    pool: ResourcePool
    nodeName: str
    nodeSelector: dict[str, Any]
    allNodes: bool
    perDeviceNodeSelection: bool
    devices: list[Device]
    sharedCounters: list[dict[str, Any]]


class ResourceSlice(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: ResourceSliceSpec


class DeviceClassSpec(TypedDict, total=False):
    selectors: list[DeviceSelector]
    config: list[dict[str, Any]]
    extendedResourceName: str


class DeviceClass(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: DeviceClassSpec


# --- ResourceClaim --------------------------------------------------------------------------------


def claim_spec(claim: Mapping[str, Any]) -> ResourceClaimSpec:
    """A claim's ``spec``, or ``{}`` when missing or null."""
    return claim.get("spec") or ResourceClaimSpec()


def claim_status(claim: Mapping[str, Any]) -> ResourceClaimStatus:
    """A claim's ``status``, or ``{}`` when missing or null."""
    return claim.get("status") or ResourceClaimStatus()


def claim_devices(claim: Mapping[str, Any]) -> DeviceClaim:
    """``spec.devices``, or ``{}`` when it or the spec is missing or null."""
    return (claim.get("spec") or {}).get("devices") or DeviceClaim()


def claim_requests(claim: Mapping[str, Any]) -> Sequence[DeviceRequest]:
    """``spec.devices.requests``, or ``()`` when any level is missing or null."""
    return ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()


def claim_allocation(claim: Mapping[str, Any]) -> AllocationResult | None:
    """``status.allocation``, or None when the claim is not allocated (missing, null or not an object)."""
    allocation: AllocationResult | None = (claim.get("status") or {}).get("allocation")
    return allocation if isinstance(allocation, Mapping) else None


def claim_reserved_for(claim: Mapping[str, Any]) -> Sequence[ResourceClaimConsumerReference]:
    """``status.reservedFor``, or ``()`` when missing or null."""
    return (claim.get("status") or {}).get("reservedFor") or ()


def allocation_results(allocation: Mapping[str, Any]) -> Sequence[DeviceRequestAllocationResult]:
    """An allocation's ``devices.results``, or ``()`` when missing or null."""
    return (allocation.get("devices") or {}).get("results") or ()


def selector_expression(selector: Mapping[str, Any]) -> str:
    """A device selector's ``cel.expression``, or ``""`` when it or ``cel`` is missing or null (a
    selector of a kind this build does not know)."""
    return (selector.get("cel") or {}).get("expression") or ""


# --- ResourceSlice and DeviceClass ----------------------------------------------------------------


def slice_spec(slice_: Mapping[str, Any]) -> ResourceSliceSpec:
    """A slice's ``spec``, or ``{}`` when missing or null."""
    return slice_.get("spec") or ResourceSliceSpec()


def slice_pool(slice_: Mapping[str, Any]) -> ResourcePool:
    """A slice's ``spec.pool``, or ``{}`` when it or the spec is missing or null."""
    return (slice_.get("spec") or {}).get("pool") or ResourcePool()


def device_class_spec(device_class: Mapping[str, Any]) -> DeviceClassSpec:
    """A DeviceClass's ``spec``, or ``{}`` when missing or null."""
    return device_class.get("spec") or DeviceClassSpec()
