"""LeaderElector against an in-memory Lease API with a fake clock: every transition, no sleeping."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest
from prometheus_client import REGISTRY

from scheduler.app.leaderelection import (
    LeaderElector,
    LeaseConflictError,
    default_identity,
)
from scheduler.client.events import micro_time

Lease = dict[str, Any]


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


class FakeLeaseAPI:
    """One Lease with resourceVersion compare-and-swap, like the API server."""

    def __init__(self) -> None:
        self.lease: Lease | None = None
        self.rv = 0
        self.fail: Exception | None = None
        self.calls: list[str] = []
        self.block: threading.Event | None = None
        self.entered = threading.Event()

    def _maybe_fail(self, call: str) -> None:
        self.calls.append(call)
        self.entered.set()
        if self.block is not None:
            self.block.wait(10)
        if self.fail is not None:
            raise self.fail

    def _store(self, lease: Lease) -> Lease:
        self.rv += 1
        stored = copy.deepcopy(lease)
        stored.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        self.lease = stored
        return copy.deepcopy(stored)

    def get(self, timeout: float) -> Lease | None:
        self._maybe_fail("get")
        assert timeout > 0
        return copy.deepcopy(self.lease)

    def create(self, lease: Lease, timeout: float) -> Lease:
        self._maybe_fail("create")
        if self.lease is not None:
            raise LeaseConflictError("already exists")
        return self._store(lease)

    def update(self, lease: Lease, timeout: float) -> Lease:
        self._maybe_fail("update")
        if self.lease is None:
            raise LookupError("leases.coordination.k8s.io not found")
        if lease["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise LeaseConflictError("the object has been modified")
        return self._store(lease)

    # What other actors do to the Lease.
    def put_holder(self, holder: str, duration: int = 15, renew: str = "2030-01-01T00:00:00.000000Z") -> None:
        spec = dict((self.lease or {}).get("spec") or {})
        spec.update(holderIdentity=holder, leaseDurationSeconds=duration, renewTime=renew)
        self._store({"metadata": {"name": "py-scheduler", "namespace": "kube-system"}, "spec": spec})

    @property
    def spec(self) -> dict[str, Any]:
        assert self.lease is not None
        return dict(self.lease["spec"])


class Recorder:
    def __init__(self) -> None:
        self.started = 0
        self.stopped = 0
        self.started_event = threading.Event()

    def on_started(self) -> None:
        self.started += 1
        self.started_event.set()

    def on_stopped(self) -> None:
        self.stopped += 1


def make(
    api: FakeLeaseAPI,
    clock: FakeClock,
    rec: Recorder,
    identity: str = "me",
    **overrides: Any,
) -> LeaderElector:
    options: dict[str, Any] = {
        "namespace": "kube-system",
        "name": "py-scheduler",
        "identity": identity,
        "lease_duration": 15.0,
        "renew_deadline": 10.0,
        "retry_period": 2.0,
        "on_started_leading": rec.on_started,
        "on_stopped_leading": rec.on_stopped,
        "clock": clock,
        "wall": lambda: 1_700_000_000.0 + clock(),
        "lease_client": api,
        "jitter": lambda: 0.5,
    }
    options.update(overrides)
    return LeaderElector(None, **options)


@pytest.fixture
def api() -> FakeLeaseAPI:
    return FakeLeaseAPI()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


def master_status(name: str = "py-scheduler") -> float | None:
    return REGISTRY.get_sample_value("leader_election_master_status", {"name": name})


def slowpath() -> float:
    return REGISTRY.get_sample_value("leader_election_slowpath_total", {"name": "py-scheduler"}) or 0.0


def test_acquires_a_missing_lease_by_creating_it(api: FakeLeaseAPI, clock: FakeClock, rec: Recorder) -> None:
    elector = make(api, clock, rec)
    assert not elector.is_leader()
    assert master_status() == 0

    assert elector.tick() == 2.0
    assert elector.is_leader()
    assert rec.started == 1
    assert master_status() == 1
    assert api.calls == ["get", "create"]
    spec = api.spec
    assert spec["holderIdentity"] == "me"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"] == micro_time(1_700_001_000.0)
    assert elector.holder() == "me"


def test_renews_with_an_optimistic_put_and_keeps_acquire_time(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    elector = make(api, clock, rec)
    elector.tick()
    acquired = api.spec["acquireTime"]
    api.calls.clear()

    clock.advance(2)
    assert elector.tick() == 2.0
    assert api.calls == ["update"]  # fast path: no GET
    assert api.spec["acquireTime"] == acquired
    assert api.spec["renewTime"] == micro_time(1_700_001_002.0)
    assert elector.is_leader()
    assert rec.started == 1  # renewing does not start leading again


def test_loses_leadership_when_renewals_fail_past_the_renew_deadline(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    elector = make(api, clock, rec)
    elector.tick()  # leader at t0 = 1000
    api.fail = ConnectionError("apiserver unreachable")

    delays = []
    for _ in range(4):
        clock.advance(2)
        delays.append(elector.tick())
        assert elector.is_leader()
        assert rec.stopped == 0
    assert delays == [2.0, 2.0, 2.0, 2.0]  # t = 1008

    clock.advance(1.5)  # t = 1009.5: next retry is capped to the deadline
    assert elector.tick() == pytest.approx(0.5)
    assert elector.is_leader()

    clock.advance(0.5)  # t = 1010: renew deadline reached
    assert not elector.is_leader()  # false on time, even before the loop notices
    assert elector.tick() is None
    assert rec.stopped == 1
    assert master_status() == 0
    assert elector.tick() is None  # never campaigns again
    assert rec.stopped == 1


def test_a_success_before_the_deadline_keeps_leadership(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    elector = make(api, clock, rec)
    elector.tick()
    api.fail = TimeoutError()
    clock.advance(9)
    elector.tick()
    api.fail = None
    clock.advance(0.9)
    assert elector.tick() == 2.0
    clock.advance(9.9)
    assert elector.is_leader()
    assert rec.stopped == 0


def test_loses_leadership_at_once_when_the_lease_is_stolen(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    elector = make(api, clock, rec)
    elector.tick()
    api.put_holder("thief")
    clock.advance(2)
    assert elector.is_leader()  # nothing observed yet
    assert elector.tick() is None
    assert not elector.is_leader()
    assert rec.stopped == 1
    assert api.calls[-2:] == ["update", "get"]  # fast path conflicted, slow path saw the thief
    assert api.spec["holderIdentity"] == "thief"  # we never write over the new holder
    assert elector.holder() == "thief"


def test_a_cleared_holder_while_leading_counts_as_lost(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    elector = make(api, clock, rec)
    elector.tick()
    api.put_holder("")
    clock.advance(2)
    assert elector.tick() is None
    assert rec.stopped == 1


def test_conflict_from_an_unrelated_write_renews_through_the_slow_path(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    elector = make(api, clock, rec)
    elector.tick()
    slowpath_before = slowpath()
    assert api.lease is not None
    api._store({**api.lease, "metadata": {**api.lease["metadata"], "labels": {"touched": "yes"}}})

    clock.advance(2)
    assert elector.tick() == 2.0
    assert elector.is_leader()
    assert api.calls[-3:] == ["update", "get", "update"]
    assert api.lease["metadata"]["labels"] == {"touched": "yes"}
    assert rec.stopped == 0
    assert slowpath() == slowpath_before + 1


def test_follower_waits_for_another_holders_lease_to_expire(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    api.put_holder("other")
    elector = make(api, clock, rec)
    delay = elector.tick()
    assert delay == pytest.approx(2.0 * (1 + 0.5 * 1.2))  # jittered like client-go
    assert not elector.is_leader()
    assert elector.holder() == "other"

    clock.advance(14.9)  # the record has not changed for < leaseDurationSeconds
    elector.tick()
    assert not elector.is_leader()
    assert api.spec["holderIdentity"] == "other"

    clock.advance(0.2)
    elector.tick()
    assert elector.is_leader()
    assert rec.started == 1
    spec = api.spec
    assert spec["holderIdentity"] == "me"
    assert spec["leaseTransitions"] == 1
    assert spec["acquireTime"] == spec["renewTime"]


def test_follower_never_takes_a_lease_that_keeps_being_renewed(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    elector = make(api, clock, rec)
    for i in range(20):
        api.put_holder("other", renew=f"2030-01-01T00:00:{i:02d}.000000Z")
        elector.tick()
        clock.advance(3)
    assert not elector.is_leader()
    assert rec.started == 0


def test_lease_duration_is_read_from_the_record(api: FakeLeaseAPI, clock: FakeClock, rec: Recorder) -> None:
    """A released lease (client-go writes leaseDurationSeconds=1) can be taken quickly."""
    api.put_holder("other", duration=1)
    elector = make(api, clock, rec)
    elector.tick()
    assert not elector.is_leader()
    clock.advance(1.01)
    elector.tick()
    assert elector.is_leader()


def test_released_lease_is_taken_immediately(api: FakeLeaseAPI, clock: FakeClock, rec: Recorder) -> None:
    api.put_holder("")
    elector = make(api, clock, rec)
    elector.tick()
    assert elector.is_leader()


def test_stop_releases_the_lease_like_client_go(api: FakeLeaseAPI, clock: FakeClock, rec: Recorder) -> None:
    api.put_holder("")
    api.lease["spec"]["leaseTransitions"] = 4  # type: ignore[index]
    elector = make(api, clock, rec)
    elector.tick()
    assert api.spec["leaseTransitions"] == 5

    elector.stop(release=True)
    assert not elector.is_leader()
    spec = api.spec
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 5
    assert rec.stopped == 0  # a clean stop is not a loss
    assert master_status() == 0
    assert elector.tick() is None


def test_stop_without_release_keeps_the_holder(api: FakeLeaseAPI, clock: FakeClock, rec: Recorder) -> None:
    elector = make(api, clock, rec)
    elector.tick()
    elector.stop(release=False)
    assert not elector.is_leader()
    assert api.spec["holderIdentity"] == "me"


def test_stop_does_not_release_someone_elses_lease(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    elector = make(api, clock, rec)
    elector.tick()
    api.put_holder("thief")
    elector.stop(release=True)
    assert api.spec["holderIdentity"] == "thief"


def test_stop_as_follower_writes_nothing(api: FakeLeaseAPI, clock: FakeClock, rec: Recorder) -> None:
    api.put_holder("other")
    elector = make(api, clock, rec)
    elector.tick()
    rv = api.rv
    elector.stop(release=True)
    assert api.rv == rv
    assert api.spec["holderIdentity"] == "other"


def test_lease_deleted_while_leading_is_recreated(api: FakeLeaseAPI, clock: FakeClock, rec: Recorder) -> None:
    elector = make(api, clock, rec)
    elector.tick()
    api.lease = None
    clock.advance(2)
    assert elector.tick() == 2.0
    assert elector.is_leader()
    assert api.spec["holderIdentity"] == "me"


def test_losing_the_create_race_is_not_leadership(api: FakeLeaseAPI, clock: FakeClock, rec: Recorder) -> None:
    elector = make(api, clock, rec)
    real_get = api.get

    def get_then_someone_creates(timeout: float) -> Lease | None:
        result = real_get(timeout)
        api.put_holder("faster")
        return result

    api.get = get_then_someone_creates  # type: ignore[method-assign]
    elector.tick()
    assert not elector.is_leader()
    assert api.spec["holderIdentity"] == "faster"


def test_failing_on_started_leading_gives_the_lease_back(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    def boom() -> None:
        raise RuntimeError("cannot start")

    elector = make(api, clock, rec, on_started_leading=boom)
    assert elector.tick() is None
    assert not elector.is_leader()
    assert rec.stopped == 1
    assert api.spec["holderIdentity"] == ""


def test_request_timeout_never_outlives_the_renew_deadline(
    api: FakeLeaseAPI, clock: FakeClock, rec: Recorder
) -> None:
    timeouts: list[float] = []
    real_update = api.update

    def update(lease: Lease, timeout: float) -> Lease:
        timeouts.append(timeout)
        return real_update(lease, timeout)

    api.update = update  # type: ignore[method-assign]
    elector = make(api, clock, rec)
    elector.tick()
    clock.advance(7)
    elector.tick()
    assert timeouts[-1] == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("lease", "renew", "retry", "message"),
    [
        (10, 10, 2, "greater than renewDeadline"),
        (15, 2, 2, "retryPeriod"),
        (15, 10, 0, "positive"),
    ],
)
def test_invalid_timings_are_rejected(lease: float, renew: float, retry: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(
            FakeLeaseAPI(),
            FakeClock(),
            Recorder(),
            lease_duration=lease,
            renew_deadline=renew,
            retry_period=retry,
        )


def test_identity_is_hostname_underscore_uuid() -> None:
    import socket

    identity = default_identity()
    host, _, suffix = identity.rpartition("_")
    assert host == socket.gethostname()
    assert len(suffix) == 36
    assert default_identity() != identity


def test_healthy_reports_a_wedged_election_thread(api: FakeLeaseAPI, clock: FakeClock, rec: Recorder) -> None:
    api.block = threading.Event()
    elector = make(api, clock, rec)
    assert elector.healthy(30) == (True, "ok")  # not started
    elector.start()
    try:
        assert api.entered.wait(10)  # the thread is inside a request that will not return
        assert elector.healthy(30) == (True, "ok")
        clock.advance(31)
        ok, reason = elector.healthy(30)
        assert not ok
        assert "no progress for 31.0s" in reason
        assert elector.healthy(40)[0]
    finally:
        api.block.set()
        elector.stop(release=True)
    assert elector.healthy(30) == (True, "ok")


def test_thread_leads_and_releases_in_real_time() -> None:
    """The real loop (threads, real clock) with short timings; waits on events, never sleeps."""
    api = FakeLeaseAPI()
    rec = Recorder()
    elector = LeaderElector(
        None,
        namespace="kube-system",
        name="py-scheduler",
        identity="me",
        lease_duration=1.5,
        renew_deadline=1.0,
        retry_period=0.1,
        on_started_leading=rec.on_started,
        on_stopped_leading=rec.on_stopped,
        lease_client=api,
    )
    elector.start()
    try:
        assert rec.started_event.wait(10)
        assert elector.is_leader()
        assert elector.healthy()[0]
    finally:
        elector.stop(release=True)
    assert not elector.is_leader()
    assert api.spec["holderIdentity"] == ""
    assert rec.stopped == 0
    with pytest.raises(RuntimeError):
        elector.start()


class FrozenNetwork(FakeLeaseAPI):
    """Every call hangs for its whole timeout, then fails: a partitioned leader's view of the API."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock
        self.frozen = False
        self.timeouts: list[float] = []

    def _maybe_fail(self, call: str) -> None:
        super()._maybe_fail(call)
        if self.frozen:
            self.timeouts.append(self.clock.t)
            self.clock.advance(self._timeout)
            raise TimeoutError(f"{call}: timed out")

    def get(self, timeout: float) -> Lease | None:
        self._timeout = timeout
        return super().get(timeout)

    def update(self, lease: Lease, timeout: float) -> Lease:
        self._timeout = timeout
        return super().update(lease, timeout)


