"""The scheduling cycle (ScheduleOne): pop, run the algorithm, assume, Reserve, Permit, hand off to the
binding pool; and what happens after, success or failure. One cycle at a time on the event loop.

Mirrors ``pkg/scheduler/schedule_one.go`` (ScheduleOne, schedulingCycle, handleSchedulingFailure) and the
outcome reporting users know: a ``Scheduled`` Event on success; on failure a ``FailedScheduling`` Event
with upstream's message and ``PodScheduled=False``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler import metrics
from scheduler.cache import CacheError, PodInfoCache, SchedulerCache, Snapshot
from scheduler.client.api import BindingConflict, BindingOutcomeUnknown, SchedulerApi
from scheduler.client.events import NORMAL, WARNING, EventRecorder
from scheduler.cycle.algorithm import CLEAR_NOMINATION, SchedulingAlgorithm, SchedulingError, runs_post_filter
from scheduler.cycle.attempt import Attempt, one_node_message
from scheduler.cycle.binding import BindingPool, BindingResult, BindingTask, Outcome
from scheduler.cycle.decisions import NO_DECISIONS, DecisionSink
from scheduler.cycle.schedule_one_podgroup import (
    GroupMembers,
    GroupObject,
    PodGroupCycle,
    in_scheduling_group,
)
from scheduler.cycle.unknown_binds import UnknownBind, UnknownBinds
from scheduler.cycle.waiting_pods import CallLater, WaitingPod, WaitingPods
from scheduler.extender.runner import ExtenderFilterError, Extenders
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.objects import (
    nominated_node_name,
    object_meta,
    pod_spec,
    pod_status,
    scheduler_name_of,
)
from scheduler.framework.runtime import Framework, PausedPostFilter, PluginError, node_columns_of
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo, PodSpecError
from scheduler.preemption.executor import PreemptionExecutor
from scheduler.preemption.nominated import NominatedPods
from scheduler.util.timestamps import rfc3339_seconds
from scheduling_queue import EVENT_ASSIGNED_POD_DELETE, SchedulingQueue
from scheduling_queue.types import QueuedPodInfo

log = logging.getLogger(__name__)

# Upstream's framework.PodsToActivateKey: a CycleState entry listing pods to move to activeQ.
PODS_TO_ACTIVATE_KEY = "kubernetes.io/pods-to-activate"

# A Scheduled Event the previous process may have left unwritten: its writes were retried for about
# two minutes (scheduler.client.events), so pods bound this long before start-up are looked at.
SCHEDULED_EVENT_RECOVERY_SECONDS = 180.0
# Each costs one write (a 409 where the Event exists); a flood of recent binds is not replayed whole.
MAX_RECOVERED_SCHEDULED_EVENTS = 2000

# A pod whose spec we cannot read waits in unschedulablePods under this name until it is updated,
# instead of spinning through backoff.
POD_SPEC_PLUGIN = "PodSpecValidation"


_ALGORITHM_ERRORS = (FitError, SchedulingError, PluginError, PodSpecError)


@dataclass(slots=True)
class Stats:
    attempts: int = 0
    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0


class Scheduler:
    def __init__(
        self,
        *,
        frameworks: Mapping[str, Framework],
        queue: SchedulingQueue,
        cache: SchedulerCache,
        pod_infos: PodInfoCache,
        recorder: EventRecorder,
        binding_pool_factory: Callable[[Callable[[BindingResult], None]], BindingPool],
        clock: Callable[[], float] = time.time,
        api: SchedulerApi | None = None,
        extenders: Extenders | None = None,
        call_later: CallLater | None = None,
        decisions: DecisionSink = NO_DECISIONS,
        pod_group_members: GroupMembers | None = None,
        pod_group: GroupObject | None = None,
        nearest_misses_in_events: bool = False,
        nominated_node_name_for_expectation: bool = True,
        opportunistic_batching: bool = True,
    ) -> None:
        self.frameworks = dict(frameworks)
        # Decision records for explain and /debug/pods (on by default; cheap, see scheduler/explain).
        self.decisions = decisions
        # FailedScheduling Events carry kube-scheduler's exact text unless asked to append the
        # nearest misses (the records, explain and /debug/pods keep them either way).
        self.nearest_misses_in_events = nearest_misses_in_events
        self.queue = queue
        self.cache = cache
        self.pod_infos = pod_infos
        self.recorder = recorder
        # Exactly the node columns the enabled plugins of all profiles read (conflicts stop startup).
        self.snapshot = Snapshot(node_columns_of(self.frameworks.values()))
        # Feature gate OpportunisticBatching (upstream's default: on): identical pods reuse the work
        # done for the last one (scheduler.cycle.batching); placements equal one-by-one scheduling.
        self.algorithm = SchedulingAlgorithm(batching=opportunistic_batching)
        if self.algorithm.batch is not None:
            self.algorithm.batch.observe = metrics.observe_batching
        self.binding_pool = binding_pool_factory(self._on_binding_done)
        self.binding_pool.after_bound = self._record_scheduled
        # Bindings whose outcome is unknown, settled by the watch (``pod_bound``).
        self.unknown_binds = UnknownBinds()
        # Feature gate NominatedNodeNameForExpectation (upstream's default: on): the binding cycle
        # publishes where a pod that waits at Permit, or whose PreBind will act, is going.
        self._nominate_expected = nominated_node_name_for_expectation
        if nominated_node_name_for_expectation:
            self.binding_pool.nominate = self._publish_expected_node
        self.extenders = extenders if extenders is not None else Extenders(())
        if self.extenders.has_binders:
            self.binding_pool.extender_bind = self.extenders.bind
        self.clock = clock
        self.stats = Stats()
        # Pods at Permit wait on the loop (a map and timers), not in binding threads.
        self.waiting_pods = WaitingPods(
            asyncio.get_running_loop(), self._on_permit_decided, call_later=call_later
        )
        # The binding context of each waiting pod, until its Permit is decided.
        self._permit_tasks: dict[int, BindingTask] = {}
        self._stopping = False
        # Monotonic time of the last cycle start, for the liveness check.
        self.last_cycle_activity = time.monotonic()
        # Nominated pods count in Filter, and preemption acts through one executor (scheduler.preemption).
        self.nominated = NominatedPods(queue, pod_infos)
        self.preemption = PreemptionExecutor(
            api=api,
            recorder=recorder,
            nominations=self.nominated,
            assigned_pod=cache.get_pod,
            waiting_pods=lambda: self.waiting_pods,
            clock=clock,
        )
        for fwk in self.frameworks.values():
            fwk.nominator = self.nominated
            fwk.preemption_executor = self.preemption
        # Feature gate GenericWorkload: pods of a scheduling group are scheduled group by group.
        self.pod_group_cycle = (
            PodGroupCycle(self, pod_group_members, pod_group) if pod_group_members is not None else None
        )

    # --- the loop -----------------------------------------------------------------------------
    async def run(self) -> None:
        """Pop and schedule until stopped. Yields to the loop after each pod so watches keep flowing."""
        while not self._stopping:
            self.last_cycle_activity = time.monotonic()
            qpi = await self.queue.pop()
            if qpi is None:
                break
            if self.stopping:
                self.queue.done(qpi)
                break
            try:
                if self.pod_group_cycle is not None and in_scheduling_group(qpi.pod):
                    await self.pod_group_cycle.schedule(qpi)
                elif self.extenders:
                    await self.schedule_one_with_extenders(qpi)
                else:
                    rest = self.schedule_one(qpi)
                    if rest is not None:
                        # A PostFilter plugin is waiting for an API write: the next pod waits too.
                        await rest
            except Exception as err:
                # Nothing a pod carries may stop the loop; requeue it as an error.
                log.exception("scheduling cycle crashed for %s", qpi.key)
                text = f"internal error in the scheduling cycle: {type(err).__name__}: {err}"
                self.fail(qpi, None, Status.as_error(text), None)
            await asyncio.sleep(0)

    @property
    def stopping(self) -> bool:
        return self._stopping

    def reject_deleted_waiting_pod(self, key: str, uid: str) -> bool:
        """The watch shows the deletion of pod ``key`` (``uid``), assumed by us: if it waits at Permit,
        reject it (upstream's RejectWaitingPod, message "removed") and return True. Its binding cycle
        then ends as any Permit rejection does, as upstream's handleBindingCycleError: Unreserve,
        forget, AssignedPodDelete (Coscheduling's Unreserve rejects its group's other waiters), a
        FailedScheduling Event ("0/1 nodes are available: 1 removed."), PodScheduled=False and a
        requeue, whose next attempt reports "skip schedule deleting pod" while the pod still exists.
        False when it does not wait (it binds, or is bound)."""
        waiting = self.waiting_pods.get(key)
        if waiting is None or waiting.pod.uid != uid:
            return False
        waiting.reject("", "removed")
        return True

    def stop(self) -> None:
        # Their resources are released (Unreserve, forget) rather than left assumed by a dying process.
        self.waiting_pods.reject_all("scheduler is shutting down")
        self._stopping = True
        self.queue.close()
        self.preemption.shutdown()

    # --- one attempt --------------------------------------------------------------------------
    def schedule_one(self, qpi: QueuedPodInfo) -> Coroutine[Any, Any, None] | None:
        """One scheduling attempt, synchronous on the loop. When a PostFilter plugin must wait for an
        API write (``BlockingPostFilterPlugin``) the rest of the attempt is returned as a coroutine,
        which the caller awaits before the next pod (``run`` does)."""
        attempt = self.begin(qpi)
        if attempt is None:
            return None
        try:
            result = self.algorithm.schedule_pod(attempt.fwk, attempt.state, attempt.pod, self.snapshot)
        except _ALGORITHM_ERRORS as err:
            return self.algorithm_failed(attempt, err)
        self.algorithm_done(attempt.fwk, attempt.state, attempt.start)
        self.assume_and_hand_off(attempt, result.node_name)
        return None

    async def schedule_one_with_extenders(self, qpi: QueuedPodInfo) -> None:
        """``schedule_one`` that awaits the extenders' HTTP calls. The loop stays free meanwhile (watch
        events, bindings, timers); the cycle's snapshot is not touched by them."""
        attempt = self.begin(qpi)
        if attempt is None:
            return
        try:
            result = await self.algorithm.schedule_pod_with_extenders(
                attempt.fwk, attempt.state, attempt.pod, self.snapshot, self.extenders
            )
        except (*_ALGORITHM_ERRORS, ExtenderFilterError) as err:
            if isinstance(err, FitError) and self.extenders.preempts_for(attempt.pod):
                await self._handle_fit_error_with_extenders(attempt, err)
            else:
                rest = self.algorithm_failed(attempt, err)
                if rest is not None:
                    await rest
            return
        self.algorithm_done(attempt.fwk, attempt.state, attempt.start)
        self.assume_and_hand_off(attempt, result.node_name)

    def begin(self, qpi: QueuedPodInfo) -> Attempt | None:
        """The checks before the algorithm; None when the pod is not scheduled in this attempt."""
        pod_dict = qpi.pod
        fwk = self.frameworks.get(scheduler_name_of(pod_dict))
        meta = object_meta(pod_dict)
        if fwk is None or meta.get("deletionTimestamp"):
            # Not ours any more, or being deleted: upstream's skipPodSchedule, which reports a deleting
            # pod (e.g. one whose Binding met "is being deleted" and was requeued).
            if fwk is not None:
                self.recorder.event(
                    pod_dict,
                    event_type=WARNING,
                    reason="FailedScheduling",
                    action="Scheduling",
                    message=f"skip schedule deleting pod: {meta.get('namespace', '')}/{meta.get('name', '')}",
                    controller=fwk.profile_name,
                )
            self.queue.done(qpi)
            return None
        if self.cache.is_assumed(qpi.key):
            cached = self.cache.get_pod(qpi.key)
            if cached is None or not cached.uid or cached.uid == meta.get("uid"):
                # Assumed by an earlier cycle and still binding (upstream's skipPodSchedule).
                self.queue.done(qpi)
                return None
            # The cache is keyed by name: a deleted namesake is still binding. Retry after backoff
            # rather than dropping this new pod.
            self.fail(
                qpi,
                None,
                Status.as_error(f"pod {qpi.key}: a previous pod of this name is still being bound"),
                fwk,
            )
            return None

        start = time.perf_counter()
        self.stats.attempts += 1
        try:
            pod = self.pod_infos.get(pod_dict)
        except PodSpecError as err:
            self.fail(
                qpi,
                None,
                Status.unschedulable(str(err), resolvable=False).with_plugin(POD_SPEC_PLUGIN),
                fwk,
                start=start,
            )
            return None

        self.cache.update_snapshot(self.snapshot)
        state = fwk.new_cycle_state()
        self.decisions.begin(fwk, pod, state, qpi.attempts)
        return Attempt(qpi, fwk, pod, state, start)

    def algorithm_failed(self, attempt: Attempt, err: Exception) -> Coroutine[Any, Any, None] | None:
        """Report a failed algorithm; for a FitError whose PostFilter waits for I/O, the coroutine that
        finishes the attempt (see ``schedule_one``)."""
        qpi, pod, fwk, start = attempt.qpi, attempt.pod, attempt.fwk, attempt.start
        if isinstance(err, FitError):
            return self._handle_fit_error(attempt, err)
        # A failed algorithm counts too (upstream's deferred Observe); a FitError's includes PostFilter.
        self.algorithm_done(fwk, attempt.state, start)
        if isinstance(err, SchedulingError | PluginError | ExtenderFilterError):
            self.fail(qpi, pod, err.status, fwk, start=start, message=str(err))
        else:
            self.fail(
                qpi,
                pod,
                Status.unschedulable(str(err), resolvable=False).with_plugin(POD_SPEC_PLUGIN),
                fwk,
                start=start,
            )
        return None

    def assume_and_hand_off(self, attempt: Attempt, node_name: str) -> None:
        """assume, Reserve, Permit, then the binding pool. Runs against the cache as it is now: after
        an extender call the cluster may have moved on, and upstream assumes regardless too."""
        qpi, pod, fwk, state, start = attempt.qpi, attempt.pod, attempt.fwk, attempt.state, attempt.start
        try:
            assumed = self.cache.assume_pod(pod, node_name)
        except CacheError as err:
            self.fail(qpi, pod, Status.as_error(err), fwk, start=start)
            return
        # As upstream's assume: the pod now counts on its node, so it must not count as nominated too.
        self.queue.nominator.delete_nominated_pod_if_exists(qpi.pod)
        try:
            status = fwk.run_reserve(state, assumed, node_name)
            if status is not None:
                fwk.run_unreserve(state, assumed, node_name)
                self.cache.forget_pod(assumed.key)
                self.fail(
                    qpi, pod, status, fwk, start=start, message=one_node_message(pod, node_name, status)
                )
                return
            status, timeouts = fwk.run_permit_plugins(state, assumed, node_name)
            task = BindingTask(fwk, state, qpi, assumed, node_name, start)
            if status is not None and status.code is Code.Wait:
                # The timeouts start now, as upstream's; the pod binds once every waiter allows it.
                waiting = self.waiting_pods.add(assumed, node_name, timeouts)
                self._permit_tasks[id(waiting)] = task
                # NominatedNodeNameForExpectation: a pod waiting at Permit tells others where it goes.
                if self._nominate_expected:
                    if nominated_node_name(qpi.pod) != node_name:
                        self.recorder.nominate_pod(qpi.pod, node_name)
                    task.nominated = True
                self.decisions.assumed(state, node_name, waiting=True)
                self._activate_requested(state)
                return
            if status is not None:
                fwk.run_unreserve(state, assumed, node_name)
                self.cache.forget_pod(assumed.key)
                self.fail(
                    qpi, pod, status, fwk, start=start, message=one_node_message(pod, node_name, status)
                )
                return

            self.decisions.assumed(state, node_name, waiting=False)
            self.binding_pool.submit(task)
        except Exception:
            # A plugin raised after assume. Undo it, or the pod stays counted on the node and every
            # later attempt is skipped as "already assumed". run() reports the error and requeues.
            stale = self.waiting_pods.get(assumed.key)
            if stale is not None:
                self._permit_tasks.pop(id(stale), None)
                stale.reject("", "internal error after Permit")
            fwk.run_unreserve(state, assumed, node_name)
            self.cache.forget_pod(assumed.key)
            raise

    @staticmethod
    def algorithm_done(fwk: Framework, state: CycleState, start: float) -> None:
        # Upstream's SchedulingAlgorithmLatency: from the cycle's start to the algorithm's end.
        metrics.observe_algorithm(time.perf_counter() - start)
        fwk.flush_plugin_metrics(state)

    def _activate_requested(self, state: CycleState) -> None:
        """Pods a plugin asked to move to activeQ (upstream's PodsToActivate), e.g. a gang's siblings."""
        pods = state.get(PODS_TO_ACTIVATE_KEY)
        if pods:
            state.delete(PODS_TO_ACTIVATE_KEY)
            self.queue.activate(pods)

    # --- outcomes -----------------------------------------------------------------------------
    def _on_permit_decided(self, waiting: WaitingPod, status: Status | None) -> None:
        """A waiting pod was allowed by every waiting plugin (bind it) or rejected (release it)."""
        task = self._permit_tasks.pop(id(waiting), None)
        if task is None:
            return
        if status is None and not self._stopping:
            # The pod may have waited long: its node may be gone meanwhile.
            task.node_deleted = not self.cache.has_node(task.node_name)
            self.binding_pool.submit(task)
            return
        status = status or Status.unschedulable("scheduler is shutting down")
        self.binding_pool.report(BindingResult(task, Outcome.REJECTED, status, extra={"point": "Permit"}))

    def _record_scheduled(self, task: BindingTask) -> None:
        """On the binding thread, once bound: the Scheduled Event, written there and then (one thread
        hand-off less per pod than the writer pool, and none of its cost on the loop)."""
        self._scheduled_event(task.qpi.pod, task.pod.key, task.node_name, task.fwk.profile_name, inline=True)

    def _scheduled_event(
        self, pod: Mapping[str, Any], key: str, node_name: str, profile: str, *, inline: bool
    ) -> None:
        self.recorder.event(
            pod,
            event_type=NORMAL,
            reason="Scheduled",
            action="Binding",
            message=f"Successfully assigned {key} to {node_name}",
            controller=profile,
            aggregate=False,
            inline=inline,
            once_per_pod=True,
        )

    def recover_scheduled_events(self, pods: Iterable[Mapping[str, Any]], now: float) -> int:
        """At start-up, before the first cycle: the Scheduled Event of every pod of our profiles that
        was bound within ``SCHEDULED_EVENT_RECOVERY_SECONDS`` (by PodScheduled's lastTransitionTime,
        which the API server sets at binding), written again. A scheduler killed while it bound pods
        left Events on the wire or waiting for a retry; the name is the one the first write used, so
        where it had landed the API server refuses the copy (409) and nothing is doubled. At most
        ``MAX_RECOVERED_SCHEDULED_EVENTS``, the most recent first. Returns how many were sent."""
        recent: list[tuple[float, Mapping[str, Any]]] = []
        for pod in pods:
            node = pod_spec(pod).get("nodeName") or ""
            if not node or scheduler_name_of(pod) not in self.frameworks:
                continue
            for cond in pod_status(pod).get("conditions") or ():
                if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
                    bound_at = rfc3339_seconds(cond.get("lastTransitionTime"))
                    if bound_at is not None and now - bound_at <= SCHEDULED_EVENT_RECOVERY_SECONDS:
                        recent.append((bound_at, pod))
        recent.sort(key=lambda item: item[0], reverse=True)
        for _, pod in recent[:MAX_RECOVERED_SCHEDULED_EVENTS]:
            meta = object_meta(pod)
            key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
            node = str(pod_spec(pod).get("nodeName"))
            self._scheduled_event(pod, key, node, scheduler_name_of(pod), inline=False)
        return min(len(recent), MAX_RECOVERED_SCHEDULED_EVENTS)

    # --- bindings whose outcome is unknown ----------------------------------------------------
    def pod_bound(self, pod: Mapping[str, Any]) -> None:
        """The watch shows ``pod`` bound (an add or update of an assigned pod). If a Binding of ours
        whose outcome was unknown sent it to that very node, that Binding landed: the bind is reported
        as one that succeeded (the Scheduled Event, the pod-bound metrics), and a PodScheduled=False
        patch of the failed attempt not yet sent is cancelled. The attempt itself stays counted as
        the error it was (``scheduler_schedule_attempts_total``), and PostBind does not run: the
        failed attempt already ran Unreserve, and upstream runs PostBind only in a binding cycle
        whose Bind succeeded. While a later attempt of the pod is binding, its result decides."""
        uid = object_meta(pod).get("uid", "")
        if uid not in self.unknown_binds or self.binding_pool.is_binding(uid):
            return
        record = self.unknown_binds.settle(pod)
        if record is not None:
            self._unknown_bind_landed(pod, record)

    def node_deleted(self, node: Mapping[str, Any]) -> None:
        """The watch shows ``node`` deleted: bindings to it not yet sent are not sent (``BindingPool``)."""
        self.binding_pool.node_deleted(object_meta(node).get("name", ""))

    def pod_deleted(self, pod: Mapping[str, Any]) -> None:
        """The watch shows ``pod`` deleted: a Binding of it whose outcome was unknown no longer matters."""
        self.unknown_binds.forget(object_meta(pod).get("uid", ""))

    def _unknown_bind_landed(self, pod: Mapping[str, Any], record: UnknownBind) -> None:
        log.info("binding %s to %s landed although its answer was lost", record.key, record.node_name)
        self.recorder.cancel_condition_patches(object_meta(pod).get("uid", ""))
        if any(
            c.get("type") == "PodScheduled" and c.get("status") == "False"
            for c in pod_status(pod).get("conditions") or ()
        ):
            # The failed attempt's patch landed after the Binding: the pod is bound, and says so.
            self.recorder.pod_condition_scheduled(pod)
        self._scheduled_event(pod, record.key, record.node_name, record.profile, inline=False)
        self.stats.scheduled += 1
        metrics.observe_pod_bound(record.attempts, self.clock() - record.initial_attempt_timestamp)

    def _watch_shows_landed(self, result: BindingResult) -> bool:
        """A Binding whose outcome is unknown, of a pod the watch has shown bound (same uid) to the
        node that Binding was sent to, while it was in flight."""
        error = result.status.error if result.status is not None else None
        if result.outcome is not Outcome.ERROR or not isinstance(error, BindingOutcomeUnknown):
            return False
        key = result.task.pod.key
        cached = self.cache.get_pod(key)
        return (
            cached is not None
            and cached.uid == result.task.pod.uid
            and cached.node_name == error.node_name
            and not self.cache.is_assumed(key)
        )

    def _remember_unknown_bind(self, task: BindingTask, result: BindingResult) -> None:
        """After a failed binding: keep a Binding whose outcome is unknown, and settle one the watch
        showed bound while this attempt was binding (``pod_bound`` left it to this result)."""
        uid = task.pod.uid
        error = result.status.error if result.status is not None else None
        if isinstance(error, BindingOutcomeUnknown):
            self.unknown_binds.remember(
                uid,
                UnknownBind(
                    task.pod.key,
                    error.node_name,
                    task.fwk.profile_name,
                    task.qpi.attempts,
                    task.qpi.initial_attempt_timestamp,
                ),
            )
        if uid in self.unknown_binds:
            cached = self.cache.get_pod(task.pod.key)
            if cached is not None and cached.uid == uid and not self.cache.is_assumed(task.pod.key):
                self.pod_bound(cached.pod)

    def _publish_expected_node(self, task: BindingTask) -> None:
        """On the binding thread, when a PreBind plugin will act (upstream's bindingCycle with
        NominatedNodeNameForExpectation): ``status.nominatedNodeName`` = the chosen node before
        PreBind, so the cluster autoscaler and others see where the pod is going. A failure is logged
        and binding goes on, as upstream."""
        if nominated_node_name(task.qpi.pod) == task.node_name:
            return
        try:
            self.recorder.nominate_pod(task.qpi.pod, task.node_name, inline=True)
        except Exception as err:
            log.warning("publishing the nominated node of %s failed: %s", task.pod.key, err)

    def _on_binding_done(self, result: BindingResult) -> None:
        task = result.task
        qpi, pod, fwk = task.qpi, task.pod, task.fwk
        if self._watch_shows_landed(result):
            # The Binding's answer was lost, but the watch already shows the pod bound where it was
            # sent: it succeeded, and writing the failure now would put PodScheduled=False on a bound
            # pod. The rest of a successful binding cycle runs here: PostBind, the Event, the metrics.
            log.info("binding %s to %s landed although its answer was lost", pod.key, task.node_name)
            fwk.run_post_bind(task.state, pod, task.node_name)
            self._scheduled_event(qpi.pod, pod.key, task.node_name, fwk.profile_name, inline=False)
            result = BindingResult(task, Outcome.BOUND, bind_seconds=result.bind_seconds)
        self.decisions.binding_done(
            task.state, bound=result.outcome is Outcome.BOUND, message=str(result.status or "")
        )
        if result.outcome is Outcome.BOUND:
            # A pod whose deletion started while it was binding is no longer in the cache: the watch
            # adds it if the Binding landed first (``finish_binding`` leaves a namesake alone).
            self.cache.finish_binding(pod.key, pod.uid)
            if self.queue.was_flushed(qpi):
                # Upstream's PodScheduledAfterFlush: a hint or event the pod should have been moved by
                # may be missing.
                metrics.POD_SCHEDULED_AFTER_FLUSH.inc()
            self.queue.done(qpi)
            # The pending version is bound and will not be scheduled again; the cache holds the pod
            # from here on (the assumed copy, then the bound version).
            self.pod_infos.forget(pod)
            self.stats.scheduled += 1
            metrics.observe_attempt("scheduled", fwk.profile_name, time.perf_counter() - task.cycle_start)
            metrics.observe_pod_bound(qpi.attempts, self.clock() - qpi.initial_attempt_timestamp)
            self.unknown_binds.forget(pod.uid)
            return
        self._finish_failed_binding(result)
        self._remember_unknown_bind(task, result)

    def _finish_failed_binding(self, result: BindingResult) -> None:
        task = result.task
        qpi, pod, fwk = task.qpi, task.pod, task.fwk
        fwk.run_unreserve(task.state, pod, task.node_name)
        # False when the pod's deletion already removed it (the event handlers), so nothing is freed
        # twice; the uid keeps a namesake assumed since then counted.
        forgotten = self.cache.forget_pod(pod.key, pod.uid)
        if result.outcome is Outcome.CONFLICT and (
            _conflict_settled(result) or self.queue.gone_while_in_flight(qpi)
        ):
            # A read of the pod after the 404/409, or the watch, shows it bound (maybe by an earlier
            # incarnation of us), deleted or replaced by a namesake: upstream's handleSchedulingFailure
            # does not requeue it (its pod lister), and a failure written onto a bound pod would only
            # mislead. Still an error attempt, as upstream counts it before asking its lister.
            log.info("binding %s to %s: %s", pod.key, task.node_name, result.status)
            metrics.observe_attempt("error", fwk.profile_name, time.perf_counter() - task.cycle_start)
            self.queue.done(qpi)
        elif result.outcome is Outcome.ABANDONED:
            # Rejectors of an earlier attempt must not park it: no plugin said no this time.
            qpi.unschedulable_plugins = set()
            qpi.pending_plugins = set()
            self.queue.add_unschedulable_if_not_present(qpi)
        else:
            status = result.status or Status.as_error("binding failed")
            message = ""
            if result.extra.get("point") == "Permit":
                message = one_node_message(pod, task.node_name, status)
            elif status.is_rejection() and status.plugin:
                # Upstream: past Permit nothing makes a pod unschedulable; a PreBind/Bind rejection
                # backs off and retries rather than waiting for the plugin's events.
                status = Status(status.code, list(status.reasons), "", status.error)
            # Counted in scheduler_schedule_attempts_total from the cycle's start, as upstream's
            # handleBindingCycleError -> handleSchedulingFailure (error, or unschedulable at Permit).
            self.fail(
                qpi,
                pod,
                status,
                fwk,
                start=task.cycle_start,
                message=message,
                withdrawn=task.node_name if task.nominated else "",
            )
        if forgotten:
            # As upstream, forgetting an assumed pod in the binding cycle is an AssignedPodDelete: pods
            # rejected for want of the room it held may fit now. Sent after the requeue and aimed at
            # others only, so it can't bounce the pod itself out of unschedulablePods.
            uid = pod.uid
            self.queue.move_all_to_active_or_backoff(
                EVENT_ASSIGNED_POD_DELETE,
                pod.pod,
                None,
                pre_check=lambda other: object_meta(other).get("uid") != uid,
            )

    def _handle_fit_error(self, attempt: Attempt, err: FitError) -> Coroutine[Any, Any, None] | None:
        # Upstream schedulingCycle: without PostFilter plugins (or without any node) the nomination is
        # cleared (clearNominatedNode); after PostFilter it is whatever PostFilter decided, and
        # None (ModeNoop) leaves it alone. The pod group cycle runs PostFilter itself (podgroup_cycle.py).
        nominated: str | None = CLEAR_NOMINATION
        post_status: Status | None = None
        if runs_post_filter(attempt.fwk, err):
            outcome = attempt.fwk.run_post_filter(attempt.state, attempt.pod, err.diagnosis.node_to_status)
            if isinstance(outcome, PausedPostFilter):
                return self._resume_fit_error(attempt, err, outcome)
            nominated, post_status = outcome
        self.finish_fit_error(attempt, err, nominated, post_status)
        return None

    async def _resume_fit_error(self, attempt: Attempt, err: FitError, paused: PausedPostFilter) -> None:
        """The rest of ``_handle_fit_error`` once the paused PostFilter run has finished on the loop."""
        nominated, post_status = await attempt.fwk.resume_post_filter(paused)
        self.finish_fit_error(attempt, err, nominated, post_status)

    async def _handle_fit_error_with_extenders(self, attempt: Attempt, err: FitError) -> None:
        """``_handle_fit_error`` whose PostFilter may ask the extenders' preemptVerb, awaited on the loop."""
        nominated: str | None = CLEAR_NOMINATION
        post_status: Status | None = None
        if runs_post_filter(attempt.fwk, err):
            nominated, post_status = await attempt.fwk.run_post_filter_with_extenders(
                attempt.state, attempt.pod, err.diagnosis.node_to_status, self.extenders
            )
        self.finish_fit_error(attempt, err, nominated, post_status)

    def finish_fit_error(
        self, attempt: Attempt, err: FitError, nominated: str | None, post_status: Status | None
    ) -> None:
        qpi, pod, fwk, state, start = attempt.qpi, attempt.pod, attempt.fwk, attempt.state, attempt.start
        if post_status is not None and post_status.reasons:
            err.diagnosis.post_filter_msg = post_status.message()
        self.algorithm_done(fwk, state, start)
        qpi.unschedulable_plugins = set(err.diagnosis.unschedulable_plugins)
        qpi.pending_plugins = set(err.diagnosis.pending_plugins)
        self.stats.unschedulable += 1
        metrics.observe_attempt("unschedulable", fwk.profile_name, time.perf_counter() - start)
        message = err.message()
        # Upstream's text first; then, for `kubectl describe pod`, which nodes came closest and why.
        gist = self.decisions.unschedulable(fwk, state, pod, self.snapshot, err, nominated, message)
        self._requeue_and_report(
            qpi,
            fwk,
            reason="Unschedulable",
            message=message,
            nominated=nominated,
            event_note=gist if self.nearest_misses_in_events else "",
        )

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
        withdrawn: str = "",
    ) -> None:
        """``withdrawn``: the node this attempt published as the pod's nominatedNodeName (it waited at
        Permit), which the clearing below must take back even if the pod does not show it yet."""
        profile = fwk.profile_name if fwk is not None else ""
        text = message or status.message() or status.code.name
        if status.is_rejection():
            qpi.unschedulable_plugins = {status.plugin} if status.plugin else set()
            qpi.pending_plugins = {status.plugin} if status.code is Code.Pending and status.plugin else set()
            result, reason = "unschedulable", "Unschedulable"
            self.stats.unschedulable += 1
        else:
            qpi.unschedulable_plugins = set()
            qpi.pending_plugins = set()
            result, reason = "error", "SchedulerError"
            self.stats.errors += 1
            log.warning("error scheduling %s: %s", qpi.key, text)
        if start is not None:
            metrics.observe_attempt(result, profile, time.perf_counter() - start)
        self.decisions.failed(qpi.key, text, error=result == "error")
        # Every other failure clears the nomination upstream (clearNominatedNode); a pod group waiting
        # for preemption nominates its members where the trial put them.
        self._requeue_and_report(
            qpi, fwk, reason=reason, message=text, nominated=nominated, withdrawn=withdrawn
        )

    def _requeue_and_report(
        self,
        qpi: QueuedPodInfo,
        fwk: Framework | None,
        *,
        reason: str,
        message: str,
        nominated: str | None,
        event_note: str = "",
        withdrawn: str = "",
    ) -> None:
        """``nominated``: upstream's NominatingInfo. None is ModeNoop (leave it); a name, or
        CLEAR_NOMINATION, is ModeOverride: the nominator learns it now, and the status patch carries it
        only when it differs from the pod's current ``status.nominatedNodeName`` (as ``updatePod``)."""
        self.queue.add_unschedulable_if_not_present(qpi)
        if nominated is not None:
            if withdrawn and not nominated:
                # Our own nominatedNodeName write may land after this failure: its echo must not
                # nominate the pod again, and the clearing patch goes out even if the pod does not
                # show the value yet (the recorder sends it after that write).
                self.queue.nominator.withdraw(qpi.pod, withdrawn)
            self.queue.nominator.add_nominated_pod(qpi.pod, nominated)
            current = nominated_node_name(qpi.pod)
            if current == nominated and not withdrawn:
                nominated = None
        controller = fwk.profile_name if fwk is not None else "py-scheduler"
        self.recorder.event(
            qpi.pod,
            event_type=WARNING,
            reason="FailedScheduling",
            action="Scheduling",
            message=f"{message} {event_note}" if event_note else message,
            controller=controller,
        )
        self.recorder.pod_condition_unschedulable(
            qpi.pod, reason=reason, message=message, nominated_node=nominated
        )

    def pod_info_or_none(self, pod: Mapping[str, Any]) -> PodInfo | None:
        try:
            return self.pod_infos.get(pod)
        except PodSpecError:
            return None


def _conflict_settled(result: BindingResult) -> bool:
    error = result.status.error if result.status is not None else None
    return isinstance(error, BindingConflict) and error.settled
