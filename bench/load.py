"""Load honesty: the machine's other users during each run, and no verdict while they took a share of it.

A run on a machine that other users kept busy measured them as much as the schedulers: both contestants
are slowed, by different amounts at different times, so a ratio from it is not evidence that one is
ahead. The bench saturates the cores by itself (control plane, scheduler and load generator), so the
load average after a run counts the bench's own work and cannot tell; the measure is the *foreign load*
(bench.foreign_cpu): the machine's busy CPU during the measured run minus the bench's process tree's,
per wall second. Each run's row states it next to the 1-minute load average before and after the run,
and a workload's result is called only when every run of it had its foreign load recorded and at most
``FOREIGN_LOAD_LIMIT`` of the cores.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from bench.analysis import RunResult
from bench.foreign_cpu import CpuWindow
from bench.schedulers import KUBE, PY, peer_of

LOADAVG = Path("/proc/loadavg")

PY_WINS = "py-scheduler ahead"
KUBE_WINS = "kube-scheduler ahead"
MIXED = "mixed"
NOT_CALLED = "not called"

# The most of the machine other users may keep busy, on average over a measured run, as a fraction of
# the cores (1/8: 0.25 cores on 2) for a verdict to be called. The bench alone saturates the cores, so
# each core-second another user takes is taken from the contestants: at an eighth of the machine a run
# loses at most about an eighth of its CPU, less than the +-15% by which single runs of one scheduler
# differ on this machine (bench/results/optimisation-log.md), and less again when both runs carried it.
# Above it, other users' work rather than the schedulers could decide a ratio.
FOREIGN_LOAD_LIMIT = 1 / 8
# How the reasons name the measure.
MEASURE = "other users' CPU (the machine's busy CPU minus the bench's process tree's)"


def read_loadavg(path: Path = LOADAVG) -> list[float]:
    """The 1-, 5- and 15-minute load averages; empty when they cannot be read."""
    try:
        return [float(v) for v in path.read_text().split()[:3]]
    except (OSError, ValueError):
        return []


def cores() -> int:
    return os.cpu_count() or 1


def foreign_limit(core_count: int) -> float:
    """The foreign load, in cores, above which a run counts as loaded."""
    return FOREIGN_LOAD_LIMIT * core_count


def foreign_load(result: RunResult) -> float | None:
    """Cores other users kept busy on average during the run; None when not recorded."""
    if result.machine_cpu_s is None or result.own_cpu_s is None or not result.window_s or result.cores <= 0:
        return None
    return CpuWindow(result.machine_cpu_s, result.own_cpu_s, result.window_s).foreign_cores


def loaded_run(result: RunResult) -> bool:
    """True when other users took more than the limit during the run, or that was not recorded (an
    unknown load is no evidence of an idle machine)."""
    foreign = foreign_load(result)
    return foreign is None or foreign > foreign_limit(result.cores)


def load_text(result: RunResult) -> str:
    """``before → after`` of the 1-minute load average (the bench's own work included)."""
    if not result.load_before or not result.load_after:
        return "-"
    return f"{result.load_before[0]:.1f} → {result.load_after[0]:.1f}"


def foreign_text(result: RunResult) -> str:
    """The run's foreign load in cores, marked when it was over the limit."""
    foreign = foreign_load(result)
    if foreign is None:
        return "not recorded"
    return f"{foreign:.2f} cores" + (" (loaded)" if loaded_run(result) else "")


def foreign_summary(results: Sequence[RunResult]) -> str:
    """The Machine section's line: the measure's range over the runs, and the limit."""
    loads = [f for f in (foreign_load(r) for r in results) if f is not None]
    core_count = max((r.cores for r in results), default=0) or cores()
    limit = (
        f"a verdict needs every run at or below {foreign_limit(core_count):.2f} cores "
        f"({FOREIGN_LOAD_LIMIT:g} of {core_count} cores)"
    )
    if not loads:
        return f"not recorded (results from before the bench measured it), so no verdict is called; {limit}"
    span = f"{min(loads):.2f}-{max(loads):.2f} cores" if len(loads) > 1 else f"{loads[0]:.2f} cores"
    missing = len(results) - len(loads)
    return f"{span} during the measured runs{f', not recorded in {missing}' if missing else ''}; {limit}"


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def verdict(results: Sequence[RunResult], workload: str, peer: str | None = None) -> tuple[str, str]:
    """(outcome, why) for py-scheduler against ``peer`` on ``workload``, by default its peer there
    (kube-scheduler, or scheduler-plugins' on the gang workload: bench.schedulers.peer_of).

    Ahead means throughput ratio >= 1 and p99 ratio <= 1 (medians, the issue's bar); behind means
    both worse; anything else is mixed. Not called at all when other users took more than the limit
    during a run of either, or that was not recorded, or either scheduler has no run or a wrong
    placement."""
    if peer is None:
        peer = peer_of(r.scheduler for r in results if r.workload == workload)
    runs = [r for r in results if r.workload == workload and r.scheduler in (peer, PY)]
    if {r.scheduler for r in runs} != {peer, PY}:
        return NOT_CALLED, "needs a run of each scheduler"
    if any(not r.placement.ok or r.timed_out for r in runs):
        return NOT_CALLED, "a run placed pods wrongly or timed out"
    loads = [foreign_load(r) for r in runs]
    unrecorded = sum(f is None for f in loads)
    if unrecorded:
        return NOT_CALLED, (
            f"{MEASURE} was not recorded in {unrecorded} of {len(runs)} runs (results from before the "
            "bench measured it), so the machine may have been loaded"
        )
    measured = [f for f in loads if f is not None]
    limit = foreign_limit(runs[0].cores)
    loaded = [r for r in runs if loaded_run(r)]
    if loaded:
        return NOT_CALLED, (
            f"the machine was loaded: {MEASURE} up to {max(measured):.2f} cores, over the limit of "
            f"{limit:.2f} ({FOREIGN_LOAD_LIMIT:g} of {runs[0].cores} cores), in {len(loaded)} of "
            f"{len(runs)} runs"
        )

    def median(scheduler: str, attr: str) -> float:
        return _median([float(getattr(r, attr)) for r in runs if r.scheduler == scheduler])

    tput = median(PY, "throughput") / median(peer, "throughput") if median(peer, "throughput") else math.nan
    p99 = median(PY, "p99_ms") / median(peer, "p99_ms") if median(peer, "p99_ms") else math.nan
    why = (
        f"throughput ratio {tput:.2f}, p99 ratio {p99:.2f}; other users' CPU at most {max(measured):.2f} "
        f"cores in every run (limit {limit:.2f})"
    )
    if tput >= 1.0 and p99 <= 1.0:
        return PY_WINS, why
    if tput < 1.0 and p99 > 1.0:
        return (KUBE_WINS if peer == KUBE else f"{peer} ahead"), why
    return MIXED, why
