"""HTTP transport for LIST and WATCH: aiohttp with the kubernetes client's configuration, raw JSON out.

Server and TLS settings come from the client's ``Configuration``; credentials from the process's shared
:class:`~informers.credentials.Credentials` for it (exec plugins, token files, in-cluster token,
re-fetched on expiry and after a 401); requests go through one aiohttp session and
responses are parsed with orjson, never into the client's model classes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import ssl
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Protocol

import aiohttp
import orjson

from informers.clock import REAL_CLOCK, Clock
from informers.connection import connection_for, load
from informers.credentials import Credential, CredentialError, same
from informers.errors import ApiError, TransportError, retry_after_seconds
from informers.ratelimit import TokenBucket

logger = logging.getLogger(__name__)

WatchEvent = dict[str, Any]

# The apiserver's watch cache sends a BOOKMARK to every bookmark-enabled watcher about once a minute,
# so 150 s of silence means the connection is dead (or bookmarks are off and we merely re-watch).
DEFAULT_READ_TIMEOUT = 150.0
DEFAULT_CONNECT_TIMEOUT = 10.0

_CHUNK_SIZE = 256 * 1024


class Transport(Protocol):
    """What a reflector needs from the network. Unit tests substitute a fake."""

    async def list(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        """GET a collection page; the parsed body. Raises :class:`ApiError` or :class:`TransportError`."""
        ...

    def list_pages(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[dict[str, Any], None]:
        """Every page of a LIST, following ``continue`` tokens (see :func:`paginate`)."""
        ...

    def watch(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[WatchEvent, None]:
        """GET with ``watch=1``; yields each event ``{"type": ..., "object": {...}}`` as it arrives.

        Ends when the server closes the stream. Raises :class:`ApiError` for an HTTP failure and
        :class:`TransportError` for a broken or silent connection.
        """
        ...


async def _signal_sent(session: aiohttp.ClientSession, ctx: Any, params: Any) -> None:
    if isinstance(ctx.trace_request_ctx, asyncio.Event):
        ctx.trace_request_ctx.set()


async def _first_of(task: asyncio.Future[Any], event: asyncio.Event) -> None:
    """Wait until ``event`` is set or ``task`` finished (e.g. failed before sending)."""
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()


def loads_bulk(data: bytes | bytearray | memoryview) -> Any:
    """orjson.loads with the cyclic GC paused: a LIST page is a million fresh, acyclic containers, and
    collections triggered while allocating them more than double the parse time. orjson holds the GIL
    for the whole parse, so no other thread runs while the collector is off.
    """
    if not gc.isenabled():
        return orjson.loads(data)
    gc.disable()
    try:
        return orjson.loads(data)
    finally:
        gc.enable()


_LIST_META = b'"metadata":{'


def peek_continue(body: bytes) -> str | None:
    """The ``continue`` token of a list page read from its head without parsing the items.

    The apiserver writes kind, apiVersion, then the ListMeta object (only scalar fields), then
    items. Returns ``""`` for the last page and None when the head does not look like that.
    """
    head = body[:8192]
    start = head.find(_LIST_META)
    if start < 0 or b'"items"' in head[:start]:
        return None
    start += len(_LIST_META) - 1
    end = head.find(b"}", start)
    if end < 0:
        return None
    try:
        meta = orjson.loads(head[start : end + 1])
    except orjson.JSONDecodeError:
        return None
    if not isinstance(meta, dict):
        return None
    return str(meta.get("continue") or "")


async def paginate(
    list_page: Callable[[str, Mapping[str, str]], Awaitable[dict[str, Any]]],
    path: str,
    params: Mapping[str, str],
) -> AsyncGenerator[dict[str, Any], None]:
    """``list_pages`` for any single-page ``list`` function: request, yield, follow ``continue``."""
    query = dict(params)
    while True:
        page = await list_page(path, query)
        yield page
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return
        query = {**query, "continue": str(token)}


class AsyncTransport:
    """aiohttp transport configured from a ``kubernetes.client.Configuration``.

    The session is created lazily on the running loop; call :meth:`close` (or use ``async with``).
    """

    def __init__(
        self,
        configuration: Any,
        *,
        qps: float | None = None,
        burst: int | None = None,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        connection_limit: int = 100,
        compress: bool = True,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.configuration = configuration
        self.host: str = str(configuration.host).rstrip("/")
        self.read_timeout = read_timeout
        self._connect_timeout = connect_timeout
        self._connection_limit = connection_limit
        self._compress = compress
        self._limiter = (
            TokenBucket(qps, burst if burst is not None else max(1, int(qps * 2)), clock=clock)
            if qps is not None and qps > 0
            else None
        )
        connection = connection_for(configuration)
        self.credentials = connection.credentials
        self._tls = connection.tls
        self._https = str(configuration.host).startswith("https")
        self._server_hostname: str | None = getattr(configuration, "tls_server_name", None) or None
        self._proxy: str | None = getattr(configuration, "proxy", None) or None
        self._session: aiohttp.ClientSession | None = None

    # -- construction ------------------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | None = None,
        *,
        context: str | None = None,
        qps: float | None = None,
        burst: int | None = None,
        **kwargs: Any,
    ) -> AsyncTransport:
        """From a kubeconfig file; ``path=None`` means ``$KUBECONFIG``/``~/.kube/config``, else in-cluster."""
        return cls(load(path, context=context).configuration, qps=qps, burst=burst, **kwargs)

    def _ssl(self, cred: Credential) -> ssl.SSLContext | bool:
        return self._tls.get(cred.cert) if self._https else False

    async def _credential(self) -> Credential:
        """The current credential; fetched off the loop when due (an exec plugin may take a while)."""
        cred = self.credentials.peek()
        if cred is None:
            try:
                cred = await asyncio.to_thread(self.credentials.current)
            except CredentialError as err:  # retried like a network failure
                raise TransportError(f"credentials: {err}") from err
        return cred

    async def _refetch(self, used: Credential) -> Credential | None:
        """After a 401: the new credential to retry with once, or None when it did not change."""
        self.credentials.unauthorized(used)
        fresh = await self._credential()
        return None if same(fresh, used) else fresh

    def _headers(self, cred: Credential) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "py-scheduler-informers"}
        if not self._compress:
            headers["Accept-Encoding"] = "identity"
        if cred.authorization:
            headers["Authorization"] = cred.authorization
        return headers

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._connection_limit)
            tracing = aiohttp.TraceConfig()
            tracing.on_request_headers_sent.append(_signal_sent)
            self._session = aiohttp.ClientSession(
                connector=connector,
                json_serialize=lambda o: orjson.dumps(o).decode(),
                trace_configs=[tracing],
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> AsyncTransport:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- requests ----------------------------------------------------------------------------------

    def _timeout(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(
            total=None, sock_connect=self._connect_timeout, sock_read=self.read_timeout
        )

    @staticmethod
    async def _raise_for_status(resp: aiohttp.ClientResponse) -> None:
        if resp.status < 400:
            return
        body = await resp.read()
        seconds = retry_after_seconds(resp.status, resp.headers.get("Retry-After"))
        retry_after = float(seconds) if seconds is not None else None
        try:
            status_obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise ApiError(
                resp.status, resp.reason or "", body[:512].decode(errors="replace"), retry_after=retry_after
            ) from None
        raise ApiError.from_status(status_obj, default_code=resp.status, retry_after=retry_after)

    async def request_bytes(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        sent: asyncio.Event | None = None,
    ) -> bytes:
        """One non-streaming request; the raw answer body. Raises ApiError / TransportError.

        ``sent`` is set once the request has gone out on the wire.
        """
        if self._limiter is not None:
            await self._limiter.acquire()
        data = None if body is None else orjson.dumps(body)
        cred = await self._credential()
        for attempt in range(2):
            headers = self._headers(cred)
            if data is not None:
                headers["Content-Type"] = content_type
            try:
                async with self._get_session().request(
                    method,
                    self.host + path,
                    params=params,
                    data=data,
                    headers=headers,
                    timeout=self._timeout(),
                    proxy=self._proxy,
                    ssl=self._ssl(cred),
                    server_hostname=self._server_hostname,
                    # The apiserver redirects only when misconfigured; never follow with credentials.
                    allow_redirects=False,
                    trace_request_ctx=sent,
                ) as resp:
                    # A 401: fetch the credential again and retry once with it (RestClient does too).
                    if resp.status == 401 and attempt == 0 and (fresh := await self._refetch(cred)):
                        cred = fresh
                        continue
                    await self._raise_for_status(resp)
                    return await resp.read()
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raise TransportError(f"{method} {path}: {exc!r}") from exc
        raise AssertionError("unreachable")

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """One non-streaming request; the parsed JSON answer. Used for LIST, and by tests and benchmarks."""
        payload = await self.request_bytes(method, path, params=params, body=body, content_type=content_type)
        result: dict[str, Any] = loads_bulk(payload) if payload else {}
        return result

    async def list(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        return await self.request("GET", path, params=params)

    async def list_pages(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[dict[str, Any], None]:
        """Every page of a LIST, following continue tokens, with the next page's request in flight
        while the current one is parsed and consumed: the server's work overlaps ours.
        """
        query = dict(params)
        pending: asyncio.Task[bytes] | None = asyncio.ensure_future(
            self.request_bytes("GET", path, params=query)
        )
        try:
            while pending is not None:
                body = await pending
                pending = None
                token = peek_continue(body)
                page: dict[str, Any] | None = None
                if token is None:  # could not peek: parse first, then follow
                    page = loads_bulk(body)
                    token = str((page.get("metadata") or {}).get("continue") or "")
                if token:
                    query = {**query, "continue": token}
                    sent = asyncio.Event()
                    pending = asyncio.ensure_future(self.request_bytes("GET", path, params=query, sent=sent))
                    # Parsing holds the loop: let the request reach the server first, or nothing overlaps.
                    await _first_of(pending, sent)
                yield page if page is not None else loads_bulk(body)
        finally:
            if pending is not None:
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, ApiError, TransportError):
                    await pending

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[WatchEvent, None]:
        if self._limiter is not None:
            await self._limiter.acquire()
        query = dict(params)
        query["watch"] = "true"
        cred = await self._credential()
        try:
            for attempt in range(2):
                async with self._get_session().get(
                    self.host + path,
                    params=query,
                    headers=self._headers(cred),
                    timeout=self._timeout(),
                    proxy=self._proxy,
                    ssl=self._ssl(cred),
                    server_hostname=self._server_hostname,
                    allow_redirects=False,
                ) as resp:
                    if resp.status == 401 and attempt == 0 and (fresh := await self._refetch(cred)):
                        cred = fresh
                        continue
                    await self._raise_for_status(resp)
                    # Own line splitting: aiohttp's readline() refuses lines over 128 KiB, and one
                    # JSON event (a big ConfigMap or Node) can be far larger than that.
                    buf = bytearray()
                    async for chunk in resp.content.iter_chunked(_CHUNK_SIZE):
                        buf += chunk
                        start = 0
                        while True:
                            end = buf.find(b"\n", start)
                            if end < 0:
                                break
                            if end > start:
                                yield orjson.loads(buf[start:end])
                            start = end + 1
                        if start:
                            del buf[:start]
                    if buf.strip():
                        yield orjson.loads(buf)
                    return
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise TransportError(f"watch {path}: {exc!r}") from exc
        except orjson.JSONDecodeError as exc:
            raise TransportError(f"watch {path}: undecodable event: {exc}") from exc
