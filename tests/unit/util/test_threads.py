"""prestart_workers: a pool's workers started ahead of the work, so a later burst starts none; WorkerThreads:
the binding pool's fire-and-forget threads."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from scheduler.util.threads import WorkerThreads, prestart_workers


def _workers(prefix: str) -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(prefix + "_")}


def _burst(executor: ThreadPoolExecutor, size: int) -> None:
    """``size`` tasks that must all run at once (each waits for the others)."""
    barrier = threading.Barrier(size, timeout=5.0)
    for future in [executor.submit(barrier.wait) for _ in range(size)]:
        future.result(timeout=5.0)


def test_every_worker_is_running_before_any_work_and_a_burst_starts_no_more() -> None:
    executor = ThreadPoolExecutor(max_workers=6, thread_name_prefix="warm-all")
    try:
        assert not _workers("warm-all")
        assert prestart_workers(executor, 6)
        started = _workers("warm-all")
        assert len(started) == 6
        _burst(executor, 6)
        assert _workers("warm-all") == started
    finally:
        executor.shutdown(wait=True)


def test_without_it_the_burst_is_what_starts_the_workers() -> None:
    # The contrast: the same burst on a cold pool starts its workers from inside submit().
    executor = ThreadPoolExecutor(max_workers=6, thread_name_prefix="cold")
    try:
        _burst(executor, 6)
        assert len(_workers("cold")) == 6
    finally:
        executor.shutdown(wait=True)


def test_a_pool_smaller_than_asked_gives_up_after_the_timeout_and_stays_usable() -> None:
    executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="small")
    try:
        assert not prestart_workers(executor, 4, timeout=0.2)
        assert len(_workers("small")) == 2
        assert executor.submit(lambda: 7).result(timeout=5.0) == 7
    finally:
        executor.shutdown(wait=True)


def test_a_shut_down_pool_is_left_alone() -> None:
    executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="closed")
    executor.shutdown(wait=True)
    assert not prestart_workers(executor, 2, timeout=0.2)
    assert not _workers("closed")


def _until(check: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_worker_threads_run_every_item_on_a_named_thread_and_start_threads_only_while_busy() -> None:
    done: list[tuple[int, str]] = []
    pool: WorkerThreads[int] = WorkerThreads(
        lambda item: done.append((item, threading.current_thread().name)), max_workers=3, name_prefix="wt-a"
    )
    try:
        assert pool.started == 0
        for item in range(20):
            # One item busy at a time: one thread is enough, however many items pass.
            pool.submit(item, busy=1)
            _until(lambda n=item + 1: len(done) == n)
        assert [item for item, _ in done] == list(range(20))
        assert {name for _, name in done} == {"wt-a_0"}
        assert pool.started == 1
        assert all(t.daemon for t in _workers("wt-a"))
    finally:
        pool.shutdown()


def test_worker_threads_run_busy_items_at_once_up_to_max_workers() -> None:
    barrier = threading.Barrier(3, timeout=5.0)
    ran: list[str] = []

    def work(item: int) -> None:
        barrier.wait()  # all three must run together, or this breaks
        ran.append(threading.current_thread().name)

    pool: WorkerThreads[int] = WorkerThreads(work, max_workers=3, name_prefix="wt-b")
    try:
        for busy in (1, 2, 3):
            pool.submit(busy, busy=busy)
        _until(lambda: len(ran) == 3)
        assert sorted(ran) == ["wt-b_0", "wt-b_1", "wt-b_2"]
        pool.submit(4, busy=9)  # never more than max_workers
        assert pool.started == 3
    finally:
        pool.shutdown()


def test_worker_threads_prestart_and_a_failing_item_does_not_stop_its_thread() -> None:
    done: list[int] = []

    def work(item: int) -> None:
        if item == 0:
            raise ValueError("boom")
        done.append(item)

    pool: WorkerThreads[int] = WorkerThreads(work, max_workers=4, name_prefix="wt-c")
    try:
        assert pool.prestart(9) == 4
        assert len(_workers("wt-c")) == 4
        pool.submit(0, busy=1)
        pool.submit(1, busy=1)
        _until(lambda: done == [1])
        assert all(t.is_alive() for t in _workers("wt-c"))
    finally:
        pool.shutdown()


def test_worker_threads_shutdown_drops_items_not_started_and_stops_every_thread() -> None:
    release = threading.Event()
    started: list[int] = []

    def work(item: int) -> None:
        started.append(item)
        release.wait(5.0)

    pool: WorkerThreads[int] = WorkerThreads(work, max_workers=2, name_prefix="wt-d")
    pool.prestart(2)
    pool.submit(1, busy=1)
    pool.submit(2, busy=2)
    _until(lambda: len(started) == 2)
    pool.submit(3, busy=3)  # both threads busy: waits in the queue
    pool.shutdown()
    release.set()
    for thread in _workers("wt-d"):
        thread.join(5.0)
        assert not thread.is_alive()
    assert sorted(started) == [1, 2]
    with pytest.raises(RuntimeError):
        pool.submit(4, busy=1)
