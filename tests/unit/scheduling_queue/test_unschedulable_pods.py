"""UnschedulablePods' own contract: the map, the per-rejector index, timeouts and the metric counts."""

from __future__ import annotations

from scheduling_queue import QueuedPodInfo
from scheduling_queue.testing import make_pod
from scheduling_queue.unschedulable_pods import UnschedulablePods


def record(
    name: str,
    *plugins: str,
    pending: tuple[str, ...] = (),
    timestamp: float = 0.0,
    scheduler_name: str = "py-scheduler",
) -> QueuedPodInfo:
    qpi = QueuedPodInfo(
        make_pod(name, scheduler_name=scheduler_name), f"default/{name}", timestamp, timestamp
    )
    qpi.unschedulable_plugins = set(plugins)
    qpi.pending_plugins = set(pending)
    return qpi


def names(records: list[QueuedPodInfo]) -> set[str]:
    return {qpi.key.split("/")[1] for qpi in records}


def test_an_event_reaches_the_pods_its_plugins_rejected_and_those_nobody_rejected() -> None:
    pods = UnschedulablePods()
    assert pods.add(record("fit", "NodeResourcesFit"))
    assert pods.add(record("both", "NodeResourcesFit", "NodeAffinity"))
    assert pods.add(record("taint", "TaintToleration"))
    assert pods.add(record("waiting", pending=("DynamicResources",)))
    assert pods.add(record("error"))
    fit_or_affinity = pods.rejected_by(["NodeResourcesFit", "NodeAffinity"])
    assert len(fit_or_affinity) == 3  # "both" once
    assert names(fit_or_affinity) == {"fit", "both", "error"}
    assert names(pods.rejected_by(["DynamicResources"])) == {"waiting", "error"}
    assert names(pods.rejected_by(["VolumeBinding"])) == {"error"}
    assert names(pods.all()) == {"fit", "both", "taint", "waiting", "error"} and len(pods) == 5


def test_a_removed_pod_leaves_the_index() -> None:
    pods = UnschedulablePods()
    qpi = record("fit", "NodeResourcesFit")
    pods.add(qpi)
    assert pods.remove("default/fit") is qpi
    assert pods.remove("default/fit") is None
    assert "default/fit" not in pods and pods.get("default/fit") is None
    assert pods.rejected_by(["NodeResourcesFit"]) == [] and pods.counts() == {}


def test_adding_again_refiles_under_the_new_rejectors_and_is_not_a_new_arrival() -> None:
    pods = UnschedulablePods()
    assert pods.add(record("p", "NodeResourcesFit"))
    assert not pods.add(record("p", "NodeAffinity"))
    assert pods.rejected_by(["NodeResourcesFit"]) == []
    assert names(pods.rejected_by(["NodeAffinity"])) == {"p"} and len(pods) == 1


def test_removal_undoes_the_filing_even_if_the_record_changed_meanwhile() -> None:
    pods = UnschedulablePods()
    qpi = record("p", "NodeResourcesFit")
    pods.add(qpi)
    qpi.unschedulable_plugins = {"NodeAffinity"}  # e.g. a new attempt's result set on the record
    pods.remove("default/p")
    assert pods.rejected_by(["NodeResourcesFit"]) == [] and pods.counts() == {}


def test_older_than() -> None:
    pods = UnschedulablePods()
    pods.add(record("old", "NodeResourcesFit", timestamp=0.0))
    pods.add(record("new", "NodeResourcesFit", timestamp=250.0))
    assert names(pods.older_than(301.0, 300.0)) == {"old"}
    assert pods.older_than(300.0, 300.0) == []  # strictly longer than the limit


def test_counts_per_rejector_and_scheduler_name() -> None:
    pods = UnschedulablePods()
    pods.add(record("a", "NodeResourcesFit", "NodeAffinity"))
    pods.add(record("b", "NodeResourcesFit", scheduler_name=""))
    pods.add(record("c", pending=("DynamicResources",)))
    pods.add(record("error"))
    assert pods.counts() == {
        ("NodeResourcesFit", "py-scheduler"): 1,
        ("NodeAffinity", "py-scheduler"): 1,
        ("NodeResourcesFit", "default-scheduler"): 1,
        ("DynamicResources", "py-scheduler"): 1,
    }
