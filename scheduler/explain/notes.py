"""What plugins can say of the node an attempt chose, beyond its scores: read from the cycle's state
once the pod is assumed (only then, so the happy path of other pods pays nothing)."""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.plugins import names
from scheduler.plugins.noderesourcetopology import placement_detail


def chosen_node_notes(state: CycleState, node_name: str) -> list[str]:
    """``plugin: note`` lines; NodeResourceTopologyMatch tells on which NUMA node the pod, or each of
    its containers, fits."""
    notes: list[str] = []
    numa = placement_detail(state, node_name)
    if numa:
        notes.append(f"{names.NODE_RESOURCE_TOPOLOGY_MATCH}: {numa}")
    return notes
