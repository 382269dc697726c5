"""A Trimaran plugin's view of the measured load: the metrics of one node out of the latest sample
(scheduler-plugins v0.34.7 ``pkg/trimaran/collector.go`` ``GetNodeMetrics``), the fallback counted when
there are none, and what explain shows per node.

Upstream keeps the last sample that was fetched until a newer one arrives, however old (a metric
provider that stops answering leaves the load frozen); with no sample ever taken, or none for a node,
every plugin gives that node the minimum score. py-scheduler does the same, and says so: each node
scored without metrics counts in ``py_scheduler_load_metrics_fallback_total{plugin,reason}``, and an
explain record carries the node's measured load, the sample's age and the fallback reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduler import metrics
from scheduler.framework import CycleState
from scheduler.framework.handle import LoadMetricsHandle
from scheduler.framework.load_metrics import (
    MEASURED_LOAD_KEY,
    LoadMetricsSource,
    LoadNote,
    Metric,
    NoLoadMetrics,
    TrimaranSpec,
    WatcherMetrics,
)

# Fallback reasons (the ``reason`` label and explain's ``fallback``).
NO_SAMPLE = "no_sample"
NO_NODE_METRICS = "no_node_metrics"
NO_CPU_METRIC = "no_cpu_metric"


def source_for(handle: object, spec: TrimaranSpec) -> LoadMetricsSource:
    """The scheduler's source for ``spec``; none (every node falls back) from a handle without one."""
    if isinstance(handle, LoadMetricsHandle):
        return handle.load_metrics(spec)
    return NoLoadMetrics()


class NodeLoad:
    """The node metrics one plugin reads, with the bookkeeping of fallbacks and explain notes."""

    def __init__(self, plugin: str, source: LoadMetricsSource, clock: Callable[[], float]) -> None:
        self.plugin = plugin
        self.source = source
        self._clock = clock

    def metrics_of(self, state: CycleState, node_name: str) -> tuple[Sequence[Metric] | None, WatcherMetrics]:
        """The node's metrics and the whole sample; None metrics when the plugin must fall back."""
        sample = self.source.latest()
        nodes = sample.nodes
        if nodes is None:
            self.fallback(state, node_name, NO_SAMPLE, sample)
            return None, sample
        node_metrics = nodes.get(node_name)
        if node_metrics is None:
            self.fallback(state, node_name, NO_NODE_METRICS, sample)
            return None, sample
        self.note(state, node_name, sample, node_metrics, "")
        return node_metrics, sample

    def fallback(self, state: CycleState, node_name: str, reason: str, sample: WatcherMetrics) -> None:
        metrics.load_metrics_fallback(self.plugin, reason)
        self.note(state, node_name, sample, (sample.nodes or {}).get(node_name, ()), reason)

    def note(
        self,
        state: CycleState,
        node_name: str,
        sample: WatcherMetrics,
        node_metrics: Sequence[Metric],
        reason: str,
    ) -> None:
        """What explain shows for this node (only when this attempt is being recorded)."""
        notes = state.get(MEASURED_LOAD_KEY)
        if notes is not None:
            notes[node_name] = LoadNote(
                self.plugin, sample, node_metrics, reason, self.source.status(), self._clock()
            )
