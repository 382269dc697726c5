"""Client-side request rate limit (clientConnection qps/burst), a token bucket on the event loop."""

from __future__ import annotations

from informers.clock import REAL_CLOCK, Clock


class TokenBucket:
    """``qps`` tokens a second, at most ``burst`` banked; :meth:`acquire` waits for one."""

    def __init__(self, qps: float, burst: int, *, clock: Clock = REAL_CLOCK) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"qps must be > 0 and burst >= 1, got qps={qps} burst={burst}")
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._stamp = clock.now()

    def _refill(self) -> None:
        now = self._clock.now()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._qps)
        self._stamp = now

    async def acquire(self) -> None:
        # Reserve the token first, then sleep off the debt: concurrent callers queue up fairly.
        self._refill()
        self._tokens -= 1.0
        if self._tokens < 0:
            await self._clock.sleep(-self._tokens / self._qps)
