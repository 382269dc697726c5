"""A TLS-terminating HTTP proxy in front of the API server that injects faults per request.

It serves with the API server's own certificate and key (so a kubeconfig with the control plane's CA
trusts it), forwards every request to the real API server, and lets a test decide, per request, to
answer with an error status instead, to hang without answering, to forward and then answer with an
error (the write happened, the client is told it failed), or to cut watch streams mid-stream.

It runs its own event loop on a daemon thread; tests drive it from their own (synchronous) thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import orjson
from aiohttp import web

# Hop-by-hop and length headers aiohttp sets itself.
_SKIP_HEADERS = frozenset(
    {"host", "connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}
)


@dataclass(frozen=True)
class Fault:
    """What to do with one request instead of (or after) forwarding it.

    ``status``: answer with this status and a ``Status`` body. ``forward_first``: send the request
    upstream first (the write lands), then answer ``status``. ``hang``: hold the request this many
    seconds without an answer, then drop the connection (with ``forward_first``, after it landed).
    ``hold``: keep the request until the test sets this event (at most 120 s), then forward it and
    pass the API server's answer on, so the test can change the world while a write is in flight.
    """

    status: int = 0
    retry_after: int | None = None
    hang: float = 0.0
    forward_first: bool = False
    # Answer ``status`` with this body instead of a Status (a garbled or ERROR watch stream).
    body: bytes | None = None
    name: str = ""
    hold: threading.Event | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        if self.hold is not None:
            return self.name or "hold"
        kind = self.name or (f"hang{self.hang:g}s" if self.hang else str(self.status))
        return f"{kind}-after-forward" if self.forward_first else kind


# Decides a request's fault: (method, path with query) -> a Fault, or None to forward it untouched.
Chooser = Callable[[str, str], Fault | None]


def status_body(code: int) -> bytes:
    reason = {409: "Conflict", 404: "NotFound", 429: "TooManyRequests"}.get(code, "InternalError")
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": f"injected by the fault proxy: {code}",
            "reason": reason,
            "code": code,
        }
    )


class FaultProxy:
    def __init__(self, upstream: str, cert_dir: Path, ca_file: Path) -> None:
        self.upstream = upstream.rstrip("/")
        self._serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._serving.load_cert_chain(cert_dir / "apiserver.crt", cert_dir / "apiserver.key")
        self._client_tls = ssl.create_default_context(cafile=str(ca_file))
        self.chooser: Chooser = lambda method, path: None
        self.injected: Counter[tuple[str, str]] = Counter()  # (request kind, fault label)
        self.requests: Counter[str] = Counter()  # request kind -> count seen
        self.watch_cuts = 0
        self._lock = threading.Lock()
        self._watches: set[asyncio.Transport] = set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.port = 0
        self._thread = threading.Thread(target=self._run, daemon=True, name="fault-proxy")
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("fault proxy did not start")

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    # --- control, from the test's thread ------------------------------------------------------------

    def cut_watches(self) -> int:
        """Drop every watch stream open right now; returns how many."""
        future = asyncio.run_coroutine_threadsafe(self._cut_watches(), self._loop)
        return future.result(10)

    def close(self) -> None:
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        with contextlib.suppress(Exception):
            future.result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    # --- the proxy, on its own loop --------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ssl=self._client_tls),
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
        )
        app = web.Application(client_max_size=64 << 20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._serving)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.base_events.Server)
        self.port = server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        await self._cut_watches()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()  # hung requests, open responses
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(self._runner.cleanup(), 5)
        await self._session.close()

    async def _cut_watches(self) -> int:
        cut = list(self._watches)
        for transport in cut:
            transport.abort()
        self._watches.clear()
        with self._lock:
            self.watch_cuts += len(cut)
        return len(cut)

    @staticmethod
    def kind(method: str, path: str) -> str:
        if path.endswith("/binding"):
            return f"{method} binding"
        if "/events" in path and path.startswith("/apis/events.k8s.io/"):
            return f"{method} event"
        if path.endswith("/status") and "/pods/" in path:
            return f"{method} pod status"
        return f"{method} other"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        method, path = request.method, request.path
        kind = self.kind(method, path)
        fault = self.chooser(method, request.path_qs)
        with self._lock:
            self.requests[kind] += 1
            if fault is not None:
                self.injected[(kind, fault.label)] += 1
        body = await request.read()
        if fault is not None and fault.hold is not None:
            await asyncio.get_running_loop().run_in_executor(None, fault.hold.wait, 120.0)
            return await self._forward(request, body)
        if fault is not None and not fault.forward_first:
            return await self._fail(request, fault)
        response = await self._forward(request, body)
        if fault is not None:
            return await self._fail(request, fault)
        return response

    async def _fail(self, request: web.Request, fault: Fault) -> web.StreamResponse:
        if fault.hang:
            await asyncio.sleep(fault.hang)
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError  # aiohttp closes the handler quietly
        headers = {"Content-Type": "application/json"}
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
        body = status_body(fault.status) if fault.body is None else fault.body
        return web.Response(status=fault.status, body=body, headers=headers)

    async def _forward(self, request: web.Request, body: bytes) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _SKIP_HEADERS}
        url = self.upstream + request.path_qs
        watching = request.query.get("watch") in ("1", "true")
        try:
            upstream = await self._session.request(request.method, url, headers=headers, data=body or None)
        except aiohttp.ClientError:
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError from None
        async with upstream:
            out_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _SKIP_HEADERS}
            if not watching:
                data = await upstream.read()
                return web.Response(status=upstream.status, body=data, headers=out_headers)
            response = web.StreamResponse(status=upstream.status, headers=out_headers)
            await response.prepare(request)
            transport = request.transport
            if transport is not None:
                self._watches.add(transport)
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
            except (aiohttp.ClientError, ConnectionError):
                pass
            finally:
                if transport is not None:
                    self._watches.discard(transport)
            return response


@contextlib.contextmanager
def fault_proxy(control_plane: object) -> Iterator[FaultProxy]:
    cp: object = control_plane
    proxy = FaultProxy(cp.server, cp.cert_dir, cp.ca_file)  # type: ignore[attr-defined]
    try:
        yield proxy
    finally:
        proxy.close()
