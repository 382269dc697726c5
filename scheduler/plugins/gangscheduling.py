"""GangScheduling: all-or-nothing for upstream's own gang API (``scheduling.k8s.io/v1beta1`` PodGroup).

Mirrors ``pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go`` of kube-scheduler v1.37.2
(beta, feature gate GenericWorkload, which absorbed v1.36's GangScheduling gate), without composite
hierarchies (CompositePodGroup, alpha: refused). A pod joins a group with
``spec.schedulingGroup.podGroupName``; the PodGroup in its namespace says ``schedulingPolicy.gang.minCount``
(or ``basic``, which this plugin leaves alone).

* PreEnqueue holds a pod out of activeQ until its PodGroup exists and ``minCount`` of its pods exist.
  The PodGroup's add, a sibling's add (pending or already bound) and an update that lowers
  ``minCount`` wake it through queueing hints.
* PreFilter (py-scheduler's): refuses, naming the field, a PodGroup that uses a field py-scheduler does
  not implement (topology constraints, PodGroup resource claims, a composite parent, a preemption
  policy). Upstream has no such check because it implements them. ``disruptionMode`` is honoured by
  preemption (``scheduler.preemption.victims``). ``priority`` (set by the API server's Priority
  admission on every PodGroup since v1.37) is accepted; the pod group cycle checks the members agree
  with it.
* PlacementFeasible, asked by the pod group cycle before and after each member it tries: Unschedulable
  "minCount (N) cannot be satisfied: S scheduled, R remaining" once too few members are left, Wait
  "minCount (N) is not yet satisfied: ..." until ``minCount`` are placed, then Success.
* Reserve/Unreserve keep the group's assumed members (upstream reads them from the cache's pod group
  state); assumed plus bound members are the group's scheduled pods.
* Permit waits (5 minutes, upstream's permitTimeoutDuration) until ``minCount`` members are scheduled,
  then allows every waiting member at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from informers.resource import PODS, WORKLOAD_PODGROUPS
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
)
from scheduler.framework.objects import namespace_of, namespaced_name, pod_spec, uid_of
from scheduler.framework.objects_scheduling import (
    pod_group_scheduling_policy,
    pod_group_spec,
    scheduling_group_name,
)
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import safe_hint

NAME = "GangScheduling"
# Upstream's permitTimeoutDuration: how long gang members wait at Permit for a quorum.
PERMIT_TIMEOUT_SECONDS = 5 * 60.0
# Upstream's framework.PodsToActivateKey: the cycle moves these pods to activeQ after Permit.
PODS_TO_ACTIVATE_KEY = "kubernetes.io/pods-to-activate"

WAITING_FOR_QUORUM = "waiting for minCount pods from a gang to be scheduled"
WAITING_FOR_MEMBERS = "waiting for minCount pods from a gang to appear in scheduling queue"


def cannot_be_satisfied(min_count: int, scheduled: int, remaining: int) -> str:
    return f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"


def not_yet_satisfied(min_count: int, scheduled: int, remaining: int) -> str:
    return f"minCount ({min_count}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining"


def scheduling_group_key(pod: Mapping[str, Any]) -> str:
    """``namespace/podGroupName``, or "" for a pod outside any group."""
    name = scheduling_group_name(pod)
    return f"{namespace_of(pod)}/{name}" if name else ""


def gang_min_count(pod_group: Mapping[str, Any]) -> int | None:
    """``spec.schedulingPolicy.gang.minCount``; None when the policy is not gang."""
    gang = pod_group_scheduling_policy(pod_group).get("gang")
    if not isinstance(gang, Mapping):
        return None
    count = gang.get("minCount")
    return count if isinstance(count, int) else 0


def unsupported_pod_group_field(pod_group: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, feature) of the first field of ``pod_group`` py-scheduler cannot honour."""
    spec = pod_group_spec(pod_group)
    constraints = spec.get("schedulingConstraints")
    if constraints and constraints.get("topology"):
        return "schedulingConstraints.topology", "TopologyAwareWorkloadScheduling"
    if spec.get("resourceClaims"):
        return "resourceClaims", "DRAWorkloadResourceClaims"
    if spec.get("parentCompositePodGroupName"):
        return "parentCompositePodGroupName", "CompositePodGroup"
    if spec.get("preemptionPolicy"):
        return "preemptionPolicy", "PodGroupPreemptionPolicy"
    return None


