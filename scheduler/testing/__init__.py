"""The plugin author's test kit (docs/testing-plugins.md).

Build a cluster in a line per object, run pods through a profile that includes your plugin with the
real frameworks, cache and queue (no API server), and assert placements, rejection reasons and the
explain record::

    from scheduler.testing import SchedulerHarness, node, pod

    def test_prefers_labelled_nodes():
        h = SchedulerHarness([PreferLabel], args={"PreferLabel": {"label": "fast"}})
        h.add(node("a"), node("b", labels={"fast": "yes"}))
        h.schedule_one(pod("p", cpu="1")).assert_on("b")

With the package installed, pytest gets the fixtures ``scheduler_harness`` (a factory of harnesses)
and ``k8s`` (these builders) from the ``pytest11`` entry point.

This package may import any layer of py-scheduler; nothing in the product imports it.
"""

from scheduler.testing.builders import (
    device_class,
    namespace,
    node,
    pod,
    pv,
    pvc,
    resource_claim,
    resource_quota,
    resource_slice,
    storage_class,
)
from scheduler.testing.harness import Result, SchedulerHarness

__all__ = [
    "Result",
    "SchedulerHarness",
    "device_class",
    "namespace",
    "node",
    "pod",
    "pv",
    "pvc",
    "resource_claim",
    "resource_quota",
    "resource_slice",
    "storage_class",
]
