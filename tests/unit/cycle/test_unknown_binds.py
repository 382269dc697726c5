"""Bindings whose outcome is unknown: the record (``scheduler/cycle/unknown_binds.py``) and the
scheduler settling it from the watch (``Scheduler.pod_bound``), fakes only at the API seam."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import orjson
import urllib3
from prometheus_client import REGISTRY

from scheduler.app.event_handlers import EventHandlers
from scheduler.client.api import BindingOutcomeUnknown
from scheduler.cycle.binding import Outcome
from scheduler.cycle.unknown_binds import UnknownBind, UnknownBinds
from tests.unit.fakes import PROFILE, CoreEnv, make_node, make_pod, status_error, wait_for

MakeEnv = Callable[..., CoreEnv]


def record(node: str = "n1") -> UnknownBind:
    return UnknownBind("default/a", node, PROFILE, 1, 100.0)


def bound_to(pod: dict[str, Any], node: str) -> dict[str, Any]:
    new = copy.deepcopy(pod)
    new["spec"]["nodeName"] = node
    new["metadata"]["resourceVersion"] = str(int(new["metadata"]["resourceVersion"]) + 1000)
    return new


# --- the record -------------------------------------------------------------------------------------


def test_a_pod_bound_to_the_recorded_node_settles_its_record_once() -> None:
    binds = UnknownBinds()
    binds.remember("uid-default-a", record("n1"))
    assert "uid-default-a" in binds
    assert binds.settle(make_pod("a", node_name="n1")) == record("n1")
    assert "uid-default-a" not in binds
    assert binds.settle(make_pod("a", node_name="n1")) is None


def test_a_pod_bound_elsewhere_drops_the_record_and_a_pending_one_keeps_it() -> None:
    binds = UnknownBinds()
    binds.remember("uid-default-a", record("n1"))
    assert binds.settle(make_pod("a")) is None  # not bound yet: still unknown
    assert "uid-default-a" in binds
    assert binds.settle(make_pod("a", node_name="n2")) is None
    assert len(binds) == 0


def test_a_namesake_does_not_settle_the_record_of_another_uid() -> None:
    binds = UnknownBinds()
    binds.remember("uid-default-a", record("n1"))
    assert binds.settle(make_pod("a", node_name="n1", uid="uid-new")) is None
    assert "uid-default-a" in binds


def test_records_expire_and_stay_bounded() -> None:
    now = [0.0]
    binds = UnknownBinds(ttl=60.0, maxsize=3, timer=lambda: now[0])
    for i in range(5):
        binds.remember(f"uid-{i}", record())
    assert len(binds) == 3
    now[0] = 61.0
    assert len(binds) == 0
    binds.remember("", record())  # a pod without a uid cannot be matched: not kept
    assert len(binds) == 0


# --- the scheduler ----------------------------------------------------------------------------------


LOST = urllib3.exceptions.ProtocolError("POST binding: RemoteDisconnected('Remote end closed connection')")


def refused() -> Exception:
    err = urllib3.exceptions.ProtocolError("connect failed")
    err.__cause__ = ConnectionRefusedError(111, "Connection refused")
    return err


class ApiServer:
    """Binding answers lost and the API server down for reads (the kill), until ``up`` is set; status
    patches fail with 503 while down, so the failed attempt's PodScheduled=False waits for a retry."""

    def __init__(self, *, bind_after: tuple[int, bytes] = (201, b"{}")) -> None:
        self.up = False
        self.bind_after = bind_after
        self.release = threading.Event()
        self.release.set()

    def __call__(self, method: str, path: str, body: Any) -> tuple[int, bytes]:
        if path.endswith("/binding"):
            if not self.up:
                raise LOST
            assert self.release.wait(5.0)
            return self.bind_after
        if not self.up and method == "GET":
            raise refused()
        if not self.up and path.endswith("/status"):
            return status_error(503, "down")
        return 201, b"{}"


