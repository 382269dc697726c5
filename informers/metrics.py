"""Informer metrics, module-level in prometheus-client's default registry."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prometheus_client import REGISTRY, CollectorRegistry, Counter
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

LISTS = Counter(
    "py_scheduler_informer_lists",
    "Complete LIST operations (all pages) started by informers.",
    ["resource"],
)
LIST_PAGES = Counter(
    "py_scheduler_informer_list_pages",
    "LIST requests (pages) sent by informers.",
    ["resource"],
)
WATCHES = Counter(
    "py_scheduler_informer_watches",
    "WATCH requests opened by informers.",
    ["resource"],
)
RELISTS = Counter(
    "py_scheduler_informer_relists",
    "LISTs after the first one, by why the watch could not simply resume.",
    ["resource", "reason"],
)
WATCH_ERRORS = Counter(
    "py_scheduler_informer_watch_errors",
    "Watches that ended in an error and were retried after backoff, by kind of error.",
    ["resource", "reason"],
)


class EventCount:
    """One reflector's count of one event type: a plain int, incremented by that reflector alone, on
    its loop. prometheus_client's ``Counter.inc`` takes a lock (0.6 us) on every watch event."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def inc(self) -> None:
        self.value += 1


class EventCounter(Collector):
    """A counter exposed like prometheus_client's (``<name>_total`` per label set), summed at scrape
    time over the :class:`EventCount` each reflector increments: no lock and no sharing on the watch
    path, exact whichever threads the reflectors run on."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: tuple[str, ...],
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = labelnames
        self._counts: list[tuple[tuple[str, ...], EventCount]] = []
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    def child(self, *values: str) -> EventCount:
        """A new count for ``values`` (one caller's own), in the total from now on."""
        if len(values) != len(self._labelnames):
            raise ValueError(f"{self._name}: expected labels {self._labelnames}, got {values}")
        count = EventCount()
        with self._lock:
            self._counts.append((values, count))
        return count

    def describe(self) -> list[Metric]:
        return [CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)]

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            counts = list(self._counts)
        totals: dict[tuple[str, ...], int] = {}
        for values, count in counts:
            totals[values] = totals.get(values, 0) + count.value
        family = CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for values, total in totals.items():
            family.add_metric(list(values), float(total))
        yield family


EVENTS = EventCounter(
    "py_scheduler_informer_events",
    "Watch events received, by type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR).",
    ("resource", "type"),
)
HANDLER_ERRORS = Counter(
    "py_scheduler_informer_handler_errors",
    "Exceptions raised by informer event handlers and filters (logged and swallowed).",
    ["resource"],
)

RELIST_EXPIRED = "expired"
RELIST_TOO_LARGE_RV = "too_large_resource_version"
