"""Every series the Grafana dashboard queries exists in a real py-scheduler's /metrics, so no panel is empty.

py-scheduler runs against the devcluster with leader election on, binds a few pods and fails one that
fits nowhere. Then, for every selector in the dashboard's PromQL (panels and variables):
* the metric name is in the scrape;
* some series of it carries each literal label value the selector requires (``extension_point="Bind"``);
* for counters and histograms (``_total``, ``_count``, ``_bucket``, ``_sum``), a matching series is above
  zero: the metric is recorded, not only registered.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from devcluster.binaries import require_binaries
from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for
from scheduler.cycle.profiles import SAMPLE_PERCENT_ENV
from tests.grafana import Selector, dashboard_selectors, load_dashboard
from tests.integration.workload import RUN_LABEL, create_pods, list_pods, make_pod

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SCHEDULER_NAME = "py-scheduler-dashboard"
RECORDED_SUFFIXES = ("_total", "_count", "_bucket", "_sum")

Sample = tuple[str, dict[str, str], float]


def scrape(scheduler: SchedulerProcess) -> list[Sample]:
    status, text = scheduler.get("/metrics")
    assert status == 200, text
    return [
        (s.name, s.labels, s.value) for family in text_string_to_metric_families(text) for s in family.samples
    ]


def _matches(labels: dict[str, str], selector: Selector) -> bool:
    for label, op, value in selector.matchers:
        if "$" in value:  # a dashboard variable: any value will do
            continue
        actual = labels.get(label, "")
        if op == "=" and actual != value:
            return False
        if op == "!=" and actual == value:
            return False
        if op == "=~" and not re.fullmatch(value, actual):
            return False
        if op == "!~" and re.fullmatch(value, actual):
            return False
    return True


def problems(samples: list[Sample], selectors: list[Selector]) -> list[str]:
    found: list[str] = []
    names = {name for name, _, _ in samples}
    for selector in selectors:
        if selector.metric not in names:
            found.append(f"{selector.metric}: not in the scrape")
            continue
        matching = [
            v for name, labels, v in samples if name == selector.metric and _matches(labels, selector)
        ]
        if not matching:
            found.append(f"{selector}: no series with these labels")
        elif selector.metric.endswith(RECORDED_SUFFIXES) and not any(v > 0 for v in matching):
            found.append(f"{selector}: registered but never recorded (all zero)")
    return found


def test_kustomize_component_builds_the_dashboard_configmap(tmp_path: Path) -> None:
    overlay = tmp_path / "with-dashboard"
    overlay.mkdir()
    base = os.path.relpath(DEPLOY / "base", overlay)  # kustomize refuses absolute paths
    component = os.path.relpath(DEPLOY / "components" / "grafana-dashboard", overlay)
    (overlay / "kustomization.yaml").write_text(json.dumps({"resources": [base], "components": [component]}))
    kubectl = require_binaries(names=("kubectl",)) / "kubectl"
    result = subprocess.run(
        [str(kubectl), "kustomize", str(overlay)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    [config_map] = [
        o
        for o in yaml.safe_load_all(result.stdout)
        if o and o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("py-scheduler-dashboard")
    ]
    assert config_map["metadata"]["name"] == "py-scheduler-dashboard"  # no hash suffix
    assert config_map["metadata"]["namespace"] == "py-scheduler"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config_map["data"]["py-scheduler.json"]) == load_dashboard()


def test_every_dashboard_series_is_in_a_live_scrape(
    kubeconfig: str, core_v1: Any, namespace: str, run_id: str, tmp_path: Path
) -> None:
    selectors = dashboard_selectors(load_dashboard())
    assert len({s.metric for s in selectors}) >= 8
    config = scheduler_config(
        scheduler_name=SCHEDULER_NAME, leader_elect=True, lease_name=f"py-scheduler-dashboard-{run_id}"
    )
    create_nodes(
        core_v1, [make_node(f"dash-{run_id}-{i}", cpu="4", labels={RUN_LABEL: run_id}) for i in range(2)]
    )
    # Plugin durations are sampled in 10% of cycles: sample all of them so a few pods record them.
    scheduler = SchedulerProcess(
        kubeconfig, tmp_path, config, name="dashboard-scheduler", env={SAMPLE_PERCENT_ENV: "100"}
    ).start()
    try:
        scheduler.wait_ready(timeout=60)
        pods = [make_pod(f"p-{i}", run_id, scheduler_name=SCHEDULER_NAME) for i in range(5)]
        pods.append(make_pod("too-big", run_id, cpu="64", scheduler_name=SCHEDULER_NAME))
        create_pods(core_v1, namespace, pods)

        def settled() -> bool:
            by_name = {p["metadata"]["name"]: p for p in list_pods(core_v1, namespace)}
            conditions = (by_name["too-big"].get("status") or {}).get("conditions") or []
            rejected = any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)
            bound = [n for n, p in by_name.items() if n != "too-big" and p["spec"].get("nodeName")]
            return rejected and len(bound) == 5

        wait_for(settled, 60, f"5 pods bound and too-big unschedulable ({scheduler.log_path})")
        # The unschedulable gauge and cache sizes are refreshed once a second: wait, then report all.
        with contextlib.suppress(AssertionError):
            wait_for(lambda: not problems(scrape(scheduler), selectors), 15, "every dashboard series")
        assert problems(scrape(scheduler), selectors) == []
    finally:
        code = scheduler.stop()
    assert code == 0, f"py-scheduler exited with {code}:\n{scheduler.log_tail()}"
