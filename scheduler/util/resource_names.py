"""Resource name classes from ``pkg/apis/core/v1/helper/helpers.go`` and ``pkg/scheduler/util``."""

from __future__ import annotations

RESOURCE_DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
RESOURCE_REQUESTS_PREFIX = "requests."
HUGE_PAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
# The implicit extended resource of every DeviceClass (resourceapi.ResourceDeviceClassPrefix,
# DRAExtendedResource): this prefix and the class name.
IMPLICIT_EXTENDED_PREFIX = "deviceclass.resource.kubernetes.io/"


def is_prefixed_native_resource(name: str) -> bool:
    return RESOURCE_DEFAULT_NAMESPACE_PREFIX in name


def is_native_resource(name: str) -> bool:
    return "/" not in name or is_prefixed_native_resource(name)


def is_extended_resource_name(name: str) -> bool:
    """A resource outside the ``kubernetes.io/`` namespace, like ``nvidia.com/gpu``."""
    return not is_native_resource(name) and not name.startswith(RESOURCE_REQUESTS_PREFIX)


def is_scalar_resource_name(name: str) -> bool:
    """Extended resources, hugepages, prefixed native and attachable-volume resources."""
    return (
        is_extended_resource_name(name)
        or name.startswith(HUGE_PAGES_PREFIX)
        or is_prefixed_native_resource(name)
        or name.startswith(ATTACHABLE_VOLUMES_PREFIX)
    )
