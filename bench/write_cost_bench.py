"""The API server's CPU per pod for the scheduler's two writes (Binding + Scheduled Event), by wire format.

One fresh control plane; per round, ``--pods`` pending pods (a schedulerName nobody serves) are
created before the clock, then each is bound and given its Scheduled Event through py-scheduler's
own client (``bench.trivial_binder.HonestWriter``: RestClient, SchedulerApi, EventRecorder inline on
the binding threads), with the request bodies as JSON or as protobuf. Rounds alternate the formats;
the figure is kube-apiserver's CPU (utime+stime) over the writes, per pod, and the last line the
median over the pairs of protobuf's round over the JSON round before it. The API server does the same
storage work either way, so the difference is decoding (and what decoding allocates).

    python -m bench.write_cost_bench --pods 2000 --rounds 4
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from concurrent.futures import wait

import orjson

from bench.apiclient import BenchClient
from bench.loadgen import RunRecord, create_pods
from bench.procstat import sample
from bench.trivial_binder import HonestWriter
from devcluster.cluster import ControlPlane
from devcluster.nodes import create_nodes, make_node

NAMESPACE = "write-cost"
FORMATS = ("json", "protobuf")


def _pod(name: str) -> tuple[str, bytes]:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "schedulerName": "nobody",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    return name, orjson.dumps(body)


async def _pending_pods(cp: ControlPlane, prefix: str, count: int) -> list[dict[str, object]]:
    async with BenchClient(cp.server, cp.token, cp.ca_file, connections=40) as client:
        await client.create_namespace(NAMESPACE)
        await create_pods(client, NAMESPACE, [_pod(f"{prefix}-{i}") for i in range(count)], RunRecord())
        listed = await client.list(
            f"/api/v1/namespaces/{NAMESPACE}/pods", {"fieldSelector": "spec.nodeName="}
        )
        return [p for p in listed["items"] if str(p["metadata"]["name"]).startswith(f"{prefix}-")]


def _round(cp: ControlPlane, writer: HonestWriter, pods: list[dict[str, object]]) -> float:
    apiserver = cp.pids()["kube-apiserver"]
    before = sample(apiserver).cpu_seconds
    futures = [writer.threads.submit(writer.bind_and_record, pod, "node-0") for pod in pods]
    wait(futures)
    for future in futures:
        future.result()
    time.sleep(0.5)  # the last writes' watch fan-out
    return sample(apiserver).cpu_seconds - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=2000, help="pods per round")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per format, alternated")
    args = parser.parse_args(argv)
    costs: dict[str, list[float]] = {f: [] for f in FORMATS}
    with ControlPlane(priority_and_fairness=False) as cp:
        create_nodes(cp.api_client(), [make_node("node-0", cpu="1000", memory="4000Gi", pods=100000)])
        writers = {
            f: HonestWriter(str(cp.kubeconfig), 5000, 5000, protobuf_writes=f == "protobuf") for f in FORMATS
        }
        try:
            for index in range(args.rounds * len(FORMATS)):
                fmt = FORMATS[index % len(FORMATS)]
                pods = asyncio.run(_pending_pods(cp, f"r{index}", args.pods))
                cpu = _round(cp, writers[fmt], pods)
                costs[fmt].append(cpu / len(pods) * 1e6)
                print(f"round {index} {fmt}: {len(pods)} pods, apiserver {cpu:.2f} CPU s, "
                      f"{costs[fmt][-1]:.0f} us per pod", flush=True)  # fmt: skip
        finally:
            for writer in writers.values():
                writer.close()
    for fmt, values in costs.items():
        print(f"{fmt}: median {statistics.median(values):.0f} us per pod (Binding + Event) over "
              f"{len(values)} rounds: {', '.join(f'{v:.0f}' for v in values)}")  # fmt: skip
    # Each protobuf round against the JSON round just before it: drift in the machine's load hits both.
    ratios = [pb / js for js, pb in zip(costs["json"], costs["protobuf"], strict=True)]
    listed = ", ".join(f"{r:.2f}" for r in ratios)
    print(f"protobuf/json per pair: {listed}; median {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
