"""Cluster dumps carry every kind the scheduler reads: a dump with or without an object of each kind
gives a different explain verdict, and a malformed object of a kind is refused in one line naming it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

import informers.resource as resource_module
from informers.resource import ResourceSpec
from scheduler.config import load_config_with_plugins
from scheduler.explain.manifests import (
    DUMP_KIND,
    SNAPSHOT_KINDS,
    ManifestError,
    load_dump,
    resource_of_kind,
)
from scheduler.explain.reevaluate import ConfigSource, reevaluate
from scheduler.plugins.registry import IN_TREE_REGISTRY
from scheduler.testing import builders

DRIVER = "csi.example.com"
OTHER_DRIVER = "other.csi.example.com"


def test_snapshots_hold_every_kind_the_scheduler_can_watch() -> None:
    """Every kind an informer can be started for (nodes, pods, each lister kind a plugin may ask its
    Handle for) is listed by ``snapshot`` and read back by a replay."""
    watchable = {v for v in vars(resource_module).values() if isinstance(v, ResourceSpec)}
    assert watchable - set(SNAPSHOT_KINDS) == set()
    for spec in SNAPSHOT_KINDS:
        assert resource_of_kind(spec.kind, spec.api_version) == spec.name


def test_the_two_pod_group_kinds_are_told_apart_by_api_group() -> None:
    assert resource_of_kind("PodGroup", "scheduling.x-k8s.io/v1alpha1") == "podgroups.scheduling.x-k8s.io"
    assert resource_of_kind("PodGroup", "scheduling.k8s.io/v1beta1") == "podgroups.scheduling.k8s.io"
    assert resource_of_kind("PodGroup") is None  # which one? not guessed


# --- one verdict per dump ---------------------------------------------------------------------------


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _storage(kind: str, name: str, body: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": kind, "metadata": _meta(name, namespace), **body}


def _csi_pv(name: str, driver: str, handle: str) -> dict[str, Any]:
    spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
            "csi": {"driver": driver, "volumeHandle": handle}}  # fmt: skip
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": _meta(name), "spec": spec,
            "status": {"phase": "Bound"}}  # fmt: skip


def _bound_claim(name: str, volume: str) -> dict[str, Any]:
    meta = _meta(name, "default")
    meta["annotations"] = {"pv.kubernetes.io/bind-completed": "true"}
    spec = {"volumeName": volume, "storageClassName": "", "accessModes": ["ReadWriteOnce"]}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec,
            "status": {"phase": "Bound"}}  # fmt: skip


def _csi_node(node: str, drivers: Mapping[str, int]) -> dict[str, Any]:
    listed = [{"name": d, "nodeID": node, "allocatable": {"count": n}} for d, n in drivers.items()]
    return _storage("CSINode", node, {"spec": {"drivers": listed}})


def _volume_attachment() -> dict[str, Any]:
    spec = {"attacher": DRIVER, "nodeName": "n", "source": {"persistentVolumeName": "attached"}}
    return _storage("VolumeAttachment", "va-attached", {"spec": spec, "status": {"attached": True}})


def _config(tmp_path: Path, profile: Mapping[str, Any] | None) -> ConfigSource:
    path = None
    if profile is not None:
        doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
               "profiles": [{"schedulerName": "py-scheduler", **profile}]}  # fmt: skip
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(doc))
    loaded = load_config_with_plugins(str(path) if path else None, registry=IN_TREE_REGISTRY)
    return ConfigSource(loaded, "test")


def _verdict(tmp_path: Path, items: Sequence[Mapping[str, Any]], config: ConfigSource) -> tuple[str, str]:
    """Explain's re-evaluation of default/p on a dump file of ``items``: (outcome, message)."""
    dump = tmp_path / "cluster.json"
    doc = {"apiVersion": "v1", "kind": "List", "metadata": {"snapshotKind": DUMP_KIND}, "items": list(items)}
    dump.write_bytes(orjson.dumps(doc))
    result = reevaluate("default/p", load_dump(dump), config, now=0.0)
    assert result is not None and result.record is not None, result
    return result.record["outcome"], str(result.record.get("message") or result.record.get("node"))


