"""The peer schedulers of the side-by-side tests and benches: where their binaries live, built on demand.

scheduler-plugins (sigs.k8s.io/scheduler-plugins at devcluster/SCHEDULER_PLUGINS_VERSION) is built by
devcluster/build_scheduler_plugins.sh into the same cache as the control plane; the script returns at once
when both binaries are cached, so asking for them is cheap."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from devcluster.binaries import cache_root

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build_scheduler_plugins.sh"


@dataclass(frozen=True)
class SchedulerPlugins:
    version: str
    scheduler: Path
    controller: Path

    def built(self) -> bool:
        return all(os.access(path, os.X_OK) for path in (self.scheduler, self.controller))


def scheduler_plugins() -> SchedulerPlugins:
    """The pinned scheduler-plugins release's binaries (they may not be built yet)."""
    version = (HERE / "SCHEDULER_PLUGINS_VERSION").read_text().strip()
    directory = cache_root() / f"scheduler-plugins-{version}"
    return SchedulerPlugins(
        version, directory / "scheduler-plugins-scheduler", directory / "scheduler-plugins-controller"
    )


def ensure_scheduler_plugins() -> SchedulerPlugins:
    """The binaries, built first when missing (a cold build takes several minutes)."""
    peer = scheduler_plugins()
    if not peer.built():
        subprocess.run(["bash", str(BUILD_SCRIPT)], check=True)
    return peer
