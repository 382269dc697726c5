"""The markdown results file: machine, settings, one table per workload, plugins, the optimisation log,
and the summary lines (bench.summary) it ends with."""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import load, plots, summary
from bench.analysis import RunResult
from bench.scale import ScaleProbe
from bench.schedulers import KUBE, LIMITS, PY, peer_of, second_peer

OPTIMISATION_LOG = Path(__file__).resolve().parent / "results" / "optimisation-log.md"


def machine_info() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = f"{int(line.split()[1]) / 2**20:.1f}"
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory_gib": mem_gib,
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def _num(value: float, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:,.{digits}f}"


def _placement(result: RunResult) -> str:
    p = result.placement
    if p.ok and not result.timed_out:
        return f"yes ({len(p.pending)} pending)" if p.pending else "yes"
    problems = []
    if result.timed_out:
        problems.append("timed out")
    if p.overcommitted_nodes:
        problems.append(f"{len(p.overcommitted_nodes)} nodes overcommitted")
    if p.missing_bound:
        problems.append(f"{len(p.missing_bound)} not bound")
    if p.unexpected_bound:
        problems.append(f"{len(p.unexpected_bound)} wrongly bound")
    problems += p.violations[:3]
    return "NO: " + ", ".join(problems)


def _creation_rate(result: RunResult) -> float:
    """Pods the load generator created per second while this contestant ran. It creates as fast as the
    API server accepts, so a contestant that leaves the API server more CPU is sent pods faster and
    queues more of them: latency is read against this rate."""
    created = max((count for _, count, _ in result.timeline), default=result.pods)
    return created / result.create_s if result.create_s > 0 else math.nan


def workload_table(results: Sequence[RunResult]) -> list[str]:
    lines = [
        "| scheduler | bound | pods created/s | pods/s overall | pods/s steady (10-90%) "
        "| p50 ms | p90 ms | p99 ms "
        "| CPU s | peak RSS MiB | apiserver CPU s | placement correct | load 1 min before → after "
        "| other users' CPU |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.scheduler} | {r.bound}/{r.pods} | {_num(_creation_rate(r))} | {_num(r.throughput)} "
            f"| {_num(r.steady_throughput)} "
            f"| {_num(r.p50_ms, 0)} | {_num(r.p90_ms, 0)} | {_num(r.p99_ms, 0)} | {_num(r.cpu_s)} "
            f"| {_num(r.peak_rss_mib, 0)} | {_num(r.apiserver_cpu_s)} | {_placement(r)} "
            f"| {load.load_text(r)} | {load.foreign_text(r)} |"
        )
    return lines


def _same_pending(results: Sequence[RunResult]) -> str | None:
    peer = peer_of(r.scheduler for r in results)
    by_scheduler = {r.scheduler: set(r.placement.pending) for r in results if r.scheduler in (peer, PY)}
    if len(by_scheduler) < 2:
        return None
    other, py = by_scheduler[peer], by_scheduler[PY]
    if other == py:
        return f"Pending sets identical ({len(other)} pods)."
    return (
        f"Pending sets DIFFER: {len(other - py)} only pending under {peer}, "
        f"{len(py - other)} only under py-scheduler."
    )


