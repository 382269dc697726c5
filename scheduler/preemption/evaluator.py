"""The preemption Evaluator: who may preempt, where, and whom (``pkg/scheduler/framework/preemption/
preemption.go``, v1.36).

Pure and synchronous, on the event loop: it reads the cycle's snapshot and returns a decision. Acting on
the decision (patching and deleting victims) is the Executor's job, off the loop.

The plugin-specific parts (eligibility, the victims on one node, how many candidates to look for) come
from a :class:`PreemptionInterface`, as upstream's ``preemption.Interface``; DefaultPreemption is one.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from scheduler import metrics
from scheduler.framework.cycle_state import CycleState, scratch_copy
from scheduler.framework.fit_error import FitError
from scheduler.framework.handle import SnapshotLister
from scheduler.framework.objects import pod_status
from scheduler.framework.podgroup import POD_KEY_TYPE
from scheduler.framework.status import Code, Status
from scheduler.framework.types import Diagnosis, NodeInfo, PodInfo
from scheduler.preemption.pdb import PodDisruptionBudget
from scheduler.preemption.pods import earliest_start_time

NOT_HELPFUL_MSG = "Preemption is not helpful for scheduling"
# math.MaxInt32 + 1: shifts every priority to be non-negative before summing, as upstream.
_PRIORITY_SHIFT = 2**31


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where preemption would make room, the victims to evict there (most important first) and
    how many of them a PodDisruptionBudget protects (upstream's ``extenderv1.Victims`` + name)."""

    name: str
    victims: tuple[PodInfo, ...]
    num_pdb_violations: int = 0


class PreemptionInterface(Protocol):
    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status | None]:
        """Victims (most important first), how many violate a PDB, and None on success. ``node`` is the
        snapshot's, which must stay as it is (work on a copy, or on its arithmetic); ``state`` is this
        node's own copy."""
        ...


class Actuator(Protocol):
    """Carries out a decision (the Executor): evicts ``victims`` from ``node_name`` for ``preemptor``."""

    def actuate(
        self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo], plugin: str
    ) -> Status | None: ...