def test_a_partitioned_leader_loses_within_the_renew_deadline_not_after_each_call_runs_out() -> None:
    """Issue 11: the fast-path PUT and the GET after it each got the whole budget, so a frozen network
    kept the leader "leading" past the deadline. The attempt now shares what is left of it."""
    clock = FakeClock()
    api = FrozenNetwork(clock)
    rec = Recorder()
    elector = make(api, clock, rec, renew_deadline=4.0, retry_period=1.0, lease_duration=6.0)
    elector.tick()
    assert rec.started == 1
    renewed_at = clock.t
    api.frozen = True
    lost_at = None
    while lost_at is None:
        clock.advance(elector.tick() or 0.0)
        if rec.stopped:
            lost_at = clock.t
        assert clock.t - renewed_at < 30, "never lost"
    assert not elector.is_leader()
    # Lost once the renew deadline passed, no later than one retry period after it.
    assert 4.0 <= lost_at - renewed_at <= 4.0 + 1.0
    assert all(t - renewed_at < 4.0 for t in api.timeouts)  # no request started past the deadline


def test_stop_is_bounded_while_a_lease_call_hangs() -> None:
    clock = FakeClock()
    api = FakeLeaseAPI()
    rec = Recorder()
    elector = make(api, clock, rec)
    elector.tick()
    api.block = threading.Event()  # the next call hangs (really: a thread blocked in a socket read)
    api.entered.clear()
    elector.start()
    assert api.entered.wait(5)
    elector.stop(release=True, timeout=0.2)  # returns although the thread is stuck
    assert not elector.is_leader()
    api.block.set()


