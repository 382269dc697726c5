"""The plugin: a Filter (keep off other teams' nodes) and a Score (prefer your own team's)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    Resource,
    Status,
    labels_of,
)

DEFAULT_NODE_LABEL = "example.com/team"


class TeamNodes:
    name = "TeamNodes"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.pod_label = str(args.get("podLabel", "team"))
        self.node_label = str(args.get("nodeLabel", DEFAULT_NODE_LABEL))

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        team = labels_of(pod.pod).get(self.pod_label)
        owner = node.labels.get(self.node_label)
        if owner is not None and owner != team:
            return Status.unschedulable(f"node belongs to team {owner}")
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        team = labels_of(pod.pod).get(self.pod_label)
        own = team is not None and node.labels.get(self.node_label) == team
        return (MAX_NODE_SCORE if own else 0), None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A node added or relabelled may now belong to the pod's team (or to none).
        return [
            ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeLabel))
        ]