def scheduled_events(env: CoreEnv) -> list[dict[str, Any]]:
    return [e for e in env.rest.events() if e["reason"] == "Scheduled"]


def handlers(env: CoreEnv) -> EventHandlers:
    return EventHandlers(
        queue=env.queue,
        cache=env.cache,
        profiles=[PROFILE],
        on_pod_bound=env.sched.pod_bound,
        on_pod_deleted=env.sched.pod_deleted,
    )


async def lose_a_binding(env: CoreEnv, h: EventHandlers, pod: dict[str, Any]) -> None:
    h.on_pod_add(pod)
    await env.schedule_next()
    await env.wait_bindings(1)
    result = env.results[0]
    assert result.outcome is Outcome.ERROR
    assert result.status is not None and isinstance(result.status.error, BindingOutcomeUnknown)
    assert pod["metadata"]["uid"] in env.sched.unknown_binds


def pods_bound() -> float:
    return REGISTRY.get_sample_value("scheduler_pod_scheduling_attempts_count") or 0.0


async def test_a_lost_binding_the_watch_shows_landed_gets_its_scheduled_event(make_env: MakeEnv) -> None:
    server = ApiServer()
    env = make_env([make_node("n1")], respond=server)
    h = handlers(env)
    pod = make_pod("a", cpu="1")
    await lose_a_binding(env, h, pod)
    assert env.queue.where("default/a") == "backoff"
    # The failed attempt's PodScheduled=False was refused (the API server is down): it waits ~10 s.
    await wait_for(lambda: env.recorder.pending_retries == 1)
    bound_before = pods_bound()

    server.up = True
    h.on_pod_update(pod, bound_to(pod, "n1"))  # the watch, after the API server came back

    env.clock.advance(30.0)
    env.recorder.retry_due()
    env.flush_writes()
    [event] = scheduled_events(env)
    # What a successful bind writes.
    assert event["note"] == "Successfully assigned default/a to n1"
    assert (event["action"], event["type"], event["reportingController"]) == ("Binding", "Normal", PROFILE)
    assert event["regarding"]["uid"] == pod["metadata"]["uid"]
    assert pod["metadata"]["uid"] not in env.sched.unknown_binds
    assert env.queue.where("default/a") is None
    assert env.sched.stats.scheduled == 1
    assert pods_bound() == bound_before + 1
    # The failed attempt's PodScheduled=False (its first try refused) is never sent again.
    patches = [c for c in env.rest.status_patches() if c.path.endswith("/pods/a/status")]
    assert len(patches) == 1


async def test_a_lost_binding_the_watch_shows_elsewhere_or_deleted_writes_nothing(
    make_env: MakeEnv,
) -> None:
    server = ApiServer()
    env = make_env([make_node("n1")], respond=server)
    h = handlers(env)
    a, b = make_pod("a", cpu="1"), make_pod("b", cpu="1")
    await lose_a_binding(env, h, a)
    env.results.clear()
    await lose_a_binding(env, h, b)
    server.up = True
    h.on_pod_update(a, bound_to(a, "n9"))  # another scheduler bound it: our Binding did not land
    h.on_pod_delete(b)
    assert len(env.sched.unknown_binds) == 0
    env.flush_writes()
    assert scheduled_events(env) == []


async def test_a_retry_that_binds_writes_one_scheduled_event_whatever_comes_first(
    make_env: MakeEnv,
) -> None:
    """The lost Binding did not land; the retry binds to the same node, and the watch shows it bound
    while that retry's result is still on its way: the retry's own Event is the only one."""
    server = ApiServer()
    env = make_env([make_node("n1")], respond=server)
    h = handlers(env)
    pod = make_pod("a", cpu="1")
    await lose_a_binding(env, h, pod)
    server.up = True
    server.release.clear()
    env.clock.advance(20.0)
    env.queue.flush_backoff_completed()
    await env.schedule_next()
    h.on_pod_update(pod, bound_to(pod, "n1"))  # the watch first
    assert env.sched.unknown_binds  # left to the binding in flight
    server.release.set()
    await env.wait_bindings(2)
    assert env.results[1].outcome is Outcome.BOUND
    assert len(env.sched.unknown_binds) == 0
    env.flush_writes()
    assert len(scheduled_events(env)) == 1


