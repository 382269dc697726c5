"""Informers across real faults: kube-apiserver restarts, and 410 Gone after etcd compaction.

These tests disrupt the shared apiserver. Each one leaves it restarted on the same etcd and answering
/readyz before returning, so later tests see a healthy control plane.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import random
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from prometheus_client import REGISTRY

from devcluster.cluster import ControlPlane
from informers import (
    PODS,
    ApiError,
    AsyncTransport,
    BackoffPolicy,
    DeletedFinalStateUnknown,
    SharedInformer,
    TransportError,
    deletion_handling_key,
    meta_namespace_key,
)
from informers.testing import create_all, eventually

pytestmark = pytest.mark.integration

FAST_BACKOFF = BackoffPolicy(initial=0.2, cap=2.0)
NO_SCHEDULER = "informer-test-nobody"


def pod_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": NO_SCHEDULER,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


class Replay:
    """State rebuilt only from handler events; checks each update starts from the version last seen."""

    def __init__(self) -> None:
        self.state: dict[str, str] = {}
        self.violations: list[str] = []
        self.log: list[tuple[str, str]] = []

    def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
        key = meta_namespace_key(obj)
        if key in self.state:
            self.violations.append(f"add of known {key}")
        self.state[key] = obj["metadata"]["resourceVersion"]
        self.log.append(("add", key))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        key = meta_namespace_key(new)
        if self.state.get(key) != old["metadata"]["resourceVersion"]:
            self.violations.append(f"update of {key} from a version never delivered")
        self.state[key] = new["metadata"]["resourceVersion"]
        self.log.append(("update", key))

    def on_delete(self, obj: Any) -> None:
        key = deletion_handling_key(obj)
        if self.state.pop(key, None) is None:
            self.violations.append(f"delete of unknown {key}")
        self.log.append(("tombstone" if isinstance(obj, DeletedFinalStateUnknown) else "delete", key))


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def fresh_list(transport: AsyncTransport, path: str) -> dict[str, str]:
    body = await transport.list(path, {})
    return {meta_namespace_key(o): o["metadata"]["resourceVersion"] for o in body["items"]}


async def converge(informer: SharedInformer, replay: Replay, transport: AsyncTransport, path: str) -> None:
    """Wait until the store and the handler-built state both equal a fresh LIST, then assert it."""
    want: dict[str, str] = {}

    async def refresh() -> None:
        nonlocal want
        while True:
            with contextlib.suppress(TransportError, ApiError):
                want = await fresh_list(transport, path)
            await asyncio.sleep(0.2)

    poller = asyncio.create_task(refresh())
    try:

        def done() -> bool:
            have = {k: v["metadata"]["resourceVersion"] for k, v in informer.store.items().items()}
            return bool(want) and have == want and replay.state == want

        await eventually(done, 90)
    finally:
        poller.cancel()
    assert replay.violations == []


@contextlib.asynccontextmanager
async def healthy_apiserver(control_plane: ControlPlane) -> AsyncIterator[None]:
    try:
        yield
    finally:
        if not control_plane.readyz():
            await asyncio.to_thread(control_plane.start_apiserver)
        assert control_plane.readyz()


async def mutate_until(stop: asyncio.Event, transport: AsyncTransport, path: str, done: list[str]) -> None:
    """Create, patch and delete pods in a loop, riding out the restart (errors are expected then)."""
    rng = random.Random(5)
    i = 0
    while not stop.is_set():
        name = f"w-{i:04d}"
        try:
            await transport.request("POST", path, body=pod_body(name))
            if rng.random() < 0.5:
                await transport.request(
                    "PATCH",
                    f"{path}/{name}",
                    body={"metadata": {"labels": {"touched": "yes"}}},
                    content_type="application/merge-patch+json",
                )
            if rng.random() < 0.3:
                await transport.request("DELETE", f"{path}/{name}", body={"gracePeriodSeconds": 0})
            done.append(name)
        except (TransportError, ApiError):
            await asyncio.sleep(0.1)  # apiserver down or shutting down: try again shortly
        i += 1


async def test_apiserver_restart_mid_watch_misses_nothing(
    control_plane: ControlPlane, kubeconfig: str, namespace: str
) -> None:
    path = PODS.path(namespace)
    async with (
        healthy_apiserver(control_plane),
        AsyncTransport.from_kubeconfig(kubeconfig) as transport,
        AsyncTransport.from_kubeconfig(kubeconfig) as writer,
    ):
        await create_all(writer, path, [pod_body(f"before-{i:02d}") for i in range(20)])
        informer = SharedInformer(transport, PODS, namespace=namespace, backoff_policy=FAST_BACKOFF)
        replay = Replay()
        informer.add_event_handler(replay)
        watches_before = metric("py_scheduler_informer_watches_total", resource="pods")
        async with informer:
            assert await informer.wait_for_sync(30)
            stop = asyncio.Event()
            done: list[str] = []
            churn = asyncio.create_task(mutate_until(stop, writer, path, done))
            await eventually(lambda: len(done) >= 10, 30)
            await asyncio.to_thread(control_plane.restart_apiserver)
            after_restart = len(done)
            await eventually(lambda: len(done) >= after_restart + 20, 60)
            stop.set()
            await churn
            await converge(informer, replay, transport, path)
        assert metric("py_scheduler_informer_watches_total", resource="pods") >= watches_before + 2
        assert {f"{namespace}/before-{i:02d}" for i in range(20)} <= set(replay.state)


class CuttableProxy:
    """A loopback TCP proxy in front of the apiserver whose link can be cut and restored."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        dst.close()

    async def cut(self) -> None:
        """Refuse new connections and drop every open one (the informer's watch among them)."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    async def restore(self) -> None:
        await self.start()

    async def __aenter__(self) -> CuttableProxy:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.cut()


async def etcd_post(endpoint: str, api: str, body: Mapping[str, Any]) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session, session.post(f"{endpoint}{api}", json=body) as resp:
        resp.raise_for_status()
        result: dict[str, Any] = await resp.json()
        return result


async def compact_etcd(endpoint: str) -> int:
    """Physically compact etcd at its current revision, through the v3 grpc-gateway; returns it."""
    everything = {"key": base64.b64encode(b"\0").decode(), "range_end": base64.b64encode(b"\0").decode()}
    header = (await etcd_post(endpoint, "/v3/kv/range", everything | {"count_only": True}))["header"]
    revision = int(header["revision"])
    await etcd_post(endpoint, "/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision


def proxied_transport(kubeconfig: str, proxy_port: int) -> AsyncTransport:
    cfg = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    cfg.host = f"https://127.0.0.1:{proxy_port}"
    return AsyncTransport(cfg)


async def test_compaction_while_disconnected_relists_and_reconciles(
    control_plane: ControlPlane, kubeconfig: str, namespace: str
) -> None:
    """The informer loses its link; meanwhile objects change, etcd is compacted past the informer's
    resourceVersion and the apiserver restarts (its watch cache then starts after that version too).
    On reconnect the watch gets 410 Gone; the relist must deliver every missed change, deletes as
    tombstones."""
    path = PODS.path(namespace)
    server = urlsplit(control_plane.server)
    assert server.hostname is not None and server.port is not None
    proxy = CuttableProxy(server.hostname, server.port)
    await proxy.start()
    groups = ("keep", "change", "vanish", "recreate")
    async with (
        proxy,
        healthy_apiserver(control_plane),
        AsyncTransport.from_kubeconfig(kubeconfig) as direct,
        proxied_transport(kubeconfig, proxy.port) as via_proxy,
    ):
        await create_all(direct, path, [pod_body(f"{g}-{i}") for g in groups for i in range(3)])
        informer = SharedInformer(via_proxy, PODS, namespace=namespace, backoff_policy=FAST_BACKOFF)
        replay = Replay()
        informer.add_event_handler(replay)
        expired_before = metric("py_scheduler_informer_relists_total", resource="pods", reason="expired")
        async with informer:
            assert await informer.wait_for_sync(30)
            await eventually(lambda: len(replay.state) == 12, 30)
            rv_at_cut = int(informer.last_sync_resource_version)
            await proxy.cut()
            replay.log.clear()

            for i in range(3):
                await direct.request(
                    "PATCH",
                    f"{path}/change-{i}",
                    body={"metadata": {"labels": {"changed": "yes"}}},
                    content_type="application/merge-patch+json",
                )
                await direct.request("DELETE", f"{path}/vanish-{i}", body={"gracePeriodSeconds": 0})
                await direct.request("DELETE", f"{path}/recreate-{i}", body={"gracePeriodSeconds": 0})
            await create_all(direct, path, [pod_body(f"recreate-{i}") for i in range(3)])
            await create_all(direct, path, [pod_body(f"new-{i}") for i in range(3)])
            compacted_at = await compact_etcd(control_plane.etcd_endpoint)
            assert compacted_at > rv_at_cut
            await asyncio.to_thread(control_plane.restart_apiserver)
            await proxy.restore()

            await converge(informer, replay, direct, path)

    assert metric("py_scheduler_informer_relists_total", resource="pods", reason="expired") > expired_before
    ns = namespace
    log = set(replay.log)
    for i in range(3):
        assert ("tombstone", f"{ns}/vanish-{i}") in log
        assert ("tombstone", f"{ns}/recreate-{i}") in log
        assert ("add", f"{ns}/recreate-{i}") in log
        assert ("add", f"{ns}/new-{i}") in log
        assert ("update", f"{ns}/change-{i}") in log
        assert not any(key == f"{ns}/keep-{i}" for _, key in log)
