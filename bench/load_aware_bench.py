"""Load-aware placement (TargetLoadPacking) on many nodes with uneven measured load, py-scheduler against
the scheduler-plugins scheduler, both reading the same real Prometheus (devcluster/build_prometheus.sh).

Every node has a constant measured CPU utilisation between 5 % and 85 % (a fixed pseudo-random spread),
served by this bench as load-watcher's ``instance:node_cpu:ratio`` series and scraped every second. Each
contestant gets a fresh control plane with the nodes and a profile where only TargetLoadPacking scores
(upstream's defaults: target 40 %); the clock starts when the pods (500m limit each) are created, all at
once. Reported: pods bound per second, create->bound latency p50/p99, the scheduler process's CPU
seconds, and how the pods landed: the nodes whose measured load plus their new pods' limits ends above
the 40 % target (packing quality; both schedulers count only the pods their watch has shown bound, so a
burst can overshoot).

    python -m bench.load_aware_bench [--quick] [--only py|peer]
"""

from __future__ import annotations

import argparse
import http.server
import logging
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
from kubernetes import client as k8s

from bench import procstat, schedulers
from bench.analysis import percentile
from devcluster.cluster import ControlPlane
from devcluster.nodes import create_nodes, make_node
from devcluster.peers import BUILD_SCRIPT, scheduler_plugins
from devcluster.prometheus import PrometheusServer, ensure_prometheus

log = logging.getLogger("bench.load_aware")
PEER = "scheduler-plugins"
PEER_SCHEDULER_NAME = "scheduler-plugins-scheduler"
POD_CPU_M = 500
NODE_CPU_M = 4000
TARGET_PERCENT = 40
POLL = 0.1
CPU_SERIES = "instance:node_cpu:ratio"


def node_loads(nodes: int) -> dict[str, float]:
    """The measured CPU ratio of each node: uneven, the same on every run."""
    rng = random.Random(27)
    return {f"node-{i}": round(rng.uniform(0.05, 0.85), 3) for i in range(nodes)}


def exporter_handler(loads: dict[str, float]) -> type[http.server.BaseHTTPRequestHandler]:
    body = "".join(f'{CPU_SERIES}{{instance="{n}"}} {v}\n' for n, v in loads.items()).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def profile(address: str) -> dict[str, Any]:
    return {
        "plugins": {
            "score": {"enabled": [{"name": "TargetLoadPacking", "weight": 1}], "disabled": [{"name": "*"}]}
        },
        "pluginConfig": [
            {
                "name": "TargetLoadPacking",
                "args": {"metricProvider": {"type": "Prometheus", "address": address}},
            }
        ],
    }


class Peer:
    label = PEER
    scheduler_name = PEER_SCHEDULER_NAME

    def __init__(self, cp: ControlPlane, prof: dict[str, Any]) -> None:
        self._cp = cp
        self._config = cp.write_kube_scheduler_config(
            qps=schedulers.CLIENT_QPS,
            burst=schedulers.CLIENT_BURST,
            profiles=[{"schedulerName": PEER_SCHEDULER_NAME, **prof}],
        )
        self._handle: Any = None

    def start(self) -> None:
        self._handle = self._cp.start_kube_scheduler(
            config_path=self._config, binary=scheduler_plugins().scheduler
        )

    @property
    def pid(self) -> int:
        return int(self._handle.pid)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.stop(grace=10.0)


def _pod(name: str, scheduler_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"limits": {"cpu": f"{POD_CPU_M}m"}}}
            ],
        },
    }


def _run(
    kind: str, loads: dict[str, float], pods: int, prometheus_url: str, timeout: float
) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix=f"bench-load-aware-{kind}-") as tmp,
        ControlPlane(
            priority_and_fairness=False, max_requests_inflight=4000, max_mutating_requests_inflight=2000
        ) as cp,
    ):
        api = cp.api_client()
        create_nodes(api, [make_node(name, cpu="4", memory="16Gi") for name in loads])
        prof = profile(prometheus_url)
        contestant: Any = (
            Peer(cp, prof) if kind == PEER else schedulers.PyScheduler(cp, Path(tmp), profile=prof)
        )
        contestant.start()
        try:
            cpu_before = procstat.sample(contestant.pid).cpu_seconds
            result = _measure(api, contestant.scheduler_name, loads, pods, timeout)
            result["cpu_s"] = procstat.sample(contestant.pid).cpu_seconds - cpu_before
            return result
        finally:
            contestant.stop()


