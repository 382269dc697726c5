"""Backoff, jitter bounds, rate limiting, and the reflector's retry behaviour under a fake clock."""

from __future__ import annotations

import random

import pytest

from informers import PODS, ApiError, BackoffPolicy, SharedInformer
from informers.backoff import Backoff
from informers.ratelimit import TokenBucket
from informers.reflector import MIN_WATCH_TIMEOUT, Reflector
from informers.testing import FakeApiServer, FakeClock, connection_refused, eventually, make_pod


def test_default_policy_matches_client_go_reflector() -> None:
    p = BackoffPolicy()
    assert (p.initial, p.cap, p.factor, p.jitter, p.reset_after) == (0.8, 30.0, 2.0, 1.0, 120.0)


@pytest.mark.parametrize("seed", range(20))
def test_delays_double_to_cap_within_jitter_bounds(seed: int) -> None:
    clock = FakeClock()
    backoff = Backoff(BackoffPolicy(), clock=clock, rng=random.Random(seed))
    base = 0.8
    for _ in range(12):
        delay = backoff.next_delay()
        assert base <= delay < 2 * base
        clock.t += 1.0  # failures keep coming faster than reset_after
        base = min(base * 2, 30.0)
    # Capped: never beyond cap * (1 + jitter).
    assert all(backoff.next_delay() < 60.0 for _ in range(50))


def test_zero_jitter_is_exact_exponential_sequence() -> None:
    backoff = Backoff(BackoffPolicy(initial=1.0, cap=10.0, jitter=0.0), clock=FakeClock())
    assert [backoff.next_delay() for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_backoff_resets_after_quiet_period_and_on_reset() -> None:
    clock = FakeClock()
    backoff = Backoff(BackoffPolicy(initial=1.0, cap=100.0, jitter=0.0, reset_after=120.0), clock=clock)
    assert [backoff.next_delay() for _ in range(3)] == [1.0, 2.0, 4.0]
    clock.t += 119.0
    assert backoff.next_delay() == 8.0
    clock.t += 120.0
    assert backoff.next_delay() == 1.0
    backoff.next_delay()
    backoff.reset()
    assert backoff.next_delay() == 1.0


def test_jitter_is_deterministic_for_a_seed() -> None:
    a = Backoff(clock=FakeClock(), rng=random.Random(7))
    b = Backoff(clock=FakeClock(), rng=random.Random(7))
    assert [a.next_delay() for _ in range(8)] == [b.next_delay() for _ in range(8)]


def test_invalid_policy_rejected() -> None:
    with pytest.raises(ValueError):
        BackoffPolicy(initial=0)
    with pytest.raises(ValueError):
        BackoffPolicy(initial=5, cap=1)


def test_watch_timeout_is_randomised_between_one_and_two_minimums() -> None:
    reflector = Reflector(FakeApiServer(), PODS, sink=None, rng=random.Random(3))  # type: ignore[arg-type]
    values = [reflector.watch_timeout_seconds() for _ in range(200)]
    assert all(MIN_WATCH_TIMEOUT <= v < 2 * MIN_WATCH_TIMEOUT for v in values)
    assert len(set(values)) > 50


async def test_token_bucket_allows_burst_then_paces() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    for _ in range(3):
        await bucket.acquire()
    assert clock.sleeps == []
    await bucket.acquire()
    assert clock.sleeps == [pytest.approx(0.1)]


async def test_list_failures_back_off_exponentially_then_sync() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a"))
    server.list_failures.extend([connection_refused() for _ in range(5)])
    clock = FakeClock()
    policy = BackoffPolicy(initial=0.8, cap=30.0, jitter=1.0)
    informer = SharedInformer(server, PODS, clock=clock, rng=random.Random(11), backoff_policy=policy)
    async with informer:
        assert await informer.wait_for_sync(5)
    assert len(clock.sleeps) == 5
    base = 0.8
    for delay in clock.sleeps:
        assert base <= delay < 2 * base
        base *= 2
    assert list(informer.store.keys()) == ["default/a"]


async def test_watch_connection_error_resumes_from_last_resource_version_without_relist() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a"))
    clock = FakeClock()
    informer = SharedInformer(server, PODS, clock=clock, rng=random.Random(1))
    async with informer:
        assert await informer.wait_for_sync(5)
        await eventually(lambda: server.open_watches == 1)
        server.create(PODS, make_pod("b"))
        await eventually(lambda: "default/b" in informer.store)
        rv_before = informer.last_sync_resource_version
        server.watch_failures.extend(
            [connection_refused(), ApiError(500, "InternalError"), ApiError(429, "TooMany")]
        )
        server.disconnect(connection_refused())
        await eventually(lambda: len(server.watch_calls) == 5 and server.open_watches == 1)
    assert len(server.list_calls) == 1, "a connection error must not cause a relist"
    resumed = [params["resourceVersion"] for _, params in server.watch_calls[1:]]
    assert resumed == [rv_before] * 4
    assert len(clock.sleeps) == 4
    assert all(0.8 <= d < 1.6 * 2**i for i, d in enumerate(clock.sleeps))


async def test_short_empty_watch_backs_off_instead_of_spinning() -> None:
    server = FakeApiServer()
    clock = FakeClock(auto_advance=False)
    server._collection(PODS)
    informer = SharedInformer(server, PODS, clock=clock)
    async with informer:
        assert await informer.wait_for_sync(5)
        await eventually(lambda: server.open_watches == 1)
        server.disconnect()  # clean close at once, no events
        await eventually(lambda: clock.waiting == 1)
        assert len(server.watch_calls) == 1
        clock.advance(2.0)
        await eventually(lambda: len(server.watch_calls) == 2)
