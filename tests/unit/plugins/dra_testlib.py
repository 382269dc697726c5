"""Builders for DRA objects as raw JSON (the shapes of resource.k8s.io/v1), after upstream's test
wrappers in ``structured/internal/allocatortesting/allocator_testing.go``."""

from __future__ import annotations

from typing import Any

DRIVER_A = "driver-a"
DRIVER_B = "driver-b"
POOL_A = "pool-a"
CLASS_A = "class-a"
CLASS_B = "class-b"
NODE_1 = "node-1"
NODE_2 = "node-2"
REQ_0 = "req-0"
REQ_1 = "req-1"


def device(name: str, attrs: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if attrs:
        d["attributes"] = {
            k: (
                {"version": v[1:]}
                if isinstance(v, str) and v.startswith("v") and v[1:2].isdigit()
                else {"bool": v}
                if isinstance(v, bool)
                else {"int": v}
                if isinstance(v, int)
                else {"string": v}
            )
            for k, v in attrs.items()
        }
    d.update(extra)
    return d


def slice_(
    name: str,
    node: str | None,
    pool: str,
    driver: str,
    *devices: dict[str, Any],
    generation: int = 1,
    count: int = 1,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": list(devices),
    }
    if node is not None:
        body["nodeName"] = node
    body.update(spec)
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"}, "spec": body}


def device_class(name: str, *expressions: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in expressions]}
    body.update(spec)
    return {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": body}


def request(
    name: str, class_name: str = CLASS_A, count: int | None = 1, mode: str = "ExactCount", **extra: Any
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": class_name, "allocationMode": mode}
    if mode == "ExactCount":
        exactly["count"] = count
    exactly.update(extra)
    return {"name": name, "exactly": exactly}


def sub_request(name: str, class_name: str = CLASS_A, count: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "deviceClassName": class_name,
        "allocationMode": "ExactCount",
        "count": count,
        **extra,
    }


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    namespace: str = "default",
    owner_uid: str | None = None,
    **status: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "resourceVersion": "1",
    }
    if owner_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}
        ]
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": meta, "spec": {"devices": devices}, "status": dict(status)}


def result(req: str, driver: str, pool: str, dev: str, **extra: Any) -> dict[str, Any]:
    return {"request": req, "driver": driver, "pool": pool, "device": dev, **extra}


def node_selector_for(node: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    }


def allocation(*results: dict[str, Any], node: str | None = NODE_1) -> dict[str, Any]:
    out: dict[str, Any] = {"devices": {"results": list(results)}}
    if node:
        out["nodeSelector"] = node_selector_for(node)
    return out
