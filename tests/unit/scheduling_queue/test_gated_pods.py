"""GatedPods' own contract: each pod under the one plugin that gates it."""

from __future__ import annotations

from scheduling_queue import SCHEDULING_GATES, QueuedPodInfo
from scheduling_queue.gated_pods import GatedPods
from scheduling_queue.testing import make_pod


def record(name: str) -> QueuedPodInfo:
    return QueuedPodInfo(make_pod(name), f"default/{name}", 0.0, 0.0)


def test_a_gated_pod_is_filed_under_its_gate_and_names_it() -> None:
    gated = GatedPods()
    qpi = record("a")
    assert gated.add(qpi, SCHEDULING_GATES)
    assert qpi.gating_plugin == SCHEDULING_GATES
    assert SCHEDULING_GATES in qpi.unschedulable_plugins
    assert gated.gated_by(SCHEDULING_GATES) == [qpi] and gated.gated_by("DefaultPreemption") == []
    assert "default/a" in gated and gated.get("default/a") is qpi and len(gated) == 1


def test_gating_again_is_not_a_new_arrival() -> None:
    gated = GatedPods()
    qpi = record("a")
    gated.add(qpi, SCHEDULING_GATES)
    assert not gated.add(qpi, SCHEDULING_GATES)
    assert not gated.add(qpi, "DefaultPreemption")  # another gate: refiled, still one pod
    assert gated.gated_by(SCHEDULING_GATES) == [] and gated.gated_by("DefaultPreemption") == [qpi]
    assert qpi.gating_plugin == "DefaultPreemption" and len(gated) == 1
    newer = record("a")  # another record of the same pod replaces the old one
    assert not gated.add(newer, "DefaultPreemption")
    assert gated.get("default/a") is newer and gated.gated_by("DefaultPreemption") == [newer]


def test_removal_releases_the_pod_but_leaves_its_gate_on_the_record() -> None:
    gated = GatedPods()
    a, b = record("a"), record("b")
    gated.add(a, SCHEDULING_GATES)
    gated.add(b, SCHEDULING_GATES)
    assert gated.remove("default/a") is a and gated.remove("default/a") is None
    assert a.gating_plugin == SCHEDULING_GATES  # the caller clears it once the pod enters activeQ
    assert gated.gated_by(SCHEDULING_GATES) == [b] and gated.all() == [b]


def test_a_flush_holds_off_the_next_until_a_full_period_while_the_pod_stays_gated() -> None:
    """The leftover flush's clock per pod (upstream's FlushTimestamp): the later of the pod's queue
    time and its last flush; refiling under another gate keeps it, release forgets it."""
    gated = GatedPods()
    a, b = record("a"), record("b")  # queued at 0
    gated.add(a, SCHEDULING_GATES)
    gated.add(b, SCHEDULING_GATES)
    assert gated.older_than(300.0, 300.0) == [] and gated.older_than(301.0, 300.0) == [a, b]
    gated.mark_flushed([a], 301.0)
    assert gated.older_than(400.0, 300.0) == [b]
    gated.add(a, "DefaultPreemption")  # refiled: its last flush still counts
    assert gated.older_than(601.0, 300.0) == [b]
    assert gated.older_than(602.0, 300.0) == [b, a]
    gated.remove("default/a")
    gated.add(a, SCHEDULING_GATES)  # gated anew after a release: queue time only
    assert gated.older_than(301.0, 300.0) == [b, a]
