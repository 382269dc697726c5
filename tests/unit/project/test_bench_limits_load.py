"""Issue 31's bench report logic without a cluster: the honest limit next to the ceiling, the load
average and other users' CPU around each run and the verdicts the latter withholds, the pictures (and
the report without them), and the new scheduler_perf shapes' expectations and checks."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench import analysis, load, plots, prereqs, report, schedulers, side_by_side, summary, workloads
from bench.analysis import Placement, RunResult
from bench.schedulers import CEILING, HONEST, KUBE, PY
from bench.trivial_binder import HONEST_CONTROLLER, HonestWriter
from scheduler.client.events import EventRecorder

IDLE = [0.5, 0.6, 0.7]
BUSY = [6.3, 6.4, 7.2]
QUIET = 0.05  # cores other users took: well under the limit on 2 cores (0.25)


def run(workload: str, scheduler: str, throughput: float, p99: float = 1000.0, *,
        before: list[float] | None = None, after: list[float] | None = None, cores: int = 2,
        foreign: float | None = QUIET, **extra: Any) -> RunResult:  # fmt: skip
    """A run of 10 s in which the bench used 15 CPU seconds and other users ``foreign`` cores (None:
    not recorded, as in raw results from before the bench measured it)."""
    return RunResult(
        workload=workload, scheduler=scheduler, pods=100, nodes=10, bound=100, duration_s=1.0,
        throughput=throughput, steady_throughput=throughput, p50_ms=p99 / 2, p90_ms=p99, p99_ms=p99,
        cpu_s=1.0, peak_rss_mib=100.0, apiserver_cpu_s=1.0, etcd_cpu_s=1.0, create_s=1.0,
        create_errors=0, deleted=0, timed_out=False, placement=Placement(),
        load_before=IDLE if before is None else before, load_after=IDLE if after is None else after,
        cores=cores, machine_cpu_s=None if foreign is None else 15.0 + foreign * 10.0,
        own_cpu_s=None if foreign is None else 15.0, window_s=None if foreign is None else 10.0, **extra,
    )  # fmt: skip


def session() -> list[RunResult]:
    return [
        run("basic", KUBE, 100.0, p99=2000.0), run("basic", PY, 150.0, p99=1000.0),
        run("basic", CEILING, 300.0), run("basic", HONEST, 200.0),
    ]  # fmt: skip


# ---- both limits -----------------------------------------------------------------------------------


def test_each_scheduler_gets_a_fraction_of_each_limit() -> None:
    results = session()
    assert summary.ceiling_fraction(results, "basic", PY, CEILING) == pytest.approx(0.5)
    assert summary.ceiling_fraction(results, "basic", PY, HONEST) == pytest.approx(0.75)
    assert summary.ceiling_fraction(results, "basic", KUBE, HONEST) == pytest.approx(0.5)
    assert summary.limits(results) == {
        "basic": {
            "ceiling": {"pods_per_s": 300.0, KUBE: pytest.approx(1 / 3), PY: 0.5},
            "honest limit": {"pods_per_s": 200.0, KUBE: 0.5, PY: 0.75},
        }
    }
    # A workload without a limit run has no entry; a limit without a scheduler run gives None.
    assert summary.limits([run("mixed", PY, 1.0)]) == {}
    assert summary.limits([run("basic", HONEST, 10.0)])["basic"]["honest limit"][PY] is None
    text = "\n".join(summary.lines(results))
    assert "ceiling fraction py-scheduler (basic): 0.50" in text
    assert "honest limit fraction py-scheduler (basic): 0.75" in text
    assert "honest limit fraction kube-scheduler (basic): 0.50" in text


def test_the_raw_json_carries_both_limits_and_the_verdicts() -> None:
    data = side_by_side.raw_json(
        session(), settings={}, descriptions={}, skipped={}, pictures=plots.Pictures(skipped="none")
    )
    limits: Any = data["limits"]
    assert limits["basic"]["honest limit"][PY] == 0.75 and limits["basic"]["ceiling"][PY] == 0.5
    verdicts: Any = data["verdicts"]
    assert verdicts["basic"]["outcome"] == load.PY_WINS
    assert data["pictures"] == {"files": {}, "skipped": "none"}
    results: Any = data["results"]
    assert [RunResult.from_json(r) for r in results] == session()


def test_the_report_reads_both_limits() -> None:
    text = report.render(session(), settings={}, descriptions={}, skipped={})
    assert "basic: py-scheduler reached 50% of the ceiling's 300 pods/s" in text
    assert "basic: py-scheduler reached 75% of the honest limit's 200 pods/s" in text
    assert "honest limit fraction py-scheduler (basic): 0.75" in text.split("## Summary", 1)[1]


def test_the_limits_run_only_where_round_robin_placement_is_correct() -> None:
    kinds = [KUBE, PY, CEILING, HONEST]
    assert side_by_side.contestants_for(workloads.BASIC, kinds) == kinds
    assert side_by_side.contestants_for(workloads.NODE_AFFINITY, kinds) == [KUBE, PY]
    assert side_by_side.SCHEDULER_KEYS["limit"] == HONEST


def test_the_honest_limit_runs_with_the_schedulers_client_settings(tmp_path: Path) -> None:
    class Cp:
        kubeconfig = tmp_path / "kubeconfig"

    binder = schedulers.TrivialBinder(Cp(), tmp_path, honest=True)  # type: ignore[arg-type]
    argv = binder.argv()
    assert binder.label == HONEST and binder.scheduler_name == schedulers.HONEST_SCHEDULER_NAME
    assert argv[argv.index("--qps") + 1] == str(schedulers.CLIENT_QPS)
    assert argv[argv.index("--burst") + 1] == str(schedulers.CLIENT_BURST)
    assert "--honest" not in schedulers.TrivialBinder(Cp(), tmp_path).argv()  # type: ignore[arg-type]


def test_the_honest_limit_writes_a_binding_then_the_scheduled_event() -> None:
    calls: list[tuple[str, Any]] = []

    class FakeApi:
        def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
            calls.append(("bind", (namespace, name, uid, node)))

        def create_event(self, namespace: str, event: dict[str, Any], *, timeout: float) -> None:
            calls.append(("event", event))

    writer = HonestWriter.__new__(HonestWriter)
    writer.api = FakeApi()  # type: ignore[assignment]
    writer.recorder = EventRecorder(writer.api, reporting_instance="x", clock=lambda: 0.0)
    pod = {"metadata": {"namespace": "bench", "name": "p1", "uid": "u1", "resourceVersion": "7"}}
    writer.bind_and_record(pod, "node-3")
    assert calls[0] == ("bind", ("bench", "p1", "u1", "node-3"))
    kind, event = calls[1]
    assert kind == "event"
    assert event["apiVersion"] == "events.k8s.io/v1"
    assert (event["reason"], event["action"], event["type"]) == ("Scheduled", "Binding", "Normal")
    assert event["note"] == "Successfully assigned bench/p1 to node-3"
    assert event["reportingController"] == HONEST_CONTROLLER
    assert event["regarding"]["uid"] == "u1" and event["regarding"]["kind"] == "Pod"
    writer.recorder.shutdown()


# ---- load honesty ----------------------------------------------------------------------------------


def test_the_load_average_is_read_from_proc_loadavg(tmp_path: Path) -> None:
    file = tmp_path / "loadavg"
    file.write_text("6.31 6.40 7.21 4/196 16859\n")
    assert load.read_loadavg(file) == [6.31, 6.40, 7.21]
    assert load.read_loadavg(tmp_path / "missing") == []


def test_other_users_cpu_is_the_machines_busy_time_beyond_the_bench_per_second() -> None:
    assert load.foreign_load(run("basic", PY, 1.0, foreign=0.3)) == pytest.approx(0.3)
    assert load.foreign_load(run("basic", PY, 1.0, foreign=None)) is None
    # Ticks make the machine's count come out a little under the bench's: no negative load.
    under = replace(run("basic", PY, 1.0), machine_cpu_s=14.9)
    assert load.foreign_load(under) == 0.0
    assert load.foreign_load(replace(run("basic", PY, 1.0), window_s=0.0)) is None
    assert load.foreign_limit(2) == pytest.approx(0.25) and load.foreign_limit(8) == pytest.approx(1.0)


def test_the_verdict_is_called_up_to_the_limit_and_not_above_it() -> None:
    def outcome(foreign: float, cores: int = 2) -> tuple[str, str]:
        results = [run("basic", KUBE, 100.0, p99=2000.0, cores=cores),
                   run("basic", PY, 150.0, p99=1000.0, foreign=foreign, cores=cores)]  # fmt: skip
        return load.verdict(results, "basic")

    at_limit = load.foreign_limit(2)
    called, why = outcome(at_limit)
    assert called == load.PY_WINS
    assert "other users' CPU at most 0.25 cores in every run (limit 0.25)" in why
    withheld, why = outcome(at_limit + 0.01)
    assert withheld == load.NOT_CALLED
    assert why == (
        "the machine was loaded: other users' CPU (the machine's busy CPU minus the bench's process "
        "tree's) up to 0.26 cores, over the limit of 0.25 (0.125 of 2 cores), in 1 of 2 runs"
    )
    # The same other users on an 8-core machine are an eighth as much of it.
    assert outcome(at_limit + 0.01, cores=8)[0] == load.PY_WINS


def test_the_bench_saturating_the_cores_itself_does_not_withhold_the_verdict() -> None:
    """The load average after each run counts the bench's own processes (up to 4 on 2 cores here):
    it is stated, but only other users' CPU decides."""
    results = [run("basic", KUBE, 100.0, p99=2000.0, before=[0.4, 1.0, 2.0], after=BUSY),
               run("basic", PY, 150.0, p99=1000.0, before=BUSY, after=BUSY)]  # fmt: skip
    assert load.verdict(results, "basic")[0] == load.PY_WINS
    text = report.render(results, settings={}, descriptions={}, skipped={})
    assert "| 0.4 → 6.3 | 0.05 cores |" in text and "| 6.3 → 6.3 | 0.05 cores |" in text
    assert "(loaded)" not in text
    assert "Verdict: **py-scheduler ahead**" in text


