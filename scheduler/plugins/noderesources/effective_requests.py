"""A running pod's requests as upstream's ``PodRequests`` sees them with ``UseStatusResources``.

With in-place pod resize (InPlacePodVerticalScaling, GA in v1.35) a container holds the larger of
what its spec asks, what the kubelet actuated and what it allocated, until the resize completes; if
the resize is infeasible, the spec is ignored. Only the NodeResourcesFit scale-down hint needs this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.quantity import parse_quantity
from scheduler.framework.resources import Resource, pod_requests

POD_RESIZE_PENDING = "PodResizePending"
REASON_INFEASIBLE = "Infeasible"


def _is_resize_infeasible(pod: Mapping[str, Any]) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == POD_RESIZE_PENDING:
            return bool(condition.get("reason") == REASON_INFEASIBLE)
    return False


def _max_lists(*lists: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for resources in lists:
        for name, quantity in (resources or {}).items():
            if name not in out or parse_quantity(quantity) > parse_quantity(out[name]):
                out[name] = quantity
    return out


def effective_requests(pod: Mapping[str, Any]) -> Resource:
    """The pod's requests with each resized container at max(spec, actuated, allocated).

    Raises QuantityError (a ValueError) on an unreadable quantity.
    """
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = {
        s.get("name"): s
        for key in ("containerStatuses", "initContainerStatuses")
        for s in status.get(key) or ()
    }
    if not statuses:
        return pod_requests(spec)
    infeasible = _is_resize_infeasible(pod)

    def effective(container: Mapping[str, Any], consider_status: bool) -> Mapping[str, Any]:
        container_status = statuses.get(container.get("name")) if consider_status else None
        if container_status is None or container_status.get("resources") is None:
            return container
        actuated = (container_status.get("resources") or {}).get("requests")
        allocated = container_status.get("allocatedResources")
        spec_requests = None if infeasible else (container.get("resources") or {}).get("requests")
        resources = dict(container.get("resources") or {})
        resources["requests"] = _max_lists(spec_requests, actuated, allocated)
        return {**container, "resources": resources}

    new_spec = dict(spec)
    new_spec["containers"] = [effective(c, True) for c in spec.get("containers") or ()]
    new_spec["initContainers"] = [
        effective(c, c.get("restartPolicy") == "Always") for c in spec.get("initContainers") or ()
    ]
    return pod_requests(new_spec)
