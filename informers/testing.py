"""Test doubles: an in-memory API server that speaks the :class:`~informers.transport.Transport` protocol,
and a controllable clock. For unit tests here and in the packages that consume informers.

:class:`FakeApiServer` keeps resourceVersions, an event history (for watches that start in the past),
pagination with continue tokens, label/field selectors (``k=v``, ``k!=v``, comma-joined), compaction
(410 Gone for older resourceVersions), bookmarks, and fault injection for lists and watches.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from informers.errors import ApiError, TransportError
from informers.objects import KubeObject, meta_namespace_key
from informers.resource import ResourceSpec
from informers.transport import paginate

_END = object()


class FakeClock:
    """``auto_advance=True``: every sleep returns at once and moves time forward (backoff tests).
    Otherwise sleepers wait until :meth:`advance` moves time past their deadline (resync tests).
    """

    def __init__(self, start: float = 1000.0, *, auto_advance: bool = True) -> None:
        self.t = start
        self.auto_advance = auto_advance
        self.sleeps: list[float] = []
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.auto_advance:
            self.t += seconds
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.t + seconds, fut))
        await fut

    def advance(self, seconds: float) -> None:
        self.t += seconds
        due = [(d, f) for d, f in self._sleepers if d <= self.t]
        self._sleepers = [(d, f) for d, f in self._sleepers if d > self.t]
        for _, fut in due:
            if not fut.done():
                fut.set_result(None)

    @property
    def waiting(self) -> int:
        return sum(1 for _, f in self._sleepers if not f.done())


def _lookup(obj: Mapping[str, Any], dotted: str) -> str:
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    return "" if cur is None else str(cur)


def _selector_matches(selector: str | None, obj: KubeObject, *, labels: bool) -> bool:
    if not selector:
        return True
    for raw in selector.split(","):
        term = raw.strip()
        if not term:
            continue
        negate = "!=" in term
        key, _, want = term.partition("!=" if negate else "=")
        want = want.lstrip("=")
        key = key.strip()
        if labels:
            have = ((obj.get("metadata") or {}).get("labels") or {}).get(key)
            have = "" if have is None else str(have)
        else:
            have = _lookup(obj, key)
        if (have == want) == negate:
            return False
    return True


@dataclass(slots=True)
class _Collection:
    spec: ResourceSpec
    objects: dict[str, KubeObject] = field(default_factory=dict)


@dataclass(slots=True)
class _Change:
    rv: int
    collection: str
    type: str
    old: KubeObject | None
    new: KubeObject


@dataclass(slots=True, eq=False)
class _Watcher:
    collection: str
    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)


class FakeApiServer:
    """An in-memory API server for any number of resources; use it as the informer's transport."""

    def __init__(self, *, gone_as_event: bool = True) -> None:
        self.rv = 1
        self.compacted_rv = 0
        # Like the real server, a watch from a compacted resourceVersion normally answers 200 and then
        # an ERROR event carrying a 410 Status; False answers with an HTTP 410 instead.
        self.gone_as_event = gone_as_event
        self._collections: dict[str, _Collection] = {}
        self._history: list[_Change] = []
        self._watchers: set[_Watcher] = set()
        self._uids = itertools.count(1)
        self.list_failures: deque[BaseException] = deque()
        self.watch_failures: deque[BaseException] = deque()
        self.list_calls: list[tuple[str, dict[str, str]]] = []
        self.watch_calls: list[tuple[str, dict[str, str]]] = []
        self.watch_opened = asyncio.Event()

    # -- server-side state changes -----------------------------------------------------------------

    def _collection(self, spec: ResourceSpec) -> _Collection:
        name = spec.path()
        coll = self._collections.get(name)
        if coll is None:
            coll = self._collections[name] = _Collection(spec)
        return coll

    def _record(self, spec: ResourceSpec, etype: str, old: KubeObject | None, new: KubeObject) -> None:
        change = _Change(self.rv, spec.path(), etype, old, new)
        self._history.append(change)
        for watcher in list(self._watchers):
            event = self._event_for(watcher, change)
            if event is not None:
                watcher.queue.put_nowait(event)

    def _bump(self, obj: KubeObject) -> KubeObject:
        self.rv += 1
        obj = dict(obj)
        obj["metadata"] = dict(obj.get("metadata") or {})
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return obj

    def create(self, spec: ResourceSpec, obj: KubeObject) -> KubeObject:
        coll = self._collection(spec)
        key = meta_namespace_key(obj)
        if key in coll.objects:
            raise ApiError(409, "AlreadyExists", key)
        obj = self._bump(obj)
        obj.setdefault("kind", spec.kind)
        obj.setdefault("apiVersion", spec.api_version)
        obj["metadata"].setdefault("uid", f"uid-{next(self._uids)}")
        coll.objects[key] = obj
        self._record(spec, "ADDED", None, obj)
        return obj

    def update(self, spec: ResourceSpec, obj: KubeObject) -> KubeObject:
        coll = self._collection(spec)
        key = meta_namespace_key(obj)
        old = coll.objects.get(key)
        if old is None:
            raise ApiError(404, "NotFound", key)
        obj = self._bump(obj)
        obj["metadata"]["uid"] = old["metadata"]["uid"]
        coll.objects[key] = obj
        self._record(spec, "MODIFIED", old, obj)
        return obj

    def delete(self, spec: ResourceSpec, key: str) -> KubeObject:
        coll = self._collection(spec)
        old = coll.objects.pop(key, None)
        if old is None:
            raise ApiError(404, "NotFound", key)
        final = self._bump(old)
        self._record(spec, "DELETED", old, final)
        return final

    def get(self, spec: ResourceSpec, key: str) -> KubeObject | None:
        return self._collection(spec).objects.get(key)

    def objects(self, spec: ResourceSpec) -> dict[str, KubeObject]:
        return dict(self._collection(spec).objects)

    def compact(self, rv: int | None = None) -> None:
        """Forget history up to ``rv`` (default: now). Older resourceVersions then get 410 Gone."""
        self.compacted_rv = self.rv if rv is None else rv
        self._history = [c for c in self._history if c.rv > self.compacted_rv]

    def bookmark(self) -> None:
        """Send every open watch a BOOKMARK at the current resourceVersion."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": str(self.rv)}}}
            )

    def disconnect(self, error: BaseException | None = None) -> None:
        """End every open watch: cleanly, or by raising ``error`` in the reader."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(error if error is not None else _END)

    def send_error(self, status: int, reason: str, message: str = "") -> None:
        """An in-stream ERROR event on every open watch (the server ends the stream after it)."""
        status_obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": status,
            "reason": reason,
        }
        status_obj["message"] = message
        for watcher in self._watchers:
            watcher.queue.put_nowait({"type": "ERROR", "object": status_obj})
            watcher.queue.put_nowait(_END)

    @property
    def open_watches(self) -> int:
        return len(self._watchers)

    # -- Transport protocol ------------------------------------------------------------------------

    def _resolve(self, path: str) -> tuple[str, str | None]:
        parts = path.strip("/").split("/")
        # api/v1[/namespaces/ns]/plural or apis/g/v[/namespaces/ns]/plural
        prefix_len = 2 if parts[0] == "api" else 3
        prefix, rest = parts[:prefix_len], parts[prefix_len:]
        namespace = None
        if len(rest) == 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        collection = "/" + "/".join([*prefix, *rest])
        if collection not in self._collections:
            raise ApiError(404, "NotFound", f"no resource at {path}")
        return collection, namespace

    @staticmethod
    def _matches(obj: KubeObject, namespace: str | None, ls: str | None, fs: str | None) -> bool:
        if namespace and (obj.get("metadata") or {}).get("namespace") != namespace:
            return False
        return _selector_matches(ls, obj, labels=True) and _selector_matches(fs, obj, labels=False)

    def _event_for(self, watcher: _Watcher, change: _Change) -> dict[str, Any] | None:
        if change.collection != watcher.collection:
            return None
        ns, ls, fs = watcher.namespace, watcher.label_selector, watcher.field_selector
        new_in = change.type != "DELETED" and self._matches(change.new, ns, ls, fs)
        old_in = change.old is not None and self._matches(change.old, ns, ls, fs)
        if change.type == "DELETED":
            return {"type": "DELETED", "object": change.new} if old_in else None
        if new_in and old_in:
            return {"type": "MODIFIED", "object": change.new}
        if new_in:
            return {"type": "ADDED", "object": change.new}
        if old_in:  # moved out of the selector: watchers see a delete
            return {"type": "DELETED", "object": change.new}
        return None

    async def list(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        self.list_calls.append((path, dict(params)))
        await asyncio.sleep(0)
        if self.list_failures:
            raise self.list_failures.popleft()
        collection, namespace = self._resolve(path)
        token = params.get("continue")
        if token:
            snap_rv, offset = (int(x) for x in token.split(":"))
            if snap_rv < self.compacted_rv:
                raise ApiError(410, "Expired", "The provided continue parameter is too old")
        else:
            snap_rv, offset = self.rv, 0
        coll = self._collections[collection]
        # The snapshot is "now", not snap_rv; fine for tests that do not mutate between pages.
        ls, fs = params.get("labelSelector"), params.get("fieldSelector")
        items = [o for _, o in sorted(coll.objects.items()) if self._matches(o, namespace, ls, fs)]
        limit = int(params.get("limit", "0") or 0)
        meta: dict[str, Any] = {"resourceVersion": str(snap_rv)}
        if limit and offset + limit < len(items):
            meta["continue"] = f"{snap_rv}:{offset + limit}"
            page = items[offset : offset + limit]
        else:
            page = items[offset:]
        spec = coll.spec
        return {
            "kind": f"{spec.kind}List",
            "apiVersion": spec.api_version,
            "metadata": meta,
            "items": [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in page],
        }

    def list_pages(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[dict[str, Any], None]:
        return paginate(self.list, path, params)

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[dict[str, Any], None]:
        self.watch_calls.append((path, dict(params)))
        await asyncio.sleep(0)
        if self.watch_failures:
            raise self.watch_failures.popleft()
        collection, namespace = self._resolve(path)
        watcher = _Watcher(collection, namespace, params.get("labelSelector"), params.get("fieldSelector"))
        start_rv = int(params.get("resourceVersion") or self.rv)
        if start_rv < self.compacted_rv:
            if not self.gone_as_event:
                raise ApiError(410, "Expired", f"too old resource version: {start_rv} ({self.compacted_rv})")
            watcher.queue.put_nowait(
                {
                    "type": "ERROR",
                    "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
                }
            )
            watcher.queue.put_nowait(_END)
        else:
            for change in self._history:
                if change.rv > start_rv:
                    event = self._event_for(watcher, change)
                    if event is not None:
                        watcher.queue.put_nowait(event)
        self._watchers.add(watcher)
        self.watch_opened.set()
        try:
            while True:
                item = await watcher.queue.get()
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self._watchers.discard(watcher)


def make_pod(
    name: str,
    namespace: str = "default",
    *,
    node: str = "",
    labels: dict[str, str] | None = None,
    phase: str = "Pending",
) -> KubeObject:
    pod: KubeObject = {
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": {"containers": [{"name": "c", "image": "pause"}]},
        "status": {"phase": phase},
    }
    if node:
        pod["spec"]["nodeName"] = node
    return pod


def connection_refused() -> TransportError:
    return TransportError("connection refused (fake)")


async def eventually(predicate: Callable[[], bool], timeout: float = 5.0, interval: float = 0.001) -> None:
    """Wait until ``predicate()`` holds, or raise ``TimeoutError`` after ``timeout`` seconds."""

    async def poll() -> None:
        # Polling, not an Event: the conditions tests wait on span several objects with no common signal.
        while not predicate():  # noqa: ASYNC110
            await asyncio.sleep(interval)

    await asyncio.wait_for(poll(), timeout)


async def create_all(
    transport: Any, path: str, bodies: list[KubeObject], *, concurrency: int = 32
) -> list[KubeObject]:
    """POST every body to ``path`` with bounded concurrency (an ``AsyncTransport``); the created objects."""
    results: list[KubeObject] = [{} for _ in bodies]
    todo = iter(enumerate(bodies))

    async def worker() -> None:
        for i, body in todo:
            results[i] = await transport.request("POST", path, body=body)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(bodies))))))
    return results
