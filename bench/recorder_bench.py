"""CPU per pod of explain's decision recording on the scheduling loop.

    python -m bench.recorder_bench [--nodes 1000] [--pods 2000] [--repeat 5]

Builds the basic workload's cluster in-process (as bench.batching_bench does) and runs, per pod, what
the cycle runs: the snapshot update, a fresh CycleState, ``DecisionRecorder.begin``,
``SchedulingAlgorithm.schedule_pod`` (opportunistic batching on, as the scheduler's default), the
assume into the cache and ``DecisionRecorder.assumed``; ``binding_done`` follows 16 pods later (the
binding pool's pods in flight). Prints the time spent inside the three recorder calls per pod
(perf_counter around each call; the rest of the loop is not counted; a call the OS interrupted, one
over ``INTERRUPTED`` seconds, is left out and counted) and the whole loop's process CPU per pod,
medians over the repeats with each run's numbers and the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import random
import statistics
import time
from typing import Any

from bench.batching_bench import cache_with_nodes
from bench.workloads import basic
from scheduler.app.cli import GC_GEN0_THRESHOLD
from scheduler.cycle.algorithm import SchedulingAlgorithm
from scheduler.explain.recorder import DecisionRecorder
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.types import PodInfo
from tests.unit.fakes import PROFILE, build_frameworks

IN_FLIGHT = 16
# A recorder call takes microseconds; one this long was descheduled (a shared machine's time slice).
INTERRUPTED = 0.0005


def _measure(nodes: int, pods: int, enabled: bool = True) -> tuple[float, float, int]:
    """(seconds inside the recorder, process CPU seconds of the loop), each per pod, and the number of
    interrupted recorder calls left out."""
    workload = basic(nodes, pods)
    cache = cache_with_nodes(workload.nodes)
    snapshot = cache.snapshot()
    fwk = build_frameworks(lambda: snapshot, None, lambda: 0.0)[PROFILE]
    algorithm = SchedulingAlgorithm(rng=random.Random(0), batching=True)
    recorder = DecisionRecorder(enabled=enabled)
    infos: list[PodInfo] = []
    for i, raw in enumerate(workload.pods):
        pod: dict[str, Any] = copy.deepcopy(raw)
        pod["metadata"].update(namespace="default", uid=f"u{i}", resourceVersion="1")
        pod["spec"]["schedulerName"] = PROFILE
        infos.append(PodInfo(pod))
    perf = time.perf_counter
    spans: list[float] = []
    in_flight: list[CycleState] = []
    begin = time.process_time()
    for info in infos:
        cache.update_snapshot(snapshot)
        state = fwk.new_cycle_state()
        t0 = perf()
        recorder.begin(fwk, info, state, 1)
        spans.append(perf() - t0)
        result = algorithm.schedule_pod(fwk, state, info, snapshot)
        cache.assume_pod(info, result.node_name)
        t0 = perf()
        recorder.assumed(state, result.node_name, waiting=False)
        spans.append(perf() - t0)
        in_flight.append(state)
        if len(in_flight) > IN_FLIGHT:
            done = in_flight.pop(0)
            t0 = perf()
            recorder.binding_done(done, bound=True)
            spans.append(perf() - t0)
    for done in in_flight:
        t0 = perf()
        recorder.binding_done(done, bound=True)
        spans.append(perf() - t0)
    spent = time.process_time() - begin
    kept = [span for span in spans if span < INTERRUPTED]
    return sum(kept) / pods, spent / pods, len(spans) - len(kept)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    # As the scheduler's process runs (scheduler/app/cli.py): the cyclic collector rarely.
    gc.set_threshold(GC_GEN0_THRESHOLD, *gc.get_threshold()[1:])
    load_before = os.getloadavg()[0]
    recording: list[float] = []
    loops: list[float] = []
    loops_off: list[float] = []
    interrupted = 0
    for _ in range(args.repeat):
        rec, loop, left_out = _measure(args.nodes, args.pods)
        recording.append(rec)
        loops.append(loop)
        interrupted += left_out
        loops_off.append(_measure(args.nodes, args.pods, enabled=False)[1])
    print(
        f"basic {args.nodes} nodes, {args.pods} pods: recorder {statistics.median(recording) * 1e6:.1f} us "
        f"per pod; loop CPU {statistics.median(loops) * 1e6:.0f} us per pod, "
        f"{statistics.median(loops_off) * 1e6:.0f} us with recording off (medians of {args.repeat})"
    )
    print(
        "  recorder "
        + " ".join(f"{v * 1e6:.1f}" for v in recording)
        + "; loop "
        + " ".join(f"{v * 1e6:.0f}" for v in loops)
        + "; off "
        + " ".join(f"{v * 1e6:.0f}" for v in loops_off)
        + f" (us; {interrupted} interrupted calls left out; load average {load_before:.1f} -> "
        f"{os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
