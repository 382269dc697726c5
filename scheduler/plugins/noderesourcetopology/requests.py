"""What NodeResourceTopologyMatch reads of a pod, derived once per pod version: its QoS class, each
container's requests (exact), the pod's effective request, and whether it asks for a non-native
resource (scheduler-plugins v0.34.7 ``pkg/util/resource.go`` ``GetPodEffectiveRequest`` and
``pkg/noderesourcetopology/resourcerequests``).

The effective request is the larger, per resource, of the app containers' sum and the largest init
container request (sidecars count as init containers here), plus ``spec.overhead``; pod-level
``spec.resources`` are not read, as upstream's helper does not read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler.framework.objects import pod_spec, resources_of
from scheduler.framework.resources import parse_resource_list
from scheduler.plugins.helper.qos import pod_qos
from scheduler.util.resource_names import is_native_resource

Requests = dict[str, Fraction]

INIT = "init"
SIDECAR = "sidecar"
APP = "app"


@dataclass(frozen=True, slots=True)
class ContainerRequests:
    name: str
    # "init", "sidecar" (an init container with restartPolicy Always) or "app".
    kind: str
    requests: Requests


@dataclass(frozen=True, slots=True)
class PodRequests:
    qos: str
    init_containers: tuple[ContainerRequests, ...]
    containers: tuple[ContainerRequests, ...]
    effective: Requests
    includes_non_native: bool

    @property
    def all_containers(self) -> tuple[ContainerRequests, ...]:
        """Init containers, then app containers: the order the kubelet's topology manager admits them."""
        return self.init_containers + self.containers


def pod_requests(pod: Mapping[str, Any]) -> PodRequests:
    """Raises QuantityError on an unreadable quantity."""
    spec = pod_spec(pod)
    inits = tuple(
        ContainerRequests(
            str(c.get("name", "")),
            SIDECAR if c.get("restartPolicy") == "Always" else INIT,
            parse_resource_list(resources_of(c).get("requests")),
        )
        for c in spec.get("initContainers") or ()
    )
    apps = tuple(
        ContainerRequests(str(c.get("name", "")), APP, parse_resource_list(resources_of(c).get("requests")))
        for c in spec.get("containers") or ()
    )
    effective: Requests = {}
    for container in apps:
        for name, amount in container.requests.items():
            effective[name] = effective.get(name, Fraction(0)) + amount
    init_max: Requests = {}
    for container in inits:
        for name, amount in container.requests.items():
            if name not in init_max or amount > init_max[name]:
                init_max[name] = amount
    for name, amount in init_max.items():
        if name not in effective or amount > effective[name]:
            effective[name] = amount
    for name, amount in parse_resource_list(spec.get("overhead")).items():
        effective[name] = effective.get(name, Fraction(0)) + amount
    non_native = any(not is_native_resource(name) for c in inits + apps for name in c.requests)
    return PodRequests(pod_qos(pod), inits, apps, effective, non_native)
