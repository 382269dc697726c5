"""CPU seconds and peak RSS of a process (and its children) from /proc."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# Clock ticks per second (USER_HZ): the unit of /proc/stat and of the times in /proc/PID/stat.
CLK_TCK = os.sysconf("SC_CLK_TCK")


def stat_fields(stat: str) -> list[str]:
    """The fields of a ``/proc/PID/stat`` line after the command name: index 0 is the state (field 3),
    so field N of proc(5) is index N - 3 (ppid 1, utime 11, stime 12, cutime 13, cstime 14). The command
    name (field 2) may hold spaces and parentheses; the fields after its last ``)`` are fixed."""
    return stat[stat.rindex(")") + 2 :].split()


@dataclass(frozen=True)
class ProcSample:
    cpu_seconds: float  # utime + stime
    peak_rss_mib: float  # VmHWM
    rss_mib: float = 0.0  # VmRSS: resident now


def sample(pid: int) -> ProcSample:
    """utime+stime, VmHWM and VmRSS of ``pid``; zeros if the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ProcSample(0.0, 0.0)
    fields = stat_fields(stat)
    utime, stime = int(fields[11]), int(fields[12])
    kib = {"VmHWM:": 0, "VmRSS:": 0}
    for line in status.splitlines():
        key = line.split(maxsplit=1)[0] if line else ""
        if key in kib:
            kib[key] = int(line.split()[1])
    return ProcSample((utime + stime) / CLK_TCK, kib["VmHWM:"] / 1024, kib["VmRSS:"] / 1024)
