"""Reflector against the fake API server: paging, bookmarks, 410 handling, stop mid-stream."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from prometheus_client import REGISTRY

from informers import NODES, PODS, ApiError, SharedInformer
from informers.reflector import Reflector
from informers.testing import FakeApiServer, FakeClock, eventually, make_pod
from informers.transport import paginate


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


class RecordingSink:
    def __init__(self) -> None:
        self.replaced: list[tuple[list[dict[str, Any]], str]] = []
        self.events: list[tuple[str, str]] = []

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None:
        self.replaced.append((items, resource_version))

    def apply(self, event_type: str, obj: dict[str, Any]) -> None:
        self.events.append((event_type, obj["metadata"]["name"]))


async def test_list_is_paginated_and_items_get_type_meta() -> None:
    server = FakeApiServer()
    for i in range(23):
        server.create(PODS, make_pod(f"p{i:02d}"))
    sink = RecordingSink()
    reflector = Reflector(server, PODS, sink, page_size=5, clock=FakeClock())
    rv = await reflector.list_once()
    assert rv == str(server.rv)
    assert len(server.list_calls) == 5
    assert all(params["limit"] == "5" for _, params in server.list_calls)
    assert "continue" not in server.list_calls[0][1]
    assert all("continue" in params for _, params in server.list_calls[1:])
    (items, got_rv), *_ = sink.replaced
    assert got_rv == rv
    assert [i["metadata"]["name"] for i in items] == [f"p{i:02d}" for i in range(23)]
    assert all(i["kind"] == "Pod" and i["apiVersion"] == "v1" for i in items)


async def test_expired_continue_token_restarts_the_list() -> None:
    server = FakeApiServer()
    for i in range(6):
        server.create(NODES, {"metadata": {"name": f"n{i}"}})
    sink = RecordingSink()
    reflector = Reflector(server, NODES, sink, page_size=4, clock=FakeClock())
    real_list = server.list

    async def compact_after_first_page(path: str, params: Mapping[str, str]) -> dict[str, Any]:
        page = await real_list(path, params)
        if len(server.list_calls) == 1:
            server.create(NODES, {"metadata": {"name": "late"}})
            server.compact()
        return page

    server.list = compact_after_first_page  # type: ignore[method-assign]
    await reflector.list_once()
    (items, _), *_ = sink.replaced
    assert sorted(i["metadata"]["name"] for i in items) == sorted([*(f"n{i}" for i in range(6)), "late"])
    assert len(server.list_calls) == 4  # page 1, expired page 2, then 2 fresh pages


async def test_watch_starts_from_list_rv_with_bookmarks_and_selectors() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a", namespace="ns1"))
    informer = SharedInformer(
        server,
        PODS,
        namespace="ns1",
        field_selector="status.phase!=Succeeded",
        label_selector="app=x",
        clock=FakeClock(),
    )
    async with informer:
        await eventually(lambda: server.open_watches == 1)
    path, params = server.watch_calls[0]
    assert path == "/api/v1/namespaces/ns1/pods"
    assert params["allowWatchBookmarks"] == "true"
    assert params["resourceVersion"] == server.list_calls[0][1].get("resourceVersion", str(server.rv))
    assert params["fieldSelector"] == "status.phase!=Succeeded"
    assert params["labelSelector"] == "app=x"
    assert 300 <= int(params["timeoutSeconds"]) < 600
    list_params = server.list_calls[0][1]
    assert "resourceVersion" not in list_params, "lists are consistent reads"
    assert list_params["fieldSelector"] == "status.phase!=Succeeded"


async def test_bookmark_advances_resource_version_for_the_next_watch() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a"))
    server.create(NODES, {"metadata": {"name": "n"}})
    informer = SharedInformer(server, PODS, clock=FakeClock())
    async with informer:
        await eventually(lambda: server.open_watches == 1)
        for i in range(3):
            server.create(NODES, {"metadata": {"name": f"other{i}"}})
        server.bookmark()
        await eventually(lambda: informer.last_sync_resource_version == str(server.rv))
        server.disconnect()
        await eventually(lambda: len(server.watch_calls) == 2)
    assert server.watch_calls[1][1]["resourceVersion"] == str(server.rv)
    assert len(server.list_calls) == 1


async def test_in_stream_410_relists_and_counts_reason() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("relist-a"))
    before = metric("py_scheduler_informer_relists_total", resource="pods", reason="expired")
    informer = SharedInformer(server, PODS, clock=FakeClock())
    async with informer:
        await eventually(lambda: server.open_watches == 1)
        server.send_error(410, "Expired", "too old resource version")
        await eventually(lambda: len(server.list_calls) == 2 and server.open_watches == 1)
    assert metric("py_scheduler_informer_relists_total", resource="pods", reason="expired") == before + 1
    assert len(server.watch_calls) == 2


async def test_http_410_on_watch_relists() -> None:
    server = FakeApiServer(gone_as_event=False)
    server.create(PODS, make_pod("a"))
    before = metric("py_scheduler_informer_relists_total", resource="pods", reason="expired")
    informer = SharedInformer(server, PODS, clock=FakeClock())
    async with informer:
        await eventually(lambda: server.open_watches == 1)
        server.watch_failures.append(ApiError(410, "Gone", "too old"))
        server.disconnect()
        await eventually(lambda: len(server.list_calls) == 2 and server.open_watches == 1)
        assert list(informer.store.keys()) == ["default/a"]
    assert metric("py_scheduler_informer_relists_total", resource="pods", reason="expired") == before + 1
    # The relist is a fresh list (not from the expired version), and the watch resumes from its version.
    assert "resourceVersion" not in server.list_calls[1][1]
    assert server.watch_calls[-1][1]["resourceVersion"] == str(server.rv)


async def test_too_large_resource_version_relists() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a"))
    informer = SharedInformer(server, PODS, clock=FakeClock())
    too_large = ApiError.from_status(
        {
            "code": 504,
            "reason": "Timeout",
            "message": "Too large resource version: 10, current: 5",
            "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large"}]},
        }
    )
    assert too_large.is_too_large_resource_version
    relists = ("py_scheduler_informer_relists_total", "too_large_resource_version")
    before = metric(relists[0], resource="pods", reason=relists[1])
    async with informer:
        await eventually(lambda: server.open_watches == 1)
        server.disconnect(too_large)
        await eventually(lambda: len(server.list_calls) == 2 and server.open_watches == 1)
        assert list(informer.store.keys()) == ["default/a"]
    assert metric(relists[0], resource="pods", reason=relists[1]) == before + 1
    assert "resourceVersion" not in server.list_calls[1][1]


async def test_events_are_counted_by_type() -> None:
    server = FakeApiServer()
    server._collection(NODES)
    before = {
        t: metric("py_scheduler_informer_events_total", resource="nodes", type=t)
        for t in ("ADDED", "DELETED")
    }
    informer = SharedInformer(server, NODES, clock=FakeClock())
    async with informer:
        await eventually(lambda: server.open_watches == 1)
        server.create(NODES, {"metadata": {"name": "n1"}})
        server.delete(NODES, "n1")
        await eventually(lambda: "n1" not in informer.store and len(server._history) == 2)
        await eventually(
            lambda: (
                metric("py_scheduler_informer_events_total", resource="nodes", type="DELETED")
                == before["DELETED"] + 1
            )
        )
    assert metric("py_scheduler_informer_events_total", resource="nodes", type="ADDED") == before["ADDED"] + 1


class HangingTransport:
    """LIST answers; WATCH sends one event then hangs forever (a silent, live connection)."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.streaming = asyncio.Event()

    async def list(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}, "items": []}

    def list_pages(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[dict[str, Any], None]:
        return paginate(self.list, path, params)

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[dict[str, Any], None]:
        try:
            yield {"type": "ADDED", "object": make_pod("x") | {"kind": "Pod"}}
            self.streaming.set()
            await asyncio.Event().wait()
            yield {}
        finally:
            self.closed.set()


async def test_stop_returns_promptly_mid_stream_and_closes_the_stream() -> None:
    transport = HangingTransport()
    informer = SharedInformer(transport, PODS, rng=random.Random(0))
    informer.start()
    await asyncio.wait_for(transport.streaming.wait(), 5)
    assert "default/x" in informer.store
    await asyncio.wait_for(informer.stop(), 1.0)
    assert transport.closed.is_set()
    assert not informer.started


async def test_stop_during_backoff_is_prompt() -> None:
    server = FakeApiServer()
    server._collection(PODS)
    server.list_failures.extend(ApiError(503, "ServiceUnavailable") for _ in range(100))
    clock = FakeClock(auto_advance=False)
    informer = SharedInformer(server, PODS, clock=clock)
    informer.start()
    await eventually(lambda: clock.waiting == 1)
    await asyncio.wait_for(informer.stop(), 1.0)
    assert not informer.has_synced()


async def test_retry_after_is_honoured_on_429_and_5xx_ten_times_in_a_row_then_backoff() -> None:
    """client-go waits the Retry-After a 429 (or 5xx) names, up to maxRetries (10) times in a row;
    without it, or after that, the reflector's jittered backoff (>= 0.8 s) applies."""
    server = FakeApiServer()
    server.create(PODS, make_pod("p0"))
    server.list_failures.extend(ApiError(429, "TooManyRequests", retry_after=3) for _ in range(11))
    server.list_failures.append(
        ApiError.from_status({"kind": "Status", "code": 503, "details": {"retryAfterSeconds": 2}})
    )
    server.list_failures.append(ApiError(500, "InternalError"))  # no Retry-After: backoff
    server.list_failures.append(ApiError(404, "NotFound", retry_after=5))  # not 429/5xx: backoff
    clock = FakeClock()
    sink = RecordingSink()
    reflector = Reflector(server, PODS, sink, clock=clock)
    task = asyncio.create_task(reflector.run())
    try:
        await eventually(lambda: len(sink.replaced) == 1)
    finally:
        task.cancel()
    waits = clock.sleeps[:14]
    assert waits[:10] == [3.0] * 10
    assert waits[10] != 3.0 and waits[10] >= 0.8  # the eleventh in a row: backoff
    assert waits[11] == 2.0  # details.retryAfterSeconds of a 503's Status
    assert waits[12] >= 0.8 and waits[13] >= 0.8 and 5.0 not in waits[12:14]


def test_the_transport_and_the_writes_read_retry_after_alike() -> None:
    """One reading of Retry-After (client-go's checkWait) for the informers and the REST client."""
    from informers.errors import retry_after_seconds

    assert retry_after_seconds(429, "7") == 7
    assert retry_after_seconds(503, " 0 ") == 0
    assert retry_after_seconds(429, None) is None
    assert retry_after_seconds(429, "1.5") is None  # whole seconds only
    assert retry_after_seconds(429, "Wed, 21 Oct 2015 07:28:00 GMT") is None
    assert retry_after_seconds(404, "5") is None  # only 429 and 5xx are resent
    assert retry_after_seconds(429, "-1") == 0  # Atoi accepts it; client-go's negative wait is no wait
