"""CapacityScheduling: elastic quotas per namespace, borrowing idle guaranteed capacity and preempting to
reclaim it (scheduler-plugins v0.34.7 ``pkg/capacityscheduling/capacity_scheduling.go``).

A namespace's ``scheduling.x-k8s.io/v1alpha1`` ElasticQuota gives ``spec.min`` (guaranteed) and
``spec.max`` (ceiling). Extension points, as upstream's:

* PreFilter: with this pod (and the nominated pods ahead of it in its quota) the quota's used must stay
  within ``max``; and the sum of every quota's used (plus the nominated pods of its own quota ahead of
  it and those of quotas within their min) within the sum of their ``min``: a quota may go above its
  min only on capacity other quotas leave idle. A pod in a namespace without a quota passes.
* PreFilterExtensions (AddPod/RemovePod): keep the cycle's copy of the quotas right in what-if runs.
* PostFilter: preemption on the scheduler's DefaultPreemption machinery (``scheduler.preemption``:
  candidates, PDBs, nominated node, victim writes), synchronous as upstream's (its Evaluator has async
  preemption off): the cycle awaits the victims' deletion (``AwaitingPostFilterPlugin``, the Executor's
  ``preempt_now``) until the informer shows it, so the next preemptor, of this quota or another, meets
  the victims gone from the nodes and the quotas and this pod nominated, and evicts no more than it
  needs. With upstream's ``preemptor``: every node is a
  candidate (offset 0), eligibility looks at terminating pods by quota, and ``select_victims_on_node``
  picks victims by quota: a preemptor whose quota would go over its min with this pod evicts only
  lower-priority pods of its own namespace; one within its min evicts pods of other quotas that use
  more than their min (of any priority); a preemptor without a quota evicts only lower-priority pods
  without a quota. Messages carry no ``preemption:`` prefix, as upstream's PostFilter returns the
  evaluator's status as it is.
* Reserve/Unreserve: an assumed pod counts in its quota until it binds (or is forgotten).
* Events: a deleted pod and any ElasticQuota change wake pods this plugin rejected (upstream registers
  both without hints); the hints here skip deletions that cannot free quota (an unassigned pod, or one
  of a namespace without a quota), and bring the quota cache up to date before answering.

The quota cache (``quota_cache.py``) follows ElasticQuotas and assigned pods through the listers' events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from informers.resource import ELASTIC_QUOTAS, POD_DISRUPTION_BUDGETS, PODS
from scheduler import metrics
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    PostFilterAwaitable,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
)
from scheduler.framework.handle import PreemptionHandle
from scheduler.framework.listers import WatchedLister
from scheduler.framework.objects import namespace_of, object_meta, pod_status
from scheduler.plugins import names
from scheduler.plugins.capacityscheduling.elasticquota import (
    Amounts,
    ElasticQuotaInfos,
    pod_key,
    pod_request,
)
from scheduler.plugins.capacityscheduling.quota_cache import (
    AssignedPodEvents,
    QuotaCache,
    QuotaEvents,
    assigned,
)
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import safe_hint
from scheduler.preemption.evaluator import Candidate, Evaluator
from scheduler.preemption.gosort import sort_slice
from scheduler.preemption.pdb import ParsedBudgets, PodDisruptionBudget, filter_pods_with_pdb_violation
from scheduler.preemption.pods import by_pod_importance, more_important_as_go_sees_it
from scheduler.preemption.synchronous import decide_then_evict, refuse_outside_cycle

NAME = names.CAPACITY_SCHEDULING
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ELASTIC_QUOTA_SNAPSHOT_KEY = "ElasticQuotaSnapshot"
PREEMPT_NEVER = "Never"

NOT_ELIGIBLE_NEVER_MSG = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_STATE_MSG = "not eligible due to failed to read from cycleState"
NOT_ELIGIBLE_TERMINATING_MSG = "not eligible due to a terminating pod on the nominated node."
GLOBAL_QUOTA_MAX_EXCEEDED_MSG = "global quota max exceeded"


def over_max_message(pod: PodInfo, quota_namespace: str) -> str:
    return (
        f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because ElasticQuota "
        f"{quota_namespace} is more than Max"
    )


def over_min_message(pod: PodInfo) -> str:
    return (
        f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because total ElasticQuota used is "
        "more than min"
    )


def _request(pod: PodInfo) -> Amounts:
    return pod.derived("CapacityScheduling.request", lambda p: pod_request(p.pod))


@dataclass(frozen=True, slots=True)
class PreFilterState:
    """What PreFilter computed, read by PostFilter (read-only: shared by clones, as upstream's)."""

    pod_req: Amounts
    # This pod plus the nominated pods of its quota at least as important.
    nominated_in_eq_with_pod_req: Amounts
    # That, plus the nominated pods of other quotas that are within their min.
    nominated_with_pod_req: Amounts


class ElasticQuotaSnapshotState:
    """The cycle's copy of the quotas; cloned with the cycle state for what-if runs."""

    __slots__ = ("infos",)

    def __init__(self, infos: ElasticQuotaInfos) -> None:
        self.infos = infos

    def clone(self) -> ElasticQuotaSnapshotState:
        return ElasticQuotaSnapshotState(self.infos.clone())


def _snapshot_state(state: CycleState) -> ElasticQuotaSnapshotState | None:
    value = state.get(ELASTIC_QUOTA_SNAPSHOT_KEY)
    return value if isinstance(value, ElasticQuotaSnapshotState) else None


def _pre_filter_state(state: CycleState) -> PreFilterState | None:
    value = state.get(PRE_FILTER_STATE_KEY)
    return value if isinstance(value, PreFilterState) else None


def parse_args(raw: Mapping[str, Any] | None) -> None:
    """CapacityScheduling takes no args in scheduler-plugins v0.34.7: any field is refused."""
    ArgsReader(NAME).top(raw, None, ())


class CapacityScheduling:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        parse_args(args)
        self.handle = cast(PreemptionHandle, handle)
        # Parsed again only when the budgets change (not once per preemptor).
        self._pdbs = ParsedBudgets(handle.lister(POD_DISRUPTION_BUDGETS))
        pods = handle.lister(PODS)
        self._pods = pods
        quotas = handle.lister(ELASTIC_QUOTAS)
        self.cache = QuotaCache(pods.list)
        if isinstance(quotas, WatchedLister):
            quotas.add_event_handler(QuotaEvents(self.cache))
        if isinstance(pods, WatchedLister):
            pods.add_event_handler(AssignedPodEvents(self.cache), accept=assigned)

    # --- PreFilter ------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        snapshot = self.cache.infos.clone()
        pod_req = _request(pod)
        state.write(ELASTIC_QUOTA_SNAPSHOT_KEY, ElasticQuotaSnapshotState(snapshot))
        eq = snapshot.get(pod.namespace)
        if eq is None:
            state.write(PRE_FILTER_STATE_KEY, PreFilterState(pod_req, Amounts(), Amounts()))
            return None, None
        in_eq = Amounts()
        total = Amounts()
        for node in self.handle.snapshot.node_infos():
            for nominated in self.handle.nominated_pods_for_node(node.name):
                if nominated.uid == pod.uid:
                    continue
                info = self.cache.infos.get(nominated.namespace)
                if info is None:
                    continue
                if nominated.namespace == pod.namespace and nominated.priority >= pod.priority:
                    request = _request(nominated)
                    in_eq.add(request)
                    total.add(request)
                elif nominated.namespace != pod.namespace and not info.used_over_min():
                    total.add(_request(nominated))
        in_eq.add(pod_req)
        total.add(pod_req)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(pod_req, in_eq, total))
        if eq.used_over_max_with(in_eq):
            return None, Status.unschedulable(over_max_message(pod, eq.namespace))
        if snapshot.aggregated_used_over_min_with(total):
            return None, Status.unschedulable(over_min_message(pod))
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        snapshot = _snapshot_state(state)
        if snapshot is None:
            return Status.as_error(f'error reading "{ELASTIC_QUOTA_SNAPSHOT_KEY}" from cycleState')
        info = snapshot.infos.get(to_add.namespace)
        if info is not None:
            info.add_pod_if_not_present(pod_key(to_add.pod), _request(to_add))
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        snapshot = _snapshot_state(state)
        if snapshot is None:
            return Status.as_error(f'error reading "{ELASTIC_QUOTA_SNAPSHOT_KEY}" from cycleState')
        info = snapshot.infos.get(to_remove.namespace)
        if info is not None:
            info.delete_pod_if_present(pod_key(to_remove.pod), _request(to_remove))
        return None

    # --- PostFilter -----------------------------------------------------------------------------
    def post_filter_awaitable(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None] | PostFilterAwaitable:
        """Upstream's ``Evaluator.Preempt`` with synchronous preemption: the decision on the loop now,
        and, when there are victims to evict, a coroutine the cycle awaits while they are deleted."""
        metrics.PREEMPTION_ATTEMPTS.inc()
        evaluator = Evaluator(
            self.name,
            lambda: self.handle.snapshot,
            QuotaPreemptor(self.handle, state),
            self._pdbs,
            lambda: None,
        )
        found = evaluator.candidates(state, pod, node_statuses)
        executor = getattr(self.handle, "preemption_executor", None)
        return decide_then_evict(self.name, found, executor, pod, self._count_evicted)

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None]:
        """The scheduling cycle calls ``post_filter_awaitable``."""
        return refuse_outside_cycle(self.name, self.post_filter_awaitable(state, pod, node_statuses))

    def _count_evicted(self, best: Candidate) -> None:
        # The informer showed the deletions; its quota handler may run a moment after the cache's:
        # count them now (idempotent), so the next pod's PreFilter meets the freed quota.
        for victim in best.victims:
            current = self._pods.get(victim.name, victim.namespace)
            if current is None or object_meta(current).get("uid") != victim.uid:
                self.cache.delete_pod(victim.pod)

    # --- Reserve --------------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        info = self.cache.infos.get(pod.namespace)
        if info is not None:
            info.add_pod_if_not_present(pod_key(pod.pod), _request(pod))
            self.cache.version += 1
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        info = self.cache.infos.get(pod.namespace)
        if info is not None:
            info.delete_pod_if_present(pod_key(pod.pod), _request(pod))
            self.cache.version += 1

    # --- events ---------------------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.Pod, ActionType.Delete), self.is_schedulable_after_pod_delete
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.ElasticQuota, ActionType.All), self.is_schedulable_after_quota_change
            ),
        ]

    @safe_hint
    def is_schedulable_after_pod_delete(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if not isinstance(old_obj, Mapping) or not assigned(old_obj):
            # Never counted in a quota (an assumed pod's room comes back through Unreserve).
            return QueueingHint.Skip
        if namespace_of(old_obj) not in self.cache.infos:
            return QueueingHint.Skip
        # The pod's own handler may not have run yet: count the deletion now (idempotent), so the woken
        # pod meets the freed quota.
        self.cache.delete_pod(old_obj)
        return QueueingHint.Queue

    @safe_hint
    def is_schedulable_after_quota_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # Bring the cache up to date before the woken pod reads it (each step is idempotent).
        if new_obj is None and isinstance(old_obj, Mapping):
            self.cache.delete_quota(old_obj)
        elif old_obj is None and isinstance(new_obj, Mapping):
            self.cache.add_quota(new_obj)
        elif isinstance(old_obj, Mapping) and isinstance(new_obj, Mapping):
            self.cache.update_quota(old_obj, new_obj)
        return QueueingHint.Queue


def _remove_potential_victims(
    pod: PodInfo,
    node: NodeInfo,
    infos: ElasticQuotaInfos,
    pre_filter: PreFilterState,
    remove: Callable[[PodInfo], Status | None],
) -> tuple[list[PodInfo], Status | None]:
    """Upstream's first pass of SelectVictimsOnNode: the node's pods that quota rules let this pod
    preempt, least important first, each removed from the node (and the quota snapshot) as it is chosen
    (a later pod's eligibility reads the quotas with the earlier ones gone)."""
    preemptor_eq = infos.get(pod.namespace)
    # The node's pods, least important first (upstream sorts them in place with !MoreImportantPod).
    ordered = list(node.pods.values())
    sort_slice(ordered, lambda a, b: not more_important_as_go_sees_it(a, b))
    more_than_min = preemptor_eq is not None and preemptor_eq.used_over_min_with(
        pre_filter.nominated_in_eq_with_pod_req
    )
    potential: list[PodInfo] = []
    for other in ordered:
        other_eq = infos.get(other.namespace)
        if preemptor_eq is None:
            # A preemptor without a quota: lower-priority pods of namespaces without one.
            chosen = other_eq is None and other.priority < pod.priority
        elif other_eq is None:
            chosen = False
        elif more_than_min:
            # Over its min with this pod: only lower-priority pods of its own quota.
            chosen = other.namespace == pod.namespace and other.priority < pod.priority
        else:
            # Within its min: pods of quotas that borrow (use more than their min), any priority.
            chosen = other.namespace != pod.namespace and other_eq.used_over_min()
        if chosen:
            potential.append(other)
            if (error := remove(other)) is not None:
                return [], error
    return potential, None


def _reprieve_in_order(
    violating: Sequence[PodInfo],
    non_violating: Sequence[PodInfo],
    reprieve: Callable[[PodInfo], tuple[bool, Status | None]],
) -> tuple[int, Status | None]:
    """Try to keep the PDB-violating candidates first, then the others (upstream's order); returns how
    many violating ones could not be kept."""
    num_violating = 0
    for victim in violating:
        fits, error = reprieve(victim)
        if error is not None:
            return 0, error
        if not fits:
            num_violating += 1
    for victim in non_violating:
        _, error = reprieve(victim)
        if error is not None:
            return 0, error
    return num_violating, None


class QuotaPreemptor:
    """Upstream's ``preemptor`` (``preemption.Interface``) for one PostFilter call: the Evaluator's
    search with quota-aware eligibility and victims."""

    def __init__(self, handle: PreemptionHandle, state: CycleState) -> None:
        self.handle = handle
        self.state = state

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return 0, num_nodes

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        if pod.spec.get("preemptionPolicy") == PREEMPT_NEVER:
            return False, NOT_ELIGIBLE_NEVER_MSG
        pre_filter = _pre_filter_state(self.state)
        if pre_filter is None:
            return False, NOT_ELIGIBLE_STATE_MSG
        nominated = pod_status(pod.pod).get("nominatedNodeName") or ""
        if not nominated:
            return True, ""
        if (
            nominated_node_status is not None
            and nominated_node_status.code is Code.UnschedulableAndUnresolvable
        ):
            return True, ""
        snapshot = _snapshot_state(self.state)
        if snapshot is None:
            return True, ""
        node = self.handle.snapshot.get(nominated)
        if node is None:
            return True, ""
        preemptor_eq = snapshot.infos.get(pod.namespace)
        if preemptor_eq is not None:
            more_than_min = preemptor_eq.used_over_min_with(pre_filter.nominated_in_eq_with_pod_req)
            for other in node.pods.values():
                if not object_meta(other.pod).get("deletionTimestamp"):
                    continue
                other_eq = snapshot.infos.get(other.namespace)
                if other_eq is None:
                    continue
                if other.namespace == pod.namespace and other.priority < pod.priority:
                    return False, NOT_ELIGIBLE_TERMINATING_MSG
                if other.namespace != pod.namespace and not more_than_min and other_eq.used_over_min():
                    return False, NOT_ELIGIBLE_TERMINATING_MSG
        else:
            for other in node.pods.values():
                if other.namespace in snapshot.infos:
                    continue
                if object_meta(other.pod).get("deletionTimestamp") and other.priority < pod.priority:
                    return False, NOT_ELIGIBLE_TERMINATING_MSG
        return True, ""

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status | None]:
        """Upstream's ``SelectVictimsOnNode`` override, on a copy of the snapshot's node and the
        Evaluator's copy of the state."""
        node = node.clone()
        snapshot = _snapshot_state(state)
        if snapshot is None:
            return [], 0, Status(Code.Unschedulable, ["Failed to read elasticQuotaSnapshot from cycleState"])
        pre_filter = _pre_filter_state(state)
        if pre_filter is None:
            return [], 0, Status(Code.Unschedulable, ["Failed to read preFilterState from cycleState"])
        handle = self.handle
        infos = snapshot.infos
        pod_req = pre_filter.pod_req

        def remove(victim: PodInfo) -> Status | None:
            if node.remove_pod(victim.key) is None:
                return Status.as_error(f"no corresponding pod {victim.name} in pods of node {node.name}")
            status = handle.run_pre_filter_extension_remove_pod(state, pod, victim, node)
            return None if status is None else Status.as_error(status.message())

        def add(victim: PodInfo) -> Status | None:
            node.add_pod(victim)
            status = handle.run_pre_filter_extension_add_pod(state, pod, victim, node)
            return None if status is None else Status.as_error(status.message())

        preemptor_eq = infos.get(pod.namespace)
        potential, error = _remove_potential_victims(pod, node, infos, pre_filter, remove)
        if error is not None:
            return [], 0, error
        if not potential:
            message = f"No victims found on node {node.name} for preemptor pod {pod.name}"
            return [], 0, Status(Code.UnschedulableAndUnresolvable, [message])

        status = handle.run_filter_plugins_with_nominated_pods(state, pod, node)
        if status is not None:
            return [], 0, status
        if preemptor_eq is not None and (
            preemptor_eq.used_over_max_with(pod_req) or infos.aggregated_used_over_min_with(pod_req)
        ):
            return [], 0, Status(Code.Unschedulable, [GLOBAL_QUOTA_MAX_EXCEEDED_MSG])

        potential = by_pod_importance(potential)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []

        def reprieve(victim: PodInfo) -> tuple[bool, Status | None]:
            if (error := add(victim)) is not None:
                return False, error
            fits = handle.run_filter_plugins_with_nominated_pods(state, pod, node) is None
            if not fits:
                if (error := remove(victim)) is not None:
                    return False, error
                victims.append(victim)
            if preemptor_eq is not None and (
                preemptor_eq.used_over_max_with(pre_filter.nominated_in_eq_with_pod_req)
                or infos.aggregated_used_over_min_with(pre_filter.nominated_with_pod_req)
            ):
                # Upstream removes it again even when it did not fit (an error then: it is gone).
                if (error := remove(victim)) is not None:
                    return False, error
                victims.append(victim)
            return fits, None

        num_violating, error = _reprieve_in_order(violating, non_violating, reprieve)
        if error is not None:
            return [], 0, error
        if violating and non_violating:
            victims = by_pod_importance(victims)
        return victims, num_violating, None
