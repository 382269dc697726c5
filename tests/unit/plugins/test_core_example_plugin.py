"""The README's out-of-tree plugin loads by dotted path from a config file and changes placement."""

from __future__ import annotations

from pathlib import Path

from scheduler.cache import SchedulerCache
from scheduler.config import load_config_with_plugins
from scheduler.cycle.algorithm import SchedulingAlgorithm
from scheduler.cycle.profiles import FrameworkHandle, build_frameworks
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.types import PodInfo
from scheduler.plugins.registry import IN_TREE_REGISTRY

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: py-scheduler
  plugins:
    score: {enabled: [{name: "examples.prefer_label:PreferLabel", weight: 5}]}
  pluginConfig:
  - {name: "examples.prefer_label:PreferLabel", args: {label: example.com/fast-disk}}
"""


def _node(name: str, labels: dict[str, str]) -> dict[str, object]:
    alloc = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def test_example_plugin_loads_by_path_and_steers_placement(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    config, registry = load_config_with_plugins(str(path), registry=IN_TREE_REGISTRY)
    cache = SchedulerCache()
    for i in range(4):
        cache.add_node(_node(f"plain-{i}", {}))
    cache.add_node(_node("fast", {"example.com/fast-disk": "true"}))
    snapshot = cache.snapshot()
    frameworks = build_frameworks(
        config, registry, lambda name: FrameworkHandle(name, lambda: snapshot, None, lambda: 0.0)
    )
    fwk = frameworks["py-scheduler"]
    assert "PreferLabel" in [p.name for p in fwk.plugins.score]
    pod = PodInfo({
        "metadata": {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "1"},
        "spec": {"schedulerName": "py-scheduler", "containers": [
            {"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
    })  # fmt: skip
    algorithm = SchedulingAlgorithm()
    chosen = {algorithm.schedule_pod(fwk, CycleState(), pod, snapshot).node_name for _ in range(10)}
    assert chosen == {"fast"}
