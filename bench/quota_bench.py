"""Elastic quotas under churn, py-scheduler against the scheduler-plugins scheduler, both with
CapacityScheduling (scheduler-plugins' profile: multiPoint CapacityScheduling, it alone at PostFilter).

Each contestant gets a fresh control plane with the ElasticQuota CRD, the nodes, and ``namespaces``
namespaces whose ElasticQuotas split the cluster's CPU evenly as ``min`` with ``max`` twice that. The
clock starts at the first pod created:

1. borrow: the first half of the namespaces ("borrowers") fill the cluster up to their max, borrowing
   the other half's idle min;
2. reclaim under churn: the other half ("owners") each create pods worth their min, which bind only by
   preempting borrowers (cross-quota reclaim), while borrowers keep deleting ``churn`` of their bound
   pods per round and creating as many new ones (which bind only where capacity is free within quota).

The run ends when every borrow-phase and owner pod is bound (or deleted as a victim). Reported:
throughput of pods bound (all distinct pods, over the run), create->bound latency p50/p99 of the borrow
pods and of the owner pods (these include the victims' eviction), the victims, and the scheduler
process's CPU seconds (utime+stime from /proc). The peer runs without scheduler-plugins' controller:
neither scheduler reads status.used.

    python -m bench.quota_bench [--quick] [--only py|peer]
"""

from __future__ import annotations

import argparse
import logging
import shutil
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

from bench import prereqs, procstat, schedulers
from bench.analysis import percentile
from devcluster.cluster import ControlPlane
from devcluster.nodes import create_nodes, make_node

log = logging.getLogger("bench.quota")
REPO = Path(__file__).resolve().parents[1]
CRD = REPO / "deploy/components/elasticquota-crd/crd.yaml"
PEER = schedulers.SCHED_PLUGINS
POD_CPU_M = 500
POLL = 0.1
CAPACITY_PROFILE: dict[str, Any] = {
    "plugins": {
        "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
        "postFilter": {"enabled": [{"name": "CapacityScheduling"}], "disabled": [{"name": "*"}]},
    },
}


class Shape:
    def __init__(self, nodes: int, namespaces: int, churn: int, rounds: int) -> None:
        self.nodes = nodes
        self.namespaces = namespaces
        self.churn = churn
        self.rounds = rounds
        cpu_m = nodes * 4000
        self.min_m = cpu_m // namespaces
        self.borrowers = [f"quota-{i}" for i in range(namespaces // 2)]
        self.owners = [f"quota-{i}" for i in range(namespaces // 2, namespaces)]
        # Borrowers fill the cluster (each to its max, 2 x min, when namespaces is even).
        self.borrow_pods = cpu_m // POD_CPU_M // len(self.borrowers)
        self.owner_pods = self.min_m // POD_CPU_M

    @property
    def description(self) -> str:
        return (
            f"{self.nodes} nodes x 4 CPU; {self.namespaces} ElasticQuotas min {self.min_m}m max "
            f"{2 * self.min_m}m; {len(self.borrowers)} borrowers x {self.borrow_pods} pods x {POD_CPU_M}m, "
            f"then {len(self.owners)} owners x {self.owner_pods} pods reclaiming, with {self.rounds} "
            f"churn rounds of {self.churn} pods per borrower"
        )


def _pod(name: str, scheduler_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": f"{POD_CPU_M}m"}}}
            ],
        },
    }


def _install(api: Any, shape: Shape) -> None:
    prereqs.install_crd(api, CRD)
    custom: Any = k8s.CustomObjectsApi(api)
    core: Any = k8s.CoreV1Api(api)
    for ns in shape.borrowers + shape.owners:
        core.create_namespace({"metadata": {"name": ns}})
        body = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "ElasticQuota",
            "metadata": {"name": "quota", "namespace": ns},
            "spec": {"min": {"cpu": f"{shape.min_m}m"}, "max": {"cpu": f"{2 * shape.min_m}m"}},
        }
        custom.create_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", ns, "elasticquotas", body)
    create_nodes(api, [make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(shape.nodes)])


def _run(kind: str, shape: Shape, timeout: float, keep_logs: Path | None = None) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix=f"bench-quota-{kind}-") as tmp,
        ControlPlane(
            priority_and_fairness=False, max_requests_inflight=4000, max_mutating_requests_inflight=2000
        ) as cp,
    ):
        api = cp.api_client()
        _install(api, shape)
        contestant: Any
        if kind == PEER:
            contestant = schedulers.SchedulerPluginsScheduler(cp, CAPACITY_PROFILE)
            if keep_logs is not None:
                # --v=2 logs each preemption's victims ("Preemptor Pod preempted victim Pod").
                contestant.extra_args = ["--v=2"]
        else:
            contestant = schedulers.PyScheduler(cp, Path(tmp), profile=CAPACITY_PROFILE)
        contestant.start()
        try:
            cpu_before = procstat.sample(contestant.pid).cpu_seconds
            result = _measure(api, contestant.scheduler_name, shape, timeout)
            result["cpu_s"] = procstat.sample(contestant.pid).cpu_seconds - cpu_before
            return result
        finally:
            contestant.stop()
            if keep_logs is not None:
                _keep_log(kind, Path(contestant.log_path), keep_logs)


