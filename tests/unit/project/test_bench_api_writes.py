"""The bench's count of API server writes per run (bench.scrape.api_writes), the helper processes whose
CPU it measures (side_by_side.extra_pids), and the gang workload's like-for-like setup."""

from __future__ import annotations

from pathlib import Path

from bench import prereqs, scrape, side_by_side, workloads


def _line(verb: str, resource: str, subresource: str, code: str, count: int, group: str = "") -> str:
    labels = (
        f'code="{code}",component="apiserver",dry_run="",group="{group}",resource="{resource}",'
        f'scope="resource",subresource="{subresource}",verb="{verb}",version="v1"'
    )
    return f"apiserver_request_total{{{labels}}} {count}"


APISERVER_METRICS = "\n".join(
    [
        "# HELP apiserver_request_total [STABLE] Counter of apiserver requests",
        "# TYPE apiserver_request_total counter",
        _line("POST", "pods", "binding", "201", 128),
        _line("PATCH", "pods", "status", "200", 100),
        _line("PATCH", "pods", "status", "409", 3),
        _line("PATCH", "podgroups", "status", "200", 19, group="scheduling.x-k8s.io"),
        _line("LIST", "pods", "", "200", 7),
        _line("WATCH", "pods", "", "200", 2),
        _line("POST", "events", "", "201", 152, group="events.k8s.io"),
        'apiserver_request_duration_seconds_count{verb="POST",resource="pods"} 9',
    ]
)


def test_writes_are_counted_by_verb_and_resource_over_codes_and_reads_left_out() -> None:
    assert scrape.api_writes(APISERVER_METRICS) == {
        "POST pods/binding": 128,
        "PATCH pods/status": 103,
        "PATCH podgroups/status": 19,
        "POST events": 152,
    }


def test_growth_over_a_run_keeps_only_what_grew() -> None:
    before = {"POST pods/binding": 10.0, "POST events": 5.0}
    after = {"POST pods/binding": 138.0, "POST events": 5.0, "PATCH pods/status": 4.0}
    assert scrape.grown(before, after) == {"POST pods/binding": 128.0, "PATCH pods/status": 4.0}


def test_the_gang_peer_runs_its_controller_and_both_crds_it_needs() -> None:
    gang = workloads.build(workloads.GANG, quick=True)
    assert gang.peer_controller
    assert workloads.PODGROUP_CRD in gang.crds and workloads.ELASTICQUOTA_CRD in gang.crds
    assert all(path.exists() for path in gang.crds)
    assert not workloads.build(workloads.BASIC, quick=True).peer_controller


def test_the_peer_controller_gets_the_bench_client_limits_and_no_ports(tmp_path: Path) -> None:
    controller = prereqs.PeerControllerProcess(
        Path("/bin/true"), tmp_path / "kubeconfig", tmp_path / "log", qps=5000, burst=5000
    )
    assert controller.argv[1:] == ["--metricsAddr=0", "--probeAddr=0", "--qps=5000", "--burst=5000"]
    assert side_by_side.extra_pids(None, None) == {}
