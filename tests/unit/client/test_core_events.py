"""EventRecorder: events.k8s.io/v1 Events with series aggregation, and the PodScheduled condition patch."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.client.api import SchedulerApi
from scheduler.client.events import (
    EVENT_NAME_LIMIT,
    MAX_TRIES,
    NORMAL,
    RETRY_INTERVAL,
    SERIES_WRITERS,
    WARNING,
    EventRecorder,
    micro_time,
    rfc3339,
    truncate_note,
)
from scheduler.client.httppool import ConnectionFailed
from tests.unit.fakes import FakeRest, make_pod, status_error

START = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class Env:
    def __init__(self, **recorder_options: Any) -> None:
        """``recorder_options``: EventRecorder keywords (writers, max_tries, ...) beyond the defaults."""
        self.clock = Clock()
        self.rest = FakeRest()
        self.recorder = EventRecorder(
            SchedulerApi(self.rest),  # type: ignore[arg-type]
            reporting_instance="sched-1",
            clock=self.clock,
            **{"series_window": 600.0, **recorder_options},
        )

    def failed(
        self, pod: dict[str, Any], message: str = "0/3 nodes are available: 3 Insufficient cpu."
    ) -> None:
        self.recorder.event(
            pod,
            event_type=WARNING,
            reason="FailedScheduling",
            action="Scheduling",
            message=message,
            controller="py-scheduler",
        )

    def scheduled(self, pod: dict[str, Any], *, inline: bool = False) -> None:
        self.recorder.event(
            pod,
            event_type=NORMAL,
            reason="Scheduled",
            action="Binding",
            message="Successfully assigned default/p to n1",
            controller="py-scheduler",
            aggregate=False,
            inline=inline,
        )

    def settle(self) -> None:
        """Let the writer pool finish (the recorder can't be used afterwards)."""
        self.recorder.shutdown(wait=True)


@pytest.fixture
def env() -> Iterator[Env]:
    made = Env()
    yield made
    made.recorder.shutdown(wait=True)


def test_first_event_is_created_with_the_events_v1_shape(env: Env) -> None:
    pod = make_pod("p")
    env.failed(pod)
    env.settle()
    [call] = env.rest.matching("POST", "/events")
    assert call.path == "/apis/events.k8s.io/v1/namespaces/default/events"
    body = call.body
    assert body["apiVersion"] == "events.k8s.io/v1" and body["kind"] == "Event"
    assert body["metadata"]["namespace"] == "default"
    assert body["metadata"]["name"].startswith("p.")
    assert body["type"] == "Warning"
    assert (body["reason"], body["action"]) == ("FailedScheduling", "Scheduling")
    assert body["note"] == "0/3 nodes are available: 3 Insufficient cpu."
    assert (body["reportingController"], body["reportingInstance"]) == ("py-scheduler", "sched-1")
    assert body["eventTime"] == micro_time(START) == "2023-11-14T22:13:20.000000Z"
    assert body["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "default",
        "name": "p",
        "uid": pod["metadata"]["uid"],
        "resourceVersion": pod["metadata"]["resourceVersion"],
    }


def test_repeats_within_the_window_become_one_series_patch(env: Env) -> None:
    pod = make_pod("p")
    env.failed(pod)
    env.clock.now += 5
    env.failed(pod)
    env.clock.now += 5
    env.failed(pod)
    assert (env.recorder.created, env.recorder.aggregated) == (1, 2)
    env.recorder.flush_series()
    env.recorder.flush_series()  # nothing new: no second patch
    env.settle()
    [create] = env.rest.matching("POST", "/events")
    [patch] = env.rest.matching("PATCH", "/events/")
    name = create.body["metadata"]["name"]
    assert patch.path == f"/apis/events.k8s.io/v1/namespaces/default/events/{name}"
    assert patch.content_type == "application/merge-patch+json"
    assert patch.body == {"series": {"count": 3, "lastObservedTime": micro_time(START + 10)}}


def test_series_count_keeps_growing_across_flushes(env: Env) -> None:
    pod = make_pod("p")
    for _ in range(2):
        env.failed(pod)
    env.recorder.flush_series()
    env.failed(pod)
    env.recorder.flush_series()
    env.settle()
    counts = [c.body["series"]["count"] for c in env.rest.matching("PATCH", "/events/")]
    assert counts == [2, 3]


def test_a_new_message_or_an_expired_window_creates_a_new_event(env: Env) -> None:
    pod = make_pod("p")
    env.failed(pod, "0/3 nodes are available: 3 Insufficient cpu.")
    env.failed(pod, "0/3 nodes are available: 3 Insufficient memory.")
    env.clock.now += 601
    env.failed(pod, "0/3 nodes are available: 3 Insufficient cpu.")
    env.settle()
    assert len(env.rest.events()) == 3
    assert env.recorder.aggregated == 0


def test_other_pods_are_not_aggregated_together(env: Env) -> None:
    env.failed(make_pod("a"))
    env.failed(make_pod("b"))
    env.settle()
    assert len(env.rest.events()) == 2


def test_scheduled_events_are_never_aggregated(env: Env) -> None:
    pod = make_pod("p")
    env.scheduled(pod)
    env.scheduled(pod)
    env.recorder.flush_series()
    env.settle()
    assert [e["reason"] for e in env.rest.events()] == ["Scheduled", "Scheduled"]
    assert env.rest.matching("PATCH", "/events/") == []


def test_long_notes_are_truncated_like_upstream(env: Env) -> None:
    env.failed(make_pod("p"), "x" * 5000)
    env.settle()
    note = env.rest.events()[0]["note"]
    assert len(note) == 1024 and note.endswith("x ...")
    assert truncate_note("short") == "short"
    assert truncate_note("y" * 1024) == "y" * 1024


def test_a_failing_write_is_logged_not_raised(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    env.rest.respond = lambda method, path, body: status_error(403, "events is forbidden")
    env.failed(make_pod("p"))
    env.settle()
    assert "events is forbidden" in caplog.text


# --- PodScheduled condition -------------------------------------------------------------------------


def test_condition_patch_sets_pod_scheduled_false(env: Env) -> None:
    env.recorder.pod_condition_unschedulable(make_pod("p"), reason="Unschedulable", message="0/1 nodes...")
    env.settle()
    [patch] = env.rest.status_patches()
    assert patch.method == "PATCH"
    assert patch.path == "/api/v1/namespaces/default/pods/p/status"
    assert patch.content_type == "application/strategic-merge-patch+json"
    assert patch.body == {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/1 nodes...",
                    "lastProbeTime": None,
                    "lastTransitionTime": rfc3339(START),
                }
            ]
        }
    }


