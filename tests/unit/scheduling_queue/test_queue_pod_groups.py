"""The queue's part of the pod group cycle (feature gate GenericWorkload): PopSpecificPod, and members
that retry after backoff only, as upstream's ``scheduling_queue.go``."""

from __future__ import annotations

from typing import Any

import pytest

from scheduling_queue import BACKOFF, IN_FLIGHT, UNSCHEDULABLE, SchedulingQueue
from scheduling_queue.clock import FakeClock
from scheduling_queue.testing import fail, make_pod, pop


def member(name: str, group: str = "g") -> dict[str, Any]:
    pod = make_pod(name)
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return pod


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1000.0)


def test_pop_specific_takes_a_pod_from_active_backoff_or_unschedulable(clock: FakeClock) -> None:
    q = SchedulingQueue(clock=clock, generic_workload=True)
    for name in ("a", "b", "c"):
        q.add(member(name))
    fail(q, pop(q), "NodeResourcesFit")  # a: a group member backs off rather than waiting for events
    assert q.where("default/a") == BACKOFF
    taken = q.pop_specific(member("a"))
    assert taken is not None and taken.attempts == 2
    assert q.where("default/a") == IN_FLIGHT
    c = q.pop_specific(member("c"))
    assert c is not None and q.where("default/c") == IN_FLIGHT
    # The one left is the only pod pop() still gives; a popped pod cannot be popped again.
    assert pop(q).key == "default/b"
    assert q.pop_nowait() is None
    assert q.pop_specific(member("c")) is None
    assert q.pop_specific(member("unknown")) is None


def test_rejected_members_go_to_backoff_only_with_the_gate(clock: FakeClock) -> None:
    off = SchedulingQueue(clock=clock)
    off.add(member("a"))
    fail(off, pop(off), "NodeResourcesFit")
    assert off.where("default/a") == UNSCHEDULABLE  # waits for an event its rejector registered

    on = SchedulingQueue(clock=clock, generic_workload=True)
    on.add(member("a"))
    on.add(make_pod("plain"))
    fail(on, pop(on), "NodeResourcesFit")
    fail(on, pop(on), "NodeResourcesFit")
    assert on.where("default/a") == BACKOFF
    assert on.where("default/plain") == UNSCHEDULABLE


def test_a_backing_off_member_is_not_popped_early_when_active_is_empty(clock: FakeClock) -> None:
    """SchedulerPopFromBackoffQ takes a rejected pod early when activeQ is empty; a pod group member
    serves its backoff in full (upstream's group entity has no rejector set, so its backoffQ keeps it
    with the errors). Otherwise a gang that cannot fit is retried back to back on an idle scheduler."""
    q = SchedulingQueue(clock=clock, generic_workload=True)
    q.add(member("a"))
    q.add(make_pod("plain"))
    fail(q, pop(q), "NodeResourcesFit")  # the member: to backoffQ (1 s)
    plain = pop(q)
    q.add_unschedulable_if_not_present(plain)  # an error: backoffQ, never popped early either
    assert q.where("default/a") == BACKOFF and q.where("default/plain") == BACKOFF
    assert q.pop_nowait() is None
    clock.advance(2.0)  # past the 1 s backoff and its ordering window
    assert {pop(q).key, pop(q).key} == {"default/a", "default/plain"}
