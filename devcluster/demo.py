"""`make demo`: a local control plane with a small heterogeneous cluster of fake nodes.

Structured as functions so later steps (running py-scheduler on demo pods) can reuse them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from kubernetes.client import CoreV1Api

from devcluster.cluster import ControlPlane
from devcluster.nodes import create_nodes, make_node

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


def main() -> int:
    with ControlPlane() as plane:
        ready = sum(plane.startup_seconds.values())
        print(f"devcluster: Kubernetes {plane.version} at {plane.server} (ready in {ready:.1f}s)")
        with plane.api_client() as client:
            core_v1 = CoreV1Api(client)
            create_demo_nodes(core_v1)
            nodes = list_demo_nodes(core_v1)
        print(f"{len(nodes)} nodes:")
        print_nodes(nodes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