def test_condition_patch_is_skipped_when_the_pod_already_says_so(env: Env) -> None:
    current = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "same"}
    pod = make_pod("p", conditions=[current])
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="same")
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="different")
    env.recorder.pod_condition_unschedulable(pod, reason="SchedulerError", message="same")
    env.settle()
    patches = env.rest.status_patches()
    assert [
        (p.body["status"]["conditions"][0]["reason"], p.body["status"]["conditions"][0]["message"])
        for p in patches
    ] == [
        ("Unschedulable", "different"),
        ("SchedulerError", "same"),
    ]


def versioned(pod: dict[str, Any], resource_version: str) -> dict[str, Any]:
    pod["metadata"]["resourceVersion"] = resource_version
    return pod


def test_a_retry_before_the_watch_shows_the_patch_does_not_patch_again(env: Env) -> None:
    # A cluster event sent the pod back at once: the object in hand is still the version the first
    # patch was made from, without the condition the patch set.
    pod = versioned(make_pod("p"), "5")
    sent = 0

    def patch(pod: dict[str, Any], reason: str, message: str, **nominated: str) -> None:
        # One at a time: a patch not yet sent would be replaced by the next one of the pod.
        nonlocal sent
        env.recorder.pod_condition_unschedulable(pod, reason=reason, message=message, **nominated)
        wait_until(lambda: len(env.rest.status_patches()) == sent + 1)
        sent += 1

    patch(pod, "Unschedulable", "m")
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m")
    # Anything else is still written: another message, another reason, a nomination, a newer version.
    patch(pod, "Unschedulable", "other")
    patch(pod, "SchedulerError", "other")
    patch(pod, "SchedulerError", "other", nominated_node="")
    newer = versioned(make_pod("p"), "9")  # the condition was cleared by someone else meanwhile
    patch(newer, "SchedulerError", "other")
    env.settle()
    written = sorted(
        (p.body["status"]["conditions"][0]["reason"], p.body["status"]["conditions"][0]["message"])
        for p in env.rest.status_patches()  # the writer pool's threads may reorder them
    )
    assert written == [
        ("SchedulerError", "other"),
        ("SchedulerError", "other"),
        ("SchedulerError", "other"),
        ("Unschedulable", "m"),
        ("Unschedulable", "other"),
    ]
    assert env.recorder.conditions_skipped == 1


