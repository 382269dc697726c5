"""PodInfo and NodeInfo: facts derived once per object version (``pkg/scheduler/framework/types.go``).

Both wrap the raw JSON dict from the watch. A PodInfo is built once per (uid, resourceVersion) and is
immutable afterwards; plugins cache their own derived facts in ``PodInfo.memo`` so a pod's affinity terms
or tolerations are parsed once, not once per node per cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from scheduler.framework.objects import (
    labels_of,
    node_spec,
    node_status,
    object_meta,
    pod_spec,
    scheduler_name_of,
)
from scheduler.framework.quantity import QuantityError
from scheduler.framework.resources import Resource, has_status_resources, pod_requests_and_non_zero

T = TypeVar("T")

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


class PodSpecError(ValueError):
    """The pod cannot be scheduled as written (a bad quantity, an unknown operator...).

    The scheduler reports it as a FailedScheduling event; it never stops the scheduling loop.
    """


class HostPort(NamedTuple):
    ip: str
    protocol: str
    port: int


def _host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    ports: list[HostPort] = []
    containers = spec.get("containers") or ()
    init_containers = spec.get("initContainers")
    if init_containers:
        # Sidecars keep running, so their host ports count too.
        containers = list(containers)
        containers += [c for c in init_containers if c.get("restartPolicy") == "Always"]
    for container in containers:
        for port in container.get("ports") or ():
            host_port = port.get("hostPort") or 0
            if host_port <= 0:
                continue
            ports.append(
                HostPort(
                    port.get("hostIP") or DEFAULT_BIND_ALL_HOST_IP,
                    port.get("protocol") or "TCP",
                    int(host_port),
                )
            )
    return tuple(ports)


class PodInfo:
    """A pod plus its parsed requests and ports. Raises PodSpecError on a spec it cannot read."""

    __slots__ = (
        "has_pod_affinity",
        "has_required_anti_affinity",
        "host_ports",
        "key",
        "memo",
        "name",
        "namespace",
        "node_name",
        "non_zero_requests",
        "pod",
        "priority",
        "requests",
        "resource_version",
        "scheduler_name",
        "spec",
        "uid",
    )

    def __init__(self, pod: Mapping[str, Any]) -> None:
        meta = object_meta(pod)
        spec = pod_spec(pod)
        self.pod = pod
        self.spec: Mapping[str, Any] = spec
        self.namespace: str = meta.get("namespace", "")
        self.name: str = meta.get("name", "")
        self.key = f"{self.namespace}/{self.name}"
        self.uid: str = meta.get("uid", "")
        self.resource_version: str = meta.get("resourceVersion", "")
        self.node_name: str = spec.get("nodeName") or ""
        self.scheduler_name: str = scheduler_name_of(pod)
        priority = spec.get("priority")
        self.priority: int = priority if isinstance(priority, int) else 0
        try:
            self.requests, self.non_zero_requests = pod_requests_and_non_zero(pod)
            self.host_ports = _host_ports(spec)
        except (QuantityError, TypeError, ValueError, AttributeError) as err:
            raise PodSpecError(f"pod {self.key}: {err}") from err
        self.memo: dict[str, Any] = {}
        # Upstream's podWithAffinity / podWithRequiredAntiAffinity: which NodeInfo lists hold the pod.
        # Any: the API's type, but a malformed object may hold anything there.
        affinity: Any = spec.get("affinity")
        if affinity is None:
            # The usual pod, decided without isinstance against the Mapping ABC (its negative check
            # cost as much as the rest of these lines).
            self.has_pod_affinity = self.has_required_anti_affinity = False
        else:
            if not isinstance(affinity, Mapping):
                affinity = {}
            anti = affinity.get("podAntiAffinity")
            self.has_pod_affinity = affinity.get("podAffinity") is not None or anti is not None
            self.has_required_anti_affinity = bool(
                isinstance(anti, Mapping) and anti.get("requiredDuringSchedulingIgnoredDuringExecution")
            )

    def successor(self, pod: Mapping[str, Any]) -> PodInfo | None:
        """This PodInfo for ``pod``, a newer version of the same pod, if nothing parsed can differ:
        the same uid, spec, labels and annotations, and no status resources in either (in-place
        resize reads those). Else None. The bound version of a pod, or a status-only change, then
        costs a few dict comparisons instead of a parse. The memo goes along: plugins derive its
        entries from the spec, the namespace and the labels."""
        meta = object_meta(pod)
        if meta.get("uid") != self.uid or not self.uid:
            return None
        spec = pod_spec(pod)
        if spec != self.spec or has_status_resources(pod) or has_status_resources(self.pod):
            return None
        old_meta = object_meta(self.pod)
        if meta.get("labels") != old_meta.get("labels") or meta.get("annotations") != old_meta.get(
            "annotations"
        ):
            return None
        return self._copy_for(pod, spec, meta.get("resourceVersion", ""))

    def _copy_for(self, pod: Mapping[str, Any], spec: Mapping[str, Any], resource_version: str) -> PodInfo:
        """This PodInfo's parsed facts for another version of the pod (written out slot by slot: a
        bind's echo reaches this once per pod on the loop thread, and a getattr/setattr loop over the
        slots costs several times more)."""
        copy = PodInfo.__new__(PodInfo)
        copy.has_pod_affinity = self.has_pod_affinity
        copy.has_required_anti_affinity = self.has_required_anti_affinity
        copy.host_ports = self.host_ports
        copy.key = self.key
        copy.memo = dict(self.memo)
        copy.name = self.name
        copy.namespace = self.namespace
        copy.node_name = self.node_name
        copy.non_zero_requests = self.non_zero_requests
        copy.pod = pod
        copy.priority = self.priority
        copy.requests = self.requests
        copy.resource_version = resource_version
        copy.scheduler_name = self.scheduler_name
        copy.spec = spec
        copy.uid = self.uid
        return copy

    def derived(self, name: str, build: Callable[[PodInfo], T]) -> T:
        """``build(self)`` computed once for this pod version and kept under ``name``."""
        try:
            return self.memo[name]  # type: ignore[no-any-return]
        except KeyError:
            result = self.memo[name] = build(self)
            return result

    def __repr__(self) -> str:
        return f"PodInfo({self.key}@{self.resource_version})"


def same_pod_in(pod: PodInfo, pods: Sequence[PodInfo]) -> bool:
    """Whether ``pod`` (by uid, else namespace/name) is one of ``pods``: a nominated pod never counts
    against itself. A loop, not any() over a generator: asked per node of every dry run and Filter
    loop, where the generator's setup cost twice the comparisons of the one or two pods there."""
    me = pod.uid or pod.key
    for other in pods:
        if (other.uid or other.key) == me:
            break
    else:
        return False
    return True


