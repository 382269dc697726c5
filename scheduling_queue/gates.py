"""The SchedulingGates PreEnqueue check, for profiles that don't bring their own PreEnqueue chain."""

from __future__ import annotations

from scheduling_queue.types import Pod

SCHEDULING_GATES = "SchedulingGates"


def scheduling_gates_pre_enqueue(pod: Pod, gating_plugin: str = "") -> str:
    """``"SchedulingGates"`` while ``spec.schedulingGates`` is non-empty, else ``""`` (may enqueue).

    Same contract as :data:`scheduling_queue.types.PreEnqueueCheck`. A scheduler that runs several
    PreEnqueue plugins chains them and returns the first plugin that gates.
    """
    spec = pod.get("spec")
    return SCHEDULING_GATES if spec and spec.get("schedulingGates") else ""
