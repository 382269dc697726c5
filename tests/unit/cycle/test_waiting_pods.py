"""The waiting-pods map: Permit waits on the loop, decided once, by every waiter's allow or the first no."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from scheduler.cycle.waiting_pods import WaitingPod, WaitingPods
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from tests.unit.fakes import make_pod


class FakeTimers:
    """call_later on a fake clock: ``advance`` fires what is due, in order."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pending: list[FakeTimer] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer(self.now + delay, callback)
        self.pending.append(timer)
        return timer

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for timer in sorted(self.pending, key=lambda t: t.when):
            if timer.when <= self.now and not timer.cancelled:
                timer.cancelled = True
                timer.callback()
        self.pending = [t for t in self.pending if not t.cancelled]


class FakeTimer:
    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


Decisions = list[tuple[str, Status | None]]


def new_env() -> tuple[WaitingPods, FakeTimers, Decisions]:
    # Built inside each test: the map captures the running loop (and its thread).
    timers = FakeTimers()
    decisions: Decisions = []

    def on_decided(waiting: WaitingPod, status: Status | None) -> None:
        decisions.append((waiting.key, status))

    return (
        WaitingPods(asyncio.get_running_loop(), on_decided, call_later=timers.call_later),
        timers,
        decisions,
    )


async def settle() -> None:
    # Decisions are delivered with call_soon: one turn of the loop.
    await asyncio.sleep(0)


async def test_goes_on_only_when_every_waiting_plugin_allows() -> None:
    pods, _, decisions = new_env()
    waiting = pods.add(PodInfo(make_pod("a")), "n1", {"Gang": 30.0, "Quota": 60.0})
    waiting.allow("Gang")
    await settle()
    assert decisions == [] and waiting.get_pending_plugins() == ["Quota"]
    assert pods.get("default/a") is waiting
    waiting.allow("Quota")
    await settle()
    assert decisions == [("default/a", None)]
    assert "default/a" not in pods and len(pods) == 0


async def test_allow_by_a_plugin_that_is_not_waiting_changes_nothing() -> None:
    pods, _, decisions = new_env()
    waiting = pods.add(PodInfo(make_pod("a")), "n1", {"Gang": 30.0})
    waiting.allow("Other")
    await settle()
    assert decisions == [] and waiting.get_pending_plugins() == ["Gang"]


async def test_reject_wins_over_later_allows() -> None:
    pods, timers, decisions = new_env()
    waiting = pods.add(PodInfo(make_pod("a")), "n1", {"Gang": 30.0, "Quota": 60.0})
    waiting.allow("Gang")
    waiting.reject("Quota", "over quota")
    waiting.allow("Quota")
    timers.advance(100.0)
    await settle()
    assert len(decisions) == 1
    key, status = decisions[0]
    assert key == "default/a" and status is not None
    assert (status.code, status.plugin, status.message()) == (Code.Unschedulable, "Quota", "over quota")
    assert timers.pending == []  # the decision cancelled the timers


async def test_first_timer_to_fire_rejects_in_the_name_of_its_plugin() -> None:
    pods, timers, decisions = new_env()
    pods.add(PodInfo(make_pod("a")), "n1", {"Slow": 60.0, "Gang": 10.0})
    timers.advance(9.9)
    await settle()
    assert decisions == []
    timers.advance(0.2)
    await settle()
    [(_, status)] = decisions
    assert status is not None and status.plugin == "Gang"
    assert status.message() == "rejected due to timeout after waiting 10s at plugin Gang"
    assert len(pods) == 0


async def test_a_plugin_that_allowed_still_times_out_the_others() -> None:
    # Upstream keeps every timer until the pod is decided: allowing does not stop the clock of others.
    pods, timers, decisions = new_env()
    waiting = pods.add(PodInfo(make_pod("a")), "n1", {"Gang": 10.0, "Quota": 20.0})
    waiting.allow("Quota")
    timers.advance(10.0)
    await settle()
    [(_, status)] = decisions
    assert status is not None and status.plugin == "Gang"


async def test_reject_all_on_shutdown() -> None:
    pods, _, decisions = new_env()
    for name in "abc":
        pods.add(PodInfo(make_pod(name)), "n1", {"Gang": 600.0})
    pods.reject_all("scheduler is shutting down")
    await settle()
    assert sorted(k for k, _ in decisions) == ["default/a", "default/b", "default/c"]
    assert all(s is not None and s.message() == "scheduler is shutting down" for _, s in decisions)


async def test_rejecting_inside_a_decision_does_not_reenter() -> None:
    # A gang plugin rejects its siblings while the map is iterated; decisions arrive later, once each.
    pods, _, decisions = new_env()
    for name in "abc":
        pods.add(PodInfo(make_pod(name)), "n1", {"Gang": 600.0})
    for waiting in pods.iterate():
        for sibling in pods.iterate():
            sibling.reject("Gang", "gang released")
        waiting.reject("Gang", "gang released")
    assert decisions == []
    await settle()
    assert len(decisions) == 3


async def test_allow_from_another_thread_is_applied_on_the_loop() -> None:
    pods, _, decisions = new_env()
    waiting = pods.add(PodInfo(make_pod("a")), "n1", {"Gang": 600.0})
    thread = threading.Thread(target=waiting.allow, args=("Gang",))
    thread.start()
    thread.join()
    assert not waiting.decided  # not touched off the loop
    for _ in range(3):
        await settle()
    assert decisions == [("default/a", None)]


async def test_thousands_wait_with_timers_and_no_threads() -> None:
    pods, timers, decisions = new_env()
    threads_before = threading.active_count()
    for i in range(5000):
        pods.add(PodInfo(make_pod(f"p{i}")), "n1", {"Gang": 30.0 + i % 7})
    assert len(pods) == 5000 and len(timers.pending) == 5000
    assert threading.active_count() == threads_before
    for waiting in pods.iterate([f"default/p{i}" for i in range(0, 5000, 2)]):
        waiting.allow("Gang")
    timers.advance(60.0)
    await settle()
    allowed = [k for k, s in decisions if s is None]
    timed_out = [k for k, s in decisions if s is not None and s.plugin == "Gang"]
    assert len(allowed) == 2500 and len(timed_out) == 2500
    assert len(pods) == 0 and timers.pending == []


async def test_real_loop_timer_rejects() -> None:
    decided = asyncio.Event()
    got: list[Status | None] = []

    def on_decided(waiting: WaitingPod, status: Status | None) -> None:
        got.append(status)
        decided.set()

    pods = WaitingPods(asyncio.get_running_loop(), on_decided)
    pods.add(PodInfo(make_pod("a")), "n1", {"Gang": 0.01})
    await asyncio.wait_for(decided.wait(), 2.0)
    assert got[0] is not None and got[0].plugin == "Gang"