def _volumes_case() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Node n allows 1 volume of DRIVER; pod p uses one new volume of it (and one of OTHER_DRIVER,
    which n's CSINode does not list)."""
    cluster = [
        builders.node("n"),
        _csi_node("n", {DRIVER: 1}),
        _csi_pv("attached", DRIVER, "h-attached"),
        _csi_pv("new", DRIVER, "h-new"),
        _csi_pv("other", OTHER_DRIVER, "h-other"),
        _bound_claim("c-new", "new"),
        _bound_claim("c-other", "other"),
        builders.pod("p", pvcs=("c-new", "c-other")),
    ]
    extra = {
        "VolumeAttachment": _volume_attachment(),
        "CSIDriver": _storage(
            "CSIDriver",
            OTHER_DRIVER,
            {"spec": {"attachRequired": True, "preventPodSchedulingIfMissing": True}},
        ),
    }
    return cluster, extra


@pytest.mark.parametrize(
    ("kind", "without", "with_it"),
    [
        # NodeVolumeLimits counts the node's VolumeAttachments against its CSINode limit.
        ("VolumeAttachment", "Binding", "node(s) exceed max volume count"),
        # VolumeLimitScaling: a CSIDriver that must be installed keeps p off a node not listing it.
        ("CSIDriver", "Binding", f"{OTHER_DRIVER} CSI driver is not installed on the node"),
    ],
)
def test_volume_kinds_in_the_dump_change_the_verdict(
    tmp_path: Path, kind: str, without: str, with_it: str
) -> None:
    cluster, extra = _volumes_case()
    config = _config(tmp_path, None)
    assert _verdict(tmp_path, cluster, config)[0] == without
    outcome, message = _verdict(tmp_path, [*cluster, extra[kind]], config)
    assert outcome == "Unschedulable" and with_it in message


def test_csi_storage_capacity_in_the_dump_changes_the_verdict(tmp_path: Path) -> None:
    """VolumeBinding: a driver that publishes capacity (CSIDriver storageCapacity) provisions on a node
    only where a CSIStorageCapacity of the class has room."""
    storage_class = builders.storage_class("fast", provisioner=DRIVER)
    claim_spec = {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "5Gi"}}}  # fmt: skip
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta("c", "default"),
             "spec": claim_spec, "status": {"phase": "Pending"}}  # fmt: skip
    driver = _storage("CSIDriver", DRIVER, {"spec": {"storageCapacity": True}})
    capacity = _storage(
        "CSIStorageCapacity", "cap-n",
        {"storageClassName": "fast", "capacity": "10Gi",
         "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": "n"}}},
        namespace="kube-system",
    )  # fmt: skip
    cluster = [builders.node("n"), storage_class, claim, driver, builders.pod("p", pvcs=("c",))]
    config = _config(tmp_path, None)
    outcome, message = _verdict(tmp_path, cluster, config)
    assert outcome == "Unschedulable" and "did not have enough free storage" in message
    assert _verdict(tmp_path, [*cluster, capacity], config)[0] == "Binding"


@pytest.mark.parametrize("kind", ["ResourceSlice", "DeviceClass", "ResourceClaim"])
def test_dra_kinds_in_the_dump_change_the_verdict(tmp_path: Path, kind: str) -> None:
    """DynamicResources: p's claim is allocatable only with its class, its claim and a node's slice."""
    objects = {
        "DeviceClass": builders.device_class("gpu"),
        "ResourceSlice": builders.resource_slice("n"),
        "ResourceClaim": builders.resource_claim("gpu-claim"),
    }
    cluster = [builders.node("n"), builders.pod("p", claims=("gpu-claim",))]
    config = _config(tmp_path, None)
    assert _verdict(tmp_path, [*cluster, *objects.values()], config)[0] == "Binding"
    without = [o for k, o in objects.items() if k != kind]
    assert _verdict(tmp_path, [*cluster, *without], config)[0] == "Unschedulable"


