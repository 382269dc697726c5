"""Whether a pod asks for resources the kubelet pins to NUMA nodes (scheduler-plugins v0.34.7
``pkg/noderesourcetopology/resourcerequests/exclusive.go`` ``AreExclusiveForPod``): any non-native
resource; or, for a Guaranteed pod, whole cpus, memory or hugepages (the managers allocate them
exclusively). Read by the overreserve cache's foreign-pod detection and its resync."""

from __future__ import annotations

from fractions import Fraction

from scheduler.framework.resources import CPU, MEMORY
from scheduler.plugins.helper.qos import GUARANTEED
from scheduler.plugins.noderesourcetopology.requests import PodRequests
from scheduler.util.resource_names import is_native_resource

HUGEPAGES_PREFIX = "hugepages-"


def _is_exclusive(qos: str, name: str, amount: Fraction) -> bool:
    if not is_native_resource(name):
        return True
    if qos != GUARANTEED:
        return False
    if name == CPU:
        # A whole, positive number of cpus (upstream: Value()*1000 == MilliValue(), Value() > 0).
        return amount > 0 and amount.denominator == 1
    if name == MEMORY or name.startswith(HUGEPAGES_PREFIX):
        # Quantity.Value() rounds up: any positive amount.
        return amount > 0
    return False


def has_exclusive_resources(pod: PodRequests) -> bool:
    return any(
        _is_exclusive(pod.qos, name, amount)
        for container in pod.all_containers
        for name, amount in container.requests.items()
    )
