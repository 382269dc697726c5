"""DefaultPreemption (``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``, v1.37.2;
victims are single pods, as upstream's with GenericWorkload off).

PostFilter: when a pod fits nowhere, find the node where evicting the fewest, least important
lower-priority pods makes it fit, nominate the pod there and evict them (through the scheduler's
preemption Executor, off the event loop). The search and the choice are the Evaluator's
(``scheduler.preemption.evaluator``); this plugin supplies what upstream's ``preemption.Interface`` does:
eligibility, the victims on one node, how many candidates to look for.

PreEnqueue (async preemption, on by default in v1.36): a pod whose victims are still being evicted is
held back until its last victim is terminating, so it cannot race its own preemption.

Args (``DefaultPreemptionArgs``): ``minCandidateNodesPercentage`` (0..100, default 10) and
``minCandidateNodesAbsolute`` (>= 0, default 100), not both 0. The dry run looks at
max(percentage of the potential nodes, absolute) nodes, from a random offset.

With extenders configured, ``post_filter_with_extenders`` asks those with a ``preemptVerb`` about the
candidates between the dry run and the choice (upstream's ``callExtenders``), awaited on the event loop.

With GenericWorkload (beta, off by default) the plugin is ``WorkloadAwareDefaultPreemption``: it also
preempts for a whole pod group (PodGroupPostFilter, ``scheduler.preemption.podgroup``), and its
PreEnqueue holds a group's members while the group's preemption runs.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from informers.resource import WORKLOAD_PODGROUPS
from scheduler import metrics
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.extender import Extenders
from scheduler.framework.handle import Handle, PreemptionHandle
from scheduler.framework.listers import POD_DISRUPTION_BUDGETS
from scheduler.framework.objects import namespace_of, pod_status
from scheduler.framework.objects_scheduling import scheduling_group_name
from scheduler.framework.podgroup import POD_KEY_TYPE, PodGroupInfo, PodGroupSchedulingFunc
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.preemption.evaluator import Evaluator, calculate_num_candidates, random_offset
from scheduler.preemption.extenders import preempt_with_extenders
from scheduler.preemption.pdb import ParsedBudgets, PodDisruptionBudget, filter_pods_with_pdb_violation
from scheduler.preemption.podgroup import GroupActuator, PodGroupEvaluator
from scheduler.preemption.pods import by_importance, terminating_by_preemption
from scheduler.preemption.trial import DryRunVerdicts, copy_or_amounts
from scheduler.preemption.victims import Victim, split_by_budgets, victims_on
from scheduler.preemption.victims import by_importance as victims_by_importance
from scheduling_queue.types import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource

ARGS_KIND = "DefaultPreemptionArgs"
DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

NO_VICTIMS_MSG = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER_MSG = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING_MSG = "not eligible due to a terminating pod on the nominated node."
WAITING_MSG = "waiting for the preemption for this pod to be finished"
WAITING_GROUP_MSG = "waiting for the preemption for this pod group to be finished"
PREEMPT_NEVER = "Never"


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE


def parse_args(
    raw: Mapping[str, Any] | None, plugin: str = names.DEFAULT_PREEMPTION, kind: str = ARGS_KIND
) -> DefaultPreemptionArgs:
    """Defaults (``SetDefaults_DefaultPreemptionArgs``), then ``ValidateDefaultPreemptionArgs``.
    ``plugin``/``kind``: PreemptionToleration reads the same fields as its own args."""
    reader = ArgsReader(plugin)
    args = reader.top(raw, kind, ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"))
    percentage = reader.integer(
        args.get("minCandidateNodesPercentage"),
        "minCandidateNodesPercentage",
        DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
    )
    absolute = reader.integer(
        args.get("minCandidateNodesAbsolute"),
        "minCandidateNodesAbsolute",
        DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE,
    )
    errors: list[str] = []
    if not 0 <= percentage <= 100:
        errors.append(
            f"minCandidateNodesPercentage: Invalid value: {percentage}: not in valid range [0, 100]"
        )
    if absolute < 0:
        errors.append(f"minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)")
    if percentage == 0 and absolute == 0:
        errors.append(
            "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
            "minCandidateNodesAbsolute"
        )
        errors.append(
            "minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as "
            "minCandidateNodesPercentage"
        )
    if errors:
        # One error reads as itself; several as Go's aggregate, "[a, b]".
        raise reader.error("", errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    return DefaultPreemptionArgs(percentage, absolute)


class DefaultPreemption:
    name = names.DEFAULT_PREEMPTION
    # v1.37.2: a successful preemption says "found a potential placement for pod on node N, preempting
    # K victims" (scheduler-plugins' subclasses, built on v1.34, say nothing).
    says_placement = True

    def order_victims(self, pods: Sequence[PodInfo], created: Mapping[str, int]) -> list[PodInfo]:
        """Most important first: v1.37.2's MoreImportantVictim (``by_importance``)."""
        return by_importance(pods, created)

    def __init__(
        self,
        args: Mapping[str, Any] | None = None,
        handle: Handle | None = None,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.args = self.parse_args(args)
        if handle is None:
            raise ValueError(f"{self.name} needs a Handle")
        # The what-if Filter runs need the scheduler's handle (PreemptionHandle); a plain Handle (a
        # plugin test) can still build the plugin and run its PreEnqueue.
        self.handle = cast(PreemptionHandle, handle)
        # Parsed again only when the budgets change: a kept dry-run verdict names the parse it read.
        self._pdbs = ParsedBudgets(handle.lister(POD_DISRUPTION_BUDGETS))
        self._rng = rng or random.Random()
        self._verdicts = DryRunVerdicts(self.handle)
        # Victims chosen by priority alone and ordered as upstream's: a node's dry-run verdict for a
        # pod of one signature and priority can be kept (DryRunVerdicts).
        self._by_priority = (
            type(self).is_preemption_allowed is DefaultPreemption.is_preemption_allowed
            and type(self).order_victims is DefaultPreemption.order_victims
        )
        # The dry run may take kept verdicts without calling select_victims_on_node (kept_verdicts)
        # only where that method is this one, which would return them.
        self._kept_shortcut = (
            self._by_priority
            and type(self).select_victims_on_node is DefaultPreemption.select_victims_on_node
        )
        self.evaluator = Evaluator(
            self.name,
            lambda: self.handle.snapshot,
            self,
            self._pdbs,
            lambda: self.handle.preemption_executor,
            says_placement=self.says_placement,
        )

    @staticmethod
    def parse_args(args: Mapping[str, Any] | None) -> DefaultPreemptionArgs:
        return parse_args(args)

    # --- PostFilter -------------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None]:
        metrics.PREEMPTION_ATTEMPTS.inc()
        return _prefixed(*self.evaluator.preempt(state, pod, node_statuses))

    async def post_filter_with_extenders(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status], extenders: Extenders
    ) -> tuple[str | None, Status | None]:
        """``post_filter`` with the extenders' preemptVerb asked about the candidates (upstream's
        callExtenders), awaited on the loop; without an interested preempting extender, the same."""
        if not extenders.preempts_for(pod):
            return self.post_filter(state, pod, node_statuses)
        metrics.PREEMPTION_ATTEMPTS.inc()
        return _prefixed(
            *await preempt_with_extenders(
                self.evaluator, state, pod, node_statuses, extenders, self.handle.snapshot
            )
        )

    # --- PreEnqueue -------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        executor = getattr(self.handle, "preemption_executor", None)
        if executor is not None and executor.is_pod_running_preemption(pod.pod):
            return Status(Code.UnschedulableAndUnresolvable, [WAITING_MSG])
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Pods held by PreEnqueue also carry the Filter plugins that rejected them; those decide when a
        # deletion helps. This registration only lets the queue re-run PreEnqueue on pod deletions.
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.AssignedPod, ActionType.Delete),
                self.is_pod_schedulable_after_assigned_pod_deletion,
            )
        ]

    def is_pod_schedulable_after_assigned_pod_deletion(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        return QueueingHint.Skip

    # --- preemption.Interface ---------------------------------------------------------------------
    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return random_offset(num_nodes, self._rng), calculate_num_candidates(
            num_nodes, self.args.min_candidate_nodes_percentage, self.args.min_candidate_nodes_absolute
        )

    def is_preemption_allowed(self, node: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        return victim.priority < preemptor.priority

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        if pod.spec.get("preemptionPolicy") == PREEMPT_NEVER:
            return False, NOT_ELIGIBLE_NEVER_MSG
        nominated = pod_status(pod.pod).get("nominatedNodeName") or ""
        if nominated:
            # The nominated node can never fit: look elsewhere.
            if (
                nominated_node_status is not None
                and nominated_node_status.code is Code.UnschedulableAndUnresolvable
            ):
                return True, ""
            node = self.handle.snapshot.get(nominated)
            if node is not None:
                for other in node.pods.values():
                    if self.is_preemption_allowed(node, other, pod) and terminating_by_preemption(other.pod):
                        # Our earlier victims are still leaving: wait rather than preempt more.
                        return False, NOT_ELIGIBLE_TERMINATING_MSG
        return True, ""

    def kept_verdicts(
        self, state: CycleState, pod: PodInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> Callable[[NodeInfo], tuple[list[PodInfo], int, Status | None] | None] | None:
        """For a dry run of this cycle: per node, what ``select_victims_on_node`` would return from its
        kept verdicts without judging, or None (then it must be called); None when nothing is kept
        for this pod (the Evaluator then calls it for every node)."""
        if not self._kept_shortcut:
            return None
        key = self._verdicts.key(state, pod)
        if key is None:
            return None
        return self._verdicts.lookup(key, pod, pdbs)

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status | None]:
        """Upstream's ``SelectVictimsOnNode``, on a what-if of the snapshot's ``node`` (a copy, or its
        arithmetic where that is exact: ``copy_or_amounts``): remove every lower-priority pod; if the
        pod then fits, add them back most important first (those a PDB protects before the others, so
        they are reprieved first), keeping out only those it cannot fit beside. Returns the victims
        (most important first), how many violate a PDB, and the status."""
        # Victims chosen by priority alone: a node's verdict for a pod of this signature and priority
        # (hopeless, or these victims) stays until the node or its nominations change.
        key = self._verdicts.key(state, pod) if self._by_priority else None
        if key is not None and (known := self._verdicts.get(key, pod, node, pdbs)) is not None:
            return known
        potential = [p for p in node.pods.values() if self.is_preemption_allowed(node, p, pod)]
        if not potential:
            return [], 0, Status(Code.UnschedulableAndUnresolvable, [NO_VICTIMS_MSG])
        trial = copy_or_amounts(self.handle, state, pod, node)
        for victim in potential:
            status = trial.remove(victim)
            if status is not None:
                return [], 0, status
        status = trial.filter()
        if status is not None:
            if key is not None:
                self._verdicts.put(key, pod, node, status)
            return [], 0, status

        # The node's pod order when GetVictimsOnNode made one victim per pod (v1.37): it orders
        # unstarted victims of one priority (``by_importance``).
        created = {p.key: i for i, p in enumerate(node.pods.values())}
        potential = self.order_victims(potential, created)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0

        def reprieve(victim: PodInfo) -> tuple[bool, Status | None]:
            status = trial.add(victim)
            if status is not None:
                return False, status
            fits = trial.filter() is None
            if not fits:
                status = trial.remove(victim)
                if status is not None:
                    return False, status
                victims.append(victim)
            return fits, None

        for victim in violating:
            fits, error = reprieve(victim)
            if error is not None:
                return [], 0, error
            if not fits:
                num_violating += 1
        for victim in non_violating:
            _, error = reprieve(victim)
            if error is not None:
                return [], 0, error
        if violating and non_violating:
            # Both groups were appended in their own order: most important first overall.
            victims = self.order_victims(victims, created)
        if key is not None:
            self._verdicts.put_victims(key, pod, node, pdbs, victims, num_violating)
        return victims, num_violating, None


class WorkloadAwareDefaultPreemption(DefaultPreemption):
    """DefaultPreemption under GenericWorkload (upstream's plugin with ``EnableGenericWorkload``)."""

    def __init__(
        self,
        args: Mapping[str, Any] | None = None,
        handle: Handle | None = None,
        *,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(args, handle, rng=rng)
        assert handle is not None  # the parent refuses a missing handle
        self._pod_groups = handle.lister(WORKLOAD_PODGROUPS)
        self.pod_group_evaluator = PodGroupEvaluator(
            self.name, self.handle, self._pdbs, self._pod_group_of, self._group_actuator
        )

    def _pod_group_of(self, pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
        name = scheduling_group_name(pod)
        return self._pod_groups.get(name, namespace_of(pod)) if name else None

    def _group_actuator(self) -> GroupActuator | None:
        executor = self.handle.preemption_executor
        return executor if isinstance(executor, GroupActuator) else None

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None]:
        start = time.perf_counter()
        nominated, status = super().post_filter(state, pod, node_statuses)
        # Upstream's evaluation time of a pod's preemption (registered with GenericWorkload).
        code = "Success" if status is None else status.code.name
        metrics.PREEMPTION_EVALUATION_DURATION.labels(POD_KEY_TYPE, code).observe(time.perf_counter() - start)
        return nominated, status

    # A pod's own preemption, as upstream's with GenericWorkload: a pod group member's priority is its
    # PodGroup's, of victims of one priority a pod group's is the more important, and the members of a
    # PodGroup in disruptionMode all are one victim, wherever they run.
    def is_preemption_allowed(self, node: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        return self.pod_group_evaluator.victim_priority(victim) < preemptor.priority

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status | None]:
        """Upstream's SelectVictimsOnNode with the node's victims (``victims_on``): only this node (a
        copy) changes; the pods of a victim on other nodes are taken off and given back through the
        PreFilter extensions only, with those nodes as the snapshot has them. Returns every pod of the
        chosen victims (those on other nodes too), most important victim first."""
        node = node.clone()
        handle = self.handle
        snapshot = handle.snapshot
        main = node.name

        def move(victim: Victim, back: bool) -> Status | None:
            for member in victim.pods:
                target = node if member.node_name == main else snapshot.get(member.node_name)
                if target is None:
                    continue
                if member.node_name == main:
                    if back:
                        node.add_pod(member)
                    else:
                        node.remove_pod(member.key)
                extension = (
                    handle.run_pre_filter_extension_add_pod
                    if back
                    else handle.run_pre_filter_extension_remove_pod
                )
                status = extension(state, pod, member, target)
                if status is not None:
                    return status
            return None

        potential = [v for v in victims_on([node], snapshot, self._pod_group_of) if v.priority < pod.priority]
        if not potential:
            return [], 0, Status(Code.UnschedulableAndUnresolvable, [NO_VICTIMS_MSG])
        for victim in potential:
            status = move(victim, back=False)
            if status is not None:
                return [], 0, status
        status = handle.run_filter_plugins_with_nominated_pods(state, pod, node)
        if status is not None:
            return [], 0, status
        violating, non_violating = split_by_budgets(victims_by_importance(potential), pdbs)
        chosen: list[Victim] = []
        num_violating = 0
        for victim, count in [*violating, *((v, 0) for v in non_violating)]:
            status = move(victim, back=True)
            if status is not None:
                return [], 0, status
            if handle.run_filter_plugins_with_nominated_pods(state, pod, node) is None:
                continue
            status = move(victim, back=False)
            if status is not None:
                return [], 0, status
            chosen.append(victim)
            num_violating += count
        if violating and non_violating:
            chosen = victims_by_importance(chosen)
        return [member for victim in chosen for member in victim.pods], num_violating, None

    def pod_group_post_filter(
        self, state: CycleState, group: PodGroupInfo, schedule: PodGroupSchedulingFunc
    ) -> tuple[Mapping[str, str] | None, Status | None]:
        """Workload-aware preemption of the whole group (``PodGroupPostFilter``)."""
        nominations, status = self.pod_group_evaluator.preempt(group, schedule)
        metrics.WORKLOAD_PREEMPTION_ATTEMPTS.labels(status.code.name).inc()
        if status.message():
            status = Status(status.code, [f"pod group preemption: {status.message()}"], error=status.error)
        return nominations, status

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """A pod group's members wait while the group's preemption runs (keyed by the PodGroup); a pod
        of a group whose PodGroup is unknown is not this plugin's to hold."""
        if not scheduling_group_name(pod.pod):
            return super().pre_enqueue(pod)
        pod_group = self._pod_group_of(pod.pod)
        executor = self.handle.preemption_executor
        if pod_group is not None and executor is not None and executor.is_pod_running_preemption(pod_group):
            return Status(Code.UnschedulableAndUnresolvable, [WAITING_GROUP_MSG])
        return None


def _prefixed(nominated: str | None, status: Status | None) -> tuple[str | None, Status | None]:
    """Upstream's PostFilter wraps the evaluator's message: ``preemption: ...``."""
    if status is not None and status.message():
        return nominated, Status(status.code, [f"preemption: {status.message()}"], error=status.error)
    return nominated, status
