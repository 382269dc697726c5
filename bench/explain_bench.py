"""What decision recording costs: ``python -m bench.explain_bench`` (part of ``make bench``).

Runs the product's ``Scheduler.schedule_one`` (default plugins, real cache, snapshot and queue) over
1,000 and 5,000 fake nodes, one scheduler with recording switched on and off batch by batch
(neighbouring batches, alternating which goes first) so drift hits both alike; ``--control`` keeps
it off in both halves to show the method's noise. Bindings are not sent (the pool is a stub) and the
API is a no-op, so the figure is the scheduling cycle alone: the worst case for the overhead ratio.
A second workload makes every tenth pod unschedulable, which exercises the nearest-miss probe.

The last line is ``explain recording overhead: X% (1000 nodes) Y% (5000 nodes)``. Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from scheduler.app.cli import GC_GEN0_THRESHOLD
from scheduler.cache import PodInfoCache, SchedulerCache, Snapshot
from scheduler.client.events import EventRecorder
from scheduler.config import parse_config_with_plugins
from scheduler.cycle import profiles
from scheduler.cycle.binding import BindingResult
from scheduler.cycle.profiles import FrameworkHandle, queue_hints
from scheduler.cycle.schedule_one import Scheduler
from scheduler.explain.recorder import DecisionRecorder
from scheduler.plugins.registry import IN_TREE_REGISTRY
from scheduling_queue import FakeClock, SchedulingQueue

PROFILE = "py-scheduler"


class _NoApi:
    """Accepts every write the recorder makes and does nothing."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


class _NoPool:
    in_flight = 0

    def submit(self, task: Any) -> None:
        return None


def _node(i: int) -> dict[str, Any]:
    alloc = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": f"z{i % 3}"}
    return {
        "metadata": {"name": f"n{i}", "uid": f"u{i}", "resourceVersion": "1", "labels": labels},
        "spec": {},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def _pod(i: int, unschedulable: bool) -> dict[str, Any]:
    cpu = "64" if unschedulable else "100m"
    return {
        "metadata": {"namespace": "bench", "name": f"p{i}", "uid": f"p{i}", "resourceVersion": "1"},
        "spec": {
            "schedulerName": PROFILE,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
        },
        "status": {"phase": "Pending"},
    }


def _scheduler(nodes: int, recording: bool) -> tuple[Scheduler, SchedulingQueue]:
    cfg, registry = parse_config_with_plugins(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
         "profiles": [{"schedulerName": PROFILE}]},
        registry=IN_TREE_REGISTRY,
    )  # fmt: skip
    holder: list[Scheduler] = []

    def snapshot() -> Snapshot:
        return holder[0].snapshot

    clock = FakeClock()
    frameworks = profiles.build_frameworks(
        cfg, registry, lambda name: FrameworkHandle(name, snapshot, None, clock.now)
    )
    pod_infos = PodInfoCache()
    cache = SchedulerCache(pod_infos=pod_infos)
    for i in range(nodes):
        cache.add_node(_node(i))
    queue = SchedulingQueue(clock=clock, hints=queue_hints(frameworks))

    def pool(on_done: Callable[[BindingResult], None]) -> Any:
        return _NoPool()

    sched = Scheduler(
        frameworks=frameworks,
        queue=queue,
        cache=cache,
        pod_infos=pod_infos,
        recorder=EventRecorder(_NoApi(), reporting_instance="bench", clock=clock.now),  # type: ignore[arg-type]
        binding_pool_factory=pool,
        clock=clock.now,
        decisions=DecisionRecorder(enabled=recording, clock=clock.now),
    )
    holder.append(sched)
    return sched, queue


def _cycle(sched: Scheduler, queue: SchedulingQueue, pods: list[dict[str, Any]]) -> float:
    for pod in pods:
        queue.add(pod)
    start = time.process_time()
    for _ in pods:
        qpi = queue.pop_nowait()
        assert qpi is not None
        rest = sched.schedule_one(qpi)
        # Only a PostFilter waiting for an API write returns the rest of the attempt; these pods
        # have no claims, so it never does here.
        assert rest is None, "a PostFilter write in the explain bench"
    return time.process_time() - start


def measure(
    nodes: int, pods: int, batch: int, failing_every: int, *, control: bool = False
) -> tuple[float, float, float]:
    """(off s/pod, on s/pod, median of the per-batch on/off ratios).

    One scheduler, recording switched on and off batch by batch (neighbouring batches see almost the
    same cluster), alternating which of a pair goes first: the machine's noise (other processes,
    frequency changes) lands on both alike, and the median ratio of neighbouring batches is what the
    figure reports. Two schedulers side by side differed by several points even with recording off in
    both (memory layout). ``control``: both halves off, the noise floor of the method.
    """
    sched, queue = _scheduler(nodes, recording=True)
    decisions = sched.decisions
    assert isinstance(decisions, DecisionRecorder)
    all_pods = [_pod(i, failing_every > 0 and i % failing_every == 0) for i in range(pods)]
    # As the product runs (scheduler/app/cli.py, app.py): a high young-generation threshold, and the
    # synced cluster frozen out of the collector's way.
    gc.set_threshold(GC_GEN0_THRESHOLD, *gc.get_threshold()[1:])
    gc.collect()
    gc.freeze()
    off_total = on_total = 0.0
    ratios: list[float] = []

    def run(chunk: list[dict[str, Any]], recording: bool) -> float:
        decisions.enabled = recording and not control
        return _cycle(sched, queue, chunk)

    pairs = range(0, pods - 2 * batch + 1, 2 * batch)
    for number, first in enumerate(pairs):
        a, b = all_pods[first : first + batch], all_pods[first + batch : first + 2 * batch]
        if number % 2:
            on, off = run(a, True), run(b, False)
        else:
            off, on = run(a, False), run(b, True)
        off_total += off
        on_total += on
        ratios.append(on / off)
    sched.recorder.shutdown(wait=False)
    queue.close()
    gc.unfreeze()
    measured = len(pairs) * batch
    return off_total / measured, on_total / measured, statistics.median(ratios)


async def _measure_on_loop(
    nodes: int, pods: int, batch: int, failing_every: int, control: bool
) -> tuple[float, float, float]:
    # The Scheduler wants a running loop (Permit waits live on it); the cycles themselves are sync.
    return measure(nodes, pods, batch, failing_every, control=control)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--nodes", default="1000,5000", help="cluster sizes, comma-separated")
    parser.add_argument("--control", action="store_true", help="recording off in both halves: the noise")
    parser.add_argument("--all-fit-only", action="store_true", help="skip the unschedulable workload")
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",")]
    workloads = ((0, "all fit"),) if args.all_fit_only else ((0, "all fit"), (10, "1 in 10 unschedulable"))
    overheads: list[str] = []
    for failing_every, label in workloads:
        for nodes in sizes:
            off, on, ratio = asyncio.run(
                _measure_on_loop(nodes, args.pods, args.batch, failing_every, args.control)
            )
            pct = (ratio - 1) * 100
            print(f"{label:>22}, {nodes} nodes: off {off * 1e3:.3f} ms/pod, on {on * 1e3:.3f} ms/pod, "
                  f"overhead {pct:+.1f}%")  # fmt: skip
            if failing_every == 0:
                overheads.append(f"{pct:+.1f}% ({nodes} nodes)")
    what = "control (recording off in both halves)" if args.control else "explain recording overhead"
    print(f"{what}: " + " ".join(overheads))


if __name__ == "__main__":
    main()
