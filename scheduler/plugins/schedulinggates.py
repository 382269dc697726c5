"""SchedulingGates (``pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Handle,
    PodInfo,
    QueueingHint,
    Resource,
    Status,
)
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader


class SchedulingGates:
    """PreEnqueue: a pod with ``spec.schedulingGates`` stays out of activeQ until they are all removed.

    Upstream: ``pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go`` (v1.37.2).
    """

    name = names.SCHEDULING_GATES

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        gates = pod.spec.get("schedulingGates")
        if not gates:
            return None
        gate_names = " ".join(str(g.get("name", "")) if isinstance(g, Mapping) else str(g) for g in gates)
        # Go formats the []string with %v: "[a b]".
        return Status.unschedulable(f"waiting for scheduling gates: [{gate_names}]", resolvable=False)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.TargetPod, ActionType.UpdatePodSchedulingGatesEliminated),
                self.is_schedulable_after_update_target_pod_scheduling_gates_eliminated,
            )
        ]

    def is_schedulable_after_update_target_pod_scheduling_gates_eliminated(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # v1.37.2: a TargetPod event is the pod's own update; no uid comparison (v1.36 had one).
        return QueueingHint.Queue
