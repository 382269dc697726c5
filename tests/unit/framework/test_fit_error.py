"""FitError's message: upstream's text, counted from the diagnosis once per distinct status."""

from __future__ import annotations

from collections.abc import Iterator

from scheduler.framework.fit_error import FitError
from scheduler.framework.status import Code, Status, distinct_statuses
from scheduler.framework.types import Diagnosis, PodInfo

POD = PodInfo({"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": {"containers": []}})


class CountedReasons(list[str]):
    """A status's reasons that count how often they are read."""

    reads = 0

    def __iter__(self) -> Iterator[str]:
        CountedReasons.reads += 1
        return super().__iter__()


def test_a_shared_status_is_read_once_however_many_nodes_and_messages() -> None:
    # The batch Filter path gives all nodes a plugin rejects alike one Status object; a failed attempt
    # then asks for the message several times (exception, Event, PodScheduled condition, preemption).
    CountedReasons.reads = 0
    cpu = Status(Code.Unschedulable, CountedReasons(["Insufficient cpu"]), plugin="NodeResourcesFit")
    taint = Status(Code.UnschedulableAndUnresolvable, ["node(s) had untolerated taint(s)"])
    statuses = {f"n{i}": (taint if i % 10 == 3 else cpu) for i in range(1000)}
    err = FitError(POD, 1000, Diagnosis(node_to_status=statuses))
    expected = "0/1000 nodes are available: 100 node(s) had untolerated taint(s), 900 Insufficient cpu."
    assert str(err) == expected
    assert err.message() == expected
    err.diagnosis.post_filter_msg = "preemption: not helpful."
    assert err.message() == f"{expected} preemption: not helpful."
    assert CountedReasons.reads == 1


def test_reasons_of_distinct_statuses_add_up_per_node() -> None:
    # Equal text in different objects (per-node plugins make one status per node) still adds up.
    statuses = {
        "a": Status(Code.Unschedulable, ["Insufficient cpu", "Insufficient memory"]),
        "b": Status(Code.Unschedulable, ["Insufficient cpu"]),
        "c": Status(Code.UnschedulableAndUnresolvable, ["node(s) didn't match Pod's node affinity/selector"]),
    }
    err = FitError(POD, 4, Diagnosis(node_to_status=statuses))
    assert err.message() == (
        "0/4 nodes are available: 1 Insufficient memory, "
        "1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu."
    )


def test_a_diagnosis_that_grows_is_counted_again() -> None:
    statuses = {"a": Status(Code.Unschedulable, ["Insufficient cpu"])}
    err = FitError(POD, 2, Diagnosis(node_to_status=statuses))
    statuses["b"] = Status(Code.Unschedulable, ["Too many pods"])
    assert err.message() == "0/2 nodes are available: 1 Insufficient cpu, 1 Too many pods."


def test_distinct_statuses_counts_objects_not_text() -> None:
    shared = Status(Code.Unschedulable, ["x"])
    twin = Status(Code.Unschedulable, ["x"])
    counted = distinct_statuses([shared, twin, shared, shared])
    assert [(status is shared, count) for status, count in counted] == [(True, 3), (False, 1)]
