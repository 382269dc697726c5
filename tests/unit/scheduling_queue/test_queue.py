"""SchedulingQueue transitions with a fake clock: add/pop/fail/backoff/unschedulable/update/delete/gates."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from scheduling_queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    IN_FLIGHT,
    UNSCHEDULABLE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FakeClock,
    QueuedPodInfo,
    Resource,
    SchedulingQueue,
    scheduling_gates_pre_enqueue,
)
from scheduling_queue.metrics import incoming_value
from scheduling_queue.testing import fail, make_pod, pop, queue_always, wait_until, with_changes

NODE_ADD = ClusterEvent(Resource.Node, ActionType.Add)


def new_queue(clock: FakeClock, **kwargs: Any) -> SchedulingQueue:
    return SchedulingQueue(clock=clock, **kwargs)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1000.0)


# --------------------------------------------------------------------------- add / pop / order


def test_add_then_pop_marks_in_flight(clock: FakeClock) -> None:
    q = new_queue(clock)
    pod = make_pod("a")
    q.add(pod)
    assert q.where("default/a") == ACTIVE
    assert len(q) == 1 and "default/a" in q
    clock.advance(2)
    qpi = pop(q)
    assert qpi.pod is pod and qpi.key == "default/a"
    assert qpi.attempts == 1
    assert qpi.initial_attempt_timestamp == 1000.0 and qpi.timestamp == 1000.0
    assert q.where("default/a") == IN_FLIGHT
    assert len(q) == 0 and "default/a" not in q
    assert q.in_flight_pods() == [pod]
    q.done("default/a")
    assert q.where("default/a") is None
    assert q.pop_nowait() is None


def test_priority_sort_orders_by_priority_then_enqueue_time(clock: FakeClock) -> None:
    q = new_queue(clock)
    q.add(make_pod("low", priority=1))
    clock.advance(1)
    q.add(make_pod("high-late", priority=10))
    q.add(make_pod("none"))  # no priority counts as 0
    clock.advance(1)
    q.add(make_pod("high-later", priority=10))
    q.add(make_pod("mid", priority=5))
    order = [pop(q).key.split("/")[1] for _ in range(5)]
    assert order == ["high-late", "high-later", "mid", "low", "none"]


def test_custom_less_is_used(clock: FakeClock) -> None:
    def by_name_desc(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.key > b.key

    q = new_queue(clock, less=by_name_desc)
    for name in ("b", "d", "a", "c"):
        q.add(make_pod(name, priority=100 if name == "a" else 0))
    assert [pop(q).key for _ in range(4)] == ["default/d", "default/c", "default/b", "default/a"]


def test_pending_pods_lists_every_sub_queue(clock: FakeClock) -> None:
    q = new_queue(clock, pre_enqueue=scheduling_gates_pre_enqueue)
    q.add(make_pod("active", priority=1))
    q.add(make_pod("flight", priority=2))
    q.add(make_pod("gated", scheduling_gates=["g"]))
    q.add(make_pod("unsched", priority=3))
    q.add(make_pod("backoff", priority=4))
    fail(q, pop(q))  # backoff: error
    fail(q, pop(q), "NodeAffinity")  # unsched
    pop(q)  # flight
    names = {k: [p["metadata"]["name"] for p in v] for k, v in q.pending_pods().items()}
    assert names == {
        ACTIVE: ["active"],
        BACKOFF: ["backoff"],
        UNSCHEDULABLE: ["unsched"],
        GATED: ["gated"],
        IN_FLIGHT: ["flight"],
    }
    assert q.pending_counts() == (1, 1, 1, 1)
    assert len(q) == 4


async def test_pop_waits_for_a_pod(clock: FakeClock) -> None:
    q = new_queue(clock)
    task = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    assert not task.done()
    q.add(make_pod("a"))
    got = await asyncio.wait_for(task, timeout=2)
    assert got is not None and got.key == "default/a"


async def test_close_wakes_pop_and_later_pops_return_none(clock: FakeClock) -> None:
    q = new_queue(clock)
    task = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    q.close()
    assert await asyncio.wait_for(task, timeout=2) is None
    q.add(make_pod("a"))
    assert await q.pop() is None
    assert q.closed


async def test_cancelled_pop_leaves_no_waiter_behind(clock: FakeClock) -> None:
    q = new_queue(clock)
    task = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The waiter list is private, but a cancelled pop that stays in it is only ever seen as a leak.
    assert q._waiters == []
    waiting = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    q.add(make_pod("a"))
    got = await asyncio.wait_for(waiting, timeout=2)  # the pod goes to the live waiter
    assert got is not None and got.key == "default/a"
    assert q.where("default/a") == IN_FLIGHT
    assert q._waiters == []


def test_add_of_a_known_pod_is_an_update(clock: FakeClock) -> None:
    q = new_queue(clock)
    pod = make_pod("a", priority=1)
    q.add(pod)
    newer = with_changes(pod, metadata={"labels": {"x": "y"}})
    q.add(newer)
    assert len(q) == 1
    qpi = pop(q)
    assert qpi.pod is newer
    q.add(with_changes(newer, metadata={"labels": {"x": "z"}}))  # in flight: stays in flight
    assert q.where("default/a") == IN_FLIGHT and len(q) == 0


# --------------------------------------------------------------------------- backoff


@pytest.mark.parametrize(
    ("initial", "maximum", "expected"),
    [
        (1.0, 10.0, [0.0, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]),
        (0.5, 3.0, [0.0, 0.5, 1.0, 2.0, 3.0, 3.0, 3.0]),
        (2.0, 2.0, [0.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]),
    ],
)
def test_backoff_duration_numbers(
    clock: FakeClock, initial: float, maximum: float, expected: list[float]
) -> None:
    q = new_queue(clock, initial_backoff=initial, max_backoff=maximum)
    assert [q.backoff_duration(n) for n in range(7)] == expected
    assert q.backoff_duration(10_000) == maximum


def test_invalid_backoff_settings_are_rejected(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="backoff"):
        new_queue(clock, initial_backoff=5, max_backoff=1)


def test_error_failure_backs_off_exactly_per_attempt(clock: FakeClock) -> None:
    """1 s, 2 s, 4 s, 8 s, then the 10 s cap, to the end of the 1 s ordering window the expiry falls in
    (upstream's backoffQOrderingWindowDuration); never released a tick early."""
    q = new_queue(clock)
    q.add(make_pod("a"))
    clock.advance(0.25)  # off the window boundary, so the rounding shows
    for expected in (1.0, 2.0, 4.0, 8.0, 10.0, 10.0):
        qpi = pop(q)
        failed_at = clock.now()
        fail(q, qpi)  # no plugins: an error
        assert q.where("default/a") == BACKOFF
        assert q.backoff_expiry(qpi) == math.floor(failed_at + expected) + 1.0
        waited = q.backoff_expiry(qpi) - failed_at
        clock.advance(waited - 0.001)
        q.flush_backoff_completed()
        assert q.pop_nowait() is None
        assert q.where("default/a") == BACKOFF
        clock.advance(0.001)
        q.flush_backoff_completed()
        assert q.where("default/a") == ACTIVE


def test_pop_flushes_completed_backoff(clock: FakeClock) -> None:
    q = new_queue(clock)
    q.add(make_pod("a"))
    fail(q, pop(q))
    clock.advance(1.0)
    assert q.pop_nowait() is None  # an error pod is never taken from backoffQ early
    clock.advance(1.0)  # the end of the window its 1 s backoff expires in
    qpi = q.pop_nowait()  # no flusher ran
    assert qpi is not None and qpi.attempts == 2


def test_update_in_backoff_keeps_the_expiry(clock: FakeClock) -> None:
    q = new_queue(clock)
    pod = make_pod("a")
    q.add(pod)
    qpi = pop(q)
    fail(q, qpi)
    expiry = q.backoff_expiry(qpi)
    clock.advance(0.5)
    newer = with_changes(pod, metadata={"labels": {"new": "label"}}, status={"phase": "Pending", "x": 1})
    q.update(pod, newer)
    assert q.where("default/a") == BACKOFF
    assert q.backoff_expiry(qpi) == expiry
    assert q.get("default/a") is qpi and qpi.pod is newer


# --------------------------------------------------------------------------- unschedulable


def test_rejection_goes_to_unschedulable_then_times_out_to_active(clock: FakeClock) -> None:
    q = new_queue(clock)
    q.add(make_pod("a"))
    fail(q, pop(q), "NodeAffinity")
    assert q.where("default/a") == UNSCHEDULABLE
    clock.advance(300)
    q.flush_unschedulable_leftover()
    assert q.where("default/a") == UNSCHEDULABLE  # strictly longer than the limit
    clock.advance(0.001)
    q.flush_unschedulable_leftover()
    assert q.where("default/a") == ACTIVE


def test_unschedulable_timeout_respects_remaining_backoff(clock: FakeClock) -> None:
    q = new_queue(clock, max_in_unschedulable=5, initial_backoff=8, max_backoff=8)
    q.add(make_pod("a"))
    fail(q, pop(q), "NodeAffinity")
    clock.advance(6)
    q.flush_unschedulable_leftover()
    assert q.where("default/a") == BACKOFF
    clock.advance(2)
    q.flush_backoff_completed()
    assert q.where("default/a") == BACKOFF  # 8 s are over, but not the window they end in
    clock.advance(1)
    q.flush_backoff_completed()
    assert q.where("default/a") == ACTIVE


def test_status_only_update_leaves_unschedulable_pod_alone(clock: FakeClock) -> None:
    calls: list[str] = []

    def hint(pod: Any, old: Any, new: Any) -> Any:
        calls.append(pod["metadata"]["name"])
        return queue_always(pod, old, new)

    q = new_queue(
        clock,
        hints={"NodeAffinity": [ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.All), hint)]},
    )
    pod = make_pod("a")
    q.add(pod)
    qpi = pop(q)
    fail(q, qpi, "NodeAffinity")
    stamp = qpi.timestamp
    clock.advance(30)
    newer = with_changes(
        pod,
        status={"conditions": [{"type": "PodScheduled", "status": "False"}]},
        metadata={"managedFields": [{"manager": "py-scheduler"}], "generation": 7},
    )
    q.update(pod, newer)
    assert q.where("default/a") == UNSCHEDULABLE
    assert calls == []
    assert qpi.pod is newer and qpi.timestamp == stamp


