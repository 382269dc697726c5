"""CPU seconds and peak RSS of a process (and its children) from /proc."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcSample:
    cpu_seconds: float  # utime + stime
    peak_rss_mib: float  # VmHWM


def sample(pid: int) -> ProcSample:
    """utime+stime and VmHWM of ``pid``; zeros if the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ProcSample(0.0, 0.0)
    # The command name (field 2) may hold spaces; fields after the closing paren are fixed.
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])
    hwm_kib = 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            hwm_kib = int(line.split()[1])
            break
    return ProcSample((utime + stime) / _CLK_TCK, hwm_kib / 1024)
