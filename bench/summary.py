"""The one-line figures ``make bench`` ends with, computed from the runs of one session.

Every figure compares runs of the same session on the same machine, so the machine's load lands on
both sides: ratios are medians over repeated runs (three per contestant of every workload but the
long ones), and the ceiling fraction divides by the trivial binder's rate on the same workload shape,
measured in the same session.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from bench import load
from bench.analysis import RunResult
from bench.scale import ScaleProbe
from bench.schedulers import CEILING, HONEST, KUBE, LIMITS, PY, peer_of, second_peer

# How the summary lines and the raw JSON name each limit.
LIMIT_NAMES = {CEILING: "ceiling", HONEST: "honest limit"}


def median_of(results: Sequence[RunResult], workload: str, scheduler: str, attr: str) -> float:
    """The median of ``attr`` over ``scheduler``'s runs of ``workload``; NaN if it has none."""
    values = [float(getattr(r, attr)) for r in results if r.workload == workload and r.scheduler == scheduler]
    return statistics.median(values) if values else math.nan


def quotient(numerator: float, denominator: float) -> float:
    """numerator / denominator; NaN when either is missing or the denominator is zero."""
    if math.isnan(numerator) or math.isnan(denominator) or denominator == 0:
        return math.nan
    return numerator / denominator


def workload_peer(results: Sequence[RunResult], workload: str) -> str:
    """The scheduler py-scheduler is compared with on ``workload``: kube-scheduler, or scheduler-plugins'."""
    return peer_of(r.scheduler for r in results if r.workload == workload)


def peer_ratio(results: Sequence[RunResult], workload: str, attr: str, peer: str | None = None) -> float:
    """py-scheduler's median ``attr`` over ``peer``'s on ``workload``, by default its peer there
    (kube-scheduler's, or scheduler-plugins')."""
    if peer is None:
        peer = workload_peer(results, workload)
    return quotient(median_of(results, workload, PY, attr), median_of(results, workload, peer, attr))


def ceiling_fraction(
    results: Sequence[RunResult], workload: str, scheduler: str = PY, limit: str = CEILING
) -> float:
    """``scheduler``'s median throughput over ``limit``'s (the trivial binder's, or the honest limit's)
    on the same workload, same session."""
    ceiling = median_of(results, workload, limit, "throughput")
    return quotient(median_of(results, workload, scheduler, "throughput"), ceiling)


def limits(results: Sequence[RunResult]) -> dict[str, dict[str, dict[str, float | None]]]:
    """workload -> limit -> {"pods_per_s": its median, scheduler: fraction}, for the raw JSON; only
    the limits run on a workload, a scheduler's fraction None when it has no run there."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for name in dict.fromkeys(r.workload for r in results):
        for limit in LIMITS:
            rate = median_of(results, name, limit, "throughput")
            if math.isnan(rate):
                continue
            entry: dict[str, float | None] = {"pods_per_s": rate}
            for scheduler in (KUBE, PY):
                fraction = ceiling_fraction(results, name, scheduler, limit)
                entry[scheduler] = None if math.isnan(fraction) else fraction
            out.setdefault(name, {})[LIMIT_NAMES[limit]] = entry
    return out


def batching_counts(results: Sequence[RunResult], workload: str) -> tuple[float, float] | None:
    """(hits, misses) summed over py-scheduler's runs of ``workload``; None unless every run was scraped."""
    runs = [r for r in results if r.workload == workload and r.scheduler == PY]
    if not runs or any(r.batching_hits is None or r.batching_misses is None for r in runs):
        return None
    return sum(r.batching_hits or 0.0 for r in runs), sum(r.batching_misses or 0.0 for r in runs)


def batching_text(counts: tuple[float, float] | None) -> str:
    """The hit rate, or why there is none: batching off (no attempt counted) or metrics not read."""
    if counts is None:
        return "not measured (py_scheduler_batching_hits/misses not in its /metrics)"
    hits, misses = counts
    if hits + misses == 0:
        return "off (py_scheduler_batching_hits and _misses stayed 0)"
    return f"{hits / (hits + misses):.2f} ({hits:,.0f} hits, {misses:,.0f} misses)"


def _fmt(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"


def _scale_lines(results: Sequence[RunResult], workload: str) -> list[str]:
    lines: list[str] = []
    runs = [r for r in results if r.workload == workload and r.scale]
    probes = {r.scheduler: ScaleProbe.from_dict(r.scale) for r in runs}
    for scheduler, probe in probes.items():
        lines.append(f"memory per node {scheduler} ({workload}): {probe.kib_per_node:.1f} KiB")
    for scheduler, probe in probes.items():
        lines.append(
            f"memory per pod {scheduler} ({workload}): {probe.kib_per_pod:.1f} KiB "
            f"({probe.kib_per_pod_after_run:.1f} KiB right after the run)"
        )
    for scheduler, probe in probes.items():
        lines.append(
            f"startup sync time {scheduler} ({workload}, {probe.nodes:,} nodes + {probe.pods:,} pods): "
            f"{probe.sync_full_s:.1f} s ({probe.sync_nodes_s:.1f} s with the nodes only)"
        )
    return lines


def lines(results: Sequence[RunResult]) -> list[str]:
    """Every summary line, workload by workload in the order they ran."""
    out: list[str] = []
    names = list(dict.fromkeys(r.workload for r in results))
    for name in names:
        schedulers = {r.scheduler for r in results if r.workload == name}
        for limit in LIMITS:
            if limit not in schedulers:
                continue
            for scheduler in (PY, KUBE):
                if scheduler in schedulers:
                    fraction = ceiling_fraction(results, name, scheduler, limit)
                    out.append(f"{LIMIT_NAMES[limit]} fraction {scheduler} ({name}): {_fmt(fraction)}")
        compared = [workload_peer(results, name), second_peer(schedulers)]
        for peer in [p for p in compared if p is not None and {PY, p} <= schedulers]:
            peers = f"py-scheduler/{peer}"
            for what, attr in (("throughput ratio", "throughput"), ("p99 latency ratio", "p99_ms"),
                               ("cpu ratio", "cpu_s")):  # fmt: skip
                out.append(f"{what} {peers} ({name}): {_fmt(peer_ratio(results, name, attr, peer))}")
            outcome, why = load.verdict(results, name, peer)
            against = "" if peer == compared[0] else f" against {peer}"
            out.append(f"verdict ({name}){against}: {outcome} ({why})")
        if PY in schedulers:
            rate = batching_text(batching_counts(results, name))
            out.append(f"batching hit rate py-scheduler ({name}): {rate}")
        out += _scale_lines(results, name)
    return out
