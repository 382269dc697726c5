"""Builders and a fake Handle for the plugin unit tests (in the spirit of upstream's st.MakePod)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.handle import WaitingPodHandle
from scheduler.framework.listers import ResourceSpec, StaticLister
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, NodeScore, PodInfo, PreFilterResult

_uids = itertools.count(1)


def pod(
    name: str = "p",
    *,
    namespace: str = "default",
    uid: str | None = None,
    requests: Sequence[Mapping[str, str]] = (),
    init_requests: Sequence[Mapping[str, str]] = (),
    node_name: str = "",
    nominated_node_name: str = "",
    tolerations: Sequence[Mapping[str, Any]] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    ports: Sequence[Mapping[str, Any]] = (),
    images: Sequence[str] = (),
    init_images: Sequence[str] = (),
    scheduling_gates: Sequence[str] = (),
    extra_spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A raw pod dict: one container per entry of ``requests`` (or per image, at least one); ports go on
    the first."""
    count = max(len(requests), len(images), 1)
    containers: list[dict[str, Any]] = []
    for i in range(count):
        container: dict[str, Any] = {"name": f"c{i}", "image": images[i] if i < len(images) else "busybox"}
        if i < len(requests):
            container["resources"] = {"requests": dict(requests[i])}
        if i == 0 and ports:
            container["ports"] = [dict(p) for p in ports]
        containers.append(container)
    spec: dict[str, Any] = {"containers": containers, "schedulerName": "py-scheduler"}
    inits = [
        {"name": f"i{i}", "image": init_images[i] if i < len(init_images) else "busybox"}
        | ({"resources": {"requests": dict(init_requests[i])}} if i < len(init_requests) else {})
        for i in range(max(len(init_requests), len(init_images)))
    ]
    if inits:
        spec["initContainers"] = inits
    if node_name:
        spec["nodeName"] = node_name
    if tolerations is not None:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = affinity
    if scheduling_gates:
        spec["schedulingGates"] = [{"name": g} for g in scheduling_gates]
    if extra_spec:
        spec.update(extra_spec)
    out: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{next(_uids)}",
            # Unique, so a cache keyed by (uid, resourceVersion) never confuses two test objects.
            "resourceVersion": str(next(_uids)),
        },
        "spec": spec,
    }
    if nominated_node_name or status:
        out["status"] = dict(status or {})
        if nominated_node_name:
            out["status"]["nominatedNodeName"] = nominated_node_name
    return out


def node(
    name: str,
    *,
    allocatable: Mapping[str, str] | None = None,
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] | None = None,
    unschedulable: bool = False,
    images: Sequence[tuple[Sequence[str], int]] = (),
) -> dict[str, Any]:
    alloc = dict(allocatable or {})
    alloc.setdefault("pods", str(pods))
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "metadata": {
            "name": name,
            "labels": dict(labels or {}),
            "uid": f"node-{name}",
            # Unique, so a cache keyed by (uid, resourceVersion) never confuses two test objects.
            "resourceVersion": str(next(_uids)),
        },
        "spec": spec,
        "status": {
            "allocatable": alloc,
            "capacity": alloc,
            "images": [{"names": list(names), "sizeBytes": size} for names, size in images],
        },
    }


def node_info(node_dict: Mapping[str, Any], *existing: Mapping[str, Any]) -> NodeInfo:
    info = NodeInfo(node_dict)
    for existing_pod in existing:
        info.add_pod(PodInfo(existing_pod))
    return info


class FakeSnapshot:
    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self._nodes = list(nodes)
        self._images: dict[str, int] = {}
        # As the live cache, with the nodes added in order: the first node holding an image sets its size.
        self._image_sizes: dict[str, int] = {}
        for info in self._nodes:
            for image, size in info.image_sizes.items():
                self._images[image] = self._images.get(image, 0) + 1
                self._image_sizes.setdefault(image, size)

    def node_infos(self) -> Sequence[NodeInfo]:
        return self._nodes

    def get(self, node_name: str) -> NodeInfo | None:
        return next((n for n in self._nodes if n.name == node_name), None)

    def num_nodes(self) -> int:
        return len(self._nodes)

    def image_num_nodes(self, image: str) -> int:
        return self._images.get(image, 0)

    def image_size(self, image: str) -> int:
        return self._image_sizes.get(image, 0)


