"""The what-if node of a preemption dry run: pods taken off and given back, Filter asked in between.

``copy_or_amounts`` picks how: by arithmetic where that is exact (``scheduler.framework.trial``), else on a
copy of the node with the PreFilter extensions told of every change, as upstream's SelectVictimsOnNode
does (``CopyTrial``).
"""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.handle import NodeTrial, PreemptionHandle
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo


class CopyTrial:
    """The general way: a copy of the node changed pod by pod, the PreFilter extensions (AddPod,
    RemovePod) run for each change when one is active for the pod, Filter run on the copy."""

    __slots__ = ("_extensions", "_handle", "_pod", "_state", "node")

    def __init__(self, handle: PreemptionHandle, state: CycleState, pod: PodInfo, node: NodeInfo) -> None:
        self._handle = handle
        self._state = state
        self._pod = pod
        self.node = node.clone()
        # Without a PreFilter extension for this pod, its AddPod/RemovePod calls do nothing: leave
        # them out (a dry run makes five to ten per node).
        self._extensions = handle.pre_filter_extensions_active(state)

    def remove(self, pod: PodInfo) -> Status | None:
        self.node.remove_pod(pod.key)
        if not self._extensions:
            return None
        return self._handle.run_pre_filter_extension_remove_pod(self._state, self._pod, pod, self.node)

    def add(self, pod: PodInfo) -> Status | None:
        self.node.add_pod(pod)
        if not self._extensions:
            return None
        return self._handle.run_pre_filter_extension_add_pod(self._state, self._pod, pod, self.node)

    def filter(self) -> Status | None:
        return self._handle.run_filter_plugins_with_nominated_pods(self._state, self._pod, self.node)


def copy_or_amounts(handle: PreemptionHandle, state: CycleState, pod: PodInfo, node: NodeInfo) -> NodeTrial:
    """A trial of ``node`` (the snapshot's, left as it is) for ``pod``: by arithmetic when exact."""
    trial = handle.amounts_trial(state, pod, node)
    return trial if trial is not None else CopyTrial(handle, state, pod, node)
