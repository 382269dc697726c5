"""FitError: no node fits a pod (upstream's ``framework.FitError`` in ``framework/types.go``).

It lives in the framework, not the cycle, because PostFilter plugins (preemption) build one from a
diagnosis as the scheduling algorithm does."""

from __future__ import annotations

from collections import Counter

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
        super().__init__(self.message())

    def message(self) -> str:
        diagnosis = self.diagnosis
        if self.num_all_nodes == 0 and not diagnosis.node_to_status:
            return NO_NODES_MSG
        text = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        if diagnosis.pre_filter_msg:
            # PreFilter rejected the pod for all nodes: per-node reasons would only repeat it.
            text += f" {diagnosis.pre_filter_msg}."
        else:
            histogram: Counter[str] = Counter()
            for status in diagnosis.node_to_status.values():
                histogram.update(status.reasons)
            reasons = sorted(f"{count} {reason}" for reason, count in histogram.items())
            if reasons:
                text += f" {', '.join(reasons)}."
        if diagnosis.post_filter_msg:
            # No period of its own: upstream's FitError.Error appends the PostFilter message as it is
            # (preemption's own message already ends with one).
            text += f" {diagnosis.post_filter_msg}"
        return text
