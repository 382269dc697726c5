"""A node deleted after a pod was assumed on it and before its Binding is sent: the API server would
accept that Binding (it does not check the node exists), leaving the pod bound to a node that is
gone until the pod garbage collector deletes it. The scheduler sends no Binding then; the attempt
fails as an error and the pod is retried on a node that exists."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from scheduler.app.event_handlers import EventHandlers
from scheduler.cycle.binding import Outcome
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from tests.unit.fakes import PROFILE, CoreEnv, make_node, make_pod

MakeEnv = Callable[..., CoreEnv]


class HoldAtPermit:
    name = "Gang"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.Wait), 600.0


def handlers(env: CoreEnv) -> EventHandlers:
    return EventHandlers(
        queue=env.queue,
        cache=env.cache,
        profiles=[PROFILE],
        on_node_deleted=env.sched.node_deleted,
    )


async def test_a_pod_allowed_at_permit_after_its_node_was_deleted_is_not_bound_there(
    make_env: MakeEnv,
) -> None:
    profile: dict[str, Any] = {
        "schedulerName": PROFILE,
        "plugins": {"permit": {"enabled": [{"name": "Gang"}]}},
    }
    env = make_env(
        [make_node("n1")],
        extra_registry={"Gang": lambda args, handle: HoldAtPermit()},
        profile=profile,
    )
    h = handlers(env)
    pod = make_pod("a", cpu="1")
    h.on_pod_add(pod)
    await env.schedule_next()
    waiting = env.sched.waiting_pods["default/a"]
    h.on_node_delete(make_node("n1"))  # the node goes while the pod waits for its gang
    waiting.allow()
    await env.wait_bindings(1)

    assert env.rest.bindings() == {}
    result = env.results[0]
    assert result.outcome is Outcome.ERROR
    assert 'node "n1" was deleted' in str(result.status)
    assert env.queue.where("default/a") == "backoff"
    assert not env.cache.is_assumed("default/a")
    env.flush_writes()
    [event] = [e for e in env.rest.events() if e["reason"] == "FailedScheduling"]
    assert 'node "n1" was deleted' in event["note"]


async def test_a_binding_in_flight_when_its_node_is_deleted_is_not_sent(make_env: MakeEnv) -> None:
    """The node's delete reaches the loop while the pod's binding cycle runs (PreBind, here held)."""
    started, release = threading.Event(), threading.Event()

    class SlowPreBind:
        name = "Slow"

        def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
            started.set()
            assert release.wait(5.0)
            return None

    profile: dict[str, Any] = {
        "schedulerName": PROFILE,
        "plugins": {"preBind": {"enabled": [{"name": "Slow"}]}},
    }
    env = make_env(
        [make_node("n1")],
        extra_registry={"Slow": lambda args, handle: SlowPreBind()},
        profile=profile,
    )
    h = handlers(env)
    h.on_pod_add(make_pod("a", cpu="1"))
    await env.schedule_next()
    assert started.wait(5.0)
    h.on_node_delete(make_node("n1"))
    release.set()
    await env.wait_bindings(1)
    assert env.rest.bindings() == {}
    assert env.results[0].outcome is Outcome.ERROR
    assert env.queue.where("default/a") == "backoff"