class Evaluator:
    def __init__(
        self,
        plugin_name: str,
        snapshot: Callable[[], SnapshotLister],
        interface: PreemptionInterface,
        pdbs: Callable[[], Sequence[PodDisruptionBudget]],
        actuator: Callable[[], Actuator | None],
        *,
        says_placement: bool = False,
    ) -> None:
        self.plugin_name = plugin_name
        # v1.37's Evaluator.Preempt says what it found on success; scheduler-plugins v0.34.7 builds on
        # v1.34's, which does not.
        self.says_placement = says_placement
        self._snapshot = snapshot
        self.interface = interface
        self._pdbs = pdbs
        self._actuator = actuator

    def preempt(
        self, state: CycleState, pod: PodInfo, node_to_status: Mapping[str, Status]
    ) -> tuple[str | None, Status | None]:
        """Upstream's ``Evaluator.Preempt`` without extenders (``scheduler.preemption.extenders`` adds
        their step). Returns the nominated node (``""`` clears
        a nomination, None leaves it alone) and a status (Success with v1.37's message on success)."""
        found = self.candidates(state, pod, node_to_status)
        if isinstance(found, tuple):
            return found
        return self.choose_and_actuate(pod, found)

    def candidates(
        self, state: CycleState, pod: PodInfo, node_to_status: Mapping[str, Status]
    ) -> list[Candidate] | tuple[str | None, Status | None]:
        """Steps 1 and 2 of ``Preempt``: eligibility and the dry run. The candidates, or the PostFilter
        result when there are none."""
        nominated = pod_status(pod.pod).get("nominatedNodeName") or ""
        # Nodes absent from the map were never filtered (PreFilter narrowed them away): upstream's
        # default absent status is UnschedulableAndUnresolvable.
        nominated_status = node_to_status.get(nominated, Status(Code.UnschedulableAndUnresolvable))
        eligible, message = self.interface.pod_eligible_to_preempt_others(pod, nominated_status)
        if not eligible:
            return None, Status(Code.Unschedulable, [message])

        all_nodes = self._snapshot().node_infos()
        candidates, statuses, error = self.find_candidates(state, all_nodes, pod, node_to_status)
        if error is not None and not candidates:
            return None, error
        if not candidates:
            not_helpful = Status(Code.UnschedulableAndUnresolvable, [NOT_HELPFUL_MSG])
            for node in all_nodes:
                statuses.setdefault(node.name, not_helpful)
            fit_error = FitError(pod, len(all_nodes), Diagnosis(node_to_status=statuses))
            return "", Status(Code.Unschedulable, [fit_error.message()])
        return candidates

    def choose_and_actuate(
        self, pod: PodInfo, candidates: Sequence[Candidate]
    ) -> tuple[str | None, Status | None]:
        """Steps 4 and 5 of ``Preempt``: the best candidate, and its victims handed to the actuator."""
        best = select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.Unschedulable, ["no candidate node for preemption"])
        actuator = self._actuator()
        if actuator is not None:
            # Upstream's observeVictims (the victim count is the executor's; a pod's candidate counts no
            # workload disruption): registered with GenericWorkload.
            metrics.observe_preemption_disruptions(POD_KEY_TYPE, 0, best.num_pdb_violations)
            status = actuator.actuate(pod, best.name, best.victims, self.plugin_name)
            if status is not None:
                return None, status
        if not self.says_placement:
            return best.name, None
        # v1.37: the success says what was found; DefaultPreemption prefixes it with "preemption: " and
        # it ends the FailedScheduling message.
        victims = len(best.victims)
        found = f"found a potential placement for pod on node {best.name}, preempting {victims} victims"
        return best.name, Status(Code.Success, [found])

    def find_candidates(
        self,
        state: CycleState,
        all_nodes: Sequence[NodeInfo],
        pod: PodInfo,
        node_to_status: Mapping[str, Status],
    ) -> tuple[list[Candidate], dict[str, Status], Status | None]:
        if not all_nodes:
            return [], {}, Status.as_error("no nodes available")
        # Only nodes that failed with a status preemption can resolve (NodesForStatusCode(Unschedulable)).
        potential = [
            node
            for node in all_nodes
            if (status := node_to_status.get(node.name)) is not None and status.code is Code.Unschedulable
        ]
        if not potential:
            return [], {}, None
        offset, num_candidates = self.interface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, self._pdbs(), offset, num_candidates)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodInfo,
        potential_nodes: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], dict[str, Status], Status | None]:
        """Upstream's ``DryRunPreemption``, one node after another from ``offset``: each node's victims
        are chosen on a copy of the cycle state (a lazy copy: each lives for one node's run, and
        ``state`` does not change meanwhile) and a what-if of the node that leaves the snapshot's
        alone. Stops once ``num_candidates`` are found and at least one of them violates no PDB.
        PDB-free candidates come first."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        errors: list[str] = []
        count = len(potential_nodes)
        # Kept verdicts (DefaultPreemption's), read without a state copy or a call per node: most
        # nodes of a dry run are those earlier preemptors of the same shape judged.
        kept_verdicts = getattr(self.interface, "kept_verdicts", None)
        known = kept_verdicts(state, pod, pdbs) if kept_verdicts is not None else None
        select_victims_on_node = self.interface.select_victims_on_node
        for i in range(count):
            node = potential_nodes[(offset + i) % count]
            found = known(node) if known is not None else None
            if found is None:
                found = select_victims_on_node(scratch_copy(state), pod, node, pdbs)
            victims, num_violations, status = found
            if status is None and victims:
                candidate = Candidate(node.name, tuple(victims), num_violations)
                (violating if num_violations else non_violating).append(candidate)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status is None:
                status = Status.as_error(f'expected at least one victim pod on node "{node.name}"')
            if status.code is Code.Error:
                errors.append(status.message())
            statuses[node.name] = status
        error = Status.as_error(", ".join(errors)) if errors else None
        return non_violating + violating, statuses, error


def select_candidate(candidates: Sequence[Candidate]) -> Candidate | None:
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    return pick_one_node_for_preemption(candidates)


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate | None:
    """Upstream's ``pickOneNodeForPreemption``: each criterion in turn keeps the best-scoring candidates
    until one is left:

    1. the fewest PDB violations;
    2. the lowest priority of its most important victim;
    3. the smallest sum of victim priorities;
    4. the fewest victims;
    5. the latest start time of its most important victims (the earliest start among those with the
       highest priority), so long-running pods are disturbed last;
    then the first left.
    """
    if not candidates:
        return None
    # Keeping the best by each of the first four criteria in turn keeps exactly the candidates whose
    # four scores, as a tuple, are the greatest: one pass (a dry run finds ~100 candidates, and in a
    # cluster of like nodes they all tie on these).
    keys = [
        (
            -c.num_pdb_violations,
            -c.victims[0].priority,
            -sum(v.priority + _PRIORITY_SHIFT for v in c.victims),
            -len(c.victims),
        )
        for c in candidates
    ]
    best = max(keys)
    remaining = [c for c, key in zip(candidates, keys, strict=True) if key == best]
    if len(remaining) == 1:
        return remaining[0]
    starts = [earliest_start_time(c.victims) for c in remaining]
    latest = max(-math.inf if start is None else start for start in starts)
    for c, start in zip(remaining, starts, strict=True):
        if (-math.inf if start is None else start) == latest:
            return c
    return remaining[0]


def calculate_num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """``calculateNumCandidates``: a percentage of the nodes, at least ``absolute``, at most all."""
    n = num_nodes * percentage // 100
    n = max(n, absolute)
    return min(n, num_nodes)


def random_offset(num_nodes: int, rng: random.Random) -> int:
    """``rand.Int31n(numNodes)``: where the dry run starts, so preemption spreads over the cluster."""
    return rng.randrange(num_nodes) if num_nodes > 0 else 0
