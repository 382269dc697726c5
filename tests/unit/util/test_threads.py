"""prestart_workers: a pool's workers started ahead of the work, so a later burst starts none."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from scheduler.util.threads import prestart_workers


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
