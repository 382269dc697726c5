"""SchedulingQueue throughput: ``make bench-queue`` (``python -m bench.queue_bench``).

1. add then pop 100,000 pods (PrioritySort, three priority classes), against ``asyncio.PriorityQueue``
   doing the same puts and gets in the same run;
2. the same with a custom QueueSort (the generic ``less`` path);
3. a mixed workload: pops with binds, plugin rejections and errors, pod updates, cluster events with
   queueing hints, and flushes driven by a fake clock.

The last line is ``queue add+pop: N ops/s`` (one add or one pop is one op; best of three runs).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from typing import Any

from scheduling_queue import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FakeClock,
    MonotonicClock,
    QueuedPodInfo,
    QueueingHint,
    Resource,
    SchedulingQueue,
)

PRIORITIES = (0, 100, 1000)


def make_pods(n: int, seed: int = 1) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    return [
        {
            "metadata": {"namespace": f"ns{i % 20}", "name": f"pod-{i}", "uid": f"uid-{i}"},
            "spec": {"priority": rnd.choice(PRIORITIES), "schedulerName": "py-scheduler"},
            "status": {"phase": "Pending"},
        }
        for i in range(n)
    ]


async def add_pop(pods: list[dict[str, Any]], custom_less: bool = False) -> float:
    """Seconds to add every pod then pop (and finish) every pod."""
    if custom_less:

        def less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
            return a.priority > b.priority or (a.priority == b.priority and a.timestamp < b.timestamp)

        q = SchedulingQueue(clock=MonotonicClock(), less=less)
    else:
        q = SchedulingQueue(clock=MonotonicClock())
    add, pop, done = q.add, q.pop, q.done
    start = time.perf_counter()
    for pod in pods:
        add(pod)
    for _ in range(len(pods)):
        qpi = await pop()
        assert qpi is not None
        done(qpi)
    return time.perf_counter() - start


async def asyncio_peer(pods: list[dict[str, Any]]) -> float:
    """Same puts and gets on asyncio.PriorityQueue with the PrioritySort tuple key."""
    q: asyncio.PriorityQueue[tuple[int, float, int, dict[str, Any]]] = asyncio.PriorityQueue()
    now = time.monotonic
    start = time.perf_counter()
    for i, pod in enumerate(pods):
        q.put_nowait((-pod["spec"]["priority"], now(), i, pod))
    for _ in range(len(pods)):
        await q.get()
    return time.perf_counter() - start


def _fit_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    """Stand-in for NodeResourcesFit: half of the events free enough room for a given pod."""
    obj = new if new is not None else old
    return (
        QueueingHint.Queue
        if (len(pod["metadata"]["name"]) + len(obj["metadata"]["name"])) % 2
        else QueueingHint.Skip
    )


def _affinity_hint(pod: Any, old: Any, new: Any) -> QueueingHint:
    """Stand-in for InterPodAffinity: only a pod in the same namespace can help."""
    obj = new if new is not None else old
    same = obj["metadata"].get("namespace") == pod["metadata"]["namespace"]
    return QueueingHint.Queue if same else QueueingHint.Skip


HINTS = {
    "NodeResourcesFit": [
        ClusterEventWithHint(
            ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeAllocatable), _fit_hint
        ),
        ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.Delete), _fit_hint),
    ],
    "InterPodAffinity": [ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.Add), _affinity_hint)],
    "NodeAffinity": [
        ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeLabel))
    ],
    "TaintToleration": [
        ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeTaint))
    ],
}
REJECTORS = tuple(HINTS)
REJECTOR_WEIGHTS = (5, 1, 2, 2)  # NodeResourcesFit rejects most often
EVENTS = (
    ClusterEvent(Resource.Node, ActionType.Add),
    ClusterEvent(Resource.Node, ActionType.UpdateNodeLabel),
    ClusterEvent(Resource.AssignedPod, ActionType.Delete),
    ClusterEvent(Resource.AssignedPod, ActionType.Add),
    ClusterEvent(Resource.PersistentVolume, ActionType.Add),  # nobody registered: a no-op
)


async def mixed(pods: list[dict[str, Any]], seed: int = 2) -> tuple[float, int, dict[str, int]]:
    """Seconds and ops for a scheduling-like workload that runs until every pod is bound."""
    rnd = random.Random(seed)
    clock = FakeClock()
    q = SchedulingQueue(clock=clock, hints=HINTS)
    counts = dict.fromkeys(("add", "pop", "bind", "reject", "error", "update", "event", "flush"), 0)
    pending = list(pods)
    rnd.shuffle(pending)
    rejected: list[QueuedPodInfo] = []
    next_flush_backoff = clock.now() + 1.0
    next_flush_unschedulable = clock.now() + 30.0
    start = time.perf_counter()
    while pending or len(q):
        for _ in range(min(len(pending), 50)):
            q.add(pending.pop())
            counts["add"] += 1
        for _ in range(50):
            qpi = q.pop_nowait()
            if qpi is None:
                break
            counts["pop"] += 1
            roll = rnd.random()
            if roll < 0.6:
                q.done(qpi)
                counts["bind"] += 1
            elif roll < 0.95:
                qpi.unschedulable_plugins = set(rnd.choices(REJECTORS, REJECTOR_WEIGHTS))
                qpi.pending_plugins = set()
                q.add_unschedulable_if_not_present(qpi)
                rejected.append(qpi)
                counts["reject"] += 1
            else:
                qpi.unschedulable_plugins = set()
                qpi.pending_plugins = set()
                q.add_unschedulable_if_not_present(qpi)
                counts["error"] += 1
        for qpi in rejected[-5:]:
            if q.where(qpi.key) != "unschedulable":
                continue
            # The scheduler's own PodScheduled=False patch: status-only, must not requeue.
            pod = qpi.pod
            new = {**pod, "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled"}]}}
            q.update(pod, new)
            counts["update"] += 1
        del rejected[:-5]
        event = rnd.choice(EVENTS)
        if event.resource is Resource.AssignedPod:
            obj = {
                "metadata": {"name": f"bound-{rnd.randrange(1000)}", "namespace": f"ns{rnd.randrange(20)}"}
            }
        else:
            obj = {"metadata": {"name": f"node-{rnd.randrange(1000)}"}}
        if event.action is ActionType.Delete:
            q.move_all_to_active_or_backoff(event, obj, None)
        else:
            q.move_all_to_active_or_backoff(event, None, obj)
        counts["event"] += 1
        clock.advance(0.05)
        if clock.now() >= next_flush_backoff:
            q.flush_backoff_completed()
            next_flush_backoff += 1.0
            counts["flush"] += 1
        if clock.now() >= next_flush_unschedulable:
            q.flush_unschedulable_leftover()
            next_flush_unschedulable += 30.0
            counts["flush"] += 1
    elapsed = time.perf_counter() - start
    # Every count is one queue call (a bind is the done() call, a reject or error the requeue).
    return elapsed, sum(counts.values()), counts


async def main(n: int, runs: int) -> None:
    pods = make_pods(n)
    best = best_peer = best_custom = float("inf")
    for i in range(runs):
        t = await add_pop(pods)
        peer = await asyncio_peer(pods)
        custom = await add_pop(pods, custom_less=True)
        best, best_peer, best_custom = min(best, t), min(best_peer, peer), min(best_custom, custom)
        print(
            f"run {i + 1}: queue {2 * n / t:,.0f} ops/s, custom less {2 * n / custom:,.0f} ops/s, "
            f"asyncio.PriorityQueue {2 * n / peer:,.0f} ops/s"
        )
    print(
        f"queue / asyncio.PriorityQueue throughput (best runs): {best_peer / best:.2f} "
        "(the queue also tracks records, in-flight attempts and metrics)"
    )
    print(f"custom QueueSort path: {best_custom / best:.1f}x slower than the PrioritySort fast path")
    elapsed, ops, counts = await mixed(pods)
    detail = ", ".join(f"{k}={v}" for k, v in counts.items())
    print(f"mixed workload: {ops / elapsed:,.0f} queue calls/s ({ops} calls in {elapsed:.2f}s; {detail})")
    print(f"queue add+pop: {2 * n / best:,.0f} ops/s")


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.pods, args.runs))


if __name__ == "__main__":
    cli()
