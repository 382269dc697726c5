"""The bench's report logic without a cluster: /metrics parsing, the summary ratios and fractions, the
huge workload's memory arithmetic, and the report that prints them."""

from __future__ import annotations

import http.server
import math
import os
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY, generate_latest

from bench import load, report, scale, scrape, side_by_side, summary, workloads
from bench.analysis import Placement, RunResult
from bench.procstat import sample
from bench.schedulers import CEILING, KUBE, PY, SCHED_PLUGINS, SCHED_PLUGINS_NOMINATING
from scheduler import metrics


def run(workload: str, scheduler: str, throughput: float, p99: float = 1000.0, cpu: float = 10.0,
        **extra: Any) -> RunResult:  # fmt: skip
    return RunResult(
        workload=workload, scheduler=scheduler, pods=100, nodes=10, bound=100, duration_s=1.0,
        throughput=throughput, steady_throughput=throughput, p50_ms=p99 / 2, p90_ms=p99, p99_ms=p99,
        cpu_s=cpu, peak_rss_mib=100.0, apiserver_cpu_s=1.0, etcd_cpu_s=1.0, create_s=1.0,
        create_errors=0, deleted=0, timed_out=False, placement=Placement(), **extra,
    )  # fmt: skip


# ---- /metrics --------------------------------------------------------------------------------------


def test_parse_sums_label_sets_and_skips_comments_and_nan() -> None:
    text = (
        "# HELP scheduler_schedule_attempts_total Number of attempts\n"
        "# TYPE scheduler_schedule_attempts_total counter\n"
        'scheduler_schedule_attempts_total{profile="py-scheduler",result="scheduled"} 40\n'
        'scheduler_schedule_attempts_total{profile="py-scheduler",result="unschedulable"} 2.5\n'
        'odd_label{msg="a } b c"} 7 1712345678000\n'
        "plain 3e2\n"
        "not_a_number NaN\n"
        'broken_value{a="b"} x\n'
        "\n"
    )
    samples = scrape.parse(text)
    assert samples == {"scheduler_schedule_attempts_total": 42.5, "odd_label": 7.0, "plain": 300.0}


def test_counter_reads_the_total_suffix_or_the_bare_name() -> None:
    assert scrape.counter({"x_total": 3.0}, "x") == 3.0
    assert scrape.counter({"x": 4.0}, "x") == 4.0
    assert scrape.counter({"y_total": 1.0}, "x") is None


def test_delta_is_the_growth_between_scrapes_or_none() -> None:
    assert scrape.delta({"x_total": 3.0}, {"x_total": 10.0}, "x") == 7.0
    assert scrape.delta({}, {"x_total": 10.0}, "x") is None
    assert scrape.delta({"x_total": 3.0}, {}, "x") is None


def test_the_products_batching_counters_parse_under_the_names_the_bench_reads() -> None:
    # The real registry's exposition: if the metric is renamed or relabelled, the bench would silently
    # report "not measured"; this catches it.
    before = scrape.parse(generate_latest(REGISTRY).decode())
    metrics.observe_batching("hit")
    metrics.observe_batching("hit")
    metrics.observe_batching("miss")
    after = scrape.parse(generate_latest(REGISTRY).decode())
    assert scrape.delta(before, after, scrape.BATCHING_HITS) == 2.0
    assert scrape.delta(before, after, scrape.BATCHING_MISSES) == 1.0


@pytest.fixture
def metrics_url() -> Iterator[str]:
    body = b"# TYPE py_scheduler_batching_hits_total counter\npy_scheduler_batching_hits_total 5.0\n"

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/metrics" else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_fetch_reads_a_live_endpoint_and_returns_nothing_when_unreachable(metrics_url: str) -> None:
    assert scrape.counter(scrape.fetch(metrics_url + "/metrics"), scrape.BATCHING_HITS) == 5.0
    assert scrape.fetch(metrics_url + "/nope") == {}
    closed = metrics_url.rsplit(":", 1)[0] + ":1"
    assert scrape.fetch(closed + "/metrics", timeout=2) == {}