def test_spec_update_asks_hints_and_moves_the_pod(clock: FakeClock) -> None:
    q = new_queue(
        clock,
        hints={
            "TaintToleration": [
                ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.UpdatePodToleration), queue_always)
            ]
        },
    )
    pod = make_pod("a")
    q.add(pod)
    fail(q, pop(q), "TaintToleration")
    # A label change: TaintToleration did not register for it.
    labelled = with_changes(pod, metadata={"labels": {"a": "b"}})
    q.update(pod, labelled)
    assert q.where("default/a") == UNSCHEDULABLE
    tolerating = with_changes(labelled, spec={"tolerations": [{"key": "k", "operator": "Exists"}]})
    q.update(labelled, tolerating)
    assert q.where("default/a") == BACKOFF  # still inside its 1 s backoff
    clock.advance(1)
    qpi = pop(q)
    assert qpi.pod is tolerating


def test_update_after_backoff_expired_goes_straight_to_active(clock: FakeClock) -> None:
    q = new_queue(
        clock,
        hints={"NodeAffinity": [ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.UpdatePodLabel))]},
    )
    pod = make_pod("a")
    q.add(pod)
    fail(q, pop(q), "NodeAffinity")
    clock.advance(5)
    q.update(pod, with_changes(pod, metadata={"labels": {"zone": "b"}}))
    assert q.where("default/a") == ACTIVE


