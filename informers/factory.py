"""InformerFactory: one shared informer per (resource, namespace, field selector, label selector)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType

from informers.backoff import BackoffPolicy
from informers.clock import REAL_CLOCK, Clock
from informers.informer import SharedInformer
from informers.objects import TransformFunc
from informers.reflector import DEFAULT_PAGE_SIZE, MIN_WATCH_TIMEOUT
from informers.resource import ResourceSpec
from informers.store import IndexFunc
from informers.transport import Transport


@dataclass(frozen=True, slots=True)
class InformerKey:
    spec: ResourceSpec
    namespace: str | None
    field_selector: str | None
    label_selector: str | None


class InformerFactory:
    """Hands out shared informers; ``start()`` starts every one created so far (call again after adding)."""

    def __init__(
        self,
        transport: Transport,
        *,
        namespace: str | None = None,
        resync_period: float | None = None,
        transform: TransformFunc | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        backoff_policy: BackoffPolicy | None = None,
        clock: Clock = REAL_CLOCK,
        rng: random.Random | None = None,
        served: Mapping[ResourceSpec, ResourceSpec] | None = None,
    ) -> None:
        self.transport = transport
        # The version the API server serves in place of a spec's own (discovery): informers are keyed by
        # the spec callers name, and list and watch the served one.
        self.served = dict(served or {})
        self.namespace = namespace
        self.resync_period = resync_period
        self.transform = transform
        self._page_size = page_size
        self._min_watch_timeout = min_watch_timeout
        self._backoff_policy = backoff_policy
        self._clock = clock
        self._rng = rng
        self._informers: dict[InformerKey, SharedInformer] = {}

    def informer_for(
        self,
        spec: ResourceSpec,
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
        namespace: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> SharedInformer:
        """The shared informer for this resource and selectors, created on first use.

        ``indexers`` not yet present on an existing informer are added to it.
        """
        key = InformerKey(
            spec, namespace if namespace is not None else self.namespace, field_selector, label_selector
        )
        informer = self._informers.get(key)
        if informer is None:
            informer = SharedInformer(
                self.transport,
                self.served.get(spec, spec),
                namespace=key.namespace,
                field_selector=field_selector,
                label_selector=label_selector,
                indexers=indexers,
                resync_period=self.resync_period,
                transform=self.transform,
                page_size=self._page_size,
                min_watch_timeout=self._min_watch_timeout,
                backoff_policy=self._backoff_policy,
                clock=self._clock,
                rng=random.Random(self._rng.random()) if self._rng is not None else None,
            )
            self._informers[key] = informer
        elif indexers:
            existing: set[str] = set(informer.store.index_names())
            missing = {name: fn for name, fn in indexers.items() if name not in existing}
            if missing:
                informer.add_indexers(missing)
        return informer

    @property
    def informers(self) -> dict[InformerKey, SharedInformer]:
        return dict(self._informers)

    def start(self) -> None:
        for informer in self._informers.values():
            informer.start()

    async def stop(self) -> None:
        await asyncio.gather(*(informer.stop() for informer in self._informers.values()))

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """True when every started informer has synced within ``timeout`` seconds."""
        started = [i for i in self._informers.values() if i.started]
        if not started:
            return True
        try:
            await asyncio.wait_for(asyncio.gather(*(i.wait_for_sync() for i in started)), timeout)
        except TimeoutError:
            return False
        return True

    async def wait_for_handlers_sync(self, timeout: float | None = None) -> bool:
        """True when every started informer has synced and delivered its first list to every handler."""
        started = [i for i in self._informers.values() if i.started]
        try:
            await asyncio.wait_for(asyncio.gather(*(i.wait_for_handlers_sync() for i in started)), timeout)
        except TimeoutError:
            return False
        return True

    def unsynced(self) -> list[SharedInformer]:
        return [i for i in self._informers.values() if not i.has_synced()]

    async def __aenter__(self) -> InformerFactory:
        self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
