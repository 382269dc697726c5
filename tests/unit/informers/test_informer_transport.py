"""AsyncTransport against a tiny local aiohttp server: auth, params, stream framing, errors, timeouts."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes import client

from informers import ApiError, AsyncTransport, TransportError
from informers.testing import FakeClock, eventually
from informers.transport import loads_bulk, peek_continue

PAGED = web.AppKey("paged", list[str])
BIG = "x" * 300_000  # one event far above aiohttp's 128 KiB readline limit


async def handle_list(request: web.Request) -> web.Response:
    if request.headers.get("Authorization") != "Bearer s3cret":
        return web.json_response({"kind": "Status", "code": 401, "reason": "Unauthorized"}, status=401)
    body = {
        "kind": "PodList",
        "metadata": {"resourceVersion": "7"},
        "items": [],
        "query": dict(request.query),
    }
    return web.Response(body=orjson.dumps(body), content_type="application/json")


async def handle_paged(request: web.Request) -> web.Response:
    """Three pages; records when each is requested relative to the consumer's progress."""
    pages: list[str] = request.app[PAGED]
    token = request.query.get("continue", "")
    pages.append(token)
    index = int(token or "0")
    meta: dict[str, object] = {"resourceVersion": "42"}
    if index < 2:
        meta["continue"] = str(index + 1)
    body = {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": meta,
        "items": [{"metadata": {"name": f"p{index}"}}],
    }
    return web.Response(body=orjson.dumps(body), content_type="application/json")


async def handle_watch(request: web.Request) -> web.StreamResponse:
    mode = request.query.get("mode", "")
    if mode == "gone":
        status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
        return web.json_response(status, status=410)
    if mode == "throttled":
        # The API server's APF answer: Retry-After header and details.retryAfterSeconds agree.
        status = {
            "kind": "Status",
            "code": 429,
            "reason": "TooManyRequests",
            "details": {"retryAfterSeconds": 1},
        }
        return web.json_response(status, status=429, headers={"Retry-After": "4"})
    resp = web.StreamResponse()
    await resp.prepare(request)
    events = [
        {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "8"}}},
        {"type": "MODIFIED", "object": {"metadata": {"name": "big", "resourceVersion": "9"}, "data": BIG}},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "10"}}},
    ]
    wire = b"".join(orjson.dumps(e) + b"\n" for e in events)
    # Deliberately awkward framing: split mid-line in odd places.
    for i in range(0, len(wire), 4099):
        await resp.write(wire[i : i + 4099])
    if mode == "hang":
        await asyncio.sleep(30)
    await resp.write_eof()
    return resp


@pytest_asyncio.fixture(loop_scope="function")
async def server() -> AsyncIterator[TestServer]:
    app = web.Application()
    app.router.add_get("/api/v1/pods", handle_list)
    app.router.add_get("/api/v1/namespaces/{ns}/pods", handle_watch)
    app.router.add_get("/api/v1/nodes", handle_paged)
    app[PAGED] = []
    srv = TestServer(app, host="127.0.0.1")
    await srv.start_server()
    yield srv
    await srv.close()


def transport_for(srv: TestServer, token: str = "Bearer s3cret", **kwargs: Any) -> AsyncTransport:
    cfg = client.Configuration(host=str(srv.make_url("")).rstrip("/"))
    cfg.api_key["BearerToken"] = token
    return AsyncTransport(cfg, **kwargs)


async def test_list_sends_token_and_params(server: TestServer) -> None:
    async with transport_for(server) as t:
        page = await t.list("/api/v1/pods", {"limit": "500", "fieldSelector": "spec.nodeName="})
    assert page["metadata"]["resourceVersion"] == "7"
    assert page["query"] == {"limit": "500", "fieldSelector": "spec.nodeName="}


async def test_list_http_error_becomes_api_error(server: TestServer) -> None:
    async with transport_for(server, token="Bearer wrong") as t:
        with pytest.raises(ApiError) as err:
            await t.list("/api/v1/pods", {})
    assert err.value.status == 401 and err.value.reason == "Unauthorized"


