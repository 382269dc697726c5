"""Gang scheduling, py-scheduler against the scheduler-plugins scheduler, both with Coscheduling.

Each contestant gets a fresh control plane with the PodGroup CRD (deploy/components/podgroup-crd), the
nodes, then the PodGroups and their pods of workloads.gang(); the clock runs from the first pod created
to the last member of a completable gang bound. Prints the throughput of completable-gang pods, the
gang-complete latency (a gang's first pod created -> its last member bound) and the CPU that pods of
the incomplete gangs held bound (sampled; all-or-nothing means 0). Pods waiting at Permit hold
resources only inside a scheduler and are not visible to this measurement.

The peer is sigs.k8s.io/scheduler-plugins cmd/scheduler, built by devcluster/build_scheduler_plugins.sh
(bench-only, cached outside the repo). Both run the profile of scheduler-plugins'
manifests/coscheduling/scheduler-config.yaml (Coscheduling multiPoint + queueSort,
permitWaitingTimeSeconds 10) and the bench's client qps/burst.

    python -m bench.gang_bench [--quick] [--only py|peer]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
from kubernetes import client as k8s

from bench import prereqs, schedulers, workloads
from bench.analysis import percentile
from devcluster.cluster import ControlPlane
from devcluster.nodes import create_nodes

log = logging.getLogger("bench.gang")
REPO = Path(__file__).resolve().parents[1]
CRD = workloads.PODGROUP_CRD
NAMESPACE = "bench"
PEER = schedulers.SCHED_PLUGINS
PERMIT_WAITING_SECONDS = workloads.PERMIT_WAITING_SECONDS
POLL = 0.1
COSCHEDULING_PROFILE = workloads.COSCHEDULING_PROFILE


def _run(kind: str, gw: workloads.GangWorkload, timeout: float) -> dict[str, Any]:
    workload = gw.workload
    with (
        tempfile.TemporaryDirectory(prefix=f"bench-gang-{kind}-") as tmp,
        ControlPlane(
            priority_and_fairness=False, max_requests_inflight=4000, max_mutating_requests_inflight=2000
        ) as cp,
    ):
        api = cp.api_client()
        prereqs.install_crd(api, CRD)
        core: Any = k8s.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        create_nodes(api, workload.nodes, concurrency=32)
        contestant: Any
        if kind == PEER:
            contestant = schedulers.SchedulerPluginsScheduler(cp, COSCHEDULING_PROFILE)
        else:
            contestant = schedulers.PyScheduler(cp, Path(tmp), profile=COSCHEDULING_PROFILE)
        contestant.start()
        try:
            return _measure(api, core, contestant.scheduler_name, gw, timeout)
        finally:
            contestant.stop()


def _measure(
    api: Any, core: Any, scheduler_name: str, gw: workloads.GangWorkload, timeout: float
) -> dict[str, Any]:
    workload = gw.workload
    custom: Any = k8s.CustomObjectsApi(api)
    for name, min_member in gw.groups.items():
        body = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"minMember": min_member},
        }
        custom.create_namespaced_custom_object(
            "scheduling.x-k8s.io", "v1alpha1", NAMESPACE, "podgroups", body
        )
    bodies = workload.bodies(scheduler_name)
    created: dict[str, float] = {}
    bound: dict[str, float] = {}
    cpu_of = {p["metadata"]["name"]: _millicores(p) for p in workload.pods}
    held: list[int] = []
    want = workload.expect_bound()

    def create(item: tuple[str, bytes]) -> None:
        name, body = item
        core.create_namespaced_pod(NAMESPACE, body=orjson.loads(body), _preload_content=False)
        created[name] = time.monotonic()

    start = time.monotonic()
    creator = threading.Thread(target=lambda: list(ThreadPoolExecutor(16).map(create, bodies)))
    creator.start()
    deadline = start + timeout
    settle_until: float | None = None
    while time.monotonic() < deadline:
        resp = core.list_namespaced_pod(NAMESPACE, field_selector="spec.nodeName!=", _preload_content=False)
        now = time.monotonic()
        names = [p["metadata"]["name"] for p in orjson.loads(resp.data)["items"]]
        for name in names:
            bound.setdefault(name, now)
        held.append(sum(cpu_of[n] for n in names if gw.group_of(n) in gw.incomplete))
        if settle_until is None and want <= bound.keys():
            settle_until = now + 2 * PERMIT_WAITING_SECONDS  # incomplete gangs get two chances more
        if settle_until is not None and now >= settle_until:
            break
        time.sleep(POLL)
    creator.join()
    done = [bound[n] for n in want if n in bound]
    complete_pods = len(done)
    duration = (max(done) - start) if done else float("nan")
    gang_latency = []
    for group in gw.groups:
        if group in gw.incomplete:
            continue
        members = [n for n in want if gw.group_of(n) == group]
        if all(n in bound for n in members):
            gang_latency.append(max(bound[n] for n in members) - min(created[n] for n in members))
    return {
        "pods_bound": complete_pods,
        "pods_expected": len(want),
        "gangs_complete": len(gang_latency),
        "throughput": complete_pods / duration if done else 0.0,
        "gang_p50": statistics.median(gang_latency) if gang_latency else float("nan"),
        "gang_p99": percentile(gang_latency, 99) if gang_latency else float("nan"),
        "held_max_m": max(held, default=0),
        "held_end_m": held[-1] if held else 0,
    }


def _millicores(pod: dict[str, Any]) -> int:
    cpu = pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    return int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 nodes, 16 gangs of 8, 3 incomplete")
    parser.add_argument("--only", choices=("py", "peer"))
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    gw = workloads.gang(20, 16, 8, 3) if args.quick else workloads.gang()
    kinds = [schedulers.PY, PEER]
    if args.only:
        kinds = [schedulers.PY if args.only == "py" else PEER]
    if PEER in kinds:
        schedulers.ensure_scheduler_plugins()
    print(f"workload: {gw.workload.description}")
    results = {}
    for kind in kinds:
        log.info("== gang / %s", kind)
        results[kind] = _run(kind, gw, args.timeout)
    print("| scheduler | gang pods bound | gangs complete | pods/s | gang p50 s | gang p99 s "
          "| incomplete gangs' bound CPU max / end (m) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for kind, r in results.items():
        cells = [
            kind, f"{r['pods_bound']}/{r['pods_expected']}", str(r["gangs_complete"]),
            f"{r['throughput']:.1f}",
            f"{r['gang_p50']:.2f}", f"{r['gang_p99']:.2f}", f"{r['held_max_m']} / {r['held_end_m']}",
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    if len(results) == 2:
        py, peer = results[schedulers.PY], results[PEER]
        ratio = py["throughput"] / peer["throughput"] if peer["throughput"] else float("nan")
        print(f"throughput ratio py-scheduler/scheduler-plugins (gang): {ratio:.2f}")
        p99 = py["gang_p99"] / peer["gang_p99"]
        print(f"gang-complete p99 latency ratio py-scheduler/scheduler-plugins (gang): {p99:.2f}")
        held = [f"{r['held_max_m']}m/{r['held_end_m']}m" for r in (py, peer)]
        print(
            "resources held by incomplete gangs (bound CPU, max/end): "
            f"py-scheduler {held[0]}, scheduler-plugins {held[1]}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
