"""Event handler shapes and the per-handler ordered delivery queue (client-go's processorListener).

Handlers may be plain functions or coroutine functions; both run on the event loop. A synchronous
handler must be quick (microseconds to a millisecond): it runs between watch events on the same loop.
Anything slow belongs in a coroutine (it is awaited in its own listener task, so only that handler's
queue waits) or in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, Protocol

from informers import metrics
from informers.objects import DeletedFinalStateUnknown, KubeObject

logger = logging.getLogger(__name__)

HandlerResult = Awaitable[None] | None
AddFunc = Callable[[KubeObject, bool], HandlerResult]
UpdateFunc = Callable[[KubeObject, KubeObject], HandlerResult]
DeleteFunc = Callable[[KubeObject | DeletedFinalStateUnknown], HandlerResult]
FilterFunc = Callable[[KubeObject], bool]


class ResourceEventHandler(Protocol):
    def on_add(self, obj: KubeObject, is_initial_list: bool) -> HandlerResult: ...

    def on_update(self, old: KubeObject, new: KubeObject) -> HandlerResult: ...

    def on_delete(self, obj: KubeObject | DeletedFinalStateUnknown) -> HandlerResult: ...


@dataclass(slots=True)
class ResourceEventHandlerFuncs:
    """A handler from loose functions; any of them may be left out."""

    on_add: AddFunc | None = None
    on_update: UpdateFunc | None = None
    on_delete: DeleteFunc | None = None


ADD, UPDATE, DELETE = 0, 1, 2
Notification = tuple[int, Any, Any]

# A listener working through a backlog with synchronous handlers yields the loop this often,
# so the watch keeps reading while, say, 10,000 initial adds are delivered.
_YIELD_EVERY = 64
# At most one logged traceback per listener per this many seconds; the rest are counted.
_LOG_INTERVAL = 1.0


class Listener:
    """One handler's ordered queue and the task that drains it.

    Events are filtered at enqueue time with client-go's FilteringResourceEventHandler rules: an update
    whose object leaves the filter becomes a delete, one that enters it becomes an add.
    """

    def __init__(
        self,
        handler: ResourceEventHandler | ResourceEventHandlerFuncs,
        *,
        resource: str,
        filter_func: FilterFunc | None = None,
        name: str = "",
    ) -> None:
        self.name = name or _describe(handler)
        self._on_add: AddFunc | None = getattr(handler, "on_add", None)
        self._on_update: UpdateFunc | None = getattr(handler, "on_update", None)
        self._on_delete: DeleteFunc | None = getattr(handler, "on_delete", None)
        # Which notification kinds (ADD, UPDATE, DELETE) have a function to call. The others are not
        # queued at all: a delete-only handler on the pod informer would otherwise wake its task for
        # every pod add and update just to drop them.
        self._wanted = (self._on_add is not None, self._on_update is not None, self._on_delete is not None)
        # A listener whose functions are all plain (not coroutine functions) is called in line by
        # the informer when it is idle, its queue empty and not stopped: the event then reaches the
        # handler as the task would have delivered it next, without a task wake-up (a future and a
        # loop pass) per watch event. ``_in_line`` counts such calls since the task last ran, so a
        # burst still yields the loop every _YIELD_EVERY events (the excess goes through the task).
        self._sync_handlers = not any(
            fn is not None and inspect.iscoroutinefunction(fn)
            for fn in (self._on_add, self._on_update, self._on_delete)
        )
        self._in_line = 0
        # An awaitable an in-line call returned (a plain function may still return one): the task
        # awaits it before anything queued after it.
        self._returned: Awaitable[None] | None = None
        self._filter = filter_func
        self._resource = resource
        self._queue: deque[Notification] = deque()
        self._wakeup = asyncio.Event()
        self._idle = False
        self._enqueued = 0
        self._processed = 0
        self._sync_target: int | None = None
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._errors = metrics.HANDLER_ERRORS.labels(resource)
        self._last_log = -_LOG_INTERVAL
        self._suppressed = 0
        self.errors = 0

    # -- enqueue side (called in line from the informer, on the watch path) -----------------------

    def _passes(self, obj: KubeObject) -> bool:
        assert self._filter is not None
        try:
            return bool(self._filter(obj))
        except Exception:
            self._record_error("filter")
            return False

    def _push(self, note: Notification) -> None:
        if not self._wanted[note[0]]:
            return
        self._enqueued += 1
        if self._idle and self._sync_handlers and self._in_line < _YIELD_EVERY:
            self._deliver_in_line(note)
            return
        self._queue.append(note)
        if self._idle:
            self._idle = False
            self._wakeup.set()

    def _deliver_in_line(self, note: Notification) -> None:
        """Run the handler now, in the informer's call. The listener is not idle meanwhile, so an
        event the handler itself causes (re-entrantly) is queued behind this one, for the task."""
        self._idle = False
        self._in_line += 1
        result = self._call(note)
        if result is not None:
            self._returned = result  # delivered once the task has awaited it
        else:
            self._delivered()
        if self._queue or self._returned is not None:
            self._wakeup.set()
        else:
            self._idle = True

    def add(self, obj: KubeObject, is_initial_list: bool) -> None:
        if self._filter is None or self._passes(obj):
            self._push((ADD, obj, is_initial_list))

    def add_all(self, objs: Collection[KubeObject], is_initial_list: bool) -> None:
        """``add`` for many objects at once (a list's worth), without a call per object."""
        if self._filter is not None:
            for obj in objs:
                self.add(obj, is_initial_list)
            return
        if objs and self._wanted[ADD]:
            self._queue.extend([(ADD, obj, is_initial_list) for obj in objs])
            self._enqueued += len(objs)
            if self._idle:
                self._idle = False
                self._wakeup.set()

    def update(self, old: KubeObject, new: KubeObject) -> None:
        if self._filter is None:
            self._push((UPDATE, old, new))
            return
        was, now = self._passes(old), self._passes(new)
        if was and now:
            self._push((UPDATE, old, new))
        elif was:
            self._push((DELETE, old, None))
        elif now:
            self._push((ADD, new, False))

    def delete(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        if self._filter is not None:
            inner = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if not self._passes(inner):
                return
        self._push((DELETE, obj, None))

    def mark_synced(self) -> None:
        """Everything enqueued so far belongs to the initial list; synced once it is delivered."""
        if self._sync_target is None:
            self._sync_target = self._enqueued
            self._check_synced()

    # -- delivery side -----------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        return len(self._queue)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self, timeout: float | None = None) -> bool:
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _check_synced(self) -> None:
        if self._sync_target is not None and self._processed >= self._sync_target:
            self._synced.set()

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"informer-handler:{self.name}"
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        # Not idle once stopped: events are queued again (and not delivered) as before start().
        self._idle = False
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        queue = self._queue
        since_yield = 0
        while True:
            self._in_line = 0
            returned, self._returned = self._returned, None
            if returned is not None:
                await self._await_result(returned)
                self._delivered()
                since_yield = 0
            if not queue:
                self._idle = True
                self._wakeup.clear()
                await self._wakeup.wait()
                since_yield = 0
                continue
            result = self._call(queue.popleft())
            if result is not None:
                await self._await_result(result)
                since_yield = 0
            self._delivered()
            since_yield += 1
            if since_yield >= _YIELD_EVERY:
                since_yield = 0
                await asyncio.sleep(0)

    def _call(self, note: Notification) -> Awaitable[None] | None:
        """The handler's function for this notification; an awaitable it returned, if any."""
        kind, a, b = note
        try:
            if kind == ADD:
                result = self._on_add(a, b) if self._on_add is not None else None
            elif kind == UPDATE:
                result = self._on_update(a, b) if self._on_update is not None else None
            else:
                result = self._on_delete(a) if self._on_delete is not None else None
        except Exception:
            self._record_error("handler")
            return None
        if result is not None and inspect.isawaitable(result):
            return result
        return None

    async def _await_result(self, result: Awaitable[None]) -> None:
        try:
            await result
        except Exception:
            self._record_error("handler")

    def _delivered(self) -> None:
        self._processed += 1
        if self._sync_target is not None and not self._synced.is_set():
            self._check_synced()

    def _record_error(self, what: str) -> None:
        self.errors += 1
        self._errors.inc()
        now = time.monotonic()
        if now - self._last_log >= _LOG_INTERVAL:
            suffix = f" ({self._suppressed} more suppressed)" if self._suppressed else ""
            logger.exception("informer %s %s %s raised%s", self._resource, what, self.name, suffix)
            self._last_log = now
            self._suppressed = 0
        else:
            self._suppressed += 1


def _describe(handler: object) -> str:
    if isinstance(handler, ResourceEventHandlerFuncs):
        for fn in (handler.on_add, handler.on_update, handler.on_delete):
            if fn is not None:
                return getattr(fn, "__qualname__", repr(fn))
        return "funcs"
    return type(handler).__qualname__


class HandlerRegistration:
    """Returned by ``add_event_handler``; tells when this handler has seen the initial list."""

    def __init__(self, listener: Listener) -> None:
        self._listener = listener

    @property
    def name(self) -> str:
        return self._listener.name

    @property
    def pending(self) -> int:
        """Events queued for this handler and not yet delivered."""
        return self._listener.pending

    @property
    def errors(self) -> int:
        return self._listener.errors

    def has_synced(self) -> bool:
        """True once the informer synced and this handler was given every object of that first list."""
        return self._listener.has_synced()

    async def wait_synced(self, timeout: float | None = None) -> bool:
        return await self._listener.wait_synced(timeout)
