"""Preemption in the scheduling cycle, fakes only at the API seam (upstream's schedule_one_test.go
nominated-pod cases and the async preemption of executor_test.go): nomination, the victims' writes off
the loop, PreEnqueue holding the preemptor, the wake-up by the victims' deletion, nominated pods counted
by Filter so two preemptors never claim the same room."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from scheduler import metrics
from scheduler.app.event_handlers import EventHandlers
from scheduler.plugins.defaultpreemption import DefaultPreemption
from tests.unit.fakes import PROFILE, CoreEnv, make_node, make_pod, wait_for

MakeEnv = Callable[..., CoreEnv]


def with_priority(pod: dict[str, Any], priority: int, **spec: Any) -> dict[str, Any]:
    pod["spec"]["priority"] = priority
    pod["spec"].update(spec)
    return pod


def running(name: str, node: str, cpu: str, priority: int) -> dict[str, Any]:
    pod = with_priority(make_pod(name, cpu=cpu, node_name=node), priority)
    pod["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    return pod


def deletes(env: CoreEnv) -> list[str]:
    return [c.path.rsplit("/", 1)[-1] for c in env.rest.matching("DELETE", "/pods/")]


def nominations(env: CoreEnv, name: str) -> list[Any]:
    out = []
    for call in env.rest.status_patches():
        if call.path.endswith(f"/pods/{name}/status") and "nominatedNodeName" in call.body["status"]:
            out.append(call.body["status"]["nominatedNodeName"])
    return out


async def test_preemptor_evicts_the_minimal_set_waits_and_binds_after_the_victims_are_gone(
    make_env: MakeEnv,
) -> None:
    env = make_env([make_node("n1", cpu="2"), make_node("n2", cpu="2")])
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    victims = {
        "n1": [running("a1", "n1", "1", 10), running("a2", "n1", "1", 10)],
        # n2's pods are more important: n1 is the candidate.
        "n2": [running("b1", "n2", "1", 50), running("b2", "n2", "1", 50)],
    }
    for pods in victims.values():
        for pod in pods:
            handlers.on_pod_add(pod)
    attempts = metrics.PREEMPTION_ATTEMPTS._value.get()
    preemptor = with_priority(make_pod("vip", cpu="1"), 100)
    env.queue.add(preemptor)
    await env.schedule_next()

    # One victim suffices on n1; the preemptor is nominated there and waits in the queue.
    await wait_for(lambda: env.sched.preemption.in_flight == 0)
    assert deletes(env) == ["a2"] or deletes(env) == ["a1"]
    victim = deletes(env)[0]
    patches = [c for c in env.rest.status_patches() if c.path.endswith(f"/pods/{victim}/status")]
    [condition] = patches[0].body["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
    )
    assert condition["message"] == f"{PROFILE}: preempting to accommodate a higher priority pod"
    assert metrics.PREEMPTION_ATTEMPTS._value.get() == attempts + 1
    env.flush_writes()
    assert nominations(env, "vip") == ["n1"]
    preempted = [e for e in env.rest.events() if e["reason"] == "Preempted"]
    assert [e["regarding"]["name"] for e in preempted] == [victim]
    assert preempted[0]["note"] == "Preempted by pod uid-default-vip on node n1"
    assert env.queue.nominator.nominated_node_for(preemptor) == "n1"
    assert env.queue.where("default/vip") == "unschedulable"

    # The victim's deletion (the watch event) wakes the preemptor; it binds on its nominated node.
    gone = next(p for p in victims["n1"] if p["metadata"]["name"] == victim)
    handlers.on_pod_delete(gone)
    env.clock.advance(20)
    env.queue.flush_backoff_completed()
    assert env.queue.where("default/vip") == "active"
    await env.schedule_next()
    await env.wait_bindings(1)
    assert env.rest.bindings() == {"vip": "n1"}
    assert env.queue.nominator.nominated_node_for(preemptor) == ""
    assert deletes(env) == [victim]  # nothing else was evicted


async def test_pre_enqueue_holds_the_preemptor_until_its_last_victim_terminates(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1", cpu="1")])
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    low = running("low", "n1", "1", 0)
    handlers.on_pod_add(low)
    preemptor = with_priority(make_pod("vip", cpu="1"), 100)
    [plugin] = [p for p in env.fwk.plugins.post_filter if isinstance(p, DefaultPreemption)]
    executor = env.sched.preemption
    # Hold the writer so the run stays in flight.
    gate = threading.Event()
    original = env.rest.request

    def slow(*args: Any, **kwargs: Any) -> Any:
        if args[0] == "DELETE":
            gate.wait(3)
        return original(*args, **kwargs)

    env.rest.request = slow  # type: ignore[method-assign]
    env.queue.add(preemptor)
    await env.schedule_next()
    assert executor.is_pod_running_preemption(preemptor)
    status = plugin.pre_enqueue(env.pod_infos.get(preemptor))
    assert status is not None and status.message() == "waiting for the preemption for this pod to be finished"
    # The last victim terminating ends the hold (upstream's lastVictimsPendingPreemption).
    terminating = dict(
        low,
        metadata={**low["metadata"], "resourceVersion": "999", "deletionTimestamp": "2024-01-01T00:01:00Z"},
    )
    handlers.on_pod_update(low, terminating)
    assert not executor.is_pod_running_preemption(preemptor)
    gate.set()
    await wait_for(lambda: executor.in_flight == 0)


async def test_two_preemptors_never_claim_the_same_room(make_env: MakeEnv) -> None:
    """The second preemptor counts the first one's nomination (RunFilterPluginsWithNominatedPods): it
    neither takes the freed room nor evicts anything more for it."""
    env = make_env([make_node("n1", cpu="1")])
    env.sched.nearest_misses_in_events = True
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    handlers.on_pod_add(running("low", "n1", "1", 0))
    first = with_priority(make_pod("first", cpu="1"), 100)
    second = with_priority(make_pod("second", cpu="1"), 100)
    env.queue.add(first)
    await env.schedule_next()
    await wait_for(lambda: env.sched.preemption.in_flight == 0)
    env.queue.add(second)
    await env.schedule_next()
    assert deletes(env) == ["low"]
    env.flush_writes()
    assert nominations(env, "first") == ["n1"]
    assert nominations(env, "second") == []
    [failed] = [
        e
        for e in env.rest.events()
        if e["reason"] == "FailedScheduling" and "second" in e["regarding"]["name"]
    ]
    # Upstream's text, then explain's nearest miss.
    assert failed["note"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 Insufficient cpu. "
        "Nearest misses: n1: Insufficient cpu (requests 1, free 0)."
    )


async def test_nominated_node_is_evaluated_first(make_env: MakeEnv) -> None:
    """evaluateNominatedNode: a pod nominated to a node that fits goes there without scoring others."""
    env = make_env([make_node(f"n{i}", cpu="4") for i in range(5)])
    pod = with_priority(make_pod("p", cpu="1"), 10)
    pod["status"]["nominatedNodeName"] = "n3"
    env.queue.add(pod)
    await env.schedule_next()
    await env.wait_bindings(1)
    assert env.rest.bindings() == {"p": "n3"}


async def test_lower_priority_nominations_on_the_node_are_cleared(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1", cpu="1")])
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    handlers.on_pod_add(running("low", "n1", "1", 0))
    mid = with_priority(make_pod("mid", cpu="1"), 50)
    env.queue.add(mid)
    await env.schedule_next()
    await wait_for(lambda: env.sched.preemption.in_flight == 0)
    assert env.queue.nominator.nominated_node_for(mid) == "n1"
    # A more important pod preempts the same node: mid's nomination goes, in memory and in the API.
    vip = with_priority(make_pod("vip", cpu="1"), 100)
    mid_nominated = dict(
        mid,
        metadata={**mid["metadata"], "resourceVersion": "998"},
        status={**mid["status"], "nominatedNodeName": "n1"},
    )
    env.queue.nominator.add_nominated_pod(mid_nominated, "n1")
    low2 = running("low2", "n1", "1", 0)
    handlers.on_pod_add(low2)
    env.queue.add(vip)
    await env.schedule_next()
    await wait_for(lambda: env.sched.preemption.in_flight == 0)
    assert env.queue.nominator.nominated_node_for(mid) == ""
    cleared = [
        c
        for c in env.rest.status_patches()
        if c.path.endswith("/pods/mid/status") and c.body == {"status": {"nominatedNodeName": None}}
    ]
    assert len(cleared) == 1


def _three_victims(env: CoreEnv) -> EventHandlers:
    """n1 is full of three lower-priority pods; a 3-CPU preemptor needs all of them gone. The least
    important (priority 1) is the last victim."""
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    for name, priority in (("v3", 3), ("v2", 2), ("v1", 1)):
        handlers.on_pod_add(running(name, "n1", "1", priority))
    env.queue.add(with_priority(make_pod("vip", cpu="3"), 100))
    return handlers


async def test_victims_but_the_last_are_evicted_in_parallel_then_the_last(make_env: MakeEnv) -> None:
    """executor.go prepareCandidateAsync: every victim but the last at once, then the last one."""
    env = make_env([make_node("n1", cpu="3")])
    _three_victims(env)
    # Both earlier deletions must be in flight together to pass this barrier: one at a time, it breaks.
    together = threading.Barrier(2, timeout=3)
    order: list[str] = []
    original = env.rest.respond

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "DELETE":
            name = path.rsplit("/", 1)[-1]
            if name != "v1":
                together.wait()
            order.append(name)
        return original(method, path, body)

    env.rest.respond = respond
    await env.schedule_next()
    executor = env.sched.preemption
    await wait_for(lambda: executor.in_flight == 0)
    assert not together.broken
    assert sorted(order[:2]) == ["v2", "v3"] and order[2] == "v1"
    # Each victim's DisruptionTarget patch precedes its deletion.
    calls = [(c.method, c.path.rsplit("/", 2)[-2:]) for c in env.rest.calls if "/pods/v" in c.path]
    for name in ("v1", "v2", "v3"):
        patch = calls.index(("PATCH", [name, "status"]))
        delete = calls.index(("DELETE", ["pods", name]))
        assert patch < delete
    env.flush_writes()
    preempted = sorted(e["regarding"]["name"] for e in env.rest.events() if e["reason"] == "Preempted")
    assert preempted == ["v1", "v2", "v3"]


async def test_running_preemption_until_the_last_victims_turn(make_env: MakeEnv) -> None:
    """Upstream sets lastVictimsPendingPreemption only when the last victim's turn comes: while the
    others are being evicted the preemptor is held even if the last victim is already terminating."""
    env = make_env([make_node("n1", cpu="3")])
    handlers = _three_victims(env)
    release = threading.Event()
    original = env.rest.respond

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "DELETE" and not path.endswith("/v1"):
            release.wait(3)
        return original(method, path, body)

    env.rest.respond = respond
    await env.schedule_next()
    executor = env.sched.preemption
    preemptor = env.queue.get("default/vip")
    assert preemptor is not None
    last = env.cache.get_pod("default/v1")
    assert last is not None
    terminating = dict(
        last.pod, metadata={**last.pod["metadata"], "resourceVersion": "999", "deletionTimestamp": "x"}
    )
    handlers.on_pod_update(last.pod, terminating)
    assert executor.is_pod_running_preemption(preemptor.pod)
    release.set()
    await wait_for(lambda: executor.in_flight == 0)
    # The watch shows the other two deletions, which the API server acknowledged.
    assert executor.is_pod_running_preemption(preemptor.pod)
    for name in ("v2", "v3"):
        other = env.cache.get_pod(f"default/{name}")
        assert other is not None
        handlers.on_pod_delete(other.pod)
    assert not executor.is_pod_running_preemption(preemptor.pod)


async def test_a_failed_eviction_spares_the_last_victim_and_activates_the_preemptor(
    make_env: MakeEnv,
) -> None:
    """Upstream activates the preemptor when a write fails; here not before the informer shows the
    deletion that did succeed (v2): an attempt on a cache still showing v2 could reprieve it and
    evict another pod in its place."""
    env = make_env([make_node("n1", cpu="3")])
    _three_victims(env)
    original = env.rest.respond

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "DELETE" and path.endswith("/v3"):
            return 500, b'{"message": "etcd is down"}'
        return original(method, path, body)

    env.rest.respond = respond
    executions = metrics.PREEMPTION_GOROUTINES_EXECUTION.labels(metrics.GOROUTINE_RESULT_ERROR)._value.get()
    await env.schedule_next()
    assert env.queue.where("default/vip") == "unschedulable"
    executor = env.sched.preemption
    await wait_for(lambda: executor.in_flight == 0)
    assert sorted(deletes(env)) == ["v2", "v3"]  # v1, the last victim, is not evicted
    errors = metrics.PREEMPTION_GOROUTINES_EXECUTION.labels(metrics.GOROUTINE_RESULT_ERROR)._value.get()
    assert errors == executions + 1
    # Held while the cache still shows v2 running.
    await asyncio.sleep(0.2)
    assert env.queue.where("default/vip") == "unschedulable"
    assert executor.is_pod_running_preemption(env.queue.get("default/vip").pod)  # type: ignore[union-attr]
    v2 = env.cache.get_pod("default/v2")
    assert v2 is not None
    env.cache.remove_pod(v2.pod)  # the informer shows the deletion (no hint wakes vip here)
    # Then activated at once, not left waiting for an event that may never come.
    await wait_for(lambda: env.queue.where("default/vip") == "active")


async def test_a_failed_first_eviction_activates_the_preemptor_at_once(make_env: MakeEnv) -> None:
    """Nothing was deleted, so there is nothing for the cache to catch up with (upstream)."""
    env = make_env([make_node("n1", cpu="3")])
    _three_victims(env)
    original = env.rest.respond

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "DELETE":
            return 500, b'{"message": "etcd is down"}'
        return original(method, path, body)

    env.rest.respond = respond
    await env.schedule_next()
    executor = env.sched.preemption
    await wait_for(lambda: executor.in_flight == 0)
    assert env.queue.where("default/vip") == "active"


def _terminating(pod: Mapping[str, Any], grace: int, finalizers: list[str] | None) -> dict[str, Any]:
    meta = {**pod["metadata"], "resourceVersion": str(int(pod["metadata"]["resourceVersion"]) + 1000)}
    meta["deletionTimestamp"] = "2024-01-01T00:01:00Z"
    meta["deletionGracePeriodSeconds"] = grace
    if finalizers:
        meta["finalizers"] = finalizers
    return dict(pod, metadata=meta)


async def _preempt_one(make_env: MakeEnv) -> tuple[CoreEnv, EventHandlers, dict[str, Any]]:
    """vip (1 CPU) preempts low, the only pod on n1; returns once the executor has deleted it."""
    env = make_env([make_node("n1", cpu="1")])
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    handlers.on_pod_add(running("low", "n1", "1", 0))
    preemptor = with_priority(make_pod("vip", cpu="1"), 100)
    env.queue.add(preemptor)
    await env.schedule_next()
    await wait_for(lambda: env.sched.preemption.in_flight == 0)
    assert deletes(env) == ["low"]
    return env, handlers, preemptor


@pytest.mark.parametrize(
    ("grace", "finalizers", "held"),
    [(0, None, True), (30, None, False), (0, ["example.com/keep"], False)],
    ids=["removed-now", "graceful", "finalizer"],
)
async def test_a_terminating_last_victim_releases_the_preemptor_unless_being_removed(
    make_env: MakeEnv, grace: int, finalizers: list[str] | None, held: bool
) -> None:
    """A victim deleted with grace period 0 and no finalizers is removed by the same request that
    marks it terminating: the preemptor waits for the removal rather than failing on "a terminating
    pod on the nominated node" in between. Graceful termination (or a finalizer) releases it at once,
    as upstream, so it may find room elsewhere meanwhile."""
    env, handlers, preemptor = await _preempt_one(make_env)
    executor = env.sched.preemption
    cached = env.cache.get_pod("default/low")
    assert cached is not None
    terminating = _terminating(cached.pod, grace, finalizers)
    handlers.on_pod_update(cached.pod, terminating)
    assert executor.is_pod_running_preemption(preemptor) is held
    handlers.on_pod_delete(terminating)
    assert not executor.is_pod_running_preemption(preemptor)


async def test_finished_preemption_holds_until_the_informer_shows_the_deletion(make_env: MakeEnv) -> None:
    """The last DELETE returned, but the watch has not delivered it: an attempt now would see the
    victim running and preempt it again. The preemptor is held until the delete event (or a timeout)."""
    env, handlers, preemptor = await _preempt_one(make_env)
    executor = env.sched.preemption
    assert executor.is_pod_running_preemption(preemptor)
    cached = env.cache.get_pod("default/low")
    assert cached is not None
    handlers.on_pod_delete(cached.pod)
    assert not executor.is_pod_running_preemption(preemptor)


async def test_a_namesake_of_the_last_victim_does_not_hold_the_preemptor(make_env: MakeEnv) -> None:
    """A StatefulSet recreates its pod under the same name: that is not the victim."""
    env, handlers, preemptor = await _preempt_one(make_env)
    cached = env.cache.get_pod("default/low")
    assert cached is not None
    handlers.on_pod_delete(cached.pod)
    replacement = running("low", "n1", "1", 0)
    replacement["metadata"]["uid"] = "uid-of-the-replacement"
    handlers.on_pod_add(replacement)
    assert not env.sched.preemption.is_pod_running_preemption(preemptor)


async def test_settling_gives_up_after_its_timeout_and_activates_the_preemptor(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1", cpu="1")])
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    handlers.on_pod_add(running("low", "n1", "1", 0))
    executor = env.sched.preemption
    executor._settle_timeout = 0.05  # the watch never delivers the deletion in this test
    preemptor = with_priority(make_pod("vip", cpu="1"), 100)
    env.queue.add(preemptor)
    await env.schedule_next()
    await wait_for(lambda: executor.in_flight == 0)
    assert executor.is_pod_running_preemption(preemptor)
    assert env.queue.where("default/vip") == "unschedulable"
    await wait_for(lambda: env.queue.where("default/vip") == "active")
    assert not executor.is_pod_running_preemption(preemptor)


async def test_a_victim_already_gone_gets_no_preempted_event_and_is_no_failure(make_env: MakeEnv) -> None:
    """executor.go: a NotFound on the victim's patch or delete ends its preemption quietly (no Event);
    the run does not count as failed."""
    env = make_env([make_node("n1", cpu="1")])
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    handlers.on_pod_add(running("low", "n1", "1", 0))
    original = env.rest.respond

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "DELETE" and path.endswith("/low"):
            return 404, b'{"message": "pods \\"low\\" not found", "reason": "NotFound", "code": 404}'
        return original(method, path, body)

    env.rest.respond = respond
    failed = metrics.PREEMPTION_GOROUTINES_EXECUTION.labels(metrics.GOROUTINE_RESULT_ERROR)
    errors = failed._value.get()
    env.queue.add(with_priority(make_pod("vip", cpu="1"), 100))
    await env.schedule_next()
    executor = env.sched.preemption
    await wait_for(lambda: executor.in_flight == 0)
    assert deletes(env) == ["low"]
    assert (
        metrics.PREEMPTION_GOROUTINES_EXECUTION.labels(metrics.GOROUTINE_RESULT_ERROR)._value.get() == errors
    )
    env.flush_writes()
    assert not [e for e in env.rest.events() if e["reason"] == "Preempted"]
    # Held until the informer shows it gone, like any deleted victim.
    cached = env.cache.get_pod("default/low")
    assert cached is not None
    assert executor.is_pod_running_preemption(env.queue.get("default/vip").pod)  # type: ignore[union-attr]
    handlers.on_pod_delete(cached.pod)
    assert not executor.is_pod_running_preemption(env.queue.get("default/vip").pod)  # type: ignore[union-attr]


async def test_nominated_pods_follow_every_change_of_the_nominations(make_env: MakeEnv) -> None:
    """The nominated PodInfos per node are kept between changes (a dry run asks for them many times),
    and every nomination, move, clearing or pod update shows at once."""
    env = make_env([make_node("n1"), make_node("n2")])
    nominated = env.sched.nominated
    first = with_priority(make_pod("a", cpu="1"), 10)
    assert nominated.nominated_pods_for_node("n1") == ()
    env.queue.nominator.add_nominated_pod(first, "n1")
    assert [p.name for p in nominated.nominated_pods_for_node("n1")] == ["a"]
    assert nominated.nominated_pods_for_node("n1") is nominated.nominated_pods_for_node("n1")
    env.queue.nominator.add_nominated_pod(first, "n2")
    assert nominated.nominated_pods_for_node("n1") == ()
    assert [p.name for p in nominated.nominated_pods_for_node("n2")] == ["a"]
    newer = dict(first, metadata={**first["metadata"], "resourceVersion": "2"})
    env.queue.nominator.update_nominated_pod(first, newer)
    [info] = nominated.nominated_pods_for_node("n2")
    assert info.resource_version == "2"
    nominated.clear_nomination(newer)
    assert nominated.nominated_pods_for_node("n2") == ()
