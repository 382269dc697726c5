"""deploy/ against the real API server: kustomize builds, server-side apply, and what the RBAC really allows.

The control plane has no controller-manager, so the Deployment never gets pods; what is checked is that
every object is accepted as written and that the ServiceAccount's permissions are exactly the intended
ones, asked of the API server's own authorizer (SelfSubjectAccessReview under a TokenRequest token).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from devcluster.credentials import write_kubeconfig

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
NAMESPACE = "py-scheduler"
SERVICE_ACCOUNT = "py-scheduler"


def kubectl(
    control_plane: Any, *args: str, kubeconfig: str | Path | None = None
) -> subprocess.CompletedProcess[str]:
    binary = Path(control_plane.binaries_dir) / "kubectl"
    return subprocess.run(
        [str(binary), "--kubeconfig", str(kubeconfig or control_plane.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def forbid_pods(control_plane: Any, namespace: str) -> None:
    """A quota of zero pods in ``namespace`` (created with it, before anything is applied there).

    The applied Deployments' pods (system-cluster-critical, no tolerations, no nodeSelector) would stay
    pending in the session's cluster, since no kubelet runs them, and the session's real kube-scheduler
    would bind them onto the fresh nodes of whatever test runs next, overfilling nodes those tests
    fill exactly. No test needs the pods: they are refused at admission, the Deployment and its
    ReplicaSet are unaffected."""
    for args in (
        ("create", "namespace", namespace),
        ("create", "quota", "no-pods", "--hard=pods=0", "-n", namespace),
    ):
        result = kubectl(control_plane, *args)
        assert result.returncode == 0 or "already exists" in result.stderr, result.stderr


def apply_deploy(control_plane: Any) -> None:
    """Idempotent: the real (not dry-run) server-side apply of deploy/ (its pods refused: forbid_pods)."""
    forbid_pods(control_plane, NAMESPACE)
    result = kubectl(control_plane, "apply", "-k", str(DEPLOY), "--server-side", "--force-conflicts")
    assert result.returncode == 0, result.stderr


def service_account_token(api_client: Any, seconds: int = 3600, name: str = SERVICE_ACCOUNT) -> str:
    """A token for py-scheduler/<name> from the TokenRequest API, as the kubelet would mount it."""
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    status, data = raw(
        api_client, "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{name}/token", body
    )
    assert status == 201, data
    token: str = data["status"]["token"]
    return token


def service_account_kubeconfig(control_plane: Any, api_client: Any, path: Path) -> Path:
    token = service_account_token(api_client)
    return write_kubeconfig(
        path, control_plane.server, control_plane.ca_file.read_bytes(), "py-scheduler-sa", token
    )


def raw(api_client: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    request = api_client.param_serialize(
        method=method, resource_path=path, header_params=headers, body=body, auth_settings=["BearerToken"]
    )
    response = api_client.call_api(*request, _request_timeout=30)
    data = response.read()
    return response.status, orjson.loads(data) if data else None


def can(
    api_client: Any,
    verb: str,
    resource: str,
    *,
    namespace: str = "",
    group: str = "",
    name: str = "",
    subresource: str = "",
) -> bool:
    attributes = {
        "verb": verb,
        "resource": resource,
        "group": group,
        "namespace": namespace,
        "name": name,
        "subresource": subresource,
    }
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    status, data = raw(api_client, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body)
    assert status == 201, data
    return bool(data["status"]["allowed"])


@pytest.fixture(scope="module")
def deployed(control_plane: Any) -> None:
    apply_deploy(control_plane)


@pytest.fixture(scope="module")
def sa_client(control_plane: Any, api_client: Any, deployed: None) -> Any:
    return control_plane.api_client(token=service_account_token(api_client))


@pytest.mark.parametrize("target", ["deploy", "deploy/base", "deploy/overlays/example"])
def test_kustomize_builds(control_plane: Any, target: str) -> None:
    result = kubectl(control_plane, "kustomize", str(REPO / target))
    assert result.returncode == 0, result.stderr
    assert "kind: Deployment" in result.stdout


def test_servicemonitor_component_builds(control_plane: Any, tmp_path: Path) -> None:
    overlay = tmp_path / "with-monitoring"
    overlay.mkdir()
    base = os.path.relpath(DEPLOY / "base", overlay)  # kustomize refuses absolute paths
    component = os.path.relpath(DEPLOY / "components" / "servicemonitor", overlay)
    (overlay / "kustomization.yaml").write_text(json.dumps({"resources": [base], "components": [component]}))
    result = kubectl(control_plane, "kustomize", str(overlay))
    assert result.returncode == 0, result.stderr
    assert "kind: ServiceMonitor" in result.stdout


@pytest.mark.parametrize("target", ["deploy", "deploy/overlays/example"])
def test_server_side_dry_run_accepts_every_object(control_plane: Any, target: str) -> None:
    # A dry run cannot create the Namespace its other objects go into, so only that one is real.
    namespace = kubectl(
        control_plane, "apply", "--server-side", "-f", str(DEPLOY / "base" / "namespace.yaml")
    )
    assert namespace.returncode == 0, namespace.stderr
    result = kubectl(control_plane, "apply", "-k", str(REPO / target), "--server-side", "--dry-run=server")
    assert result.returncode == 0, result.stderr
    assert "deployment.apps/py-scheduler serverside-applied (server dry run)" in result.stdout


def test_apply_for_real(control_plane: Any, api_client: Any, deployed: None) -> None:
    status, deployment = raw(
        api_client, "GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/py-scheduler"
    )
    assert status == 200
    assert deployment["spec"]["replicas"] == 2
    status, _ = raw(
        api_client,
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/py-scheduler:leader-election",
    )
    assert status == 200
    # Applying again changes nothing and still succeeds (what `kubectl apply` in CD does).
    apply_deploy(control_plane)
    result = kubectl(control_plane, "diff", "-k", str(DEPLOY), "--server-side")
    assert result.returncode == 0, result.stdout + result.stderr


def _case_id(verb: str, resource: str, attrs: dict[str, str]) -> str:
    sub = f"/{attrs['subresource']}" if attrs.get("subresource") else ""
    name = f"/{attrs['name']}" if attrs.get("name") else ""
    where = f" in {attrs['namespace']}" if attrs.get("namespace") else ""
    return f"{verb} {resource}{sub}{name}{where}"


# What the ServiceAccount must be able to do: its whole job, read through informers, bind, report.
ALLOWED = [
    ("list", "pods", {}),
    ("watch", "nodes", {}),
    ("create", "pods", {"subresource": "binding", "namespace": "default"}),
    ("patch", "pods", {"subresource": "status", "namespace": "default"}),
    ("delete", "pods", {"namespace": "default"}),  # preemption, as kube-scheduler
    ("create", "events", {"namespace": "default"}),
    ("patch", "events", {"namespace": "default"}),
    ("create", "events", {"group": "events.k8s.io", "namespace": "default"}),
    ("update", "events", {"group": "events.k8s.io", "namespace": "default"}),
    ("get", "leases", {"group": "coordination.k8s.io", "namespace": "kube-system", "name": "py-scheduler"}),
    (
        "update",
        "leases",
        {"group": "coordination.k8s.io", "namespace": "kube-system", "name": "py-scheduler"},
    ),
    ("create", "leases", {"group": "coordination.k8s.io", "namespace": "kube-system"}),
    ("get", "configmaps", {"namespace": "kube-system", "name": "extension-apiserver-authentication"}),
    ("update", "persistentvolumes", {}),  # system:volume-scheduler
    # system:auth-delegator: delegated authentication and authorization of the HTTPS port.
    ("create", "tokenreviews", {"group": "authentication.k8s.io"}),
    ("create", "subjectaccessreviews", {"group": "authorization.k8s.io"}),
    ("list", "csinodes", {"group": "storage.k8s.io"}),
    # NodeVolumeLimits counts the volumes attached to each node.
    ("list", "volumeattachments", {"group": "storage.k8s.io"}),
    ("watch", "volumeattachments", {"group": "storage.k8s.io"}),
    # Inherited from system:kube-scheduler, which names kube-scheduler's Lease. Documented, not wanted:
    # it is the price of reusing the upstream role rather than copying it.
    (
        "update",
        "leases",
        {"group": "coordination.k8s.io", "namespace": "kube-system", "name": "kube-scheduler"},
    ),
]

# What it must never be able to do.
FORBIDDEN = [
    ("delete", "nodes", {}),
    ("update", "nodes", {}),
    ("get", "secrets", {"namespace": "kube-system"}),
    ("list", "secrets", {}),
    ("create", "pods", {"namespace": "default"}),
    ("update", "pods", {"namespace": "default"}),
    (
        "update",
        "leases",
        {"group": "coordination.k8s.io", "namespace": "kube-system", "name": "kube-controller-manager"},
    ),
    (
        "delete",
        "leases",
        {"group": "coordination.k8s.io", "namespace": "kube-system", "name": "py-scheduler"},
    ),
    ("get", "configmaps", {"namespace": "kube-system", "name": "kube-proxy"}),
    ("update", "deployments", {"group": "apps", "namespace": NAMESPACE}),
    ("create", "clusterrolebindings", {"group": "rbac.authorization.k8s.io"}),
    ("escalate", "clusterroles", {"group": "rbac.authorization.k8s.io"}),
    ("impersonate", "serviceaccounts", {"namespace": "kube-system"}),
    ("create", "serviceaccounts", {"subresource": "token", "namespace": NAMESPACE}),
    ("*", "*", {"group": "*"}),
]


@pytest.mark.parametrize(("verb", "resource", "attrs"), ALLOWED, ids=[_case_id(*c) for c in ALLOWED])
def test_service_account_can(sa_client: Any, verb: str, resource: str, attrs: dict[str, str]) -> None:
    assert can(sa_client, verb, resource, **attrs)


@pytest.mark.parametrize(("verb", "resource", "attrs"), FORBIDDEN, ids=[_case_id(*c) for c in FORBIDDEN])
def test_service_account_cannot(sa_client: Any, verb: str, resource: str, attrs: dict[str, str]) -> None:
    assert not can(sa_client, verb, resource, **attrs)


def test_kubeconfig_for_the_service_account_works_with_kubectl(
    control_plane: Any, api_client: Any, deployed: None, tmp_path: Path
) -> None:
    kubeconfig = service_account_kubeconfig(control_plane, api_client, tmp_path / "sa.kubeconfig")
    allowed = kubectl(
        control_plane,
        "auth",
        "can-i",
        "create",
        "pods",
        "--subresource=binding",
        "-n",
        "default",
        kubeconfig=kubeconfig,
    )
    assert allowed.stdout.strip() == "yes", allowed.stderr
    denied = kubectl(
        control_plane, "auth", "can-i", "get", "secrets", "-n", "kube-system", kubeconfig=kubeconfig
    )
    assert denied.stdout.strip() == "no"