def test_update_of_unknown_pod_adds_it(clock: FakeClock) -> None:
    q = new_queue(clock)
    pod = make_pod("a")
    q.update(pod, with_changes(pod, metadata={"labels": {"x": "1"}}))
    assert q.where("default/a") == ACTIVE


def test_update_of_active_pod_keeps_position_unless_priority_changes(clock: FakeClock) -> None:
    q = new_queue(clock)
    a, b = make_pod("a", priority=5), make_pod("b", priority=5)
    q.add(a)
    clock.advance(1)
    q.add(b)
    q.update(a, with_changes(a, metadata={"labels": {"x": "y"}}))
    q.update(b, with_changes(b, spec={"priority": 6}))
    assert [pop(q).key for _ in range(2)] == ["default/b", "default/a"]


# --------------------------------------------------------------------------- delete


def test_delete_removes_the_pod_from_wherever_it_is(clock: FakeClock) -> None:
    q = new_queue(clock, pre_enqueue=scheduling_gates_pre_enqueue)
    pods = {name: make_pod(name, priority=p) for name, p in (("act", 0), ("back", 3), ("uns", 2))}
    gated = make_pod("gat", scheduling_gates=["g"])
    for pod in (*pods.values(), gated):
        q.add(pod)
    fail(q, pop(q))  # back -> backoff
    fail(q, pop(q), "NodeAffinity")  # uns -> unschedulable
    assert {q.where(f"default/{n}") for n in ("act", "back", "uns", "gat")} == {
        ACTIVE,
        BACKOFF,
        UNSCHEDULABLE,
        GATED,
    }
    for pod in (*pods.values(), gated):
        q.delete(pod)
    assert len(q) == 0
    assert all(v == [] for v in q.pending_pods().values())
    clock.advance(400)
    q.flush_backoff_completed()
    q.flush_unschedulable_leftover()
    q.move_all_to_active_or_backoff(ClusterEvent(Resource.WildCard, ActionType.All, "x"))
    assert q.pop_nowait() is None


