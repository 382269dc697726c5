"""Event labels and matching, pod-update classification, and request parsing of scheduling_queue.events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.framework.resources import pod_request_amounts, same_request_inputs
from scheduling_queue import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_UPDATE,
    ActionType,
    ClusterEvent,
    Resource,
    event_label,
    event_matches,
    is_pod_updated,
    pod_scheduling_properties_change,
)
from scheduling_queue.testing import make_pod, with_changes


@pytest.mark.parametrize(
    ("event", "label"),
    [
        (ClusterEvent(Resource.Node, ActionType.Add), "NodeAdd"),
        (ClusterEvent(Resource.Node, ActionType.UpdateNodeTaint), "NodeUpdateNodeTaint"),
        (ClusterEvent(Resource.Node, ActionType.Delete), "NodeDelete"),
        (EVENT_UNSCHEDULED_POD_ADD, "UnscheduledPodAdd"),
        (EVENT_UNSCHEDULED_POD_UPDATE, "UnscheduledPodUpdate"),
        (ClusterEvent(Resource.UnscheduledPod, ActionType.UpdateOther), "UnscheduledPodUpdate"),
        (EVENT_ASSIGNED_POD_ADD, "AssignedPodAdd"),
        (ClusterEvent(Resource.AssignedPod, ActionType.UpdatePodLabel), "AssignedPodUpdatePodLabel"),
        (ClusterEvent(Resource.AssignedPod, ActionType.UpdatePodScaleUp), "AssignedPodUpdatePodScaleUp"),
        (
            ClusterEvent(Resource.TargetPod, ActionType.UpdatePodSchedulingGatesEliminated),
            "TargetPodUpdatePodSchedulingGatesEliminated",
        ),
        (ClusterEvent(Resource.TargetPod, ActionType.UpdateOther), "TargetPodUpdate"),
        (ClusterEvent(Resource.CSINode, ActionType.Add), "storage.k8s.io/CSINodeAdd"),
        (ClusterEvent(Resource.PersistentVolumeClaim, ActionType.All), "PersistentVolumeClaimAll"),
        (EVENT_UNSCHEDULABLE_TIMEOUT, "UnschedulableTimeout"),
        (EVENT_FORCE_ACTIVATE, "ForceActivate"),
    ],
)
def test_event_labels_match_upstream(event: ClusterEvent, label: str) -> None:
    assert event_label(event) == label


@pytest.mark.parametrize(
    ("registered", "incoming", "expected"),
    [
        (ClusterEvent(Resource.Node, ActionType.Add), ClusterEvent(Resource.Node, ActionType.Add), True),
        (ClusterEvent(Resource.Node, ActionType.Add), ClusterEvent(Resource.Node, ActionType.Delete), False),
        (ClusterEvent(Resource.Node, ActionType.Add), ClusterEvent(Resource.Pod, ActionType.Add), False),
        (ClusterEvent(Resource.Pod, ActionType.Add), EVENT_ASSIGNED_POD_ADD, True),
        (ClusterEvent(Resource.Pod, ActionType.Add), EVENT_UNSCHEDULED_POD_ADD, True),
        (ClusterEvent(Resource.AssignedPod, ActionType.Add), EVENT_UNSCHEDULED_POD_ADD, False),
        # v1.37: a pod's own update is a TargetPod event; Pod registrations hear it, UnscheduledPod ones not.
        (
            ClusterEvent(Resource.Pod, ActionType.UpdatePodToleration),
            ClusterEvent(Resource.TargetPod, ActionType.UpdatePodToleration),
            True,
        ),
        (EVENT_UNSCHEDULED_POD_UPDATE, ClusterEvent(Resource.TargetPod, ActionType.UpdatePodLabel), False),
        (
            ClusterEvent(Resource.TargetPod, ActionType.Update),
            ClusterEvent(Resource.TargetPod, ActionType.UpdatePodLabel),
            True,
        ),
        (ClusterEvent(Resource.TargetPod, ActionType.Update), EVENT_UNSCHEDULED_POD_UPDATE, False),
        (
            ClusterEvent(Resource.Node, ActionType.Update),
            ClusterEvent(Resource.Node, ActionType.UpdateNodeLabel),
            True,
        ),
        (
            ClusterEvent(Resource.Node, ActionType.UpdateNodeLabel),
            ClusterEvent(Resource.Node, ActionType.Update),
            False,
        ),
        (
            ClusterEvent(Resource.WildCard, ActionType.All),
            ClusterEvent(Resource.CSINode, ActionType.Delete),
            True,
        ),
        (ClusterEvent(Resource.WildCard, ActionType.Add), ClusterEvent(Resource.Node, ActionType.Add), True),
        (
            ClusterEvent(Resource.WildCard, ActionType.Add),
            ClusterEvent(Resource.Node, ActionType.Delete),
            False,
        ),
        (ClusterEvent(Resource.Node, ActionType.All), EVENT_UNSCHEDULABLE_TIMEOUT, False),
    ],
)
def test_event_matching(registered: ClusterEvent, incoming: ClusterEvent, expected: bool) -> None:
    assert event_matches(registered, incoming) is expected


def actions(new: dict[str, object], old: dict[str, object]) -> list[ActionType]:
    computed = pod_scheduling_properties_change(new, old, pod_request_amounts)
    # The scheduler's queue first asks whether the requests' inputs changed at all: same events.
    shortcut = pod_scheduling_properties_change(
        new, old, pod_request_amounts, same_request_inputs=same_request_inputs
    )
    assert shortcut == computed
    return [e.action for e in computed]


def test_pod_change_classification() -> None:
    pod = make_pod("a", requests={"cpu": "500m", "memory": "1Gi"}, scheduling_gates=["g"])
    assert actions(with_changes(pod, metadata={"labels": {"x": "1"}}), pod) == [ActionType.UpdatePodLabel]
    assert actions(with_changes(pod, spec={"schedulingGates": []}), pod) == [
        ActionType.UpdatePodSchedulingGatesEliminated
    ]
    tolerated = with_changes(pod, spec={"tolerations": [{"key": "k"}]})
    assert actions(tolerated, pod) == [ActionType.UpdatePodToleration]
    smaller = with_changes(
        pod, spec={"containers": [{"name": "c", "resources": {"requests": {"cpu": "0.25", "memory": "1Gi"}}}]}
    )
    assert actions(smaller, pod) == [ActionType.UpdatePodScaleDown]
    # v1.37: growing is a scale-up (it was an unclassified update before).
    assert actions(pod, smaller) == [ActionType.UpdatePodScaleUp]
    mixed = with_changes(
        pod, spec={"containers": [{"name": "c", "resources": {"requests": {"cpu": "0.25", "memory": "2Gi"}}}]}
    )
    assert actions(mixed, pod) == [ActionType.UpdatePodScaleDown, ActionType.UpdatePodScaleUp]
    gpu = with_changes(
        pod,
        spec={
            "containers": [
                {
                    "name": "c",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi", "example.com/gpu": "1"}},
                }
            ]
        },
    )
    assert actions(gpu, pod) == [ActionType.UpdatePodScaleUp]  # a resource requested anew
    assert ActionType.UpdatePodScaleUp & ActionType.Update
    claims = with_changes(pod, status={"resourceClaimStatuses": [{"name": "c", "resourceClaimName": "x"}]})
    assert actions(claims, pod) == [ActionType.UpdatePodGeneratedResourceClaim]
    both = with_changes(tolerated, metadata={"labels": {"x": "1"}})
    assert actions(both, pod) == [ActionType.UpdatePodLabel, ActionType.UpdatePodToleration]
    assert actions(with_changes(pod, status={"phase": "Pending", "x": 1}), pod) == [ActionType.UpdateOther]
    resources = {
        e.resource for e in pod_scheduling_properties_change(with_changes(pod, spec={"nodeName": "n"}), pod)
    }
    assert resources == {Resource.AssignedPod}
    assert pod_scheduling_properties_change(pod, pod)[0].resource is Resource.UnscheduledPod
    # The queue reports a pending pod's own update as a TargetPod event (v1.37); a bound one stays
    # AssignedPod.
    assert pod_scheduling_properties_change(pod, pod, target=True)[0].resource is Resource.TargetPod
    bound = with_changes(pod, spec={"nodeName": "n"})
    assert pod_scheduling_properties_change(bound, pod, target=True)[0].resource is Resource.AssignedPod


def test_is_pod_updated_ignores_status_and_bookkeeping() -> None:
    pod = make_pod("a")
    assert not is_pod_updated(pod, pod)
    noise = with_changes(
        pod,
        status={"conditions": [{"type": "PodScheduled", "status": "False"}]},
        metadata={"generation": 3, "managedFields": [{}], "finalizers": ["x"]},
    )
    assert not is_pod_updated(pod, noise)
    assert is_pod_updated(pod, with_changes(pod, metadata={"annotations": {"a": "b"}}))
    assert is_pod_updated(pod, with_changes(pod, spec={"priority": 3}))
    assert is_pod_updated(pod, with_changes(pod, status={"resourceClaimStatuses": []}))


def test_a_bind_echo_reads_no_requests() -> None:
    """Every bound pod's echo is classified; with the scheduler's same_request_inputs its requests are
    not computed (they cannot have changed), and the events are those computed without it."""
    read: list[object] = []

    def counting(pod: Mapping[str, Any]) -> Mapping[str, Any]:
        read.append(pod)
        return pod_request_amounts(pod)

    pod = make_pod("a", requests={"cpu": "500m", "memory": "1Gi"})
    bound = with_changes(pod, spec={"nodeName": "node-1"}, status={"phase": "Running"})
    events = pod_scheduling_properties_change(bound, pod, counting, same_request_inputs=same_request_inputs)
    assert read == []
    assert events == pod_scheduling_properties_change(bound, pod, pod_request_amounts)
    grown = with_changes(bound, spec={"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]})
    pod_scheduling_properties_change(grown, bound, counting, same_request_inputs=same_request_inputs)
    assert len(read) == 2