def median_run(runs: Sequence[RunResult]) -> RunResult:
    """The run with the median throughput (the lower middle one for an even count)."""
    ordered = sorted(runs, key=lambda r: r.throughput)
    return ordered[(len(ordered) - 1) // 2]


def scale_table(results: Sequence[RunResult]) -> list[str]:
    """The huge workload's memory and startup probes, one row per scheduler (bench.scale)."""
    lines = [
        "| scheduler | RSS MiB: empty cluster / nodes synced / after the run / restarted on the full cluster "
        "| KiB per node | KiB per pod (after the run) | ready s: empty / nodes / full cluster "
        "| apiserver, etcd peak RSS MiB |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        p = ScaleProbe.from_dict(r.scale)
        lines.append(
            f"| {r.scheduler} | {_num(p.rss_empty_mib, 0)} / {_num(p.rss_nodes_mib, 0)} / "
            f"{_num(p.rss_after_run_mib, 0)} / {_num(p.rss_full_mib, 0)} | {_num(p.kib_per_node)} "
            f"| {_num(p.kib_per_pod)} ({_num(p.kib_per_pod_after_run)}) "
            f"| {_num(p.sync_empty_s)} / {_num(p.sync_nodes_s)} / {_num(p.sync_full_s)} "
            f"| {_num(p.apiserver_peak_rss_mib, 0)}, {_num(p.etcd_peak_rss_mib, 0)} |"
        )
    return lines


def runs_table(rows: Sequence[RunResult]) -> list[str]:
    """Every run of a repeated workload, in the order they ran."""
    lines = [
        "| run | scheduler | pods/s | steady pods/s | p50 ms | p99 ms | CPU s | load 1 min before → after "
        "| other users' CPU |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for index, r in enumerate(rows, 1):
        lines.append(
            f"| {index} | {r.scheduler} | {_num(r.throughput)} | {_num(r.steady_throughput)} "
            f"| {_num(r.p50_ms, 0)} | {_num(r.p99_ms, 0)} | {_num(r.cpu_s)} | {load.load_text(r)} "
            f"| {load.foreign_text(r)} |"
        )
    return lines


def render(
    results: Sequence[RunResult],
    *,
    settings: Mapping[str, Any],
    descriptions: Mapping[str, str],
    skipped: Mapping[str, str],
    pictures: plots.Pictures | None = None,
) -> str:
    """``pictures``: what bench.plots drew (None: none were asked for, e.g. a unit test)."""
    info = machine_info()
    out = [
        "# py-scheduler vs kube-scheduler, side by side",
        "",
        "Generated by `make bench` (`python -m bench.side_by_side`). Each scheduler runs every workload on "
        "a fresh control plane (etcd + kube-apiserver from devcluster), one after the other.",
        "",
        "## Machine",
        "",
        f"- CPU: {info['cpu']}, {info['cores']} cores; memory {info['memory_gib']} GiB; "
        f"kernel {info['kernel']}; Python {info['python']}",
    ]
    for key, val in settings.items():
        out.append(f"- {key}: {val}")
    out.append(f"- other users' CPU: {load.foreign_summary(results)}")
    out += [
        "",
        "Throughput: pods bound / (first pod create sent -> last bind seen), counting the pods that "
        "must bind (churned pods excluded); steady: binds between the 10th and 90th percentile of bind "
        "times. Pods created/s: pods the load generator created over its creation window; it creates "
        "as fast as the API server accepts, so a contestant that leaves the API server more CPU is sent "
        "pods faster, and queues more of them when it binds slower than they arrive. Latency: pod create "
        "acknowledged -> bind seen by a "
        "watch (`fieldSelector=spec.nodeName!=`) in the load generator. CPU: utime+stime of the "
        "scheduler process during the measured run; peak RSS: VmHWM over the process lifetime. "
        "Placement correct: no node over its allocatable cpu/memory/pods, every schedulable pod bound, "
        "every unschedulable one pending. Load: the 1-minute load average right before each contestant "
        "started and right after its run, the bench's own work included (it keeps the cores busy by "
        "itself). Other users' CPU: the machine's busy CPU time (/proc/stat) during the measured run "
        "minus that of the bench's process tree (this process, the control plane, the scheduler and "
        "every other descendant), in cores (CPU seconds per second); a workload's verdict is not called "
        f"when any run of it had more than {load.FOREIGN_LOAD_LIMIT:g} of the cores taken by other users, "
        "or did not record it.",
        "",
    ]
    workloads: dict[str, list[RunResult]] = {}
    for r in results:
        workloads.setdefault(r.workload, []).append(r)
    for name, rows in workloads.items():
        out += [f"## {name}", "", descriptions.get(name, ""), ""]
        by_scheduler: dict[str, list[RunResult]] = {}
        for r in rows:
            by_scheduler.setdefault(r.scheduler, []).append(r)
        medians = [median_run(runs) for runs in by_scheduler.values()]
        out += workload_table(medians)
        if len(rows) > len(medians):
            out += ["", f"Median run of each scheduler above (by throughput); all {len(rows)} runs:", ""]
            out += runs_table(rows)
        same = _same_pending(medians)
        if same:
            out += ["", same]
        ran = {r.scheduler for r in rows}
        if ran >= {peer_of(ran), PY}:
            outcome, why = load.verdict(results, name)
            out += ["", f"Verdict: **{outcome}** ({why})."]
            shipped = second_peer(ran)
            if shipped is not None:
                outcome, why = load.verdict(results, name, shipped)
                out += [
                    "",
                    f"Against {shipped} as shipped (its Permit waiters write no nominatedNodeName, so "
                    f"fewer API writes than py-scheduler's and {peer_of(ran)}'s): **{outcome}** ({why}).",
                ]
        if pictures is not None:
            out += ["", *plots.links(pictures, name)]
        probed = [r for r in medians if r.scale]
        if probed:
            out += ["", "Memory and startup (definitions in `bench/scale.py`):", "", *scale_table(probed)]
        notes = [f"- {r.scheduler}: {note}" for r in rows for note in r.notes]
        if notes:
            out += ["", *notes]
        out.append("")
    for name, why in skipped.items():
        out += [f"## {name}", "", f"Not run: {why}", ""]
    out += _reading(results)
    plugins = {r.scheduler: r.plugins for r in results if r.plugins}
    if plugins:
        out += ["## Plugins each scheduler ran", ""]
        for scheduler, config in plugins.items():
            out.append(f"- **{scheduler}**: " + "; ".join(f"{k}: {_fmt(v)}" for k, v in config.items()))
        out.append("")
    if OPTIMISATION_LOG.exists():
        out += [OPTIMISATION_LOG.read_text().rstrip(), ""]
    out += [
        "## Summary",
        "",
        f"Every line below is from this session on the machine above ({_machine_line(info)}; "
        f"{settings.get('mode', '?')}; load average {settings.get('load average (1, 5, 15 min)', '?')}"
        + (f"; {settings['note']}" if settings.get("note") else "")
        + "). Ratios are py-scheduler's median over its peer's (kube-scheduler's; on gang the "
        "scheduler-plugins scheduler's with NominatedNodeNameForExpectation on, as v1.37.2 and "
        "py-scheduler, and then as shipped); the ceiling fraction is a "
        "scheduler's median throughput over the trivial binder's on the same workload in this session, "
        "the honest limit fraction over the honest limit's (Binding + Scheduled Event per pod through "
        "py-scheduler's client and client settings); a verdict is not called when other users took more "
        f"than {load.FOREIGN_LOAD_LIMIT:g} of the cores during a run of it (other users' CPU, Machine "
        "above), or that was not recorded.",
        "",
        *summary.lines(results),
    ]
    return "\n".join(out) + "\n"


def _machine_line(info: Mapping[str, str]) -> str:
    return f"{info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB"


def _reading(results: Sequence[RunResult]) -> list[str]:
    """How far each scheduler got toward the binding ceiling, and what differs between them."""
    lines = ["## Reading the results", ""]
    what = {
        LIMITS[0]: "the apiserver's binding rate on this machine while this workload's pods are being "
        "created, measured in this session",
        LIMITS[1]: "a Binding and a Scheduled Event per pod through py-scheduler's client with the "
        "schedulers' qps/burst: the API work any scheduler must do, measured in this session",
    }
    for limit in LIMITS:
        for name in dict.fromkeys(r.workload for r in results if r.scheduler == limit):
            best = summary.median_of(results, name, limit, "throughput")
            for scheduler in (KUBE, PY):
                share = summary.ceiling_fraction(results, name, scheduler, limit)
                if not math.isnan(share):
                    lines.append(
                        f"- {name}: {scheduler} reached {share:.0%} of the {summary.LIMIT_NAMES[limit]}'s "
                        f"{best:,.0f} pods/s ({what[limit]})."
                    )
    lines += [
        "- Both schedulers share two cores with etcd, the apiserver and the load generator, so a "
        "scheduler's own CPU is taken from the apiserver: throughput and latency follow CPU per pod.",
        "- Both default profiles run the same plugins (see each run's plugin list). The volume "
        "plugins, DynamicResources and NodeDeclaredFeatures skip at PreFilter "
        "except in the volumes and dra workloads; DefaultPreemption does run for every unschedulable "
        "pod of mixed, and finds no victims (all pods have the same priority).",
        "- Latency includes queueing: pods arrive faster than either scheduler binds them at first, "
        "so p50/p99 measure how well binding keeps pace with creation.",
        "",
    ]
    return lines


def _fmt(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)