def test_a_condition_patch_that_never_lands_does_not_hold_back_the_next() -> None:
    env = retry_env()
    env.rest.respond = lambda method, path, body: status_error(422, "invalid")  # not retried
    pod = versioned(make_pod("p"), "5")
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m")
    wait_until(lambda: env.recorder.dropped == 1)
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m")
    env.settle()
    assert len(env.rest.status_patches()) == 2


def test_a_condition_patch_cancelled_by_the_bind_does_not_hold_back_the_next() -> None:
    env = retry_env()
    flaky = Flaky()
    env.rest.respond = flaky
    pod = versioned(make_pod("p"), "5")
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m")
    wait_until(lambda: env.recorder.pending_retries == 1)
    assert env.recorder.before_bind(pod["metadata"]["uid"], timeout=1.0)
    # The bind failed; the next attempt fails as the first did, from the same version of the pod.
    flaky.up = True
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m")
    env.settle()
    assert env.recorder.conditions_skipped == 0
    assert len(flaky.written) == 1


def test_a_bind_after_a_landed_condition_patch_lets_the_next_failure_patch_again(env: Env) -> None:
    # The patch has landed (its gate is gone), only the memo of what was sent is left: the bind must
    # still clear it (the fast path for pods without patches must not skip this one).
    pod = versioned(make_pod("p"), "5")
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m")
    wait_until(lambda: len(env.rest.status_patches()) == 1)
    wait_until(lambda: not env.recorder._gates)
    assert env.recorder.after_patches(pod["metadata"]["uid"], lambda: None) is True
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m")
    env.settle()
    assert env.recorder.conditions_skipped == 0
    assert len(env.rest.status_patches()) == 2


def test_a_bind_of_a_pod_without_condition_patches_never_waits(env: Env) -> None:
    uid = make_pod("p")["metadata"]["uid"]
    called: list[str] = []
    assert env.recorder.after_patches(uid, lambda: called.append("x")) is True
    assert env.recorder.before_bind(uid, timeout=0.0) is True
    assert env.recorder.cancel_condition_patches(uid) == []
    assert called == []


def test_condition_patch_can_carry_the_nominated_node(env: Env) -> None:
    current = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    env.recorder.pod_condition_unschedulable(
        make_pod("p", conditions=[current]), reason="Unschedulable", message="m", nominated_node="n3"
    )
    env.settle()
    [patch] = env.rest.status_patches()
    assert patch.body["status"]["nominatedNodeName"] == "n3"


# --- retries (client-go's broadcaster: 12 tries, ~10 s apart) ---------------------------------------


