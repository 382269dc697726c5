"""The README's out-of-tree plugin loads by dotted path from a config file and changes placement
(run with the plugin test kit, scheduler.testing, as a plugin author would)."""

from __future__ import annotations

from pathlib import Path

from scheduler.testing import SchedulerHarness, node, pod

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


def test_example_plugin_loads_by_path_and_steers_placement(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    h = SchedulerHarness(config=path)
    assert "PreferLabel" in [p.name for p in h.frameworks["py-scheduler"].plugins.score]
    h.add(*(node(f"plain-{i}") for i in range(4)), node("fast", labels={"example.com/fast-disk": "true"}))
    for i in range(10):
        result = h.schedule_one(pod(f"p{i}", cpu="100m")).assert_on("fast")
        assert result.scores()["PreferLabel"] == 500
