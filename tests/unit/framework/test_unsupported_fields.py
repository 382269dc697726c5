"""The fail-closed guard: fields no plugin of this build implements refuse the pod, naming them."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.runtime import Framework, PluginSet
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.framework.unsupported import UNSUPPORTED_FIELDS_PLUGIN, UnsupportedFieldGuard
from scheduler.plugins.registry import IN_TREE_REGISTRY
from tests.unit.plugins.plugin_testlib import node, pod


def _pod(**spec: Any) -> PodInfo:
    return PodInfo(pod("p", extra_spec=spec))


def test_group_members_are_refused_while_the_gang_gates_are_off() -> None:
    """GangScheduling is in the registry, but its feature gate holds it off: the guard names the field
    and the flags that turn it on."""
    spec = {"schedulingGroup": {"podGroupName": "g"}}
    status = UnsupportedFieldGuard(available_plugins=set(IN_TREE_REGISTRY) - {"GangScheduling"}).check(
        _pod(**spec)
    )
    assert status is not None and status.code is Code.UnschedulableAndUnresolvable
    assert status.message() == (
        "pod uses schedulingGroup, which py-scheduler honours only with "
        "--feature-gates=GenericWorkload=true (GangScheduling)"
    )
    assert UnsupportedFieldGuard(available_plugins=IN_TREE_REGISTRY).check(_pod(**spec)) is None


@pytest.mark.parametrize(
    ("spec", "field", "plugin"),
    [
        (
            {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]},
            "persistentVolumeClaim",
            "VolumeBinding",
        ),
        (
            {"volumes": [{"name": "d", "ephemeral": {"volumeClaimTemplate": {}}}]},
            "ephemeral",
            "VolumeBinding",
        ),
        (
            {"volumes": [{"name": "d", "azureDisk": {"diskName": "x"}}]},
            "azureDisk",
            "NodeVolumeLimits in-tree to CSI translation",
        ),
        ({"volumes": [{"name": "d", "rbd": {"image": "x"}}]}, "rbd", "VolumeRestrictions"),
        (
            {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]},
            "resourceClaims",
            "DynamicResources",
        ),
    ],
)
def test_guard_names_field_and_missing_plugin(spec: dict[str, Any], field: str, plugin: str) -> None:
    status = UnsupportedFieldGuard(available_plugins=()).check(_pod(**spec))
    assert status is not None
    assert status.code is Code.UnschedulableAndUnresolvable
    assert status.plugin == UNSUPPORTED_FIELDS_PLUGIN
    assert field in status.message() and f"({plugin})" in status.message()
    assert "does not support yet" in status.message()


def test_plain_volumes_pass_and_available_plugins_lift_the_guard() -> None:
    plain = _pod(volumes=[{"name": "d", "emptyDir": {}}, {"name": "c", "configMap": {"name": "x"}}])
    assert UnsupportedFieldGuard(available_plugins=()).check(plain) is None
    pvc = _pod(volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}])
    assert UnsupportedFieldGuard(available_plugins={"VolumeBinding"}).check(pvc) is None


def test_registered_volume_plugins_leave_only_inline_in_tree_cloud_disks_guarded() -> None:
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    guard = UnsupportedFieldGuard(available_plugins=IN_TREE_REGISTRY)
    for source in ("persistentVolumeClaim", "ephemeral", "csi", "rbd", "iscsi"):
        assert guard.check(_pod(volumes=[{"name": "d", source: {}}])) is None, source
    for source in ("gcePersistentDisk", "awsElasticBlockStore", "azureDisk", "cinder", "portworxVolume"):
        status = guard.check(_pod(volumes=[{"name": "d", source: {}}]))
        assert status is not None and source in status.message(), source


def test_framework_rejects_at_prefilter_before_any_plugin_runs() -> None:
    calls: list[str] = []

    class Recorder:
        name = "Recorder"

        def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Any) -> tuple[None, None]:
            calls.append(pod.key)
            return None, None

    fwk = Framework(
        "py-scheduler",
        PluginSet(pre_filter=[Recorder()]),
        score_weights={},
        guard=UnsupportedFieldGuard(available_plugins=()),
    )
    claim = _pod(resourceClaims=[{"name": "gpu", "resourceClaimName": "c"}])
    _, status = fwk.run_pre_filter(CycleState(), claim, [NodeInfo(node("n1"))])
    assert status is not None and status.code is Code.UnschedulableAndUnresolvable
    assert calls == []
    _, status = fwk.run_pre_filter(CycleState(), _pod(), [NodeInfo(node("n1"))])
    assert status is None and calls == ["default/p"]