def wait_until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    """Writer threads report back asynchronously: wait on the condition, never a fixed sleep."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.002)


class Flaky:
    """An API server that refuses connections until ``up`` is set."""

    def __init__(self) -> None:
        self.up = False
        self.refused = 0
        self.written: list[Any] = []

    def __call__(self, method: str, path: str, body: Any) -> tuple[int, bytes]:
        if not self.up:
            self.refused += 1
            raise ConnectionFailed(f"{method} {path}: ConnectionRefusedError(111)")
        self.written.append(body)
        return 201, b"{}"


def retry_env(max_tries: int = MAX_TRIES, jitter: float = 0.0) -> Env:
    # jitter 0: the low end of wait.Jitter's range, exactly RETRY_INTERVAL
    return Env(max_tries=max_tries, jitter=lambda: jitter)


@pytest.mark.parametrize(("jitter", "wait"), [(0.0, 10.0), (0.5, 11.25), (0.999, 12.4975)])
def test_each_retry_waits_as_client_gos_wait_jitter(jitter: float, wait: float) -> None:
    """tools/events attemptRecording: every sleep is wait.Jitter(10s, 0.25) = 10 s + rand * 2.5 s,
    never sooner than 10 s; 11 sleeps between 12 tries, so about two minutes in all."""
    env = retry_env(jitter=jitter)
    env.rest.respond = Flaky()
    env.scheduled(make_pod("p"))
    start = env.clock.now
    for tries in range(1, MAX_TRIES):
        wait_until(lambda: env.recorder.pending_retries == 1)
        env.clock.now += wait - 0.001
        assert env.recorder.retry_due() == 0  # not yet
        env.clock.now += 0.001
        assert env.recorder.retry_due() == 1
        wait_until(lambda t=tries: len(env.rest.calls) == t + 1)  # type: ignore[misc]
    env.settle()
    assert len(env.rest.calls) == MAX_TRIES and env.recorder.dropped == 1
    assert env.clock.now - start == pytest.approx(11 * wait)
    assert 110.0 <= env.clock.now - start < 137.5


def test_an_event_that_fails_to_connect_is_retried_until_written() -> None:
    env = retry_env()
    flaky = Flaky()
    env.rest.respond = flaky
    pod = make_pod("p")
    env.scheduled(pod)
    wait_until(lambda: env.recorder.pending_retries == 1)
    env.clock.now += RETRY_INTERVAL - 1
    assert env.recorder.retry_due() == 0  # not yet
    env.clock.now += 1
    assert env.recorder.retry_due() == 1
    wait_until(lambda: env.recorder.pending_retries == 1 and flaky.refused == 2)
    flaky.up = True
    env.clock.now += RETRY_INTERVAL
    assert env.recorder.retry_due() == 1
    env.settle()
    assert [e["reason"] for e in flaky.written] == ["Scheduled"]
    assert flaky.refused == 2 and env.recorder.pending_retries == 0


def test_an_event_is_given_up_after_max_tries(caplog: pytest.LogCaptureFixture) -> None:
    env = retry_env()
    env.rest.respond = Flaky()
    env.scheduled(make_pod("p"))
    for tries in range(1, MAX_TRIES):
        wait_until(lambda: env.recorder.pending_retries == 1)
        env.clock.now += RETRY_INTERVAL
        env.recorder.retry_due()
        wait_until(lambda t=tries: len(env.rest.calls) == t + 1)  # type: ignore[misc]
    env.settle()
    assert len(env.rest.calls) == MAX_TRIES
    assert env.recorder.pending_retries == 0 and env.recorder.dropped == 1
    assert "giving up" in caplog.text


def test_a_rejected_event_is_not_retried() -> None:
    env = retry_env()
    env.rest.respond = lambda method, path, body: status_error(422, "note: Too long")
    env.scheduled(make_pod("p"))
    env.settle()
    assert len(env.rest.calls) == 1 and env.recorder.dropped == 1


def test_a_deleted_pods_writes_are_dropped_not_retried() -> None:
    env = retry_env()
    env.rest.respond = Flaky()
    gone, kept = make_pod("gone"), make_pod("kept")
    env.scheduled(gone)
    env.recorder.pod_condition_unschedulable(gone, reason="Unschedulable", message="m")
    env.scheduled(kept)
    wait_until(lambda: env.recorder.pending_retries == 3)
    env.recorder.forget_pod(gone["metadata"]["uid"])
    assert env.recorder.pending_retries == 1
    env.settle()


def test_a_failed_scheduling_event_is_retried_and_shutdown_abandons_what_still_waits() -> None:
    """FailedScheduling (aggregated, written by the pool) is retried like Scheduled; at shutdown the
    writes still waiting for their retry are abandoned (client-go's attemptRecording returns when its
    context is cancelled), and no timer fires after it."""
    env = retry_env()
    flaky = Flaky()
    env.rest.respond = flaky
    env.recorder.event(
        make_pod("a"),
        event_type="Warning",
        reason="FailedScheduling",
        action="Scheduling",
        message="0/1 nodes are available",
        controller="py-scheduler",
    )
    env.scheduled(make_pod("b"))
    wait_until(lambda: env.recorder.pending_retries == 2)
    flaky.up = True
    env.clock.now += RETRY_INTERVAL
    assert env.recorder.retry_due() == 2
    wait_until(lambda: len(flaky.written) == 2)
    assert sorted(e["reason"] for e in flaky.written) == ["FailedScheduling", "Scheduled"]

    flaky.up = False
    env.scheduled(make_pod("c"))
    wait_until(lambda: env.recorder.pending_retries == 1)
    calls = len(env.rest.calls)
    env.settle()
    assert env.recorder.pending_retries == 0
    env.clock.now += RETRY_INTERVAL
    assert env.recorder.retry_due() == 0 and len(env.rest.calls) == calls


def test_writes_after_shutdown_are_dropped_quietly(caplog: pytest.LogCaptureFixture) -> None:
    env = Env()
    env.settle()
    env.scheduled(make_pod("late"))  # a binding result that arrives after shutdown: no exception
    env.recorder.pod_condition_unschedulable(make_pod("late"), reason="Unschedulable", message="m")
    assert env.rest.calls == []
    assert "Traceback" not in caplog.text


def test_shutdown_is_bounded_while_a_write_hangs() -> None:
    release = threading.Event()

    def hang(method: str, path: str, body: Any) -> tuple[int, bytes]:
        release.wait(10)
        return 201, b"{}"

    env = retry_env()
    env.rest.respond = hang
    env.scheduled(make_pod("p"))
    wait_until(lambda: len(env.rest.calls) == 1)
    started = time.monotonic()
    assert env.recorder.shutdown(wait=True, timeout=0.2) is False
    assert time.monotonic() - started < 5  # generous: the hung write would take 10 s
    release.set()


# --- PodScheduled=False never lands after the bind --------------------------------------------------


def test_a_condition_patch_not_yet_sent_is_cancelled_by_the_bind() -> None:
    env = retry_env()
    flaky = Flaky()
    env.rest.respond = flaky
    pod = make_pod("p")
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m")
    wait_until(lambda: env.recorder.pending_retries == 1)  # failed once, waiting for its retry
    assert env.recorder.before_bind(pod["metadata"]["uid"], timeout=1.0)
    flaky.up = True
    env.clock.now += RETRY_INTERVAL
    env.recorder.retry_due()
    env.settle()
    # Only the refused first try reached the wire; the stale failure was never written after the bind.
    assert len(env.rest.status_patches()) == flaky.refused == 1


def slow_patches(env: Env) -> tuple[threading.Event, threading.Event, list[str]]:
    """Every write answers only once ``release`` is set: (set when one is on the wire, release, the
    order of events, "patch" appended as each write is answered)."""
    on_wire, release = threading.Event(), threading.Event()
    order: list[str] = []

    def slow_patch(method: str, path: str, body: Any) -> tuple[int, bytes]:
        on_wire.set()
        release.wait(10)
        order.append("patch")
        return 200, b"{}"

    env.rest.respond = slow_patch
    return on_wire, release, order


def test_the_bind_waits_for_a_condition_patch_on_the_wire() -> None:
    env = Env()
    on_wire, release, order = slow_patches(env)
    pod = make_pod("p")
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m")
    assert on_wire.wait(5)

    def bind() -> None:
        env.recorder.before_bind(pod["metadata"]["uid"], timeout=10)
        order.append("bind")

    binder = threading.Thread(target=bind)
    binder.start()
    binder.join(0.2)
    assert binder.is_alive() and order == []  # still waiting for the patch
    release.set()
    binder.join(10)
    assert order == ["patch", "bind"]
    env.settle()


def test_after_patches_calls_back_once_the_nomination_on_the_wire_has_landed() -> None:
    """The loop's side of before_bind: no thread waits; the callback comes when the patch is answered."""
    env = Env()
    on_wire, release, order = slow_patches(env)
    pod = make_pod("p")
    uid = pod["metadata"]["uid"]
    env.recorder.nominate_pod(pod, "n1")
    assert on_wire.wait(5)
    assert env.recorder.after_patches(uid, lambda: order.append("bind")) is False
    assert order == []
    release.set()
    wait_until(lambda: order == ["patch", "bind"])
    env.settle()
    assert order == ["patch", "bind"]  # called once
    assert env.recorder.before_bind(uid, timeout=0.1)  # nothing left to wait for