@dataclass(slots=True)
class ImageStateSummary:
    size: int
    # How many nodes in the snapshot have the image; ImageLocality scales by how widely it spreads.
    num_nodes: int


class NodeInfo:
    """A node and what is on it, as the scheduler's cache sees it (assumed pods included)."""

    __slots__ = (
        "allocatable",
        "generation",
        "image_sizes",
        "image_states",
        "labels",
        "name",
        "node",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "requested",
        "taints",
        "unschedulable",
        "used_ports",
    )

    def __init__(self, node: Mapping[str, Any] | None = None, name: str = "") -> None:
        self.node: Mapping[str, Any] | None = None
        self.name = name
        self.allocatable = Resource()
        self.labels: Mapping[str, str] = {}
        self.taints: Sequence[Mapping[str, Any]] = ()
        self.unschedulable = False
        self.image_sizes: dict[str, int] = {}
        # On a snapshot's copy: the cache's nodes-per-image and size-per-image maps as they were when
        # this copy was made (never changed afterwards: the cache copies them before its next change).
        # Upstream's snapshot NodeInfo freezes its ImageStateSummary the same way, so a node that has
        # not changed since scores with the image spread of that time. None: use the snapshot's.
        self.image_states: tuple[Mapping[str, int], Mapping[str, int]] | None = None
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.pods: dict[str, PodInfo] = {}
        # The pods with any pod (anti-)affinity, and those with required anti-affinity (upstream's
        # PodsWithAffinity / PodsWithRequiredAntiAffinity): InterPodAffinity reads only these.
        self.pods_with_affinity: dict[str, PodInfo] = {}
        self.pods_with_required_anti_affinity: dict[str, PodInfo] = {}
        # (ip, protocol, port) -> how many pods use it; a count, because two pods may share 0.0.0.0.
        self.used_ports: dict[HostPort, int] = {}
        self.generation = 0
        if node is not None:
            self.set_node(node)

    def set_node(self, node: Mapping[str, Any]) -> None:
        meta = object_meta(node)
        spec = node_spec(node)
        status = node_status(node)
        self.node = node
        self.name = meta.get("name", self.name)
        self.labels = labels_of(node)
        self.taints = spec.get("taints") or ()
        self.unschedulable = bool(spec.get("unschedulable"))
        try:
            self.allocatable = Resource.from_list(status.get("allocatable"))
        except QuantityError:
            # A node with an unreadable allocatable fits nothing rather than crashing the cache.
            self.allocatable = Resource()
        sizes: dict[str, int] = {}
        for image in status.get("images") or ():
            size = int(image.get("sizeBytes") or 0)
            for image_name in image.get("names") or ():
                # The first entry naming an image wins, as in upstream's cache (addNodeImageStates).
                sizes.setdefault(image_name, size)
        self.image_sizes = sizes

    def add_pod(self, pod: PodInfo) -> None:
        self.pods[pod.key] = pod
        if pod.has_pod_affinity:
            self.pods_with_affinity[pod.key] = pod
        if pod.has_required_anti_affinity:
            self.pods_with_required_anti_affinity[pod.key] = pod
        self.requested.add(pod.requests)
        self.non_zero_requested.add(pod.non_zero_requests)
        for port in pod.host_ports:
            self.used_ports[port] = self.used_ports.get(port, 0) + 1

    def remove_pod(self, key: str) -> PodInfo | None:
        """Removes the pod the way upstream's ``removeFromSlice`` does: the node's last pod takes the
        removed one's place. The order of a node's pods is observable: preemption lists a node's
        victims in it, and unstarted victims of equal priority are then ordered by it (pods.py)."""
        pod = _swap_remove(self.pods, key)
        if pod is None:
            return None
        _swap_remove(self.pods_with_affinity, key)
        _swap_remove(self.pods_with_required_anti_affinity, key)
        self.requested.subtract(pod.requests)
        self.non_zero_requested.subtract(pod.non_zero_requests)
        for port in pod.host_ports:
            left = self.used_ports.get(port, 0) - 1
            if left > 0:
                self.used_ports[port] = left
            else:
                self.used_ports.pop(port, None)
        return pod

    def clone(self) -> NodeInfo:
        """A copy safe to hand to a snapshot: containers copied, PodInfos and the node dict shared."""
        other = NodeInfo.__new__(NodeInfo)
        other.node = self.node
        other.name = self.name
        other.allocatable = self.allocatable
        other.labels = self.labels
        other.taints = self.taints
        other.unschedulable = self.unschedulable
        other.image_sizes = self.image_sizes
        other.image_states = self.image_states
        other.requested = self.requested.copy()
        other.non_zero_requested = self.non_zero_requested.copy()
        other.pods = dict(self.pods)
        other.pods_with_affinity = dict(self.pods_with_affinity)
        other.pods_with_required_anti_affinity = dict(self.pods_with_required_anti_affinity)
        other.used_ports = dict(self.used_ports)
        other.generation = self.generation
        return other

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)}, gen={self.generation})"


def _swap_remove(pods: dict[str, PodInfo], key: str) -> PodInfo | None:
    """``pods.pop(key)``, except that the last entry moves into the removed entry's position."""
    removed = pods.get(key)
    if removed is None:
        return None
    last_key = next(reversed(pods))
    if last_key == key:
        del pods[key]
        return removed
    last = pods[last_key]
    rest = list(pods.items())
    pods.clear()
    for k, v in rest[:-1]:
        if k == key:
            pods[last_key] = last
        else:
            pods[k] = v
    return removed


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


@dataclass(slots=True)
class PreFilterResult:
    """PreFilter may narrow the candidate nodes (NodeName, NodeAffinity on hostname). None means all."""

    node_names: set[str] | None = None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class Diagnosis:
    """Why a pod fit nowhere: per-node statuses and the plugins that said no."""

    node_to_status: dict[str, Any] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
