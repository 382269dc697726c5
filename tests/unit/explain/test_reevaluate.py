"""explain's re-evaluation when the record cannot be had: where the configuration comes from, and the
pod judged on the listed cluster (the integration test runs it as a new user on the control plane)."""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from scheduler.explain.reevaluate import CONFIG_MAP, LABEL, find_config, reevaluate
from scheduler.plugins.registry import IN_TREE_REGISTRY
from tests.unit.fakes import make_node, make_pod

MOST_ALLOCATED = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "packer",
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
            ],
        }
    ],
}


def refused(path: str) -> tuple[int, bytes]:
    return 403, orjson.dumps({"message": f"forbidden: {path}"})


def test_the_config_map_is_read_first_then_configz_then_the_defaults() -> None:
    def api_get(path: str) -> tuple[int, bytes]:
        assert path == f"/api/v1/namespaces/py-scheduler/configmaps/{CONFIG_MAP}"
        return 200, orjson.dumps({"data": {"config.yaml": yaml.safe_dump(MOST_ALLOCATED)}})

    source = find_config(
        config_path=None, api_get=api_get, config_map_namespace="py-scheduler", configz_get=refused,
        registry=IN_TREE_REGISTRY,
    )  # fmt: skip
    assert source.source == f"ConfigMap py-scheduler/{CONFIG_MAP} (key config.yaml)"
    assert [p.scheduler_name for p in source.loaded.config.profiles] == ["packer"]

    def configz(path: str) -> tuple[int, bytes]:
        assert path == "/configz"
        return 200, orjson.dumps({"componentconfig": MOST_ALLOCATED})

    source = find_config(
        config_path=None, api_get=refused, config_map_namespace="ns", configz_get=configz,
        registry=IN_TREE_REGISTRY,
    )  # fmt: skip
    assert source.source == "the scheduler's /configz"
    assert source.tried == [
        f"ConfigMap ns/{CONFIG_MAP}: HTTP 403 (forbidden: /api/v1/namespaces/ns/configmaps/{CONFIG_MAP})"
    ]

    source = find_config(
        config_path=None, api_get=refused, config_map_namespace="ns", configz_get=lambda _p: (0, b"refused"),
        registry=IN_TREE_REGISTRY,
    )  # fmt: skip
    assert source.source.startswith("the built-in defaults")
    assert source.tried[1] == "/configz: no answer (refused)"
    assert [p.scheduler_name for p in source.loaded.config.profiles] == ["py-scheduler"]


def test_a_pending_pod_is_judged_and_a_bound_one_as_if_pending_again() -> None:
    nodes = [make_node("small", cpu="1"), make_node("big", cpu="8")]
    pending = make_pod("web", cpu="3")
    bound = make_pod("db", cpu="6", node_name="big")
    objects = {"nodes": nodes, "pods": [pending, bound]}
    source = find_config(
        config_path=None, api_get=refused, config_map_namespace="ns", configz_get=None,
        registry=IN_TREE_REGISTRY,
    )  # fmt: skip

    web = reevaluate("default/web", objects, source, now=1000.0)
    assert web is not None and web.record is not None
    # db holds 6 of big's 8 CPUs: web fits nowhere.
    assert web.record["outcome"] == "Unschedulable"
    assert web.record["filter"]["NodeResourcesFit"]["reasons"] == {"Insufficient cpu": 2}
    text = web.render()
    assert text.startswith(f"Pod default/web: {LABEL}")
    assert "2 nodes, 2 pods" in text and "Configuration not read from ConfigMap ns/" in text
    assert web.to_json()["reevaluation"] is True

    db = reevaluate("default/db", objects, source, now=1000.0)
    assert db is not None and db.record is not None
    assert db.record["node"] == "big" and "bound to big" in db.note
    assert reevaluate("default/missing", objects, source, now=1000.0) is None


def test_kinds_that_could_not_be_listed_are_named_when_the_configuration_reads_them() -> None:
    """The default configuration reads VolumeAttachments (NodeVolumeLimits) but no NodeResourceTopology
    (NodeResourceTopologyMatch is not enabled): only the first is named as missing from the snapshot."""
    objects = {"nodes": [make_node("n")], "pods": [make_pod("web", cpu="1")]}
    source = find_config(
        config_path=None, api_get=refused, config_map_namespace="ns", configz_get=None,
        registry=IN_TREE_REGISTRY,
    )  # fmt: skip
    unlisted = {
        "volumeattachments.storage.k8s.io": "HTTP 403",
        "noderesourcetopologies.topology.node.k8s.io": "HTTP 403",
        "csidrivers.storage.k8s.io": "HTTP 500",
    }
    web = reevaluate("default/web", objects, source, now=1000.0, unlisted=unlisted)
    assert web is not None
    assert web.to_json()["snapshot"]["notRead"] == {
        "volumeattachments.storage.k8s.io": "HTTP 403",
        "csidrivers.storage.k8s.io": "HTTP 500",
    }
    assert (
        "  Not in the snapshot though the configuration reads them (the verdict may differ): "
        "HTTP 403: volumeattachments.storage.k8s.io; HTTP 500: csidrivers.storage.k8s.io\n"
    ) in web.render()
    everything_listed = reevaluate("default/web", objects, source, now=1000.0)
    assert everything_listed is not None and "Not in the snapshot" not in everything_listed.render()


def _nominated(pod: dict[str, Any], node: str, priority: int) -> dict[str, Any]:
    pod["spec"]["priority"] = priority
    pod["status"]["nominatedNodeName"] = node
    return pod


def test_a_nominated_preemptor_of_equal_or_higher_priority_keeps_its_room() -> None:
    """big (8 CPUs) is free, but a pending preemptor of priority 100 asking 6 CPUs is nominated there:
    the scheduler's Filter counts it on big (RunFilterPluginsWithNominatedPods), so web (3 CPUs,
    priority 0 or 100) fits nowhere, and the re-evaluation says the same. A nominated pod of lower
    priority, a bound one, one of another scheduler, and the pod's own nomination do not count."""
    nodes = [make_node("small", cpu="1"), make_node("big", cpu="8")]
    source = find_config(
        config_path=None, api_get=refused, config_map_namespace="ns", configz_get=None,
        registry=IN_TREE_REGISTRY,
    )  # fmt: skip

    def judged(web_priority: int, *others: dict[str, Any]) -> dict[str, Any]:
        web = make_pod("web", cpu="3")
        web["spec"]["priority"] = web_priority
        result = reevaluate("default/web", {"nodes": nodes, "pods": [web, *others]}, source, now=1000.0)
        assert result is not None and result.record is not None
        return result.record

    def preemptor(priority: int, **kwargs: Any) -> dict[str, Any]:
        return _nominated(make_pod("urgent", cpu="6", **kwargs), "big", priority)

    for web_priority in (0, 100):
        record = judged(web_priority, preemptor(100))
        assert record["outcome"] == "Unschedulable", web_priority
        assert record["filter"]["NodeResourcesFit"]["reasons"] == {"Insufficient cpu": 2}

    assert judged(0, preemptor(-1))["node"] == "big"  # lower priority: not counted
    assert judged(0, preemptor(100, scheduler_name="someone-else"))["node"] == "big"
    bound = _nominated(make_pod("urgent", cpu="1", node_name="small"), "big", 100)
    assert judged(0, bound)["node"] == "big"  # bound: counts on its node only
    # The preemptor itself, judged: its own nomination does not stand in its way.
    urgent = reevaluate("default/urgent", {"nodes": nodes, "pods": [preemptor(100)]}, source, now=1000.0)
    assert urgent is not None and urgent.record is not None and urgent.record["node"] == "big"