def test_after_patches_cancels_a_nomination_not_yet_sent_and_says_bind_now() -> None:
    env = retry_env()
    flaky = Flaky()
    env.rest.respond = flaky
    pod = make_pod("p")
    env.recorder.nominate_pod(pod, "n1")
    wait_until(lambda: env.recorder.pending_retries == 1)  # failed once, waiting for its retry
    called: list[str] = []
    assert env.recorder.after_patches(pod["metadata"]["uid"], lambda: called.append("x")) is True
    flaky.up = True
    env.clock.now += RETRY_INTERVAL
    env.recorder.retry_due()
    env.settle()
    assert len(env.rest.status_patches()) == flaky.refused == 1 and called == []


def test_a_patch_that_clears_the_nomination_lands_after_the_nomination_on_the_wire() -> None:
    """A pod that waited at Permit published nominatedNodeName, then failed: the failure's patch that
    clears it waits for that write, so the pod never ends up nominated by a write that lost the race."""
    env = Env()
    on_wire, release = threading.Event(), threading.Event()
    written: list[Any] = []

    def slow_nomination(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if "conditions" not in body["status"]:
            on_wire.set()
            release.wait(10)
        written.append(body["status"]["nominatedNodeName"])
        return 200, b"{}"

    env.rest.respond = slow_nomination
    pod = make_pod("p")
    env.recorder.nominate_pod(pod, "n1")
    assert on_wire.wait(5)
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m", nominated_node="")
    time.sleep(0.2)
    assert written == []  # the clearing patch waits
    release.set()
    env.settle()
    assert written == ["n1", ""]


def test_a_nomination_not_yet_sent_is_dropped_by_the_patch_that_clears_it() -> None:
    env = retry_env()
    flaky = Flaky()
    env.rest.respond = flaky
    pod = make_pod("p")
    env.recorder.nominate_pod(pod, "n1")
    wait_until(lambda: env.recorder.pending_retries == 1)  # refused once, waiting for its retry
    flaky.up = True
    env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m", nominated_node="")
    env.clock.now += RETRY_INTERVAL
    env.recorder.retry_due()
    env.settle()
    # The refused try is all the nomination ever got: its retry was dropped, the clearing patch landed.
    assert flaky.refused == 1
    assert [b["status"]["nominatedNodeName"] for b in flaky.written] == [""]


@settings(max_examples=2000, deadline=None)
@given(st.floats(min_value=0, max_value=4_000_000_000, allow_nan=False, allow_infinity=False))
def test_micro_time_prints_what_datetime_prints(now: float) -> None:
    expected = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert micro_time(now) == expected
    assert micro_time(now + 1.5) == dt.datetime.fromtimestamp(now + 1.5, dt.UTC).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )


