"""In-process CPU per pod of the binding path: the scheduling loop's hand-offs and the binding threads.

The real Scheduler (queue, cache, the default profile, opportunistic batching), its BindingPool of
``BINDING_WORKERS`` threads wired as ``scheduler.app`` wires it (``before_bind``/``after_patches`` of the
recorder) and the Scheduled Event written inline by each binding thread, binding ``--pods`` identical
pods (100m/128Mi) onto ``--nodes`` nodes. The writes go either to a fake API server over TLS (a child
process answering every Binding with a Status 201 and every Event with a created Event after
``--latency`` seconds, through the scheduler's own RestClient and protobuf bodies), or with
``--in-process`` to an API that sleeps ``--latency`` per request (the GIL released as for network I/O,
no TLS: less noise, the same hand-offs).

    python -m bench.binding_path_bench [--pods 3000] [--nodes 1000] [--latency 0.003] [--in-process]

Prints one line: process, loop-thread and other-thread CPU per pod (us), the loop's CPU inside
``BindingPool.submit`` and in the results' drain (``_on_binding_done`` included), the drains and the
context switches per pod. Run it from each worktree in turn for an A/B (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scheduler.app.cli import GC_GEN0_THRESHOLD
from scheduler.cache import PodInfoCache, SchedulerCache
from scheduler.client.api import SchedulerApi
from scheduler.client.events import EVENT_WRITERS, SERIES_WRITERS, STATUS_PATCH_TIMEOUT, EventRecorder
from scheduler.client.kubeclient import RestClient, load_configuration
from scheduler.cycle.binding import BINDING_WORKERS, BindingPool, BindingResult
from scheduler.cycle.profiles import queue_hints
from scheduler.cycle.schedule_one import Scheduler
from scheduler.explain.recorder import DecisionRecorder
from scheduler.framework.resources import pod_request_amounts
from scheduling_queue import SchedulingQueue
from tests.unit.fakes import build_frameworks, make_node, make_pod

STATUS = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}\n'
# What the API server answers to an Event create (its size matters to the TLS reads, not its content).
EVENT = (
    b'{"kind":"Event","apiVersion":"events.k8s.io/v1","metadata":{"name":"pod-000001.0123456789abcdef",'
    b'"namespace":"default","uid":"5c3d8c2b-1d1a-4d8e-9e0e-0f1f2f3f4f5f","resourceVersion":"123456",'
    b'"creationTimestamp":"2026-11-28T10:00:00Z","managedFields":[{"manager":"py-scheduler",'
    b'"operation":"Update","apiVersion":"events.k8s.io/v1","time":"2026-11-28T10:00:00Z",'
    b'"fieldsType":"FieldsV1","fieldsV1":{"f:action":{},"f:eventTime":{},"f:note":{},"f:reason":{},'
    b'"f:regarding":{},"f:reportingController":{},"f:reportingInstance":{},"f:type":{}}}]},'
    b'"eventTime":"2026-11-28T10:00:00.000000Z","reportingController":"py-scheduler",'
    b'"reportingInstance":"py-scheduler-1","action":"Binding","reason":"Scheduled",'
    b'"regarding":{"kind":"Pod","namespace":"default","name":"pod-000001","uid":"uid","apiVersion":"v1",'
    b'"resourceVersion":"1"},"note":"Successfully assigned default/pod-000001 to node-1","type":"Normal"}\n'
)
WARM_UP_PODS = 300


def _answer(body: bytes) -> bytes:
    return (
        b"HTTP/1.1 201 Created\r\nAudit-Id: 00000000-0000-0000-0000-000000000000\r\n"
        b"Cache-Control: no-cache, private\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


async def _serve(port: int, latency: float, cert: str, key: str) -> None:
    """The fake API server (child process): HTTP/1.1 keep-alive over TLS."""
    bind_answer, event_answer = _answer(STATUS), _answer(EVENT)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                if latency:
                    await asyncio.sleep(latency)
                writer.write(bind_answer if b"/binding " in head.split(b"\r\n", 1)[0] else event_answer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = await asyncio.start_server(handle, "127.0.0.1", port, ssl=context, backlog=512)
    async with server:
        await server.serve_forever()


def _start_server(workdir: Path, latency: float) -> tuple[subprocess.Popen[bytes], Path]:
    """A certificate, the fake server on a free port, and a kubeconfig for it."""
    cert, key = workdir / "cert.pem", workdir / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.binding_path_bench", "--serve", str(port), "--latency", str(latency),
         "--cert", str(cert), "--key", str(key)],
    )  # fmt: skip
    kubeconfig = workdir / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: fake, cluster: {{server: 'https://127.0.0.1:{port}', "
        f"certificate-authority: '{cert}'}}}}]\n"
        "users: [{name: u, user: {token: bench}}]\n"
        "contexts: [{name: c, context: {cluster: fake, user: u}}]\n"
    )
    deadline = time.monotonic() + 10.0
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    return server, kubeconfig


class _SleepingRest:
    """The API server in-process: every request sleeps ``latency`` (the GIL released) and succeeds."""

    def __init__(self, latency: float) -> None:
        self.latency = latency

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        timeout: float = 30.0,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        time.sleep(self.latency)
        return 201, STATUS


class _WallClock:
    def now(self) -> float:
        return time.time()


def _context_switches() -> int:
    total = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/status") as status:
                for line in status:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total


async def _measure(pods: int, nodes: int, rest: Any, events_rest: Any) -> str:
    loop = asyncio.get_running_loop()
    api = SchedulerApi(rest, protobuf_writes=True)
    events_api = SchedulerApi(events_rest, protobuf_writes=True)
    recorder = EventRecorder(api, reporting_instance="bench_1", clock=time.time, events_api=events_api)
    pod_infos = PodInfoCache()
    cache = SchedulerCache(pod_infos=pod_infos)
    for index in range(nodes):
        cache.add_node(make_node(f"node-{index}", cpu="32", memory="256Gi", pods=110))
    holder: list[Scheduler] = []
    frameworks = build_frameworks(
        lambda: holder[0].snapshot,
        api,
        time.time,
        waiting_pods=lambda: holder[0].waiting_pods if holder else {},
    )
    queue = SchedulingQueue(
        clock=_WallClock(), hints=queue_hints(frameworks), pod_requests=pod_request_amounts
    )

    def pool_factory(on_done: Callable[[BindingResult], None]) -> BindingPool:
        return BindingPool(
            loop,
            on_done,
            max_workers=BINDING_WORKERS,
            before_bind=recorder.before_bind,
            after_patches=recorder.after_patches,
            patch_wait_limit=STATUS_PATCH_TIMEOUT + 1.0,
        )

    sched = Scheduler(
        frameworks=frameworks,
        queue=queue,
        cache=cache,
        pod_infos=pod_infos,
        recorder=recorder,
        binding_pool_factory=pool_factory,
        clock=time.time,
        api=api,
        decisions=DecisionRecorder(clock=time.time),
    )
    holder.append(sched)
    pool = sched.binding_pool
    # The loop's CPU inside the pool's two loop-side steps (thread_time: a system call, ~0.5 us each).
    spent = {"submit": 0.0, "drain": 0.0}
    submit, drain = pool.submit, pool._drain

    def timed_submit(task: Any) -> None:
        start = time.thread_time()
        submit(task)
        spent["submit"] += time.thread_time() - start

    def timed_drain() -> None:
        start = time.thread_time()
        drain()
        spent["drain"] += time.thread_time() - start

    pool.submit = timed_submit  # type: ignore[method-assign]
    pool._drain = timed_drain  # type: ignore[method-assign]
    await loop.run_in_executor(None, recorder.prestart)
    await loop.run_in_executor(None, pool.prestart)

    async def bind_all(prefix: str, count: int) -> None:
        target, events = sched.stats.scheduled + count, recorder.created + count
        for index in range(count):
            queue.add(make_pod(f"{prefix}-{index:06d}", cpu="100m", memory="128Mi"))
        cycle = asyncio.create_task(sched.run())
        while sched.stats.scheduled < target or recorder.created < events:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.3)  # the last Events' answers
        sched._stopping = True
        queue.add(make_pod(f"{prefix}-stop", cpu="100m", memory="128Mi"))  # wakes the pop
        await cycle
        sched._stopping = False

    await bind_all("warm", WARM_UP_PODS)
    gc.collect()
    spent["submit"] = spent["drain"] = 0.0
    drains, switches = pool.drains, _context_switches()
    process, loop_thread = time.process_time(), time.thread_time()
    await bind_all("pod", pods)
    process, loop_thread = time.process_time() - process, time.thread_time() - loop_thread
    per_pod = 1e6 / pods
    return (
        f"process {process * per_pod:.1f} us/pod, loop {loop_thread * per_pod:.1f}, "
        f"other threads {(process - loop_thread) * per_pod:.1f}; loop in submit "
        f"{spent['submit'] * per_pod:.2f}, in drain {spent['drain'] * per_pod:.2f}; "
        f"{pool.drains - drains} drains, {(_context_switches() - switches) / pods:.1f} context switches/pod"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.003, help="the API server's seconds per write")
    parser.add_argument("--in-process", action="store_true", help="no TLS server: a sleeping fake API")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cert", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(_serve(args.serve, args.latency, args.cert, args.key))
        return 0
    gc.set_threshold(GC_GEN0_THRESHOLD, *gc.get_threshold()[1:])
    if args.in_process:
        fake = _SleepingRest(args.latency)
        print(asyncio.run(_measure(args.pods, args.nodes, fake, fake)), flush=True)
        os._exit(0)  # binding threads are daemons; skip the interpreter's slow teardown
    with tempfile.TemporaryDirectory() as workdir:
        server, kubeconfig = _start_server(Path(workdir), args.latency)
        try:
            configuration = load_configuration(str(kubeconfig))
            pool_size = max(16, BINDING_WORKERS) + EVENT_WRITERS  # scheduler_app's formula
            rest = RestClient(configuration, qps=5000, burst=5000, pool_size=pool_size)
            events_rest = RestClient(
                configuration, qps=5000, burst=5000, pool_size=pool_size + SERIES_WRITERS
            )
            print(asyncio.run(_measure(args.pods, args.nodes, rest, events_rest)), flush=True)
        finally:
            server.terminate()
            server.wait()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
