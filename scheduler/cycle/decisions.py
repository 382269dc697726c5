"""Where the scheduling cycle reports what it decided, for explain and ``/debug/pods``.

The cycle only knows this protocol; ``scheduler.explain.recorder.DecisionRecorder`` implements it and
the app wires it in, so the cycle never imports the explain layer above it. ``NO_DECISIONS`` records
nothing (a scheduler built without a recorder)."""

from __future__ import annotations

from typing import Protocol

from scheduler.cache import Snapshot
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.runtime import Framework
from scheduler.framework.types import PodInfo


class DecisionSink(Protocol):
    def begin(self, fwk: Framework, pod: PodInfo, state: CycleState, attempt: int) -> None:
        """An attempt starts."""
        ...

    def unschedulable(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        err: FitError,
        nominated: str | None,
        message: str,
    ) -> str:
        """The attempt found no node; returns a nearest-miss gist for the FailedScheduling Event."""
        ...

    def assumed(self, state: CycleState, node_name: str, *, waiting: bool) -> None:
        """The pod passed Permit (or waits there) and goes to the binding pool."""
        ...

    def failed(self, key: str, message: str, *, error: bool) -> None:
        """Any other failure of the running attempt."""
        ...

    def binding_done(self, state: CycleState, *, bound: bool, message: str = "") -> None:
        """The binding cycle of an assumed pod ended."""
        ...


class _NoDecisions:
    def begin(self, fwk: Framework, pod: PodInfo, state: CycleState, attempt: int) -> None:
        pass

    def unschedulable(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        err: FitError,
        nominated: str | None,
        message: str,
    ) -> str:
        return ""

    def assumed(self, state: CycleState, node_name: str, *, waiting: bool) -> None:
        pass

    def failed(self, key: str, message: str, *, error: bool) -> None:
        pass

    def binding_done(self, state: CycleState, *, bound: bool, message: str = "") -> None:
        pass


NO_DECISIONS: DecisionSink = _NoDecisions()