async def test_watch_parses_lines_across_chunks_including_huge_events(server: TestServer) -> None:
    async with transport_for(server) as t:
        events = [e async for e in t.watch("/api/v1/namespaces/x/pods", {"resourceVersion": "7"})]
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "BOOKMARK"]
    assert events[1]["object"]["data"] == BIG


async def test_watch_410_is_gone(server: TestServer) -> None:
    async with transport_for(server) as t:
        with pytest.raises(ApiError) as err:
            async for _ in t.watch("/api/v1/namespaces/x/pods", {"mode": "gone"}):
                pass
    assert err.value.is_gone


async def test_a_throttled_watch_carries_the_retry_after_header(server: TestServer) -> None:
    async with transport_for(server) as t:
        with pytest.raises(ApiError) as err:
            async for _ in t.watch("/api/v1/namespaces/ns/pods", {"mode": "throttled"}):
                pass
    assert err.value.status == 429 and err.value.retry_after == 4.0  # the header wins


async def test_silent_connection_hits_read_timeout(server: TestServer) -> None:
    async with transport_for(server, read_timeout=0.2) as t:
        got = []
        with pytest.raises(TransportError):
            async for event in t.watch("/api/v1/namespaces/x/pods", {"mode": "hang"}):
                got.append(event["type"])
    assert got == ["ADDED", "MODIFIED", "BOOKMARK"]


async def test_list_pages_follows_continue_and_prefetches(server: TestServer) -> None:
    requested: list[str] = server.app[PAGED]
    names = []
    async with transport_for(server) as t:
        async for page in t.list_pages("/api/v1/nodes", {"limit": "1"}):
            names.append(page["items"][0]["metadata"]["name"])
            if len(names) == 1:
                # The second page was requested before the first was consumed.
                await eventually(lambda: len(requested) == 2)
    assert names == ["p0", "p1", "p2"]
    assert requested == ["", "1", "2"]


def test_peek_continue_reads_only_the_list_head() -> None:
    page = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9", "continue": "abc"}}
    body = orjson.dumps(page | {"items": [{"metadata": {"name": "x", "continue": "no"}}]})
    assert peek_continue(body) == "abc"
    last = orjson.dumps({"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": []})
    assert peek_continue(last) == ""
    items_first = orjson.dumps({"items": [{"metadata": {"name": "x"}}], "metadata": {"continue": "c"}})
    assert peek_continue(items_first) is None


def test_loads_bulk_restores_gc_state() -> None:
    assert gc.isenabled()
    assert loads_bulk(b'{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    assert gc.isenabled()
    with pytest.raises(orjson.JSONDecodeError):
        loads_bulk(b"{nope")
    assert gc.isenabled()
    gc.disable()
    try:
        loads_bulk(b"[]")
        assert not gc.isenabled()
    finally:
        gc.enable()


async def test_connection_refused_is_transport_error() -> None:
    cfg = client.Configuration(host="http://127.0.0.1:1")
    async with AsyncTransport(cfg) as t:
        with pytest.raises(TransportError):
            await t.list("/api/v1/pods", {})


async def test_qps_limit_is_applied(server: TestServer) -> None:
    # 2 QPS with a burst of 1: the first request goes at once, each later one waits for its token.
    clock = FakeClock()  # auto-advance: every wait is recorded and returns at once
    async with transport_for(server, qps=2.0, burst=1, clock=clock) as t:
        for _ in range(3):
            page = await t.list("/api/v1/pods", {})
            assert page["metadata"]["resourceVersion"] == "7"
    assert clock.sleeps == [pytest.approx(0.5), pytest.approx(0.5)]


def test_from_kubeconfig_reads_server_token_and_ca(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        """
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:6443"}
users:
- name: u
  user: {token: abc}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
"""
    )
    t = AsyncTransport.from_kubeconfig(str(kubeconfig), qps=5, burst=10)
    assert t.host == "http://127.0.0.1:6443"
    assert t._headers(t.credentials.current())["Authorization"] == "Bearer abc"
