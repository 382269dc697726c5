"""The scheduling framework: plugin protocols, Status, CycleState, PodInfo/NodeInfo."""

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.handle import Handle, SnapshotLister
from scheduler.framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE, PluginFactory
from scheduler.framework.resources import Resource, pod_requests
from scheduler.framework.status import Code, Status, code_of, is_success
from scheduler.framework.types import (
    Diagnosis,
    HostPort,
    ImageStateSummary,
    NodeInfo,
    NodeScore,
    PodInfo,
    PodSpecError,
    PreFilterResult,
)

__all__ = [
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "Code",
    "CycleState",
    "Diagnosis",
    "Handle",
    "HostPort",
    "ImageStateSummary",
    "NodeInfo",
    "NodeScore",
    "PluginFactory",
    "PodInfo",
    "PodSpecError",
    "PreFilterResult",
    "Resource",
    "SnapshotLister",
    "Status",
    "code_of",
    "is_success",
    "pod_requests",
]
