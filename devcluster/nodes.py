"""Fake Nodes for a control plane without kubelets: raw JSON dicts, created fast in bulk.

A Node's status is what kube-scheduler reads (allocatable, conditions, images), so the fake nodes carry
a full status. Node create keeps the status it is given (the node strategy's PrepareForCreate does not
reset it, unlike most resources), so one POST per node is enough; if a server ever drops it, the status
is written through the ``nodes/status`` subresource instead.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import orjson
from kubernetes.client.exceptions import ApiException

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

HOSTNAME_LABEL = "kubernetes.io/hostname"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

Taint = str | Mapping[str, str]


def parse_taint(taint: Taint) -> dict[str, str]:
    """A taint from ``key[=value]:Effect`` (kubectl's syntax) or a dict with key/value/effect."""
    if not isinstance(taint, str):
        parsed = {k: str(v) for k, v in taint.items() if k in ("key", "value", "effect")}
    else:
        key_value, sep, effect = taint.rpartition(":")
        if not sep:
            raise ValueError(f"taint {taint!r} has no effect; expected key[=value]:Effect")
        key, _, value = key_value.partition("=")
        parsed = {"key": key, "effect": effect}
        if value:
            parsed["value"] = value
    if not parsed.get("key") or parsed.get("effect") not in TAINT_EFFECTS:
        raise ValueError(f"invalid taint {taint!r}: needs a key and an effect in {TAINT_EFFECTS}")
    return parsed


def make_node(
    name: str,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: int = 110,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] | None = None,
    extra_allocatable: Mapping[str, str] | None = None,
    images: Mapping[str, int] | None = None,
    unschedulable: bool = False,
    ephemeral_storage: str = "100Gi",
) -> dict[str, Any]:
    """A Ready Node as a raw JSON dict; capacity == allocatable.

    ``images`` maps image name to size in bytes (status.images, read by ImageLocality).
    ``unschedulable`` also adds the node.kubernetes.io/unschedulable taint, as the node lifecycle
    controller would in a real cluster.
    """
    resources = {
        "cpu": cpu,
        "memory": memory,
        "pods": str(pods),
        "ephemeral-storage": ephemeral_storage,
        **(extra_allocatable or {}),
    }
    node_taints = [parse_taint(t) for t in taints or ()]
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
        if not any(t["key"] == UNSCHEDULABLE_TAINT["key"] for t in node_taints):
            node_taints.append(dict(UNSCHEDULABLE_TAINT))
    if node_taints:
        spec["taints"] = node_taints
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status: dict[str, Any] = {
        "capacity": dict(resources),
        "allocatable": dict(resources),
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "fake node created by devcluster",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ],
        "nodeInfo": {"operatingSystem": "linux", "architecture": "amd64"},
    }
    if images:
        status["images"] = [{"names": [image], "sizeBytes": size} for image, size in images.items()]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                HOSTNAME_LABEL: name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **(labels or {}),
            },
        },
        "spec": spec,
        "status": status,
    }


def _api_client(api: Any) -> ApiClient:
    """Accept a CoreV1Api or an ApiClient."""
    client: ApiClient = getattr(api, "api_client", api)
    return client


def _request(client: ApiClient, method: str, path: str, body: Any = None, content_type: str = "") -> Any:
    """A raw JSON request through the client's auth and connection pool; the parsed response body.

    Bypasses the generated methods: they validate the body into model classes, which costs far more
    than the request when creating thousands of nodes.
    """
    headers = {"Accept": "application/json", "Content-Type": content_type or "application/json"}
    method, url, headers, _, _ = client.param_serialize(
        method=method, resource_path=path, header_params=headers, auth_settings=["BearerToken"]
    )
    # Straight to urllib3 with pre-encoded bytes: the REST layer would json.dumps() the body again.
    response = client.rest_client.pool_manager.request(
        method, url, body=orjson.dumps(body) if body is not None else None, headers=headers, timeout=60.0
    )
    data: bytes = response.data
    if not 200 <= response.status <= 299:
        raise ApiException(
            status=response.status, reason=response.reason, body=data.decode("utf-8", "replace")
        )
    return orjson.loads(data) if data else None


def create_node(api: Any, node: Mapping[str, Any]) -> dict[str, Any]:
    """Create one Node with its status; returns the stored object."""
    client = _api_client(api)
    created: dict[str, Any] = _request(client, "POST", "/api/v1/nodes", node)
    wanted = node.get("status")
    # Compare presence, not values: the server canonicalises quantities ("0.5" is stored as "500m").
    if wanted and not created.get("status", {}).get("allocatable"):
        name = created["metadata"]["name"]
        created = _request(
            client,
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            {"status": wanted},
            content_type="application/merge-patch+json",
        )
    return created


def create_nodes(api: Any, nodes: Iterable[Mapping[str, Any]], concurrency: int = 32) -> list[dict[str, Any]]:
    """Create many Nodes in parallel; returns the stored objects in input order.

    ``api`` is a CoreV1Api or ApiClient; give its Configuration a ``connection_pool_maxsize`` of at
    least ``concurrency`` (ControlPlane.api_client() uses 64) or connections get thrown away.
    """
    items = list(nodes)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(items)))) as pool:
        return list(pool.map(lambda node: create_node(api, node), items))


def delete_nodes(api: Any, names: Iterable[str], concurrency: int = 32) -> None:
    """Delete Nodes in parallel; already-deleted ones are fine."""
    client = _api_client(api)

    def delete(name: str) -> None:
        try:
            _request(client, "DELETE", f"/api/v1/nodes/{name}")
        except ApiException as err:
            if err.status != 404:
                raise

    names = list(names)
    if names:
        with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(names)))) as pool:
            list(pool.map(delete, names))
