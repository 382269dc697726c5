"""CPU per pod of the scheduling algorithm with and without opportunistic batching.

    python -m bench.batching_bench [--nodes 1000,5000] [--pods 500] [--repeat 1]

Builds the basic workload's cluster in-process (identical nodes, identical 100m/128Mi pods), schedules
pods one after another (each placed pod assumed into the cache, the snapshot updated, as the cycle
does) and prints time.process_time per pod for SchedulingAlgorithm.schedule_pod, batching off and on.
With --repeat N the two alternate N times and the medians are printed with each run's numbers and
the load average before and after (the machine may be shared).

With --echo each placed pod is assumed, as the cycle does, and confirmed 16 pods later (the binding
pool's pods in flight) by the bind's echo as the pod informer delivers it: the pod with spec.nodeName,
a new resourceVersion and PodScheduled=True. The snapshot update and the cache's handling of the echo
are then inside the measured loop too.
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import statistics
import time
from typing import Any

from bench.workloads import basic
from scheduler.cache import SchedulerCache
from scheduler.cycle.algorithm import SchedulingAlgorithm
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.types import PodInfo
from tests.unit.fakes import PROFILE, build_frameworks

IN_FLIGHT = 16


def _echo(pod: dict[str, Any], node_name: str) -> dict[str, Any]:
    """The bound version of ``pod`` as the watch shows it after the Binding."""
    bound = copy.deepcopy(pod)
    bound["metadata"]["resourceVersion"] = str(int(pod["metadata"]["resourceVersion"]) + 1)
    bound["spec"]["nodeName"] = node_name
    bound["status"] = {**pod["status"], "conditions": [{"type": "PodScheduled", "status": "True"}]}
    return bound


def cache_with_nodes(nodes: list[dict[str, Any]]) -> SchedulerCache:
    """A scheduler cache holding copies of ``nodes``, each with the uid and resourceVersion an API
    server would have given it."""
    cache = SchedulerCache()
    for raw_node in nodes:
        node = copy.deepcopy(raw_node)
        node["metadata"].setdefault("uid", node["metadata"]["name"])
        node["metadata"].setdefault("resourceVersion", "1")
        cache.add_node(node)
    return cache


def _measure(nodes: int, pods: int, batching: bool, echo: bool = False) -> tuple[float, int, int]:
    workload = basic(nodes, pods)
    cache = cache_with_nodes(workload.nodes)
    snapshot = cache.snapshot()
    fwk = build_frameworks(lambda: snapshot, None, lambda: 0.0)[PROFILE]
    algorithm = SchedulingAlgorithm(rng=random.Random(0), batching=batching)
    built: list[dict[str, Any]] = []
    for i, raw in enumerate(workload.pods):
        pod: dict[str, Any] = copy.deepcopy(raw)
        pod["metadata"].update(namespace="default", uid=f"u{i}", resourceVersion="1")
        pod["spec"]["schedulerName"] = PROFILE
        if echo:
            # As the API server returns a pending pod.
            pod["status"] = {"phase": "Pending", "qosClass": "Burstable"}
        built.append(pod)
    # One process_time pair per run: a call costs ~1 ms of CPU on this shared machine. The loop is
    # what the cycle does per pod: snapshot update, PodInfo, schedule_pod, assume into the cache.
    begin = time.process_time()
    if echo:
        bound: list[dict[str, Any]] = []
        for i, pod in enumerate(built):
            cache.update_snapshot(snapshot)
            info = PodInfo(pod)
            result = algorithm.schedule_pod(fwk, CycleState(), info, snapshot)
            cache.assume_pod(info, result.node_name)
            bound.append(_echo(pod, result.node_name))
            if i >= IN_FLIGHT:
                cache.update_pod(built[i - IN_FLIGHT], bound[i - IN_FLIGHT])
        for i in range(max(0, len(built) - IN_FLIGHT), len(built)):
            cache.update_pod(built[i], bound[i])
        spent = time.process_time() - begin
        if cache.assumed_count():
            raise RuntimeError("an assumed pod was never confirmed")
        stats = algorithm.batch.stats if algorithm.batch is not None else None
        return spent / pods, stats.hits if stats else 0, stats.misses if stats else 0
    for pod in built:
        cache.update_snapshot(snapshot)
        result = algorithm.schedule_pod(fwk, CycleState(), PodInfo(pod), snapshot)
        pod["spec"]["nodeName"] = result.node_name
        cache.add_pod(pod)
    spent = time.process_time() - begin
    stats = algorithm.batch.stats if algorithm.batch is not None else None
    return spent / pods, stats.hits if stats else 0, stats.misses if stats else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", default="1000,5000")
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--echo", action="store_true", help="assume, then confirm by the echo")
    args = parser.parse_args()
    for nodes in (int(n) for n in args.nodes.split(",")):
        load_before = os.getloadavg()[0]
        offs: list[float] = []
        ons: list[float] = []
        hits = misses = 0
        for _ in range(args.repeat):
            offs.append(_measure(nodes, args.pods, False, args.echo)[0])
            on, hits, misses = _measure(nodes, args.pods, True, args.echo)
            ons.append(on)
        off, on = statistics.median(offs), statistics.median(ons)
        print(
            f"basic {nodes} nodes: schedule_pod CPU per pod {off * 1e6:.0f} us -> {on * 1e6:.0f} us "
            f"with batching ({off / on:.2f}x; hits {hits}, misses {misses})"
        )
        if args.repeat > 1:
            runs_off = " ".join(f"{v * 1e6:.0f}" for v in offs)
            runs_on = " ".join(f"{v * 1e6:.0f}" for v in ons)
            print(
                f"  off {runs_off}; on {runs_on} "
                f"(us; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f})"
            )


if __name__ == "__main__":
    main()
