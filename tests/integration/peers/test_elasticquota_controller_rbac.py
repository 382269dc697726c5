"""The RBAC shipped for scheduler-plugins' controller (the kustomize component
deploy/components/scheduler-plugins-controller-rbac and the Helm chart's elasticQuota.controllerRbac),
applied to a real API server and used for real: the scheduler-plugins v0.34.7 controller (built by
devcluster/build_scheduler_plugins.sh) runs with leader election under a TokenRequest token of the
ServiceAccount each binds, and writes ElasticQuota ``status.used``, the sum of the requests of the
quota's running pods (what ``kubectl get elasticquota`` shows; docs/capacity-scheduling.md).

A control plane of its own: installing the ElasticQuota CRD on the session's would change what other
tests see (py-scheduler refuses CapacityScheduling without it). In the peers session, which builds the
controller when it is missing.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from devcluster.credentials import write_kubeconfig
from devcluster.helm import template_text
from devcluster.peers import SchedulerPlugins
from devcluster.py_scheduler import wait_for
from tests.integration.test_deploy import can, kubectl, raw

REPO = Path(__file__).resolve().parents[3]
COMPONENT = REPO / "deploy/components/scheduler-plugins-controller-rbac"
CRDS = [
    REPO / "deploy/components/podgroup-crd/crd.yaml",
    REPO / "deploy/components/elasticquota-crd/crd.yaml",
]
# The subject the kustomize component binds (its documented default) and the one the chart is told to.
SA_NAMESPACE = "scheduler-plugins"
KUSTOMIZE_SA = "scheduler-plugins-controller"
HELM_SA = "chart-quota-controller"
GROUP, VERSION_EQ = "scheduling.x-k8s.io", "v1alpha1"


@pytest.fixture(scope="module")
def plane() -> Iterator[Any]:
    from devcluster.cluster import ControlPlane

    cp = ControlPlane()
    cp.start()
    try:
        api = cp.api_client()
        ext: Any = k8s.ApiextensionsV1Api(api)
        for path in CRDS:
            ext.create_custom_resource_definition(
                body=yaml.safe_load(path.read_text()), _preload_content=False
            )
        custom = k8s.CustomObjectsApi(api)

        def served() -> bool:
            try:
                found = custom.get_api_resources(GROUP, VERSION_EQ)
            except k8s.ApiException:
                return False
            return {"podgroups", "elasticquotas"} <= {r.name for r in found.resources}

        wait_for(served, 60, "scheduler-plugins CRDs served")
        core = k8s.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": SA_NAMESPACE}}, _preload_content=False)
        for name in (KUSTOMIZE_SA, HELM_SA, "unbound"):
            wait_for(lambda: _namespace_ready(core), 30, "service account admission ready")
            core.create_namespaced_service_account(SA_NAMESPACE, {"metadata": {"name": name}})
        yield cp
    finally:
        cp.stop()


def _namespace_ready(core: Any) -> bool:
    return bool(core.list_namespaced_service_account(SA_NAMESPACE, _preload_content=False).status == 200)


def apply_kustomize_component(plane: Any, tmp_path: Path) -> None:
    """The component as a user includes it: an overlay that lists it under ``components``."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    component = os.path.relpath(COMPONENT, overlay)  # kustomize refuses absolute paths
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "components": [component],
            }
        )
    )
    result = kubectl(plane, "apply", "-k", str(overlay), "--server-side")
    assert result.returncode == 0, result.stderr


def apply_helm_rbac(plane: Any, tmp_path: Path) -> None:
    """The chart's controller RBAC (elasticQuota.controllerRbac) bound to ``HELM_SA``."""
    text = template_text(
        "quota-rbac",
        "py-scheduler",
        set_values={
            "elasticQuota.controllerRbac.create": "true",
            "elasticQuota.controllerRbac.serviceAccount.name": HELM_SA,
            "elasticQuota.controllerRbac.serviceAccount.namespace": SA_NAMESPACE,
        },
    )
    docs = [
        doc
        for doc in yaml.safe_load_all(text)
        if doc
        and doc["kind"] in ("ClusterRole", "ClusterRoleBinding")
        and doc["metadata"]["name"].endswith(":scheduler-plugins-controller")
    ]
    assert {d["kind"] for d in docs} == {"ClusterRole", "ClusterRoleBinding"}, text
    path = tmp_path / "controller-rbac.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    result = kubectl(plane, "apply", "-f", str(path), "--server-side")
    assert result.returncode == 0, result.stderr


