"""API objects in a line each: nodes, pods, volumes and claims, DRA devices, quotas, namespaces.

Plain dicts, as the scheduler sees them from the API server (raw JSON). Every builder takes
``**extra`` merged into the object's ``spec`` where that makes sense, so anything not covered by a
keyword is still one line away.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.explain.manifests import node_manifest

KubeObject = dict[str, Any]
_uids = itertools.count(1)


def _meta(name: str, namespace: str | None, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"kit-{next(_uids)}", "resourceVersion": "1"}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = {k: str(v) for k, v in labels.items()}
    return meta


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    zone: str | None = None,
    taints: Sequence[str | Mapping[str, str]] = (),
    allocatable: Mapping[str, str] | None = None,
    unschedulable: bool = False,
) -> KubeObject:
    """A Ready node: ``node("a", cpu="8", zone="z1", taints=["gpu=true:NoSchedule"])``. ``allocatable``
    adds extended resources (``{"example.com/gpu": "2"}``)."""
    all_labels = dict(labels or {})
    if zone is not None:
        all_labels["topology.kubernetes.io/zone"] = zone
    return node_manifest(
        name,
        cpu=cpu,
        memory=memory,
        pods=pods,
        labels=all_labels,
        taints=taints,
        allocatable=allocatable,
        unschedulable=unschedulable,
    )


def pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    resources: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    affinity: Mapping[str, Any] | None = None,
    priority: int | None = None,
    scheduler_name: str = "py-scheduler",
    node_name: str | None = None,
    pvcs: Sequence[str] = (),
    claims: Sequence[str] = (),
    **spec: Any,
) -> KubeObject:
    """A pod with one container requesting ``cpu``/``memory`` (and ``resources``): pending, or bound
    when ``node_name`` is given. ``pvcs`` mounts those claims as volumes; ``claims`` references
    ResourceClaims by name (DRA)."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update({k: str(v) for k, v in (resources or {}).items()})
    container: dict[str, Any] = {"name": "app", "image": "registry.k8s.io/pause:3.10"}
    if requests:
        container["resources"] = {"requests": requests}
    body: dict[str, Any] = {"schedulerName": scheduler_name, "containers": [container]}
    if node_selector:
        body["nodeSelector"] = dict(node_selector)
    if tolerations:
        body["tolerations"] = [dict(t) for t in tolerations]
    if affinity:
        body["affinity"] = dict(affinity)
    if priority is not None:
        body["priority"] = priority
    if node_name is not None:
        body["nodeName"] = node_name
    if pvcs:
        body["volumes"] = [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(pvcs)
        ]
    if claims:
        body["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in claims]
        container["resources"] = {**container.get("resources", {}), "claims": [{"name": c} for c in claims]}
    body.update(spec)
    phase = "Running" if node_name else "Pending"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(name, namespace, labels),
        "spec": body,
        "status": {"phase": phase},
    }


def pvc(
    name: str,
    *,
    namespace: str = "default",
    size: str = "1Gi",
    storage_class: str | None = None,
    volume_name: str | None = None,
    access_modes: Sequence[str] = ("ReadWriteOnce",),
) -> KubeObject:
    """A PersistentVolumeClaim; bound when ``volume_name`` is given."""
    spec: dict[str, Any] = {"accessModes": list(access_modes), "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume_name is not None:
        spec["volumeName"] = volume_name
    status = {"phase": "Bound" if volume_name else "Pending"}
    meta = _meta(name, namespace)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def pv(
    name: str,
    *,
    size: str = "1Gi",
    storage_class: str = "",
    zone: str | None = None,
    node: str | None = None,
    claim: tuple[str, str] | None = None,
) -> KubeObject:
    """A PersistentVolume, pinned to a zone or a node (node affinity) when asked; ``claim`` is the
    (namespace, name) it is bound to."""
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
    }
    key, value = ("topology.kubernetes.io/zone", zone) if zone else ("kubernetes.io/hostname", node)
    if value:
        term = {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": _meta(name, None),
        "spec": spec,
        "status": {"phase": "Bound" if claim else "Available"},
    }


def storage_class(
    name: str, *, provisioner: str = "example.com/csi", binding_mode: str = "WaitForFirstConsumer"
) -> KubeObject:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": _meta(name, None),
        "provisioner": provisioner,
        "volumeBindingMode": binding_mode,
    }


def device_class(name: str, *, driver: str = "gpu.example.com") -> KubeObject:
    """A DeviceClass selecting every device of ``driver``."""
    selector = {"cel": {"expression": f'device.driver == "{driver}"'}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": _meta(name, None),
        "spec": {"selectors": [selector]},
    }


def resource_slice(node_name: str, *, devices: int = 1, driver: str = "gpu.example.com") -> KubeObject:
    """A ResourceSlice publishing ``devices`` devices of ``driver`` on one node."""
    spec = {
        "driver": driver,
        "nodeName": node_name,
        "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"dev-{i}"} for i in range(devices)],
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": _meta(f"{node_name}-{driver}", None),
        "spec": spec,
    }


def resource_claim(
    name: str, *, namespace: str = "default", device_class_name: str = "gpu", count: int = 1
) -> KubeObject:
    """An unallocated ResourceClaim asking for ``count`` devices of a DeviceClass."""
    exactly = {"deviceClassName": device_class_name, "allocationMode": "ExactCount", "count": count}
    request = {"name": "req", "exactly": exactly}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": _meta(name, namespace),
        "spec": {"devices": {"requests": [request]}},
        "status": {},
    }


def resource_quota(
    name: str, *, namespace: str = "default", hard: Mapping[str, str], used: Mapping[str, str] | None = None
) -> KubeObject:
    """A ResourceQuota (``hard={"requests.cpu": "4"}``), for plugins that list quotas (RESOURCE_QUOTAS)."""
    status = {"hard": dict(hard), "used": dict(used or {})}
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": _meta(name, namespace),
        "spec": {"hard": dict(hard)},
        "status": status,
    }


def namespace(name: str, *, labels: Mapping[str, str] | None = None) -> KubeObject:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(name, None, labels)}
