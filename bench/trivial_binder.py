"""The ceiling: binds every pending pod of its schedulerName to the next node, round-robin, no filtering.

It does the least a scheduler must do per pod (one watch event in, one Binding POST out), so its
throughput is the apiserver's binding ceiling on this machine. Run as its own process, so its CPU
is measured like a scheduler's::

    python -m bench.trivial_binder --kubeconfig KC --scheduler-name bench-binder --ready-file F
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import signal
import sys
from pathlib import Path
from typing import Any

import orjson
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from bench.apiclient import ApiError, BenchClient

MAX_IN_FLIGHT = 64


def _client_from_kubeconfig(path: str) -> BenchClient:
    configuration: Any = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=path, client_configuration=configuration)
    header = configuration.get_api_key_with_prefix("BearerToken", alias="authorization") or ""
    token = header.removeprefix("Bearer ").strip()
    return BenchClient(configuration.host, token, configuration.ssl_ca_cert, connections=MAX_IN_FLIGHT + 4)


async def run(kubeconfig: str, scheduler_name: str, ready_file: Path | None) -> None:
    async with _client_from_kubeconfig(kubeconfig) as client:
        nodes = [n["metadata"]["name"] for n in (await client.list("/api/v1/nodes"))["items"]]
        if not nodes:
            raise SystemExit("trivial binder: no nodes")
        next_node = itertools.cycle(nodes)
        selector = f"spec.schedulerName={scheduler_name},spec.nodeName="
        slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        seen: set[str] = set()
        tasks: set[asyncio.Task[None]] = set()

        async def bind(namespace: str, name: str, uid: str, node: str) -> None:
            body = orjson.dumps({
                "apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, "uid": uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            })  # fmt: skip
            try:
                await client.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body)
            except ApiError as err:
                if err.status not in (404, 409):
                    print(f"bind {namespace}/{name}: {err}", file=sys.stderr)
            finally:
                slots.release()

        def take(pod: dict[str, Any]) -> None:
            meta = pod["metadata"]
            key = meta["uid"]
            if key in seen:
                return
            seen.add(key)
            task = asyncio.create_task(bind(meta["namespace"], meta["name"], key, next(next_node)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        listed = await client.list("/api/v1/pods", {"fieldSelector": selector})
        for pod in listed["items"]:
            await slots.acquire()
            take(pod)
        if ready_file is not None:
            ready_file.write_text("ready\n")  # noqa: ASYNC240 - once, a few bytes
        params = {"fieldSelector": selector, "resourceVersion": listed["resourceVersion"]}
        while True:
            async for event in client.watch("/api/v1/pods", {**params, "allowWatchBookmarks": "true"}):
                obj = event.get("object") or {}
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if rv:
                    params["resourceVersion"] = rv
                if event.get("type") == "ADDED":
                    await slots.acquire()
                    take(obj)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--scheduler-name", default="bench-binder")
    parser.add_argument("--ready-file", type=Path)
    args = parser.parse_args()

    async def guarded() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await run(args.kubeconfig, args.scheduler_name, args.ready_file)

    asyncio.run(guarded())
    return 0


if __name__ == "__main__":
    sys.exit(main())