# ---- summary figures -------------------------------------------------------------------------------


def test_ceiling_fraction_divides_medians_of_the_same_workload() -> None:
    results = [
        run("basic", PY, 300.0), run("basic", PY, 100.0), run("basic", PY, 320.0),
        run("basic", CEILING, 400.0), run("basic", CEILING, 380.0), run("basic", CEILING, 420.0),
        run("large", PY, 200.0), run("large", CEILING, 250.0),
    ]  # fmt: skip
    assert summary.ceiling_fraction(results, "basic") == pytest.approx(300.0 / 400.0)
    assert summary.ceiling_fraction(results, "large") == pytest.approx(0.8)
    # No ceiling on this workload in the session: no fraction (never another workload's ceiling).
    assert math.isnan(summary.ceiling_fraction([*results, run("mixed", PY, 100.0)], "mixed"))


def test_peer_ratios_are_py_median_over_kube_median() -> None:
    results = [
        run("basic", KUBE, 200.0, p99=2000.0, cpu=12.0), run("basic", KUBE, 300.0, p99=1000.0, cpu=10.0),
        run("basic", KUBE, 250.0, p99=3000.0, cpu=14.0),
        run("basic", PY, 250.0, p99=1000.0, cpu=6.0), run("basic", PY, 500.0, p99=500.0, cpu=7.0),
        run("basic", PY, 400.0, p99=900.0, cpu=5.0),
    ]  # fmt: skip
    assert summary.peer_ratio(results, "basic", "throughput") == pytest.approx(400.0 / 250.0)
    assert summary.peer_ratio(results, "basic", "p99_ms") == pytest.approx(900.0 / 2000.0)
    assert summary.peer_ratio(results, "basic", "cpu_s") == pytest.approx(6.0 / 12.0)
    assert math.isnan(summary.peer_ratio(results[:3], "basic", "cpu_s"))  # no py-scheduler run


def test_quotient_refuses_zero_and_missing_denominators() -> None:
    assert summary.quotient(1.0, 4.0) == 0.25
    assert math.isnan(summary.quotient(1.0, 0.0))
    assert math.isnan(summary.quotient(math.nan, 1.0))
    assert math.isnan(summary.quotient(1.0, math.nan))


def test_batching_hit_rate_sums_runs_and_says_off_or_unmeasured() -> None:
    on = [run("basic", PY, 1.0, batching_hits=90.0, batching_misses=10.0),
          run("basic", PY, 1.0, batching_hits=190.0, batching_misses=10.0)]  # fmt: skip
    assert summary.batching_counts(on, "basic") == (280.0, 20.0)
    assert summary.batching_text((280.0, 20.0)).startswith("0.93 (280 hits, 20 misses)")
    off = [run("basic", PY, 1.0, batching_hits=0.0, batching_misses=0.0)]
    assert summary.batching_text(summary.batching_counts(off, "basic")).startswith("off")
    unscraped = [*on, run("basic", PY, 1.0)]  # one run's /metrics could not be read
    assert summary.batching_counts(unscraped, "basic") is None
    assert summary.batching_text(None).startswith("not measured")


def huge_probe(**overrides: float) -> dict[str, float]:
    probe = scale.ScaleProbe(
        nodes=15000, pods=30000, rss_empty_mib=100.0, rss_nodes_mib=250.0, rss_after_run_mib=500.0,
        rss_full_mib=400.0, sync_empty_s=1.0, sync_nodes_s=4.0, sync_full_s=9.5,
    )  # fmt: skip
    return {**probe.as_dict(), **overrides}


def test_scale_probe_memory_per_node_and_pod() -> None:
    probe = scale.ScaleProbe.from_dict(huge_probe())
    assert probe.kib_per_node == pytest.approx(150 * 1024 / 15000)
    assert probe.kib_per_pod == pytest.approx(150 * 1024 / 30000)
    assert probe.kib_per_pod_after_run == pytest.approx(250 * 1024 / 30000)
    missing = scale.ScaleProbe.from_dict(huge_probe(rss_empty_mib=math.nan))
    assert math.isnan(missing.kib_per_node)
    assert scale.ScaleProbe.from_dict(missing.as_dict()).rss_full_mib == 400.0


