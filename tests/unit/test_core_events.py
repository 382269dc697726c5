"""EventRecorder: events.k8s.io/v1 Events with series aggregation, and the PodScheduled condition patch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.api import SchedulerApi
from scheduler.events import NORMAL, WARNING, EventRecorder, micro_time, rfc3339, truncate_note
from tests.unit.test_core_fakes import FakeRest, make_pod, status_error

START = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class Env:
    def __init__(self) -> None:
        self.clock = Clock()
        self.rest = FakeRest()
        self.recorder = EventRecorder(
            SchedulerApi(self.rest),  # type: ignore[arg-type]
            reporting_instance="sched-1",
            clock=self.clock,
            series_window=600.0,
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

    def scheduled(self, pod: dict[str, Any]) -> None:
        self.recorder.event(
            pod,
            event_type=NORMAL,
            reason="Scheduled",
            action="Binding",
            message="Successfully assigned default/p to n1",
            controller="py-scheduler",
            aggregate=False,
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


def test_condition_patch_can_carry_the_nominated_node(env: Env) -> None:
    current = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    env.recorder.pod_condition_unschedulable(
        make_pod("p", conditions=[current]), reason="Unschedulable", message="m", nominated_node="n3"
    )
    env.settle()
    [patch] = env.rest.status_patches()
    assert patch.body["status"]["nominatedNodeName"] == "n3"
