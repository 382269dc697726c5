"""FitError: no node fits a pod (upstream's ``framework.FitError`` in ``framework/types.go``).

It lives in the framework, not the cycle, because PostFilter plugins (preemption) build one from a
diagnosis as the scheduling algorithm does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from scheduler.framework.status import Status, distinct_statuses
from scheduler.framework.types import Diagnosis, PodInfo

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
# Upstream's ErrNoNodesAvailable: the text users see when the cluster has no nodes at all.
NO_NODES_MSG = "no nodes available to schedule pods"


class FitError(Exception):
    """No node fits. ``str()`` is upstream's FitError message, the text users see in events."""

    def __init__(self, pod: PodInfo, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        # The per-node part of the text, kept for the diagnosis it was counted from: a failed attempt
        # asks for the message several times (the exception, the Event, the condition), and counting
        # thousands of node statuses each time cost more than the Filter pass that made them.
        self._counted: tuple[int, int, str, str] | None = None
        super().__init__(self.message())

    def message(self) -> str:
        diagnosis = self.diagnosis
        if self.num_all_nodes == 0 and not diagnosis.node_to_status:
            return NO_NODES_MSG
        text = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":" + self._node_reasons()
        if diagnosis.post_filter_msg:
            # No period of its own: upstream's FitError.Error appends the PostFilter message as it is
            # (preemption's own message already ends with one).
            text += f" {diagnosis.post_filter_msg}"
        return text

    def _node_reasons(self) -> str:
        diagnosis = self.diagnosis
        statuses = diagnosis.node_to_status
        counted = self._counted
        if (
            counted is not None
            and counted[0] == id(statuses)
            and counted[1] == len(statuses)
            and counted[2] == diagnosis.pre_filter_msg
        ):
            return counted[3]
        if diagnosis.pre_filter_msg:
            # PreFilter rejected the pod for all nodes: per-node reasons would only repeat it.
            text = f" {diagnosis.pre_filter_msg}."
        else:
            reasons = sorted(f"{count} {reason}" for reason, count in _reason_histogram(statuses).items())
            text = f" {', '.join(reasons)}." if reasons else ""
        self._counted = (id(statuses), len(statuses), diagnosis.pre_filter_msg, text)
        return text


def _reason_histogram(node_to_status: Mapping[str, Status]) -> Counter[str]:
    """How many nodes give each reason."""
    histogram: Counter[str] = Counter()
    for status, nodes in distinct_statuses(node_to_status.values()):
        for reason in status.reasons:
            histogram[reason] += nodes
    return histogram
