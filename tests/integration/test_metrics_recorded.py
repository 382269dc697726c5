"""Every metric the metrics table of docs/metrics.md lists is recorded by a real py-scheduler, with
counts that match the pods it scheduled.

py-scheduler binds N pods on three nodes (so every pod is scored) and fails one that fits nowhere
(so PostFilter runs). Plugin metrics are sampled in 100% of cycles here (a test-only environment
variable; upstream and the product sample 10%), so their counts are exact too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for
from scheduler.cycle.profiles import SAMPLE_PERCENT_ENV
from tests.integration.test_dashboard_metrics import Sample, scrape
from tests.integration.workload import RUN_LABEL, create_pods, list_pods, make_pod, new_run_id

METRICS_DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
SCHEDULER_NAME = "py-scheduler-metrics"
PODS = 12
# Recorded only with extenders configured (tests/integration/test_extender_on_cluster.py covers them).
NEEDS_EXTENDERS = ("scheduler_extender_",)


def documented_metrics() -> list[str]:
    """The metric names in the metrics table of docs/metrics.md, ``{a,b}`` expanded."""
    text = METRICS_DOC.read_text()
    table = text[text.index("| metric | labels |") :]
    table = table[: table.index("\n\n")]
    names: list[str] = []
    for row in table.splitlines()[2:]:
        first_cell = row.split("|")[1]
        for name in re.findall(r"`([a-z_{},*]+)`", first_cell):
            if match := re.fullmatch(r"(\w*)\{([\w,]+)\}(\w*)", name):
                names += [match[1] + part + match[3] for part in match[2].split(",")]
            else:
                names.append(name)
    return names


def total(samples: list[Sample], name: str, **labels: str) -> float:
    return sum(v for n, lab, v in samples if n == name and all(lab.get(k) == w for k, w in labels.items()))


@pytest.fixture
def run_id(core_v1: Any) -> Iterator[str]:
    rid = new_run_id()
    yield rid
    core_v1.delete_collection_node(label_selector=f"{RUN_LABEL}={rid}", _preload_content=False)


def test_metrics_table_is_parsed() -> None:
    names = documented_metrics()
    assert "scheduler_plugin_execution_duration_seconds" in names
    assert "py_scheduler_informer_relists_total" in names
    assert len(names) >= 15


def test_every_documented_metric_is_recorded_with_matching_counts(
    kubeconfig: str, core_v1: Any, namespace: str, run_id: str, tmp_path: Path
) -> None:
    config = scheduler_config(
        scheduler_name=SCHEDULER_NAME, leader_elect=True, lease_name=f"py-scheduler-metrics-{run_id}"
    )
    create_nodes(
        core_v1, [make_node(f"met-{run_id}-{i}", cpu="8", labels={RUN_LABEL: run_id}) for i in range(3)]
    )
    scheduler = SchedulerProcess(
        kubeconfig, tmp_path, config, name="metrics-scheduler", env={SAMPLE_PERCENT_ENV: "100"}
    ).start()
    try:
        scheduler.wait_ready(timeout=60)
        pods = [make_pod(f"p-{i}", run_id, cpu="100m", scheduler_name=SCHEDULER_NAME) for i in range(PODS)]
        pods.append(make_pod("too-big", run_id, cpu="64", scheduler_name=SCHEDULER_NAME))
        create_pods(core_v1, namespace, pods)

        def settled() -> bool:
            by_name = {p["metadata"]["name"]: p for p in list_pods(core_v1, namespace)}
            conditions = (by_name["too-big"].get("status") or {}).get("conditions") or []
            rejected = any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)
            bound = [n for n, p in by_name.items() if n != "too-big" and p["spec"].get("nodeName")]
            return rejected and len(bound) == PODS

        wait_for(settled, 60, f"{PODS} pods bound and too-big unschedulable ({scheduler.log_path})")
        # Bindings report to the loop after the API write, and the cache-size gauges refresh each second.
        wait_for(
            lambda: (
                total(scrape(scheduler), "scheduler_schedule_attempts_total", result="scheduled") == PODS
                and total(scrape(scheduler), "scheduler_cache_size", type="nodes") >= 3
            ),
            15,
            "the scheduled pods counted",
        )
        samples = scrape(scheduler)
        text = scheduler.get("/metrics")[1]
    finally:
        code = scheduler.stop()
    assert code == 0, f"py-scheduler exited with {code}:\n{scheduler.log_tail()}"

    # A family counts as present by its samples or, for labelled counters no event has touched yet
    # (relists happen only after a 410), by its TYPE line.
    names = {name for name, _, _ in samples} | set(re.findall(r"^# TYPE (\S+)", text, re.M))
    missing = []
    for metric in documented_metrics():
        if metric.startswith(NEEDS_EXTENDERS):
            continue
        if metric.endswith("*"):
            present = any(n.startswith(metric[:-1]) for n in names)
        else:
            # The TYPE line of a counter names it without _total.
            base = metric.removesuffix("_total")
            present = any(n in (metric, base) or n.startswith(metric + "_") for n in names)
        if not present:
            missing.append(metric)
    assert missing == [], f"documented metrics absent from /metrics: {missing}"

    profile = {"profile": SCHEDULER_NAME}
    unschedulable = total(samples, "scheduler_schedule_attempts_total", result="unschedulable", **profile)
    attempts = PODS + unschedulable
    assert unschedulable >= 1
    assert total(samples, "scheduler_schedule_attempts_total", result="scheduled", **profile) == PODS
    assert total(samples, "scheduler_scheduling_attempt_duration_seconds_count", **profile) == attempts
    assert total(samples, "scheduler_pod_scheduling_attempts_count") == PODS
    assert total(samples, "scheduler_pod_scheduling_sli_duration_seconds_count") == PODS
    # Every attempt ran the algorithm; this process schedules nothing else.
    assert total(samples, "scheduler_scheduling_algorithm_duration_seconds_count") == attempts
    # OpportunisticBatching is on by default: every attempt asked the batching cache (with the gate off
    # both counters stay 0). On three nodes each placement changes a third of the rows, more than the
    # cache revalidates, so these attempts are misses; the bench's basic workload shows the hits.
    batching = ("py_scheduler_batching_hits_total", "py_scheduler_batching_misses_total")
    assert sum(total(samples, name) for name in batching) == attempts

    point = "scheduler_framework_extension_point_duration_seconds_count"
    for extension_point in ("PreFilter", "Filter"):
        assert total(samples, point, extension_point=extension_point, **profile) == attempts, extension_point
    # Three nodes fit each small pod: all of them are scored; too-big never reaches scoring.
    for extension_point in ("PreScore", "Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind"):
        assert total(samples, point, extension_point=extension_point, **profile) == PODS, extension_point
    assert total(samples, point, extension_point="Permit", status="Success", **profile) == PODS
    assert total(samples, point, extension_point="PostFilter", **profile) == unschedulable
    assert (
        total(samples, point, extension_point="PostFilter", status="Unschedulable", **profile)
        == unschedulable
    )
    # PreEnqueue runs as each pod enters the queue (and again on requeue).
    assert total(samples, point, extension_point="PreEnqueue", **profile) >= PODS + 1

    plugin = "scheduler_plugin_execution_duration_seconds_count"
    # Once per plugin, point and status per sampled cycle; every cycle is sampled here.
    assert total(samples, plugin, plugin="DefaultBinder", extension_point="Bind", status="Success") == PODS
    assert total(samples, plugin, plugin="NodeResourcesFit", extension_point="PreFilter") == attempts
    assert (
        total(samples, plugin, plugin="NodeResourcesFit", extension_point="Filter", status="Success") == PODS
    )
    # Upstream's code: a request beyond every node's allocatable is UnschedulableAndUnresolvable.
    assert (
        total(
            samples,
            plugin,
            plugin="NodeResourcesFit",
            extension_point="Filter",
            status="UnschedulableAndUnresolvable",
        )
        >= 1
    )
    assert total(samples, plugin, plugin="NodeResourcesFit", extension_point="Score") == PODS
    assert total(samples, plugin, plugin="DefaultPreemption", extension_point="PostFilter") == unschedulable
    assert total(samples, plugin, extension_point="ScoreExtensionNormalize") >= PODS
