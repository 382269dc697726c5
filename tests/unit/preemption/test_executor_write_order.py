"""The preemption executor's writers take the oldest run's writes first: a run's last victim, queued
after its other victims were written, does not wait behind the first writes of runs started later."""

from __future__ import annotations

import functools
import threading

from scheduler.framework.types import PodInfo
from scheduler.preemption.executor import PreemptionExecutor, _Run


def _run(name: str, started: float) -> _Run:
    pod = {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": {"containers": []}}
    return _Run(PodInfo(pod), "n0", started)


def test_writes_waiting_for_a_writer_go_oldest_run_first() -> None:
    executor = PreemptionExecutor(
        api=None,
        recorder=None,  # type: ignore[arg-type]
        nominations=None,  # type: ignore[arg-type]
        assigned_pod=lambda key: None,
        waiting_pods=dict,
        writers=1,
    )
    busy = threading.Event()
    release = threading.Event()
    done = threading.Event()
    order: list[str] = []

    def blocking() -> None:
        busy.set()
        release.wait(10)

    def write(label: str) -> None:
        order.append(label)
        if len(order) == 5:
            done.set()

    try:
        # The one writer is busy; then writes arrive from runs in no particular order of age.
        executor._submit(_run("first", 0.0), blocking)
        assert busy.wait(10)
        arrivals = [("late", 3.0), ("early", 1.0), ("middle", 2.0), ("early", 1.0), ("late", 3.0)]
        for i, (name, started) in enumerate(arrivals):
            run = _run(name, started)
            executor._submit(run, functools.partial(write, f"{name}-{i}"))
        release.set()
        assert done.wait(10)
        # Oldest run first; one run's writes in the order they were queued.
        assert order == ["early-1", "early-3", "middle-2", "late-0", "late-4"]
    finally:
        release.set()
        executor.shutdown()