def test_a_run_without_other_users_cpu_recorded_withholds_the_verdict() -> None:
    results = [run("basic", KUBE, 100.0, p99=2000.0), run("basic", PY, 150.0, foreign=None)]
    outcome, why = load.verdict(results, "basic")
    assert outcome == load.NOT_CALLED
    assert why.startswith("other users' CPU (the machine's busy CPU minus the bench's process tree's) "
                          "was not recorded in 1 of 2 runs")  # fmt: skip


def test_verdicts_on_an_idle_machine_follow_the_issues_bar() -> None:
    def verdict(py_tput: float, py_p99: float) -> str:
        return load.verdict([run("w", KUBE, 100.0, p99=1000.0), run("w", PY, py_tput, p99=py_p99)], "w")[0]

    assert verdict(100.0, 1000.0) == load.PY_WINS  # ratios 1.0 and 1.0 meet the bar
    assert verdict(90.0, 1100.0) == load.KUBE_WINS
    assert verdict(120.0, 1100.0) == load.MIXED
    wrong = [run("w", KUBE, 1.0), run("w", PY, 2.0)]
    wrong[1].placement = Placement(ok=False)
    assert load.verdict(wrong, "w")[0] == load.NOT_CALLED
    assert load.verdict([run("w", PY, 2.0)], "w")[0] == load.NOT_CALLED