async def test_a_retry_answered_already_assigned_settles_the_record_when_it_returns(
    make_env: MakeEnv,
) -> None:
    """The lost Binding did land; the retry (popped before the watch caught up) is answered 409
    "already assigned", and the watch shows the pod bound while that retry was binding."""
    server = ApiServer(bind_after=status_error(409, 'pod a is already assigned to node "n1"'))
    env = make_env([make_node("n1")], respond=server)
    h = handlers(env)
    pod = make_pod("a", cpu="1")
    await lose_a_binding(env, h, pod)
    server.up = True
    server.release.clear()
    env.clock.advance(20.0)
    env.queue.flush_backoff_completed()
    await env.schedule_next()
    h.on_pod_update(pod, bound_to(pod, "n1"))
    server.release.set()
    await env.wait_bindings(2)
    assert env.results[1].outcome is Outcome.CONFLICT
    assert len(env.sched.unknown_binds) == 0
    env.flush_writes()
    [event] = scheduled_events(env)
    assert event["note"] == "Successfully assigned default/a to n1"


async def test_a_refused_binding_is_no_unknown_outcome(make_env: MakeEnv) -> None:
    """A refused connection sent nothing: the failure is certain, no record is kept."""

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if path.endswith("/binding") or method == "GET":
            raise refused()
        return 201, orjson.dumps({})

    env = make_env([make_node("n1")], respond=respond)
    h = handlers(env)
    h.on_pod_add(make_pod("a", cpu="1"))
    await env.schedule_next()
    await env.wait_bindings(1, timeout=5.0)
    assert env.results[0].outcome is Outcome.ERROR
    assert len(env.sched.unknown_binds) == 0


async def test_a_lost_binding_the_watch_showed_landed_while_in_flight_is_a_success(
    make_env: MakeEnv,
) -> None:
    """The watch shows the pod bound before the Binding's failure (answer lost, read-back failed)
    reaches the loop: it is a successful bind, and no failure is written onto the bound pod."""
    server = ApiServer()
    env = make_env([make_node("n1")], respond=server)
    h = handlers(env)
    pod = make_pod("a", cpu="1")
    h.on_pod_add(pod)
    await env.schedule_next()
    # The Binding landed; the watch shows it before the binding thread's failure reaches the loop.
    h.on_pod_update(pod, bound_to(pod, "n1"))
    await env.wait_bindings(1)
    error = env.results[0].status.error if env.results[0].status is not None else None
    assert isinstance(error, BindingOutcomeUnknown)
    assert env.sched.stats.scheduled == 1 and env.sched.stats.errors == 0
    assert env.queue.where("default/a") is None
    assert len(env.sched.unknown_binds) == 0
    env.flush_writes()
    assert [e["reason"] for e in env.rest.events()] == ["Scheduled"]
    assert env.rest.status_patches() == []


async def test_a_landed_binding_whose_failure_patch_landed_after_it_says_scheduled_again(
    make_env: MakeEnv,
) -> None:
    """The failed attempt's PodScheduled=False reached the API server after the Binding that landed:
    the watch shows the pod bound and not scheduled; once settled it says PodScheduled=True."""
    server = ApiServer()
    env = make_env([make_node("n1")], respond=server)
    h = handlers(env)
    pod = make_pod("a", cpu="1")
    await lose_a_binding(env, h, pod)
    server.up = True
    shown = bound_to(pod, "n1")
    shown["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}]
    h.on_pod_update(pod, shown)
    env.flush_writes()
    [patch] = [
        c.body for c in env.rest.status_patches() if c.body["status"]["conditions"][0]["status"] == "True"
    ]
    condition = patch["status"]["conditions"][0]
    assert (condition["type"], condition["reason"], condition["message"]) == ("PodScheduled", None, None)
