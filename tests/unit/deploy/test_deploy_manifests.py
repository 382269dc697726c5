"""deploy/: structure, least-privilege RBAC and pod hardening, checked on the YAML itself (no cluster).

tests/integration/test_deploy.py builds the same kustomizations with kubectl and applies them for real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "base"
NAMESPACE = "py-scheduler"
IMAGE = "ghcr.io/py-scheduler/py-scheduler"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}


def load_yaml_docs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def kustomization(directory: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return doc


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for resource in kustomization(BASE)["resources"]:
        docs.extend(load_yaml_docs(BASE / resource))
    return docs


def only(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


@pytest.fixture(scope="module")
def deployment(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return only(objects, "Deployment", "py-scheduler")


@pytest.fixture(scope="module")
def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    result: dict[str, Any] = containers[0]
    return result


@pytest.fixture(scope="module")
def scheduler_config() -> dict[str, Any]:
    generators = kustomization(BASE)["configMapGenerator"]
    assert [g["name"] for g in generators] == ["py-scheduler-config"]
    assert generators[0]["files"] == ["config.yaml"]
    config: dict[str, Any] = yaml.safe_load((BASE / "config.yaml").read_text())
    return config


def test_root_kustomization_is_the_base() -> None:
    assert kustomization(DEPLOY)["resources"] == ["base"]


def test_every_referenced_file_exists() -> None:
    for directory in (
        DEPLOY,
        BASE,
        DEPLOY / "overlays" / "example",
        DEPLOY / "components" / "servicemonitor",
    ):
        k = kustomization(directory)
        for entry in k.get("resources", []) + k.get("components", []):
            assert (directory / entry).exists(), f"{directory}: {entry} missing"
        for generator in k.get("configMapGenerator", []):
            for file in generator.get("files", []):
                assert (directory / file).is_file()
        for patch in k.get("patches", []):
            assert (directory / patch["path"]).is_file()


def test_no_namespace_transformer_that_would_move_kube_system_objects() -> None:
    for directory in (DEPLOY, BASE, DEPLOY / "overlays" / "example"):
        assert "namespace" not in kustomization(directory)


def test_namespaced_objects_say_their_namespace(objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in obj["metadata"]
        else:
            assert obj["metadata"]["namespace"] in {NAMESPACE, "kube-system"}, obj["metadata"]
    in_kube_system = {
        (o["kind"], o["metadata"]["name"]) for o in objects if o["metadata"].get("namespace") == "kube-system"
    }
    assert in_kube_system == {
        ("RoleBinding", "py-scheduler:extension-apiserver-authentication-reader"),
        ("Role", "py-scheduler:leader-election"),
        ("RoleBinding", "py-scheduler:leader-election"),
    }


def test_dedicated_namespace_enforces_restricted_pod_security(objects: list[dict[str, Any]]) -> None:
    labels = only(objects, "Namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_rbac_binds_only_the_upstream_scheduler_and_auth_delegator_roles_and_our_lease_role(
    objects: list[dict[str, Any]],
) -> None:
    bindings = [o for o in objects if o["kind"] in {"ClusterRoleBinding", "RoleBinding"}]
    bound = {(b["kind"], b["roleRef"]["kind"], b["roleRef"]["name"]) for b in bindings}
    assert bound == {
        ("ClusterRoleBinding", "ClusterRole", "system:kube-scheduler"),
        ("ClusterRoleBinding", "ClusterRole", "system:volume-scheduler"),
        # tokenreviews and subjectaccessreviews for delegated authentication and authorization.
        ("ClusterRoleBinding", "ClusterRole", "system:auth-delegator"),
        ("RoleBinding", "Role", "extension-apiserver-authentication-reader"),
        ("RoleBinding", "Role", "py-scheduler:leader-election"),
    }
    for binding in bindings:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "py-scheduler", "namespace": NAMESPACE}
        ]
        assert binding["roleRef"]["name"] not in {"cluster-admin", "admin", "edit"}
    assert not [o for o in objects if o["kind"] == "ClusterRole"]


def test_lease_role_is_scoped_to_our_lease(
    objects: list[dict[str, Any]], scheduler_config: dict[str, Any]
) -> None:
    role = only(objects, "Role", "py-scheduler:leader-election")
    election = scheduler_config["leaderElection"]
    assert role["metadata"]["namespace"] == election["resourceNamespace"] == "kube-system"
    for rule in role["rules"]:
        assert rule["apiGroups"] == ["coordination.k8s.io"]
        assert rule["resources"] == ["leases"]
        assert "*" not in rule["verbs"]
        assert "delete" not in rule["verbs"]
        if rule["verbs"] != ["create"]:  # create cannot be limited by name
            assert rule["resourceNames"] == [election["resourceName"]] == ["py-scheduler"]
            assert sorted(rule["verbs"]) == ["get", "update"]


def test_scheduler_config(scheduler_config: dict[str, Any]) -> None:
    assert scheduler_config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert scheduler_config["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in scheduler_config["profiles"]] == ["py-scheduler"]
    assert scheduler_config["leaderElection"] == {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
        "resourceName": "py-scheduler",
        "resourceNamespace": "kube-system",
    }


def test_deployment_shape(deployment: dict[str, Any], container: dict[str, Any]) -> None:
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "py-scheduler"
    assert pod.get("automountServiceAccountToken", True)  # it talks to the API server
    assert pod.get("hostNetwork", False) is False
    assert container["image"] == f"{IMAGE}:0.1.0"
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()


def test_container_args_follow_the_cli_contract(
    container: dict[str, Any], deployment: dict[str, Any]
) -> None:
    args = container["args"]
    assert "command" not in container  # the image's ENTRYPOINT is py-scheduler
    config_path = args[args.index("--config") + 1]
    # HTTPS with delegated authentication on kube-scheduler's port; never the insecure --port.
    assert args[args.index("--secure-port") + 1] == "10259"
    assert "--port" not in args
    assert not [
        a for a in args if a.startswith(("--authorization-always-allow-paths", "--authentication-skip"))
    ]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    config_mount = next(m for m in mounts.values() if config_path.startswith(m["mountPath"] + "/"))
    assert config_mount["readOnly"] is True
    assert volumes[config_mount["name"]]["configMap"]["name"] == "py-scheduler-config"
    assert config_path.rsplit("/", 1)[1] == "config.yaml"  # the generator's key


def test_probes(container: dict[str, Any]) -> None:
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 10259}
    for probe_name, path in (
        ("livenessProbe", "/livez"),
        ("readinessProbe", "/readyz"),
        ("startupProbe", "/livez"),
    ):
        probe = container[probe_name]["httpGet"]
        assert probe["path"] == path
        assert probe["port"] in ("metrics", 10259)
        assert probe["scheme"] == "HTTPS"  # a self-signed certificate: no --tls-cert-file in args
    assert "--tls-cert-file" not in container["args"]


def test_pod_and_container_hardening(deployment: dict[str, Any], container: dict[str, Any]) -> None:
    pod_sc = deployment["spec"]["template"]["spec"]["securityContext"]
    assert pod_sc["runAsNonRoot"] is True
    assert pod_sc["runAsUser"] == 65532
    assert pod_sc["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["runAsNonRoot"] is True
    assert sc.get("privileged", False) is False
    resources = container["resources"]
    assert {"cpu", "memory"} <= resources["requests"].keys()
    assert "memory" in resources["limits"]


def test_replicas_spread_across_nodes(deployment: dict[str, Any]) -> None:
    anti = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    terms = anti.get("preferredDuringSchedulingIgnoredDuringExecution", []) + [
        {"podAffinityTerm": t} for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution", [])
    ]
    assert terms
    term = terms[0]["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert term["labelSelector"]["matchLabels"].items() <= pod_labels.items()


def test_service_and_pdb_select_the_scheduler_pods(
    objects: list[dict[str, Any]], deployment: dict[str, Any]
) -> None:
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    service = only(objects, "Service", "py-scheduler-metrics")
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 10259, "targetPort": "metrics", "protocol": "TCP"}
    ]
    pdb = only(objects, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_example_overlay_sets_the_image_and_keeps_the_name() -> None:
    k = kustomization(DEPLOY / "overlays" / "example")
    assert k["resources"] == ["../../base"]
    assert [i["name"] for i in k["images"]] == [IMAGE]
    assert k["images"][0]["newName"] != IMAGE
    config = yaml.safe_load((DEPLOY / "overlays" / "example" / "config.yaml").read_text())
    assert config["leaderElection"]["resourceName"] == "py-scheduler"
    assert [p["schedulerName"] for p in config["profiles"]] == ["py-scheduler"]


def test_servicemonitor_component_scrapes_the_metrics_service(objects: list[dict[str, Any]]) -> None:
    directory = DEPLOY / "components" / "servicemonitor"
    assert kustomization(directory)["kind"] == "Component"
    monitor = load_yaml_docs(directory / "servicemonitor.yaml")[0]
    service = only(objects, "Service", "py-scheduler-metrics")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["path"] == "/metrics"
    # As kube-prometheus scrapes kube-scheduler: HTTPS, Prometheus' own token, the self-signed cert.
    assert endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    role = load_yaml_docs(directory / "clusterrole.yaml")[0]
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


@pytest.mark.parametrize("path", [BASE / "config.yaml", DEPLOY / "overlays" / "example" / "config.yaml"])
def test_shipped_configs_load_with_the_products_own_loader(path: Path) -> None:
    from scheduler.config import load_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    config = load_config(path, registry=IN_TREE_REGISTRY)
    election = config.leader_election
    assert election.leader_elect
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15.0, 10.0, 2.0)
    assert (election.resource_namespace, election.resource_name) == ("kube-system", "py-scheduler")
    assert [profile.scheduler_name for profile in config.profiles] == ["py-scheduler"]


def test_capacity_scheduling_overlay_references_exist_and_its_config_loads() -> None:
    from scheduler.config import load_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    directory = DEPLOY / "overlays" / "capacity-scheduling"
    k = kustomization(directory)
    assert k["resources"] == ["../../base"] and "namespace" not in k
    for entry in k["resources"] + k["components"]:
        assert (directory / entry).exists(), entry
    for component in k["components"]:
        assert kustomization(directory / component)["kind"] == "Component"
        for resource in kustomization(directory / component)["resources"]:
            assert (directory / component / resource).is_file()
    config = load_config(directory / "config.yaml", registry=IN_TREE_REGISTRY)
    assert [p.scheduler_name for p in config.profiles] == [
        "py-scheduler",
        "py-scheduler-capacity",
        "py-scheduler-toleration",
        "py-scheduler-allocatable",
    ]


def test_controller_rbac_component_matches_the_charts(tmp_path: Path) -> None:
    from devcluster.helm import template

    component = load_yaml_docs(DEPLOY / "components" / "scheduler-plugins-controller-rbac" / "rbac.yaml")
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"elasticQuota": {"controllerRbac": {"create": True}}}))
    rendered = template(values_files=[values])
    chart_role = next(
        o
        for o in rendered
        if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith("scheduler-plugins-controller")
    )
    chart_binding = next(
        o
        for o in rendered
        if o["kind"] == "ClusterRoleBinding"
        and o["metadata"]["name"].endswith("scheduler-plugins-controller")
    )
    assert component[0]["rules"] == chart_role["rules"]
    assert component[1]["subjects"] == chart_binding["subjects"]


def test_noderesourcetopology_component_is_upstreams_crd_and_the_charts_rbac(tmp_path: Path) -> None:
    import os
    import subprocess

    from devcluster.helm import template

    component = DEPLOY / "components" / "noderesourcetopology-crd"
    for resource in kustomization(component)["resources"]:
        assert (component / resource).is_file()
    crd = load_yaml_docs(component / "crd.yaml")
    assert [o["metadata"]["name"] for o in crd] == ["noderesourcetopologies.topology.node.k8s.io"]
    assert [v["name"] for v in crd[0]["spec"]["versions"]] == ["v1alpha2"]
    gomodcache = (
        os.environ.get("GOMODCACHE")
        or subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False
        ).stdout.strip()
    )
    upstream = (
        Path(gomodcache) / "sigs.k8s.io/scheduler-plugins@v0.34.7/manifests/noderesourcetopology/crd.yaml"
    )
    if upstream.is_file():
        assert crd == [d for d in load_yaml_docs(upstream) if d]
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"nodeResourceTopology": {"crd": {"enabled": True}}}))
    rendered = template(values_files=[values])
    chart_role = next(
        o
        for o in rendered
        if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith(":noderesourcetopologies")
    )
    component_role = next(o for o in load_yaml_docs(component / "rbac.yaml") if o["kind"] == "ClusterRole")
    assert chart_role["rules"] == component_role["rules"]


def test_numa_aware_overlay_references_exist_and_its_config_loads() -> None:
    from scheduler.config import load_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    directory = DEPLOY / "overlays" / "numa-aware"
    k = kustomization(directory)
    assert k["resources"] == ["../../base"] and "namespace" not in k
    for entry in k["resources"] + k["components"]:
        assert (directory / entry).exists(), entry
    config = load_config(directory / "config.yaml", registry=IN_TREE_REGISTRY)
    assert [p.scheduler_name for p in config.profiles] == ["py-scheduler", "py-scheduler-numa"]
