"""Workers: the binding pool's threads, a work queue without futures (ThreadPoolExecutor's rules kept)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from scheduler.cycle.binding_threads import Workers


def _wait(cond: Callable[[], bool], timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_every_item_runs_once_in_submission_order_on_one_worker() -> None:
    seen: list[int] = []
    workers: Workers[int] = Workers(seen.append, 1, "order")
    for i in range(50):
        workers.submit(i)
    _wait(lambda: len(seen) == 50)
    assert seen == list(range(50))
    assert workers.threads == 1
    workers.shutdown()


def test_a_thread_starts_only_when_every_started_one_is_busy() -> None:
    release = threading.Event()
    names: list[str] = []

    def run(item: int) -> None:
        names.append(threading.current_thread().name)
        if item < 2:
            release.wait(3.0)

    workers: Workers[int] = Workers(run, 3, "grow")
    workers.submit(0)
    _wait(lambda: len(names) == 1)
    workers.submit(1)  # the first is busy: a second thread
    _wait(lambda: len(names) == 2)
    assert workers.threads == 2
    release.set()
    _wait(lambda: workers._finished == 2)
    for i in range(2, 6):  # one at a time, each finds an idle thread
        workers.submit(i)
        _wait(lambda i=i: workers._finished == i + 1)  # type: ignore[misc]
    assert workers.threads == 2
    assert sorted(set(names)) == ["grow_0", "grow_1"]
    workers.shutdown()


def test_never_more_threads_than_max_workers() -> None:
    release = threading.Event()
    done: list[int] = []

    def run(item: int) -> None:
        release.wait(3.0)
        done.append(item)

    workers: Workers[int] = Workers(run, 2, "cap")
    for i in range(5):
        workers.submit(i)
    assert workers.threads == 2
    release.set()
    _wait(lambda: len(done) == 5)
    assert sorted(done) == list(range(5))
    workers.shutdown()


def test_prestart_starts_threads_up_to_the_limit() -> None:
    workers: Workers[int] = Workers(lambda item: None, 4, "warm")
    assert workers.prestart(10)
    assert workers.threads == 4
    names = {t.name for t in threading.enumerate()}
    assert {"warm_0", "warm_1", "warm_2", "warm_3"} <= names
    workers.submit(1)  # an idle thread takes it: none started
    assert workers.threads == 4
    workers.shutdown()
    assert not workers.prestart(4)


def test_shutdown_drops_items_not_taken_lets_the_running_one_finish_and_refuses_more() -> None:
    started = threading.Event()
    release = threading.Event()
    ran: list[int] = []

    def run(item: int) -> None:
        started.set()
        release.wait(3.0)
        ran.append(item)

    workers: Workers[int] = Workers(run, 1, "stop")
    workers.submit(1)
    assert started.wait(3.0)
    workers.submit(2)
    workers.submit(3)
    workers.shutdown()
    with pytest.raises(RuntimeError):
        workers.submit(4)
    release.set()
    thread = next(t for t in threading.enumerate() if t.name == "stop_0")
    thread.join(3.0)
    assert not thread.is_alive()
    assert ran == [1]


def test_a_crashing_item_is_logged_and_the_worker_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[int] = []

    def run(item: int) -> None:
        if item == 1:
            raise ValueError("boom")
        seen.append(item)

    workers: Workers[int] = Workers(run, 1, "crash")
    workers.submit(1)
    workers.submit(2)
    _wait(lambda: seen == [2])
    assert "crash task crashed" in caplog.text
    assert workers.threads == 1
    workers.shutdown()


def test_max_workers_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Workers(lambda item: None, 0, "none")


def test_shutdown_during_prestart_leaves_no_thread_waiting_forever() -> None:
    for _ in range(30):
        workers: Workers[int] = Workers(lambda item: None, 16, "race")
        starter = threading.Thread(target=workers.prestart, args=(16,))
        starter.start()
        workers.shutdown()
        starter.join(3.0)
        for thread in list(workers._threads):
            thread.join(3.0)
            assert not thread.is_alive()


def test_prestart_racing_submits_keeps_the_limit_and_distinct_names() -> None:
    for _ in range(20):
        release = threading.Event()
        workers: Workers[threading.Event] = Workers(lambda event: event.wait(3.0), 4, "limit")
        starter = threading.Thread(target=workers.prestart, args=(4,))
        starter.start()
        for _ in range(6):
            workers.submit(release)
        starter.join(3.0)
        names = [t.name for t in workers._threads]
        assert len(names) <= 4
        assert len(set(names)) == len(names)
        release.set()
        workers.shutdown()


def test_a_thread_that_cannot_start_leaves_the_task_to_a_started_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[int] = []
    gate = threading.Event()

    def run(item: int) -> None:
        gate.wait(3.0)
        seen.append(item)

    workers: Workers[int] = Workers(run, 4, "full")
    workers.submit(0)  # one worker, busy until the gate opens

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    workers.submit(1)  # no new thread: queued for the busy one
    monkeypatch.undo()
    gate.set()
    _wait(lambda: seen == [0, 1])
    workers.shutdown()


def test_with_no_thread_at_all_submit_raises_and_queues_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    workers: Workers[int] = Workers(seen.append, 2, "none")

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(RuntimeError):
        workers.submit(1)
    monkeypatch.undo()
    workers.submit(2)
    _wait(lambda: seen == [2])
    time.sleep(0.05)
    assert seen == [2]
    workers.shutdown()
