"""Out-of-tree plugins that do not match the protocols, loaded by dotted path in the load-time check
tests (tests/unit/framework/test_plugin_conformance.py, tests/unit/test_cli_startup.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework import CycleState, NodeInfo, PodInfo, Status


class Misspelt:
    name = "Misspelt"

    def scroe(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, None]:
        return 0, None


class WrongArity:
    name = "WrongArity"

    def score(self, state: CycleState, pod: PodInfo) -> tuple[int, None]:
        return 0, None


class AsyncFilter:
    name = "AsyncFilter"

    async def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


def async_filter_factory(args: Mapping[str, Any], handle: Any) -> AsyncFilter:
    """A factory function: only the instance it returns can be checked."""
    return AsyncFilter()