class FakeHandle:
    def __init__(
        self,
        nodes: Sequence[NodeInfo] = (),
        bind: Callable[[str, str, str, str], None] | None = None,
        objects: Mapping[ResourceSpec, Sequence[Mapping[str, Any]]] | None = None,
    ) -> None:
        self._snapshot = FakeSnapshot(nodes)
        # Listers over fixed objects per kind; a kind not given lists nothing.
        self.listers: dict[ResourceSpec, StaticLister] = {
            spec: StaticLister(objs) for spec, objs in (objects or {}).items()
        }
        self._bind = bind
        self.bound: list[tuple[str, str, str, str]] = []
        self.api_calls: list[tuple[str, str, Any]] = []
        self.updates: list[tuple[ResourceSpec, Mapping[str, Any]]] = []
        # The handle's clock (wall seconds); a test moves it.
        self.clock = 0.0

    @property
    def snapshot(self) -> FakeSnapshot:
        return self._snapshot

    @property
    def profile_name(self) -> str:
        return "py-scheduler"

    def now(self) -> float:
        return self.clock

    def bind_pod(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        if self._bind is not None:
            self._bind(namespace, name, uid, node_name)
        self.bound.append((namespace, name, uid, node_name))

    def get_waiting_pod(self, key: str) -> WaitingPodHandle | None:
        return None

    def waiting_pods(self) -> Sequence[WaitingPodHandle]:
        return []

    def api_request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> Any:
        """Records the call; answers from ``api_responder`` when a test set one, else echoes the body."""
        self.api_calls.append((method, path, body))
        responder = getattr(self, "api_responder", None)
        if responder is not None:
            return responder(method, path, body)
        return body or {}

    def lister(self, resource: ResourceSpec) -> StaticLister:
        return self.listers.setdefault(resource, StaticLister())

    def update_object(self, resource: ResourceSpec, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """Stores ``obj`` in its lister with the next resourceVersion, as the API server would."""
        self.updates.append((resource, obj))
        meta = dict(obj.get("metadata") or {})
        meta["resourceVersion"] = str(int(meta.get("resourceVersion") or 0) + 1)
        stored = {**obj, "metadata": meta}
        self.lister(resource).add(stored)
        return stored


def run_filter(plugin: Any, pod_dict: Mapping[str, Any], info: NodeInfo) -> Status | None:
    """PreFilter (if any) then Filter, as the framework runs them; a PreFilter Skip means success."""
    state = CycleState()
    pod_info = PodInfo(pod_dict)
    if hasattr(plugin, "pre_filter"):
        result, pre_status = plugin.pre_filter(state, pod_info, [info])
        if pre_status is not None and pre_status.code is Code.Skip:
            return None
        if pre_status is not None:
            return cast(Status, pre_status)
        names = result.node_names if isinstance(result, PreFilterResult) else None
        if names is not None and info.name not in names:
            return Status.unschedulable("filtered out by PreFilter", resolvable=False)
    return cast("Status | None", plugin.filter(state, pod_info, info))


def run_score(
    plugin: Any, pod_dict: Mapping[str, Any], infos: Sequence[NodeInfo], *, pre_score: bool = True
) -> list[int]:
    """PreScore, Score and NormalizeScore for ``infos``; a PreScore Skip scores every node 0."""
    state = CycleState()
    pod_info = PodInfo(pod_dict)
    if pre_score and hasattr(plugin, "pre_score"):
        status = plugin.pre_score(state, pod_info, infos)
        if status is not None and status.code is Code.Skip:
            return [0] * len(infos)
        assert status is None
    scores = []
    for info in infos:
        value, status = plugin.score(state, pod_info, info)
        assert status is None
        scores.append(NodeScore(info.name, value))
    if hasattr(plugin, "normalize_score"):
        assert plugin.normalize_score(state, pod_info, scores) is None
    return [s.score for s in scores]


def pre_score_code(plugin: Any, pod_dict: Mapping[str, Any], infos: Sequence[NodeInfo]) -> Code:
    status = plugin.pre_score(CycleState(), PodInfo(pod_dict), infos)
    return Code.Success if status is None else status.code
