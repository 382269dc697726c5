"""An out-of-tree plugin for tests/unit/cycle/test_profiles.py, in a module of its own so that the config
loader (by dotted path) and the test import the very same class."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo


class NeedsThreshold:
    """An out-of-tree Filter plugin whose constructor cannot run without its args."""

    name = "NeedsThreshold"
    built: ClassVar[list[Mapping[str, Any]]] = []

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        if "threshold" not in args:
            raise ValueError("args.threshold is required")
        self.threshold = int(args["threshold"])
        NeedsThreshold.built.append(args)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None
