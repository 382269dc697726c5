"""The local control plane itself: the API works, RBAC is on, versions are pinned, nothing leaks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, CoreV1Api, VersionApi
from kubernetes.client.exceptions import ApiException

from devcluster.binaries import BinariesMissingError, k8s_version, require_binaries
from devcluster.cluster import ControlPlane, ControlPlaneError
from devcluster.nodes import create_nodes, delete_nodes, make_node
from devcluster.probe import wait_until

pytestmark = pytest.mark.integration


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _pod(name: str, scheduler_name: str | None = "py-scheduler") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100m"}}}
        ]
    }
    if scheduler_name is not None:
        spec["schedulerName"] = scheduler_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _read_pod(core_v1: Any, namespace: str, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = json.loads(
        core_v1.read_namespaced_pod(name, namespace, _preload_content=False).data
    )
    return pod


def _alive(pid: int, marker: str) -> bool:
    """Whether ``pid`` is still one of our components (its command line names our run dir)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return marker.encode() in cmdline


def test_pod_bound_through_binding_subresource(core_v1: Any, namespace: str) -> None:
    node = _unique("bind-node")
    create_nodes(core_v1, [make_node(node)])
    try:
        core_v1.create_namespaced_pod(namespace, body=_pod("p"), _preload_content=False)
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "p"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        # _preload_content=False: the client raises after a successful bind (kubernetes-client #547).
        response = core_v1.create_namespaced_pod_binding("p", namespace, body=binding, _preload_content=False)
        assert response.status == 201
        assert _read_pod(core_v1, namespace, "p")["spec"]["nodeName"] == node
    finally:
        delete_nodes(core_v1, [node])


def test_nodes_are_stored_with_status(core_v1: Any) -> None:
    pool = _unique("pool")
    nodes = [
        make_node(f"{pool}-plain", labels={"pool": pool}),
        make_node(
            f"{pool}-gpu",
            cpu="32",
            memory="128Gi",
            pods=250,
            labels={"pool": pool, "topology.kubernetes.io/zone": "zone-b"},
            taints=["gpu=true:NoSchedule", {"key": "dedicated", "effect": "NoExecute"}],
            extra_allocatable={"example.com/gpu": "4"},
            images={"registry.k8s.io/pause:3.10": 300_000},
        ),
        make_node(f"{pool}-cordoned", labels={"pool": pool}, unschedulable=True),
    ]
    created = create_nodes(core_v1, nodes)
    try:
        assert [n["metadata"]["name"] for n in created] == [n["metadata"]["name"] for n in nodes]
        listed = json.loads(core_v1.list_node(label_selector=f"pool={pool}", _preload_content=False).data)
        by_name = {n["metadata"]["name"]: n for n in listed["items"]}
        assert set(by_name) == {n["metadata"]["name"] for n in nodes}

        plain = by_name[f"{pool}-plain"]
        assert plain["metadata"]["labels"]["kubernetes.io/hostname"] == f"{pool}-plain"
        assert plain["status"]["allocatable"] == {
            "cpu": "4",
            "memory": "16Gi",
            "pods": "110",
            "ephemeral-storage": "100Gi",
        }
        assert plain["status"]["capacity"] == plain["status"]["allocatable"]
        assert [(c["type"], c["status"]) for c in plain["status"]["conditions"]] == [("Ready", "True")]
        assert "taints" not in plain["spec"]

        gpu = by_name[f"{pool}-gpu"]
        assert gpu["status"]["allocatable"]["example.com/gpu"] == "4"
        assert gpu["status"]["allocatable"]["pods"] == "250"
        assert gpu["spec"]["taints"] == [
            {"key": "gpu", "value": "true", "effect": "NoSchedule"},
            {"key": "dedicated", "effect": "NoExecute"},
        ]
        assert gpu["status"]["images"] == [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 300_000}]

        cordoned = by_name[f"{pool}-cordoned"]
        assert cordoned["spec"]["unschedulable"] is True
        assert {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"} in cordoned["spec"][
            "taints"
        ]
    finally:
        delete_nodes(core_v1, [n["metadata"]["name"] for n in nodes])
    remaining = json.loads(core_v1.list_node(label_selector=f"pool={pool}", _preload_content=False).data)
    assert remaining["items"] == []


