"""Memory per node and per pod, and startup sync time, of a scheduler at the huge workload's size.

Definitions (the same for both schedulers; RSS is VmRSS, sampled ``SETTLE_S`` after the scheduler
reports ready, so the post-sync handler work is done):

* ``rss_empty``: a scheduler started on the fresh control plane before any node exists.
* ``rss_nodes``: the scheduler that then runs the workload, started after every node was created.
  Memory per node = (rss_nodes - rss_empty) / nodes.
* ``rss_after_run``: that scheduler once every measured pod is bound (before it stops).
* ``rss_full``: a scheduler restarted against the full cluster (nodes plus every bound pod).
  Memory per pod = (rss_full - rss_nodes) / pods: two fresh processes, so neither run-time buffers
  nor queues count; the after-run figure, (rss_after_run - rss_nodes) / pods, is reported beside it.
* startup sync time: from process start to ready, i.e. its informers listed and synced (kube-scheduler's
  ``/readyz`` includes ``sched-handler-sync``; py-scheduler's ``/readyz`` its informer-sync check),
  once with the nodes only and once against the full cluster.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass

from bench.procstat import sample
from bench.schedulers import Contestant

SETTLE_S = 3.0
NAN = math.nan


@dataclass
class ScaleProbe:
    nodes: int
    pods: int
    rss_empty_mib: float = NAN
    rss_nodes_mib: float = NAN
    rss_after_run_mib: float = NAN
    rss_full_mib: float = NAN
    sync_empty_s: float = NAN
    sync_nodes_s: float = NAN
    sync_full_s: float = NAN
    # The control plane's own memory at the end of the run: what the machine must hold.
    apiserver_peak_rss_mib: float = NAN
    etcd_peak_rss_mib: float = NAN

    def as_dict(self) -> dict[str, float]:
        return {key: float(value) for key, value in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, float]) -> ScaleProbe:
        probe = cls(nodes=int(data["nodes"]), pods=int(data["pods"]))
        for key, value in data.items():
            if key not in ("nodes", "pods") and key in cls.__dataclass_fields__:
                setattr(probe, key, float(value))
        return probe

    @property
    def kib_per_node(self) -> float:
        return _per(self.rss_nodes_mib - self.rss_empty_mib, self.nodes)

    @property
    def kib_per_pod(self) -> float:
        return _per(self.rss_full_mib - self.rss_nodes_mib, self.pods)

    @property
    def kib_per_pod_after_run(self) -> float:
        return _per(self.rss_after_run_mib - self.rss_nodes_mib, self.pods)


def _per(growth_mib: float, count: int) -> float:
    """KiB per item; NaN when either figure is missing."""
    if count <= 0 or math.isnan(growth_mib):
        return NAN
    return growth_mib * 1024 / count


def rss_now(pid: int, settle: float = SETTLE_S) -> float:
    """VmRSS of ``pid`` in MiB after ``settle`` seconds."""
    if settle > 0:
        time.sleep(settle)
    return sample(pid).rss_mib


def timed_start(contestant: Contestant, clock: Callable[[], float] = time.monotonic) -> float:
    """Start ``contestant`` and return the seconds until it reported ready (its ``start`` waits for that)."""
    began = clock()
    contestant.start()
    return clock() - began


def startup_probe(contestant: Contestant, settle: float = SETTLE_S) -> tuple[float, float]:
    """(seconds to ready, RSS MiB once settled) of a fresh start; the contestant is stopped after."""
    try:
        seconds = timed_start(contestant)
        return seconds, rss_now(contestant.pid, settle)
    finally:
        contestant.stop()
