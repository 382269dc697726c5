"""`make demo`: py-scheduler schedules a mixed workload on a real local control plane.

It starts etcd + kube-apiserver (devcluster), creates 20 heterogeneous nodes (three zones, a tainted GPU
pool, a cordoned node), runs py-scheduler as a process the way a user would, creates ~100 pods (some
unschedulable on purpose), and prints the placements, per-node utilisation and the reasons for the pods
that fit nowhere, as read back from the API server (Events and the PodScheduled condition).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from kubernetes.client import CoreV1Api

from devcluster.cluster import ControlPlane
from devcluster.demo_workload import DEMO_APP_LABEL, EXPECTED_UNSCHEDULABLE, demo_pods
from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import REPO, SchedulerProcess, scheduler_config
from scheduler.framework.quantity import milli_value, value

DEMO_LABEL = "py-scheduler.dev/demo"
ZONE_LABEL = "topology.kubernetes.io/zone"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
POOL_LABEL = "py-scheduler.dev/pool"
ZONES = ("zone-a", "zone-b", "zone-c")
GPU_RESOURCE = "example.com/gpu"

# (pool, instance type, cpu, memory, count, taints, extra allocatable)
_POOLS: tuple[tuple[str, str, str, str, int, tuple[str, ...], Mapping[str, str]], ...] = (
    ("general", "general-small", "2", "8Gi", 6, (), {}),
    ("general", "general-medium", "4", "16Gi", 6, (), {}),
    ("highmem", "highmem-large", "8", "64Gi", 4, (), {}),
    ("gpu", "gpu-large", "16", "128Gi", 3, ("gpu=true:NoSchedule",), {GPU_RESOURCE: "4"}),
)


def demo_nodes() -> list[dict[str, Any]]:
    """20 nodes: three pools spread round-robin over three zones, a tainted GPU pool, one cordoned node."""
    nodes = []
    index = 0
    for pool, instance_type, cpu, memory, count, taints, extra in _POOLS:
        for i in range(count):
            zone = ZONES[index % len(ZONES)]
            index += 1
            nodes.append(
                make_node(
                    f"{instance_type}-{i}",
                    cpu=cpu,
                    memory=memory,
                    labels={
                        DEMO_LABEL: "true",
                        ZONE_LABEL: zone,
                        INSTANCE_TYPE_LABEL: instance_type,
                        POOL_LABEL: pool,
                    },
                    taints=taints,
                    extra_allocatable=extra,
                )
            )
    nodes.append(
        make_node(
            "general-cordoned-0",
            labels={
                DEMO_LABEL: "true",
                ZONE_LABEL: ZONES[0],
                INSTANCE_TYPE_LABEL: "medium",
                POOL_LABEL: "general",
            },
            unschedulable=True,
        )
    )
    return nodes


def create_demo_nodes(core_v1: Any) -> list[dict[str, Any]]:
    """Create the demo nodes; returns them as stored by the apiserver."""
    return create_nodes(core_v1, demo_nodes())


def list_demo_nodes(core_v1: Any) -> list[dict[str, Any]]:
    response = core_v1.list_node(label_selector=f"{DEMO_LABEL}=true", _preload_content=False)
    items: list[dict[str, Any]] = json.loads(response.data)["items"]
    return items


def _row(node: Mapping[str, Any]) -> list[str]:
    labels = node["metadata"].get("labels", {})
    allocatable = node["status"].get("allocatable", {})
    taints = [
        f"{t['key']}{'=' + t['value'] if t.get('value') else ''}:{t['effect']}"
        for t in node["spec"].get("taints", [])
    ]
    extended = [f"{k}={v}" for k, v in allocatable.items() if "/" in k]
    return [
        node["metadata"]["name"],
        labels.get(ZONE_LABEL, ""),
        labels.get(POOL_LABEL, ""),
        allocatable.get("cpu", ""),
        allocatable.get("memory", ""),
        allocatable.get("pods", ""),
        ",".join(extended) or "-",
        ",".join(taints) or "-",
    ]


def format_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    rows = [list(header), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def print_nodes(nodes: Iterable[Mapping[str, Any]], out: TextIO = sys.stdout) -> None:
    header = ("NAME", "ZONE", "POOL", "CPU", "MEMORY", "PODS", "EXTENDED", "TAINTS")
    rows = sorted((_row(n) for n in nodes), key=lambda r: (r[2], r[1], r[0]))
    print(format_table(header, rows), file=out)


DEMO_NAMESPACE = "demo"


def create_demo_pods(core_v1: Any) -> int:
    core_v1.create_namespace(
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEMO_NAMESPACE}}
    )
    pods = demo_pods()
    for pod in pods:
        core_v1.create_namespaced_pod(DEMO_NAMESPACE, body=pod, _preload_content=False)
    return len(pods)


def _list(core_v1: Any, what: str) -> list[dict[str, Any]]:
    if what == "pods":
        response = core_v1.list_namespaced_pod(DEMO_NAMESPACE, _preload_content=False)
    else:
        response = core_v1.list_namespaced_event(DEMO_NAMESPACE, _preload_content=False)
    items: list[dict[str, Any]] = json.loads(response.data)["items"]
    return items


def wait_for_outcomes(core_v1: Any, total: int, timeout: float = 90.0) -> list[dict[str, Any]]:
    """Until every pod is bound or has a PodScheduled=False condition."""
    deadline = time.monotonic() + timeout
    while True:
        pods = _list(core_v1, "pods")
        bound = sum(1 for p in pods if p["spec"].get("nodeName"))
        rejected = sum(1 for p in pods if not p["spec"].get("nodeName") and _condition(p) is not None)
        if (bound + rejected >= total and rejected >= EXPECTED_UNSCHEDULABLE) or time.monotonic() > deadline:
            return pods
        time.sleep(0.5)


def _condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return cond  # type: ignore[no-any-return]
    return None


def _requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    return milli_value(requests["cpu"]), value(requests["memory"])


def print_placements(
    pods: list[dict[str, Any]], nodes: list[dict[str, Any]], out: TextIO = sys.stdout
) -> None:
    by_node: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pod in pods:
        if pod["spec"].get("nodeName"):
            by_node[pod["spec"]["nodeName"]].append(pod)
    rows = []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        alloc = node["status"]["allocatable"]
        placed = by_node.get(name, [])
        cpu = sum(_requests(p)[0] for p in placed)
        mem = sum(_requests(p)[1] for p in placed)
        apps = Counter(p["metadata"]["labels"][DEMO_APP_LABEL] for p in placed)
        rows.append([
            name,
            node["metadata"]["labels"].get(ZONE_LABEL, ""),
            str(len(placed)),
            f"{100 * cpu // milli_value(alloc['cpu'])}%",
            f"{100 * mem // value(alloc['memory'])}%",
            " ".join(f"{app}x{n}" for app, n in sorted(apps.items())) or "-",
        ])  # fmt: skip
    print(format_table(("NODE", "ZONE", "PODS", "CPU", "MEMORY", "PLACED"), rows), file=out)


def print_unschedulable(
    pods: list[dict[str, Any]], events: list[dict[str, Any]], out: TextIO = sys.stdout
) -> None:
    reasons = {e["involvedObject"]["name"]: e["message"] for e in events if e["reason"] == "FailedScheduling"}
    rows = []
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        if pod["spec"].get("nodeName"):
            continue
        name = pod["metadata"]["name"]
        cond = _condition(pod) or {}
        rows.append(
            [name, str(cond.get("reason", "Pending")), reasons.get(name, str(cond.get("message", "")))]
        )
    print(format_table(("POD", "REASON", "FailedScheduling MESSAGE"), rows), file=out)


def explain_examples(
    scheduler: SchedulerProcess, pods: list[dict[str, Any]], out: TextIO = sys.stdout
) -> bool:
    """`py-scheduler explain` on one pending and one placed pod, as a user would run it (here straight
    at the scheduler's port; in a cluster it goes through the API server's service proxy)."""
    by_state = {bool(p["spec"].get("nodeName")): p for p in sorted(pods, key=lambda p: p["metadata"]["name"])}
    for placed in (False, True):
        pod = by_state.get(placed)
        if pod is None:
            continue
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        print(f"\n$ py-scheduler explain {key}", file=out)
        result = subprocess.run(
            [sys.executable, "-m", "scheduler", "explain", key, "--endpoint", scheduler.url("")],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            check=False,
        )
        print(result.stdout.rstrip(), file=out)
        if result.returncode != 0:
            print(f"explain failed ({result.returncode}): {result.stderr.strip()}", file=sys.stderr)
            return False
    return True


def main() -> int:
    with ControlPlane() as plane, tempfile.TemporaryDirectory(prefix="py-scheduler-demo-") as workdir:
        ready = sum(plane.startup_seconds.values())
        print(f"devcluster: Kubernetes {plane.version} at {plane.server} (ready in {ready:.1f}s)")
        with plane.api_client() as client:
            core_v1 = CoreV1Api(client)
            create_demo_nodes(core_v1)
            nodes = list_demo_nodes(core_v1)
            print(f"\n{len(nodes)} nodes:")
            print_nodes(nodes)

            scheduler = SchedulerProcess(plane.kubeconfig, Path(workdir), scheduler_config()).start()
            try:
                scheduler.wait_ready(60)
                print(f"\npy-scheduler is running (metrics: {scheduler.url('/metrics')})")
                started = time.monotonic()
                total = create_demo_pods(core_v1)
                pods = wait_for_outcomes(core_v1, total)
                elapsed = time.monotonic() - started
                bound = [p for p in pods if p["spec"].get("nodeName")]
                print(f"\n{len(bound)}/{total} pods bound in {elapsed:.1f}s; placements and utilisation:")
                print_placements(pods, nodes)
                print(f"\n{total - len(bound)} pods fit nowhere, as their Events say:")
                print_unschedulable(pods, _list(core_v1, "events"))
                _, text = scheduler.get("/metrics")
                attempts = [
                    line for line in text.splitlines() if line.startswith("scheduler_schedule_attempts_total")
                ]
                print("\n" + "\n".join(attempts))
                if not explain_examples(scheduler, pods):
                    return 1
            finally:
                code = scheduler.stop()
            if code != 0:
                print(f"py-scheduler exited with {code}; log:\n{scheduler.log_tail()}", file=sys.stderr)
                return 1
            if len(bound) != total - EXPECTED_UNSCHEDULABLE:
                print(
                    f"expected {total - EXPECTED_UNSCHEDULABLE} pods bound, got {len(bound)}", file=sys.stderr
                )
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
