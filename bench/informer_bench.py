"""Informer sync benchmark: py-scheduler's informers vs the client's ``kubernetes.informer.SharedInformer``.

Creates N pods (default 10,000, unscheduled) on a real control plane, then times, for each informer in
its own fresh child process, how long from start until a handler has been told of all N pods, and
that process's peak RSS. Both run in the same invocation against the same data; the runs alternate
and the median is reported. The last line is the speedup.

    python -m bench.informer_bench [--pods 10000] [--runs 3] [--kubeconfig PATH]

Without ``--kubeconfig`` it starts its own ``devcluster.cluster.ControlPlane``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
import uuid
from contextlib import ExitStack
from typing import Any

OURS = "ours"
CLIENT = "client"
TIMES = "\u00d7"  # the multiplication sign the issue asks for on the last line
LABELS = {OURS: "py-scheduler informers", CLIENT: "kubernetes.informer.SharedInformer"}


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# -- children: one measurement each, in a fresh interpreter ----------------------------------------


def child_ours(kubeconfig: str, namespace: str, expect: int) -> dict[str, float]:
    from informers import PODS, AsyncTransport, SharedInformer

    async def run() -> dict[str, float]:
        async with AsyncTransport.from_kubeconfig(kubeconfig) as transport:
            await transport.list("/api/v1/namespaces", {"limit": "1"})  # connection + TLS warm-up
            informer = SharedInformer(transport, PODS, namespace=namespace)
            seen = 0
            done = asyncio.Event()

            def on_add(obj: dict[str, Any], is_initial_list: bool) -> None:
                nonlocal seen
                seen += 1
                if seen == expect:
                    done.set()

            informer.add_event_handler(on_add=on_add)
            baseline = _rss_mib()
            start = time.perf_counter()
            informer.start()
            await done.wait()
            elapsed = time.perf_counter() - start
            peak = _peak_rss_mib()
            stop_start = time.perf_counter()
            await informer.stop()
            stop_s = time.perf_counter() - stop_start
            return {
                "seconds": elapsed,
                "peak_rss_mib": peak,
                "baseline_rss_mib": baseline,
                "stop_seconds": stop_s,
            }

    return asyncio.run(run())


def child_client(kubeconfig: str, namespace: str, expect: int) -> dict[str, float]:
    from kubernetes import client, config
    from kubernetes.informer import ADDED, SharedInformer

    api_client = config.new_client_from_config(config_file=kubeconfig)
    core_v1 = client.CoreV1Api(api_client)
    core_v1.list_namespace(limit=1)  # connection + TLS warm-up
    informer = SharedInformer(core_v1.list_namespaced_pod, namespace=namespace)
    seen = 0
    done = threading.Event()

    def on_add(obj: Any) -> None:
        nonlocal seen
        seen += 1
        if seen == expect:
            done.set()

    informer.add_event_handler(ADDED, on_add)
    baseline = _rss_mib()
    start = time.perf_counter()
    informer.start()
    done.wait()
    elapsed = time.perf_counter() - start
    # Not stopped: its stop() joins a watch thread that only notices the request at the next event.
    return {"seconds": elapsed, "peak_rss_mib": _peak_rss_mib(), "baseline_rss_mib": baseline}


# -- parent ----------------------------------------------------------------------------------------


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "informer-bench", "shard": str(hash(name) % 16)}},
        "spec": {
            "schedulerName": "informer-bench-nobody",
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
    }


async def _populate(kubeconfig: str, namespace: str, count: int, concurrency: int) -> float:
    from informers import AsyncTransport
    from informers.testing import create_all

    async with AsyncTransport.from_kubeconfig(kubeconfig) as transport:
        await transport.request(
            "POST",
            "/api/v1/namespaces",
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        )
        start = time.perf_counter()
        path = f"/api/v1/namespaces/{namespace}/pods"
        await create_all(
            transport, path, [_pod(f"bench-{i:05d}") for i in range(count)], concurrency=concurrency
        )
        elapsed = time.perf_counter() - start
        listed = await transport.list(path, {"limit": "1"})
        remaining = int(listed["metadata"].get("remainingItemCount", 0)) + len(listed["items"])
        if remaining != count:
            raise RuntimeError(f"expected {count} pods in {namespace}, found {remaining}")
        return elapsed


async def _cleanup(kubeconfig: str, namespace: str) -> None:
    from informers import AsyncTransport

    async with AsyncTransport.from_kubeconfig(kubeconfig) as transport:
        await transport.request(
            "DELETE", f"/api/v1/namespaces/{namespace}/pods", body={"gracePeriodSeconds": 0}
        )
        await transport.request("DELETE", f"/api/v1/namespaces/{namespace}")
        body = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace},
            "spec": {"finalizers": []},
        }
        await transport.request("PUT", f"/api/v1/namespaces/{namespace}/finalize", body=body)


def _run_child(which: str, kubeconfig: str, namespace: str, expect: int, timeout: float) -> dict[str, float]:
    cmd = [
        sys.executable,
        "-m",
        "bench.informer_bench",
        "--child",
        which,
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        namespace,
        "--pods",
        str(expect),
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5, help="measurements per informer (median reported)")
    parser.add_argument("--concurrency", type=int, default=48, help="parallel creates while populating")
    parser.add_argument("--kubeconfig", help="use this cluster instead of starting a local control plane")
    parser.add_argument("--namespace", help=argparse.SUPPRESS)
    parser.add_argument("--child", choices=[OURS, CLIENT], help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=600.0, help="per measurement, seconds")
    args = parser.parse_args(argv)

    if args.child:
        run = child_ours if args.child == OURS else child_client
        result = run(args.kubeconfig, args.namespace, args.pods)
        print(json.dumps(result), flush=True)
        os._exit(0)  # the client's informer leaves a non-daemon-safe watch thread behind

    with ExitStack() as stack:
        kubeconfig = args.kubeconfig
        if kubeconfig is None:
            from devcluster.cluster import ControlPlane

            print("starting a local control plane ...", flush=True)
            plane = stack.enter_context(ControlPlane())
            kubeconfig = str(plane.kubeconfig)
        namespace = f"informer-bench-{uuid.uuid4().hex[:8]}"
        created = asyncio.run(_populate(kubeconfig, namespace, args.pods, args.concurrency))
        print(f"created {args.pods} pods in {namespace} in {created:.1f}s", flush=True)
        try:
            results: dict[str, list[dict[str, float]]] = {OURS: [], CLIENT: []}
            for i in range(args.runs):
                order = (CLIENT, OURS) if i % 2 == 0 else (OURS, CLIENT)
                for which in order:
                    r = _run_child(which, kubeconfig, namespace, args.pods, args.timeout)
                    results[which].append(r)
                    print(
                        f"  run {i + 1} {LABELS[which]:<36} {r['seconds']:7.2f}s"
                        f"  peak RSS {r['peak_rss_mib']:6.0f} MiB",
                        flush=True,
                    )
        finally:
            if args.kubeconfig is not None:
                asyncio.run(_cleanup(kubeconfig, namespace))

    med = {w: statistics.median(r["seconds"] for r in rs) for w, rs in results.items()}
    peak = {w: max(r["peak_rss_mib"] for r in rs) for w, rs in results.items()}
    growth = {
        w: statistics.median(r["peak_rss_mib"] - r["baseline_rss_mib"] for r in rs)
        for w, rs in results.items()
    }
    print()
    print(
        f"informer sync of {args.pods} pods to a handler; median of {args.runs} runs each,"
        " one fresh process per run:"
    )
    for w in (OURS, CLIENT):
        print(
            f"  {LABELS[w]:<36} {med[w]:7.2f}s   peak RSS {peak[w]:6.0f} MiB "
            f"(+{growth[w]:.0f} MiB over the idle process)"
        )
    stops = [r["stop_seconds"] for r in results[OURS] if "stop_seconds" in r]
    if stops:
        print(f"  py-scheduler informers stop() mid-watch took {max(stops) * 1000:.1f} ms at most")
    print(f"informer sync speedup vs kubernetes.informer: {med[CLIENT] / med[OURS]:.1f}{TIMES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
