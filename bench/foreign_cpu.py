"""The CPU the machine's other users took during a measured run: every core's busy time minus the bench's.

The bench saturates the machine by itself (etcd, kube-apiserver, a scheduler and this process's load
generator share the cores), so the load average after a run says nothing about anyone else. What does:
the machine's busy CPU time over the run (``/proc/stat``, every core) minus the CPU time of the bench's
own process tree over the same window. The rest was spent by other users, whose work competed with the
contestants; divided by the window's wall seconds it is the *foreign load*, in cores.

The bench's own tree is this process and every descendant (control plane, scheduler, extender,
kube-controller-manager, trivial binder...), found by following ``/proc/*/stat`` parent links down from
this process. Each member counts its own utime+stime and its cutime+cstime: the CPU of descendants it
has already reaped (the kernel folds a reaped child's times, its own reaped children's included, into
the parent's cutime/cstime; for this process that is ``os.times().children_*``). So a process that
starts inside the window counts in full at its end (all its CPU is in the window), and one that exits
and is reaped by a member inside the window moves into its parent's cutime/cstime without gain or loss.

Approximated, and which way it errs:

- A descendant that is reparented away from the tree (a daemon that double-forks, an orphan adopted by
  init) leaves it with its CPU: the bench's share shrinks and the foreign load is overstated (the safe
  side: a verdict withheld, never one called wrongly).
- A process reaped between reading the child and reading its parent is counted twice in that one
  reading, or not at all if the parent is read first; the bench starts and stops processes outside the
  measured window, so within it this is rare and at most one short-lived process's CPU.
- Kernel threads working for the bench (kworker writeback of etcd's data, ksoftirqd finishing network
  receive work for the loopback connections) are not its descendants: counted as foreign (overstated).
- ``/proc/stat`` is sampled per clock tick while a process's utime+stime is its exact runtime split at
  tick proportions, so the two agree to a few ticks over a window of seconds; the foreign CPU is clamped
  at 0 where the difference comes out slightly negative.
- ``steal`` (a hypervisor running other guests on this VM's CPUs) counts as busy: CPU the contestants did
  not get. ``guest`` and ``guest_nice`` are already inside user and nice and are not added again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.procstat import CLK_TCK, stat_fields

PROC = Path("/proc")

# /proc/stat "cpu" line, after the label: user nice system idle iowait irq softirq steal guest guest_nice.
# Busy is everything but idle and iowait (a CPU waiting for I/O runs nothing); guest* are inside user/nice.
_BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)


@dataclass(frozen=True)
class CpuReading:
    """One look at the machine: monotonic seconds, every core's busy CPU seconds since boot, and the
    bench's process tree's CPU seconds (live members and the descendants they reaped)."""

    at: float
    machine_s: float
    own_s: float


@dataclass(frozen=True)
class CpuWindow:
    """Between two readings: the machine's busy CPU seconds, the bench's own, and the wall seconds."""

    machine_cpu_s: float
    own_cpu_s: float
    wall_s: float

    @property
    def foreign_cpu_s(self) -> float:
        return max(0.0, self.machine_cpu_s - self.own_cpu_s)

    @property
    def foreign_cores(self) -> float:
        """Other users' CPU seconds per wall second: the cores they kept busy on average."""
        return self.foreign_cpu_s / self.wall_s if self.wall_s > 0 else float("nan")


def machine_busy_seconds(proc: Path = PROC) -> float:
    """Busy CPU seconds of every core since boot, from the aggregate ``cpu`` line of ``/proc/stat``."""
    for line in (proc / "stat").read_text().splitlines():
        if line.startswith("cpu "):
            columns = line.split()[1:]
            return sum(int(columns[i]) for i in _BUSY_COLUMNS if i < len(columns)) / CLK_TCK
    raise ValueError(f"no aggregate cpu line in {proc / 'stat'}")


def _process_table(proc: Path) -> dict[int, tuple[int, int]]:
    """pid -> (ppid, utime+stime+cutime+cstime in ticks) of every process readable right now."""
    table: dict[int, tuple[int, int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = stat_fields((entry / "stat").read_text())
        except (OSError, ValueError):
            continue  # exited between the listing and the read
        table[int(entry.name)] = (int(fields[1]), sum(int(v) for v in fields[11:15]))
    return table


def own_tree_seconds(proc: Path = PROC, root: int | None = None) -> float:
    """CPU seconds of ``root`` (this process by default) and every live descendant, each with the
    descendants it reaped; 0 when ``root`` itself cannot be read."""
    table = _process_table(proc)
    root = os.getpid() if root is None else root
    if root not in table:
        return 0.0
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    ticks, stack = 0, [root]
    while stack:
        pid = stack.pop()
        ticks += table[pid][1]
        stack.extend(children.get(pid, ()))
    return ticks / CLK_TCK


def read_cpu(
    proc: Path = PROC, root: int | None = None, clock: Callable[[], float] = time.monotonic
) -> CpuReading | None:
    """The machine and the bench's tree now; None when ``/proc/stat`` cannot be read (not Linux)."""
    try:
        machine = machine_busy_seconds(proc)
    except (OSError, ValueError, IndexError):
        return None
    return CpuReading(at=clock(), machine_s=machine, own_s=own_tree_seconds(proc, root))


def cpu_window(before: CpuReading | None, after: CpuReading | None) -> CpuWindow | None:
    """What happened between two readings; None when either is missing."""
    if before is None or after is None:
        return None
    return CpuWindow(
        machine_cpu_s=after.machine_s - before.machine_s,
        own_cpu_s=after.own_s - before.own_s,
        wall_s=after.at - before.at,
    )
