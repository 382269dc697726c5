"""NodeDeclaredFeatures: cases of upstream's nodedeclaredfeatures_test.go (v1.37.2) with the registry's
real features, plus the plugin inside a whole default profile."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from scheduler.app.event_handlers import node_update_actions
from scheduler.cache import SchedulerCache
from scheduler.cycle.algorithm import SchedulingAlgorithm
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo
from scheduler.plugins.nodedeclaredfeatures import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    VOLUME_BIND_MOUNT_OPTIONS,
    NodeDeclaredFeatures,
    required_features,
)
from scheduling_queue.types import ActionType, QueueingHint, Resource
from tests.unit.fakes import PROFILE, build_frameworks
from tests.unit.plugins.plugin_testlib import node, node_info, pod, run_filter

RESTART_RULE = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}


def restart_all_pod(name: str = "p", *, init: bool = False) -> dict[str, Any]:
    p = pod(name, requests=[{"cpu": "100m"}])
    container = p["spec"]["containers"][0]
    target = container
    if init:
        target = {"name": "init", "image": "busybox", "restartPolicy": "Never"}
        p["spec"]["initContainers"] = [target]
    target["restartPolicyRules"] = [RESTART_RULE]
    return p


def declaring(name: str, *features: str, **kwargs: Any) -> dict[str, Any]:
    n = node(name, allocatable={"cpu": "4", "memory": "8Gi"}, **kwargs)
    n["status"]["declaredFeatures"] = list(features)
    return n


def test_requirements_are_inferred_from_the_spec() -> None:
    assert required_features(pod("plain")["spec"]) == frozenset()
    assert required_features(restart_all_pod()["spec"]) == {RESTART_ALL_CONTAINERS}
    assert required_features(restart_all_pod(init=True)["spec"]) == {RESTART_ALL_CONTAINERS}
    other_action = pod("p")
    other_action["spec"]["containers"][0]["restartPolicyRules"] = [{"action": "Restart"}]
    assert required_features(other_action["spec"]) == frozenset()
    userns = {"hostNetwork": True, "hostUsers": False, "containers": []}
    assert required_features(userns) == {USER_NAMESPACES_HOST_NETWORK}
    # hostUsers unset means true: no user namespace, nothing needed.
    assert required_features({"hostNetwork": True, "containers": []}) == frozenset()
    assert required_features({"hostUsers": False, "containers": []}) == frozenset()
    both = {**restart_all_pod()["spec"], "hostNetwork": True, "hostUsers": False}
    assert required_features(both) == {RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK}
    # v0.37's registry: a volume mount with bindMountOptions needs VolumeBindMountOptions.
    for key in ("containers", "initContainers", "ephemeralContainers"):
        mounts = [{"name": "v", "mountPath": "/v", "bindMountOptions": ["nosuid"]}]
        spec = {"containers": [], key: [{"name": "c", "volumeMounts": mounts}]}
        assert required_features(spec) == {VOLUME_BIND_MOUNT_OPTIONS}, key
    plain_mount = {"containers": [{"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]}
    assert required_features(plain_mount) == frozenset()


@pytest.mark.parametrize(
    ("declared", "fits"),
    [
        ([RESTART_ALL_CONTAINERS, "ExtendWebSocketsToKubelet"], True),  # node matches requirements
        (["ExtendWebSocketsToKubelet"], False),  # node does not match
        ([], False),  # node has no declared features
        ([RESTART_ALL_CONTAINERS, "SomethingThisRegistryDoesNotKnow"], True),  # unknown names ignored
    ],
)
def test_filter(declared: list[str], fits: bool) -> None:
    plugin = NodeDeclaredFeatures()
    status = run_filter(plugin, restart_all_pod(), node_info(declaring("n1", *declared)))
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.UnschedulableAndUnresolvable
        assert status.reasons == [ERR_REASON_UNSATISFIED_REQUIREMENTS]


def test_a_pod_needing_some_but_not_all_features_is_refused() -> None:
    spec_pod = restart_all_pod()
    spec_pod["spec"].update(hostNetwork=True, hostUsers=False)
    status = run_filter(NodeDeclaredFeatures(), spec_pod, node_info(declaring("n1", RESTART_ALL_CONTAINERS)))
    assert status is not None and status.code is Code.UnschedulableAndUnresolvable


def test_pre_filter_skips_pods_that_need_nothing() -> None:
    result, status = NodeDeclaredFeatures().pre_filter(CycleState(), PodInfo(pod("plain")), [])
    assert result is None and status is not None and status.code is Code.Skip


def test_filter_without_pre_filter_state_is_an_error() -> None:
    info = node_info(declaring("n"))
    status = NodeDeclaredFeatures().filter(CycleState(), PodInfo(restart_all_pod()), info)
    assert status is not None and status.code is Code.Error


def test_hints() -> None:
    plugin = NodeDeclaredFeatures()
    target = restart_all_pod()
    old, new = declaring("n", "ExtendWebSocketsToKubelet"), declaring("n", RESTART_ALL_CONTAINERS)
    assert plugin.is_schedulable_after_node_change(target, None, new) is QueueingHint.Queue
    assert plugin.is_schedulable_after_node_change(target, old, new) is QueueingHint.Queue
    assert plugin.is_schedulable_after_node_change(target, new, copy.deepcopy(new)) is QueueingHint.Skip
    assert node_update_actions(old, new) == ActionType.UpdateNodeDeclaredFeature

    without = copy.deepcopy(target)
    del without["spec"]["containers"][0]["restartPolicyRules"]
    assert plugin.is_schedulable_after_target_pod_update(target, target, without) is QueueingHint.Queue
    relabelled = copy.deepcopy(target)
    relabelled["metadata"]["labels"] = {"x": "y"}
    assert plugin.is_schedulable_after_target_pod_update(target, target, relabelled) is QueueingHint.Skip
    other = restart_all_pod("other")
    other_without = copy.deepcopy(other)
    del other_without["spec"]["containers"][0]["restartPolicyRules"]
    # v1.37.2 compares the updated pod's requirements whoever it is (no uid check, v1.36 skipped): a
    # TargetPod event of another pending pod replayed from the in-flight log queues when its changed.
    assert plugin.is_schedulable_after_target_pod_update(target, other, other_without) is QueueingHint.Queue
    assert plugin.is_schedulable_after_target_pod_update(target, other, copy.deepcopy(other)) is (
        QueueingHint.Skip
    )
    registered = [(e.event.resource, e.event.action) for e in plugin.events_to_register()]
    assert registered == [
        (Resource.Node, ActionType.Add | ActionType.UpdateNodeDeclaredFeature),
        (Resource.TargetPod, ActionType.Update),
    ]


def test_in_the_default_profile_only_declaring_nodes_fit_and_the_message_is_upstreams() -> None:
    cache = SchedulerCache()
    cache.add_node(declaring("plain-0"))
    cache.add_node(declaring("plain-1"))
    cache.add_node(declaring("able", RESTART_ALL_CONTAINERS))
    snapshot = cache.snapshot()
    fwk = build_frameworks(lambda: snapshot, None, lambda: 0.0)[PROFILE]
    assert "NodeDeclaredFeatures" in [p.name for p in fwk.plugins.filter]
    algorithm = SchedulingAlgorithm(rng=random.Random(0))

    needs = restart_all_pod("needs")
    needs["spec"]["schedulerName"] = PROFILE
    result = algorithm.schedule_pod(fwk, CycleState(), PodInfo(needs), snapshot)
    assert result.node_name == "able"

    cache.remove_node(declaring("able"))
    cache.update_snapshot(snapshot)
    with pytest.raises(FitError) as info:
        algorithm.schedule_pod(fwk, CycleState(), PodInfo(needs), snapshot)
    assert info.value.message() == "0/2 nodes are available: 2 node(s) didn't match Pod's required features."
