"""Thread pools: starting an executor's workers ahead of the work, and a pool for fire-and-forget work.

``ThreadPoolExecutor`` starts a worker inside ``submit`` when none is idle, and ``Thread.start`` waits
until the new thread runs. Called on the event loop (binding a released gang, a burst of status writes),
that wait stalls the loop for as long as the new thread takes to get the GIL: on a busy machine,
milliseconds per thread. A pool's workers never exit before shutdown, so a long-running scheduler ends
up with them all after its first bursts anyway; starting them while the informers sync moves that cost
to start-up.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

_T = TypeVar("_T")


def prestart_workers(executor: ThreadPoolExecutor, count: int, timeout: float = 5.0) -> bool:
    """Start ``count`` workers of ``executor`` now (blocking the caller, so not on the event loop).

    Each of ``count`` tasks waits at a barrier until all of them and the caller are there: a worker
    busy at the barrier is never idle, so the executor must start a new worker for every task. Returns
    False when they did not all arrive within ``timeout`` (fewer workers allowed, or shut down): the
    barrier is then broken, the tasks end at once, and the pool starts the rest on demand as before.
    """
    if count <= 0:
        return True
    barrier = threading.Barrier(count + 1, timeout=timeout)

    def wait_for_the_others() -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()

    try:
        for _ in range(count):
            executor.submit(wait_for_the_others)
    except RuntimeError:
        # Shut down meanwhile: nothing left to warm up.
        barrier.abort()
        return False
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        log.info("only some of %d pool workers started within %gs", count, timeout)
        return False
    return True


class WorkerThreads(Generic[_T]):
    """Up to ``max_workers`` threads running ``work(item)`` for each item handed to ``submit``, in
    submission order. What ``ThreadPoolExecutor`` does for a caller that never reads a result: its
    ``submit`` builds a Future (a Condition and its lock), a work item, and takes a semaphore to look for
    an idle worker, ~15 us on a loaded 2-core machine, paid on the event loop for every pod bound. Here
    ``submit`` is one put on a SimpleQueue (a fraction of a microsecond).

    A thread is started when ``busy`` (the caller's count of items not yet finished, this one included)
    exceeds the threads running, up to ``max_workers``, or ahead of time by ``prestart``. Threads are
    daemons: the scheduler drains its work before ``shutdown`` and exits without joining what is left,
    as it did with the executor. ``shutdown`` drops the items not started yet (the executor's
    ``cancel_futures``): their ``work`` never runs.
    """

    def __init__(self, work: Callable[[_T], None], *, max_workers: int, name_prefix: str) -> None:
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        self._work = work
        self._items: queue.SimpleQueue[_T | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._start_lock = threading.Lock()
        self._name_prefix = name_prefix
        self._closed = False
        self.max_workers = max_workers

    @property
    def started(self) -> int:
        return len(self._threads)

    def submit(self, item: _T, busy: int) -> None:
        """Run ``work(item)`` on a thread; ``busy``: items handed over and not finished, ``item`` included.
        Raises RuntimeError after ``shutdown``."""
        if self._closed:
            raise RuntimeError("cannot submit after shutdown")
        self._items.put(item)
        running = len(self._threads)
        if busy > running and running < self.max_workers:
            self._start(1)

    def prestart(self, count: int) -> int:
        """Start threads until ``count`` run (at most ``max_workers``); blocks while they start, so not
        on the event loop. Returns how many run."""
        self._start(min(count, self.max_workers) - len(self._threads))
        return len(self._threads)

    def _start(self, count: int) -> None:
        with self._start_lock:
            for _ in range(count):
                if self._closed or len(self._threads) >= self.max_workers:
                    return
                thread = threading.Thread(
                    target=self._run, name=f"{self._name_prefix}_{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)

    def _run(self) -> None:
        items, work = self._items, self._work
        while True:
            item = items.get()
            if item is None or self._closed:
                # Tell the next thread too (one None per pool, passed along).
                items.put(None)
                return
            try:
                work(item)
            except BaseException:
                log.exception("worker %s: unhandled error", threading.current_thread().name)
            del item

    def shutdown(self) -> None:
        """No new items; those not started are dropped; idle threads exit, busy ones after their item."""
        self._closed = True
        with contextlib.suppress(queue.Empty):
            while True:
                self._items.get_nowait()
        self._items.put(None)
