"""Side-by-side tests against the peer schedulers (scheduler-plugins): run in a pytest session of their
own by `make test` (and alone by `make test-peers`), after the peers are built. Run directly, the
session builds what is missing first rather than skipping."""

from __future__ import annotations

import pytest

from devcluster.peers import SchedulerPlugins, ensure_scheduler_plugins


@pytest.fixture(scope="session", autouse=True)
def scheduler_plugins() -> SchedulerPlugins:
    return ensure_scheduler_plugins()