def test_pod_deleted_while_in_flight_is_not_requeued(clock: FakeClock) -> None:
    q = new_queue(clock)
    pod = make_pod("a")
    q.add(pod)
    qpi = pop(q)
    q.delete(pod)
    assert q.where("default/a") is None
    fail(q, qpi)
    assert q.where("default/a") is None and len(q) == 0


def test_deleted_then_recreated_while_old_attempt_in_flight(clock: FakeClock) -> None:
    q = new_queue(clock)
    old = make_pod("a", uid="one")
    q.add(old)
    old_qpi = pop(q)
    q.delete(old)
    new = make_pod("a", uid="two")
    q.add(new)
    assert q.where("default/a") == ACTIVE
    new_qpi = pop(q)
    assert new_qpi.pod is new and new_qpi.attempts == 1
    fail(q, old_qpi, "NodeAffinity")  # the old attempt ends: dropped, the new one untouched
    assert q.where("default/a") == IN_FLIGHT
    q.done(old_qpi)
    assert q.where("default/a") == IN_FLIGHT
    fail(q, new_qpi, "NodeAffinity")
    assert q.where("default/a") == UNSCHEDULABLE
    assert q.in_flight_event_count == 0


# --------------------------------------------------------------------------- scheduling gates


# SchedulingGates' registration, as the plugin makes it: only its hint can release a gated pod.
GATES_HINTS = {
    "SchedulingGates": [
        ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.UpdatePodSchedulingGatesEliminated))
    ]
}


def test_gated_pod_waits_until_gates_are_removed(clock: FakeClock) -> None:
    q = new_queue(clock, pre_enqueue=scheduling_gates_pre_enqueue, hints=GATES_HINTS)
    pod = make_pod("a", scheduling_gates=["example.com/wait"])
    q.add(pod)
    assert q.where("default/a") == GATED
    assert q.pop_nowait() is None
    gated = q.get("default/a")
    assert gated is not None and gated.gating_plugin == "SchedulingGates"
    clock.advance(60)
    q.flush_unschedulable_leftover()
    clock.advance(300)
    q.flush_unschedulable_leftover()
    # The leftover flush ran PreEnqueue again (v1.37 flushes gated pods too): the gates still hold it.
    assert q.where("default/a") == GATED
    relabelled = with_changes(pod, metadata={"labels": {"a": "b"}})
    q.update(pod, relabelled)
    assert q.where("default/a") == GATED
    ungated = with_changes(relabelled, spec={"schedulingGates": []})
    q.update(relabelled, ungated)
    assert q.where("default/a") == ACTIVE
    qpi = pop(q)
    assert qpi.gating_plugin == ""
    # The scheduling SLI starts when the pod first becomes schedulable, as upstream.
    assert qpi.initial_attempt_timestamp == 1360.0
    assert qpi.timestamp == 1000.0


