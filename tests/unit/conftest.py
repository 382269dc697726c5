"""Fixtures shared by the unit tests of the scheduling core."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.unit.fakes import CoreEnv

MakeEnv = Callable[..., CoreEnv]


@pytest.fixture
async def make_env() -> AsyncIterator[MakeEnv]:
    """Builds CoreEnvs (a Scheduler on fakes at the API seam) and closes every one afterwards."""
    made: list[CoreEnv] = []

    def make(*args: Any, **kwargs: Any) -> CoreEnv:
        env = CoreEnv(*args, **kwargs)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()
