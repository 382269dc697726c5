"""A small aiohttp client for the benchmark's own traffic (pod creation, deletes, the binding watch).

Raw JSON bytes in, orjson out: the load generator shares two cores with the apiserver, etcd and the
scheduler under test, so it must cost as little as possible.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
import orjson


class ApiError(RuntimeError):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:300].decode('utf-8', 'replace')}")
        self.status = status


class BenchClient:
    def __init__(self, server: str, token: str, ca_file: str | Path, connections: int = 128) -> None:
        self.server = server.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._ssl = ssl.create_default_context(cafile=str(ca_file))
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> BenchClient:
        connector = aiohttp.TCPConnector(ssl=self._ssl, limit=self._connections)
        self._session = aiohttp.ClientSession(connector=connector, headers=self._headers)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("use BenchClient as an async context manager")
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        params: Mapping[str, str] | None = None,
        ok: tuple[int, ...] = (200, 201, 202),
    ) -> Any:
        headers = {"Content-Type": "application/json"} if body is not None else None
        async with self.session.request(
            method, self.server + path, data=body, params=params, headers=headers
        ) as resp:
            data = await resp.read()
            if resp.status not in ok:
                raise ApiError(resp.status, data)
            return orjson.loads(data) if data else None

    async def text(self, path: str) -> str:
        """GET ``path`` as text (the API server's /metrics); empty when it cannot be read."""
        async with self.session.get(self.server + path) as resp:
            return await resp.text() if resp.status == 200 else ""

    async def create_namespace(self, name: str) -> None:
        body = orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        await self.request("POST", "/api/v1/namespaces", body, ok=(201, 409))

    async def list(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Every item of a collection (paginated), with the last page's resourceVersion."""
        query = {"limit": "2000", **(params or {})}
        items: list[dict[str, Any]] = []
        while True:
            page = await self.request("GET", path, params=query)
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                meta = page.get("metadata") or {}
                return {"items": items, "resourceVersion": meta.get("resourceVersion", "")}
            query = {**query, "continue": token}

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[dict[str, Any]]:
        """Watch events as parsed dicts until the server ends the stream."""
        query = {**params, "watch": "true"}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with self.session.get(self.server + path, params=query, timeout=timeout) as resp:
            if resp.status != 200:
                raise ApiError(resp.status, await resp.read())
            buf = bytearray()
            async for chunk in resp.content.iter_any():
                buf += chunk
                start = 0
                while (end := buf.find(b"\n", start)) >= 0:
                    if end > start:
                        yield orjson.loads(buf[start:end])
                    start = end + 1
                del buf[:start]
