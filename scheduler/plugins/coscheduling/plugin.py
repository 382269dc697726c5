"""Coscheduling: all-or-nothing scheduling of a PodGroup (scheduler-plugins ``pkg/coscheduling``).

Pods join a group with the label ``scheduling.x-k8s.io/pod-group: <name>``; the group is a
``scheduling.x-k8s.io/v1alpha1`` PodGroup in the same namespace. Extension points, as upstream's:

* QueueSort keeps a group together: priority, then the group's creation time (or its last failure),
  then ``namespace/name``.
* PreEnqueue (ours; upstream rejects in PreFilter only) holds a pod out of activeQ until its PodGroup
  exists and ``minMember`` pods of it exist, so a half-created gang costs no cycles. The PodGroup add
  and the last member's add wake it through queueing hints.
* PreFilter rejects while the group is backed off, incomplete or gated, or when ``minResources`` cannot
  fit in the cluster's free capacity (the group's own pods not counted as using it).
* Permit waits until ``minMember`` members are assumed or bound, then allows them all at once.
* PostFilter and Unreserve release the whole group: every waiting member is rejected (Unreserve
  runs for each, so all resources they reserved are released), and the group backs off.
* Queueing hints: a member's add and its PodGroup's add or spec update wake the group, as upstream's
  registration (narrowed: other groups' pods are not its events). Ours: a pod delete or a node add or
  update wakes only a group whose last PreFilter found ``minResources`` short of room.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from informers.resource import PODGROUPS, PODS
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
    WaitingPodHandle,
)
from scheduler.framework.listers import IndexedLister, Lister
from scheduler.framework.objects import (
    labels_of,
    namespace_of,
    namespaced_name,
    object_meta,
    pod_spec,
    uid_of,
)
from scheduler.framework.objects_scheduling import coscheduling_pod_group_spec
from scheduler.framework.resources import Resource as Amounts
from scheduler.plugins.coscheduling.args import NAME, CoschedulingArgs, parse_args
from scheduler.plugins.helper.hints import safe_hint
from scheduler.util.timestamps import rfc3339_seconds
from scheduling_queue.types import QueuedPodInfo

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
# CycleState key: this pod is the first of its group to wait, so its siblings are activated.
PERMIT_STATE_KEY = "PermitCoscheduling"
# Upstream's framework.PodsToActivateKey: the cycle moves these pods to activeQ after Permit.
PODS_TO_ACTIVATE_KEY = "kubernetes.io/pods-to-activate"
# The pods lister's index of group members: "namespace/group" -> its pods.
POD_GROUP_INDEX = "coscheduling/pod-group"


def is_gang_member(pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` names a scheduler-plugins PodGroup (the pod-group label)."""
    return bool(pod_group_name(pod))


def pod_group_name(pod: Mapping[str, Any]) -> str:
    value = labels_of(pod).get(POD_GROUP_LABEL, "")
    return value if isinstance(value, str) else ""


def pod_group_full_name(pod: Mapping[str, Any]) -> str:
    name = pod_group_name(pod)
    return f"{namespace_of(pod)}/{name}" if name else ""


def index_by_pod_group(pod: Mapping[str, Any]) -> list[str]:
    full_name = pod_group_full_name(pod)
    return [full_name] if full_name else []


MembersFinder = Callable[[str, str], list[Mapping[str, Any]]]


def members_finder(pods: Lister) -> MembersFinder:
    """``(namespace, group) -> its pods`` in ``pods``: by an index the lister keeps from now on when it
    can (IndexedLister; upstream adds an index to the pod informer too), else by scanning the namespace.
    A gang's members are looked up several times per pod (PreEnqueue, PreFilter, Permit, the status
    controller): a scan made each lookup cost as much as every other pod in the namespace."""
    if isinstance(pods, IndexedLister):
        indexed = pods
        indexed.add_index(POD_GROUP_INDEX, index_by_pod_group)
        return lambda namespace, name: list(indexed.by_index(POD_GROUP_INDEX, f"{namespace}/{name}"))
    return lambda namespace, name: [p for p in pods.list(namespace) if pod_group_name(p) == name]