def test_an_inline_event_is_written_by_the_calling_thread_and_its_retry_by_the_pool() -> None:
    env = retry_env()
    flaky = Flaky()
    env.rest.respond = flaky
    pod = make_pod("p")
    calls: list[str] = []

    def write() -> None:
        env.scheduled(pod, inline=True)
        calls.append(threading.current_thread().name)

    writer = threading.Thread(target=write, name="binding_7")
    writer.start()
    writer.join()
    # The first try ran (and failed) inside the call, on the caller's thread; the retry is queued.
    assert calls == ["binding_7"] and flaky.refused == 1
    assert env.recorder.pending_retries == 1 and env.recorder.created == 1
    flaky.up = True
    env.clock.now += RETRY_INTERVAL
    assert env.recorder.retry_due() == 1
    env.settle()
    assert [e["reason"] for e in flaky.written] == ["Scheduled"]
    [written] = [c for c in env.rest.matching("POST", "/events") if c.thread.startswith("events")]
    assert written.body["reason"] == "Scheduled"


def test_an_inline_event_after_shutdown_is_dropped(env: Env) -> None:
    env.recorder.shutdown(wait=True)
    env.scheduled(make_pod("p"), inline=True)
    assert env.rest.matching("POST", "/events") == [] and env.recorder.created == 0