class GangScheduling:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        # Upstream's plugin has no args type: any args are refused, as for the other arg-less plugins.
        ArgsReader(self.name).top(args, None, ())
        self.handle = handle
        self.pod_groups = handle.lister(WORKLOAD_PODGROUPS)
        self.pods = handle.lister(PODS)
        # Group key -> uids of members this scheduler assumed (Reserve .. Unreserve).
        self._assumed: dict[str, set[str]] = {}
        # The last pod-add event the hint answered, and whether its group had minCount pods then.
        self._add_memo: tuple[Mapping[str, Any], bool] | None = None

    # --- the group's state (upstream's PodGroupState) ---------------------------------------------
    def pod_group_of(self, pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
        name = scheduling_group_name(pod)
        if not name:
            return None
        return self.pod_groups.get(name, namespace_of(pod))

    def members(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The group's pods the scheduler knows (not finished), ``pod`` included (AllPods)."""
        name = scheduling_group_name(pod)
        namespace = namespace_of(pod)
        return [p for p in self.pods.list(namespace) if scheduling_group_name(p) == name]

    def scheduled_uids(self, key: str, members: Sequence[Mapping[str, Any]]) -> set[str]:
        """Members assumed by this scheduler or bound by anyone (ScheduledPods); members that are gone
        no longer count."""
        live = {uid_of(p) for p in members}
        assumed = self._assumed.get(key)
        if assumed is not None:
            assumed &= live
        bound = {uid_of(p) for p in members if pod_spec(p).get("nodeName")}
        return (assumed or set()) | bound

    # --- PreEnqueue ----------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        name = scheduling_group_name(pod.pod)
        if not name:
            return None
        pod_group = self.pod_group_of(pod.pod)
        if pod_group is None:
            # The pod is unschedulable until its PodGroup is created (upstream's words, typo included).
            return Status.unschedulable(
                f'waiting for pods\'s pod group "{name}" to appear in scheduling queue', resolvable=False
            )
        min_count = gang_min_count(pod_group)
        if min_count is None:
            return None
        if len(self.members(pod.pod)) < min_count:
            return Status.unschedulable(WAITING_FOR_MEMBERS, resolvable=False)
        return None

    # --- PreFilter: fail closed on alpha fields py-scheduler does not implement -----------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        pod_group = self.pod_group_of(pod.pod)
        if pod_group is None:
            return None, Status(Code.Skip)
        unsupported = unsupported_pod_group_field(pod_group)
        if unsupported is None:
            return None, Status(Code.Skip)
        field, gate = unsupported
        return None, Status.unschedulable(
            f"pod group {scheduling_group_key(pod.pod)} uses {field}, which py-scheduler does not "
            f"support yet ({gate})",
            resolvable=False,
        )

    # --- Reserve / Permit ------------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        key = scheduling_group_key(pod.pod)
        if key:
            self._assumed.setdefault(key, set()).add(pod.uid)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        key = scheduling_group_key(pod.pod)
        assumed = self._assumed.get(key) if key else None
        if assumed is not None:
            assumed.discard(pod.uid)
            if not assumed:
                del self._assumed[key]

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        name = scheduling_group_name(pod.pod)
        if not name:
            return None, 0.0
        pod_group = self.pod_group_of(pod.pod)
        if pod_group is None:
            # Deleted meanwhile: an error, so the pod is retried once the group is created again.
            return Status.as_error(
                f'failed to get podGroup {pod.namespace}/{name}: podgroups.scheduling.k8s.io "{name}" '
                "not found"
            ), 0.0
        min_count = gang_min_count(pod_group)
        if min_count is None:
            return None, 0.0
        key = scheduling_group_key(pod.pod)
        members = self.members(pod.pod)
        scheduled = self.scheduled_uids(key, members)
        if len(scheduled) < min_count:
            # Siblings that wait in the queue (e.g. in backoff) may complete the gang: try them now.
            unscheduled = [p for p in members if uid_of(p) not in scheduled]
            if unscheduled:
                state.write(PODS_TO_ACTIVATE_KEY, unscheduled)
            return Status(Code.Wait, [WAITING_FOR_QUORUM]), PERMIT_TIMEOUT_SECONDS
        # Quorum: this pod proceeds, and so does every member waiting at Permit.
        for waiting in self.handle.waiting_pods():
            if waiting.pod.uid in scheduled and scheduling_group_key(waiting.pod.pod) == key:
                waiting.allow(self.name)
        return None, 0.0

    # --- PlacementFeasible (the pod group cycle) ------------------------------------------------------
    def placement_feasible(
        self, state: CycleState, pod_group: Mapping[str, Any], scheduled: int, remaining: int
    ) -> Status | None:
        """Can the group still reach ``minCount`` (1 for a ``basic`` group) in this cycle?"""
        min_count = gang_min_count(pod_group)
        if min_count is None:
            min_count = 1
        if remaining + scheduled < min_count:
            return Status.unschedulable(cannot_be_satisfied(min_count, scheduled, remaining))
        if scheduled < min_count:
            return Status(Code.Wait, [not_yet_satisfied(min_count, scheduled, remaining)])
        return None

    # --- events ----------------------------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # A new pod, pending or already bound, may be the one that completes a gang.
            # schedulingGroup is immutable: no pod Update.
            ClusterEventWithHint(
                ClusterEvent(Resource.UnscheduledPod, ActionType.Add), self.is_schedulable_after_pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.AssignedPod, ActionType.Add), self.is_schedulable_after_pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.WorkloadPodGroup, ActionType.Add),
                self.is_schedulable_after_pod_group_added,
            ),
            # A lower minCount may be met by the members there are.
            ClusterEventWithHint(
                ClusterEvent(Resource.WorkloadPodGroup, ActionType.Update),
                self.is_schedulable_after_pod_group_updated,
            ),
        ]

    @safe_hint
    def is_schedulable_after_pod_added(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        key = scheduling_group_key(pod)
        if not (key and isinstance(new_obj, Mapping) and scheduling_group_key(new_obj) == key):
            return QueueingHint.Skip
        # Upstream queues on any match and lets PreEnqueue decide. Every held member is asked about
        # the same add, so a gang whose PodGroup is known is counted once per event and woken only
        # when PreEnqueue would let it through: the same outcome, without N re-counts per member.
        memo = self._add_memo
        if memo is not None and memo[0] is new_obj:
            return QueueingHint.Queue if memo[1] else QueueingHint.Skip
        pod_group = self.pod_group_of(new_obj)
        min_count = gang_min_count(pod_group) if pod_group is not None else None
        complete = min_count is None or len(self.members(new_obj)) >= min_count
        self._add_memo = (new_obj, complete)
        return QueueingHint.Queue if complete else QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_pod_group_added(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if not isinstance(new_obj, Mapping):
            return QueueingHint.Skip
        if namespaced_name(new_obj) != scheduling_group_key(pod):
            return QueueingHint.Skip
        return QueueingHint.Queue

    @safe_hint
    def is_schedulable_after_pod_group_updated(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        """Queue only when the pod's own gang PodGroup lowered ``minCount`` (a status write, such as
        the cycle's own condition, changes nothing)."""
        if not isinstance(old_obj, Mapping) or not isinstance(new_obj, Mapping):
            return QueueingHint.Skip
        if not scheduling_group_name(pod) or namespaced_name(new_obj) != scheduling_group_key(pod):
            return QueueingHint.Skip
        old_count = gang_min_count(old_obj)
        new_count = gang_min_count(new_obj)
        if old_count is None or new_count is None or new_count >= old_count:
            return QueueingHint.Skip
        return QueueingHint.Queue
