"""The binding cycle's threads: a plain work queue for fire-and-forget tasks.

``ThreadPoolExecutor`` wraps every task in a ``Future`` and a work item, takes two locks in ``submit``
and asks an idle-worker semaphore (a Python ``Condition``) whether to start a thread; its worker then
sets the future's result under the future's condition and releases the semaphore. The binding pool
never reads a result (outcomes go back to the loop through ``BindingPool._report``), so all of that is
paid for nothing, once per pod on the loop and once per pod on a binding thread whose every bytecode
competes for the GIL with the busy loop. Here a task is an item put on a ``SimpleQueue`` (C, one
lock) that the first idle worker takes and passes to the pool's one function.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from queue import Empty, SimpleQueue
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Workers(Generic[T]):
    """Up to ``max_workers`` threads calling ``run`` on each item submitted, in submission order, once.

    A new thread starts in ``submit`` only when every started one is busy (``ThreadPoolExecutor``'s
    rule); ``prestart`` starts them ahead of the work. After ``shutdown`` a task not yet taken is never
    run (``cancel_futures``), a running one finishes, and ``submit`` raises ``RuntimeError``.
    """

    def __init__(self, run: Callable[[T], object], max_workers: int, name_prefix: str) -> None:
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        self._run = run
        self.max_workers = max_workers
        self._name_prefix = name_prefix
        # None wakes a worker to exit.
        self._tasks: SimpleQueue[T | None] = SimpleQueue()
        self._threads: list[threading.Thread] = []
        # Tasks submitted, and tasks finished (counted by the workers under the lock): their difference
        # is the busy workers plus the tasks waiting, which ``submit`` compares with the threads started.
        self._submitted = 0
        self._finished = 0
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._closed = False

    @property
    def threads(self) -> int:
        return len(self._threads)

    def submit(self, task: T) -> None:
        """``run(task)`` on a worker (called from one thread: the event loop)."""
        if self._closed:
            raise RuntimeError("cannot schedule new tasks after shutdown")
        self._submitted += 1
        if len(self._threads) < self.max_workers and self._submitted - self._finished > len(self._threads):
            try:
                self._start_one()
            except RuntimeError:
                # No thread could start (the process is out of them): a started worker takes the task
                # later; with none at all, nothing would, so the caller hears it (task not queued).
                if not self._threads:
                    self._submitted -= 1
                    raise
                log.warning("%s: no new thread could start; the task waits for a busy one", self._name_prefix)
        self._tasks.put(task)

    def prestart(self, count: int) -> bool:
        """Start threads until there are ``count`` (at most ``max_workers``); blocks while each starts,
        so call it off the loop. False when shut down."""
        while len(self._threads) < min(count, self.max_workers):
            if self._closed:
                return False
            self._start_one()
        return not self._closed

    def _start_one(self) -> None:
        # Under the lock: ``prestart`` (a helper thread) and ``submit`` (the loop) may both start one,
        # and ``shutdown`` (which takes the lock to close) must count every thread started to wake it.
        with self._start_lock:
            if self._closed or len(self._threads) >= self.max_workers:
                return
            thread = threading.Thread(
                target=self._work, name=f"{self._name_prefix}_{len(self._threads)}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _work(self) -> None:
        tasks, run = self._tasks, self._run
        while True:
            task = tasks.get()
            if task is None or self._closed:
                return
            try:
                run(task)
            except Exception:
                # As a pool's future would keep it: the worker lives on for the next task.
                log.exception("%s task crashed", self._name_prefix)
            finally:
                with self._lock:
                    self._finished += 1
                del task

    def shutdown(self) -> None:
        """Tasks not yet taken are dropped; every worker exits after its current task. Does not wait."""
        with self._start_lock:
            self._closed = True
            started = len(self._threads)
        try:
            while True:
                self._tasks.get_nowait()
        except Empty:
            pass
        for _ in range(started):
            self._tasks.put(None)
