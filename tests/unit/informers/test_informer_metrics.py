"""The watch-event counter: each reflector counts in its own plain int, the scrape shows the sums."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from informers.metrics import EventCounter


def _sample(registry: CollectorRegistry, **labels: str) -> float | None:
    return registry.get_sample_value("test_events_total", labels)


def test_counts_of_the_same_labels_add_up_and_others_stay_apart() -> None:
    registry = CollectorRegistry()
    counter = EventCounter("test_events", "Events.", ("resource", "type"), registry=registry)
    first, second = counter.child("pods", "ADDED"), counter.child("pods", "ADDED")
    other = counter.child("nodes", "ADDED")
    # A label set shows as soon as a count exists, at zero, as a prometheus_client child does.
    assert _sample(registry, resource="pods", type="ADDED") == 0.0
    first.inc()
    first.inc()
    second.inc()
    other.inc()
    assert _sample(registry, resource="pods", type="ADDED") == 3.0
    assert _sample(registry, resource="nodes", type="ADDED") == 1.0
    assert _sample(registry, resource="pods", type="DELETED") is None


def test_exposed_as_a_counter() -> None:
    registry = CollectorRegistry()
    counter = EventCounter("test_events", "Events.", ("resource", "type"), registry=registry)
    counter.child("pods", "MODIFIED").inc()
    text = generate_latest(registry).decode()
    assert "# TYPE test_events_total counter" in text
    assert 'test_events_total{resource="pods",type="MODIFIED"} 1.0' in text


def test_counts_of_reflectors_on_different_threads_lose_nothing() -> None:
    registry = CollectorRegistry()
    counter = EventCounter("test_events", "Events.", ("resource", "type"), registry=registry)

    def reflector() -> None:
        count = counter.child("pods", "ADDED")
        for _ in range(20_000):
            count.inc()

    threads = [threading.Thread(target=reflector) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _sample(registry, resource="pods", type="ADDED") == 80_000.0


def test_wrong_label_count_is_refused() -> None:
    counter = EventCounter("test_events", "Events.", ("resource", "type"), registry=None)
    with pytest.raises(ValueError, match="expected labels"):
        counter.child("pods")
