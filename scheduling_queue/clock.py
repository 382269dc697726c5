"""Clocks for the queue: a real monotonic one and a fake one tests drive by hand."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time


class MonotonicClock:
    """``time.monotonic``: immune to wall-clock jumps, which would otherwise stall or skip backoffs."""

    __slots__ = ()

    def now(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to; its ``sleep`` returns once the clock passes the deadline.

    Pass ``clock.sleep`` as the queue's ``sleep`` to drive ``SchedulingQueue.run`` from a test.
    """

    __slots__ = ("_now", "_seq", "_sleepers")

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._now = start
        self._seq = itertools.count()
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not run backwards")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)

    def set(self, now: float) -> None:
        self.advance(now - self._now)

    @property
    def sleepers(self) -> int:
        """Sleeps still waiting (cancelled ones included until their deadline passes)."""
        return sum(1 for _, _, fut in self._sleepers if not fut.done())

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        await fut
