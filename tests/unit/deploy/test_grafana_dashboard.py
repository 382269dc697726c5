"""The Grafana dashboard: its shape, its kustomize component, and the PromQL reader the live check uses.

tests/integration/test_dashboard_metrics.py checks every selector against a real py-scheduler scrape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.grafana import (
    DASHBOARD,
    Selector,
    dashboard_selectors,
    expressions,
    load_dashboard,
    panels,
    selectors,
)

ROOT = Path(__file__).resolve().parents[3]
COMPONENT = ROOT / "deploy" / "components" / "grafana-dashboard"
CHART_COPY = ROOT / "deploy" / "helm" / "py-scheduler" / "files" / "py-scheduler.json"


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return load_dashboard()


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("up", [Selector("up")]),
        (
            'sum by (result) (rate(scheduler_schedule_attempts_total{profile=~"$profile"}[$__rate_interval]))',  # noqa: E501
            [Selector("scheduler_schedule_attempts_total", (("profile", "=~", "$profile"),))],
        ),
        (
            "histogram_quantile(0.99, sum by (le, extension_point) (rate(a_bucket[5m])))",
            [Selector("a_bucket")],
        ),
        (
            'a{x="1", y!="}"} / on (x) group_left b',
            [Selector("a", (("x", "=", "1"), ("y", "!=", "}"))), Selector("b")],
        ),
        ("sum without (pod) (c) > bool 2e3", [Selector("c")]),
        ('{__name__="d"}', [Selector("", (("__name__", "=", "d"),))]),
        ("label_values(scheduler_pending_pods, queue)", [Selector("scheduler_pending_pods")]),
        ("label_values(queue)", []),
        ("count(max_over_time(e[1h:5m])) or vector(0) unless f offset 5m", [Selector("e"), Selector("f")]),
    ],
)
def test_selectors_reads_promql(expr: str, want: list[Selector]) -> None:
    assert selectors(expr) == want


def test_selectors_rejects_what_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="cannot read matchers"):
        selectors("a{x=1}")


def test_dashboard_has_the_panels_the_issue_asks_for(dashboard: dict[str, Any]) -> None:
    by_title = {p["title"]: p for p in panels(dashboard) if p["type"] != "row"}
    exprs = {title: " ".join(t["expr"] for t in p["targets"]) for title, p in by_title.items()}

    def panel_using(metric: str) -> list[str]:
        return [title for title, text in exprs.items() if metric in text]

    assert panel_using("scheduler_schedule_attempts_total")  # throughput
    assert panel_using("scheduler_scheduling_attempt_duration_seconds_bucket")  # attempt latency
    assert panel_using("scheduler_pending_pods")  # by queue
    assert panel_using("scheduler_unschedulable_pods")  # by plugin
    assert panel_using("scheduler_pod_scheduling_attempts_count")  # bindings
    assert panel_using("scheduler_framework_extension_point_duration_seconds_bucket")  # per point
    latency = by_title["Scheduling attempt latency"]
    assert sorted(t["legendFormat"] for t in latency["targets"]) == ["p50", "p90", "p99"]
    assert "by (queue)" in exprs["Pending pods by queue"]
    assert "by (plugin)" in exprs["Unschedulable pods by plugin"]
    assert "by (le, extension_point)" in exprs["Extension point latency (p99)"]
    point_panel = next(p for p in panels(dashboard) if p["title"] == "Extension point latency (p99)")
    point_exprs = " ".join(t["expr"] for t in point_panel["targets"])
    assert "scheduler_scheduling_algorithm_duration_seconds_bucket" in point_exprs
    assert "by (plugin, extension_point)" in point_exprs


def test_every_query_uses_the_datasource_variable(dashboard: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for panel in panels(dashboard):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"]


def test_panels_have_unique_ids_and_do_not_overlap(dashboard: dict[str, Any]) -> None:
    all_panels = list(panels(dashboard))
    assert len({p["id"] for p in all_panels}) == len(all_panels)
    cells: set[tuple[int, int]] = set()
    for panel in all_panels:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
        mine = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & mine, f"{panel['title']} overlaps another panel"
        cells |= mine


def test_rates_use_the_rate_interval_and_profile_filter_where_labelled(dashboard: dict[str, Any]) -> None:
    for expr in expressions(dashboard):
        if "rate(" in expr:
            assert "[$__rate_interval]" in expr, expr
    for selector in dashboard_selectors(dashboard):
        assert selector.metric, "every selector names its metric"


def test_component_is_a_configmap_with_the_sidecar_label() -> None:
    kustomization = yaml.safe_load((COMPONENT / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component"
    [generator] = kustomization["configMapGenerator"]
    assert generator["files"] == [DASHBOARD.name]
    assert generator["options"]["labels"]["grafana_dashboard"] == "1"
    assert generator["options"]["disableNameSuffixHash"] is True
    assert generator["namespace"] == "py-scheduler"


def test_chart_ships_the_same_dashboard() -> None:
    # A copy, not a symlink: helm logs every symlink it follows, and kustomize will not read files
    # outside its root. Update both with `cp deploy/components/grafana-dashboard/py-scheduler.json
    # deploy/helm/py-scheduler/files/`.
    assert not CHART_COPY.is_symlink()
    assert CHART_COPY.read_bytes() == DASHBOARD.read_bytes()
