"""Other users' CPU during a run (bench.foreign_cpu) from a fake /proc: the machine's busy time, the
bench's process tree found by parent links, and processes that start, exit or are reaped in between."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import foreign_cpu
from bench.procstat import CLK_TCK

BENCH = 100  # the bench process: the root of its own tree


class FakeProc:
    """A /proc with an aggregate cpu line and /proc/PID/stat files, in clock ticks."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()
        (root / "self").mkdir()  # not a pid: skipped
        (root / "sys").mkdir()

    def cpu(self, user: int, nice: int, system: int, idle: int, iowait: int, irq: int, softirq: int,
            steal: int, guest: int = 0) -> None:  # fmt: skip
        line = f"cpu  {user} {nice} {system} {idle} {iowait} {irq} {softirq} {steal} {guest} 0"
        (self.root / "stat").write_text(f"{line}\ncpu0 0 0 0 0 0 0 0 0 0 0\nintr 12345\n")

    def process(self, pid: int, ppid: int, utime: int, stime: int, cutime: int = 0, cstime: int = 0,
                comm: str = "python") -> None:  # fmt: skip
        # Fields 3.. of proc(5): state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt,
        # cmajflt, utime, stime, cutime, cstime, priority...
        rest = f"S {ppid} 1 1 0 -1 4194304 10 0 0 0 {utime} {stime} {cutime} {cstime} 20 0 1 0"
        directory = self.root / str(pid)
        directory.mkdir(exist_ok=True)
        (directory / "stat").write_text(f"{pid} ({comm}) {rest}\n")

    def exit(self, pid: int) -> None:
        (self.root / str(pid) / "stat").unlink()
        (self.root / str(pid)).rmdir()


def seconds(ticks: int) -> float:
    return ticks / CLK_TCK


def test_busy_time_is_every_column_but_idle_and_iowait_with_guest_inside_user(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path / "proc")
    proc.cpu(user=1000, nice=20, system=300, idle=9000, iowait=500, irq=5, softirq=40, steal=7, guest=200)
    assert foreign_cpu.machine_busy_seconds(proc.root) == pytest.approx(seconds(1000 + 20 + 300 + 5 + 40 + 7))


def test_the_bench_tree_follows_parent_links_from_the_root_and_counts_reaped_children(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path / "proc")
    proc.cpu(0, 0, 0, 0, 0, 0, 0, 0)
    proc.process(1, 0, 5, 5)  # init: not the bench's
    proc.process(BENCH, 1, 300, 40, cutime=70, cstime=30)  # the bench, with children it already reaped
    proc.process(101, BENCH, 500, 200, comm="kube-apiserver")
    proc.process(102, BENCH, 100, 50, comm="etcd")
    proc.process(103, 101, 9, 1, comm="a (child) with spaces")  # a grandchild
    proc.process(200, 1, 4000, 1000, comm="someone else's build")
    proc.process(201, 200, 800, 100, comm="its compiler")
    (proc.root / "300").mkdir()  # exited between the listing and the read: no stat
    own = 300 + 40 + 70 + 30 + 500 + 200 + 100 + 50 + 9 + 1
    assert foreign_cpu.own_tree_seconds(proc.root, BENCH) == pytest.approx(seconds(own))
    assert foreign_cpu.own_tree_seconds(proc.root, 101) == pytest.approx(seconds(500 + 200 + 9 + 1))
    assert foreign_cpu.own_tree_seconds(proc.root, 999) == 0.0  # the root itself is gone


def test_other_users_cpu_over_a_window_with_processes_starting_exiting_and_reaped(tmp_path: Path) -> None:
    proc = FakeProc(tmp_path / "proc")
    clock = iter([10.0, 20.0])
    proc.cpu(user=10_000, nice=0, system=2_000, idle=50_000, iowait=100, irq=0, softirq=100, steal=0)
    proc.process(BENCH, 1, 1_000, 100)
    proc.process(101, BENCH, 2_000, 500, comm="kube-apiserver")
    proc.process(102, BENCH, 300, 30, comm="kube-scheduler")
    proc.process(200, 1, 7_000, 700, comm="another user")
    before = foreign_cpu.read_cpu(proc.root, BENCH, clock=lambda: next(clock))
    assert before is not None

    # Ten seconds later: the bench used 100 + 50 + 300 + 20 = 470 ticks, other users 40 ticks.
    proc.cpu(user=10_400, nice=0, system=2_100, idle=51_000, iowait=200, irq=0, softirq=110, steal=0)
    proc.process(BENCH, 1, 1_000 + 50, 100 + 50, cutime=300 + 30 + 200, cstime=0)  # reaped the scheduler
    proc.exit(102)  # ... whose 300 + 30 ticks from before the window, and 200 in it, moved to its parent
    proc.process(101, BENCH, 2_000 + 100, 500 + 50, comm="kube-apiserver")
    proc.process(104, BENCH, 15, 5, comm="trivial binder")  # started in the window: all of it counts
    proc.process(200, 1, 7_000 + 40, 700, comm="another user")
    proc.exit(200)  # other users' processes coming and going change nothing: only the machine's total
    after = foreign_cpu.read_cpu(proc.root, BENCH, clock=lambda: next(clock))

    window = foreign_cpu.cpu_window(before, after)
    assert window is not None
    assert window.machine_cpu_s == pytest.approx(seconds(400 + 100 + 10))
    assert window.own_cpu_s == pytest.approx(seconds(100 + 200 + 150 + 20))
    assert window.wall_s == 10.0
    assert window.foreign_cpu_s == pytest.approx(seconds(40))
    assert window.foreign_cores == pytest.approx(seconds(40) / 10.0)


def test_no_negative_foreign_cpu_and_nothing_without_proc_stat(tmp_path: Path) -> None:
    window = foreign_cpu.CpuWindow(machine_cpu_s=19.9, own_cpu_s=20.0, wall_s=10.0)
    assert window.foreign_cpu_s == 0.0 and window.foreign_cores == 0.0
    assert foreign_cpu.read_cpu(tmp_path / "no-proc") is None
    assert foreign_cpu.cpu_window(None, foreign_cpu.CpuReading(1.0, 1.0, 1.0)) is None


def test_this_process_is_found_in_the_real_proc() -> None:
    reading = foreign_cpu.read_cpu()
    assert reading is not None and reading.own_s > 0.0 and reading.machine_s >= reading.own_s
