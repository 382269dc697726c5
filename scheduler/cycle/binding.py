"""The binding cycle: PreBind -> Bind -> PostBind in a bounded thread pool.

Permit waits never reach it: they live on the event loop (``scheduler.cycle.waiting_pods``), and a pod is
submitted only once every waiting Permit plugin has allowed it.

Threads never touch the cache or the queue: outcomes go back to the event loop with
``loop.call_soon_threadsafe``, in batches (one loop callback drains every result reported since the
last). A binding thread re-checks ``may_bind()`` (leadership, shutdown) right before the Bind call,
so a lost lease stops bindings at once. After a successful bind the thread writes the pod's Scheduled
Event itself (``after_bound``).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler.client.api import POD_PENDING, BindingConflict
from scheduler.cycle.binding_threads import Workers
from scheduler.framework.api_error import ApiError
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from scheduling_queue.types import QueuedPodInfo

log = logging.getLogger(__name__)

# Upstream binds every pod in a goroutine of its own, limited only by the client's qps. Threads cost
# more, but a binding thread mostly waits for the API server: with too few of them, binds queue
# behind other clients' requests (a flood of pod creations) while the scheduling cycle sits idle.
# Each thread also writes its pod's Scheduled Event after the bind (96 = the 64 that kept pace with
# binds alone, plus room for those writes). The scheduler starts them all before scheduling
# (``prestart``), so a burst never waits on the loop for threads to start.
BINDING_WORKERS = 96


class Outcome(enum.Enum):
    BOUND = "bound"
    # Bind was answered 404/409 and a read of the pod found it bound, gone or replaced by a namesake
    # (or could not tell): dropped quietly when that read, or the informer, shows the pod settled;
    # otherwise retried after backoff like an error. A 404/409 for a pod still pending (being deleted,
    # gated, a proxy's 409) is an ERROR, as upstream (all the same to its handleSchedulingFailure).
    CONFLICT = "conflict"
    # Rejected at Permit/PreBind by a plugin: the pod goes to the unschedulable pool.
    REJECTED = "rejected"
    # Transient or internal error: the pod backs off and is retried.
    ERROR = "error"
    # Not attempted: we lost leadership or are shutting down.
    ABANDONED = "abandoned"


@dataclass(slots=True)
class BindingTask:
    fwk: Framework
    state: CycleState
    qpi: QueuedPodInfo
    pod: PodInfo
    node_name: str
    cycle_start: float
    # status.nominatedNodeName was already published (the pod waited at Permit).
    nominated: bool = False
    # Set on the loop when the watch shows the node deleted; read by the binding thread before Bind.
    node_deleted: bool = False


@dataclass(slots=True)
class BindingResult:
    task: BindingTask
    outcome: Outcome
    status: Status | None = None
    bind_seconds: float = 0.0
    extra: dict[str, str] = field(default_factory=dict)


class _DeferredStart:
    """A submitted task whose pod's own status patch is still on the wire: ``start`` runs on the loop
    once, when the patch has landed (``landed``, called from a writer thread) or at the pool's limit."""

    __slots__ = ("_loop", "_start", "key", "started", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, start: Callable[[], None], key: str) -> None:
        self._loop = loop
        self._start = start
        self.key = key
        self.started = False
        self.timer: asyncio.TimerHandle | None = None

    def landed(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self.start)
        except RuntimeError:
            log.debug("binding of %s not started: loop closed", self.key)

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        if self.timer is not None:
            self.timer.cancel()
        self._start()