def min_member(pg: Mapping[str, Any]) -> int:
    value = coscheduling_pod_group_spec(pg).get("minMember")
    return value if isinstance(value, int) else 0


def _created(obj: Mapping[str, Any]) -> float | None:
    return rfc3339_seconds(object_meta(obj).get("creationTimestamp"))


class Coscheduling:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.args: CoschedulingArgs = parse_args(args)
        self.handle = handle
        self.pod_groups = handle.lister(PODGROUPS)
        self.pods = handle.lister(PODS)
        self._members = members_finder(self.pods)
        self.reject_fraction = self.args.pod_group_reject_percentage / 100.0
        # Group full name -> expiry (handle.now()) of state kept with a deadline, as upstream's caches.
        self._permitted: dict[str, float] = {}
        self._backed_off: dict[str, float] = {}
        self._last_failed: dict[str, float] = {}
        # Group full name -> uids of members that passed Permit (waiting or binding).
        self._assigned: dict[str, set[str]] = {}
        # The last pod-add event the hint answered: the pod, its group's name and namespace, and whether
        # the group had minMember pods then.
        self._add_memo: tuple[Mapping[str, Any], str, str, bool] | None = None
        # Groups whose last PreFilter stopped at the minResources check: the only members that freed
        # room (a pod deleted, a node added or changed) can help. Any other member rejected by this
        # plugin (a sibling failed, Permit timed out) waits for its group's events, as upstream's;
        # waking those on room events made a group that cannot complete retry in a loop, each
        # rejected member's released reservation waking its siblings again.
        self._short_of_room: set[str] = set()

    # --- lookups --------------------------------------------------------------------------------
    def get_pod_group(self, pod: Mapping[str, Any]) -> tuple[str, Mapping[str, Any] | None]:
        name = pod_group_name(pod)
        if not name:
            return "", None
        namespace = namespace_of(pod)
        return f"{namespace}/{name}", self.pod_groups.get(name, namespace)

    def siblings(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The group's pods the scheduler knows (not terminated), ``pod`` included."""
        return self._members(namespace_of(pod), pod_group_name(pod))

    def assigned_count(self, full_name: str, siblings: Sequence[Mapping[str, Any]]) -> int:
        """Members past Permit: those we let through plus those already bound (by an earlier run,
        too). Members that are gone no longer count."""
        live = {uid_of(p) for p in siblings}
        passed = self._assigned.get(full_name, set())
        passed &= live
        bound = {uid_of(p) for p in siblings if pod_spec(p).get("nodeName")}
        return len(passed | bound)

    def _active(self, table: dict[str, float], full_name: str) -> bool:
        expiry = table.get(full_name)
        if expiry is None:
            return False
        if expiry <= self.handle.now():
            del table[full_name]
            return False
        return True

    # --- QueueSort --------------------------------------------------------------------------------
    def creation_time(self, qpi: QueuedPodInfo) -> float:
        full_name, pg = self.get_pod_group(qpi.pod)
        if not full_name:
            return qpi.initial_attempt_timestamp
        failed = self._last_failed.get(full_name)
        if failed is not None:
            return failed
        created = _created(pg) if pg is not None else None
        return qpi.initial_attempt_timestamp if created is None else created

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        if a.priority != b.priority:
            return a.priority > b.priority
        ta, tb = self.creation_time(a), self.creation_time(b)
        if ta == tb:
            return a.key < b.key
        return ta < tb

    # --- PreEnqueue ----------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        full_name, pg = self.get_pod_group(pod.pod)
        if not full_name:
            return None
        if pg is None:
            return Status.unschedulable(f"PodGroup {full_name} not found", resolvable=False)
        count = len(self.siblings(pod.pod))
        if count < min_member(pg):
            return Status.unschedulable(
                f"pre-enqueue pod {pod.name} cannot find enough sibling pods, current pods number: "
                f"{count}, minMember of group: {min_member(pg)}",
                resolvable=False,
            )
        return None

    # --- PreFilter -------------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        message = self._pre_filter(pod, nodes)
        # UnschedulableAndUnresolvable, as upstream: preemption cannot help a group that is not ready.
        return None, None if message is None else Status.unschedulable(message, resolvable=False)

    def _pre_filter(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> str | None:
        full_name, pg = self.get_pod_group(pod.pod)
        if pg is None:
            return None
        if self._active(self._backed_off, full_name):
            return f"podGroup {full_name} failed recently"
        siblings = self.siblings(pod.pod)
        need = min_member(pg)
        if len(siblings) < need:
            return (
                f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods number: "
                f"{len(siblings)}, minMember of group: {need}"
            )
        gated = sum(1 for p in siblings if pod_spec(p).get("schedulingGates"))
        if len(siblings) - gated < need:
            return f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same PodGroup"
        min_resources = coscheduling_pod_group_spec(pg).get("minResources")
        if not min_resources or self._active(self._permitted, full_name):
            self._short_of_room.discard(full_name)
            return None
        gap = resource_gap(nodes, min_resources, need, full_name)
        if gap:
            self._short_of_room.add(full_name)
            return "resource gap: " + ", ".join(f"{k}={v}" for k, v in sorted(gap.items()))
        self._short_of_room.discard(full_name)
        self._permitted[full_name] = self.handle.now() + self.args.permit_waiting_time_seconds
        return None

    # --- PostFilter --------------------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None]:
        full_name, pg = self.get_pod_group(pod.pod)
        if pg is None:
            return None, Status.unschedulable("can not find pod group")
        need = min_member(pg)
        siblings = self.siblings(pod.pod)
        assigned = self.assigned_count(full_name, siblings)
        if assigned >= need:
            return None, Status.unschedulable()
        # A small gap: later members may still complete the group.
        if need and (need - assigned) / need <= self.reject_fraction:
            return None, Status.unschedulable()
        # Upstream's implicit assumption: if this member failed, the others would very likely fail too.
        self._reject_waiting(full_name, "optimistic rejection in PostFilter")
        if self.args.pod_group_backoff_seconds > 0 and len(siblings) >= need:
            self._backed_off[full_name] = self.handle.now() + self.args.pod_group_backoff_seconds
        self._permitted.pop(full_name, None)
        self._last_failed[full_name] = self.handle.now()
        return None, Status.unschedulable(
            f"PodGroup {full_name} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter"
        )

    # --- Reserve / Permit ------------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        full_name, pg = self.get_pod_group(pod.pod)
        if not full_name:
            return None, 0.0
        if pg is None:
            return Status.unschedulable("PodGroup not found"), 0.0
        siblings = self.siblings(pod.pod)
        passed = self._assigned.setdefault(full_name, set())
        passed.add(pod.uid)
        if self.assigned_count(full_name, siblings) >= min_member(pg):
            self._last_failed.pop(full_name, None)
            for waiting in self._waiting_members(full_name):
                waiting.allow(self.name)
            return None, 0.0
        if len(passed) == 1:
            # The first member to wait pulls its siblings out of backoff (upstream's ActivateSiblings).
            others = [p for p in siblings if object_meta(p).get("uid") != pod.uid]
            state.write(PODS_TO_ACTIVATE_KEY, others)
        timeout = coscheduling_pod_group_spec(pg).get("scheduleTimeoutSeconds")
        if not isinstance(timeout, int) or timeout <= 0:
            timeout = self.args.permit_waiting_time_seconds
        return Status(Code.Wait), float(timeout)

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        full_name, pg = self.get_pod_group(pod.pod)
        if not full_name:
            return
        passed = self._assigned.get(full_name)
        if passed is not None:
            passed.discard(pod.uid)
            if not passed:
                del self._assigned[full_name]
        if pg is None:
            return
        # One member released: release them all, so no partial gang holds resources.
        self._reject_waiting(full_name, "rejection in Unreserve")
        self._permitted.pop(full_name, None)
        self._last_failed[full_name] = self.handle.now()

    def _waiting_members(self, full_name: str) -> list[WaitingPodHandle]:
        return [w for w in self.handle.waiting_pods() if pod_group_full_name(w.pod.pod) == full_name]

    def _reject_waiting(self, full_name: str, message: str) -> None:
        for waiting in self._waiting_members(full_name):
            waiting.reject(self.name, message)

    # --- events --------------------------------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.Pod, ActionType.Add), self.is_schedulable_after_pod_add
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PodGroup, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_pod_group_change,
            ),
            # Ours: a group turned away by its minResources check may fit once others leave or nodes
            # join. Only that verdict depends on room; upstream registers neither event.
            ClusterEventWithHint(
                ClusterEvent(Resource.AssignedPod, ActionType.Delete), self.is_schedulable_after_pod_delete
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.Node, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_node_change,
            ),
        ]

    @safe_hint
    def is_schedulable_after_pod_add(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # Another member of the same group appeared: worth a retry only once minMember exist. Every
        # held member is asked about the same add, so the count is taken once per event: a gang of
        # 500 created pod by pod costs 500 counts, not 500 x 500 re-run PreEnqueues of 500 each.
        # The added pod's group (and whether it is complete) once per event; per held pod only a label
        # and a namespace compared: every bind is a pod add asked of every held pod.
        if not isinstance(new_obj, Mapping):
            return QueueingHint.Skip
        memo = self._add_memo
        if memo is None or memo[0] is not new_obj:
            group, pg = self.get_pod_group(new_obj)
            # No PodGroup yet: its add wakes the group (is_schedulable_after_pod_group_change).
            complete = pg is not None and len(self.siblings(new_obj)) >= min_member(pg)
            memo = self._add_memo = (new_obj, pod_group_name(new_obj), namespace_of(new_obj), complete)
        _, group, namespace, complete = memo
        if not group or pod_group_name(pod) != group or namespace_of(pod) != namespace:
            return QueueingHint.Skip
        return QueueingHint.Queue if complete else QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_pod_group_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if not isinstance(new_obj, Mapping):
            return QueueingHint.Skip
        if namespaced_name(new_obj) != pod_group_full_name(pod):
            return QueueingHint.Skip
        if isinstance(old_obj, Mapping) and (old_obj.get("spec") == new_obj.get("spec")):
            return QueueingHint.Skip  # a status update changes nothing for scheduling
        return QueueingHint.Queue

    @safe_hint
    def is_schedulable_after_pod_delete(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        full_name = pod_group_full_name(pod)
        if full_name not in self._short_of_room:
            return QueueingHint.Skip
        if isinstance(old_obj, Mapping) and pod_group_full_name(old_obj) == full_name:
            return QueueingHint.Skip  # the group's own pods already count as free room
        return QueueingHint.Queue

    @safe_hint
    def is_schedulable_after_node_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        short = pod_group_full_name(pod) in self._short_of_room
        return QueueingHint.Queue if short else QueueingHint.Skip


def resource_gap(
    nodes: Sequence[NodeInfo], min_resources: Mapping[str, Any], min_members: int, full_name: str
) -> dict[str, int]:
    """What ``minResources`` (plus ``minMember`` pod slots) lacks in the cluster's free capacity, node
    free space summed as upstream's CheckClusterResource; the group's own pods count as free. Empty when
    it fits."""
    want = Amounts.from_list(min_resources)
    want.allowed_pod_number = min_members
    need = {n: want.get(n) for n in (*want.names(), "pods") if want.get(n) > 0}
    for node in nodes:
        if node.node is None:
            continue
        free = node.allocatable.copy()
        used = node.requested.copy()
        own = 0
        for member in node.pods.values():
            if pod_group_full_name(member.pod) == full_name:
                used.subtract(member.requests)
                own += 1
        free.subtract(used)
        free.allowed_pod_number = node.allocatable.allowed_pod_number - (len(node.pods) - own)
        for name in list(need):
            need[name] -= free.get(name)
            if need[name] <= 0:
                del need[name]
        if not need:
            return {}
    return need