def _measure(
    api: Any, scheduler_name: str, loads: dict[str, float], pods: int, timeout: float
) -> dict[str, Any]:
    core: Any = k8s.CoreV1Api(api)
    created: dict[str, float] = {}
    bound: dict[str, tuple[float, str]] = {}
    lock = threading.Lock()

    def create(name: str) -> None:
        core.create_namespaced_pod("default", body=_pod(name, scheduler_name), _preload_content=False)
        with lock:
            created[name] = time.monotonic()

    names = [f"p{i}" for i in range(pods)]
    start = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, names))
    deadline = start + timeout
    while len(bound) < pods and time.monotonic() < deadline:
        now = time.monotonic()
        resp = core.list_namespaced_pod("default", _preload_content=False)
        for p in orjson.loads(resp.data)["items"]:
            node = p["spec"].get("nodeName")
            if node:
                bound.setdefault(p["metadata"]["name"], (now, node))
        time.sleep(POLL)
    end = max((at for at, _ in bound.values()), default=time.monotonic())
    latencies = [bound[n][0] - created[n] for n in names if n in bound]
    per_node = Counter(node for _, node in bound.values())
    over_target = sum(
        1
        for node, count in per_node.items()
        if loads[node] * 100 + 100 * count * POD_CPU_M / NODE_CPU_M > TARGET_PERCENT
    )
    return {
        "bound": len(bound),
        "total": pods,
        "duration": end - start,
        "throughput": len(bound) / (end - start) if end > start else float("nan"),
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p99": percentile(latencies, 99) if latencies else float("nan"),
        "nodes_used": len(per_node),
        "over_target": over_target,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 nodes, 100 pods")
    parser.add_argument("--only", choices=("py", "peer"))
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    nodes, pods = (50, 100) if args.quick else (300, 600)
    kinds = [schedulers.PY, PEER]
    if args.only:
        kinds = [schedulers.PY if args.only == "py" else PEER]
    if PEER in kinds and not os.access(scheduler_plugins().scheduler, os.X_OK):
        log.info("building the scheduler-plugins scheduler (once; cached)")
        subprocess.run(["bash", str(BUILD_SCRIPT)], check=True)
    loads = node_loads(nodes)
    mean = 100 * statistics.mean(loads.values())
    print(
        f"workload: {nodes} nodes x 4 CPU, measured CPU 5-85 % (mean {mean:.0f} %), {pods} pods x "
        f"{POD_CPU_M}m limit created at once; TargetLoadPacking alone, target {TARGET_PERCENT} %"
    )
    results: dict[str, dict[str, Any]] = {}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), exporter_handler(loads))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="bench-load-aware-prometheus-") as tmp:
        prometheus = PrometheusServer(
            ensure_prometheus(), Path(tmp), [f"127.0.0.1:{server.server_address[1]}"]
        )
        prometheus.start()
        try:
            prometheus.wait_for_series(CPU_SERIES, nodes)
            for kind in kinds:
                log.info("== load-aware / %s", kind)
                results[kind] = _run(kind, loads, pods, prometheus.url, args.timeout)
        finally:
            prometheus.stop()
            server.shutdown()
    print(
        "| scheduler | pods bound | pods bound / s | p50 / p99 s | nodes used | nodes over target "
        "| scheduler CPU s |"
    )
    print("|---|---|---|---|---|---|---|")
    for kind, r in results.items():
        cells = [
            kind, f"{r['bound']}/{r['total']}", f"{r['throughput']:.1f} ({r['duration']:.1f} s)",
            f"{r['p50']:.2f} / {r['p99']:.2f}", str(r["nodes_used"]), str(r["over_target"]),
            f"{r['cpu_s']:.1f}",
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    if len(results) == 2:
        py, peer = results[schedulers.PY], results[PEER]

        def ratio(key: str) -> float:
            return float(py[key] / peer[key]) if peer[key] else float("nan")

        print(f"throughput ratio py-scheduler/scheduler-plugins (load-aware): {ratio('throughput'):.2f}")
        print(f"p99 latency ratio py-scheduler/scheduler-plugins (load-aware): {ratio('p99'):.2f}")
        print(f"scheduler CPU ratio py-scheduler/scheduler-plugins (load-aware): {ratio('cpu_s'):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
