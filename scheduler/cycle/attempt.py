"""What the pod-by-pod cycle (``schedule_one``) and the pod group cycle (``schedule_one_podgroup``)
share: one attempt at one pod, and the steps an attempt goes through.

Upstream keeps both cycles as methods of one ``Scheduler`` (``schedule_one.go``,
``schedule_one_podgroup.go``). Here the pod group cycle drives the same steps through the
``AttemptSteps`` protocol, which ``Scheduler`` implements, so neither cycle module imports the other's
internals.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.client.events import EventRecorder
from scheduler.cycle.algorithm import CLEAR_NOMINATION, SchedulingAlgorithm
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Status
from scheduler.framework.types import Diagnosis, PodInfo
from scheduling_queue import SchedulingQueue
from scheduling_queue.types import QueuedPodInfo


@dataclass(slots=True)
class Attempt:
    """One scheduling attempt at one pod: the profile that runs it, its cycle state, when it began."""

    qpi: QueuedPodInfo
    fwk: Framework
    pod: PodInfo
    state: CycleState
    start: float


class AttemptSteps(Protocol):
    """The steps of an attempt and the state they work on (implemented by ``Scheduler``)."""

    queue: SchedulingQueue
    cache: SchedulerCache
    snapshot: Snapshot
    algorithm: SchedulingAlgorithm
    recorder: EventRecorder
    clock: Callable[[], float]

    def begin(self, qpi: QueuedPodInfo) -> Attempt | None:
        """The checks before the algorithm; None when the pod is not scheduled in this attempt."""
        ...

    def algorithm_done(self, fwk: Framework, state: CycleState, start: float) -> None:
        """Record the algorithm's latency and the plugins' sampled metrics."""
        ...

    def algorithm_failed(self, attempt: Attempt, err: Exception) -> Coroutine[Any, Any, None] | None:
        """Report a failed algorithm; a coroutine when the PostFilter that follows waits for I/O."""
        ...

    def assume_and_hand_off(self, attempt: Attempt, node_name: str) -> None:
        """assume, Reserve, Permit, then the binding pool."""
        ...

    def finish_fit_error(
        self, attempt: Attempt, err: FitError, nominated: str | None, post_status: Status | None
    ) -> None:
        """Report an attempt that found no node, after its PostFilter ran."""
        ...

    def fail(
        self,
        qpi: QueuedPodInfo,
        pod: PodInfo | None,
        status: Status,
        fwk: Framework | None,
        *,
        start: float | None = None,
        message: str = "",
        nominated: str | None = CLEAR_NOMINATION,
    ) -> None:
        """Report a failed attempt (Event, condition, requeue)."""
        ...


def one_node_message(pod: PodInfo, node_name: str, status: Status) -> str:
    """Upstream reports a Reserve/Permit rejection as a FitError over the one chosen node:
    "0/1 nodes are available: 1 <reason>."."""
    if not status.is_rejection():
        return ""
    return FitError(pod, 1, Diagnosis(node_to_status={node_name: status})).message()
