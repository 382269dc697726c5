"""pytest fixtures of the plugin test kit, registered through the ``pytest11`` entry point."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from scheduler.testing import builders
from scheduler.testing.harness import SchedulerHarness


@pytest.fixture
def scheduler_harness() -> Callable[..., SchedulerHarness]:
    """``scheduler_harness([MyPlugin], args=..., objects=[...])``: a fresh SchedulerHarness per call."""

    def make(*args: Any, **kwargs: Any) -> SchedulerHarness:
        return SchedulerHarness(*args, **kwargs)

    return make


@pytest.fixture
def k8s() -> ModuleType:
    """The object builders: ``k8s.node("a", cpu="4")``, ``k8s.pod("p", cpu="1")``, ``k8s.pvc(...)``..."""
    return builders