def token_of(plane: Any, name: str) -> str:
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    with plane.api_client() as api:
        status, data = raw(
            api, "POST", f"/api/v1/namespaces/{SA_NAMESPACE}/serviceaccounts/{name}/token", body
        )
    assert status == 201, data
    token: str = data["status"]["token"]
    return token


def run_controller(peer: SchedulerPlugins, plane: Any, name: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    kubeconfig = write_kubeconfig(
        tmp_path / f"{name}.kubeconfig", plane.server, plane.ca_file.read_bytes(), name, token_of(plane, name)
    )
    log = (tmp_path / f"{name}.log").open("wb")
    return subprocess.Popen(
        [str(peer.controller), "--metricsAddr=0", "--probeAddr=0", "--enableLeaderElection=true"],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def quota_with_running_pods(plane: Any, ns: str) -> Any:
    """An ElasticQuota and two running pods (800m, 1Gi in all) of its namespace; the custom API."""
    api = plane.api_client()
    core = k8s.CoreV1Api(api)
    custom = k8s.CustomObjectsApi(api)
    core.create_namespace({"metadata": {"name": ns}}, _preload_content=False)
    custom.create_namespaced_custom_object(
        GROUP,
        VERSION_EQ,
        ns,
        "elasticquotas",
        {
            "apiVersion": f"{GROUP}/{VERSION_EQ}",
            "kind": "ElasticQuota",
            "metadata": {"name": "quota", "namespace": ns},
            "spec": {"min": {"cpu": "2", "memory": "4Gi"}, "max": {"cpu": "4", "memory": "8Gi"}},
        },
    )
    for name, cpu, memory in (("a", "300m", "512Mi"), ("b", "500m", "512Mi")):
        wait_for(
            lambda: core.list_namespaced_service_account(ns, _preload_content=False).status == 200, 30, "ns"
        )
        core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": name},
                "spec": {
                    "nodeName": "no-such-node",  # assigned; no kubelet runs it
                    "containers": [
                        {
                            "name": "c",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}},
                        }
                    ],
                },
            },
        )
        # The controller counts running pods only (as a kubelet would report them).
        core.patch_namespaced_pod_status(name, ns, {"status": {"phase": "Running"}})
    return custom


def used_of(custom: Any, ns: str) -> dict[str, str]:
    eq = custom.get_namespaced_custom_object(GROUP, VERSION_EQ, ns, "elasticquotas", "quota")
    used: dict[str, str] = (eq.get("status") or {}).get("used") or {}
    return used


@pytest.mark.parametrize("shipped", ["kustomize", "helm"])
def test_controller_writes_status_used_under_the_shipped_rbac(
    scheduler_plugins: SchedulerPlugins, plane: Any, tmp_path: Path, shipped: str
) -> None:
    if shipped == "kustomize":
        apply_kustomize_component(plane, tmp_path)
        account = KUSTOMIZE_SA
    else:
        apply_helm_rbac(plane, tmp_path)
        account = HELM_SA
    ns = f"eq-{shipped}"
    custom = quota_with_running_pods(plane, ns)
    controller = run_controller(scheduler_plugins, plane, account, tmp_path)
    try:
        wait_for(lambda: used_of(custom, ns) == {"cpu": "800m", "memory": "1Gi"}, 90, f"status.used of {ns}")
    finally:
        controller.terminate()
        controller.wait(15)
    log = (tmp_path / f"{account}.log").read_text(errors="replace")
    assert "forbidden" not in log.lower(), log[-3000:]


def test_the_rbac_grants_the_controller_no_more_than_it_needs(plane: Any, tmp_path: Path) -> None:
    """What each shipped binding allows, asked of the API server's authorizer under the tokens."""
    apply_kustomize_component(plane, tmp_path)
    apply_helm_rbac(plane, tmp_path)
    for account in (KUSTOMIZE_SA, HELM_SA):
        sa = plane.api_client(token=token_of(plane, account))
        assert can(sa, "list", "pods", namespace="default")
        assert can(sa, "update", "elasticquotas", group=GROUP, subresource="status", namespace="default")
        assert can(sa, "patch", "podgroups", group=GROUP, subresource="status", namespace="default")
        assert can(sa, "create", "leases", group="coordination.k8s.io", namespace="kube-system")
        assert not can(sa, "update", "elasticquotas", group=GROUP, namespace="default")  # spec: the user's
        assert not can(sa, "delete", "pods", namespace="default")
        assert not can(sa, "get", "secrets", namespace="kube-system")
    unbound = plane.api_client(token=token_of(plane, "unbound"))
    assert not can(unbound, "update", "elasticquotas", group=GROUP, subresource="status", namespace="default")