def test_the_leftover_flush_reruns_pre_enqueue_on_long_gated_pods(clock: FakeClock) -> None:
    """v1.37's flush moves gated pods too (a wildcard event reaches a gated pod whatever its gating
    plugin registered): a gate that opened without an event the plugin registered is found within the
    period, and a pod still gated waits a whole period again from that flush."""
    asked: list[str] = []
    gate_open = {"now": False}

    def gate(pod: Any, gating_plugin: str = "") -> str:
        asked.append(gating_plugin)
        return "" if gate_open["now"] else "Quota"

    q = new_queue(clock, pre_enqueue=gate, hints={"Quota": [ClusterEventWithHint(NODE_ADD)]})
    q.add(make_pod("a"))
    clock.advance(299)
    q.flush_unschedulable_leftover()
    assert asked == [""]  # not gated for a whole period yet
    clock.advance(2)
    q.flush_unschedulable_leftover()
    assert asked == ["", "Quota"] and q.where("default/a") == GATED
    clock.advance(30)
    q.flush_unschedulable_leftover()
    assert asked == ["", "Quota"]  # flushed 30 s ago: left alone
    gate_open["now"] = True
    clock.advance(271)
    q.flush_unschedulable_leftover()
    assert asked == ["", "Quota", "Quota"]
    assert q.where("default/a") == ACTIVE


def test_gated_pod_moves_on_an_event_its_gating_plugin_registered(clock: FakeClock) -> None:
    released = {"now": False}

    def gate(pod: Any, gating_plugin: str = "") -> str:
        return "" if released["now"] else "Quota"

    quota_event = ClusterEvent(Resource.WildCard, ActionType.Add)  # e.g. a ResourceQuota change
    q = new_queue(clock, pre_enqueue=gate, hints={"Quota": [ClusterEventWithHint(quota_event)]})
    q.add(make_pod("a"))
    assert q.where("default/a") == GATED
    q.move_all_to_active_or_backoff(NODE_ADD)  # matches the wildcard registration, gate still closed
    assert q.where("default/a") == GATED
    released["now"] = True
    q.move_all_to_active_or_backoff(ClusterEvent(Resource.Node, ActionType.UpdateNodeLabel))  # not Add
    assert q.where("default/a") == GATED
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.where("default/a") == ACTIVE


def test_a_gated_pod_released_by_an_event_runs_pre_enqueue_once(clock: FakeClock) -> None:
    """Upstream runs PreEnqueue once per move (as the pod enters activeQ or backoffQ) and, once every
    plugin passes, forgets the gating plugin: the release's run is the only one, and a later run
    (a backoff ending) starts from the first plugin again."""
    asked: list[str] = []
    released = {"now": False}

    def gate(pod: Any, gating_plugin: str = "") -> str:
        asked.append(gating_plugin)
        return "" if released["now"] else "Quota"

    quota_event = ClusterEvent(Resource.WildCard, ActionType.Add)
    q = new_queue(clock, pre_enqueue=gate, hints={"Quota": [ClusterEventWithHint(quota_event)]})
    pod = make_pod("a")
    q.add(pod)
    released["now"] = True
    asked.clear()
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.where("default/a") == ACTIVE
    assert asked == ["Quota"]
    qpi = pop(q)
    assert qpi.gating_plugin == "" and qpi.initial_attempt_timestamp == 1000.0

    # Gated again after a failed attempt (attempts 1), then released while its backoff still runs.
    fail(q, qpi, "Quota")
    released["now"] = False
    q.activate([pod])
    assert q.where("default/a") == GATED
    released["now"] = True
    asked.clear()
    q.move_all_to_active_or_backoff(NODE_ADD)
    assert q.where("default/a") == BACKOFF
    assert asked == ["Quota"]
    clock.advance(60)
    q.flush_backoff_completed()
    assert q.where("default/a") == ACTIVE
    assert asked == ["Quota", ""]