def test_summary_lines_name_every_figure_per_workload() -> None:
    results = [
        run("basic", KUBE, 250.0, cpu=12.0), run("basic", PY, 300.0, cpu=6.0, batching_hits=0.0,
                                                  batching_misses=0.0),
        run("basic", CEILING, 400.0),
        run("mixed", KUBE, 100.0), run("mixed", PY, 120.0, batching_hits=9.0, batching_misses=1.0),
        run("huge", KUBE, 200.0, scale=huge_probe()), run("huge", PY, 220.0, scale=huge_probe()),
    ]  # fmt: skip
    text = "\n".join(summary.lines(results))
    assert "ceiling fraction py-scheduler (basic): 0.75" in text
    assert "ceiling fraction kube-scheduler (basic): 0.62" in text
    assert "throughput ratio py-scheduler/kube-scheduler (basic): 1.20" in text
    assert "p99 latency ratio py-scheduler/kube-scheduler (basic): 1.00" in text
    assert "cpu ratio py-scheduler/kube-scheduler (basic): 0.50" in text
    assert "batching hit rate py-scheduler (basic): off" in text
    assert "batching hit rate py-scheduler (mixed): 0.90 (9 hits, 1 misses)" in text
    assert "ceiling fraction py-scheduler (mixed)" not in text
    assert "memory per node py-scheduler (huge): 10.2 KiB" in text
    assert "memory per pod kube-scheduler (huge): 5.1 KiB (8.5 KiB right after the run)" in text
    assert "startup sync time py-scheduler (huge, 15,000 nodes + 30,000 pods): 9.5 s" in text


def test_report_keeps_the_machine_and_ends_with_the_summary() -> None:
    results = [run("basic", KUBE, 250.0), run("basic", PY, 300.0), run("basic", CEILING, 400.0),
               run("huge", PY, 220.0, scale=huge_probe())]  # fmt: skip
    settings = {"mode": "quick", "load average (1, 5, 15 min)": "1 2 3 at the start", "note": "shared"}
    text = report.render(results, settings=settings, descriptions={}, skipped={"large": "no memory"})
    assert "## Machine" in text and f"{os.cpu_count()} cores" in text
    summary_part = text.split("## Summary", 1)[1]
    assert "quick; load average 1 2 3 at the start; shared" in summary_part
    assert summary_part.rstrip().endswith("(4.0 s with the nodes only)")
    assert "ceiling fraction py-scheduler (basic): 0.75" in summary_part
    assert "| py-scheduler | 100 / 250 / 500 / 400 | 10.2 | 5.1 (8.5) | 1.0 / 4.0 / 9.5 |" in text
    assert "basic: py-scheduler reached 75% of the ceiling's 400 pods/s" in text
    assert "## large\n\nNot run: no memory" in text


def test_raw_results_from_before_these_fields_still_load() -> None:
    old = run("basic", PY, 1.0).to_json()
    for key in ("batching_hits", "batching_misses", "scale"):
        del old[key]
    loaded = RunResult.from_json(old)
    assert loaded.batching_hits is None and loaded.scale == {}
    fresh = run("huge", PY, 1.0, batching_hits=3.0, batching_misses=1.0, scale=huge_probe())
    assert RunResult.from_json(fresh.to_json()) == replace(fresh)


# ---- harness choices -------------------------------------------------------------------------------


def test_huge_is_upstreams_largest_size_and_left_out_of_quick_unless_named() -> None:
    huge = workloads.build(workloads.HUGE)
    assert (len(huge.nodes), len(huge.pods)) == (15000, 30000)
    assert workloads.HUGE in side_by_side.workload_names(None, quick=False)
    assert workloads.HUGE not in side_by_side.workload_names(None, quick=True)
    assert side_by_side.workload_names("basic, huge", quick=True) == ["basic", "huge"]


