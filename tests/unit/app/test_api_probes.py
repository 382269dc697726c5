"""Start-up API probes (``scheduler.app.api_probes``): a missing CRD is reported in one line; a served
one, or a server that cannot tell, never is."""

from __future__ import annotations

import asyncio
from typing import Any

from informers.testing import eventually
from scheduler.app.api_probes import api_missing


class FakeApi:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls = 0

    def request_json(self, method: str, path: str) -> Any:
        self.calls += 1
        assert path == "/apis/scheduling.x-k8s.io/v1alpha1"
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_a_missing_crd_is_reported_in_one_line() -> None:
    class NotFound(Exception):
        status = 404

    message = asyncio.run(api_missing(FakeApi(NotFound())))
    assert "\n" not in message
    assert "podgroups.scheduling.x-k8s.io" in message and "podgroup-crd" in message


def test_a_served_crd_or_an_unreachable_server_reports_nothing() -> None:
    async def unreachable_keeps_probing() -> bool:
        api = FakeApi(ConnectionError("refused"))
        task = asyncio.ensure_future(api_missing(api, probe_every=0.01))
        await eventually(lambda: api.calls >= 3)  # it took two failed probes as "cannot tell"
        done = task.done()
        task.cancel()
        return done

    async def served_stays_silent() -> tuple[bool, int]:
        api = FakeApi({"resources": [{"name": "podgroups"}]})
        task = asyncio.ensure_future(api_missing(api, probe_every=0.01))
        await eventually(lambda: api.calls == 1)
        # "Never returns" has no event to wait for: once the answer is in, allow ten probe periods for a
        # wrong return (or a second probe) to show, then stop looking.
        await asyncio.wait({task}, timeout=0.1)
        done = task.done()
        task.cancel()
        return done, api.calls

    assert not asyncio.run(unreachable_keeps_probing())
    assert asyncio.run(served_stays_silent()) == (False, 1)
