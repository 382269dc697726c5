"""A pod's QoS class (``pkg/apis/core/v1/helper/qos/qos.go``, Kubernetes v1.34, which
scheduler-plugins v0.34.7 builds on; PodLevelResources beta and on).

``status.qosClass`` (set by the API server at creation) wins; otherwise the class is computed: no cpu or
memory requested or limited anywhere is BestEffort; Guaranteed needs every container (init containers
included) to limit both cpu and memory with requests equal to the summed limits; anything else is
Burstable. With pod-level ``spec.resources`` those replace the containers' (PodLevelResources).
Only cpu and memory count, and only positive quantities.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from scheduler.framework.objects import pod_spec, pod_status, resources_of
from scheduler.framework.resources import CPU, MEMORY, parse_resource_list

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"

_QOS_RESOURCES = (CPU, MEMORY)


def _add_positive(total: dict[str, Fraction], listed: Mapping[str, Any] | None) -> set[str]:
    """Adds the positive cpu/memory amounts of ``listed`` to ``total``; returns the names seen."""
    seen: set[str] = set()
    for name, amount in parse_resource_list(listed).items():
        if name in _QOS_RESOURCES and amount > 0:
            total[name] = total.get(name, Fraction(0)) + amount
            seen.add(name)
    return seen


def pod_qos(pod: Mapping[str, Any]) -> str:
    """Upstream ``GetPodQOS``. Raises QuantityError on an unreadable quantity."""
    given = pod_status(pod).get("qosClass")
    if given:
        return str(given)
    spec = pod_spec(pod)
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    pod_level = spec.get("resources")
    if pod_level is not None:
        _add_positive(requests, pod_level.get("requests"))
        if pod_level.get("limits") and _add_positive(limits, pod_level.get("limits")) != set(_QOS_RESOURCES):
            guaranteed = False
    else:
        for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
            resources = resources_of(container)
            _add_positive(requests, resources.get("requests"))
            if _add_positive(limits, resources.get("limits")) != set(_QOS_RESOURCES):
                guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    equal = all(limits.get(name) == amount for name, amount in requests.items())
    if guaranteed and equal and len(requests) == len(limits):
        return GUARANTEED
    return BURSTABLE
