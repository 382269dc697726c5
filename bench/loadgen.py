"""Creates a workload's pods as fast as the apiserver takes them and records when a watch sees each bound.

Runs in the benchmark process, never in a scheduler's. Pod bodies are serialised before the clock
starts. A watch with ``fieldSelector=spec.nodeName!=`` reports a pod once, when it becomes bound, so
the watcher parses one event per pod instead of every status change.

Times are ``time.monotonic()``: a pod's creation time is when the apiserver's 201 reached us, its bind
time when the watch event arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from bench.apiclient import ApiError, BenchClient
from bench.workloads import Churn

log = logging.getLogger(__name__)

DEFAULT_CONCURRENCY = 48


@dataclass
class RunRecord:
    """Raw timings of one run; every time is monotonic seconds."""

    create_start: float = 0.0
    create_end: float = 0.0
    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    node_of: dict[str, str] = field(default_factory=dict)
    deleted: dict[str, float] = field(default_factory=dict)
    create_errors: int = 0
    timed_out: bool = False
    end: float = 0.0


class BindingWatch:
    """Watches a namespace for pods that get a nodeName; ``wait_for`` a set of names to be bound."""

    def __init__(self, client: BenchClient, namespace: str, record: RunRecord) -> None:
        self._client = client
        self._namespace = namespace
        self._record = record
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Called with a pod's name when it is first seen bound (the steady-state driver's trigger).
        self.on_bound: Callable[[str], None] | None = None

    async def start(self) -> None:
        path = f"/api/v1/namespaces/{self._namespace}/pods"
        listed = await self._client.list(path, {"fieldSelector": "spec.nodeName!="})
        for pod in listed["items"]:
            self._note(pod)
        self._task = asyncio.create_task(self._run(path, listed["resourceVersion"]))

    async def _run(self, path: str, resource_version: str) -> None:
        params = {
            "fieldSelector": "spec.nodeName!=",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "3600",
        }
        async for kind, obj in follow(self._client, path, params):
            if kind in ("ADDED", "MODIFIED"):
                self._note(obj)

    def _note(self, pod: dict[str, object]) -> None:
        now = time.monotonic()
        meta = pod.get("metadata")
        spec = pod.get("spec")
        if not isinstance(meta, dict) or not isinstance(spec, dict):
            return
        name = meta.get("name")
        node = spec.get("nodeName")
        if isinstance(name, str) and isinstance(node, str) and node and name not in self._record.bound:
            self._record.bound[name] = now
            self._record.node_of[name] = node
            self._changed.set()
            if self.on_bound is not None:
                self.on_bound(name)

    async def wait_for(self, names: frozenset[str], timeout: float, settle: float = 0.0) -> bool:
        """True once every name is bound (then ``settle`` seconds more pass); False on timeout."""
        deadline = time.monotonic() + timeout
        bound = self._record.bound
        while not names.issubset(bound.keys()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 1.0))
        if settle > 0:
            await asyncio.sleep(settle)
        return True

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


async def create_pods(
    client: BenchClient,
    namespace: str,
    bodies: Sequence[tuple[str, bytes]],
    record: RunRecord,
    *,
    churn: Sequence[Churn] = (),
    concurrency: int = DEFAULT_CONCURRENCY,
    on_created: Callable[[int], None] | None = None,
) -> None:
    """POST every body with ``concurrency`` requests in flight; deletes churn pods on schedule."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    pending = sorted(churn, key=lambda c: c.after_created)
    delete_tasks: list[asyncio.Task[None]] = []
    next_index = 0
    created_count = 0
    delete_body = orjson.dumps({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})

    async def delete(name: str) -> None:
        try:
            await client.request("DELETE", f"{path}/{name}", delete_body, ok=(200, 202, 404))
            record.deleted[name] = time.monotonic()
        except ApiError as err:
            log.warning("churn delete of %s failed: %s", name, err)

    async def worker() -> None:
        nonlocal next_index, created_count
        while next_index < len(bodies):
            name, body = bodies[next_index]
            next_index += 1
            try:
                await client.request("POST", path, body, ok=(201,))
            except ApiError as err:
                record.create_errors += 1
                log.warning("creating %s failed: %s", name, err)
                continue
            record.created[name] = time.monotonic()
            created_count += 1
            while pending and pending[0].after_created <= created_count:
                delete_tasks.append(asyncio.create_task(delete(pending.pop(0).pod)))
            if on_created is not None:
                on_created(created_count)

    record.create_start = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    record.create_end = time.monotonic()
    for leftover in pending:  # creates that failed never reached their trigger
        delete_tasks.append(asyncio.create_task(delete(leftover.pod)))
    if delete_tasks:
        await asyncio.gather(*delete_tasks)


async def create_pods_steadily(
    client: BenchClient,
    namespace: str,
    bodies: Sequence[tuple[str, bytes]],
    record: RunRecord,
    watch: BindingWatch,
    *,
    in_flight: int,
) -> None:
    """scheduler_perf's steady-state createPods: ``in_flight`` pods first, then, each time the watch
    sees one bound, that pod deleted and the next one created, until every body was created (and the
    last bound pods deleted). The cluster stays near its starting state; the scheduler's queue is never
    empty for long."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    delete_body = orjson.dumps({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    bound: asyncio.Queue[str] = asyncio.Queue()
    watch.on_bound = bound.put_nowait
    next_index = 0
    tasks: list[asyncio.Task[None]] = []

    async def create(name: str, body: bytes) -> None:
        try:
            await client.request("POST", path, body, ok=(201,))
        except ApiError as err:
            record.create_errors += 1
            log.warning("creating %s failed: %s", name, err)
            return
        record.created[name] = time.monotonic()

    async def delete(name: str) -> None:
        try:
            await client.request("DELETE", f"{path}/{name}", delete_body, ok=(200, 202, 404))
            record.deleted[name] = time.monotonic()
        except ApiError as err:
            log.warning("steady-state delete of %s failed: %s", name, err)

    def create_next() -> None:
        nonlocal next_index
        if next_index < len(bodies):
            name, body = bodies[next_index]
            next_index += 1
            tasks.append(asyncio.create_task(create(name, body)))

    record.create_start = time.monotonic()
    for _ in range(min(in_flight, len(bodies))):
        create_next()
    try:
        for _ in range(len(bodies)):
            name = await bound.get()
            tasks.append(asyncio.create_task(delete(name)))
            create_next()
            if next_index == len(bodies) and record.create_end == 0.0:
                record.create_end = time.monotonic()
        await asyncio.gather(*tasks)
    finally:
        watch.on_bound = None
        for task in tasks:
            task.cancel()


async def follow(
    client: BenchClient, path: str, params: dict[str, str]
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(event type, object) of a watch on ``path`` forever: each timeout re-watches from the last
    resourceVersion seen (``params`` carries it)."""
    while True:
        async for event in client.watch(path, params):
            obj = event.get("object") or {}
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                params["resourceVersion"] = rv
            yield str(event.get("type") or ""), obj
