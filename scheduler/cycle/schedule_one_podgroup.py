"""The pod group scheduling cycle (feature gate GenericWorkload): a group's queued pods are tried together.

Mirrors ``pkg/scheduler/schedule_one_podgroup.go`` of kube-scheduler v1.37.2, its default algorithm
(TopologyAwareWorkloadScheduling's placements and CompositePodGroup trees are alpha and refused). When a
pod with ``spec.schedulingGroup`` is popped:

1. Every other queued member of its group is popped with it (PopSpecificPod), and the members are
   ordered by priority, then by their first attempt. The members must agree with each other and with
   the PodGroup (``validatePodGroup``), and members being deleted or already binding are skipped.
2. The group's algorithm, on one snapshot: PlacementFeasible (GangScheduling) is asked first, then each
   member runs the scheduling algorithm; a feasible one is assumed in the snapshot and Reserved, so
   later members see it, and PlacementFeasible is asked again ("minCount (N) cannot be satisfied: S
   scheduled, R remaining" ends the group early; Success once ``minCount`` are placed). A member that
   fits nowhere runs no PostFilter. Every trial placement is undone at the end.
3. A group that ends Unschedulable runs PodGroupPostFilter once (DefaultPreemption's workload-aware
   preemption, ``scheduler.preemption.podgroup``), handing it a function that runs step 2 again on the
   snapshot as the plugin changed it. When it finds room, it starts the evictions and the group waits
   for them: every member goes back to the queue nominated where the plugin's run put it. Its message
   is added to the group's ("..., pod group preemption: ...").
4. A feasible group is assumed, Reserved and Permitted for real (GangScheduling's Permit lets the members
   wait until the one that completes ``minCount`` allows them all) and goes to binding. Otherwise nothing
   is held: members that fit alone fail with "pod group is unschedulable, <the group's message>", the
   others with their own reason. A member whose attempt fails with an error (not a rejection) ends the
   algorithm at once: every member then fails with that error ("failed to schedule other pod from a pod
   group: ..."), those with an error of their own with theirs.

After each cycle the PodGroup's ``PodGroupInitiallyScheduled`` condition carries the group's status and
message (``scheduler.cycle.podgroup_condition``). Members retry after backoff only (the queue's
GenericWorkload rule), as upstream's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from informers.resource import WORKLOAD_PODGROUPS
from scheduler import metrics
from scheduler.cache.cache import with_node_name
from scheduler.cycle.algorithm import CLEAR_NOMINATION, SchedulingError
from scheduler.cycle.attempt import Attempt, AttemptSteps, one_node_message
from scheduler.cycle.podgroup_condition import (
    MEMBER_ERROR_PREFIX,
    POD_GROUP_UNSCHEDULABLE_MSG,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    scheduled_condition_patch,
)
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.objects import object_meta, pod_spec, scheduler_name_of
from scheduler.framework.objects_scheduling import pod_group_priority, scheduling_group_name
from scheduler.framework.podgroup import PodGroupInfo, ProposedAssignment
from scheduler.framework.runtime import Framework, PluginError
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo, PodSpecError
from scheduling_queue import IN_FLIGHT
from scheduling_queue.nominator import Nominator
from scheduling_queue.types import QueuedPodInfo, pod_key

# (namespace, podGroupName) -> the group's pods the scheduler knows.
GroupMembers = Callable[[str, str], Sequence[Mapping[str, Any]]]
# (namespace, podGroupName) -> the PodGroup object, or None (not watched, or not there).
GroupObject = Callable[[str, str], Mapping[str, Any] | None]

log = logging.getLogger(__name__)

PLACEMENT_FEASIBILITY_ERROR = "failed to evaluate placement feasibility: "


def in_scheduling_group(pod: Mapping[str, Any]) -> bool:
    return bool(scheduling_group_name(pod))


@dataclass(slots=True)
class _Member:
    """One member's try in a run of the group's algorithm (upstream's algorithmResult)."""

    attempt: Attempt
    state: CycleState
    node_name: str = ""
    # None: placed on ``node_name``; else why not.
    status: Status | None = None
    # What the algorithm raised, when it did (a FitError is reported with its diagnosis).
    failure: Exception | None = None
    # Upstream's NominatingInfo: None leaves the nomination alone, a name (or "") overrides it.
    nominated: str | None = CLEAR_NOMINATION


@dataclass(slots=True)
class _GroupResult:
    """Upstream's podGroupAlgorithmResult for a PodGroup (no composite trees)."""

    members: list[_Member] = field(default_factory=list)
    # None: the group goes ahead. Unschedulable (with or without waiting_on_preemption) or Error.
    status: Status | None = None
    waiting_on_preemption: bool = False


class _Assignment:
    """A member placed by a what-if run of the algorithm (upstream's ProposedAssignment)."""

    __slots__ = ("_assumed", "_cycle", "_fwk", "_member")

    def __init__(self, cycle: PodGroupCycle, fwk: Framework, member: _Member) -> None:
        self._cycle = cycle
        self._fwk = fwk
        self._member = member
        self._assumed: PodInfo | None = None

    @property
    def pod(self) -> PodInfo:
        return self._member.attempt.pod

    @property
    def node_name(self) -> str:
        return self._member.node_name

    @property
    def state(self) -> CycleState:
        return self._member.state

    def assume(self) -> None:
        assumed = with_node_name(self.pod, self.node_name)
        self._cycle.scheduler.snapshot.add_pod(assumed, self.node_name)
        self._fwk.run_reserve(self.state, assumed, self.node_name)
        self._assumed = assumed

    def forget(self) -> None:
        assumed, self._assumed = self._assumed, None
        if assumed is not None:
            self._fwk.run_unreserve(self.state, assumed, self.node_name)
            self._cycle.scheduler.snapshot.remove_pod(assumed, self.node_name)


class PodGroupCycle:
    def __init__(
        self, scheduler: AttemptSteps, members: GroupMembers, group: GroupObject | None = None
    ) -> None:
        self.scheduler = scheduler
        self.members = members
        self.group = group

    async def schedule(self, first: QueuedPodInfo) -> None:
        """One pod group cycle; synchronous (awaits nothing), a coroutine for the scheduling loop."""
        sched = self.scheduler
        queued = self._pop_group(first)
        pod_group = self._pod_group(first)
        invalid = self._validate(queued, pod_group)
        if invalid is not None:
            # Upstream's handlePodGroupFailureBeforeScheduling.
            error = Status.as_error(invalid)
            for qpi in queued:
                sched.fail(qpi, None, error, None)
            self._write_condition(first, pod_group, False, REASON_SCHEDULER_ERROR, invalid)
            return
        start = time.perf_counter()
        try:
            # Upstream's skipPodGroupPodSchedule, before the snapshot is touched: begin() refreshes it.
            attempts = [attempt for qpi in queued if (attempt := sched.begin(qpi)) is not None]
            if not attempts:
                return  # every member was skipped (deleted, not ours, already binding): no cycle ran
            fwk = attempts[0].fwk
            info = PodGroupInfo(pod_group or {}, tuple(a.pod for a in attempts))
            try:
                result = self._algorithm(fwk, info, [(a, a.state) for a in attempts])
                metrics.POD_GROUP_SCHEDULING_ALGORITHM_DURATION.observe(time.perf_counter() - start)
                if result.status is not None and result.status.code is Code.Unschedulable:
                    self._post_filter(fwk, info, attempts, result)
            finally:
                sched.snapshot.restore()
        except Exception as err:
            # Nothing is assumed or handed to binding before _submit, so every member still in flight
            # goes back to the queue as an error (the loop's own handler knows only the first).
            log.exception("pod group cycle crashed for %s", first.key)
            error = Status.as_error(f"internal error in the scheduling cycle: {type(err).__name__}: {err}")
            for qpi in queued:
                if sched.queue.where(qpi.key) == IN_FLIGHT:
                    sched.fail(qpi, None, error, None)
            return
        self._submit(first, pod_group, result, fwk, start)

    # --- the algorithm ---------------------------------------------------------------------------
    def _algorithm(
        self, fwk: Framework, info: PodGroupInfo, members: Sequence[tuple[Attempt, CycleState]]
    ) -> _GroupResult:
        """Upstream's runRootSchedulingAlgorithm with podGroupSchedulingDefaultAlgorithm: the members one
        after another on the snapshot, PlacementFeasible before and after each; every placement in the
        snapshot is undone before it returns. Every member not tried gets the group's status then."""
        result = _GroupResult()
        undo: list[Callable[[], None]] = []
        placement_state = CycleState()
        scheduled = self._scheduled_count(info)
        remaining = len(members)
        try:
            feasible = fwk.run_placement_feasible(placement_state, info.pod_group, scheduled, remaining)
            if feasible is not None and feasible.code is Code.Error:
                result.status = Status.as_error(PLACEMENT_FEASIBILITY_ERROR + feasible.message())
                return self._completed(result, members)
            if feasible is not None and feasible.code is Code.Unschedulable:
                result.status = _unschedulable_group(feasible)
                return self._completed(result, members)
            result.status = feasible
            any_scheduled = False
            for attempt, state in members:
                member = self._try(fwk, attempt, state, undo)
                result.members.append(member)
                if member.status is not None and not member.status.is_rejection():
                    result.status = Status.as_error(MEMBER_ERROR_PREFIX + member.status.message())
                    break
                remaining -= 1
                if member.status is None:
                    scheduled += 1
                feasible = fwk.run_placement_feasible(placement_state, info.pod_group, scheduled, remaining)
                if feasible is not None and feasible.code is Code.Error:
                    result.status = Status.as_error(PLACEMENT_FEASIBILITY_ERROR + feasible.message())
                    break
                result.status = feasible
                if feasible is not None and feasible.code is Code.Unschedulable:
                    break
                any_scheduled = any_scheduled or member.status is None
            if result.status is not None and result.status.code is Code.Wait:
                result.status = _unschedulable_group(result.status)
            if result.status is None and not any_scheduled:
                # The framework wants at least one member placed to call the group scheduled.
                result.status = Status(Code.Unschedulable, [POD_GROUP_UNSCHEDULABLE_MSG])
            return self._completed(result, members)
        finally:
            for revert in reversed(undo):
                revert()

    def _try(
        self, fwk: Framework, attempt: Attempt, state: CycleState, undo: list[Callable[[], None]]
    ) -> _Member:
        """One member: the scheduling algorithm, then assume in the snapshot and Reserve (upstream's
        podGroupPodSchedulingAlgorithm). A member that fits nowhere keeps its nomination (PodGroupPostFilter
        may set one); one whose Reserve rejects it loses it."""
        sched = self.scheduler
        member = _Member(attempt, state)
        pod = attempt.pod
        try:
            node = sched.algorithm.schedule_pod(fwk, state, pod, sched.snapshot).node_name
        except FitError as err:
            member.failure, member.nominated = err, None
            member.status = Status(Code.Unschedulable, [err.message()])
            return member
        except (SchedulingError, PluginError) as err:
            member.failure = err
            member.status = err.status
            return member
        except PodSpecError as err:
            member.failure = err
            member.status = Status.unschedulable(str(err), resolvable=False)
            return member
        nominator = sched.queue.nominator
        assumed = with_node_name(pod, node)
        sched.snapshot.add_pod(assumed, node)
        # As upstream's assume: placed, the member no longer counts as nominated (it would count twice
        # for the later members); undoing gives the nomination back.
        nominated = nominator.nominated_node_for(attempt.qpi.pod)
        nominator.delete_nominated_pod_if_exists(attempt.qpi.pod)

        def revert() -> None:
            fwk.run_unreserve(state, assumed, node)
            sched.snapshot.remove_pod(assumed, node)
            _renominate(nominator, attempt.qpi.pod, nominated)

        status = fwk.run_reserve(state, assumed, node)
        if status is not None:
            revert()
            member.node_name = node
            member.status = (
                Status(status.code, [one_node_message(pod, node, status)], plugin=status.plugin)
                if status.is_rejection()
                else status
            )
            return member
        undo.append(revert)
        member.node_name = node
        member.nominated = None  # a placed member's nomination is PodGroupPostFilter's to set
        return member

    def _completed(self, result: _GroupResult, members: Sequence[tuple[Attempt, CycleState]]) -> _GroupResult:
        """Upstream's completePodGroupAlgorithmResult: members the algorithm did not reach carry (a copy
        of) the group's status as it is now."""
        for attempt, state in members[len(result.members) :]:
            status = result.status
            copy = Status(status.code, list(status.reasons), status.plugin) if status is not None else None
            result.members.append(_Member(attempt, state, status=copy, nominated=None))
        return result

    def _scheduled_count(self, info: PodGroupInfo) -> int:
        """The group's members already placed: bound, or assumed by an earlier cycle (upstream's
        PodGroupState.ScheduledPodsCount)."""
        cache = self.scheduler.cache
        return (
            sum(
                1
                for pod in self.members(info.namespace, info.name)
                if pod_spec(pod).get("nodeName") or cache.is_assumed(pod_key(pod))
            )
            if info.name
            else 0
        )

    # --- PodGroupPostFilter ----------------------------------------------------------------------
    def _post_filter(
        self, fwk: Framework, info: PodGroupInfo, attempts: Sequence[Attempt], result: _GroupResult
    ) -> None:
        """Upstream's RunPodGroupPostFilterPlugins and applyPodGroupPostFilterResult."""

        def schedule_again() -> tuple[list[ProposedAssignment], Status | None]:
            # Fresh cycle states, on the snapshot as the plugin left it (victims taken off).
            run = self._algorithm(fwk, info, [(a, fwk.new_cycle_state()) for a in attempts])
            placed: list[ProposedAssignment] = [
                _Assignment(self, fwk, m) for m in run.members if m.status is None and m.node_name
            ]
            return placed, run.status

        nominations, status = fwk.run_pod_group_post_filter(CycleState(), info, schedule_again)
        assert result.status is not None
        if status.code is Code.Success:
            result.waiting_on_preemption = True
            for member in result.members:
                node = (nominations or {}).get(member.attempt.pod.key)
                if node is not None:
                    member.nominated = node
        if status.code is Code.Error:
            result.status = status
        else:
            result.status.reasons.append(status.message())

    # --- submitting the result -------------------------------------------------------------------
    def _submit(
        self,
        first: QueuedPodInfo,
        pod_group: Mapping[str, Any] | None,
        result: _GroupResult,
        fwk: Framework,
        start: float,
    ) -> None:
        """Upstream's submitPodGroupAlgorithmResult."""
        group_status = result.status
        for member in result.members:
            self._submit_member(member, result)
        if group_status is None:
            self._write_condition(first, pod_group, True, REASON_SCHEDULED, "")
            outcome = metrics.POD_GROUP_SCHEDULED
        elif group_status.is_rejection():
            self._write_condition(first, pod_group, False, REASON_UNSCHEDULABLE, group_status.message())
            outcome = (
                metrics.POD_GROUP_WAITING_ON_PREEMPTION
                if result.waiting_on_preemption
                else metrics.POD_GROUP_UNSCHEDULABLE
            )
        else:
            self._write_condition(first, pod_group, False, REASON_SCHEDULER_ERROR, group_status.message())
            outcome = metrics.POD_GROUP_ERROR
        metrics.observe_pod_group_attempt(outcome, fwk.profile_name, time.perf_counter() - start)

    def _submit_member(self, member: _Member, result: _GroupResult) -> None:
        sched = self.scheduler
        attempt = member.attempt
        qpi, pod, fwk, start = attempt.qpi, attempt.pod, attempt.fwk, attempt.start
        group_status = result.status
        if group_status is not None and not group_status.is_rejection():
            own = member.status
            if own is not None and not own.is_rejection():
                # "If this exact pod failed with an error, use its status instead."
                self._report_own(member, CLEAR_NOMINATION)
                return
            sched.algorithm_done(fwk, attempt.state, start)
            sched.fail(qpi, pod, group_status, fwk, start=start)
            return
        if member.status is None:
            sched.algorithm_done(fwk, attempt.state, start)
            if group_status is None:
                # Assume, Reserve and Permit for real, on the node the algorithm chose (upstream's
                # prepareForBindingCycle); the cycle state is the algorithm's, as upstream's.
                attempt.state.delete(PODS_TO_ACTIVATE_KEY)
                sched.assume_and_hand_off(attempt, member.node_name)
            elif result.waiting_on_preemption:
                # Back to the queue, nominated where the preemption's run put it.
                sched.fail(qpi, pod, group_status, fwk, start=start, nominated=member.nominated)
            else:
                # Placed alone, but the group is not: nothing is held.
                status = Status(Code.Unschedulable, [POD_GROUP_UNSCHEDULABLE_MSG, group_status.message()])
                sched.fail(qpi, pod, status, fwk, start=start)
            return
        self._report_own(member, member.nominated)

    def _report_own(self, member: _Member, nominated: str | None) -> None:
        """A member that did not fit reports its own status (and its nomination, if any)."""
        sched = self.scheduler
        attempt = member.attempt
        failure, status = member.failure, member.status
        assert status is not None
        if isinstance(failure, FitError):
            sched.finish_fit_error(attempt, failure, nominated, None)
            return
        if failure is not None and not isinstance(failure, SchedulingError | PluginError):
            sched.algorithm_failed(attempt, failure)
            return
        sched.algorithm_done(attempt.fwk, attempt.state, attempt.start)
        message = str(failure) if failure is not None else ""
        sched.fail(
            attempt.qpi,
            attempt.pod,
            status,
            attempt.fwk,
            start=attempt.start,
            message=message,
            nominated=nominated,
        )

    # --- the group ---------------------------------------------------------------------------------
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

    def _pod_group(self, first: QueuedPodInfo) -> Mapping[str, Any] | None:
        if self.group is None:
            return None
        return self.group(object_meta(first.pod).get("namespace", ""), scheduling_group_name(first.pod))

    def _validate(self, queued: Sequence[QueuedPodInfo], pod_group: Mapping[str, Any] | None) -> str | None:
        """Upstream's ``validatePodGroup`` (v1.37.2) over the queued members: one scheduler name, the
        PodGroup's priority (``spec.priority``, 0 when unset or the PodGroup is not watched), one
        preemption policy (PodGroupPreemptionPolicy, which would compare with the group's, is off)."""
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

    def _write_condition(
        self,
        first: QueuedPodInfo,
        pod_group: Mapping[str, Any] | None,
        status: bool,
        reason: str,
        message: str,
    ) -> None:
        """``PodGroupInitiallyScheduled`` on the group's PodGroup, when it is watched and something
        changed."""
        if pod_group is None:
            return
        namespace = object_meta(first.pod).get("namespace", "")
        name = scheduling_group_name(first.pod)
        sched = self.scheduler
        patch = scheduled_condition_patch(pod_group, status, reason, message, sched.clock())
        if patch is None:
            return
        path = f"{WORKLOAD_PODGROUPS.path(namespace)}/{quote(name, safe='')}/status"
        uid = str(object_meta(pod_group).get("uid") or f"{namespace}/{name}")
        sched.recorder.patch_pod_group_status(
            path, uid, patch, f"PodGroupInitiallyScheduled of {namespace}/{name}"
        )


def _unschedulable_group(status: Status) -> Status:
    """``NewStatus(Unschedulable, reasons...).WithError(errPodGroupUnschedulable)``: the error's text
    leads the message."""
    return Status(Code.Unschedulable, [POD_GROUP_UNSCHEDULABLE_MSG, *status.reasons], plugin=status.plugin)


def _renominate(nominator: Nominator, pod: Mapping[str, Any], node_name: str) -> None:
    """Undo the assumption's removal of a nomination (upstream's unreserveAndForget for pod groups)."""
    if node_name:
        nominator.add_nominated_pod(pod, node_name)


# Upstream's framework.PodsToActivateKey (a plugin may have asked to activate siblings that are in this
# very cycle).
PODS_TO_ACTIVATE_KEY = "kubernetes.io/pods-to-activate"


def _priority(pod: Mapping[str, Any]) -> int:
    value = pod_spec(pod).get("priority")
    return value if isinstance(value, int) else 0