def test_the_report_states_each_runs_load_and_other_users_cpu_and_withholds_the_verdict() -> None:
    results = [run("basic", KUBE, 100.0, p99=2000.0, foreign=0.6), run("basic", PY, 150.0, p99=1000.0)]
    text = report.render(results, settings={}, descriptions={}, skipped={})
    assert "| 0.5 → 0.5 | 0.60 cores (loaded) |" in text and "| 0.5 → 0.5 | 0.05 cores |" in text
    assert "- other users' CPU: 0.05-0.60 cores during the measured runs; a verdict needs every run at " \
        "or below 0.25 cores (0.125 of 2 cores)" in text  # fmt: skip
    assert "Verdict: **not called** (the machine was loaded: other users' CPU" in text
    summary_part = text.split("## Summary", 1)[1]
    assert "verdict (basic): not called (the machine was loaded: other users' CPU" in summary_part
    assert "up to 0.60 cores, over the limit of 0.25" in summary_part
    assert load.PY_WINS not in text


def test_raw_results_from_before_other_users_cpu_was_measured_render_without_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plots, "available", lambda: False)
    old = [run("basic", KUBE, 100.0, p99=2000.0).to_json(), run("basic", PY, 150.0).to_json()]
    for result in old:
        for key in ("machine_cpu_s", "own_cpu_s", "window_s"):
            del result[key]
    raw = tmp_path / "old.raw.json"
    settings = {"load average (1, 5, 15 min)": "0.40 1.04 2.08 at the start, 3.47 2.19 2.35 at the end"}
    raw.write_text(json.dumps({"settings": settings, "descriptions": {}, "skipped": {}, "results": old}))
    out = tmp_path / "old.md"
    assert side_by_side.render_only(raw, out) == 0
    text = out.read_text()
    assert "| 0.5 → 0.5 | not recorded |" in text
    assert "- other users' CPU: not recorded (results from before the bench measured it)" in text
    assert "Verdict: **not called** (other users' CPU (the machine's busy CPU minus the bench's " \
        "process tree's) was not recorded in 2 of 2 runs" in text  # fmt: skip


