"""Preemption victims as kube-scheduler v1.37.2 sees them with GenericWorkload
(``pkg/scheduler/framework/preemption/types.go``: Victim, DomainVictim, getCrossNodesVictims;
``util.go``: MoreImportantVictim, FilterVictimsWithPDBViolation).

A victim is the unit evicted at once: one pod, or every scheduled pod of a PodGroup whose
``disruptionMode`` is ``{all: {}}``, wherever they run. Its priority is its PodGroup's for a pod group's
pod (the pod's own otherwise); of equal priority, a pod group's unit (rank 2) is more important than a
lone pod (rank 1), then the larger unit, then the one that started first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from scheduler.framework.handle import SnapshotLister
from scheduler.framework.objects_scheduling import (
    pod_group_disruption_mode,
    pod_group_priority,
    scheduling_group_name,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.preemption.gosort import sort_slice
from scheduler.preemption.pdb import PodDisruptionBudget, filter_pods_with_pdb_violation
from scheduler.preemption.pods import started_at

RANK_POD = 1
RANK_POD_GROUP = 2

# A pod -> its PodGroup object (None: not in a group, or the PodGroup is not known).
PodGroupOf = Callable[[Mapping[str, object]], Mapping[str, object] | None]


@dataclass(frozen=True, slots=True)
class Victim:
    pods: tuple[PodInfo, ...]
    priority: int
    rank: int
    # EarliestStartTime: (0, start) for a started pod, (1, order) for one no kubelet started, whose
    # time.Now() upstream takes when it makes the victim (so the earlier-made one is the earlier).
    earliest: tuple[int, float]
    # "namespace/name" of the PodGroup whose members are evicted together, else "".
    group: str = ""

    @property
    def nodes(self) -> set[str]:
        return {pod.node_name for pod in self.pods}


def more_important(a: Victim, b: Victim) -> bool:
    """Upstream's MoreImportantVictim."""
    if a.priority != b.priority:
        return a.priority > b.priority
    if a.rank != b.rank:
        return a.rank > b.rank
    if len(a.pods) != len(b.pods):
        return len(a.pods) > len(b.pods)
    return a.earliest < b.earliest


def by_importance(victims: Sequence[Victim]) -> list[Victim]:
    """Most important first, as Go's ``sort.Slice(victims, MoreImportantVictim)`` leaves them."""
    out = list(victims)
    sort_slice(out, more_important)
    return out


def victim_priority(pod: PodInfo, pod_group_of: PodGroupOf) -> int:
    """Upstream's GetPodPriority: a pod group member's is its PodGroup's, when the PodGroup is known."""
    pod_group = pod_group_of(pod.pod) if scheduling_group_name(pod.pod) else None
    return pod_group_priority(pod_group) if pod_group is not None else pod.priority


def disrupted_together(pod_group: Mapping[str, object] | None) -> bool:
    mode = pod_group_disruption_mode(pod_group) if pod_group is not None else None
    return mode is not None and mode.get("all") is not None


def victims_on(
    nodes: Iterable[NodeInfo], snapshot: SnapshotLister, pod_group_of: PodGroupOf, start: int = 0
) -> list[Victim]:
    """Upstream's getCrossNodesVictims over ``nodes``: one victim per pod, except that the pods of a
    PodGroup in ``disruptionMode: {all: {}}`` are one victim holding every scheduled member in the
    snapshot (on ``nodes`` or not). ``start`` numbers the unstarted ones after earlier victims."""
    out: list[Victim] = []
    seen: set[str] = set()
    members: dict[str, list[PodInfo]] | None = None
    for node in nodes:
        for pod in node.pods.values():
            name = scheduling_group_name(pod.pod)
            pod_group = pod_group_of(pod.pod) if name else None
            order = start + len(out)
            if not disrupted_together(pod_group):
                if pod.key in seen:
                    continue
                seen.add(pod.key)
                priority = victim_priority(pod, pod_group_of)
                rank = RANK_POD_GROUP if name else RANK_POD
                out.append(Victim((pod,), priority, rank, _earliest((pod,), order)))
                continue
            key = f"{pod.namespace}/{name}"
            if key in seen:
                continue
            seen.add(key)
            if members is None:
                members = _group_members(snapshot)
            pods = tuple(members.get(key) or (pod,))
            assert pod_group is not None
            out.append(
                Victim(pods, pod_group_priority(pod_group), RANK_POD_GROUP, _earliest(pods, order), key)
            )
    return out


def split_by_budgets(
    victims: Sequence[Victim], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[tuple[Victim, int]], list[Victim]]:
    """Upstream's FilterVictimsWithPDBViolation: a victim with any pod whose eviction breaks a budget
    violates, counted once per such pod (the budgets spent in victim order, then pod order)."""
    if not pdbs:
        return [], list(victims)
    flat = [pod for victim in victims for pod in victim.pods]
    violating_pods, _ = filter_pods_with_pdb_violation(flat, pdbs)
    violating_keys = {pod.key for pod in violating_pods}
    violating: list[tuple[Victim, int]] = []
    non_violating: list[Victim] = []
    for victim in victims:
        count = sum(1 for pod in victim.pods if pod.key in violating_keys)
        if count:
            violating.append((victim, count))
        else:
            non_violating.append(victim)
    return violating, non_violating


def _group_members(snapshot: SnapshotLister) -> dict[str, list[PodInfo]]:
    """Every scheduled pod group member in the snapshot (assumed or bound), by "namespace/name"."""
    out: dict[str, list[PodInfo]] = {}
    for node in snapshot.node_infos():
        for pod in node.pods.values():
            name = scheduling_group_name(pod.pod)
            if name:
                out.setdefault(f"{pod.namespace}/{name}", []).append(pod)
    return out


def _earliest(pods: Sequence[PodInfo], order: int) -> tuple[int, float]:
    starts = [started for pod in pods if (started := started_at(pod)) is not None]
    return (0, min(starts)) if starts else (1, float(order))
