"""CPU per pod of the scheduling loop on the two spreading workloads, in-process (no API server).

    python -m bench.spread_bench [--repeat 5] [--quick] [--profile N] [--parts]

TopologySpreading (a zone constraint, maxSkew 5, DoNotSchedule) and DefaultTopologySpreading (the
system-default ScheduleAnyway constraints of a ReplicaSet's pods) as ``bench.plugin_bench`` builds them:
the init pods placed first, then each measured pod scheduled as the loop does (snapshot update,
PodInfo, ``schedule_pod``, Reserve, assume into the cache). Spreading pods are never batched, so every
pod runs the whole cycle. Prints the median ``time.process_time`` per measured pod over ``--repeat``
runs (alternating the two workloads) with each run's number and the load average around them.
``--parts`` adds PodTopologySpread's own share per pod, ``--repeat`` runs more: the thread CPU time of
its PreFilter, Filter, PreScore and Score calls (each reading of the clock adds a little).
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench import workloads
from bench.plugin_bench import _Cluster, measure
from scheduler.app.cli import GC_GEN0_THRESHOLD
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

SPREADING = (workloads.TOPOLOGY_SPREADING, workloads.DEFAULT_SPREADING)
_HOOKS = ("pre_filter", "filter_nodes", "pre_score", "score_nodes")


def _timed_hooks(spent: collections.defaultdict[str, float]) -> Callable[[], None]:
    """Wraps PodTopologySpread's hooks to add their CPU time to ``spent``; returns the undo."""
    originals = {hook: getattr(PodTopologySpread, hook) for hook in _HOOKS}

    def timed(hook: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent[hook] += time.thread_time() - began

        return wrapper

    for hook, original in originals.items():
        setattr(PodTopologySpread, hook, timed(hook, original))

    def undo() -> None:
        for hook, original in originals.items():
            setattr(PodTopologySpread, hook, original)

    return undo


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", default=",".join(SPREADING))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="the --quick sizes of side_by_side")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print cProfile's top N")
    parser.add_argument("--parts", action="store_true", help="PodTopologySpread's hooks' share per pod")
    args = parser.parse_args()
    # As the scheduler's process runs (scheduler/app/cli.py): the cyclic collector rarely.
    gc.set_threshold(GC_GEN0_THRESHOLD, *gc.get_threshold()[1:])
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    load_before = os.getloadavg()[0]
    runs: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.repeat):
        for name in names:
            per_pod, _pods, failed = measure(name, args.quick, args.profile)
            if failed:
                raise RuntimeError(f"{name}: {failed} pods did not fit")
            runs[name].append(per_pod)
    load_after = os.getloadavg()[0]
    for name in names:
        values = " ".join(f"{v * 1e6:.0f}" for v in runs[name])
        print(f"{name}: {statistics.median(runs[name]) * 1e6:.0f} us CPU per pod (median; runs {values})")
    print(f"load average {load_before:.1f} -> {load_after:.1f}")
    if args.parts:
        shares: dict[str, list[dict[str, float]]] = {name: [] for name in names}
        for _ in range(args.repeat):
            for name in names:
                spent: collections.defaultdict[str, float] = collections.defaultdict(float)
                undo = _timed_hooks(spent)
                try:
                    shares[name].append(_hook_share(name, args.quick, spent))
                finally:
                    undo()
        for name in names:
            hooks = [hook for hook in _HOOKS if any(hook in share for share in shares[name])]
            parts = ", ".join(
                f"{hook} {statistics.median(share.get(hook, 0.0) for share in shares[name]) * 1e6:.1f}"
                for hook in hooks
            )
            print(f"{name}: PodTopologySpread us CPU per measured pod (median): {parts}")


def _hook_share(name: str, quick: bool, spent: collections.defaultdict[str, float]) -> dict[str, float]:
    """Per measured pod, the time of the hooks ``spent`` collects (the init pods' is left out)."""
    workload = workloads.build(name, quick=quick)
    cluster = _Cluster(workload)
    for i, raw in enumerate(workload.init_pods):
        cluster.schedule(raw, workloads.INIT_NAMESPACE, f"init-{i}")
    spent.clear()
    for i, raw in enumerate(workload.pods):
        cluster.schedule(raw, workloads.MEASURED_NAMESPACE, f"pod-{i}")
    return {hook: spent[hook] / len(workload.pods) for hook in _HOOKS if spent[hook]}


if __name__ == "__main__":
    main()