@pytest.mark.parametrize(
    "pod_name",
    ["p", "a" * 236, "a" * 253, "a" * 235 + "-b" + "c" * 16, "a" * 235 + ".b" + "c" * 16],
)
def test_event_names_stay_valid_subdomains_for_long_pod_names(pod_name: str) -> None:
    import re

    from scheduler.client.events import event_name

    name = event_name(pod_name)
    assert len(name) <= EVENT_NAME_LIMIT
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", name), name
    assert name.startswith(pod_name[:200])
    assert event_name(pod_name) != name  # a random suffix per Event


def test_prestart_starts_every_writer_before_any_write() -> None:
    # So a burst of writes submitted from the loop (a gang's nominatedNodeName patches) never waits
    # there for a writer thread to start.
    recorder = EventRecorder(
        SchedulerApi(FakeRest()),  # type: ignore[arg-type]
        reporting_instance="sched-1",
        clock=Clock(),
        writers=3,
    )
    try:
        before = set(threading.enumerate())
        assert recorder.prestart()
        started = set(threading.enumerate()) - before
        assert len(started) == 3
        assert all(t.name.startswith("events_") for t in started)
    finally:
        recorder.shutdown(wait=True)


def test_an_event_a_pod_gets_once_is_named_after_its_uid_and_reason() -> None:
    from scheduler.client.events import event_name, once_per_pod_suffix

    suffix = once_per_pod_suffix("uid-1", "Scheduled")
    assert len(suffix) == 16 and int(suffix, 16) >= 0
    assert suffix == once_per_pod_suffix("uid-1", "Scheduled")
    assert suffix != once_per_pod_suffix("uid-2", "Scheduled")
    assert event_name("web-0", suffix) == f"web-0.{suffix}"


def test_a_series_whose_event_is_gone_is_created_with_its_series(env: Env) -> None:
    """client-go's recordEvent: a series PATCH answered 404 (the Event expired, or its create failed
    for good) creates the Event anew, carrying the series, so a pod that keeps failing shows it."""
    pod = make_pod("p")

    def gone_on_patch(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "PATCH":
            return status_error(404, 'events.events.k8s.io "p.x" not found')
        return 201, b"{}"

    env.rest.respond = gone_on_patch
    env.failed(pod)
    env.clock.now += 5
    env.failed(pod)
    env.recorder.flush_series()
    env.settle()
    # The first create and the series' create run on different writers: either may come first.
    first, again = sorted(env.rest.events(), key=lambda event: "series" in event)
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert again["note"] == first["note"]
    assert again["series"] == {"count": 2, "lastObservedTime": micro_time(START + 5)}
    assert "series" not in first
    assert env.recorder.dropped == 0


def test_a_newer_condition_patch_replaces_one_of_the_same_pod_not_yet_sent() -> None:
    """A pod retried faster than its patches go out (a burst of cluster events, writes held back by the
    client's QPS) never queues more than one: a stale PodScheduled=False would only land late with an
    old message, and the backlog grew without bound (minutes behind, new pods got no Event)."""
    env = Env(writers=1)
    on_wire, release, _ = slow_patches(env)
    env.recorder.pod_condition_unschedulable(make_pod("blocker"), reason="Unschedulable", message="b")
    assert on_wire.wait(5)  # the only writer is busy: what follows queues
    pod = make_pod("p")
    for n in range(3):
        pod["metadata"]["resourceVersion"] = str(100 + n)
        env.recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message=f"m{n}")
    release.set()
    env.settle()
    sent = [c.body["status"]["conditions"][0]["message"] for c in env.rest.status_patches()]
    assert sent == ["b", "m2"]


