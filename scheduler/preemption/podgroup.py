"""Workload-aware preemption: room for a whole pod group, victims on any nodes
(``pkg/scheduler/framework/preemption/podgrouppreemption.go``, ``types.go`` and ``util.go`` of
kube-scheduler v1.37.2, feature gate GenericWorkload; DefaultPreemption's PodGroupPostFilter).

The domain is the whole cluster. Every pod on a node whose priority (its PodGroup's, for a pod group
member) is below the group's is a potential victim; all of them are taken off the snapshot at once and
the group's scheduling algorithm runs again (the pod group cycle's function). If the group then fits,
the victims are given back one by one, most important first (those a PodDisruptionBudget protects
before the others), each kept only if every member still passes Filter where the run put it with the
earlier members counted there. What could not be given back is evicted by the Executor, and the
members are nominated where the run put them.

A victim is one pod, or every scheduled member of a PodGroup in ``disruptionMode: {all: {}}`` on any
nodes, given back or evicted as one (``scheduler.preemption.victims``). PodGroupPreemptionPolicy (alpha)
is off: a group may not preempt when any member says ``preemptionPolicy: Never``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from scheduler import metrics
from scheduler.framework.handle import PreemptionHandle
from scheduler.framework.objects import pod_status
from scheduler.framework.objects_scheduling import pod_group_priority
from scheduler.framework.podgroup import (
    POD_GROUP_KEY_TYPE,
    MutableSnapshot,
    PodGroupInfo,
    PodGroupSchedulingFunc,
    ProposedAssignment,
)
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from scheduler.preemption.pdb import PodDisruptionBudget
from scheduler.preemption.pods import terminating_by_preemption
from scheduler.preemption.victims import (
    RANK_POD_GROUP,
    Victim,
    by_importance,
    split_by_budgets,
    victim_priority,
    victims_on,
)

NO_VICTIMS_MSG = "No preemption victims found for incoming preemptor"
NOT_ELIGIBLE_NEVER_MSG = "not eligible due to preemptionPolicy=Never."
ONGOING_MSG = "ongoing preemption on nominated nodes"
PREEMPT_NEVER = "Never"


@runtime_checkable
class GroupActuator(Protocol):
    """The Executor's side: evicts ``victims`` for the group's ``members``; returns at once."""

    def actuate_group(
        self,
        pod_group: Mapping[str, Any],
        members: Sequence[PodInfo],
        victims: Sequence[PodInfo],
        plugin: str,
    ) -> Status | None: ...


@dataclass(frozen=True, slots=True)
class PodGroupPreemption:
    """What the evaluation decided: the victims (most important first), how many of them break a PDB
    and how many are pod group members, and where each member goes."""

    victims: tuple[PodInfo, ...]
    num_pdb_violations: int
    num_pod_group_disruptions: int
    nominations: dict[str, str]


class PodGroupEvaluator:
    def __init__(
        self,
        plugin_name: str,
        handle: PreemptionHandle,
        pdbs: Callable[[], Sequence[PodDisruptionBudget]],
        pod_group_of: Callable[[Mapping[str, Any]], Mapping[str, Any] | None],
        actuator: Callable[[], GroupActuator | None],
    ) -> None:
        self.plugin_name = plugin_name
        self._handle = handle
        self._pdbs = pdbs
        self._pod_group_of = pod_group_of
        self._actuator = actuator

    def preempt(
        self, group: PodGroupInfo, schedule: PodGroupSchedulingFunc
    ) -> tuple[dict[str, str] | None, Status]:
        """Upstream's ``PodGroupEvaluator.Preempt``: the members' nominations and the status."""
        priority = pod_group_priority(group.pod_group)
        if any(m.spec.get("preemptionPolicy") == PREEMPT_NEVER for m in group.members):
            return None, Status(Code.Unschedulable, [NOT_ELIGIBLE_NEVER_MSG])
        if self._ongoing(group, priority):
            current = {m.key: pod_status(m.pod).get("nominatedNodeName") or "" for m in group.members}
            return current, Status(Code.Success, [ONGOING_MSG])
        start = time.perf_counter()
        decided = self.evaluate(group, priority, schedule)
        status = decided if isinstance(decided, Status) else None
        metrics.PREEMPTION_EVALUATION_DURATION.labels(
            POD_GROUP_KEY_TYPE, (status.code if status is not None else Code.Success).name
        ).observe(time.perf_counter() - start)
        if isinstance(decided, Status):
            return None, decided
        actuator = self._actuator()
        if actuator is not None:
            metrics.observe_preemption_disruptions(
                POD_GROUP_KEY_TYPE, decided.num_pod_group_disruptions, decided.num_pdb_violations
            )
            failed = actuator.actuate_group(group.pod_group, group.members, decided.victims, self.plugin_name)
            if failed is not None:
                return decided.nominations, failed
        found = f"found a placement for podgroup, preempting {len(decided.victims)} victims"
        return decided.nominations, Status(Code.Success, [found])

    def _ongoing(self, group: PodGroupInfo, priority: int) -> bool:
        """Upstream's isOngoingPreemption: a lower-priority pod that this scheduler's preemption is
        terminating sits on a node where a member is nominated."""
        snapshot = self._handle.snapshot
        nominated = {pod_status(m.pod).get("nominatedNodeName") or "" for m in group.members} - {""}
        for name in nominated:
            node = snapshot.get(name)
            if node is None:
                continue
            for pod in node.pods.values():
                if self.victim_priority(pod) < priority and terminating_by_preemption(pod.pod):
                    return True
        return False

    def evaluate(
        self, group: PodGroupInfo, priority: int, schedule: PodGroupSchedulingFunc
    ) -> PodGroupPreemption | Status:
        """Upstream's selectVictimsOnDomain over the whole cluster. Leaves the victims it chose off the
        snapshot; the pod group cycle restores the snapshot afterwards."""
        snapshot = self._handle.snapshot
        if not isinstance(snapshot, MutableSnapshot):
            return Status.as_error("pod group preemption needs a snapshot it can change")
        handle = self._handle
        potential = [
            v
            for v in victims_on(snapshot.node_infos(), snapshot, self._pod_group_of)
            if v.priority < priority
        ]
        if not potential:
            return Status(Code.UnschedulableAndUnresolvable, [NO_VICTIMS_MSG])
        for victim in potential:
            for pod in victim.pods:
                snapshot.remove_pod(pod, pod.node_name)
        assignments, status = schedule()
        if status is not None and status.code is not Code.Success:
            return status
        violating, non_violating = split_by_budgets(by_importance(potential), self._pdbs())
        placed = [a for a in assignments if a.node_name]
        trial = _Reprieves(handle, snapshot, placed)
        to_preempt: list[Victim] = []
        num_violating = 0
        for victim, count in [*violating, *((v, 0) for v in non_violating)]:
            kept = trial.reprieve(victim)
            if isinstance(kept, Status):
                return kept
            if not kept:
                to_preempt.append(victim)
                num_violating += count
        to_preempt = by_importance(to_preempt)
        return PodGroupPreemption(
            victims=tuple(pod for victim in to_preempt for pod in victim.pods),
            num_pdb_violations=num_violating,
            num_pod_group_disruptions=sum(1 for v in to_preempt if v.rank >= RANK_POD_GROUP),
            nominations={a.pod.key: a.node_name for a in placed},
        )

    def victim_priority(self, pod: PodInfo) -> int:
        """Upstream's GetPodPriority: a pod group member's is its PodGroup's, when the PodGroup is known."""
        return victim_priority(pod, self._pod_group_of)