def _keep_log(kind: str, source: Path, into: Path) -> None:
    """The scheduler's log beside the run's victims (``--keep-logs``): which preemptor chose whom."""
    into.mkdir(parents=True, exist_ok=True)
    if source.exists():
        shutil.copyfile(source, into / f"{kind}-scheduler.log")


def _measure(api: Any, scheduler_name: str, shape: Shape, timeout: float) -> dict[str, Any]:
    core: Any = k8s.CoreV1Api(api)
    created: dict[tuple[str, str], float] = {}
    bound: dict[tuple[str, str], float] = {}
    gone: set[tuple[str, str]] = set()
    deleted_by_us: set[tuple[str, str]] = set()
    lock = threading.Lock()
    pool = ThreadPoolExecutor(16)
    node_of: dict[tuple[str, str], str] = {}

    def create(ns: str, name: str) -> None:
        core.create_namespaced_pod(ns, body=_pod(name, scheduler_name), _preload_content=False)
        with lock:
            created[(ns, name)] = time.monotonic()

    def observe() -> None:
        with lock:
            known = set(created)  # created before the lists below: absent from them means deleted
        now = time.monotonic()
        seen: set[tuple[str, str]] = set()
        on_nodes: list[tuple[str, str]] = []
        for ns in shape.borrowers + shape.owners:
            resp = core.list_namespaced_pod(ns, _preload_content=False)
            for p in orjson.loads(resp.data)["items"]:
                key = (ns, p["metadata"]["name"])
                seen.add(key)
                if p["spec"].get("nodeName"):
                    on_nodes.append(key)
                    node_of[key] = p["spec"]["nodeName"]
        with lock:
            for key in on_nodes:
                bound.setdefault(key, now)
            gone.update(known - seen)

    borrow = [(ns, f"b{i}") for ns in shape.borrowers for i in range(shape.borrow_pods)]
    owners = [(ns, f"o{i}") for ns in shape.owners for i in range(shape.owner_pods)]
    start = time.monotonic()
    deadline = start + timeout
    list(pool.map(lambda k: create(*k), borrow))
    while not all(k in bound for k in borrow) and time.monotonic() < deadline:
        observe()
        time.sleep(POLL)
    borrowed_at = time.monotonic()

    def reclaim_and_churn() -> None:
        list(pool.map(lambda k: create(*k), owners))
        for r in range(shape.rounds):
            for ns in shape.borrowers:
                with lock:
                    victims = [k for k in bound if k[0] == ns and k not in gone and k not in deleted_by_us]
                for key in victims[: shape.churn]:
                    deleted_by_us.add(key)
                    try:
                        core.delete_namespaced_pod(key[1], ns, grace_period_seconds=0, _preload_content=False)
                    except k8s.ApiException as err:
                        if err.status != 404:
                            raise
                for i in range(shape.churn):
                    create(ns, f"c{r}-{i}")
            time.sleep(0.5)

    driver = threading.Thread(target=reclaim_and_churn)
    driver.start()
    while time.monotonic() < deadline:
        observe()
        if not driver.is_alive() and all(k in bound for k in owners):
            break
        time.sleep(POLL)
    driver.join()
    end = time.monotonic()
    pool.shutdown()
    victims = {k for k in gone if k not in deleted_by_us}
    borrow_lat = [bound[k] - created[k] for k in borrow if k in bound]
    owner_lat = [bound[k] - created[k] for k in owners if k in bound]
    return {
        "borrow_bound": sum(k in bound for k in borrow),
        "borrow_total": len(borrow),
        "borrow_s": borrowed_at - start,
        "owner_bound": sum(k in bound for k in owners),
        "owner_total": len(owners),
        "bound_total": len(bound),
        "throughput": len(bound) / (end - start),
        "borrow_p50": statistics.median(borrow_lat) if borrow_lat else float("nan"),
        "borrow_p99": percentile(borrow_lat, 99) if borrow_lat else float("nan"),
        "owner_p50": statistics.median(owner_lat) if owner_lat else float("nan"),
        "owner_p99": percentile(owner_lat, 99) if owner_lat else float("nan"),
        "victim_pods": sorted(f"{ns}/{name}@{node_of.get((ns, name), '')}" for ns, name in victims),
        "victims": len(victims),
        "duration": end - start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 nodes, 4 namespaces, 3 churn rounds")
    parser.add_argument("--only", choices=("py", "peer"))
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument(
        "--keep-logs",
        type=Path,
        metavar="DIR",
        help="keep each scheduler's log and the run's victims (ns/pod@node, as JSON) in DIR",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    shape = Shape(8, 4, 2, 3) if args.quick else Shape(24, 6, 4, 5)
    kinds = [schedulers.PY, PEER]
    if args.only:
        kinds = [schedulers.PY if args.only == "py" else PEER]
    if PEER in kinds:
        schedulers.ensure_scheduler_plugins()
    print(f"workload: {shape.description}")
    results = {}
    for kind in kinds:
        log.info("== quota / %s", kind)
        results[kind] = _run(kind, shape, args.timeout, args.keep_logs)
        if args.keep_logs is not None:
            (args.keep_logs / f"{kind}-victims.json").write_bytes(
                orjson.dumps(results[kind]["victim_pods"], option=orjson.OPT_INDENT_2)
            )
    print("| scheduler | borrow pods bound | owner pods bound | pods bound / s | borrow p50 / p99 s "
          "| owner (reclaim) p50 / p99 s | victims | scheduler CPU s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for kind, r in results.items():
        cells = [
            kind, f"{r['borrow_bound']}/{r['borrow_total']}", f"{r['owner_bound']}/{r['owner_total']}",
            f"{r['throughput']:.1f} ({r['bound_total']} in {r['duration']:.1f} s)",
            f"{r['borrow_p50']:.2f} / {r['borrow_p99']:.2f}", f"{r['owner_p50']:.2f} / {r['owner_p99']:.2f}",
            str(r["victims"]), f"{r['cpu_s']:.1f}",
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    if len(results) == 2:
        py, peer = results[schedulers.PY], results[PEER]

        def ratio(key: str) -> float:
            return py[key] / peer[key] if peer[key] else float("nan")

        print(f"throughput ratio py-scheduler/scheduler-plugins (quota): {ratio('throughput'):.2f}")
        print(f"borrow p99 latency ratio py-scheduler/scheduler-plugins (quota): {ratio('borrow_p99'):.2f}")
        print(f"reclaim p99 latency ratio py-scheduler/scheduler-plugins (quota): {ratio('owner_p99'):.2f}")
        print(f"scheduler CPU ratio py-scheduler/scheduler-plugins (quota): {ratio('cpu_s'):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
