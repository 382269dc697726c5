"""PodGroup status: scheduler-plugins' PodGroup controller transitions, and the controller's loop."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from informers.testing import eventually
from scheduler.controllers.podgroup_status import (
    PodGroupStatusController,
    desired_status,
    status_patch,
)

NOW = 1_700_000_000.0
LABEL = "scheduling.x-k8s.io/pod-group"


def group(min_member: int = 3, status: Mapping[str, Any] | None = None, name: str = "pg") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2023-11-14T22:00:00Z"},
        "spec": {"minMember": min_member},
        "status": dict(status or {}),
    }


def pods(*phases: str, owner: str = "job-1", name: str = "pg") -> list[dict[str, Any]]:
    return [
        {
            "metadata": {
                "name": f"p{i}",
                "namespace": "ns",
                "labels": {LABEL: name},
                "creationTimestamp": f"2023-11-14T22:00:0{i}Z",
                "ownerReferences": [{"name": owner}],
            },
            "status": {"phase": phase},
        }
        for i, phase in enumerate(phases)
    ]


def test_a_new_group_with_too_few_pods_is_pending() -> None:
    assert desired_status(group(3), pods("Pending", "Pending"), NOW) == {"phase": "Pending"}


def test_enough_pods_make_it_scheduling_with_start_time_and_owner() -> None:
    got = desired_status(group(3), pods("Pending", "Pending", "Pending"), NOW)
    assert got == {
        "phase": "Scheduling",
        "scheduleStartTime": "2023-11-14T22:13:20Z",
        "occupiedBy": "ns/job-1",
        "running": 0,
        "succeeded": 0,
        "failed": 0,
    }


@pytest.mark.parametrize(
    ("phases", "phase", "counts"),
    [
        (("Running", "Running", "Pending"), "Scheduling", (2, 0, 0)),
        (("Running", "Running", "Running"), "Running", (3, 0, 0)),
        (("Running", "Succeeded", "Running"), "Running", (2, 1, 0)),
        (("Succeeded", "Succeeded", "Succeeded"), "Finished", (0, 3, 0)),
        (("Failed", "Running", "Running"), "Failed", (2, 0, 1)),
        (("Failed", "Running", "Pending"), "Scheduling", (1, 0, 1)),  # not enough to decide yet
    ],
)
def test_counts_and_phase_as_upstream(phases: Sequence[str], phase: str, counts: tuple[int, ...]) -> None:
    got = desired_status(group(3, {"phase": "Scheduling"}), pods(*phases), NOW)
    assert got is not None
    assert got["phase"] == phase
    assert (got["running"], got["succeeded"], got["failed"]) == counts


def test_a_group_losing_members_goes_back_to_pending() -> None:
    got = desired_status(group(3, {"phase": "Running", "running": 3}), pods("Running", "Running"), NOW)
    assert got is not None and got["phase"] == "Pending" and got["running"] == 2


@pytest.mark.parametrize("final", ["Finished", "Failed"])
def test_final_phases_are_left_alone(final: str) -> None:
    assert desired_status(group(3, {"phase": final}), pods("Running"), NOW) is None


def test_the_48_hour_guard() -> None:
    stale = group(3, {"phase": "Scheduling", "scheduleStartTime": "2023-11-17T22:00:01Z"})
    assert desired_status(stale, pods("Running", "Running", "Running"), NOW) is None


def test_the_patch_holds_only_what_changed_and_removes_counts_fallen_to_zero() -> None:
    # Upstream's fields are omitempty: a zero count is no field, so one that fell to zero is removed.
    current = {"phase": "Running", "running": 3, "succeeded": 0}
    desired = {"phase": "Running", "running": 0, "succeeded": 0, "failed": 0}
    assert status_patch(current, desired) == {"running": None}


def test_a_group_entering_scheduling_is_one_patch_without_zero_counts() -> None:
    pg = group(3, {"phase": "Pending"})
    desired = desired_status(pg, pods("Pending", "Pending", "Pending"), NOW)
    assert desired is not None
    assert status_patch(pg["status"], desired) == {
        "phase": "Scheduling",
        "scheduleStartTime": "2023-11-14T22:13:20Z",
        "occupiedBy": "ns/job-1",
    }


def test_nothing_changed_is_no_patch() -> None:
    current = {"phase": "Scheduling", "occupiedBy": "ns/job-1", "scheduleStartTime": "2023-11-14T22:13:20Z"}
    desired = desired_status(group(3, current), pods("Pending", "Pending", "Pending"), NOW)
    assert desired is not None and status_patch(current, desired) == {}


class FakeLister:
    def __init__(self, objs: list[dict[str, Any]]) -> None:
        self.objs = objs

    def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return [o for o in self.objs if namespace is None or o["metadata"]["namespace"] == namespace]

    def get(self, name: str, namespace: str = "") -> dict[str, Any] | None:
        return next(
            (
                o
                for o in self.objs
                if o["metadata"]["name"] == name and o["metadata"]["namespace"] == namespace
            ),
            None,
        )


def test_the_controller_writes_one_patch_per_burst_and_nothing_once_current() -> None:
    async def scenario() -> list[tuple[str, str, dict[str, Any]]]:
        pg = group(2)
        members = pods("Pending", "Pending")
        writes: list[tuple[str, str, dict[str, Any]]] = []

        def patch(namespace: str, name: str, status: Mapping[str, Any]) -> None:
            writes.append((namespace, name, dict(status)))
            pg["status"].update(status)  # the informer would now see it

        ctl = PodGroupStatusController(
            FakeLister([pg]), FakeLister(members), patch, clock=lambda: NOW, debounce=0
        )
        ctl.start()  # marks every known group
        for pod in members:  # a burst of pod events: one write
            ctl.on_pod(pod)
        # Each wait is for the controller's pass over what was marked, not for time to go by.
        await eventually(lambda: ctl.passes == 1)
        assert len(writes) == 1
        for pod in members:
            pod["status"]["phase"] = "Running"
            ctl.on_pod_update(pod, pod)
        await eventually(lambda: ctl.passes == 2)
        assert len(writes) == 2
        ctl.on_pod_group_update(pg, pg)  # our own write coming back: nothing to do
        await eventually(lambda: ctl.passes == 3)
        await ctl.stop()
        return writes

    writes = asyncio.run(scenario())
    assert [w[2]["phase"] for w in writes] == ["Scheduling", "Running"], writes
    assert writes[1][2] == {"phase": "Running", "running": 2}


def test_a_failed_write_is_retried_and_a_deleted_group_dropped() -> None:
    class Gone(Exception):
        status = 404

    async def scenario() -> tuple[int, float, int, int, int]:
        pg = group(1)
        calls: list[float] = []
        loop = asyncio.get_running_loop()

        def flaky(namespace: str, name: str, status: Mapping[str, Any]) -> None:
            calls.append(loop.time())
            if len(calls) == 1:
                raise RuntimeError("503")
            pg["status"].update(status)

        ctl = PodGroupStatusController(
            FakeLister([pg]), FakeLister(pods("Pending")), flaky, clock=lambda: NOW, debounce=0
        )
        ctl.start()
        # The retry's pass (the first retry is due after 0.5 s of the loop's clock).
        await eventually(lambda: ctl.passes == 2, timeout=5)
        retried_after = calls[1] - calls[0]
        writes, attempts = ctl.writes, len(ctl._attempts)  # written: no retry left pending
        await ctl.stop()

        def gone(namespace: str, name: str, status: Mapping[str, Any]) -> None:
            raise Gone()

        other = PodGroupStatusController(
            FakeLister([group(1)]), FakeLister([]), gone, clock=lambda: NOW, debounce=0
        )
        other.start()
        await eventually(lambda: other.passes == 1)
        pending = len(other._attempts)
        await other.stop()
        return len(calls), retried_after, writes, attempts, pending

    calls, retried_after, writes, attempts, pending = asyncio.run(scenario())
    assert calls == 2
    assert retried_after >= 0.5
    assert (writes, attempts) == (1, 0)
    assert pending == 0  # a 404 is not retried
