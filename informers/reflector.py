"""The Reflector: paginated LIST, then WATCH from that resourceVersion, forever, surviving faults.

Fault handling, after client-go's ``tools/cache.Reflector``:

* the watch ends cleanly (server ``timeoutSeconds``, randomised 5-10 min): re-watch at once from the
  last resourceVersion seen (BOOKMARKs advance it too);
* connection refused/reset, client read timeout, 429, 5xx, any other error: jittered exponential
  backoff, then re-watch from the last resourceVersion; a 429 or 5xx that says Retry-After waits
  that long instead, up to ten times in a row (client-go's request-layer retries);
* 410 Gone (HTTP, or an ERROR event in the stream) or a too-large resourceVersion: relist and let the
  sink reconcile its store with the fresh list;
* a LIST failure: backoff, then LIST again.

Cancelling :meth:`Reflector.run` stops it at once, even mid-stream.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from contextlib import aclosing
from typing import Any, Protocol

from informers import metrics
from informers.backoff import Backoff, BackoffPolicy
from informers.clock import REAL_CLOCK, Clock
from informers.errors import RETRY_AFTER_MAX_RETRIES, ApiError, TransportError
from informers.objects import KubeObject
from informers.resource import ResourceSpec
from informers.transport import Transport

logger = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"

DEFAULT_PAGE_SIZE = 500  # client-go's pager.PageSize
MIN_WATCH_TIMEOUT = 300.0  # client-go's minWatchTimeout; the actual timeout is uniform in [min, 2*min)
# A watch that closes cleanly this fast without a single event is treated as an error, so a server
# that keeps closing watches at once gets backoff instead of a hot loop (client-go does the same).
SHORT_WATCH = 1.0
# After RETRY_AFTER_MAX_RETRIES Retry-After waits in a row the reflector's own backoff applies (client-go's
# request layer, then its reflector). A Retry-After beyond a minute is capped (the backoff's own ceiling).
MAX_RETRY_AFTER_SECONDS = 60.0
# After this many 410s on continue tokens in a row, list in one unpaginated request.
_MAX_PAGED_RESTARTS = 2


class ReflectorSink(Protocol):
    """Where the reflector puts what it learns (the informer: store, then handlers)."""

    def replace(self, items: list[KubeObject], resource_version: str) -> None:
        """The complete current state, from a LIST."""
        ...

    def apply(self, event_type: str, obj: KubeObject) -> None:
        """One ADDED, MODIFIED or DELETED watch event."""
        ...


class _RelistError(Exception):
    def __init__(self, reason: str, cause: BaseException) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cause = cause


class Reflector:
    def __init__(
        self,
        transport: Transport,
        spec: ResourceSpec,
        sink: ReflectorSink,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        backoff_policy: BackoffPolicy | None = None,
        clock: Clock = REAL_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        self._transport = transport
        self.spec = spec
        self._sink = sink
        self._path = spec.path(namespace)
        self._selectors: dict[str, str] = {}
        if field_selector:
            self._selectors["fieldSelector"] = field_selector
        if label_selector:
            self._selectors["labelSelector"] = label_selector
        self._page_size = page_size
        self._min_watch_timeout = min_watch_timeout
        self._clock = clock
        self._rng = rng or random.Random()
        self.backoff = Backoff(backoff_policy, clock=clock, rng=self._rng)
        # Consecutive waits the server asked for with Retry-After (see _delay_after).
        self._retry_after_streak = 0
        self.last_sync_resource_version = ""
        resource = spec.name
        self._resource = resource
        self._m_lists = metrics.LISTS.labels(resource)
        self._m_pages = metrics.LIST_PAGES.labels(resource)
        self._m_watches = metrics.WATCHES.labels(resource)
        self._m_events = {
            t: metrics.EVENTS.child(resource, t) for t in (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR)
        }

    @property
    def path(self) -> str:
        return self._path

    def watch_timeout_seconds(self) -> int:
        """Random in [min, 2*min) so watches of many clients do not all expire together."""
        return int(self._min_watch_timeout * (self._rng.random() + 1.0))

    async def run(self) -> None:
        """List, then watch; never returns normally. Cancel the task to stop."""
        need_list = True
        while True:
            if need_list:
                try:
                    await self.list_once()
                except (ApiError, TransportError) as exc:
                    delay = self._delay_after(exc)
                    logger.warning(
                        "informer %s: list failed (%s); retrying in %.1fs", self._resource, exc, delay
                    )
                    await self._clock.sleep(delay)
                    continue
                except Exception:
                    delay = self.backoff.next_delay()
                    logger.exception(
                        "informer %s: applying list failed; retrying in %.1fs", self._resource, delay
                    )
                    await self._clock.sleep(delay)
                    continue
                need_list = False
                self._retry_after_streak = 0
            try:
                events, elapsed = await self.watch_once()
            except _RelistError as relist:
                metrics.RELISTS.labels(self._resource, relist.reason).inc()
                logger.info("informer %s: relisting (%s: %s)", self._resource, relist.reason, relist.cause)
                need_list = True
                continue
            except (ApiError, TransportError) as exc:
                reason = _error_reason(exc)
                metrics.WATCH_ERRORS.labels(self._resource, reason).inc()
                delay = self._delay_after(exc)
                logger.warning(
                    "informer %s: watch from rv %s failed (%s); retrying in %.1fs",
                    self._resource,
                    self.last_sync_resource_version,
                    exc,
                    delay,
                )
                await self._clock.sleep(delay)
                continue
            except Exception:
                # A malformed event or a store bug: the store can no longer be trusted, so relist.
                metrics.RELISTS.labels(self._resource, "error").inc()
                delay = self.backoff.next_delay()
                logger.exception(
                    "informer %s: handling a watch event failed; relisting in %.1fs", self._resource, delay
                )
                await self._clock.sleep(delay)
                need_list = True
                continue
            self._retry_after_streak = 0
            if events == 0 and elapsed < SHORT_WATCH:
                metrics.WATCH_ERRORS.labels(self._resource, "short_watch").inc()
                delay = self.backoff.next_delay()
                logger.warning(
                    "informer %s: watch closed after %.2fs with no events; retrying in %.1fs",
                    self._resource,
                    elapsed,
                    delay,
                )
                await self._clock.sleep(delay)

    def _delay_after(self, exc: Exception) -> float:
        """The wait before the next try: the server's Retry-After on a 429 or 5xx, as client-go's
        request layer honours it (up to ``RETRY_AFTER_MAX_RETRIES`` times in a row), else the backoff."""
        if (
            isinstance(exc, ApiError)
            and exc.retry_after is not None
            and (exc.status == 429 or exc.status >= 500)
            and self._retry_after_streak < RETRY_AFTER_MAX_RETRIES
        ):
            self._retry_after_streak += 1
            return min(exc.retry_after, MAX_RETRY_AFTER_SECONDS)
        self._retry_after_streak = 0
        return self.backoff.next_delay()

    async def list_once(self) -> str:
        """One complete (paginated) LIST handed to the sink; returns its resourceVersion.

        Lists with resourceVersion unset: a consistent read, so a relist never goes back in time.
        """
        self._m_lists.inc()
        params = dict(self._selectors)
        if self._page_size > 0:
            params["limit"] = str(self._page_size)
        restarts = 0
        while True:
            items: list[KubeObject] = []
            last: dict[str, Any] = {}
            try:
                async with aclosing(self._transport.list_pages(self._path, params)) as pages:
                    async for page in pages:
                        self._m_pages.inc()
                        page_items = page.get("items") or []
                        if not isinstance(page_items, list):
                            raise ApiError(500, "InvalidList", f"items is {type(page_items).__name__}")
                        # Done per page, while the next page is still on its way.
                        _fill_type_meta(page_items, page)
                        items.extend(page_items)
                        last = page
            except ApiError as exc:
                # A list without resourceVersion cannot be too old; a 410 here means a continue token
                # outlived its snapshot (compaction). Start over; list in one piece if it keeps happening.
                if not exc.is_gone or restarts >= _MAX_PAGED_RESTARTS:
                    raise
                restarts += 1
                logger.info("informer %s: list continue token expired; restarting list", self._resource)
                if restarts >= _MAX_PAGED_RESTARTS:
                    params.pop("limit", None)
                continue
            break
        rv = str((last.get("metadata") or {}).get("resourceVersion") or "")
        self._sink.replace(items, rv)
        self.last_sync_resource_version = rv
        return rv

    async def watch_once(self) -> tuple[int, float]:
        """One WATCH from the last resourceVersion until the server closes it.

        Returns (events received, seconds). Raises ``_RelistError`` when only a relist can recover.
        """
        params = dict(self._selectors)
        params["resourceVersion"] = self.last_sync_resource_version
        params["allowWatchBookmarks"] = "true"
        params["timeoutSeconds"] = str(self.watch_timeout_seconds())
        self._m_watches.inc()
        start = self._clock.now()
        count = 0
        sink = self._sink
        events = self._m_events
        try:
            async with aclosing(self._transport.watch(self._path, params)) as stream:
                async for event in stream:
                    count += 1
                    etype: str = event.get("type") or ""
                    obj = event.get("object")
                    counter = events.get(etype)
                    if counter is not None:
                        counter.inc()
                    if etype == ERROR:
                        raise ApiError.from_status(obj)
                    if not isinstance(obj, dict):
                        raise TransportError(f"watch event without an object: {event!r:.200}")
                    if etype != BOOKMARK:
                        if counter is None:
                            logger.warning("informer %s: ignoring watch event type %r", self._resource, etype)
                            continue
                        sink.apply(etype, obj)
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self.last_sync_resource_version = rv
        except ApiError as exc:
            if exc.is_gone:
                raise _RelistError(metrics.RELIST_EXPIRED, exc) from exc
            if exc.is_too_large_resource_version:
                raise _RelistError(metrics.RELIST_TOO_LARGE_RV, exc) from exc
            raise
        return count, self._clock.now() - start


def _fill_type_meta(items: list[KubeObject], page: Mapping[str, Any]) -> None:
    """List items come without kind/apiVersion; watch objects have them. Make both look alike."""
    list_kind = page.get("kind")
    api_version = page.get("apiVersion")
    if not isinstance(list_kind, str) or not list_kind.endswith("List") or not isinstance(api_version, str):
        return
    kind = list_kind[: -len("List")]
    for item in items:
        if "kind" not in item:
            item["kind"] = kind
            item["apiVersion"] = api_version


def _error_reason(exc: Exception) -> str:
    if isinstance(exc, TransportError):
        return "connection"
    if isinstance(exc, ApiError):
        if exc.status == 429:
            return "too_many_requests"
        if exc.status >= 500:
            return "server_error"
        return f"http_{exc.status}"
    return "other"
