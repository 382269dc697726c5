"""Credentials that managed clusters use (issue 17), against the devcluster.

* an exec plugin whose token expires every 5 s: py-scheduler calls it again and keeps scheduling;
* a ``tokenFile`` rotated on disk while the old token is revoked: picked up without a restart, and
  bindings, Events and lease renewals go on.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.py_scheduler import SchedulerProcess, wait_for
from tests.integration import test_failover
from tests.integration.test_deploy import NAMESPACE, SERVICE_ACCOUNT, apply_deploy, raw
from tests.integration.test_failover import FAST_ELECTION, add_nodes, bound_count, config, is_leading
from tests.integration.workload import create_pods, list_events, make_pod

PLUGIN = Path(__file__).with_name("exec_credential_plugin.py")
# Fixtures shared with the fail-over tests.
lease_client = test_failover.lease_client
run_id = test_failover.run_id


def kubeconfig(control_plane: Any, path: Path, user: dict[str, Any]) -> Path:
    ca = base64.b64encode(control_plane.ca_file.read_bytes()).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": {"server": control_plane.server, "certificate-authority-data": ca}}
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(json.dumps(doc))
    path.chmod(0o600)
    return path


def scheduled_events(core_v1: Any, namespace: str) -> int:
    return sum(1 for e in list_events(core_v1, namespace) if e.get("reason") == "Scheduled")


def schedule(core_v1: Any, namespace: str, run_id: str, names: list[str], total: int) -> None:
    create_pods(core_v1, namespace, [make_pod(name, run_id) for name in names])
    wait_for(lambda: bound_count(core_v1, namespace) == total, 60, f"{total} pods bound")
    wait_for(lambda: scheduled_events(core_v1, namespace) == total, 30, f"{total} Scheduled events")


def test_exec_plugin_called_again_after_expiry(
    *,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    add_nodes(api_client, run_id, 2)
    calls = tmp_path / "calls.log"
    env = {"PLUGIN_TOKEN": control_plane.token, "PLUGIN_CALLS": str(calls), "PLUGIN_LIFETIME": "5"}
    exec_spec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(PLUGIN)],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "interactiveMode": "Never",
    }
    path = kubeconfig(control_plane, tmp_path / "exec.kubeconfig", {"exec": exec_spec})

    def count() -> int:
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    proc = SchedulerProcess(path, tmp_path, config(**FAST_ELECTION)).start()
    processes.append(proc)
    proc.wait_ready()
    wait_for(lambda: is_leading(proc), 30, "py-scheduler to lead")
    schedule(core_v1, namespace, run_id, [f"a{i}" for i in range(10)], 10)
    before = count()
    assert before >= 1
    # Lease renewals every second keep asking for the credential: past expiry, the plugin runs again.
    wait_for(lambda: count() >= before + 2, 30, "the exec plugin called again after its token expired")
    schedule(core_v1, namespace, run_id, [f"b{i}" for i in range(10)], 20)
    proc.assert_running()
    first = json.loads(calls.read_text().splitlines()[0])
    assert json.loads(first["info"]) == {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    # Re-run near expiry (every ~4-5 s), not on every request.
    assert count() < 40, count()


def bound_token(api_client: Any, secret: str) -> str:
    """A TokenRequest token for the py-scheduler ServiceAccount, valid while Secret ``secret`` exists."""
    status, data = raw(
        api_client,
        "POST",
        f"/api/v1/namespaces/{NAMESPACE}/secrets",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret}},
    )
    assert status == 201, data
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "expirationSeconds": 3600,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": secret},
        },
    }
    status, data = raw(
        api_client, "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token", body
    )
    assert status == 201, data
    token: str = data["status"]["token"]
    return token


def accepted(control_plane: Any, token: str) -> bool:
    """Whether the API server authenticates ``token`` (any answer but 401: RBAC may still say 403)."""
    client = control_plane.api_client(token=token)
    try:
        status, _ = raw(client, "GET", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}")
    finally:
        client.close()
    return bool(status != 401)


@pytest.fixture
def secrets(api_client: Any) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        raw(api_client, "DELETE", f"/api/v1/namespaces/{NAMESPACE}/secrets/{name}")


def test_rotated_token_file_is_picked_up_without_restart(
    *,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    lease_client: Any,
    secrets: list[str],
    tmp_path: Path,
) -> None:
    apply_deploy(control_plane)
    add_nodes(api_client, run_id, 2)
    secrets.extend([f"{run_id}-one", f"{run_id}-two"])
    token_file = tmp_path / "token"
    first = bound_token(api_client, secrets[0])
    token_file.write_text(first)
    path = kubeconfig(control_plane, tmp_path / "sa.kubeconfig", {"tokenFile": str(token_file)})
    proc = SchedulerProcess(path, tmp_path, config(**FAST_ELECTION)).start()
    processes.append(proc)
    proc.wait_ready()
    wait_for(lambda: is_leading(proc), 30, "py-scheduler to lead as the ServiceAccount")
    schedule(core_v1, namespace, run_id, [f"a{i}" for i in range(10)], 10)

    # Rotate as the kubelet does (a new file in place), then revoke the old token.
    second = bound_token(api_client, secrets[1])
    tmp = token_file.with_suffix(".new")
    tmp.write_text(second)
    tmp.replace(token_file)
    status, data = raw(api_client, "DELETE", f"/api/v1/namespaces/{NAMESPACE}/secrets/{secrets[0]}")
    assert status == 200, data
    wait_for(lambda: not accepted(control_plane, first), 30, "the first token to be refused")
    # The API server checks a bound token's Secret in its own informer cache: the new one may lag.
    wait_for(lambda: accepted(control_plane, second), 30, "the second token to be accepted")

    lease = lease_client.get(10)
    assert lease is not None
    renewed = lease["spec"]["renewTime"]
    schedule(core_v1, namespace, run_id, [f"b{i}" for i in range(10)], 20)

    def lease_renewed() -> bool:
        now = lease_client.get(10)
        return bool(now and now["spec"]["renewTime"] != renewed and now["spec"]["holderIdentity"] == holder)

    holder = lease["spec"]["holderIdentity"]
    wait_for(lease_renewed, 30, "the lease renewed with the rotated token")
    proc.assert_running()
    assert is_leading(proc)
