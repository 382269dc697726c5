"""LeaderElector against the real API server: one leader, fast hand-over on release, prompt loss on steal.

Each test uses its own Lease in its own namespace. Timings are real but short; waits are on events with
timeouts, never sleeps. The timeouts are correctness bounds: a hand-over after release must come before
the old lease could have expired, which is what release is for.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.app.leaderelection import KubeLeaseClient, LeaderElector
from scheduler.client.events import micro_time
from tests.integration.test_deploy import apply_deploy, service_account_token

LEASE_DURATION = 15.0
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 0.5


class Candidate:
    def __init__(self, api_client: Any, namespace: str, lease: str, name: str, **timings: float) -> None:
        self.name = name
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.elector = LeaderElector(
            api_client,
            namespace=namespace,
            name=lease,
            identity=f"{name}_{uuid.uuid4()}",
            lease_duration=timings.get("lease_duration", LEASE_DURATION),
            renew_deadline=timings.get("renew_deadline", RENEW_DEADLINE),
            retry_period=timings.get("retry_period", RETRY_PERIOD),
            on_started_leading=self.started.set,
            on_stopped_leading=self.stopped.set,
        )


@pytest.fixture
def lease_name() -> str:
    return f"le-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def candidates(api_client: Any, namespace: str, lease_name: str) -> Iterator[list[Candidate]]:
    made = [Candidate(api_client, namespace, lease_name, name) for name in ("a", "b")]
    try:
        yield made
    finally:
        for candidate in made:
            candidate.elector.stop(release=True)


def first_leader(candidates: list[Candidate], timeout: float = 20.0) -> tuple[Candidate, Candidate]:
    wait_until(lambda: any(c.started.is_set() for c in candidates), timeout, "a leader")
    leader = next(c for c in candidates if c.started.is_set())
    other = next(c for c in candidates if c is not leader)
    return leader, other


def wait_until(condition: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, f"timed out after {timeout}s waiting for {what}"
        threading.Event().wait(0.05)


def test_exactly_one_leads(
    candidates: list[Candidate], api_client: Any, namespace: str, lease_name: str
) -> None:
    for candidate in candidates:
        candidate.elector.start()
    leader, other = first_leader(candidates)
    assert leader.elector.is_leader()
    # Once the follower has read the Lease it knows who leads, and it is not itself.
    wait_until(
        lambda: other.elector.holder() == leader.elector.identity, 10, "the follower to observe the leader"
    )
    assert not other.elector.is_leader()
    assert not other.started.is_set()
    lease = KubeLeaseClient(api_client, namespace, lease_name).get(10)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == leader.elector.identity
    assert lease["spec"]["leaseDurationSeconds"] == 15


def test_release_hands_over_before_the_lease_would_expire(
    candidates: list[Candidate], api_client: Any, namespace: str, lease_name: str
) -> None:
    for candidate in candidates:
        candidate.elector.start()
    leader, other = first_leader(candidates)
    wait_until(
        lambda: other.elector.holder() == leader.elector.identity, 10, "the follower to observe the leader"
    )

    leader.elector.stop(release=True)
    assert not leader.elector.is_leader()
    assert not leader.stopped.is_set()  # a clean stop is not a loss
    # Without the release the follower would have to wait out the full 15 s lease.
    assert other.started.wait(LEASE_DURATION - 3), "the follower did not take over the released lease"
    assert other.elector.is_leader()
    lease = KubeLeaseClient(api_client, namespace, lease_name).get(10)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == other.elector.identity
    assert lease["spec"]["leaseTransitions"] == 1


def test_a_stolen_lease_stops_the_leader_within_a_retry_period(
    candidates: list[Candidate], api_client: Any, namespace: str, lease_name: str
) -> None:
    leader = candidates[0]
    leader.elector.start()
    assert leader.started.wait(20)

    # Someone else writes the Lease with a fresh renewTime (an operator, or a split-brain peer).
    client = KubeLeaseClient(api_client, namespace, lease_name)
    lease = client.get(10)
    assert lease is not None
    lease["spec"]["holderIdentity"] = "thief"
    lease["spec"]["renewTime"] = micro_time(time.time())
    client.update(lease, 10)

    # The next renewal (due within one retry period) finds out; a little slack for the request itself.
    assert leader.stopped.wait(RETRY_PERIOD + 5), "on_stopped_leading did not fire"
    assert not leader.elector.is_leader()
    after = client.get(10)
    assert after is not None
    assert after["spec"]["holderIdentity"] == "thief"  # the old leader did not fight back

    leader.elector.stop(release=True)
    final = client.get(10)
    assert final is not None
    assert final["spec"]["holderIdentity"] == "thief"  # and did not release someone else's lease


def test_the_deployed_service_account_can_run_the_election(control_plane: Any, api_client: Any) -> None:
    """deploy/'s RBAC suffices for the real code path: create, renew, release kube-system/py-scheduler."""
    apply_deploy(control_plane)
    admin = KubeLeaseClient(api_client, "kube-system", "py-scheduler")
    existing = admin.get(10)
    if existing is not None and existing["spec"].get("holderIdentity"):
        pytest.skip("kube-system/py-scheduler is held by a running scheduler in this session")
    with control_plane.api_client(token=service_account_token(api_client)) as sa_client:
        candidate = Candidate(
            sa_client,
            "kube-system",
            "py-scheduler",
            "sa",
            lease_duration=3,
            renew_deadline=2,
            retry_period=0.2,
        )
        candidate.elector.start()
        try:
            assert candidate.started.wait(20), "the service account could not acquire its lease"
            renewed = admin.get(10)
            assert renewed is not None
            first_renew = renewed["spec"]["renewTime"]
            wait_until(
                lambda: (admin.get(10) or {}).get("spec", {}).get("renewTime") != first_renew, 10, "a renewal"
            )
            assert not candidate.stopped.is_set()
        finally:
            candidate.elector.stop(release=True)
    released = admin.get(10)
    assert released is not None
    assert released["spec"]["holderIdentity"] == ""
    assert released["spec"]["leaseDurationSeconds"] == 1
