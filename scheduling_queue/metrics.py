"""kube-scheduler's queue metrics, registered in the default prometheus registry at import.

* ``scheduler_pending_pods{queue="active|backoff|unschedulable|gated"}`` (gauge)
* ``scheduler_queue_incoming_pods_total{queue="active|backoff|unschedulable", event=...}`` (counter)
* v1.37's ``scheduler_queued_entities{queue, type}`` (gauge) and
  ``scheduler_queue_incoming_entities_total{queue, event, type}`` (counter). With GenericWorkload off
  every queued pod is an individual pod, so the gauge is ``pending_pods`` with ``type="pod"``; the
  counter counts what ``incoming_pods`` counts except a move a queueing hint decided that lands where
  the hint pointed (v1.37.2's recordIncomingEntitiesMetrics; ``SchedulingQueue._count_entity``). With
  GenericWorkload on (``entities_are_pods`` False) upstream's queue holds a pod group as one
  ``podgroup`` entity: the gauge counts, per queue, the pods outside any group and the distinct groups
  with members there (``entity_counts``), and the queue counts a group's members entering one queue
  for one event together as one incoming ``podgroup`` entity (``incoming_entities``). py-scheduler's
  queue keeps one entry per pod, so a group whose members sit in two queues counts in both, and members
  of a PodGroup not created yet count as a gated ``podgroup`` (upstream: ``pending_pods{queue=
  "incomplete"}``, not served).

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
QUEUED_ENTITIES = "scheduler_queued_entities"
INCOMING_ENTITIES = "scheduler_queue_incoming_entities"  # exposed with the _total suffix
POD_ENTITY = "pod"
POD_GROUP_ENTITY = "podgroup"

PENDING_HELP = (
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
    "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulableEntities that "
    "the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that "
    "the scheduler never attempted to schedule because they are gated; 'incomplete' means number of pods "
    "in incompletePodGroupPods; 'pending' means number of pods in pendingPodGroupPods."
)
QUEUED_ENTITIES_HELP = (
    "Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands for individual pods that are "
    "not members of any podgroup) by the queue type. 'active' means number of entities in activeQ; "
    "'backoff' means number of entities in backoffQ; 'unschedulable' means number of entities in "
    "unschedulableEntities that the scheduler attempted to schedule and failed; 'gated' is the number of "
    "unschedulable entities that the scheduler never attempted to schedule because they are gated."
)
INCOMING_ENTITIES_HELP = (
    "Number of scheduling entities added to scheduling queues by event, queue type, and entity type. Entity "
    "types are either 'pod' (for individual pods that are not members of any podgroup) or 'podgroup'."
)
# False while GenericWorkload is on: queued pods may then belong to pod groups, which upstream counts as
# 'podgroup' entities; the entity metrics then come from the queues' own counts.
entities_are_pods = True
INCOMING_HELP = "Number of pods added to scheduling queues by event and queue type."

PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")

# (queue, event label) -> count. The queue increments it directly.
incoming: defaultdict[tuple[str, str], int] = defaultdict(int)
# (queue, event label, entity type) -> count, with GenericWorkload on. The queue increments it directly.
incoming_entities: defaultdict[tuple[str, str, str], int] = defaultdict(int)


class PendingSource(Protocol):
    def pending_counts(self) -> tuple[int, int, int, int]:
        """(active, backoff, unschedulable, gated)."""
        ...

    def entity_counts(self) -> dict[tuple[str, str], int]:
        """(queue, entity type) -> queued entities (read only with GenericWorkload on)."""
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


def entity_totals() -> dict[tuple[str, str], int]:
    totals = {(queue, kind): 0 for queue in PENDING_QUEUES for kind in (POD_ENTITY, POD_GROUP_ENTITY)}
    for ref in list(_sources):
        source = ref()
        if source is None:
            continue
        for key, n in source.entity_counts().items():
            totals[key] = totals.get(key, 0) + n
    return totals


class _QueueCollector(Collector):
    def describe(self) -> Iterable[Metric]:
        yield GaugeMetricFamily(PENDING_PODS, PENDING_HELP, labels=["queue"])
        yield CounterMetricFamily(INCOMING_PODS, INCOMING_HELP, labels=["queue", "event"])
        yield GaugeMetricFamily(QUEUED_ENTITIES, QUEUED_ENTITIES_HELP, labels=["queue", "type"])
        yield CounterMetricFamily(
            INCOMING_ENTITIES, INCOMING_ENTITIES_HELP, labels=["queue", "event", "type"]
        )

    def collect(self) -> Iterable[Metric]:
        pending = GaugeMetricFamily(PENDING_PODS, PENDING_HELP, labels=["queue"])
        totals = pending_totals()
        for name, n in totals.items():
            pending.add_metric([name], n)
        yield pending
        counter = CounterMetricFamily(INCOMING_PODS, INCOMING_HELP, labels=["queue", "event"])
        incoming_now = sorted(dict(incoming).items())
        for (queue, event), n in incoming_now:
            counter.add_metric([queue, event], n)
        yield counter
        entities = GaugeMetricFamily(QUEUED_ENTITIES, QUEUED_ENTITIES_HELP, labels=["queue", "type"])
        family = CounterMetricFamily(
            INCOMING_ENTITIES, INCOMING_ENTITIES_HELP, labels=["queue", "event", "type"]
        )
        if entities_are_pods:
            for name, n in totals.items():
                entities.add_metric([name, POD_ENTITY], n)
        else:
            for (queue, kind), n in sorted(entity_totals().items()):
                entities.add_metric([queue, kind], n)
        for (queue, event, kind), n in sorted(dict(incoming_entities).items()):
            family.add_metric([queue, event, kind], n)
        yield entities
        yield family


COLLECTOR = _QueueCollector()
REGISTRY.register(COLLECTOR)
