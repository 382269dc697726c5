"""PrioritySort, SchedulingGates, NodeName, DefaultBinder, the registry and the shared helpers."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.features import parse_feature_gates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    AwaitingPostFilterPlugin,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from scheduler.framework.status import Code
from scheduler.framework.types import NodeScore, PodInfo
from scheduler.plugins import names
from scheduler.plugins.defaultbinder import DefaultBinder
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.helper.gomath import go_div, go_round
from scheduler.plugins.helper.normalize import default_normalize_score
from scheduler.plugins.helper.shape import broken_linear_function
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.queuesort import PrioritySort
from scheduler.plugins.registry import (
    DEFAULT_MULTIPOINT,
    IN_TREE_REGISTRY,
    default_multipoint,
    gated_off,
    in_tree_registry,
)
from scheduler.plugins.schedulinggates import SchedulingGates
from scheduling_queue.types import ActionType, QueuedPodInfo, QueueingHint, Resource
from tests.unit.plugins.plugin_testlib import FakeHandle, node, node_info, pod, run_filter


def queued(priority: int | None, timestamp: float) -> QueuedPodInfo:
    spec: dict[str, Any] = {} if priority is None else {"priority": priority}
    return QueuedPodInfo(pod={"spec": spec}, key="k", initial_attempt_timestamp=0.0, timestamp=timestamp)


def test_priority_sort() -> None:
    less = PrioritySort({}).less
    assert less(queued(10, 2.0), queued(5, 1.0))
    assert not less(queued(5, 1.0), queued(10, 2.0))
    assert less(queued(5, 1.0), queued(5, 2.0))
    assert not less(queued(5, 2.0), queued(5, 1.0))
    # A pod without a priority counts as 0.
    assert less(queued(None, 1.0), queued(-1, 0.0))


def test_scheduling_gates() -> None:
    plugin = SchedulingGates({})
    assert plugin.pre_enqueue(PodInfo(pod())) is None
    status = plugin.pre_enqueue(PodInfo(pod(scheduling_gates=["example.com/foo", "example.com/bar"])))
    assert status is not None
    assert status.code is Code.UnschedulableAndUnresolvable
    assert status.reasons == ["waiting for scheduling gates: [example.com/foo example.com/bar]"]
    (registration,) = plugin.events_to_register()
    assert registration.event.resource is Resource.TargetPod
    assert registration.event.action == ActionType.UpdatePodSchedulingGatesEliminated
    assert registration.hint is not None
    # v1.37.2's TestIsSchedulableAfterUpdateTargetPodSchedulingGatesEliminated: always Queue, whoever
    # was updated (v1.36 skipped another pod's update by uid).
    me = pod(uid="me")
    assert registration.hint(me, me, pod(uid="me")) is QueueingHint.Queue
    assert registration.hint(me, pod(uid="other"), pod(uid="other")) is QueueingHint.Queue


def test_node_name() -> None:
    plugin = NodeName({})
    info = node_info(node("node1"))
    assert run_filter(plugin, pod(), info) is None
    assert run_filter(plugin, pod(node_name="node1"), info) is None
    status = plugin.filter(CycleState(), PodInfo(pod(node_name="node2")), info)
    assert status is not None
    assert status.code is Code.UnschedulableAndUnresolvable
    assert status.reasons == ["node(s) didn't match the requested node name"]
    result, status = plugin.pre_filter(CycleState(), PodInfo(pod(node_name="node2")), [info])
    assert status is None
    assert result is not None
    assert result.node_names == {"node2"}
    _, status = plugin.pre_filter(CycleState(), PodInfo(pod()), [info])
    assert status is not None
    assert status.code is Code.Skip
    (registration,) = plugin.events_to_register()
    assert (registration.event.resource, registration.event.action, registration.hint) == (
        Resource.Node,
        ActionType.Add,
        None,
    )


def test_default_binder_binds_through_the_handle() -> None:
    handle = FakeHandle()
    binder = DefaultBinder({}, handle)
    target = PodInfo(pod("web", namespace="ns", uid="u1"))
    assert binder.bind(CycleState(), target, "node1") is None
    assert handle.bound == [("ns", "web", "u1", "node1")]


def test_default_binder_returns_errors() -> None:
    class ConflictError(Exception):
        pass

    def fail(namespace: str, name: str, uid: str, node_name: str) -> None:
        raise ConflictError("pod already bound")

    status = DefaultBinder({}, FakeHandle(bind=fail)).bind(CycleState(), PodInfo(pod()), "node1")
    assert status is not None
    assert status.code is Code.Error
    assert isinstance(status.error, ConflictError)
    assert status.reasons == ["pod already bound"]


# --- registry -----------------------------------------------------------------------------------

EXPECTED_POINTS: dict[str, tuple[type, ...]] = {
    names.DYNAMIC_RESOURCES: (
        PreEnqueuePlugin,
        PreFilterPlugin,
        FilterPlugin,
        ScorePlugin,
        ScoreExtensions,
        ReservePlugin,
        PreBindPlugin,
        EnqueueExtensions,
    ),
    names.SCHEDULING_GATES: (PreEnqueuePlugin, EnqueueExtensions),
    names.PRIORITY_SORT: (QueueSortPlugin,),
    names.NODE_UNSCHEDULABLE: (FilterPlugin, EnqueueExtensions),
    names.NODE_NAME: (PreFilterPlugin, FilterPlugin, EnqueueExtensions),
    names.NODE_DECLARED_FEATURES: (PreFilterPlugin, FilterPlugin, EnqueueExtensions),
    names.TAINT_TOLERATION: (FilterPlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions),
    names.NODE_AFFINITY: (PreFilterPlugin, FilterPlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions),
    names.NODE_PORTS: (PreFilterPlugin, FilterPlugin, EnqueueExtensions),
    names.NODE_RESOURCES_FIT: (PreFilterPlugin, FilterPlugin, ScorePlugin, EnqueueExtensions),
    names.POD_TOPOLOGY_SPREAD: (
        PreFilterPlugin,
        FilterPlugin,
        ScorePlugin,
        ScoreExtensions,
        EnqueueExtensions,
    ),
    names.INTER_POD_AFFINITY: (
        PreFilterPlugin,
        FilterPlugin,
        ScorePlugin,
        ScoreExtensions,
        EnqueueExtensions,
    ),
    names.NODE_RESOURCES_BALANCED_ALLOCATION: (ScorePlugin,),
    names.IMAGE_LOCALITY: (ScorePlugin,),
    names.VOLUME_BINDING: (
        PreFilterPlugin,
        FilterPlugin,
        PreScorePlugin,
        ScorePlugin,
        ReservePlugin,
        PreBindPlugin,
        EnqueueExtensions,
    ),
    names.VOLUME_ZONE: (PreFilterPlugin, FilterPlugin, EnqueueExtensions),
    names.VOLUME_RESTRICTIONS: (PreFilterPlugin, FilterPlugin, EnqueueExtensions),
    names.NODE_VOLUME_LIMITS: (PreFilterPlugin, FilterPlugin, EnqueueExtensions),
    names.DEFAULT_BINDER: (BindPlugin,),
    names.DEFAULT_PREEMPTION: (PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions),
    # scheduler-plugins' policies: registered, never on by default.
    # Upstream's points (no PreEnqueue: its preemption is synchronous), PostFilter awaited on the loop.
    names.CAPACITY_SCHEDULING: (
        PreFilterPlugin,
        PostFilterPlugin,
        AwaitingPostFilterPlugin,
        ReservePlugin,
        EnqueueExtensions,
    ),
    # Synchronous as upstream too; DefaultPreemption's PreEnqueue hold, inherited, never holds it.
    names.PREEMPTION_TOLERATION: (
        PostFilterPlugin,
        AwaitingPostFilterPlugin,
        PreEnqueuePlugin,
        EnqueueExtensions,
    ),
    names.NODE_RESOURCES_ALLOCATABLE: (ScorePlugin, ScoreExtensions),
    names.NODE_RESOURCE_TOPOLOGY_MATCH: (
        FilterPlugin,
        ScorePlugin,
        ReservePlugin,
        PostBindPlugin,
        EnqueueExtensions,
    ),
    names.TARGET_LOAD_PACKING: (ScorePlugin,),
    names.LOAD_VARIATION_RISK_BALANCING: (ScorePlugin,),
    names.LOW_RISK_OVER_COMMITMENT: (PreScorePlugin, ScorePlugin),
    names.GANG_SCHEDULING: (
        PreEnqueuePlugin,
        PreFilterPlugin,
        ReservePlugin,
        PermitPlugin,
        EnqueueExtensions,
    ),
    names.COSCHEDULING: (
        PreEnqueuePlugin,
        QueueSortPlugin,
        PreFilterPlugin,
        PostFilterPlugin,
        ReservePlugin,
        PermitPlugin,
        EnqueueExtensions,
    ),
}


# Plugins that cannot be built without args: py-scheduler has no default source of measured load.
REQUIRED_ARGS: dict[str, dict[str, Any]] = {
    name: {"watcherAddress": "http://load-watcher:2020"}
    for name in (
        names.TARGET_LOAD_PACKING,
        names.LOAD_VARIATION_RISK_BALANCING,
        names.LOW_RISK_OVER_COMMITMENT,
    )
}


@pytest.mark.parametrize("name", sorted(IN_TREE_REGISTRY))
def test_registry_builds_every_plugin_with_empty_args(name: str) -> None:
    if name in REQUIRED_ARGS:
        with pytest.raises(PluginArgsError, match=f"^{name}: metricProvider.type: Unsupported value"):
            IN_TREE_REGISTRY[name]({}, FakeHandle())
    plugin = IN_TREE_REGISTRY[name](REQUIRED_ARGS.get(name, {}), FakeHandle())
    assert plugin.name == name
    for point in EXPECTED_POINTS[name]:
        assert isinstance(plugin, point), point
    assert isinstance(plugin, ScoreExtensions) is (ScoreExtensions in EXPECTED_POINTS[name])


@pytest.mark.parametrize(
    "name",
    sorted(
        set(IN_TREE_REGISTRY)
        - {
            names.NODE_AFFINITY,
            names.NODE_RESOURCES_FIT,
            names.NODE_RESOURCES_BALANCED_ALLOCATION,
            names.POD_TOPOLOGY_SPREAD,
            names.DYNAMIC_RESOURCES,
            names.VOLUME_BINDING,
        }
    ),
)
def test_plugins_without_args_reject_args(name: str) -> None:
    with pytest.raises(PluginArgsError, match=f"^{name}: "):
        IN_TREE_REGISTRY[name]({"anything": 1}, FakeHandle())
    with pytest.raises(PluginArgsError, match=f"^{name}: kind: "):
        IN_TREE_REGISTRY[name]({"kind": "NodeResourcesFitArgs"}, FakeHandle())


def test_default_multipoint_matches_upstream_order_and_weights() -> None:
    assert DEFAULT_MULTIPOINT == [
        ("SchedulingGates", 0),
        ("PrioritySort", 0),
        ("NodeName", 0),
        ("NodeUnschedulable", 0),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodePorts", 0),
        ("NodeResourcesFit", 1),
        ("VolumeRestrictions", 0),
        ("NodeVolumeLimits", 0),
        ("VolumeBinding", 0),
        ("VolumeZone", 0),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("DefaultPreemption", 0),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("DefaultBinder", 0),
    ]
    # Coscheduling, CapacityScheduling, PreemptionToleration, NodeResourcesAllocatable,
    # NodeResourceTopologyMatch and the Trimaran plugins are out of tree upstream (scheduler-plugins):
    # registered, never on by default. GangScheduling (GenericWorkload, beta) and NodeDeclaredFeatures
    # (GA) are appended by applyFeatureGates.
    assert {name for name, _ in DEFAULT_MULTIPOINT} == set(IN_TREE_REGISTRY) - {
        names.COSCHEDULING,
        names.CAPACITY_SCHEDULING,
        names.PREEMPTION_TOLERATION,
        names.NODE_RESOURCES_ALLOCATABLE,
        names.NODE_RESOURCE_TOPOLOGY_MATCH,
        names.TARGET_LOAD_PACKING,
        names.LOAD_VARIATION_RISK_BALANCING,
        names.LOW_RISK_OVER_COMMITMENT,
        names.GANG_SCHEDULING,
        names.NODE_DECLARED_FEATURES,
    }


def test_generic_workload_gate_appends_gang_scheduling_to_the_default_profile() -> None:
    """As upstream's applyGangScheduling (under GenericWorkload since v1.37): appended after the
    others, no weight."""
    on = parse_feature_gates("GenericWorkload=true")
    declared = ("NodeDeclaredFeatures", 0)
    assert default_multipoint(on) == [*DEFAULT_MULTIPOINT, declared, ("GangScheduling", 0)]
    assert gated_off(on) == frozenset()
    assert gated_off(parse_feature_gates("")) == {"GangScheduling"}


def test_node_declared_features_is_ga_and_always_in_the_default_profile() -> None:
    """Upstream v1.37.2: applyFeatureGates appends it after DefaultBinder; the gate is locked on."""
    assert default_multipoint(parse_feature_gates(""))[-1] == ("NodeDeclaredFeatures", 0)
    assert gated_off(parse_feature_gates("")) == {"GangScheduling"}


def test_node_name_runs_before_node_unschedulable() -> None:
    """v1.37 swapped them in the default profile: a cordoned node the pod is not pinned to is reported
    by NodeName."""
    order = [name for name, _ in DEFAULT_MULTIPOINT]
    assert order.index("NodeName") + 1 == order.index("NodeUnschedulable")


def test_in_tree_registry_binds_the_volume_gates_only_when_off() -> None:
    assert in_tree_registry(parse_feature_gates("")) == IN_TREE_REGISTRY
    off = in_tree_registry(parse_feature_gates("StorageCapacityScoring=false,VolumeLimitScaling=false"))
    changed = {name for name in off if off[name] is not IN_TREE_REGISTRY[name]}
    assert changed == {"VolumeBinding", "NodeVolumeLimits"}


# --- helpers ------------------------------------------------------------------------------------


def test_go_arithmetic() -> None:
    assert go_div(7, 2) == 3
    assert go_div(-7, 2) == -3
    assert go_div(7, -2) == -3
    assert go_round(2.5) == 3
    assert go_round(3.5) == 4
    assert go_round(-2.5) == -3
    assert go_round(2.4999) == 2


def test_broken_linear_function() -> None:
    # Below the first point the first score, above the last the last score, linear between.
    increasing = broken_linear_function([(10, 1), (90, 9)])
    assert [increasing(p) for p in (-10, 0, 10, 15, 40, 81, 90, 99, 110)] == [1, 1, 1, 1, 4, 8, 9, 9, 9]
    decreasing = broken_linear_function([(10, 9), (90, 1)])
    # Go truncates the negative interpolation toward zero.
    assert [decreasing(p) for p in (-10, 0, 10, 15, 40, 81, 90, 99, 110)] == [9, 9, 9, 9, 6, 2, 1, 1, 1]


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        ([0, 0, 0], False, [0, 0, 0]),
        ([0, 0, 0], True, [100, 100, 100]),
        ([1, 2, 3, 4, 5], False, [20, 40, 60, 80, 100]),
        ([1, 2, 3, 4, 5], True, [80, 60, 40, 20, 0]),
        ([1000, 10, 20, 30], False, [100, 1, 2, 3]),
    ],
)
def test_default_normalize_score(scores: list[int], reverse: bool, expected: list[int]) -> None:
    entries = [NodeScore(str(i), s) for i, s in enumerate(scores)]
    default_normalize_score(100, reverse, entries)
    assert [e.score for e in entries] == expected