def test_series_patches_queue_at_most_once_each_and_never_hold_back_other_writes() -> None:
    """client-go's broadcaster writes a series rarely (at its second occurrence, then every 30 minutes
    or when it ends) and through its own client. Here every dirty series is flushed every 30 s: with
    thousands of series (pods whose message keeps changing) and the client's QPS, their PATCHes took
    every writer and queued behind each other, so a new pod's FailedScheduling Event and its
    PodScheduled=False waited minutes. A series whose PATCH is still queued is not queued again, and
    series PATCHes run on writers of their own."""
    env = Env()
    on_wire, release = threading.Event(), threading.Event()

    def slow_series(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "PATCH" and "/events/" in path:
            on_wire.set()
            release.wait(10)
            return 200, b"{}"
        return 201, b"{}"

    env.rest.respond = slow_series
    pods = [make_pod(f"p{i}") for i in range(100)]
    for _ in range(2):
        for pod in pods:
            env.failed(pod)
    env.recorder.flush_series()
    assert on_wire.wait(5)
    for pod in pods:
        env.failed(pod)
    env.recorder.flush_series()  # every series still has its first PATCH queued or on the wire
    fresh = make_pod("fresh")
    env.failed(fresh)
    env.recorder.pod_condition_unschedulable(fresh, reason="Unschedulable", message="m")
    wait_until(lambda: len(env.rest.status_patches()) == 1)  # not behind the series PATCHes
    wait_until(lambda: sum(e["regarding"]["name"] == "fresh" for e in env.rest.events()) == 1)
    release.set()
    env.settle()
    # Only the series whose first PATCH had started (one per series writer at most) were queued again.
    assert 100 <= len(env.rest.matching("PATCH", "/events/")) <= 100 + SERIES_WRITERS


def test_new_events_past_the_queue_limit_are_dropped_as_client_go_drops_them() -> None:
    """client-go's events broadcaster queues at most 1000 Events (maxQueuedEvents) and drops the newest
    past that (DropIfChannelFull): a flood of failures with ever-new messages, faster than the client's
    QPS, must not grow a backlog that delays every later Event by minutes. A dropped FailedScheduling
    still shows: its repeats become a series, whose PATCH finds no Event and creates it."""
    env = Env(writers=1, max_queued_events=3)
    on_wire, release, _ = slow_patches(env)
    env.recorder.pod_condition_unschedulable(make_pod("blocker"), reason="Unschedulable", message="b")
    assert on_wire.wait(5)  # the only writer is busy: what follows queues
    for i in range(5):
        env.failed(make_pod(f"p{i}"))
    assert env.recorder.dropped == 2
    env.scheduled(make_pod("bound"))  # a pod's one Scheduled Event is never dropped
    release.set()
    env.settle()
    assert [e["regarding"]["name"] for e in env.rest.events()] == ["p0", "p1", "p2", "bound"]


def test_events_go_through_their_own_client_and_condition_patches_through_the_main_one() -> None:
    """kube-scheduler's eventClient: Events have a rate limiter of their own, so a flood of them never
    holds back Bindings and condition patches (which share the main client), nor the reverse."""
    main, events = FakeRest(), FakeRest()
    recorder = EventRecorder(
        SchedulerApi(main),  # type: ignore[arg-type]
        reporting_instance="sched-1",
        clock=Clock(),
        events_api=SchedulerApi(events),  # type: ignore[arg-type]
    )
    pod = make_pod("p")
    for _ in range(2):
        recorder.event(
            pod,
            event_type=WARNING,
            reason="FailedScheduling",
            action="Scheduling",
            message="m",
            controller="py-scheduler",
        )
    recorder.flush_series()
    recorder.pod_condition_unschedulable(pod, reason="Unschedulable", message="m")
    recorder.shutdown(wait=True)
    assert sorted(c.method for c in events.calls) == ["PATCH", "POST"]  # two writer pools
    assert [(c.method, "/status" in c.path) for c in main.calls] == [("PATCH", True)]
