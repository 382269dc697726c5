"""Measured node load for load-aware plugins (the Trimaran family): the data, where it comes from, and
the seam a plugin reads it through.

The shapes are load-watcher v0.2.4's (``pkg/watcher/watcher.go``: ``WatcherMetrics``, ``Window``,
``Metric``), because that is what both of upstream's sources produce: the library client querying a
metric provider, and the load-watcher service's JSON API. A plugin asks its Handle for the source of
its ``TrimaranSpec`` (``handle.load_metrics(spec)``) in its factory; the scheduler fetches off the event
loop on a timer and the plugin only reads the latest copy during a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# Metric types and operators, as load-watcher names them.
CPU = "CPU"
MEMORY = "Memory"
BANDWIDTH = "Bandwidth"
STORAGE = "Storage"
ENERGY = "Energy"
UNKNOWN = "Unknown"
AVERAGE = "AVG"
STD = "STD"
LATEST = "Latest"
UNKNOWN_OPERATOR = "Unknown"

# metricProvider.type values (scheduler-plugins ``apis/config/types.go``).
KUBERNETES_METRICS_SERVER = "KubernetesMetricsServer"
PROMETHEUS = "Prometheus"
SIGNAL_FX = "SignalFx"


@dataclass(frozen=True, slots=True)
class MetricProviderSpec:
    type: str = ""
    address: str = ""
    token: str = ""
    insecure_skip_verify: bool = False


@dataclass(frozen=True, slots=True)
class TrimaranSpec:
    """Where load comes from: a metric provider queried by py-scheduler itself (load-watcher as a
    library), or a load-watcher service at ``watcher_address`` (which wins when set)."""

    metric_provider: MetricProviderSpec = field(default_factory=MetricProviderSpec)
    watcher_address: str = ""


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    type: str
    operator: str
    value: float
    rollup: str = ""


@dataclass(frozen=True, slots=True)
class Window:
    duration: str = ""
    start: int = 0
    end: int = 0


@dataclass(frozen=True, slots=True)
class WatcherMetrics:
    """One sample of every node's load. ``nodes`` None: no sample was ever taken (upstream's nil
    ``NodeMetricsMap``), which is not the same as a sample that lists no node."""

    timestamp: int = 0
    window: Window = field(default_factory=Window)
    source: str = ""
    nodes: Mapping[str, Sequence[Metric]] | None = None


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """Where the plugin's copy stands, for explain: when it was last replaced (the sample itself may be
    older: see ``WatcherMetrics.timestamp``), and the error of the last fetch when it failed."""

    source: str
    updated_at: float | None
    last_error: str


class LoadMetricsSource(Protocol):
    """The latest sample of one TrimaranSpec's source; cheap to call in every Score."""

    def latest(self) -> WatcherMetrics: ...

    def status(self) -> SourceStatus: ...


class NoLoadMetrics:
    """A source that never has a sample (a Handle without a scheduler behind it: unit tests, simulate)."""

    def __init__(self, source: str = "none") -> None:
        self._source = source

    def latest(self) -> WatcherMetrics:
        return WatcherMetrics()

    def status(self) -> SourceStatus:
        return SourceStatus(self._source, None, "no metrics source in this process")


# CycleState key of the per-node measured load an attempt being recorded for explain collects
# (node name -> a LoadNote); absent when the attempt is not recorded.
MEASURED_LOAD_KEY = "explain/measuredLoad"


def resource_data(metrics: Iterable[Metric], metric_type: str) -> tuple[float, float, bool]:
    """Average and standard deviation of ``metric_type`` in a node's metrics (scheduler-plugins'
    ``GetResourceData``): an AVG wins over a value without operator or a Latest one, the last of each
    counts; valid when any metric of that type is there."""
    avg = std = 0.0
    avg_found = valid = False
    for metric in metrics:
        if metric.type != metric_type:
            continue
        if metric.operator == AVERAGE:
            avg = metric.value
            avg_found = True
        elif metric.operator == STD:
            std = metric.value
        elif metric.operator in ("", LATEST) and not avg_found:
            avg = metric.value
        valid = True
    return avg, std, valid


@dataclass(frozen=True, slots=True)
class LoadNote:
    """What a load-aware plugin read for one node in one attempt; kept as references (cheap in every
    Score) and turned into explain's JSON only for the nodes a record keeps."""

    plugin: str
    sample: WatcherMetrics
    node_metrics: Sequence[Metric]
    fallback: str
    status: SourceStatus
    now: float

    def to_json(self) -> dict[str, Any]:
        sample = self.sample
        entry: dict[str, Any] = {
            "plugin": self.plugin,
            "source": self.status.source,
            "window": sample.window.duration,
            "sampleAgeSeconds": None if sample.nodes is None else round(self.now - sample.timestamp, 1),
        }
        for key, metric_type in (("cpu", CPU), ("memory", MEMORY)):
            avg, std, found = resource_data(self.node_metrics, metric_type)
            if found:
                entry[key] = {"avgPercent": avg, "stdPercent": std}
        if self.fallback:
            entry["fallback"] = self.fallback
        if self.status.last_error:
            entry["lastError"] = self.status.last_error
        return entry