# ---- pictures --------------------------------------------------------------------------------------


def test_bind_rate_differences_the_bound_counts_over_a_window() -> None:
    timeline = [(0.0, 0, 0), (0.5, 10, 0), (1.0, 20, 10), (1.5, 30, 30), (2.0, 30, 40)]
    assert plots.bind_rate(timeline) == [(0.5, 0.0), (1.0, 10.0), (1.5, 30.0), (2.0, 30.0)]


def test_latency_cdf_is_101_nearest_rank_percentiles() -> None:
    cdf = analysis.latency_cdf([float(v) for v in range(1, 201)])
    assert len(cdf) == 101 and cdf[0] == 1.0 and cdf[50] == 100.0 and cdf[99] == 198.0 and cdf[100] == 200.0
    assert analysis.latency_cdf([]) == []


def test_without_matplotlib_the_report_renders_and_says_the_pictures_were_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plots, "available", lambda: False)
    pictures = plots.draw(session(), tmp_path, "latest")
    assert pictures.files == {} and "matplotlib is not installed" in pictures.skipped
    assert list(tmp_path.iterdir()) == []
    text = report.render(session(), settings={}, descriptions={}, skipped={}, pictures=pictures)
    assert "Pictures skipped: matplotlib is not installed" in text


def test_with_matplotlib_each_workload_gets_two_pngs_linked_from_the_report(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    timeline = [(0.0, 0, 0), (0.5, 50, 20), (1.0, 100, 60), (1.5, 100, 100)]
    cdf = analysis.latency_cdf([float(v) for v in range(100)])
    results = [r for r in session() if r.scheduler in (KUBE, PY)]
    for r in results:
        r.timeline, r.latency_cdf_ms = list(timeline), cdf
    pictures = plots.draw(results, tmp_path, "latest")
    assert pictures.files == {"basic": ["latest-basic-rate.png", "latest-basic-latency.png"]}
    for name in pictures.files["basic"]:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = report.render(results, settings={}, descriptions={}, skipped={}, pictures=pictures)
    assert "![basic: rate](latest-basic-rate.png)" in text
    assert "![basic: latency](latest-basic-latency.png)" in text


# ---- the new shapes --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", workloads.SHAPE_WORKLOADS)
def test_the_shapes_build_small_in_quick_and_run_by_default(name: str) -> None:
    assert name in side_by_side.workload_names(None, quick=True)
    quick, full = workloads.build(name, quick=True), workloads.build(name)
    assert quick.name == name and len(quick.pods) < len(full.pods) and len(quick.pods) <= 800
    assert len(set(quick.pod_names)) == len(quick.pods)


def test_unschedulable_and_gated_pods_are_expected_pending_and_come_first() -> None:
    stuck = workloads.build(workloads.UNSCHEDULABLE, quick=True)
    assert len(stuck.expect_unschedulable) == 100 and len(stuck.expect_bound()) == 400
    assert set(stuck.pod_names[:100]) == stuck.expect_unschedulable
    gated = workloads.build(workloads.GATED, quick=True)
    assert all(p["spec"]["schedulingGates"] for p in gated.pods[:500])
    assert {p["metadata"]["name"] for p in gated.pods[:500]} == gated.expect_unschedulable
    # A gated pod found bound fails the placement check.
    pods = [{**p, "spec": {**p["spec"], "nodeName": "node-00000"}} for p in gated.pods[:1]]
    assert not analysis.check_placement(gated, pods, gated.nodes).ok


def test_mixed_churn_recreates_a_tainted_node_and_an_unfittable_high_priority_pod() -> None:
    churn = workloads.build(workloads.MIXED_CHURN, quick=True)
    kinds = {o.body["kind"]: o for o in churn.background}
    assert set(kinds) == {"Node", "Pod", "Service", "PersistentVolume", "PersistentVolumeClaim"}
    assert kinds["Node"].body["spec"]["taints"][0]["effect"] == "NoSchedule"
    assert kinds["Pod"].body["spec"]["priorityClassName"] in churn.priority_classes
    assert kinds["Pod"].path.startswith(f"/api/v1/namespaces/{workloads.CHURN_NAMESPACE}/")


def test_node_affinity_placement_is_checked_against_each_pods_required_terms() -> None:
    workload = workloads.build(workloads.NODE_AFFINITY, quick=True)
    zone = {n["metadata"]["name"]: n["metadata"]["labels"][workloads.ZONE_LABEL] for n in workload.nodes}
    assert set(zone.values()) == {"zone1", "zone3"}
    pod = workload.pods[0]
    right = {**pod, "spec": {**pod["spec"], "nodeName": "node-00000"}}
    wrong = {**pod, "spec": {**pod["spec"], "nodeName": "node-00001"}}
    assert prereqs._verify_node_selection([right], workload.nodes) == []
    assert prereqs._verify_node_selection([right, wrong], workload.nodes) == [
        "1 pods on nodes their nodeSelector/required affinity excludes"
    ]


@pytest.mark.parametrize(
    ("expr", "labels", "holds"),
    [
        ({"key": "a", "operator": "In", "values": ["x"]}, {"a": "x"}, True),
        ({"key": "a", "operator": "NotIn", "values": ["x"]}, {"a": "x"}, False),
        ({"key": "a", "operator": "Exists"}, {}, False),
        ({"key": "a", "operator": "DoesNotExist"}, {}, True),
        ({"key": "n", "operator": "Gt", "values": ["3"]}, {"n": "4"}, True),
        ({"key": "n", "operator": "Lt", "values": ["3"]}, {"n": "4"}, False),
    ],
)
def test_node_selection_operators(expr: dict[str, Any], labels: dict[str, str], holds: bool) -> None:
    pod = {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expr]}]}}}}}  # fmt: skip
    assert prereqs.node_selection_holds(pod, labels) is holds
    assert not prereqs.node_selection_holds({"spec": {"nodeSelector": {"a": "y"}}}, {"a": "x"})


def test_default_spreading_pods_are_owned_and_selected_so_the_system_defaults_apply() -> None:
    workload = workloads.build(workloads.DEFAULT_SPREADING, quick=True)
    kinds = {o.body["kind"]: o.body for o in workload.objects}
    labels = workload.pods[0]["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in kinds["Service"]["spec"]["selector"].items())
    assert all(labels.get(k) == v for k, v in kinds["ReplicaSet"]["spec"]["selector"]["matchLabels"].items())
    owner = workload.pods[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("ReplicaSet", "spread-rs", True)
    assert not workload.pods[0]["spec"].get("topologySpreadConstraints")
    assert workload.report_spread


def test_spread_note_counts_pods_per_zone_and_node() -> None:
    nodes = [{"metadata": {"name": f"n{i}", "labels": {workloads.ZONE_LABEL: f"z{i % 2}"}}} for i in range(4)]
    pods = [{"metadata": {"name": f"p{i}"}, "spec": {"nodeName": f"n{i % 3}"}} for i in range(6)]
    pods.append({"metadata": {"name": "pending"}, "spec": {}})
    assert prereqs.spread_note(pods, nodes) == (
        "spread: pods per zone z0 4, z1 2 (skew 2); pods per node 0-2 (skew 2)"
    )