# --------------------------------------------------------------------------- activate, run


def test_activate_skips_backoff_and_unschedulable(clock: FakeClock) -> None:
    q = new_queue(clock)
    a, b = make_pod("a"), make_pod("b")
    q.add(a)
    q.add(b)
    fail(q, pop(q))
    fail(q, pop(q), "NodeAffinity")
    q.activate([a, b, make_pod("unknown")])
    assert q.where("default/a") == ACTIVE and q.where("default/b") == ACTIVE
    assert q.where("default/unknown") is None


def test_pre_enqueue_is_told_the_plugin_that_gated_the_pod(clock: FakeClock) -> None:
    """Upstream runs a gated pod's gating plugin first: the queue passes it along on every rerun,
    and nothing once the pod has passed."""
    asked: list[str] = []
    gates = ["Quota", "Other", ""]

    def gate(pod: Any, gating_plugin: str = "") -> str:
        asked.append(gating_plugin)
        return gates[min(len(asked) - 1, len(gates) - 1)]

    q = new_queue(clock, pre_enqueue=gate)
    pod = make_pod("a")
    q.add(pod)
    q.activate([pod])
    q.activate([pod])
    assert q.where("default/a") == ACTIVE
    assert asked[:3] == ["", "Quota", "Other"]


def test_activate_reruns_pre_enqueue_of_a_gated_pod(clock: FakeClock) -> None:
    """Upstream's Activate finds gated pods in unschedulablePods and runs PreEnqueue again: a
    preemptor held while its preemption runs is released when that preemption fails."""
    running = {"now": True}

    def gate(pod: Any, gating_plugin: str = "") -> str:
        return "DefaultPreemption" if running["now"] else ""

    q = new_queue(clock, pre_enqueue=gate)
    pod = make_pod("a")
    q.add(pod)
    assert q.where("default/a") == GATED
    q.activate([pod])  # the gate is still closed: nothing changes
    assert q.where("default/a") == GATED
    running["now"] = False
    q.activate([pod])
    assert q.where("default/a") == ACTIVE
    assert pop(q).key == "default/a"


def test_activate_while_in_flight_requeues_immediately_on_failure(clock: FakeClock) -> None:
    q = new_queue(clock)
    pod, other = make_pod("a"), make_pod("other")
    q.add(pod)
    q.add(other)
    qpi, other_qpi = pop(q), pop(q)
    q.activate([pod])
    fail(q, other_qpi, "NodeAffinity")  # ForceActivate was aimed at "a" only
    assert q.where("default/other") == UNSCHEDULABLE
    fail(q, qpi, "NodeAffinity")
    assert q.where("default/a") == BACKOFF


async def test_run_flushes_on_the_injected_sleep(clock: FakeClock) -> None:
    q = new_queue(clock, sleep=clock.sleep)
    q.add(make_pod("err"))
    q.add(make_pod("uns"))
    fail(q, pop(q))
    fail(q, pop(q), "NodeAffinity")
    runner = asyncio.create_task(q.run())
    await wait_until(lambda: clock.sleepers == 2)
    clock.advance(1)  # backoff flusher wakes; the error pod's 1 s backoff is over, its window not yet
    await wait_until(lambda: clock.sleepers == 2)
    assert q.where("default/err") == BACKOFF
    clock.advance(1)
    await wait_until(lambda: q.where("default/err") == ACTIVE)
    got = await q.pop()
    assert got is not None and got.key == "default/err"
    q.done(got)
    for _ in range(9):  # the unschedulable flusher checks at 1031, 1061, ... 1271: not over 300 s yet
        await wait_until(lambda: clock.sleepers == 2)
        clock.advance(30)
    await wait_until(lambda: clock.sleepers == 2)
    assert q.where("default/uns") == UNSCHEDULABLE
    clock.advance(30)  # checks at 1301: 301 s > 300 s
    await wait_until(lambda: q.where("default/uns") == ACTIVE)
    q.close()
    await asyncio.wait_for(runner, timeout=2)