class _Reprieves:
    """The reprieve step of upstream's selectVictimsOnDomain: with every potential victim off the
    snapshot and the members placed, give each victim back in turn and keep it when every member still
    fits where the run put it. ``snapshot`` is the handle's own, narrowed to its mutable side."""

    def __init__(
        self, handle: PreemptionHandle, snapshot: MutableSnapshot, placed: Sequence[ProposedAssignment]
    ) -> None:
        self._handle = handle
        self._snapshot = snapshot
        self._placed = placed

    def move(self, victim: Victim, back: bool) -> Status | None:
        """Every pod of ``victim`` back on (or off) its node, with the members' PreFilter state."""
        snapshot, handle = self._snapshot, self._handle
        for pod in victim.pods:
            if back:
                snapshot.add_pod(pod, pod.node_name)
            else:
                snapshot.remove_pod(pod, pod.node_name)
            node = handle.snapshot.get(pod.node_name)
            if node is None:
                continue
            for a in self._placed:
                error = (
                    handle.run_pre_filter_extension_add_pod(a.state, a.pod, pod, node)
                    if back
                    else handle.run_pre_filter_extension_remove_pod(a.state, a.pod, pod, node)
                )
                if error is not None:
                    return error
        return None

    def reprieve(self, victim: Victim) -> bool | Status:
        """Give ``victim`` back; True when every member still fits where the run put it (else it is
        taken off again)."""
        error = self.move(victim, back=True)
        if error is not None:
            return error
        assumed: list[ProposedAssignment] = []
        try:
            for a in self._placed:
                node = self._handle.snapshot.get(a.node_name)
                if node is None or (
                    self._handle.run_filter_plugins_with_nominated_pods(a.state, a.pod, node) is not None
                ):
                    error = self.move(victim, back=False)
                    return error if error is not None else False
                # The earlier members count where they go for the later ones' Filter.
                a.assume()
                assumed.append(a)
            return True
        finally:
            for a in reversed(assumed):
                a.forget()
