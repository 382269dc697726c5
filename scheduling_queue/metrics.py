"""kube-scheduler's queue metrics, registered in the default prometheus registry at import.

* ``scheduler_pending_pods{queue="active|backoff|unschedulable|gated"}`` (gauge)
* ``scheduler_queue_incoming_pods_total{queue="active|backoff|unschedulable", event=...}`` (counter)

Both are served by one collector instead of prometheus_client's Counter/Gauge objects: the queue's hot
path then costs a plain dict increment (~50 ns) rather than a locked ``inc()`` (~600 ns), and pending
counts are read from the live queues at scrape time rather than maintained on every move. The scrape
thread only copies dicts and reads ``len()``, both atomic under the GIL.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Iterable
from typing import Protocol

from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

PENDING_PODS = "scheduler_pending_pods"
INCOMING_PODS = "scheduler_queue_incoming_pods"  # exposed with the _total suffix

PENDING_HELP = (
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
    "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that "
    "the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that "
    "the scheduler never attempted to schedule because they are gated."
)
INCOMING_HELP = "Number of pods added to scheduling queues by event and queue type."

PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")

# (queue, event label) -> count. The queue increments it directly.
incoming: defaultdict[tuple[str, str], int] = defaultdict(int)


class PendingSource(Protocol):
    def pending_counts(self) -> tuple[int, int, int, int]:
        """(active, backoff, unschedulable, gated)."""
        ...


_sources: list[weakref.ref[PendingSource]] = []


def register_source(source: PendingSource) -> None:
    """Count ``source``'s pods in ``scheduler_pending_pods`` for as long as it lives."""
    _sources[:] = [r for r in _sources if r() is not None]
    _sources.append(weakref.ref(source))


def incoming_value(queue: str, event: str) -> int:
    return incoming.get((queue, event), 0)


def pending_totals() -> dict[str, int]:
    totals = dict.fromkeys(PENDING_QUEUES, 0)
    for ref in list(_sources):
        source = ref()
        if source is None:
            continue
        for name, n in zip(PENDING_QUEUES, source.pending_counts(), strict=True):
            totals[name] += n
    return totals


class _QueueCollector(Collector):
    def describe(self) -> Iterable[Metric]:
        yield GaugeMetricFamily(PENDING_PODS, PENDING_HELP, labels=["queue"])
        yield CounterMetricFamily(INCOMING_PODS, INCOMING_HELP, labels=["queue", "event"])

    def collect(self) -> Iterable[Metric]:
        pending = GaugeMetricFamily(PENDING_PODS, PENDING_HELP, labels=["queue"])
        for name, n in pending_totals().items():
            pending.add_metric([name], n)
        yield pending
        counter = CounterMetricFamily(INCOMING_PODS, INCOMING_HELP, labels=["queue", "event"])
        for (queue, event), n in sorted(dict(incoming).items()):
            counter.add_metric([queue, event], n)
        yield counter


COLLECTOR = _QueueCollector()
REGISTRY.register(COLLECTOR)
