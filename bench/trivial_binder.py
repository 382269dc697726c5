"""The ceilings: bind every pending pod of their schedulerName to the next node, round-robin, no filtering.

* The trivial binder (default) does the least anything can do per pod (one watch event in, one Binding
  POST out through aiohttp), so its throughput is the apiserver's binding ceiling on this machine.
* The honest limit (``--honest``) does the API work every scheduler must do per pod: the Binding POST
  and then the ``Scheduled`` Event (events.k8s.io/v1, reason Scheduled, action Binding, note
  "Successfully assigned ns/pod to node", as kube-scheduler v1.36 writes it), both through
  py-scheduler's own client: its ``RestClient`` (the same qps/burst token bucket and the same
  connection pool size as ``scheduler.app``; protobuf bodies, as the scheduler's default
  ``contentType`` sends them), ``SchedulerApi.bind`` and ``EventRecorder.event`` inline on
  one of ``BINDING_WORKERS`` binding threads, as py-scheduler's binding cycle writes them. No filtering,
  scoring, cache or queue: what is left is the per-pod API cost, so "fraction of the limit" says how
  much a scheduler loses to everything else.

Run as its own process, so its CPU is measured like a scheduler's::

    python -m bench.trivial_binder --kubeconfig KC --scheduler-name bench-binder --ready-file F
    python -m bench.trivial_binder --honest --qps 5000 --burst 5000 --kubeconfig KC ...
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from bench.apiclient import ApiError, BenchClient

MAX_IN_FLIGHT = 64
# The honest limit's reportingController: the profile name, as both schedulers write it.
HONEST_CONTROLLER = "bench-honest-limit"


def _client_from_kubeconfig(path: str) -> BenchClient:
    configuration: Any = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=path, client_configuration=configuration)
    header = configuration.get_api_key_with_prefix("BearerToken", alias="authorization") or ""
    token = header.removeprefix("Bearer ").strip()
    return BenchClient(configuration.host, token, configuration.ssl_ca_cert, connections=MAX_IN_FLIGHT + 4)


class HonestWriter:
    """The Binding and the Scheduled Event of one pod, written on a binding thread through py-scheduler's
    client stack, configured as ``scheduler.app.scheduler_app`` configures it."""

    def __init__(self, kubeconfig: str, qps: float, burst: int, *, protobuf_writes: bool = True) -> None:
        from scheduler.client.api import SchedulerApi
        from scheduler.client.events import EVENT_WRITERS, SERIES_WRITERS, EventRecorder
        from scheduler.client.kubeclient import RestClient, load_configuration
        from scheduler.cycle.binding import BINDING_WORKERS

        # scheduler_app's clients and formula (parallelism 16): Bindings on one, Events on their own.
        pool_size = max(16, BINDING_WORKERS) + EVENT_WRITERS
        configuration = load_configuration(kubeconfig)
        self.rest = RestClient(configuration, qps=qps, burst=burst, pool_size=pool_size)
        events_pool = pool_size + SERIES_WRITERS
        self.events_rest = RestClient(configuration, qps=qps, burst=burst, pool_size=events_pool)
        self.api = SchedulerApi(self.rest, protobuf_writes=protobuf_writes)
        events_api = SchedulerApi(self.events_rest, protobuf_writes=protobuf_writes)
        self.recorder = EventRecorder(self.api, reporting_instance=f"bench-honest-limit_{os.getpid()}",
                                      clock=time.time, events_api=events_api)  # fmt: skip
        self.threads = ThreadPoolExecutor(max_workers=BINDING_WORKERS, thread_name_prefix="binding")
        self.in_flight = BINDING_WORKERS

    def bind_and_record(self, pod: dict[str, Any], node: str) -> None:
        meta = pod["metadata"]
        self.api.bind(meta["namespace"], meta["name"], meta["uid"], node)
        self.recorder.event(
            pod,
            event_type="Normal",
            reason="Scheduled",
            action="Binding",
            message=f"Successfully assigned {meta['namespace']}/{meta['name']} to {node}",
            controller=HONEST_CONTROLLER,
            aggregate=False,
            inline=True,
        )

    def close(self) -> None:
        self.threads.shutdown(wait=False, cancel_futures=True)
        self.recorder.shutdown(wait=False)
        self.rest.close()
        self.events_rest.close()


async def run(
    kubeconfig: str, scheduler_name: str, ready_file: Path | None, honest: HonestWriter | None = None
) -> None:
    async with _client_from_kubeconfig(kubeconfig) as client:
        nodes = [n["metadata"]["name"] for n in (await client.list("/api/v1/nodes"))["items"]]
        if not nodes:
            raise SystemExit("trivial binder: no nodes")
        next_node = itertools.cycle(nodes)
        selector = f"spec.schedulerName={scheduler_name},spec.nodeName="
        slots = asyncio.Semaphore(honest.in_flight if honest is not None else MAX_IN_FLIGHT)
        loop = asyncio.get_running_loop()
        seen: set[str] = set()
        tasks: set[asyncio.Task[None]] = set()

        async def bind_honestly(writer: HonestWriter, pod: dict[str, Any], node: str) -> None:
            try:
                await loop.run_in_executor(writer.threads, writer.bind_and_record, pod, node)
            except Exception as err:  # a conflict (the pod went away) or a failed write: say so, go on
                meta = pod["metadata"]
                print(f"bind {meta['namespace']}/{meta['name']}: {err}", file=sys.stderr)
            finally:
                slots.release()

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
            if honest is not None:
                task = asyncio.create_task(bind_honestly(honest, pod, next(next_node)))
            else:
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
    parser.add_argument(
        "--honest", action="store_true", help="also write the Scheduled Event, through py-scheduler's client"
    )
    parser.add_argument("--qps", type=float, default=5000.0, help="--honest: the client's qps")
    parser.add_argument("--burst", type=int, default=5000, help="--honest: the client's burst")
    args = parser.parse_args()
    honest = HonestWriter(args.kubeconfig, args.qps, args.burst) if args.honest else None

    async def guarded() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await run(args.kubeconfig, args.scheduler_name, args.ready_file, honest)

    try:
        asyncio.run(guarded())
    finally:
        if honest is not None:
            honest.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
