"""The Scheduled Events a killed scheduler may have left unwritten, written again at start-up
(``Scheduler.recover_scheduled_events``) under the name the first write used."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.client.events import rfc3339
from scheduler.cycle.schedule_one import MAX_RECOVERED_SCHEDULED_EVENTS, SCHEDULED_EVENT_RECOVERY_SECONDS
from tests.unit.fakes import PROFILE, CoreEnv, make_node, make_pod, status_error

MakeEnv = Callable[..., CoreEnv]


def bound_pod(name: str, node: str, bound_at: float, *, scheduler_name: str = PROFILE) -> dict[str, Any]:
    condition = {"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(bound_at)}
    return make_pod(name, node_name=node, scheduler_name=scheduler_name, conditions=[condition])


async def test_recently_bound_pods_of_our_profiles_get_their_scheduled_event_again(
    make_env: MakeEnv,
) -> None:
    env = make_env([make_node("n1")])
    now = env.clock.now()
    pods = [
        bound_pod("recent", "n1", now - 30),
        bound_pod("old", "n1", now - SCHEDULED_EVENT_RECOVERY_SECONDS - 60),
        bound_pod("theirs", "n1", now - 30, scheduler_name="default-scheduler"),
        make_pod("pending"),
        make_pod("no-condition", node_name="n1"),
    ]
    assert env.sched.recover_scheduled_events(pods, now) == 1
    env.flush_writes()
    [event] = env.rest.events()
    assert event["regarding"]["name"] == "recent"
    assert event["reason"] == "Scheduled"
    assert event["note"] == "Successfully assigned default/recent to n1"
    assert event["reportingController"] == PROFILE


async def test_the_recovered_event_has_the_name_of_the_first_write_so_it_is_never_doubled(
    make_env: MakeEnv,
) -> None:
    created: set[str] = set()

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "POST" and path.endswith("/events"):
            name = body["metadata"]["name"]
            if name in created:
                return status_error(409, f'events "{name}" already exists')
            created.add(name)
        return 201, b"{}"

    env = make_env([make_node("n1")], respond=respond)
    pod = make_pod("a", cpu="1")
    env.queue.add(pod)
    await env.schedule_next()
    await env.wait_bindings(1)
    now = env.clock.now()
    bound = bound_pod("a", "n1", now - 5)
    env.sched.recover_scheduled_events([bound], now)
    env.flush_writes()
    first, again = env.rest.events()
    assert first["metadata"]["name"] == again["metadata"]["name"]
    assert len(created) == 1
    assert env.recorder.dropped == 0  # the 409 is the Event being there: not a failure


async def test_a_flood_of_recent_binds_is_not_replayed_whole(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1")])
    now = env.clock.now()
    pods = [bound_pod(f"p{i}", "n1", now - i * 0.01) for i in range(MAX_RECOVERED_SCHEDULED_EVENTS + 5)]
    assert env.sched.recover_scheduled_events(pods, now) == MAX_RECOVERED_SCHEDULED_EVENTS
    env.flush_writes()
    names = {e["regarding"]["name"] for e in env.rest.events()}
    assert len(names) == MAX_RECOVERED_SCHEDULED_EVENTS
    assert "p0" in names and f"p{MAX_RECOVERED_SCHEDULED_EVENTS + 4}" not in names  # the newest first