def test_user_without_rbac_rights_is_forbidden(control_plane: ControlPlane, core_v1: Any) -> None:
    core_v1.list_namespaced_pod("default", _preload_content=False)  # the admin may
    unprivileged = control_plane.api_client(token=control_plane.unprivileged_token)
    with unprivileged, pytest.raises(ApiException) as raised:
        CoreV1Api(unprivileged).list_namespaced_pod("default", _preload_content=False)
    assert raised.value.status == 403


def test_binaries_and_server_report_the_pinned_release(
    control_plane: ControlPlane, api_client: ApiClient
) -> None:
    binaries = require_binaries(control_plane.binaries_dir)
    result = subprocess.run(
        [str(binaries / "kube-apiserver"), "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == f"Kubernetes {k8s_version()}"
    assert VersionApi(api_client).get_code().git_version == k8s_version()


def test_component_failure_names_its_log(control_plane: ControlPlane) -> None:
    with pytest.raises(ControlPlaneError) as raised:
        control_plane.start_kube_scheduler(extra_args=["--no-such-flag"])
    message, log = str(raised.value), raised.value.log_path
    assert log.parent == control_plane.log_dir
    assert log.name.startswith("kube-scheduler-")
    assert str(log) in message
    assert "unknown flag: --no-such-flag" in message  # the log's tail is quoted
    assert not any(name.startswith("kube-scheduler-") for name in control_plane.pids())


def test_failed_start_names_the_log_and_leaves_no_process() -> None:
    plane = ControlPlane(apiserver_args=["--no-such-flag"])
    with pytest.raises(ControlPlaneError) as raised:
        plane.start()
    try:
        assert raised.value.log_path.name == "kube-apiserver.log"
        assert str(raised.value.log_path) in str(raised.value)
        assert "unknown flag: --no-such-flag" in str(raised.value)
        assert raised.value.log_path.exists()  # logs of a failed start are kept
        assert plane.pids() == {}
    finally:
        shutil.rmtree(plane.run_dir, ignore_errors=True)


def test_missing_binaries_fail_with_build_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PY_SCHEDULER_CACHE", str(tmp_path))
    plane = ControlPlane()
    with pytest.raises(BinariesMissingError, match=r"make control-plane"):
        plane.start()
    assert plane.pids() == {}


def test_separate_control_plane_runs_kube_scheduler_restarts_and_leaves_nothing() -> None:
    plane = ControlPlane()
    with plane:
        config = plane.write_kube_scheduler_config(qps=200, burst=400)
        plane.start_kube_scheduler(config_path=config)
        client = plane.api_client()
        core_v1: Any = CoreV1Api(client)
        node = _unique("ks-node")
        create_nodes(core_v1, [make_node(node)])
        core_v1.create_namespaced_pod("default", body=_pod("by-kube-scheduler", None), _preload_content=False)
        wait_until(
            lambda: _read_pod(core_v1, "default", "by-kube-scheduler")["spec"].get("nodeName") == node,
            timeout=60,
            what="kube-scheduler to bind the pod",
        )

        server = plane.server
        plane.restart_apiserver()
        assert plane.server == server
        # Same etcd, same serving cert: the old client still works and the data survived.
        assert _read_pod(core_v1, "default", "by-kube-scheduler")["spec"]["nodeName"] == node
        client.close()

        pids = plane.pids()
        assert set(pids) == {"etcd", "kube-apiserver", "kube-scheduler-1"}
        run_dir = str(plane.run_dir)
        assert all(_alive(pid, run_dir) for pid in pids.values())

    assert plane.pids() == {}
    assert not any(_alive(pid, run_dir) for pid in pids.values())
    assert not os.path.exists(run_dir)
    plane.stop()  # a second stop is a no-op