def test_every_workload_but_the_long_ones_runs_repeat_times_and_the_report_says_so() -> None:
    assert side_by_side.runs_of(workloads.BASIC, 3) == 3
    assert side_by_side.runs_of(workloads.GATED, 3) == 3
    assert side_by_side.runs_of(workloads.PREEMPTION, 3) == 3
    assert [side_by_side.runs_of(w, 3) for w in (workloads.LARGE, workloads.HUGE, workloads.EXTENDER)] == [
        1,
        1,
        1,
    ]
    assert side_by_side.runs_of(workloads.GATED, 0) == 1
    names = side_by_side.workload_names(None, quick=False)
    text = side_by_side.mode_text(names, [KUBE, PY], 3)
    assert text.startswith("3 runs per contestant") and "every workload but large, extender, huge" in text
    assert side_by_side.mode_text([workloads.LARGE], [KUBE, PY], 3).startswith("one run per contestant")
    assert side_by_side.mode_text([workloads.GATED], [KUBE, PY], 1).startswith("one run per contestant")


def test_the_ceiling_runs_only_where_round_robin_placement_is_correct() -> None:
    kinds = [KUBE, PY, CEILING]
    assert side_by_side.contestants_for(workloads.BASIC, kinds) == kinds
    assert side_by_side.contestants_for(workloads.LARGE, kinds) == kinds
    assert side_by_side.contestants_for(workloads.MIXED, kinds) == [KUBE, PY]
    assert side_by_side.contestants_for(workloads.HUGE, kinds) == [KUBE, PY]


class FakeContestant:
    label = "fake"
    scheduler_name = "fake"
    log_path = Path("/dev/null")

    def __init__(self, clock: list[float], startup: float) -> None:
        self._clock = clock
        self._startup = startup
        self.stopped = False

    def start(self) -> None:
        self._clock[0] += self._startup

    @property
    def pid(self) -> int:
        return os.getpid()

    def plugins(self) -> dict[str, Any]:
        return {}

    def stop(self) -> None:
        self.stopped = True


def test_startup_is_timed_until_start_returns_ready_and_the_probe_stops_it() -> None:
    clock = [100.0]
    fake = FakeContestant(clock, startup=7.5)
    assert scale.timed_start(fake, clock=lambda: clock[0]) == 7.5
    probed = FakeContestant(clock, 0.0)
    seconds, rss = scale.startup_probe(probed, settle=0)
    assert seconds >= 0 and rss == pytest.approx(sample(os.getpid()).rss_mib, rel=0.5)
    assert probed.stopped


def test_procstat_reads_resident_and_peak_memory() -> None:
    now = sample(os.getpid())
    assert 0 < now.rss_mib <= now.peak_rss_mib
    assert sample(2**22 + 12345) == type(now)(0.0, 0.0)  # no such process


def test_the_gang_workload_is_compared_with_scheduler_plugins() -> None:
    """The gang workload runs py-scheduler against the scheduler-plugins scheduler (kube-scheduler has
    no Coscheduling): the contestants, the ratios, the verdict and the summary name that peer."""
    kinds = [KUBE, PY, CEILING]
    gang = workloads.build(workloads.GANG, quick=True)
    assert gang.peer == SCHED_PLUGINS and gang.profile == workloads.COSCHEDULING_PROFILE
    assert side_by_side.contestants_for(workloads.GANG, kinds, gang.peer, "only") == [SCHED_PLUGINS, PY]
    results = [
        run(workloads.GANG, SCHED_PLUGINS, 50.0, p99=2000.0, cpu=4.0),
        run(workloads.GANG, PY, 60.0, p99=1000.0, cpu=2.0),
    ]
    assert summary.peer_ratio(results, workloads.GANG, "throughput") == pytest.approx(1.2)
    text = "\n".join(summary.lines(results))
    assert "throughput ratio py-scheduler/scheduler-plugins (gang): 1.20" in text
    assert "cpu ratio py-scheduler/scheduler-plugins (gang): 0.50" in text
    quiet: dict[str, Any] = {"cores": 2, "machine_cpu_s": 10.1, "own_cpu_s": 10.0, "window_s": 10.0}
    slower = [run(workloads.GANG, SCHED_PLUGINS, 50.0, p99=500.0, **quiet),
              run(workloads.GANG, PY, 40.0, p99=1000.0, **quiet)]  # fmt: skip
    assert load.verdict(slower, workloads.GANG)[0] == "scheduler-plugins ahead"


