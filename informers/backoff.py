"""Jittered, capped exponential backoff with client-go's reflector numbers."""

from __future__ import annotations

import random
from dataclasses import dataclass

from informers.clock import REAL_CLOCK, Clock


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """client-go's reflector uses 800ms doubling to 30s, jitter 1.0, reset after 2 quiet minutes.

    A delay is ``d * (1 + jitter * U[0, 1))`` where ``d`` doubles from ``initial`` up to ``cap``; with
    jitter 1.0 the worst wait is ``2 * cap``, which is how client-go lands at [30, 60) seconds.
    """

    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0

    def __post_init__(self) -> None:
        if self.initial <= 0 or self.cap < self.initial or self.factor < 1 or self.jitter < 0:
            raise ValueError(f"invalid backoff policy {self!r}")


class Backoff:
    """Stateful: each :meth:`next_delay` grows the base delay, unless ``reset_after`` went by."""

    def __init__(
        self,
        policy: BackoffPolicy | None = None,
        *,
        clock: Clock = REAL_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        self.policy = policy or BackoffPolicy()
        self._clock = clock
        self._rng = rng or random.Random()
        self._base = 0.0
        self._last: float | None = None

    def next_delay(self) -> float:
        p = self.policy
        now = self._clock.now()
        if self._last is None or self._base == 0.0 or now - self._last >= p.reset_after:
            self._base = p.initial
        else:
            self._base = min(self._base * p.factor, p.cap)
        self._last = now
        return self._base * (1.0 + p.jitter * self._rng.random())

    def reset(self) -> None:
        self._base = 0.0
        self._last = None

    async def wait(self) -> float:
        delay = self.next_delay()
        await self._clock.sleep(delay)
        return delay