def test_rest_lease_client_makes_one_attempt_bounded_by_its_timeout() -> None:
    """Issue 11: the generated client's urllib3 pool retried each lease call, each with the full
    timeout, so one call outlasted the renew deadline. Against a server that accepts and never
    answers (a frozen network), a call now costs one connection and about its timeout."""
    import socket
    import time

    from kubernetes import client as k8s_client

    from scheduler.app.leaderelection import RestLeaseClient
    from scheduler.client.kubeclient import RestClient

    accepted: list[socket.socket] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(5)
        configuration = k8s_client.Configuration()
        configuration.host = f"http://127.0.0.1:{listener.getsockname()[1]}"
        rest = RestClient(configuration, qps=0, burst=1, pool_size=1)
        client = RestLeaseClient(rest, "kube-system", "py-scheduler")
        done = threading.Event()
        errors: list[BaseException] = []

        def call() -> None:
            try:
                client.get(0.3)
            except Exception as err:
                errors.append(err)
            done.set()

        started = time.monotonic()
        threading.Thread(target=call, daemon=True).start()
        accepted.append(listener.accept()[0])
        assert done.wait(5), "the call outlived its timeout"
        elapsed = time.monotonic() - started
        listener.settimeout(0.5)
        with pytest.raises(TimeoutError):
            accepted.append(listener.accept()[0])  # no second attempt
    for sock in accepted:
        sock.close()
    assert errors and "timed out" in str(errors[0])
    assert elapsed < 3  # generous: one 0.3 s attempt, not four
