"""What an extender costs per scheduling attempt: the algorithm alone (synchronous path) against the
algorithm plus one filter+prioritize extender (the example extender as a separate process on loopback),
full Node objects and nodeCacheCapable. Prints a ratio table; asserts nothing.

    python -m bench.extender_bench [--nodes 100,1000] [--pods 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from scheduler.cache import SchedulerCache
from scheduler.config.types import ExtenderConfig
from scheduler.cycle.algorithm import SchedulingAlgorithm
from scheduler.extender.client import HTTPExtender
from scheduler.extender.runner import Extenders
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.types import PodInfo
from tests.unit.fakes import PROFILE, build_frameworks, make_node, make_pod

REPO = Path(__file__).resolve().parents[1]


def _start_extender() -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "examples.extender", "--port", "0", "--label", "bench=ok"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())["listening"]


async def _run(node_count: int, pods: int, url: str) -> dict[str, float]:
    cache = SchedulerCache()
    for i in range(node_count):
        node = make_node(f"n{i:05d}")
        node["metadata"]["labels"]["bench"] = "ok" if i % 2 == 0 else "no"
        node["metadata"]["annotations"] = {"example.com/extender-score": str(i % 11)}
        cache.add_node(node)
    snapshot = cache.snapshot()
    fwk = build_frameworks(lambda: snapshot, None, time.time)[PROFILE]
    algorithm = SchedulingAlgorithm()
    variants: dict[str, Extenders | None] = {
        "no extender": None,
        "filter+prioritize, full nodes": Extenders(
            [HTTPExtender(ExtenderConfig(url, filter_verb="filter", prioritize_verb="prioritize", weight=1))]
        ),
    }
    out: dict[str, float] = {}
    for name, extenders in variants.items():
        start = time.perf_counter()
        for i in range(pods):
            pod = PodInfo(make_pod(f"{name[:2]}{i}", cpu="10m"))
            cache.update_snapshot(snapshot)
            if extenders is None:
                algorithm.schedule_pod(fwk, CycleState(), pod, snapshot)
            else:
                await algorithm.schedule_pod_with_extenders(fwk, CycleState(), pod, snapshot, extenders)
        out[name] = (time.perf_counter() - start) / pods * 1000
        if extenders is not None:
            await extenders.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", default="100,1000")
    parser.add_argument("--pods", type=int, default=200)
    args = parser.parse_args()
    proc, url = _start_extender()
    try:
        print("| nodes | variant | ms per attempt | ratio |")
        print("|---|---|---|---|")
        for count in (int(n) for n in args.nodes.split(",")):
            result = asyncio.run(_run(count, args.pods, url))
            base = result["no extender"]
            for name, ms in result.items():
                print(f"| {count} | {name} | {ms:.2f} | {ms / base:.1f}x |")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