def test_gang_is_judged_against_the_nominating_peer_and_reported_against_the_peer_as_shipped() -> None:
    """By default the gang workload runs the scheduler-plugins scheduler twice, with
    NominatedNodeNameForExpectation on (the same API writes per Permit waiter as py-scheduler) and as
    shipped: the verdict is against the first, and the second gets its own ratios and verdict line."""
    kinds = [KUBE, PY]
    assert side_by_side.contestants_for(workloads.GANG, kinds, SCHED_PLUGINS) == [
        SCHED_PLUGINS_NOMINATING,
        SCHED_PLUGINS,
        PY,
    ]
    assert side_by_side.contestants_for(workloads.GANG, kinds, SCHED_PLUGINS, "no") == [
        SCHED_PLUGINS_NOMINATING,
        PY,
    ]
    # kube-scheduler's workloads are untouched by the option.
    assert side_by_side.contestants_for("basic", kinds, KUBE, "no") == [KUBE, PY]
    quiet: dict[str, Any] = {"cores": 2, "machine_cpu_s": 10.1, "own_cpu_s": 10.0, "window_s": 10.0}
    results = [
        run(workloads.GANG, SCHED_PLUGINS_NOMINATING, 50.0, p99=2000.0, **quiet),
        run(workloads.GANG, SCHED_PLUGINS, 80.0, p99=500.0, **quiet),
        run(workloads.GANG, PY, 60.0, p99=1000.0, **quiet),
    ]
    assert summary.workload_peer(results, workloads.GANG) == SCHED_PLUGINS_NOMINATING
    assert load.verdict(results, workloads.GANG)[0] == "py-scheduler ahead"
    assert load.verdict(results, workloads.GANG, SCHED_PLUGINS)[0] == "scheduler-plugins ahead"
    text = "\n".join(summary.lines(results))
    assert "throughput ratio py-scheduler/scheduler-plugins (nominating) (gang): 1.20" in text
    assert "throughput ratio py-scheduler/scheduler-plugins (gang): 0.75" in text
    assert "verdict (gang): py-scheduler ahead" in text
    assert "verdict (gang) against scheduler-plugins: scheduler-plugins ahead" in text
    rendered = report.render(results, settings={}, descriptions={}, skipped={})
    assert "Verdict: **py-scheduler ahead**" in rendered
    assert "Against scheduler-plugins as shipped" in rendered and "**scheduler-plugins ahead**" in rendered
    # Alone, the peer as shipped is the verdict's peer (an old raw file, or --peer-as-shipped only).
    alone = [r for r in results if r.scheduler != SCHED_PLUGINS_NOMINATING]
    assert load.verdict(alone, workloads.GANG)[0] == "scheduler-plugins ahead"
    assert "as shipped (its Permit waiters" not in report.render(
        alone, settings={}, descriptions={}, skipped={}
    )


def test_each_row_states_the_rate_pods_were_created_at() -> None:
    # 600 pods created in 2 s (the timeline's last created count, gated or churned pods included).
    created = run("basic", PY, 250.0, timeline=[(0.0, 0, 0), (1.0, 300, 200), (2.0, 600, 500)])
    created = replace(created, create_s=2.0)
    row = report.workload_table([created])[2]
    assert row.split(" | ")[2] == "300.0"
    # No timeline (an old raw file): the workload's pod count over the same window.
    assert report.workload_table([replace(created, timeline=[])])[2].split(" | ")[2] == "50.0"
