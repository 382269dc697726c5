"""Load honesty: the load average around each run, and no verdict on a loaded machine.

A run on a machine whose 1-minute load average exceeds its core count measured the machine's other
users as much as the schedulers: both contestants are slowed, by different amounts at different times,
so a ratio from it is not evidence that one is ahead. The report states the load before and after every
run and calls a workload's result only when every run of it started and ended below the limit.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from bench.analysis import RunResult
from bench.schedulers import KUBE, PY, peer_of

LOADAVG = Path("/proc/loadavg")

PY_WINS = "py-scheduler ahead"
KUBE_WINS = "kube-scheduler ahead"
MIXED = "mixed"
NOT_CALLED = "not called"


def read_loadavg(path: Path = LOADAVG) -> list[float]:
    """The 1-, 5- and 15-minute load averages; empty when they cannot be read."""
    try:
        return [float(v) for v in path.read_text().split()[:3]]
    except (OSError, ValueError):
        return []


def cores() -> int:
    return os.cpu_count() or 1


def is_loaded(load: Sequence[float], core_count: int) -> bool:
    """True when the 1-minute load average is above the core count (or was not recorded: unknown
    load is no evidence of an idle machine)."""
    return not load or core_count <= 0 or load[0] > core_count


def load_text(result: RunResult) -> str:
    """``before → after`` of the 1-minute load average, with a mark when either is over the cores."""
    if not result.load_before or not result.load_after:
        return "-"
    mark = " (loaded)" if loaded_run(result) else ""
    return f"{result.load_before[0]:.1f} → {result.load_after[0]:.1f}{mark}"


def loaded_run(result: RunResult) -> bool:
    return is_loaded(result.load_before, result.cores) or is_loaded(result.load_after, result.cores)


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def verdict(results: Sequence[RunResult], workload: str) -> tuple[str, str]:
    """(outcome, why) for py-scheduler against its peer on ``workload`` (kube-scheduler, or
    scheduler-plugins' on the gang workload).

    Ahead means throughput ratio >= 1 and p99 ratio <= 1 (medians, the issue's bar); behind means
    both worse; anything else is mixed. Not called at all when a run of either was made on a loaded
    machine, or its load was not recorded, or either scheduler has no run or a wrong placement."""
    peer = peer_of(r.scheduler for r in results if r.workload == workload)
    runs = [r for r in results if r.workload == workload and r.scheduler in (peer, PY)]
    if {r.scheduler for r in runs} != {peer, PY}:
        return NOT_CALLED, "needs a run of each scheduler"
    if any(not r.placement.ok or r.timed_out for r in runs):
        return NOT_CALLED, "a run placed pods wrongly or timed out"
    loaded = [r for r in runs if loaded_run(r)]
    if loaded:
        if any(not r.load_before or not r.load_after for r in loaded):
            return NOT_CALLED, "the load average was not recorded for every run"
        peak = max(max(r.load_before[0], r.load_after[0]) for r in loaded)
        return NOT_CALLED, (
            f"the machine was loaded: 1-minute load average up to {peak:.1f} on {loaded[0].cores} cores "
            f"in {len(loaded)} of {len(runs)} runs"
        )

    def median(scheduler: str, attr: str) -> float:
        return _median([float(getattr(r, attr)) for r in runs if r.scheduler == scheduler])

    tput = median(PY, "throughput") / median(peer, "throughput") if median(peer, "throughput") else math.nan
    p99 = median(PY, "p99_ms") / median(peer, "p99_ms") if median(peer, "p99_ms") else math.nan
    why = f"throughput ratio {tput:.2f}, p99 ratio {p99:.2f}, every run below the core count"
    if tput >= 1.0 and p99 <= 1.0:
        return PY_WINS, why
    if tput < 1.0 and p99 > 1.0:
        return (KUBE_WINS if peer == KUBE else f"{peer} ahead"), why
    return MIXED, why