async def test_run_returns_on_close_even_mid_sleep(clock: FakeClock) -> None:
    sleeping: list[float] = []

    async def real_sleep(seconds: float) -> None:
        sleeping.append(seconds)
        await asyncio.sleep(seconds)

    q = new_queue(clock, sleep=real_sleep)  # the flushers' real intervals: 1 s and 30 s
    runner = asyncio.create_task(q.run())
    await wait_until(lambda: len(sleeping) == 2)  # both flushers are inside their sleep
    assert sorted(sleeping) == [1.0, 30.0]
    loop = asyncio.get_running_loop()
    start = loop.time()
    q.close()
    await asyncio.wait_for(runner, timeout=2)
    assert runner.done() and runner.exception() is None
    assert loop.time() - start < 1.0  # it did not sleep out even the shorter interval
    await asyncio.wait_for(q.run(), timeout=0.5)  # closed: returns at once, starting no flusher
    assert len(sleeping) == 2


def test_pop_from_backoff_runs_pre_enqueue(clock: FakeClock) -> None:
    """A pod taken from backoffQ while activeQ is empty passes PreEnqueue first (upstream runs it when
    the pod enters backoffQ): DefaultPreemption holds a preemptor whose victims are being evicted."""
    held = {"now": False}

    def gate(pod: Any, gating_plugin: str = "") -> str:
        return "DefaultPreemption" if held["now"] else ""

    hints = {name: [ClusterEventWithHint(NODE_ADD)] for name in ("NodeAffinity", "DefaultPreemption")}
    q = new_queue(clock, pre_enqueue=gate, hints=hints)
    q.add(make_pod("a"))
    qpi = pop(q)
    q.move_all_to_active_or_backoff(NODE_ADD)  # seen in flight: the rejection is retried after backoff
    held["now"] = True  # PostFilter started a preemption for it
    fail(q, qpi, "NodeAffinity")
    assert q.where("default/a") == BACKOFF
    assert q.pop_nowait() is None
    assert q.where("default/a") == GATED
    held["now"] = False
    q.move_all_to_active_or_backoff(NODE_ADD)  # e.g. the last victim's deletion
    assert q.where("default/a") == BACKOFF  # its backoff is still running
    clock.advance(2.0)
    assert q.pop_nowait() is qpi


def test_a_flushed_pod_is_remembered_until_it_fails_again_is_gated_again_or_leaves(clock: FakeClock) -> None:
    """Upstream's WasFlushedFromUnschedulable: set by the leftover flush, cleared by the next failed
    attempt and by PreEnqueue gating the pod again; what scheduler_pod_scheduled_after_flush_total
    reads when the pod binds."""
    gate_open = {"now": True}

    def gate(pod: Any, gating_plugin: str = "") -> str:
        return "" if gate_open["now"] else "Quota"

    q = new_queue(clock, pre_enqueue=gate, hints={"Quota": [ClusterEventWithHint(NODE_ADD)]})
    a, b = make_pod("a"), make_pod("b")
    q.add(a)
    q.add(b)
    first_a, first_b = pop(q), pop(q)
    fail(q, first_a, "NodeAffinity")
    fail(q, first_b, "NodeAffinity")
    clock.advance(301)
    q.flush_unschedulable_leftover()
    clock.advance(11)
    q.flush_backoff_completed()
    second_a = pop(q)
    assert q.was_flushed(second_a)
    q.done(second_a)  # bound: forgotten
    assert not q.was_flushed(second_a)
    second_b = pop(q)
    fail(q, second_b, "NodeAffinity")  # failed again after the flush: not counted if it binds later
    assert not q.was_flushed(second_b)
    clock.advance(301)
    gate_open["now"] = False
    q.flush_unschedulable_leftover()  # moved by the flush, gated again by PreEnqueue
    assert q.where("default/b") == GATED
    gated = q.get("default/b")
    assert gated is not None and not q.was_flushed(gated)
    q.delete(b)
    assert q.get("default/b") is None


