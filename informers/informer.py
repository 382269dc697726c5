"""SharedInformer: one reflector feeding one indexed store, fanned out to any number of handlers.

Everything here runs on one asyncio event loop. The reflector calls :meth:`SharedInformer.apply` and
:meth:`SharedInformer.replace` in line: the store is updated first, then a notification is appended to
each handler's queue. So a handler never sees an event before the store reflects it ("store first"),
and no handler can block the watch: each drains its own queue in its own task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Mapping
from types import TracebackType

from informers.backoff import BackoffPolicy
from informers.clock import REAL_CLOCK, Clock
from informers.handlers import (
    AddFunc,
    DeleteFunc,
    FilterFunc,
    HandlerRegistration,
    Listener,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
    UpdateFunc,
)
from informers.objects import DeletedFinalStateUnknown, KubeObject, TransformFunc, uid
from informers.objects import resource_version as rv_of
from informers.reflector import DEFAULT_PAGE_SIZE, DELETED, MIN_WATCH_TIMEOUT, Reflector
from informers.resource import ResourceSpec
from informers.store import NAMESPACE_INDEX, Indexer, IndexFunc, index_by_namespace
from informers.transport import Transport

logger = logging.getLogger(__name__)


class SharedInformer:
    """Keeps :attr:`store` equal to the server's state of one resource and tells handlers what changed.

    Relists (after 410 Gone) are reconciled against the store: objects that vanished are delivered as
    deletes of :class:`DeletedFinalStateUnknown`, new ones as adds, changed ones as updates (an object
    recreated under the same name, i.e. with a new uid, as a delete then an add). Unchanged objects are
    not re-delivered on relist; the periodic resync, if enabled, re-delivers every object as an
    ``on_update(obj, obj)`` like client-go.

    ``transform`` (e.g. :func:`~informers.objects.strip_managed_fields`) is applied to each object
    before it is stored or delivered.
    """

    def __init__(
        self,
        transport: Transport,
        spec: ResourceSpec,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        resync_period: float | None = None,
        transform: TransformFunc | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        backoff_policy: BackoffPolicy | None = None,
        clock: Clock = REAL_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        self.spec = spec
        self.namespace = namespace
        self.field_selector = field_selector
        self.label_selector = label_selector
        all_indexers: dict[str, IndexFunc] = {}
        if spec.namespaced:
            all_indexers[NAMESPACE_INDEX] = index_by_namespace
        all_indexers.update(indexers or {})
        self.store = Indexer(indexers=all_indexers)
        self.resync_period = resync_period
        self._transform = transform
        self._clock = clock
        self._reflector = Reflector(
            transport,
            spec,
            self,
            namespace=namespace,
            field_selector=field_selector,
            label_selector=label_selector,
            page_size=page_size,
            min_watch_timeout=min_watch_timeout,
            backoff_policy=backoff_policy,
            clock=clock,
            rng=rng,
        )
        self._listeners: list[Listener] = []
        self._synced = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False

    def __repr__(self) -> str:
        parts = [self.spec.name]
        if self.namespace:
            parts.append(f"namespace={self.namespace}")
        if self.field_selector:
            parts.append(f"fields={self.field_selector}")
        if self.label_selector:
            parts.append(f"labels={self.label_selector}")
        return f"SharedInformer({', '.join(parts)})"

    # -- handlers ----------------------------------------------------------------------------------

    def add_event_handler(
        self,
        handler: ResourceEventHandler | ResourceEventHandlerFuncs | None = None,
        *,
        on_add: AddFunc | None = None,
        on_update: UpdateFunc | None = None,
        on_delete: DeleteFunc | None = None,
        filter_func: FilterFunc | None = None,
        name: str = "",
    ) -> HandlerRegistration:
        """Register a handler object, or loose ``on_add``/``on_update``/``on_delete`` functions.

        ``filter_func`` (quick, synchronous, no I/O) narrows what the handler sees; an update that moves
        an object out of the filter arrives as a delete, into it as an add. A handler registered after
        the informer synced first receives every stored object as ``on_add(obj, True)``.
        """
        if handler is None:
            handler = ResourceEventHandlerFuncs(on_add, on_update, on_delete)
        elif on_add or on_update or on_delete:
            raise TypeError("pass either a handler or on_* functions, not both")
        listener = Listener(handler, resource=self.spec.name, filter_func=filter_func, name=name)
        if self._synced.is_set():
            for obj in self.store.list():
                listener.add(obj, True)
            listener.mark_synced()
        self._listeners.append(listener)
        if self._started:
            listener.start()
        return HandlerRegistration(listener)

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        listener = registration._listener
        if listener in self._listeners:
            self._listeners.remove(listener)
            task = listener._task
            if task is not None:
                task.cancel()

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.store.add_indexers(indexers)

    # -- state -------------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the first LIST is in the store (handlers may still be working through it)."""
        return self._synced.is_set()

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def handlers_synced(self) -> bool:
        """True once synced and every handler has been given every object of the first list."""
        return self._synced.is_set() and all(listener.has_synced() for listener in self._listeners)

    async def wait_for_handlers_sync(self, timeout: float | None = None) -> bool:
        """Waits for the first list to reach every handler (client-go's handler HasSynced; upstream's
        readiness check ``sched-handler-sync``): until then a cache fed by a handler is incomplete."""
        try:
            await asyncio.wait_for(self._wait_handlers(), timeout)
        except TimeoutError:
            return False
        return True

    async def _wait_handlers(self) -> None:
        await self._synced.wait()
        for listener in list(self._listeners):
            await listener.wait_synced()

    @property
    def last_sync_resource_version(self) -> str:
        return self._reflector.last_sync_resource_version

    @property
    def reflector(self) -> Reflector:
        return self._reflector

    @property
    def started(self) -> bool:
        return self._started

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start listing and watching on the running loop. Idempotent."""
        if self._started:
            return
        self._started = True
        loop = asyncio.get_running_loop()
        for listener in self._listeners:
            listener.start()
        self._tasks.append(loop.create_task(self._run_reflector(), name=f"informer:{self.spec.name}"))
        if self.resync_period:
            self._tasks.append(
                loop.create_task(self._resync_loop(), name=f"informer-resync:{self.spec.name}")
            )

    async def stop(self) -> None:
        """Stop the watch and the handler tasks, promptly even mid-stream. Queued events are dropped."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for listener in self._listeners:
            await listener.stop()
        self._started = False

    async def __aenter__(self) -> SharedInformer:
        self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def _run_reflector(self) -> None:
        try:
            await self._reflector.run()
        except asyncio.CancelledError:
            raise
        except Exception:  # the reflector handles its own errors; this would be a bug
            logger.exception("%r: reflector died", self)
            raise

    async def _resync_loop(self) -> None:
        assert self.resync_period
        while True:
            await self._clock.sleep(self.resync_period)
            if self._synced.is_set():
                self.resync()

    def resync(self) -> None:
        """Deliver every stored object to every handler as ``on_update(obj, obj)``."""
        listeners = self._listeners
        for obj in self.store.list():
            for listener in listeners:
                listener.update(obj, obj)

    # -- ReflectorSink: called in line by the reflector, on the watch path -------------------------

    def apply(self, event_type: str, obj: KubeObject) -> None:
        if self._transform is not None:
            obj = self._transform(obj)
        store = self.store
        if event_type == DELETED:
            store.delete(store.key_of(obj))
            for listener in self._listeners:
                listener.delete(obj)
            return
        old = store.upsert(obj)
        if old is None:
            for listener in self._listeners:
                listener.add(obj, False)
        else:
            for listener in self._listeners:
                listener.update(old, obj)

    def replace(self, items: list[KubeObject], resource_version: str) -> None:
        store = self.store
        key_of = store.key_of
        if self._transform is not None:
            items = [self._transform(obj) for obj in items]
        new = {key_of(obj): obj for obj in items}
        old = store.replace(new)
        listeners = self._listeners
        initial = not self._synced.is_set()
        if not old:  # the first list (or an empty store): all adds, in bulk
            objs = new.values()
            for listener in listeners:
                listener.add_all(objs, initial)
        else:
            self._reconcile(old, new, initial)
        if initial:
            for listener in listeners:
                listener.mark_synced()
            self._synced.set()

    def _reconcile(self, old: dict[str, KubeObject], new: dict[str, KubeObject], initial: bool) -> None:
        """Deliver the difference between the store before and after a relist."""
        listeners = self._listeners
        for key, gone in old.items():
            if key not in new:
                tombstone = DeletedFinalStateUnknown(key, gone)
                for listener in listeners:
                    listener.delete(tombstone)
        for key, obj in new.items():
            prev = old.get(key)
            if prev is None:
                for listener in listeners:
                    listener.add(obj, initial)
            elif uid(prev) != uid(obj):
                tombstone = DeletedFinalStateUnknown(key, prev)
                for listener in listeners:
                    listener.delete(tombstone)
                    listener.add(obj, initial)
            elif rv_of(prev) != rv_of(obj):
                for listener in listeners:
                    listener.update(prev, obj)
