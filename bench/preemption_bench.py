"""CPU per preemptor of the preemption workload, in-process (no API server).

    python -m bench.preemption_bench [--quick] [--lag N] [--pdbs N] [--profile out.pstats]

Builds the preemption workload's cluster (scheduler_perf's PreemptionBasic shape) in a Scheduler whose
API server is a fake (tests/unit/fakes.py's CoreEnv): the low-priority pods bound, the high-priority
pods pending. Each preemptor then goes the way it goes in a cluster: a failed cycle and PostFilter (the
dry run, the nomination, the victims' writes off the loop), the nomination's status patch and the
victims' deletions delivered to the event handlers as the watch would, a second cycle and its bind
confirmed by an update. Prints time.process_time per preemptor for each phase (the writer threads' CPU
is counted too: process time), the part of the first cycle spent in the dry run, and a digest of the
decisions (the victims, the bindings; in any order, as the fake API server's writer threads may
deliver them).

The queue runs the profile's PreEnqueue chain as the app wires it (``SchedulerApp._pre_enqueue``), so
DefaultPreemption holds a preemptor while its victims are being evicted. ``--lag N`` (0: every write is
delivered before the next cycle) delays the watch by N cycles and lets each cycle take
``--cycle-seconds`` of the fake clock (the backoffs run out), as in a real run where the API server
takes seconds to show the deletions: then ~N preemptors are held at once, and each victim's DELETE runs
the rejectors' hints and the PreEnqueue chain of every held preemptor (upstream's
moveEntitiesToActiveOrBackoffQueue). The decisions differ from lag 0's (later cycles see the victims
still there), but not between two trees at the same lag.

``--pdbs N`` (0: none) adds N PodDisruptionBudgets, each over every N-th low-priority pod (a label
``pdb-group``), with an allowance larger than the pods it covers: no victim ever violates one, so the
decisions are those without budgets, while each dry run reads them (as in a cluster, where budgets
nearly always exist). The budgets never change during the run.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import cProfile
import hashlib
import time
from collections import Counter, defaultdict
from typing import Any

from bench.workloads import PREEMPTION_SIZES, preemption
from scheduler.app.event_handlers import EventHandlers
from scheduler.app.scheduler_app import SchedulerApp
from scheduler.framework.listers import POD_DISRUPTION_BUDGETS, Lister, ResourceSpec, StaticLister
from scheduler.plugins.defaultpreemption import DefaultPreemption
from tests.unit.fakes import PROFILE, CoreEnv, wait_for


def _prepare(raw: dict[str, Any], uid: str, priority: int) -> dict[str, Any]:
    pod: dict[str, Any] = copy.deepcopy(raw)
    pod["metadata"].update(namespace="default", uid=uid, resourceVersion="1")
    pod["spec"]["schedulerName"] = PROFILE
    pod["spec"]["priority"] = priority
    return pod


# Part of the first cycle: the Evaluator's dry run over the potential nodes (SelectVictimsOnNode each).
DRY_RUN = "of which dry run"


def _time_dry_runs(plugin: DefaultPreemption, spent: dict[str, float], counts: Counter[str]) -> None:
    """Counts the CPU of each dry run under DRY_RUN (an instance attribute shadowing the method)."""
    evaluator = plugin.evaluator
    dry_run = evaluator.dry_run_preemption

    def timed(*args: Any, **kwargs: Any) -> Any:
        begin = time.process_time()
        try:
            return dry_run(*args, **kwargs)
        finally:
            spent[DRY_RUN] += time.process_time() - begin
            counts[DRY_RUN] += 1

    evaluator.dry_run_preemption = timed  # type: ignore[method-assign]


class _AppShim:
    """What ``SchedulerApp._pre_enqueue`` reads: the frameworks and the PodInfo cache."""

    def __init__(self, env: CoreEnv) -> None:
        self.frameworks = env.frameworks
        self.pod_infos = env.pod_infos


def _pre_enqueue_of(env: CoreEnv) -> Any:
    """The app's PreEnqueue check, bound to this environment."""
    shim = _AppShim(env)
    return lambda pod, gating_plugin="": SchedulerApp._pre_enqueue(shim, pod, gating_plugin)  # type: ignore[arg-type]


def _budgets(count: int, init: int) -> list[dict[str, Any]]:
    """``count`` budgets, the k-th over the low-priority pods labelled ``pdb-group: g<k>``, each allowing
    more disruptions than it has pods."""
    return [
        {
            "metadata": {"name": f"pdb-g{k}", "namespace": "default", "uid": f"pdb-g{k}"},
            "spec": {"selector": {"matchLabels": {"pdb-group": f"g{k}"}}},
            "status": {"disruptionsAllowed": init, "currentHealthy": init, "expectedPods": init},
        }
        for k in range(count)
    ]


