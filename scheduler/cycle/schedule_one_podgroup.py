"""The pod group scheduling cycle (feature gate GenericWorkload): a group's queued pods are tried together.

Mirrors ``pkg/scheduler/schedule_one_podgroup.go`` of kube-scheduler v1.36.3 (its default algorithm; the
placement algorithm of TopologyAwareWorkloadScheduling and workload-aware preemption are not ported).
When a pod with ``spec.schedulingGroup`` is popped:

1. Every other queued member of its group is popped with it (PopSpecificPod), and the members are
   ordered by priority, then by their first attempt.
2. Trial: on one snapshot, each member runs the scheduling algorithm; a feasible one is assumed and
   Reserved, and Permit runs. Later members see the earlier ones on their nodes. The group is feasible
   when some member's Permit succeeds (GangScheduling: ``minCount`` members scheduled).
3. Every trial assumption is undone. If the group is feasible, each feasible member is assumed,
   Reserved and Permitted again for real and goes to binding (GangScheduling lets the earlier ones wait
   at Permit until the member that reaches ``minCount`` allows them all). Otherwise nothing is held:
   every member goes back to the queue, unschedulable, with its own reason.

A member whose attempt fails with an error (not a rejection) ends the trial at once, as upstream's: every
member then fails with that error (``failed to schedule other pod from a pod group: ...``), those with an
error of their own with theirs. After each cycle the PodGroup's ``PodGroupInitiallyScheduled`` condition is
written (``scheduler.cycle.podgroup_condition``).

A member that fits nowhere runs PostFilter in the trial (upstream's runAllPostFilters): when DefaultPreemption
nominates a node, it has started evicting there, the member is assumed on that node for the later members,
and a group that is then feasible waits for the preemption: its members go back to the queue nominated
where the trial put them ("pod group is unschedulable, pod group is waiting for preemption to complete")
and the next cycle places them. Workload-aware preemption (a PodGroup's own PostFilter) is alpha upstream
and not ported.

Members retry after backoff only (the queue's GenericWorkload rule), as upstream's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from informers.resource import WORKLOAD_PODGROUPS
from scheduler import metrics
from scheduler.cache import CacheError
from scheduler.cycle.algorithm import CLEAR_NOMINATION, SchedulingError, runs_post_filter
from scheduler.cycle.attempt import Attempt, AttemptSteps, one_node_message
from scheduler.cycle.podgroup_condition import (
    MEMBER_ERROR_PREFIX,
    POD_GROUP_UNSCHEDULABLE_MSG,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    WAITING_ON_PREEMPTION_MSG,
    WAITING_ON_PREEMPTION_STATUS_MSG,
    scheduled_condition_patch,
)
from scheduler.framework.fit_error import FitError
from scheduler.framework.objects import object_meta, pod_spec, scheduler_name_of
from scheduler.framework.runtime import PausedPostFilter, PluginError
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo, PodSpecError
from scheduler.plugins.gangscheduling import pod_group_priority, scheduling_group_name
from scheduling_queue.nominator import Nominator
from scheduling_queue.types import QueuedPodInfo, pod_key

# (namespace, podGroupName) -> the group's pods the scheduler knows.
GroupMembers = Callable[[str, str], Sequence[Mapping[str, Any]]]
# (namespace, podGroupName) -> the PodGroup object, or None (not watched, or not there).
GroupObject = Callable[[str, str], Mapping[str, Any] | None]


def in_scheduling_group(pod: Mapping[str, Any]) -> bool:
    return bool(scheduling_group_name(pod))


@dataclass(slots=True)
class _Trial:
    attempt: Attempt
    node_name: str = ""
    permit: Status | None = None
    failure: Exception | Status | None = None
    # The member did not fit; its PostFilter (preemption) nominated ``node_name`` and started evicting.
    requires_preemption: bool = False
    # What the member's PostFilter decided (upstream's NominatingInfo; None is ModeNoop) and said.
    nominated: str | None = CLEAR_NOMINATION
    post_status: Status | None = None


# The group's outcome, upstream's podGroupAlgorithmResult: status Success, or Unschedulable with or
# without waitingOnPreemption.
SCHEDULED, UNSCHEDULABLE, WAITING_ON_PREEMPTION = "scheduled", "unschedulable", "waiting"


class PodGroupCycle:
    def __init__(
        self, scheduler: AttemptSteps, members: GroupMembers, group: GroupObject | None = None
    ) -> None:
        self.scheduler = scheduler
        self.members = members
        self.group = group

    async def schedule(self, first: QueuedPodInfo) -> None:
        """One pod group cycle. Awaits only a PostFilter plugin's API write (DynamicResources'
        deallocation); the scheduling loop pops nothing else meanwhile."""
        sched = self.scheduler
        queued = self._pop_group(first)
        invalid = self._validate(first, queued)
        if invalid is not None:
            error = Status.as_error(invalid)
            for qpi in queued:
                sched.fail(qpi, None, error, None)
            return
        start = time.perf_counter()
        trials, outcome, group_error = await self._trial(queued)
        metrics.POD_GROUP_SCHEDULING_ALGORITHM_DURATION.observe(time.perf_counter() - start)
        if group_error is not None:
            last = trials[-1].attempt  # the member whose error ended the trial
            for trial in trials:
                self._submit_error(trial, group_error)
            for qpi in queued[queued.index(last.qpi) + 1 :]:  # never tried
                sched.fail(qpi, None, group_error, last.fwk)
            self._write_condition(first, False, REASON_SCHEDULER_ERROR, group_error.message())
            result = metrics.POD_GROUP_ERROR
        elif trials:
            for trial in trials:
                self._submit(trial, outcome)
            if outcome == SCHEDULED:
                self._write_condition(first, True, REASON_SCHEDULED, "")
                result = metrics.POD_GROUP_SCHEDULED
            elif outcome == WAITING_ON_PREEMPTION:
                self._write_condition(first, False, REASON_UNSCHEDULABLE, WAITING_ON_PREEMPTION_STATUS_MSG)
                result = metrics.POD_GROUP_WAITING_ON_PREEMPTION
            else:
                self._write_condition(first, False, REASON_UNSCHEDULABLE, POD_GROUP_UNSCHEDULABLE_MSG)
                result = metrics.POD_GROUP_UNSCHEDULABLE
        else:
            return  # every member was skipped (deleted, not ours, already binding): no cycle ran
        metrics.observe_pod_group_attempt(
            result, trials[0].attempt.fwk.profile_name, time.perf_counter() - start
        )

    def _pop_group(self, first: QueuedPodInfo) -> list[QueuedPodInfo]:
        namespace = object_meta(first.pod).get("namespace", "")
        queued = [first]
        for pod in self.members(namespace, scheduling_group_name(first.pod)):
            if pod_key(pod) == first.key or pod_spec(pod).get("nodeName"):
                continue
            qpi = self.scheduler.queue.pop_specific(pod)
            if qpi is not None:
                queued.append(qpi)
        queued.sort(key=lambda q: (-_priority(q.pod), q.initial_attempt_timestamp))
        return queued

    async def _trial(self, queued: Sequence[QueuedPodInfo]) -> tuple[list[_Trial], str, Status | None]:
        """Each member on the same snapshot, earlier ones assumed; everything undone at the end.

        A member that does not fit runs PostFilter (upstream's runAllPostFilters): when preemption
        nominates a node, the member is assumed there (its victims are being evicted) so the later
        members see it, and the group can at best wait for the preemption to complete. Returns the
        trials, the group's outcome, and the group's error if a member's attempt failed with one (the
        members after it are not tried, as upstream)."""
        sched = self.scheduler
        trials: list[_Trial] = []
        # (attempt, assumed pod, node, the nomination the assumption took away)
        undo: list[tuple[Attempt, PodInfo, str, str]] = []
        nominator = sched.queue.nominator
        outcome = UNSCHEDULABLE
        requires_preemption = False
        try:
            for qpi in queued:
                attempt = sched.begin(qpi)  # updates the snapshot from the cache (trial pods included)
                if attempt is None:
                    continue
                trial = _Trial(attempt)
                trials.append(trial)
                fwk, state = attempt.fwk, attempt.state
                try:
                    result = sched.algorithm.schedule_pod(fwk, state, attempt.pod, sched.snapshot)
                    node = result.node_name
                except (FitError, SchedulingError, PluginError, PodSpecError) as err:
                    trial.failure = err
                    if _is_error(err):
                        return trials, UNSCHEDULABLE, _group_error(err)
                    if not isinstance(err, FitError) or not runs_post_filter(fwk, err):
                        continue
                    ran = fwk.run_post_filter(state, attempt.pod, err.diagnosis.node_to_status)
                    if isinstance(ran, PausedPostFilter):
                        ran = await fwk.resume_post_filter(ran)
                    trial.nominated, trial.post_status = ran
                    if not trial.nominated:
                        continue
                    node, trial.requires_preemption = trial.nominated, True
                try:
                    assumed = sched.cache.assume_pod(attempt.pod, node)
                except CacheError as err:
                    trial.failure = Status.as_error(err)
                    return trials, UNSCHEDULABLE, _group_error(trial.failure)
                # As upstream's assume: placed, the member no longer counts as nominated (it would
                # count twice for the later members); the trial's undo gives the nomination back.
                nominated = nominator.nominated_node_for(qpi.pod)
                nominator.delete_nominated_pod_if_exists(qpi.pod)
                status = fwk.run_reserve(state, assumed, node)
                if status is None:
                    status, _ = fwk.run_permit_plugins(state, assumed, node)
                if status is not None and status.code is not Code.Wait:
                    fwk.run_unreserve(state, assumed, node)
                    sched.cache.forget_pod(assumed.key)
                    _renominate(nominator, qpi.pod, nominated)
                    if trial.requires_preemption:
                        # Upstream: the member's Permit rejection replaces its preemption result.
                        trial.requires_preemption, trial.nominated = False, CLEAR_NOMINATION
                    trial.failure = status
                    trial.node_name = node
                    if _is_error(status):
                        return trials, UNSCHEDULABLE, _group_error(status)
                    continue
                undo.append((attempt, assumed, node, nominated))
                trial.node_name, trial.permit = node, status
                requires_preemption = requires_preemption or trial.requires_preemption
                if status is None:
                    # Permit succeeded: the group is feasible, unless it needs a preemption first.
                    outcome = WAITING_ON_PREEMPTION if requires_preemption else SCHEDULED
        finally:
            for attempt, assumed, node, nominated in reversed(undo):
                attempt.fwk.run_unreserve(attempt.state, assumed, node)
                sched.cache.forget_pod(assumed.key)
                _renominate(nominator, attempt.qpi.pod, nominated)
        return trials, outcome, None

    def _submit(self, trial: _Trial, outcome: str) -> None:
        """Upstream's submitPodGroupAlgorithmResult for one member."""
        sched = self.scheduler
        attempt = trial.attempt
        qpi, pod, fwk, start = attempt.qpi, attempt.pod, attempt.fwk, attempt.start
        failure = trial.failure
        if failure is None:
            sched.algorithm_done(fwk, attempt.state, start)
            if outcome == SCHEDULED:
                # Assume, Reserve and Permit for real, on the node the trial chose (upstream's
                # prepareForBindingCycle); the cycle state is the trial's, as upstream's.
                attempt.state.delete(PODS_TO_ACTIVATE_KEY)
                sched.assume_and_hand_off(attempt, trial.node_name)
            elif outcome == WAITING_ON_PREEMPTION:
                # Back to the queue, nominated where the trial put it, until the victims are gone.
                sched.fail(
                    qpi,
                    pod,
                    Status.unschedulable(WAITING_ON_PREEMPTION_MSG),
                    fwk,
                    start=start,
                    message=WAITING_ON_PREEMPTION_STATUS_MSG,
                    nominated=trial.node_name,
                )
            else:
                # Feasible alone, but the group is not: nothing is held, the reason is its Permit's.
                sched.fail(qpi, pod, Status.unschedulable(), fwk, start=start, message=_group_message(trial))
            return
        if trial.requires_preemption and outcome != WAITING_ON_PREEMPTION:
            # The group cannot go ahead even with the preemption: unschedulable, nomination cleared.
            sched.algorithm_done(fwk, attempt.state, start)
            sched.fail(qpi, pod, Status.unschedulable(), fwk, start=start, message=_group_message(trial))
        elif isinstance(failure, FitError):
            # Its PostFilter already ran in the trial: report what it decided (nominated node included).
            sched.finish_fit_error(attempt, failure, trial.nominated, trial.post_status)
        elif isinstance(failure, Status):
            sched.algorithm_done(fwk, attempt.state, start)
            message = _one_node(pod, trial.node_name, failure) if trial.node_name else ""
            sched.fail(qpi, pod, failure, fwk, start=start, message=message)
        else:
            sched.algorithm_failed(attempt, failure)

    def _submit_error(self, trial: _Trial, error: Status) -> None:
        """The group failed with an error: a member whose own attempt failed with one reports its own
        (upstream: "If this exact pod failed with an error, use its status instead"), the others the
        group's."""
        failure = trial.failure
        if failure is not None and _is_error(failure):
            self._submit(trial, UNSCHEDULABLE)
            return
        attempt = trial.attempt
        sched = self.scheduler
        sched.algorithm_done(attempt.fwk, attempt.state, attempt.start)
        sched.fail(attempt.qpi, attempt.pod, error, attempt.fwk, start=attempt.start)

    def _validate(self, first: QueuedPodInfo, queued: Sequence[QueuedPodInfo]) -> str | None:
        """Upstream's ``validatePodGroup`` (v1.37.2) over the queued members: one scheduler name, the
        PodGroup's priority (``spec.priority``, 0 when unset or the PodGroup is not watched), one
        preemption policy (PodGroupPreemptionPolicy, which would compare with the group's, is off)."""
        pod_group = None
        if self.group is not None:
            pod_group = self.group(
                object_meta(first.pod).get("namespace", ""), scheduling_group_name(first.pod)
            )
        group_priority = pod_group_priority(pod_group) if pod_group is not None else 0
        scheduler_name = ""
        preemption_policy = ""
        for qpi in queued:
            spec = pod_spec(qpi.pod)
            name = scheduler_name_of(qpi.pod)
            scheduler_name = scheduler_name or name
            if name != scheduler_name:
                return (
                    "all pods in a single pod group should have the same .spec.schedulerName set, "
                    f'got: "{name}" and "{scheduler_name}"'
                )
            priority = spec.get("priority")
            priority = priority if isinstance(priority, int) else 0
            if priority != group_priority:
                return (
                    "all pods in a single pod group should have the same priority as the pod group's "
                    f"priority, got {priority} and {group_priority}"
                )
            policy = str(spec.get("preemptionPolicy") or "PreemptLowerPriority")
            preemption_policy = preemption_policy or policy
            if policy != preemption_policy:
                return (
                    "all pods in a single pod group should have the same preemption policy, "
                    f"got {policy} and {preemption_policy}"
                )
        return None

    def _write_condition(self, first: QueuedPodInfo, status: bool, reason: str, message: str) -> None:
        """``PodGroupInitiallyScheduled`` on the group's PodGroup, when it is watched and something
        changed."""
        if self.group is None:
            return
        namespace = object_meta(first.pod).get("namespace", "")
        name = scheduling_group_name(first.pod)
        pod_group = self.group(namespace, name)
        if pod_group is None:
            return
        sched = self.scheduler
        patch = scheduled_condition_patch(pod_group, status, reason, message, sched.clock())
        if patch is None:
            return
        path = f"{WORKLOAD_PODGROUPS.path(namespace)}/{quote(name, safe='')}/status"
        uid = str(object_meta(pod_group).get("uid") or f"{namespace}/{name}")
        sched.recorder.patch_pod_group_status(
            path, uid, patch, f"PodGroupInitiallyScheduled of {namespace}/{name}"
        )