def test_an_update_of_a_pod_the_queue_does_not_hold_counts_as_an_add(clock: FakeClock) -> None:
    """v1.37.2's Update ends in addPod for a pod in no queue: its incoming-pods label is
    UnscheduledPodAdd (v1.36 said UnscheduledPodUpdate)."""
    q = new_queue(clock)
    pod = make_pod("a")
    added, updated = (
        incoming_value(ACTIVE, "UnscheduledPodAdd"),
        incoming_value(ACTIVE, "UnscheduledPodUpdate"),
    )
    q.update(pod, with_changes(pod, metadata={"labels": {"x": "y"}}))
    assert q.where("default/a") == ACTIVE
    assert incoming_value(ACTIVE, "UnscheduledPodAdd") == added + 1
    assert incoming_value(ACTIVE, "UnscheduledPodUpdate") == updated


def test_a_pods_own_update_is_a_target_pod_event(clock: FakeClock) -> None:
    """v1.37.2's Update reports the pod's own change as TargetPod events: a registration for
    UnscheduledPod updates does not hear it (one for Pod or TargetPod does), and the move is counted
    under the TargetPod label, e.g. TargetPodUpdatePodSchedulingGatesEliminated."""
    target_update = ClusterEvent(Resource.TargetPod, ActionType.Update)
    q = new_queue(
        clock,
        pre_enqueue=scheduling_gates_pre_enqueue,
        hints={
            "OthersOnly": [ClusterEventWithHint(ClusterEvent(Resource.UnscheduledPod, ActionType.Update))],
            "Itself": [ClusterEventWithHint(target_update)],
            **GATES_HINTS,
        },
    )
    a, b = make_pod("a"), make_pod("b")
    q.add(a)
    q.add(b)
    fail(q, pop(q), "OthersOnly")
    fail(q, pop(q), "Itself")
    clock.advance(60)  # both backoffs over
    q.update(a, with_changes(a, metadata={"labels": {"x": "1"}}))
    q.update(b, with_changes(b, metadata={"labels": {"x": "1"}}))
    assert q.where("default/a") == UNSCHEDULABLE
    assert q.where("default/b") == ACTIVE

    gated = make_pod("g", scheduling_gates=["example.com/wait"])
    q.add(gated)
    label = "TargetPodUpdatePodSchedulingGatesEliminated"
    before = incoming_value(ACTIVE, label)
    q.update(gated, with_changes(gated, spec={"schedulingGates": []}))
    assert q.where("default/g") == ACTIVE
    assert incoming_value(ACTIVE, label) == before + 1


def test_a_gated_pods_update_asks_the_hints_before_pre_enqueue(clock: FakeClock) -> None:
    """v1.37.2's Update of a gated pod: each TargetPod event asks the hints of the pod's rejectors
    (its gating plugin among them); PreEnqueue runs only on a Queue, so a relabelled pod stays gated
    without its PreEnqueue plugins being asked, and removing the gates releases it."""
    asked: list[str] = []

    def gate(pod: Any, gating_plugin: str = "") -> str:
        asked.append(gating_plugin)
        return scheduling_gates_pre_enqueue(pod, gating_plugin)

    q = new_queue(clock, pre_enqueue=gate, hints=GATES_HINTS)
    pod = make_pod("a", scheduling_gates=["example.com/wait"])
    q.add(pod)
    assert asked == [""]
    relabelled = with_changes(pod, metadata={"labels": {"a": "b"}})
    q.update(pod, relabelled)
    assert q.where("default/a") == GATED and asked == [""]
    ungated = with_changes(relabelled, spec={"schedulingGates": []})
    q.update(relabelled, ungated)
    assert q.where("default/a") == ACTIVE and asked == ["", "SchedulingGates"]