class BindingPool:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        on_done: Callable[[BindingResult], None],
        *,
        max_workers: int = 16,
        may_bind: Callable[[], bool] = lambda: True,
        before_bind: Callable[[str], object] = lambda uid: None,
        after_patches: Callable[[str, Callable[[], None]], bool] | None = None,
        patch_wait_limit: float = 11.0,
    ) -> None:
        self._loop = loop
        # Loop side of before_bind: a pod whose own status patch is on the wire (a gang waiter's
        # nominatedNodeName) gets its thread once the patch has landed, not a thread that waits for
        # it: a released gang's waiters each held one while binds of other gangs queued for threads.
        # At most ``patch_wait_limit`` seconds (before_bind's own limit), then the thread starts.
        self._after_patches = after_patches
        self._patch_wait_limit = patch_wait_limit
        self._on_done = on_done
        self._may_bind = may_bind
        # Orders the pod's PodScheduled=False patch of an earlier attempt before this Binding.
        self._before_bind = before_bind
        # Not a ThreadPoolExecutor: nothing reads a binding's Future (see ``binding_threads``).
        self._executor: Workers[BindingTask] = Workers(self._run, max_workers, "binding")
        self._in_flight = 0
        # The tasks submitted and not yet delivered, by pod uid (on the loop only).
        self._binding: dict[str, BindingTask] = {}
        self._closed = False
        self._results: list[BindingResult] = []
        self._results_lock = threading.Lock()
        self._drain_scheduled = False
        # Loop callbacks that delivered results (fewer than results when binds finish in bursts).
        self.drains = 0
        # Upstream's extendersBinding, set when an extender binds: (handled, status) for a pod; when
        # not handled, the Bind plugins run. Called on the binding thread.
        self.extender_bind: Callable[[PodInfo, str], tuple[bool, Status | None]] | None = None
        # Upstream's NominatedNodeNameForExpectation (beta, on since v1.35): when a PreBind plugin will
        # act, publish status.nominatedNodeName before PreBind. Called on the binding thread. None =
        # the gate is off: no PreBind pre-flights either (upstream runs them only for this).
        self.nominate: Callable[[BindingTask], None] | None = None
        # Called on the binding thread after a successful bind (the Scheduled Event, as upstream's
        # bindingCycle records it from the binding goroutine). Must not touch the loop's state.
        self.after_bound: Callable[[BindingTask], None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self.max_workers = max_workers

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def is_binding(self, uid: str) -> bool:
        """On the loop: whether pod ``uid`` is in the binding cycle (submitted, result not delivered)."""
        return uid in self._binding

    def node_deleted(self, node_name: str) -> None:
        """On the loop: the watch shows ``node_name`` deleted; a binding to it not yet sent is not sent."""
        for task in self._binding.values():
            if task.node_name == node_name:
                task.node_deleted = True

    def prestart(self) -> bool:
        """Start every binding thread now (off the loop; it blocks): a released gang's binds, submitted
        together from the loop, then find idle threads instead of the loop waiting for each new one
        to start. At most BINDING_WORKERS: a larger pool (a large ``parallelism``) grows on demand."""
        return self._executor.prestart(BINDING_WORKERS)

    def submit(self, task: BindingTask) -> None:
        """Called on the loop. The result comes back through ``on_done`` on the loop."""
        deferred = None
        if self._after_patches is not None and not self._closed:
            deferred = _DeferredStart(self._loop, lambda: self._start(task), task.pod.key)
            if self._after_patches(task.pod.uid, deferred.landed):
                deferred = None
        if deferred is None:
            self._executor.submit(task)  # raises after shutdown, before the bookkeeping
        else:
            deferred.timer = self._loop.call_later(self._patch_wait_limit, deferred.start)
        self._in_flight += 1
        self._binding[task.pod.uid] = task
        self._idle.clear()

    def _start(self, task: BindingTask) -> None:
        """On the loop: a deferred task's thread. After shutdown it is dropped, as a task still queued
        in the executor is cancelled then."""
        if not self._closed:
            self._executor.submit(task)

    def report(self, result: BindingResult) -> None:
        """On the loop: an outcome decided without a binding thread (a rejection at Permit) reaches
        ``on_done`` like any other, so every binding-cycle outcome has one path."""
        self._on_done(result)

    def _run(self, task: BindingTask) -> None:
        result = self._bind(task)
        self._report(result)
        if result.outcome is Outcome.BOUND and self.after_bound is not None:
            # After the result is on its way to the loop, so the write never delays the bookkeeping.
            try:
                self.after_bound(task)
            except Exception:
                log.exception("after binding %s", task.pod.key)

    def _report(self, result: BindingResult) -> None:
        # Results wait in a list that the loop drains in one callback: a burst of binds finishing
        # together costs one wakeup of the loop, not one per pod.
        with self._results_lock:
            self._results.append(result)
            if self._drain_scheduled:
                return
            self._drain_scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._drain)
        except RuntimeError:
            # The loop is closed: shutdown went ahead without us; the informer state will sort it out.
            log.debug("binding result for %s dropped: loop closed", result.task.pod.key)

    def _drain(self) -> None:
        """On the loop: deliver every result reported since the last drain, in order."""
        with self._results_lock:
            results, self._results = self._results, []
            self._drain_scheduled = False
        self.drains += 1
        for result in results:
            try:
                self._deliver(result)
            except Exception:
                # As the loop would for a callback of its own: log it, and deliver the rest.
                log.exception("delivering the binding result of %s failed", result.task.pod.key)

    def _deliver(self, result: BindingResult) -> None:
        self._in_flight -= 1
        if self._binding.get(result.task.pod.uid) is result.task:
            del self._binding[result.task.pod.uid]
        if self._in_flight == 0:
            self._idle.set()
        if self._closed:
            # Arrived after shutdown gave up waiting: the queue and recorder are closed, and the
            # informers of the next leader will see whatever the API server made of it.
            log.info("binding result for %s after shutdown: %s", result.task.pod.key, result.outcome.value)
            return
        self._on_done(result)

    def _bind(self, task: BindingTask) -> BindingResult:
        pod, node, fwk, state = task.pod, task.node_name, task.fwk, task.state
        try:
            if self.nominate is not None:
                pre_flight = fwk.run_pre_bind_pre_flights(state, pod, node)
                if pre_flight is not None and pre_flight.code is not Code.Skip:
                    # Upstream: an error, or a rejection (which PreBindPreFlight may not give), fails it.
                    return BindingResult(task, Outcome.ERROR, pre_flight)
                if pre_flight is None and not task.nominated:
                    self.nominate(task)
            status = fwk.run_pre_bind(state, pod, node)
            if status is not None:
                outcome = Outcome.REJECTED if status.is_rejection() else Outcome.ERROR
                return BindingResult(task, outcome, status)
            if task.node_deleted:
                # The API server would store a Binding to a node that is gone (it does not check), and
                # the pod would sit there until the pod garbage collector deleted it: retry instead.
                return BindingResult(task, Outcome.ERROR, Status.as_error(f'node "{node}" was deleted'))
            self._before_bind(pod.uid)
            if not self._may_bind():
                return BindingResult(task, Outcome.ABANDONED)
            # -v 4: every Binding sent, after the leadership check (the partition test reads these).
            log.debug("sending binding of %s to %s", pod.key, node)
            start = time.perf_counter()
            handled, status = False, None
            if self.extender_bind is not None:
                handled, status = self.extender_bind(pod, node)
            if not handled:
                status = fwk.run_bind(state, pod, node)
            seconds = time.perf_counter() - start
            if status is not None:
                return self._bind_failure(task, status, seconds)
            fwk.run_post_bind(state, pod, node)
            return BindingResult(task, Outcome.BOUND, bind_seconds=seconds)
        except Exception as err:
            log.exception("binding cycle of %s crashed", pod.key)
            return BindingResult(task, Outcome.ERROR, Status.as_error(err))

    @staticmethod
    def _bind_failure(task: BindingTask, status: Status, seconds: float) -> BindingResult:
        if isinstance(status.error, BindingConflict) and status.error.pod_state != POD_PENDING:
            return BindingResult(task, Outcome.CONFLICT, status, seconds)
        if status.code is Code.Error or isinstance(status.error, ApiError):
            return BindingResult(task, Outcome.ERROR, status, seconds)
        return BindingResult(task, Outcome.REJECTED, status, seconds)

    async def drain(self, timeout: float) -> bool:
        """Wait for in-flight bindings; True when none is left."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def shutdown(self) -> None:
        self._closed = True
        self._executor.shutdown()
