"""The pod group extension points of kube-scheduler v1.37.2 (feature gate GenericWorkload):
PlacementFeasible and PodGroupPostFilter, and what the pod group cycle hands them
(``k8s.io/kube-scheduler/framework`` ``PodGroupInfo``, ``ProposedAssignment``, ``PodGroupSchedulingFunc``,
``PodGroupPostFilterResult``; ``pkg/scheduler/framework`` ``PlacementFeasiblePlugin``,
``PlacementProgress``).

* PlacementFeasible is asked before the group's first member is tried and after each member: can the
  group still meet its constraints (Wait: maybe, with more members; Unschedulable: never in this cycle;
  Success: met). Upstream runs it for the GangScheduling plugin only.
* PodGroupPostFilter runs once for the whole group when the group cycle ends Unschedulable
  (DefaultPreemption: workload-aware preemption). It gets a function that runs the group's scheduling
  algorithm again on the snapshot as it is then (after it removed the victims it considers) and returns
  where each member would go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Plugin
from scheduler.framework.objects import name_of, namespace_of
from scheduler.framework.status import Status
from scheduler.framework.types import PodInfo

# Upstream's fwk.EntityKeyType values, the ``preemptor`` label of the preemption metrics.
POD_KEY_TYPE = "pod"
POD_GROUP_KEY_TYPE = "podgroup"


@dataclass(frozen=True, slots=True)
class PodGroupInfo:
    """The group a pod group cycle schedules: its PodGroup object and the members it tries (upstream's
    ``GetUnscheduledPods``), in the cycle's order."""

    pod_group: Mapping[str, Any]
    members: tuple[PodInfo, ...]

    @property
    def namespace(self) -> str:
        return namespace_of(self.pod_group)

    @property
    def name(self) -> str:
        return name_of(self.pod_group)


@runtime_checkable
class PlacementFeasiblePlugin(Plugin, Protocol):
    def placement_feasible(
        self, state: CycleState, pod_group: Mapping[str, Any], scheduled: int, remaining: int
    ) -> Status | None:
        """``scheduled``: the group's members placed so far (bound, assumed, or placed earlier in this
        cycle); ``remaining``: members of this cycle not tried yet. None (Success), Wait or
        Unschedulable."""
        ...


class ProposedAssignment(Protocol):
    """Where the group's scheduling algorithm put one member, with the cycle state it was judged in."""

    @property
    def pod(self) -> PodInfo: ...

    @property
    def node_name(self) -> str: ...

    @property
    def state(self) -> CycleState: ...

    def assume(self) -> None:
        """Counts the member on its node in the snapshot and runs Reserve (a what-if run)."""
        ...

    def forget(self) -> None:
        """Undoes ``assume``: Unreserve, and off its node in the snapshot."""
        ...


# Runs the group's scheduling algorithm on the snapshot as it is: the members it placed (in the order
# they were tried) and the group's status (None: the group fits). Every placement is undone when it
# returns; ``ProposedAssignment.assume`` redoes one.
PodGroupSchedulingFunc = Callable[[], tuple[Sequence[ProposedAssignment], Status | None]]


@runtime_checkable
class PodGroupPostFilterPlugin(Plugin, Protocol):
    def pod_group_post_filter(
        self, state: CycleState, group: PodGroupInfo, schedule: PodGroupSchedulingFunc
    ) -> tuple[Mapping[str, str] | None, Status | None]:
        """Returns the members' nominated nodes (pod key -> node) and a status; Success means the
        group will fit once what the plugin started (evictions) is done."""
        ...


@runtime_checkable
class MutableSnapshot(Protocol):
    """A snapshot that can count pods on nodes, or not, without the cache knowing (upstream's mutable
    snapshot lister); the pod group cycle restores it when its what-if runs are over."""

    def add_pod(self, pod: PodInfo, node_name: str) -> None: ...

    def remove_pod(self, pod: PodInfo, node_name: str) -> None: ...