def test_a_device_taint_rule_in_the_dump_changes_the_verdict(tmp_path: Path) -> None:
    """DRADeviceTaintRules: a rule tainting the node's only device NoSchedule leaves p's claim
    unallocatable."""
    taint = {"key": "maintenance", "value": "yes", "effect": "NoSchedule"}
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": _meta("drain"),
            "spec": {"deviceSelector": {"driver": "gpu.example.com"}, "taint": taint}}  # fmt: skip
    cluster = [builders.node("n"), builders.pod("p", claims=("gpu-claim",)), builders.device_class("gpu"),
               builders.resource_slice("n"), builders.resource_claim("gpu-claim")]  # fmt: skip
    config = _config(tmp_path, None)
    assert _verdict(tmp_path, cluster, config)[0] == "Binding"
    assert _verdict(tmp_path, [*cluster, rule], config)[0] == "Unschedulable"


def test_a_node_resource_topology_in_the_dump_changes_the_verdict(tmp_path: Path) -> None:
    """NodeResourceTopologyMatch: a Guaranteed pod of 3 CPUs fits the node's 4, but not one NUMA zone of
    2 under the single-NUMA-node policy its NodeResourceTopology reports."""
    zones = [{"name": f"node-{i}", "type": "Node",
              "resources": [{"name": "cpu", "capacity": "2", "allocatable": "2", "available": "2"},
                            {"name": "memory", "capacity": "8Gi", "allocatable": "8Gi", "available": "8Gi"}]}
             for i in range(2)]  # fmt: skip
    topology = {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
                "metadata": _meta("n"), "topologyPolicies": ["SingleNUMANodeContainerLevel"],
                "zones": zones}  # fmt: skip
    pod = builders.pod("p", cpu="3", memory="1Gi")
    resources = pod["spec"]["containers"][0]["resources"]
    resources["limits"] = dict(resources["requests"])  # Guaranteed
    config = _config(
        tmp_path, {"plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}}}
    )
    cluster = [builders.node("n", cpu="4"), pod]
    assert _verdict(tmp_path, cluster, config)[0] == "Binding"
    assert _verdict(tmp_path, [*cluster, topology], config)[0] == "Unschedulable"


def test_a_replication_controller_in_the_dump_changes_the_scores(tmp_path: Path) -> None:
    """PodTopologySpread's system default constraints spread the pods of a controller: with the pods'
    ReplicationController in the dump p is scored for spreading, without it not at all."""
    owner = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "name": "web",
        "uid": "rc",
        "controller": True,
    }

    def web(name: str, node_name: str | None = None) -> dict[str, Any]:
        made = builders.pod(name, labels={"app": "web"}, node_name=node_name, cpu="100m")
        made["metadata"]["ownerReferences"] = [owner]
        return made

    controller = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": _meta("web", "default"),
                  "spec": {"selector": {"app": "web"}}}  # fmt: skip
    nodes = [builders.node("a", zone="z1"), builders.node("b", zone="z2")]
    cluster = [*nodes, *(web(f"e{i}", "a") for i in range(3)), web("p")]
    config = _config(tmp_path, None)

    def spread_scores(items: list[dict[str, Any]]) -> dict[str, Any]:
        dump = tmp_path / "cluster.json"
        dump.write_bytes(orjson.dumps({"kind": "List", "items": items}))
        result = reevaluate("default/p", load_dump(dump), config, now=0.0)
        assert result is not None and result.record is not None
        return {s["node"]: s["plugins"].get("PodTopologySpread") for s in result.record["scores"]}

    assert spread_scores(cluster) == {"a": None, "b": None}
    with_rc = spread_scores([*cluster, controller])
    assert with_rc["a"] is not None and with_rc["b"] is not None
    assert with_rc["a"]["raw"] > with_rc["b"]["raw"]  # a holds the 3 others: more skew


def test_a_scheduler_plugins_pod_group_in_the_dump_changes_the_verdict(tmp_path: Path) -> None:
    """Coscheduling: a pod of a PodGroup of minMember 3 with no siblings waits in PreFilter."""
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": _meta("pg", "default"), "spec": {"minMember": 3}}  # fmt: skip
    member = builders.pod("p", labels={"scheduling.x-k8s.io/pod-group": "pg"})
    config = _config(
        tmp_path,
        {
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"disabled": [{"name": "PrioritySort"}]},
            }
        },
    )
    cluster = [builders.node("n"), member]
    outcome, _ = _verdict(tmp_path, [*cluster, group], config)
    assert outcome == "Unschedulable"
    assert _verdict(tmp_path, cluster, config)[0] != outcome