def _renominate(nominator: Nominator, pod: Mapping[str, Any], node_name: str) -> None:
    """Undo the assumption's removal of a nomination (upstream's unreserveAndForget for pod groups)."""
    if node_name:
        nominator.add_nominated_pod(pod, node_name)


def _group_message(trial: _Trial) -> str:
    """Upstream's ``NewStatus(Unschedulable, permitStatus.Message()).WithError(errPodGroupUnschedulable)``
    as the Event and condition show it: the error's text, then the member's Permit message."""
    permit = trial.permit.message() if trial.permit is not None else ""
    return f"{POD_GROUP_UNSCHEDULABLE_MSG}, {permit}"


# Upstream's framework.PodsToActivateKey (the trial's Permit may have asked to activate siblings that
# are in this very cycle).
PODS_TO_ACTIVATE_KEY = "kubernetes.io/pods-to-activate"


def _is_error(failure: Exception | Status) -> bool:
    """An error rather than a rejection: the group stops there. A FitError and a bad pod spec (refused
    as unschedulable, see ``scheduler.cycle.schedule_one``) are rejections."""
    if isinstance(failure, Status):
        return not failure.is_rejection()
    if isinstance(failure, SchedulingError | PluginError):
        return not failure.status.is_rejection()
    return not isinstance(failure, FitError | PodSpecError)


def _group_error(failure: Exception | Status) -> Status:
    text = failure.message() if isinstance(failure, Status) else str(failure)
    return Status.as_error(MEMBER_ERROR_PREFIX + text)


def _priority(pod: Mapping[str, Any]) -> int:
    value = pod_spec(pod).get("priority")
    return value if isinstance(value, int) else 0


def _one_node(pod: PodInfo, node_name: str, status: Status) -> str:

    return one_node_message(pod, node_name, status)