async def _run(
    quick: bool,
    profiler: cProfile.Profile | None,
    lag: int = 0,
    cycle_seconds: float = 0.05,
    pdbs: int = 0,
) -> dict[str, float]:
    nodes, init, measure = PREEMPTION_SIZES[1 if quick else 0]
    workload = preemption(nodes, init, measure)
    raw_nodes = []
    for raw in workload.nodes:
        node = copy.deepcopy(raw)
        node["metadata"].setdefault("uid", node["metadata"]["name"])
        node["metadata"].setdefault("resourceVersion", "1")
        raw_nodes.append(node)
    listers: dict[ResourceSpec, Lister] = {POD_DISRUPTION_BUDGETS: StaticLister(_budgets(pdbs, init))}
    env = CoreEnv(raw_nodes, listers=lambda spec: listers.setdefault(spec, StaticLister()))
    env.queue._pre_enqueue = _pre_enqueue_of(env)
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    by_name: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(workload.init_pods):
        pod = _prepare(raw, f"low-{i}", 0)
        pod["spec"]["nodeName"] = raw_nodes[i % nodes]["metadata"]["name"]
        pod["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
        if pdbs:
            pod["metadata"].setdefault("labels", {})["pdb-group"] = f"g{i % pdbs}"
        handlers.on_pod_add(pod)
        by_name[pod["metadata"]["name"]] = pod
    pending: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(workload.pods):
        pod = _prepare(raw, f"high-{i}", 10)
        handlers.on_pod_add(pod)
        pending[pod["metadata"]["name"]] = pod

    spent: dict[str, float] = defaultdict(float)
    cycles: Counter[str] = Counter()
    # Seeded, so two trees make the same decisions and the digest below compares them.
    for plugin in env.fwk.plugins.post_filter:
        if isinstance(plugin, DefaultPreemption):
            plugin._rng.seed(0)
            _time_dry_runs(plugin, spent, cycles)
    env.sched.algorithm._rng.seed(0)
    attempts: Counter[str] = Counter()
    deleted = 0
    decisions: list[str] = []
    seen_calls = 0
    # len(env.rest.calls) at the end of each cycle: with a lag, the watch delivers up to an older mark.
    marks: list[int] = []
    drain = False
    held_at_delete = 0
    if profiler is not None:
        profiler.enable()
    while pending:
        # The victims' deletions and the bindings, as the watch delivers them (the fake API server's
        # calls read from where the last round stopped, so the harness stays out of the profile).
        if lag == 0 or drain:
            upto = len(env.rest.calls)
        elif len(marks) > lag:
            upto = marks[-(lag + 1)]
        else:
            upto = 0
        drain = False
        calls = env.rest.calls[seen_calls:upto]
        seen_calls += len(calls)
        begin = time.process_time()
        for call in calls:
            if call.method == "DELETE" and "/pods/" in call.path:
                victim = call.path.rsplit("/", 1)[-1]
                held_at_delete += len(env.queue._gated_pods)
                handlers.on_pod_delete(by_name.pop(victim))
                decisions.append(victim)
                deleted += 1
            elif call.method == "PATCH" and call.path.endswith("/status"):
                # The preemptor's nomination (and the victims' DisruptionTarget condition).
                name = call.path.rsplit("/", 2)[-2]
                nominated = (call.body.get("status") or {}).get("nominatedNodeName")
                if name in pending and nominated is not None:
                    new = copy.deepcopy(pending[name])
                    new["status"] = {**(new.get("status") or {}), "nominatedNodeName": nominated}
                    new["metadata"]["resourceVersion"] = str(int(new["metadata"]["resourceVersion"]) + 1)
                    handlers.on_pod_update(pending[name], new)
                    pending[name] = new
            elif call.method == "POST" and call.path.endswith("/binding"):
                bound = pending.pop(call.body["metadata"]["name"])
                decisions.append(f"{call.body['metadata']['name']}->{call.body['target']['name']}")
                new = copy.deepcopy(bound)
                new["spec"]["nodeName"] = call.body["target"]["name"]
                new["metadata"]["resourceVersion"] = str(int(new["metadata"]["resourceVersion"]) + 1)
                handlers.on_pod_update(bound, new)
        spent["watch events"] += time.process_time() - begin
        cycles["watch events"] += 1
        qpi = env.queue.pop_nowait()
        if qpi is None:
            # Waiting for a binding or for the executor: let the worker threads report. With a lag,
            # nothing is left to schedule until the watch catches up: deliver everything next.
            drain = True
            await asyncio.sleep(0.001)
            continue
        name = qpi.pod["metadata"]["name"]
        attempts[name] += 1
        phase = "first cycle" if attempts[name] == 1 else "later cycle"
        begin = time.process_time()
        rest = env.sched.schedule_one(qpi)
        if rest is not None:
            await rest
        await wait_for(lambda: env.sched.preemption.in_flight == 0, 10)
        spent[phase] += time.process_time() - begin
        cycles[phase] += 1
        if lag:
            marks.append(len(env.rest.calls))
            env.clock.advance(cycle_seconds)
    if profiler is not None:
        profiler.disable()
    env.close()
    out: dict[str, float] = {}
    for key, seconds in spent.items():
        out[f"{key}: ms per preemptor"] = seconds / measure * 1e3
        out[f"{key}: count"] = cycles[key]
    out["total: ms per preemptor"] = sum(v for k, v in spent.items() if k != DRY_RUN) / measure * 1e3
    out["victims"] = deleted
    out["held preemptors per delete"] = held_at_delete / max(deleted, 1)
    # Sorted: the writer threads may deliver one preemptor's deletions in any order.
    print("decisions digest:", hashlib.sha256("\n".join(sorted(decisions)).encode()).hexdigest()[:16])
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--lag", type=int, default=0, help="cycles the watch lags behind the writes")
    parser.add_argument(
        "--cycle-seconds", type=float, default=0.05, help="fake-clock seconds per cycle, with --lag"
    )
    parser.add_argument(
        "--pdbs", type=int, default=0, help="PodDisruptionBudgets over the low-priority pods (generous)"
    )
    parser.add_argument("--profile", help="write cProfile stats here")
    args = parser.parse_args()
    profiler = cProfile.Profile() if args.profile else None
    result = asyncio.run(_run(args.quick, profiler, args.lag, args.cycle_seconds, args.pdbs))
    for key, value in result.items():
        print(f"{key}: {value:.2f}" if isinstance(value, float) else f"{key}: {value}")
    if profiler is not None:
        profiler.dump_stats(args.profile)


if __name__ == "__main__":
    main()
