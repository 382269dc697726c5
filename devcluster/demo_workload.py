"""The demo's workload: ~100 mixed pods for py-scheduler, some unschedulable on purpose."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEMO_APP_LABEL = "py-scheduler.dev/app"
GPU_TOLERATION = {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def _pod(
    name: str,
    app: str,
    cpu: str,
    memory: str,
    *,
    extra_requests: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    host_port: int | None = None,
) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory, **(extra_requests or {})}
    container: dict[str, Any] = {
        "name": app,
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": requests, "limits": dict(extra_requests or {})},
    }
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec: dict[str, Any] = {"schedulerName": "py-scheduler", "containers": [container]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = dict(affinity)
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {DEMO_APP_LABEL: app}},
        "spec": spec,
    }


def _pool_affinity(pool: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "py-scheduler.dev/pool", "operator": "In", "values": [pool]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _prefer_zone(zone: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "preference": term}]}}  # fmt: skip


def demo_pods() -> list[dict[str, Any]]:
    """100 pods: web, batch, high-memory, GPU, zone-preferring, host-port, and 6 that fit nowhere."""
    # Pods that need a particular pool come first, as a platform team would roll them out.
    pods = [_pod(f"cache-{i}", "cache", "2", "24Gi", affinity=_pool_affinity("highmem")) for i in range(8)]
    pods += [
        _pod(f"train-{i}", "train", "4", "16Gi", extra_requests={"example.com/gpu": "1"},
             tolerations=[GPU_TOLERATION])
        for i in range(8)
    ]  # fmt: skip
    pods += [_pod(f"web-{i}", "web", "250m", "512Mi") for i in range(40)]
    pods += [_pod(f"batch-{i}", "batch", "1", "2Gi") for i in range(20)]
    pods += [_pod(f"api-{i}", "api", "500m", "1Gi", affinity=_prefer_zone("zone-b")) for i in range(12)]
    pods += [_pod(f"ingress-{i}", "ingress", "100m", "128Mi", host_port=8443) for i in range(6)]
    # Unschedulable on purpose, each for a different reason.
    pods += [_pod(f"huge-{i}", "huge", "64", "8Gi") for i in range(2)]
    pods += [_pod(f"gpu-no-toleration-{i}", "gpu-no-toleration", "1", "1Gi",
                  extra_requests={"example.com/gpu": "1"}) for i in range(2)]  # fmt: skip
    pods += [_pod(f"lost-{i}", "lost", "100m", "128Mi", node_selector={"py-scheduler.dev/pool": "arm64"})
             for i in range(2)]  # fmt: skip
    return pods


EXPECTED_UNSCHEDULABLE = 6
