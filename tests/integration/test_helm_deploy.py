"""The Helm chart against the kustomize base and against the real API server.

1. `helm template` (defaults) and `kubectl kustomize deploy/` produce the same RBAC, security contexts,
   probes, scheduler configuration and pod shape.
2. The rendered chart is applied server-side; py-scheduler then runs with the chart's ServiceAccount
   (a TokenRequest token, as the kubelet would mount it) and the chart's configuration, wins the chart's
   Lease and binds pods.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster.binaries import require_binaries
from devcluster.credentials import write_kubeconfig
from devcluster.helm import CHART, template, template_text
from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, wait_for
from tests.integration.test_deploy import can, forbid_pods, kubectl, raw
from tests.integration.workload import RUN_LABEL, create_pods, list_pods, make_pod, new_run_id

REPO = Path(__file__).resolve().parents[2]
RELEASE = "chart-test"
NAMESPACE = "py-scheduler-chart"
FULLNAME = f"{RELEASE}-py-scheduler"
SCHEDULER_NAME = "py-scheduler-chart"
# Distinct names from test_deploy.py's objects, so the two never fight over one Deployment or Lease.
CHART_VALUES = {
    "namespace.create": "true",
    "profiles[0].schedulerName": SCHEDULER_NAME,
}


def kustomize_base() -> list[dict[str, Any]]:
    binary = require_binaries(names=("kubectl",)) / "kubectl"
    result = subprocess.run(
        [str(binary), "kustomize", str(REPO / "deploy")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def by_kind(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(kind, name) -> object; the generated ConfigMap's hash suffix is dropped."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] == "ConfigMap" and name.startswith("py-scheduler-config"):
            name = "py-scheduler-config"
        out[(obj["kind"], name)] = obj
    return out


@pytest.fixture(scope="module")
def both() -> tuple[dict[tuple[str, str], dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
    chart = by_kind(template("py-scheduler", "py-scheduler", set_values={"namespace.create": "true"}))
    base = by_kind(kustomize_base())
    return chart, base


Pair = tuple[dict[tuple[str, str], dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]


def test_same_objects(both: Pair) -> None:
    chart, base = both
    assert sorted(chart) == sorted(base)
    for key, obj in base.items():
        assert chart[key]["apiVersion"] == obj["apiVersion"], key
        assert chart[key]["metadata"].get("namespace") == obj["metadata"].get("namespace"), key


def test_same_rbac(both: Pair) -> None:
    chart, base = both
    for key, obj in base.items():
        if key[0] in {"ClusterRoleBinding", "RoleBinding"}:
            assert chart[key]["roleRef"] == obj["roleRef"], key
            assert chart[key]["subjects"] == obj["subjects"], key
        if key[0] in {"Role", "ClusterRole"}:
            assert chart[key]["rules"] == obj["rules"], key


def _pod(objects: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = objects[("Deployment", "py-scheduler")]["spec"]["template"]["spec"]
    return spec


def test_same_security_context_probes_and_container(both: Pair) -> None:
    chart, base = both
    chart_pod, base_pod = _pod(chart), _pod(base)
    for field in (
        "securityContext",
        "serviceAccountName",
        "priorityClassName",
        "terminationGracePeriodSeconds",
    ):
        assert chart_pod[field] == base_pod[field], field
    assert chart_pod.get("automountServiceAccountToken") == base_pod.get("automountServiceAccountToken")
    [chart_c], [base_c] = chart_pod["containers"], base_pod["containers"]
    for field in (
        "securityContext",
        "startupProbe",
        "livenessProbe",
        "readinessProbe",
        "args",
        "ports",
        "resources",
        "image",
        "imagePullPolicy",
        "volumeMounts",
    ):
        assert chart_c[field] == base_c[field], field
    base_volumes = {v["name"]: v for v in base_pod["volumes"]}
    chart_volumes = {v["name"]: v for v in chart_pod["volumes"]}
    assert chart_volumes["tmp"] == base_volumes["tmp"]
    assert chart_volumes["config"]["configMap"]["name"] == "py-scheduler-config"
    assert base_volumes["config"]["configMap"]["name"].startswith("py-scheduler-config-")


def test_same_scheduler_config(both: Pair) -> None:
    chart, base = both
    key = ("ConfigMap", "py-scheduler-config")
    assert yaml.safe_load(chart[key]["data"]["config.yaml"]) == yaml.safe_load(
        base[key]["data"]["config.yaml"]
    )


def test_same_workload_shape(both: Pair) -> None:
    chart, base = both
    chart_spec = chart[("Deployment", "py-scheduler")]["spec"]
    base_spec = base[("Deployment", "py-scheduler")]["spec"]
    for field in ("replicas", "revisionHistoryLimit", "strategy"):
        assert chart_spec[field] == base_spec[field], field
    anti = "podAntiAffinity"
    chart_term = _pod(chart)["affinity"][anti]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    base_term = _pod(base)["affinity"][anti]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert chart_term["weight"] == base_term["weight"]
    assert chart_term["podAffinityTerm"]["topologyKey"] == base_term["podAffinityTerm"]["topologyKey"]
    pdb = ("PodDisruptionBudget", "py-scheduler")
    assert chart[pdb]["spec"]["maxUnavailable"] == base[pdb]["spec"]["maxUnavailable"]
    service = ("Service", "py-scheduler-metrics")
    assert chart[service]["spec"]["ports"] == base[service]["spec"]["ports"]
    assert chart[service]["spec"]["type"] == base[service]["spec"]["type"]
    namespace = ("Namespace", "py-scheduler")
    pss = {k: v for k, v in base[namespace]["metadata"]["labels"].items() if k.startswith("pod-security")}
    assert pss.items() <= chart[namespace]["metadata"]["labels"].items()


# --- applied for real --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chart") / "rendered.yaml"
    path.write_text(template_text(RELEASE, NAMESPACE, set_values=CHART_VALUES))
    return path


@pytest.fixture(scope="module")
def applied(control_plane: Any, rendered: Path) -> list[dict[str, Any]]:
    forbid_pods(control_plane, NAMESPACE)
    result = kubectl(control_plane, "apply", "--server-side", "--force-conflicts", "-f", str(rendered))
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(rendered.read_text()) if doc]


def test_apply_is_idempotent(control_plane: Any, applied: list[dict[str, Any]], rendered: Path) -> None:
    assert ("Namespace", NAMESPACE) in {(o["kind"], o["metadata"]["name"]) for o in applied}
    result = kubectl(control_plane, "diff", "--server-side", "-f", str(rendered))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_optional_object_passes_server_side_dry_run(
    control_plane: Any, applied: list[dict[str, Any]], tmp_path: Path
) -> None:
    """ci/all-values.yaml (every value set) is accepted by the API server; only the ServiceMonitor, whose
    CRD the devcluster lacks, is left out, and the dashboard goes into the release namespace."""
    text = template_text(
        RELEASE,
        NAMESPACE,
        values_files=[CHART / "ci" / "all-values.yaml"],
        set_values={"metrics.serviceMonitor.enabled": "false", "grafanaDashboard.namespace": ""},
    )
    path = tmp_path / "all-values.yaml"
    path.write_text(text)
    result = kubectl(control_plane, "apply", "--server-side", "--dry-run=server", "-f", str(path))
    assert result.returncode == 0, result.stderr
    for kind in ("deployment.apps/pysched-all", "configmap/pysched-all-dashboard", "poddisruptionbudget"):
        assert kind in result.stdout, result.stdout


def chart_token(api_client: Any) -> str:
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    status, data = raw(
        api_client, "POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{FULLNAME}/token", body
    )
    assert status == 201, data
    token: str = data["status"]["token"]
    return token


def test_chart_service_account_permissions(
    control_plane: Any, api_client: Any, applied: list[dict[str, Any]]
) -> None:
    sa = control_plane.api_client(token=chart_token(api_client))
    lease = {"group": "coordination.k8s.io", "namespace": "kube-system"}
    assert can(sa, "create", "pods", subresource="binding", namespace="default")
    assert can(sa, "update", "leases", name=FULLNAME, **lease)
    assert can(sa, "create", "leases", **lease)
    assert not can(sa, "update", "leases", name="py-scheduler", **lease)  # only its own release's Lease
    assert not can(sa, "get", "secrets", namespace="kube-system")
    assert not can(sa, "create", "pods", namespace="default")
    assert can(sa, "create", "tokenreviews", group="authentication.k8s.io")
    assert can(sa, "create", "subjectaccessreviews", group="authorization.k8s.io")


def prometheus_token(control_plane: Any, api_client: Any, tmp_path: Path) -> str:
    """A ServiceAccount bound to the chart's metrics-reader role (rendered with the values that make
    the binding), and its token."""
    sa = {"serviceAccount": "prometheus-chart-test", "namespace": NAMESPACE}
    created = kubectl(control_plane, "create", "serviceaccount", sa["serviceAccount"], "-n", NAMESPACE)
    assert created.returncode == 0 or "AlreadyExists" in created.stderr, created.stderr
    text = template_text(
        RELEASE,
        NAMESPACE,
        set_values={
            "metrics.readerRole.create": "true",
            "metrics.serviceMonitor.prometheusServiceAccount.name": sa["serviceAccount"],
            "metrics.serviceMonitor.prometheusServiceAccount.namespace": NAMESPACE,
        },
    )
    docs = [d for d in yaml.safe_load_all(text) if d and d["metadata"]["name"].endswith(":metrics-reader")]
    assert {d["kind"] for d in docs} == {"ClusterRole", "ClusterRoleBinding"}
    path = tmp_path / "metrics-reader.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    applied = kubectl(control_plane, "apply", "--server-side", "-f", str(path))
    assert applied.returncode == 0, applied.stderr
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 600},
    }
    status, data = raw(
        api_client,
        "POST",
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{sa['serviceAccount']}/token",
        body,
    )
    assert status == 201, data
    token: str = data["status"]["token"]
    return token


@pytest.fixture
def run_id(core_v1: Any) -> Iterator[str]:
    rid = new_run_id()
    yield rid
    core_v1.delete_collection_node(label_selector=f"{RUN_LABEL}={rid}", _preload_content=False)


def test_scheduler_runs_as_the_chart_service_account_and_binds_pods(
    control_plane: Any,
    api_client: Any,
    core_v1: Any,
    applied: list[dict[str, Any]],
    namespace: str,
    run_id: str,
    tmp_path: Path,
) -> None:
    config_map = next(o for o in applied if o["kind"] == "ConfigMap")
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    assert config["leaderElection"]["resourceName"] == FULLNAME
    kubeconfig = write_kubeconfig(
        tmp_path / "sa.kubeconfig",
        control_plane.server,
        control_plane.ca_file.read_bytes(),
        FULLNAME,
        chart_token(api_client),
    )
    create_nodes(core_v1, [make_node(f"chart-{run_id}-{i}", labels={RUN_LABEL: run_id}) for i in range(2)])
    # Secure serving with the chart's ServiceAccount doing the reviews, as in the cluster.
    scheduler = SchedulerProcess(kubeconfig, tmp_path, config, name="chart-scheduler", secure=True).start()
    try:
        scheduler.wait_ready(timeout=60)
        assert scheduler.get("/metrics")[0] == 403  # anonymous
        pods = [make_pod(f"p-{i}", run_id, scheduler_name=SCHEDULER_NAME) for i in range(4)]
        create_pods(core_v1, namespace, pods)

        def all_bound() -> bool:
            return all(p["spec"].get("nodeName") for p in list_pods(core_v1, namespace))

        wait_for(
            all_bound,
            60,
            f"4 pods bound by py-scheduler as the chart's ServiceAccount ({scheduler.log_path})",
        )
        status, lease = raw(
            api_client, "GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{FULLNAME}"
        )
        assert status == 200
        assert lease["spec"]["holderIdentity"]
        # Scraped as Prometheus would: its ServiceAccount's token, bound to the chart's reader role.
        status, text = scheduler.get("/metrics", token=prometheus_token(control_plane, api_client, tmp_path))
        assert status == 200, text
        assert "scheduler_schedule_attempts_total" in text
    finally:
        code = scheduler.stop()
    assert code == 0, f"py-scheduler exited with {code}:\n{scheduler.log_tail()}"
