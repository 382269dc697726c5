"""deploy/helm/py-scheduler rendered with the pinned helm (no cluster): versions, schema, where values land.

tests/integration/test_helm_deploy.py compares the default rendering with the kustomize base and applies it.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster.helm import CHART, HelmError, template, template_text
from tests.grafana import DASHBOARD

ROOT = Path(__file__).resolve().parents[3]
ALL_VALUES = CHART / "ci" / "all-values.yaml"
VALUES: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())


def only(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, (
        f"expected one {kind} {name or ''}, found {[o['metadata']['name'] for o in found]}"
    )
    return found[0]


def kinds(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in objects)


def pod_spec(objects: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = only(objects, "Deployment")["spec"]["template"]["spec"]
    return spec


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [result] = pod_spec(objects)["containers"]
    return dict(result)


def scheduler_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    config_map = next(o for o in objects if o["kind"] == "ConfigMap" and "config.yaml" in o["data"])
    config: dict[str, Any] = yaml.safe_load(config_map["data"]["config.yaml"])
    return config


@pytest.fixture(scope="module")
def default() -> list[dict[str, Any]]:
    return template()


@pytest.fixture(scope="module")
def everything() -> list[dict[str, Any]]:
    return template(values_files=[ALL_VALUES])


# --- versions and schema ---------------------------------------------------------------------------


def test_chart_and_app_version_follow_the_package_version() -> None:
    package = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == package
    assert chart["appVersion"] == package


def test_default_image_tag_is_the_app_version_and_matches_the_kustomize_base(
    default: list[dict[str, Any]],
) -> None:
    base = yaml.safe_load((ROOT / "deploy" / "base" / "kustomization.yaml").read_text())
    [image] = base["images"]
    appversion = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    assert (
        container(default)["image"] == f"{image['name']}:{appversion}" == f"{image['name']}:{image['newTag']}"
    )


def _object_schemas(node: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        if "properties" in node:
            yield path, node
        for key, value in node.items():
            yield from _object_schemas(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _object_schemas(value, f"{path}[{i}]")


def test_every_object_the_schema_defines_is_closed() -> None:
    schemas = list(_object_schemas(SCHEMA))
    assert len(schemas) > 30
    for path, schema in schemas:
        assert schema.get("additionalProperties") is False, f"{path} accepts unknown keys"


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/definitions/")
        schema = SCHEMA["definitions"][name]
    return schema


def _leaves(values: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _leaves(value, f"{path}.")
        else:
            yield path


def _schema_keys(schema: dict[str, Any], prefix: str = "", *, follow_refs: bool) -> Iterator[str]:
    for key, ref in schema.get("properties", {}).items():
        path = f"{prefix}{key}"
        yield path
        if "$ref" in ref and not follow_refs:
            continue  # a Kubernetes or KubeSchedulerConfiguration type: values.yaml shows only some fields
        sub = _resolve(ref)
        if sub.get("additionalProperties") is False:
            yield from _schema_keys(sub, f"{path}.", follow_refs=follow_refs)


def _covered(key: str, keys: set[str]) -> bool:
    return any(k == key or k.startswith(key + ".") for k in keys)


def test_values_yaml_and_schema_describe_the_same_keys() -> None:
    in_values = set(_leaves(VALUES))
    chart_keys = set(_schema_keys(SCHEMA, follow_refs=False)) - {"global"}  # helm's, for parent charts
    undocumented = {k for k in chart_keys if not _covered(k, in_values)}
    assert not undocumented, f"schema keys missing from values.yaml: {sorted(undocumented)}"
    # Free-form maps (labels, requests...) have leaves below a schema key; others must be in the schema.
    all_keys = set(_schema_keys(SCHEMA, follow_refs=True))
    unchecked = {v for v in in_values if not any(v == k or v.startswith(k + ".") for k in all_keys)}
    assert not unchecked, f"values.yaml keys the schema does not know: {sorted(unchecked)}"


def test_all_values_file_sets_every_key() -> None:
    everything_set = set(_leaves(yaml.safe_load(ALL_VALUES.read_text())))
    missing = {k for k in _leaves(VALUES) if not _covered(k, everything_set)}
    assert not missing, f"ci/all-values.yaml does not exercise {sorted(missing)}"


@pytest.mark.parametrize(
    ("set_values", "message"),
    [
        ({"imge.tag": "x"}, "imge"),  # typo at the top level
        ({"image.tga": "x"}, "tga"),
        ({"leaderElection.leaseDurtion": "15s"}, "leaseDurtion"),
        ({"leaderElection.leaseDuration": "15"}, "leaseDuration"),  # not a Go duration
        ({"profiles[0].plugins.scroe.enabled[0].name": "X"}, "scroe"),
        ({"profiles[0].pluginConfig[0].nmae": "X"}, "nmae"),
        ({"podSecurityContext.runAsNonroot": "true"}, "runAsNonroot"),
        ({"containerSecurityContext.capabilities.dorp[0]": "ALL"}, "dorp"),
        ({"resources.request.cpu": "1"}, "request"),
        ({"tolerations[0].opertor": "Exists"}, "opertor"),
        ({"metrics.serviceMonitor.enbled": "true"}, "enbled"),
        ({"log.format": "yaml"}, "format"),
        ({"podAntiAffinity": "strict"}, "podAntiAffinity"),
        ({"replicas": "two"}, "replicas"),
        ({"image.digest": "latest"}, "digest"),
        ({"extenders[0].urlprefix": "http://x"}, "urlprefix"),
        ({"grafanaDashboard.label.a": "b"}, "label"),
        ({"podGroup.crd.enabled": "yes"}, "enabled"),
    ],
)
def test_schema_rejects_typos_and_bad_values(set_values: dict[str, str], message: str) -> None:
    with pytest.raises(HelmError, match=message) as err:
        template_text(set_values=set_values)
    assert "schema" in str(err.value).lower()


# --- the default rendering -------------------------------------------------------------------------


def test_default_objects(default: list[dict[str, Any]]) -> None:
    assert kinds(default) == [
        ("ClusterRoleBinding", "py-scheduler:auth-delegator"),
        ("ClusterRoleBinding", "py-scheduler:kube-scheduler"),
        ("ClusterRoleBinding", "py-scheduler:volume-scheduler"),
        ("ConfigMap", "py-scheduler-config"),
        ("Deployment", "py-scheduler"),
        ("PodDisruptionBudget", "py-scheduler"),
        ("Role", "py-scheduler:leader-election"),
        ("RoleBinding", "py-scheduler:extension-apiserver-authentication-reader"),
        ("RoleBinding", "py-scheduler:leader-election"),
        ("Service", "py-scheduler-metrics"),
        ("ServiceAccount", "py-scheduler"),
    ]
    for obj in default:
        namespace = obj["metadata"].get("namespace")
        if obj["kind"] == "ClusterRoleBinding":
            assert namespace is None
        elif obj["kind"] in {"Role", "RoleBinding"}:
            assert namespace == "kube-system"
        else:
            assert namespace == "py-scheduler"


def test_default_config_loads_with_the_products_loader(default: list[dict[str, Any]], tmp_path: Path) -> None:
    from scheduler.config import load_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(scheduler_config(default)))
    config = load_config(path, registry=IN_TREE_REGISTRY)
    election = config.leader_election
    assert election.leader_elect
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15.0, 10.0, 2.0)
    assert (election.resource_namespace, election.resource_name) == ("kube-system", "py-scheduler")
    assert [p.scheduler_name for p in config.profiles] == ["py-scheduler"]


def test_selectors_select_the_pods(default: list[dict[str, Any]]) -> None:
    deployment = only(default, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert only(default, "Service")["spec"]["selector"].items() <= pod_labels.items()
    assert (
        only(default, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    )
    term = pod_spec(default)["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term[0]["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= pod_labels.items()


def test_rbac_subjects_are_the_service_account(default: list[dict[str, Any]]) -> None:
    for binding in (o for o in default if o["kind"] in {"ClusterRoleBinding", "RoleBinding"}):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "py-scheduler", "namespace": "py-scheduler"}
        ]
    assert pod_spec(default)["serviceAccountName"] == "py-scheduler"


# --- every value, and where it lands ----------------------------------------------------------------


def test_all_values_objects(everything: list[dict[str, Any]]) -> None:
    assert kinds(everything) == [
        ("ClusterRole", "pysched-all:metrics-reader"),
        ("ClusterRole", "pysched-all:scheduler-plugins-controller"),
        ("ClusterRoleBinding", "pysched-all:auth-delegator"),
        ("ClusterRoleBinding", "pysched-all:kube-scheduler"),
        ("ClusterRoleBinding", "pysched-all:metrics-reader"),
        ("ClusterRoleBinding", "pysched-all:scheduler-plugins-controller"),
        ("ClusterRoleBinding", "pysched-all:volume-scheduler"),
        ("ConfigMap", "pysched-all-config"),
        ("ConfigMap", "pysched-all-dashboard"),
        ("Deployment", "pysched-all"),
        ("Namespace", "py-scheduler"),
        ("PodDisruptionBudget", "pysched-all"),
        ("Role", "pysched-all:leader-election"),
        ("RoleBinding", "pysched-all:extension-apiserver-authentication-reader"),
        ("RoleBinding", "pysched-all:leader-election"),
        ("Service", "pysched-all-metrics"),
        ("ServiceAccount", "pysched-sa"),
        ("ServiceMonitor", "pysched-all"),
    ]


def test_all_values_pod(everything: list[dict[str, Any]]) -> None:
    deployment = only(everything, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["revisionHistoryLimit"] == 2
    template_meta = deployment["spec"]["template"]["metadata"]
    assert template_meta["labels"]["team"] == "platform"
    assert template_meta["labels"]["app.kubernetes.io/name"] == "pysched"
    assert template_meta["annotations"]["example.com/note"] == "all-values"
    pod = pod_spec(everything)
    assert pod["serviceAccountName"] == "pysched-sa"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["priorityClassName"] == "system-node-critical"
    assert pod["terminationGracePeriodSeconds"] == 45
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["tolerations"][0]["key"] == "node-role.kubernetes.io/control-plane"
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone"
    assert list(pod["affinity"]) == ["nodeAffinity"]  # `affinity` replaces the podAntiAffinity preset
    assert pod["securityContext"]["fsGroup"] == 10001
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == "py-scheduler-tls"
    assert volumes["config"]["configMap"]["name"] == "pysched-all-config"


def test_all_values_container(everything: list[dict[str, Any]]) -> None:
    c = container(everything)
    assert c["image"] == (
        "registry.example.com/platform/py-scheduler:0.1.0-rc1"
        "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    )
    assert c["imagePullPolicy"] == "Always"
    args = c["args"]
    assert args[args.index("--secure-port") + 1] == "10260"
    assert "--port" not in args  # never the insecure port
    assert args[args.index("--log-format") + 1] == "text"
    assert args[args.index("-v") + 1] == "4"
    assert args[args.index("--tls-cert-file") + 1] == "/etc/py-scheduler-tls/tls.crt"
    assert args[args.index("--tls-private-key-file") + 1] == "/etc/py-scheduler-tls/tls.key"
    assert args[-1] == "--leader-elect=true"
    assert c["env"] == [{"name": "PYTHONFAULTHANDLER", "value": "1"}]
    assert c["ports"] == [{"name": "metrics", "containerPort": 10260, "protocol": "TCP"}]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"]["scheme"] == "HTTPS"
    assert c["resources"] == {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}}
    assert c["securityContext"]["runAsUser"] == 10001
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts["tls"] == "/etc/py-scheduler-tls"


def test_all_values_scheduler_config(everything: list[dict[str, Any]]) -> None:
    config = scheduler_config(everything)
    all_values = yaml.safe_load(ALL_VALUES.read_text())
    assert config["profiles"] == all_values["profiles"] + POLICY_PROFILES
    assert config["extenders"] == all_values["extenders"]
    assert config["leaderElection"] == {
        "leaderElect": True,
        "leaseDuration": "30s",
        "renewDeadline": "20s",
        "retryPeriod": "4s",
        "resourceName": "pysched-lease",
        "resourceNamespace": "kube-system",
    }
    assert config["percentageOfNodesToScore"] == 50
    assert (config["podInitialBackoffSeconds"], config["podMaxBackoffSeconds"]) == (2, 20)
    assert config["parallelism"] == 8
    assert config["clientConnection"] == {"qps": 100, "burst": 200}


# What ci/all-values.yaml's `policies` render to, after its own profiles.
POLICY_PROFILES: list[dict[str, Any]] = [
    {
        "schedulerName": "pysched-quota",
        "plugins": {
            "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
            "postFilter": {"enabled": [{"name": "CapacityScheduling"}], "disabled": [{"name": "*"}]},
        },
    },
    {
        "schedulerName": "pysched-toleration",
        "plugins": {
            "postFilter": {
                "enabled": [{"name": "PreemptionToleration"}],
                "disabled": [{"name": "DefaultPreemption"}],
            }
        },
        "pluginConfig": [
            {
                "name": "PreemptionToleration",
                "args": {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": 50},
            }
        ],
    },
    {
        "schedulerName": "pysched-allocatable",
        "plugins": {"score": {"enabled": [{"name": "NodeResourcesAllocatable", "weight": 3}]}},
        "pluginConfig": [
            {
                "name": "NodeResourcesAllocatable",
                "args": {
                    "mode": "Most",
                    "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
                },
            }
        ],
    },
    {
        "schedulerName": "pysched-numa",
        "plugins": {
            "filter": {"enabled": [{"name": "NodeResourceTopologyMatch"}]},
            "score": {"enabled": [{"name": "NodeResourceTopologyMatch", "weight": 2}]},
            "reserve": {"enabled": [{"name": "NodeResourceTopologyMatch"}]},
            "postBind": {"enabled": [{"name": "NodeResourceTopologyMatch"}]},
        },
        "pluginConfig": [
            {
                "name": "NodeResourceTopologyMatch",
                "args": {
                    "scoringStrategy": {
                        "type": "LeastNUMANodes",
                        "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
                    },
                    "cacheResyncPeriodSeconds": 5,
                    "discardReservedNodes": False,
                    "cache": {
                        "foreignPodsDetect": "OnlyExclusiveResources",
                        "resyncMethod": "OnlyExclusiveResources",
                        "informerMode": "Shared",
                        "resyncScope": "OnlyResources",
                    },
                },
            }
        ],
    },
    # The load-aware policies, in the order of their keys.
    {
        "schedulerName": "pysched-load-variation",
        "plugins": {"score": {"enabled": [{"name": "LoadVariationRiskBalancing", "weight": 3}]}},
        "pluginConfig": [
            {
                "name": "LoadVariationRiskBalancing",
                "args": {
                    # The watcher service wins over the metric provider when both are set.
                    "metricProvider": {
                        "type": "Prometheus",
                        "address": "http://prometheus.monitoring:9090",
                        "token": "t2",
                        "insecureSkipVerify": False,
                    },
                    "watcherAddress": "http://load-watcher.monitoring:2020",
                    "safeVarianceMargin": 2,
                    "safeVarianceSensitivity": 0.5,
                },
            }
        ],
    },
    {
        "schedulerName": "pysched-low-risk",
        "plugins": {
            "score": {"enabled": [{"name": "LowRiskOverCommitment", "weight": 4}]},
            "preScore": {"enabled": [{"name": "LowRiskOverCommitment"}]},
        },
        "pluginConfig": [
            {
                "name": "LowRiskOverCommitment",
                "args": {
                    "metricProvider": {
                        "type": "Prometheus",
                        "address": "https://prometheus.monitoring:9091",
                        "token": "t0ken",
                        "insecureSkipVerify": False,
                    },
                    "watcherAddress": "http://load-watcher.monitoring:2020",
                    "smoothingWindowSize": 3,
                    "riskLimitWeights": {"cpu": 0.3, "memory": 0.7},
                },
            }
        ],
    },
    {
        "schedulerName": "pysched-target-load",
        "plugins": {"score": {"enabled": [{"name": "TargetLoadPacking", "weight": 2}]}},
        "pluginConfig": [
            {
                "name": "TargetLoadPacking",
                "args": {
                    "metricProvider": {
                        "type": "Prometheus",
                        "address": "http://prometheus.monitoring:9090",
                        "token": "t1",
                        "insecureSkipVerify": False,
                    },
                    "watcherAddress": "http://load-watcher.monitoring:2020",
                    "targetUtilization": 60,
                    "defaultRequests": {"cpu": "500m"},
                    "defaultRequestsMultiplier": "2",
                },
            }
        ],
    },
]


def test_policies_are_off_by_default(default: list[dict[str, Any]]) -> None:
    assert [p["schedulerName"] for p in scheduler_config(default)["profiles"]] == ["py-scheduler"]
    assert not [o for o in default if "scheduler-plugins-controller" in o["metadata"]["name"]]


def test_each_policy_alone_renders_its_profile_and_its_args_reach_the_plugin(tmp_path: Path) -> None:
    from scheduler.config import load_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    policies = {
        "capacityScheduling": 0,
        "preemptionToleration": 1,
        "nodeResourcesAllocatable": 2,
        "nodeResourceTopologyMatch": 3,
        "loadVariationRiskBalancing": 4,
        "lowRiskOverCommitment": 5,
        "targetLoadPacking": 6,
    }
    for policy, index in policies.items():
        values = tmp_path / f"{policy}.yaml"
        all_policies = yaml.safe_load(ALL_VALUES.read_text())["policies"]
        values.write_text(yaml.safe_dump({"policies": {policy: all_policies[policy]}}))
        config = scheduler_config(template(values_files=[values]))
        assert config["profiles"][1:] == [POLICY_PROFILES[index]], policy
        path = tmp_path / f"{policy}-config.yaml"
        path.write_text(yaml.safe_dump(config))
        loaded = load_config(path, registry=IN_TREE_REGISTRY)
        assert [p.scheduler_name for p in loaded.profiles] == [
            "py-scheduler",
            POLICY_PROFILES[index]["schedulerName"],
        ]


def test_load_aware_policy_refuses_providers_it_cannot_read(tmp_path: Path) -> None:
    values = tmp_path / "bad.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "policies": {
                    "targetLoadPacking": {"enabled": True, "args": {"metricProvider": {"type": "SignalFx"}}}
                }
            }
        )
    )
    with pytest.raises(HelmError, match="type"):
        template(values_files=[values])


def test_bad_policy_args_are_refused_by_the_schema(tmp_path: Path) -> None:
    values = tmp_path / "bad.yaml"
    values.write_text(
        yaml.safe_dump(
            {"policies": {"nodeResourcesAllocatable": {"enabled": True, "args": {"mode": "Lest"}}}}
        )
    )
    with pytest.raises(HelmError, match="mode"):
        template(values_files=[values])


def test_all_values_config_loads_with_its_extenders(everything: list[dict[str, Any]], tmp_path: Path) -> None:
    """The config the chart renders from every value (extenders included) is a valid configuration."""
    from scheduler.config import load_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    config = scheduler_config(everything)
    assert config["extenders"], "all-values.yaml should exercise extenders"
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    loaded = load_config(path, registry=IN_TREE_REGISTRY)
    assert [p.scheduler_name for p in loaded.profiles] == [
        "py-scheduler",
        "py-scheduler-binpack",
        "pysched-quota",
        "pysched-toleration",
        "pysched-allocatable",
        "pysched-numa",
        "pysched-load-variation",
        "pysched-low-risk",
        "pysched-target-load",
    ]
    assert loaded.leader_election.resource_name == "pysched-lease"
    assert len(loaded.extenders) == len(config["extenders"])


def test_all_values_rbac_and_namespace(everything: list[dict[str, Any]]) -> None:
    role = only(everything, "Role")
    assert role["rules"][1]["resourceNames"] == ["pysched-lease"]
    reader = only(everything, "ClusterRoleBinding", "pysched-all:metrics-reader")
    assert reader["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
    ]
    assert reader["roleRef"]["name"] == "pysched-all:metrics-reader"
    assert only(everything, "ClusterRole", "pysched-all:metrics-reader")["rules"] == [
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    ]
    controller = only(everything, "ClusterRoleBinding", "pysched-all:scheduler-plugins-controller")
    assert controller["subjects"] == [
        {"kind": "ServiceAccount", "name": "sp-controller", "namespace": "sp-system"}
    ]
    rules = only(everything, "ClusterRole", "pysched-all:scheduler-plugins-controller")["rules"]
    assert {
        "apiGroups": ["scheduling.x-k8s.io"],
        "resources": ["elasticquotas/status", "podgroups/status"],
        "verbs": ["get", "update", "patch"],
    } in rules
    bindings = (
        o
        for o in everything
        if o["kind"] in {"ClusterRoleBinding", "RoleBinding"} and o is not reader and o is not controller
    )
    for binding in bindings:
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "pysched-sa", "namespace": "py-scheduler"}
        ]
    account = only(everything, "ServiceAccount")
    assert account["metadata"]["annotations"] == {"example.com/owner": "platform"}
    labels = only(everything, "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels["team"] == "platform"
    assert only(everything, "PodDisruptionBudget")["spec"] == {
        "minAvailable": 2,
        "selector": only(everything, "Deployment")["spec"]["selector"],
    }


def test_all_values_monitoring(everything: list[dict[str, Any]]) -> None:
    service = only(everything, "Service")
    assert service["metadata"]["annotations"] == {"example.com/scrape": "true"}
    assert service["metadata"]["labels"]["team"] == "platform"
    assert service["spec"]["ports"][0]["port"] == 10260
    monitor = only(everything, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert endpoint["tlsConfig"]["serverName"] == "py-scheduler-metrics.py-scheduler.svc"
    assert (endpoint["interval"], endpoint["scrapeTimeout"]) == ("15s", "10s")
    assert endpoint["relabelings"][0]["targetLabel"] == "cluster"
    assert endpoint["metricRelabelings"][0]["action"] == "drop"
    dashboard = only(everything, "ConfigMap", "pysched-all-dashboard")
    assert dashboard["metadata"]["namespace"] == "monitoring"
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["annotations"] == {"grafana_folder": "Kubernetes"}
    assert json.loads(dashboard["data"]["py-scheduler.json"]) == json.loads(DASHBOARD.read_text())


# --- switches and guards ---------------------------------------------------------------------------


def test_min_available_replaces_max_unavailable() -> None:
    pdb = only(template(set_values={"podDisruptionBudget.minAvailable": "1"}), "PodDisruptionBudget")
    assert "maxUnavailable" not in pdb["spec"]
    assert pdb["spec"]["minAvailable"] == 1
    assert "PodDisruptionBudget" not in {
        o["kind"] for o in template(set_values={"podDisruptionBudget.enabled": "false"})
    }


def test_hard_anti_affinity_and_none() -> None:
    hard = pod_spec(template(set_values={"podAntiAffinity": "hard"}))["affinity"]["podAntiAffinity"]
    [term] = hard["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert "affinity" not in pod_spec(template(set_values={"podAntiAffinity": "none"}))


def test_leader_election_off_drops_the_lease_role() -> None:
    objects = template(set_values={"leaderElection.enabled": "false", "replicas": "1"})
    assert scheduler_config(objects)["leaderElection"] == {"leaderElect": False}
    assert not [o for o in objects if o["kind"] == "Role"]
    assert only(objects, "Deployment")["spec"]["replicas"] == 1


def test_rbac_and_service_account_can_be_external() -> None:
    objects = template(
        set_values={"rbac.create": "false", "serviceAccount.create": "false", "serviceAccount.name": "mine"}
    )
    assert not [o for o in objects if "Role" in o["kind"] or o["kind"] == "ServiceAccount"]
    assert pod_spec(objects)["serviceAccountName"] == "mine"


def test_release_name_drives_names_and_the_lease() -> None:
    objects = template("blue", "sched")
    assert only(objects, "Deployment")["metadata"]["name"] == "blue-py-scheduler"
    assert scheduler_config(objects)["leaderElection"]["resourceName"] == "blue-py-scheduler"
    assert only(objects, "Role")["rules"][1]["resourceNames"] == ["blue-py-scheduler"]
    assert only(objects, "ServiceAccount")["metadata"]["namespace"] == "sched"


def test_config_change_rolls_the_pods() -> None:
    def checksum(**set_json: Any) -> str:
        deployment = only(template(set_json=set_json), "Deployment")
        value: str = deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        return value

    assert checksum() == checksum()
    assert checksum() != checksum(profiles=[{"schedulerName": "other"}])


@pytest.mark.parametrize(
    ("set_values", "message"),
    [
        ({"serviceAccount.create": "false"}, "serviceAccount.name is required"),
        ({"leaderElection.resourceName": "kube-scheduler"}, "must not be kube-scheduler"),
        (
            {"metrics.service.enabled": "false", "metrics.serviceMonitor.enabled": "true"},
            "needs metrics.service",
        ),
        ({"tls.enabled": "true"}, "tls.secretName is required"),
    ],
)
def test_inconsistent_values_fail_with_a_message(set_values: dict[str, str], message: str) -> None:
    with pytest.raises(HelmError, match=message):
        template_text(set_values=set_values)


# --- podGroup.crd.enabled: the kustomize component's objects ------------------------------------------


def test_pod_group_crd_renders_the_kustomize_component() -> None:
    component = ROOT / "deploy/components/podgroup-crd"
    expected = [
        doc
        for name in ("crd.yaml", "rbac.yaml")
        for doc in yaml.safe_load_all((component / name).read_text())
        if doc
    ]
    rendered = template(set_values={"podGroup.crd.enabled": "true"})
    got = [
        o for o in rendered if o["kind"] == "CustomResourceDefinition" or "podgroups" in o["metadata"]["name"]
    ]

    def comparable(obj: dict[str, Any]) -> tuple[str, str, str]:
        obj = json.loads(json.dumps(obj))
        obj["metadata"].pop("labels", None)  # the chart's standard labels differ from the component's
        return obj["kind"], obj["metadata"]["name"], json.dumps(obj, sort_keys=True)

    assert sorted(map(comparable, got)) == sorted(map(comparable, expected))
    # The chart's copy of the CRD is byte-for-byte the component's.
    assert (CHART / "files/podgroup-crd.yaml").read_text() == (component / "crd.yaml").read_text()


def test_pod_group_crd_is_off_by_default(default: list[dict[str, Any]]) -> None:
    assert not [o for o in default if "podgroup" in o["metadata"]["name"]]


def test_numa_policy_renders_its_profile_and_its_args_reach_the_plugin(tmp_path: Path) -> None:
    from scheduler.config import load_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    values = tmp_path / "numa.yaml"
    numa = yaml.safe_load(ALL_VALUES.read_text())["policies"]["nodeResourceTopologyMatch"]
    values.write_text(yaml.safe_dump({"policies": {"nodeResourceTopologyMatch": numa}}))
    config = scheduler_config(template(values_files=[values]))
    assert config["profiles"][1:] == [POLICY_PROFILES[3]]
    path = tmp_path / "numa-config.yaml"
    path.write_text(yaml.safe_dump(config))
    loaded = load_config(path, registry=IN_TREE_REGISTRY)
    assert [p.scheduler_name for p in loaded.profiles] == ["py-scheduler", "pysched-numa"]


@pytest.mark.parametrize(
    "args",
    [
        {"scoringStrategy": {"type": "MostAlocated"}},
        {"cacheResyncPeriodSeconds": 5, "cache": {"resyncMethod": "Sometimes"}},
        {"cache": {"bogus": "All"}},
    ],
    ids=["unknown strategy", "unknown cache value", "unknown cache field"],
)
def test_bad_numa_args_are_refused_by_the_schema(tmp_path: Path, args: dict[str, Any]) -> None:
    values = tmp_path / "bad.yaml"
    values.write_text(
        yaml.safe_dump({"policies": {"nodeResourceTopologyMatch": {"enabled": True, "args": args}}})
    )
    with pytest.raises(HelmError):
        template(values_files=[values])


@pytest.mark.parametrize(
    "args",
    [
        {"cacheResyncPeriodSeconds": 5, "cache": {"informerMode": "Shared", "foreignPodsDetect": "None"}},
        {"discardReservedNodes": True},
    ],
    ids=["overreserve", "discard reserved"],
)
def test_numa_reserve_side_cache_enables_reserve_and_post_bind(tmp_path: Path, args: dict[str, Any]) -> None:
    from scheduler.config import load_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    values = tmp_path / "cache.yaml"
    values.write_text(
        yaml.safe_dump({"policies": {"nodeResourceTopologyMatch": {"enabled": True, "args": args}}})
    )
    profile = scheduler_config(template(values_files=[values]))["profiles"][-1]
    numa = [{"name": "NodeResourceTopologyMatch"}]
    assert profile["plugins"]["reserve"] == {"enabled": numa}
    assert profile["plugins"]["postBind"] == {"enabled": numa}
    rendered = profile["pluginConfig"][0]["args"]
    for key, value in args.items():
        if isinstance(value, dict):
            assert {k: rendered[key][k] for k in value} == value
        else:
            assert rendered[key] == value
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(scheduler_config(template(values_files=[values]))))
    loaded = load_config(path, registry=IN_TREE_REGISTRY)
    assert [p.scheduler_name for p in loaded.profiles][-1] == "py-scheduler-numa"


def test_numa_crd_and_read_access(tmp_path: Path, default: list[dict[str, Any]]) -> None:
    values = tmp_path / "crd.yaml"
    values.write_text(
        yaml.safe_dump(
            {"fullnameOverride": "pysched-all", "nodeResourceTopology": {"crd": {"enabled": True}}}
        )
    )
    everything = template(values_files=[values])
    crd = only(everything, "CustomResourceDefinition", "noderesourcetopologies.topology.node.k8s.io")
    assert crd == yaml.safe_load((ROOT / "deploy/components/noderesourcetopology-crd/crd.yaml").read_text())
    role = only(everything, "ClusterRole", "pysched-all:noderesourcetopologies")
    assert role["rules"] == [
        {
            "apiGroups": ["topology.node.k8s.io"],
            "resources": ["noderesourcetopologies"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    assert not [o for o in default if "noderesourcetopolog" in o["metadata"]["name"]]