def test_an_elastic_quota_in_the_dump_changes_the_verdict(tmp_path: Path) -> None:
    """CapacityScheduling: a pod over its namespace's ElasticQuota max is refused in PreFilter."""
    limits = {"min": {"cpu": "1"}, "max": {"cpu": "1"}}
    quota = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota",
             "metadata": _meta("q", "default"), "spec": limits}  # fmt: skip
    config = _config(tmp_path, {"plugins": {"multiPoint": {"enabled": [{"name": "CapacityScheduling"}]}}})
    cluster = [builders.node("n"), builders.pod("p", cpu="2")]
    assert _verdict(tmp_path, cluster, config)[0] == "Binding"
    assert _verdict(tmp_path, [*cluster, quota], config)[0] == "Unschedulable"


# --- malformed objects --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "line"),
    [
        (
            {**_volume_attachment(), "spec": {"attacher": DRIVER, "nodeName": 7, "source": {}}},
            "item 1 (VolumeAttachment va-attached): spec.nodeName must be a string, got 7",
        ),
        (
            {**_volume_attachment(), "spec": {"attacher": DRIVER, "source": {}}},
            "item 1 (VolumeAttachment va-attached): spec.nodeName is missing",
        ),
        (
            _storage("CSIDriver", DRIVER, {"spec": {"preventPodSchedulingIfMissing": "yes"}}),
            f"item 1 (CSIDriver {DRIVER}): spec.preventPodSchedulingIfMissing must be a boolean, got 'yes'",
        ),
        (
            _storage(
                "CSINode", "n", {"spec": {"drivers": [{"name": DRIVER, "allocatable": {"count": "2"}}]}}
            ),
            "item 1 (CSINode n): spec.drivers[0].allocatable.count must be an integer, got '2'",
        ),
        (
            _storage("CSIStorageCapacity", "cap", {"capacity": "1Gi"}, namespace="kube-system"),
            "item 1 (CSIStorageCapacity kube-system/cap): storageClassName is missing",
        ),
        (
            {**builders.resource_slice("n"), "spec": {"driver": "d", "pool": {"name": "p"}, "devices": [{}]}},
            "item 1 (ResourceSlice n-gpu.example.com): spec.devices[0].name is missing",
        ),
        (
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": _meta("pg", "d"),
                "spec": {"minMember": True},
            },
            "item 1 (PodGroup d/pg): spec.minMember must be an integer, got True",
        ),
        (
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": ""}},
            "item 1 (PriorityClass (no name)): metadata.name must be a non-empty string, got ''",
        ),
        (
            {"kind": "PodGroup", "metadata": _meta("pg", "d")},
            "item 1: PodGroup d/pg: no apiVersion, and PodGroup is more than one kind",
        ),
    ],
)
def test_a_malformed_object_of_a_read_kind_is_one_error_line_naming_it(
    tmp_path: Path, item: dict[str, Any], line: str
) -> None:
    dump = tmp_path / "cluster.json"
    dump.write_bytes(orjson.dumps({"kind": "List", "items": [builders.node("n"), item]}))
    with pytest.raises(ManifestError) as raised:
        load_dump(dump)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{dump}: {line}"), message


def test_the_cli_prints_a_malformed_dump_as_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scheduler.explain.cli import main

    dump = tmp_path / "cluster.json"
    bad = {**_volume_attachment(), "status": {"attached": "true"}}
    dump.write_bytes(orjson.dumps({"kind": "List", "items": [builders.node("n"), bad]}))
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump(builders.pod("p")))
    assert main(["simulate", "--cluster", str(dump), "--pods", str(pods)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"py-scheduler simulate: {dump}: item 1 (VolumeAttachment va-attached): status.attached must be "
        "a boolean, got 'true'\n"
    )
