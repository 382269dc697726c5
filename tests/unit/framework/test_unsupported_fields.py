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


# One volume or spec field per guarded field, so any two can be combined in one pod.
_USES: dict[str, tuple[dict[str, Any] | None, dict[str, Any]]] = {
    "persistentVolumeClaim": ({"name": "a", "persistentVolumeClaim": {"claimName": "c"}}, {}),
    "ephemeral": ({"name": "b", "ephemeral": {"volumeClaimTemplate": {}}}, {}),
    "rbd": ({"name": "c", "rbd": {"image": "x"}}, {}),
    "gcePersistentDisk": ({"name": "d", "gcePersistentDisk": {"pdName": "x"}}, {}),
    "azureDisk": ({"name": "e", "azureDisk": {"diskName": "x"}}, {}),
    "resourceClaims": (None, {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}),
    "schedulingGroup": (None, {"schedulingGroup": {"podGroupName": "g"}}),
    "workloadRef": (None, {"workloadRef": {"name": "w"}}),
}


def _pod_using(*names: str) -> PodInfo:
    volumes = [_USES[n][0] for n in names if _USES[n][0] is not None]
    spec: dict[str, Any] = {"volumes": [{"name": "token", "projected": {"sources": []}}, *volumes]}
    for name in names:
        spec.update(_USES[name][1])
    return _pod(**spec)


def _declared_first(guard: UnsupportedFieldGuard, *names: str) -> str:
    """The field of the first declaration (in GUARDED_FIELDS order) that any of ``names`` falls under."""
    for guarded in guard.guarded:
        for name in names:
            if name in guarded.volume_sources or (name in guarded.field and guarded.spec_uses is not None):
                return guarded.field
    raise AssertionError(f"no guarded field covers {names}")


@pytest.mark.parametrize("available", [(), set(IN_TREE_REGISTRY) - {"GangScheduling"}])
def test_a_pod_using_two_guarded_fields_is_refused_naming_the_first_declared(available: Any) -> None:
    guard = UnsupportedFieldGuard(available_plugins=available)
    covered = {n for n in _USES if any(n in g.volume_sources or n in g.field for g in guard.guarded)}
    for first in sorted(covered):
        for second in sorted(covered - {first}):
            status = guard.check(_pod_using(first, second))
            assert status is not None, (first, second)
            assert status.message().startswith(f"pod uses {_declared_first(guard, first, second)}, ")


def test_two_guarded_fields_name_the_earlier_declaration_whatever_the_volume_order() -> None:
    guard = UnsupportedFieldGuard(available_plugins=())
    for names in (("resourceClaims", "azureDisk"), ("azureDisk", "resourceClaims")):
        status = guard.check(_pod_using(*names))
        assert status is not None
        assert status.message() == (
            "pod uses gcePersistentDisk, awsElasticBlockStore, azureDisk, azureFile, cinder, vsphereVolume "
            "or portworxVolume volumes, which py-scheduler does not support yet "
            "(NodeVolumeLimits in-tree to CSI translation)"
        )
    # gcePersistentDisk is guarded twice: the VolumeRestrictions declaration comes first.
    status = guard.check(_pod_using("gcePersistentDisk", "persistentVolumeClaim"))
    assert status is not None and status.message().startswith("pod uses persistentVolumeClaim volumes, ")
    status = guard.check(_pod_using("gcePersistentDisk", "workloadRef"))
    assert status is not None and status.message().endswith("(VolumeRestrictions)")


def test_a_pod_with_only_projected_config_map_secret_and_empty_dir_volumes_passes_every_guard() -> None:
    plain = _pod(
        volumes=[
            {
                "name": "kube-api-access-x",
                "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
            },
            {"name": "c", "configMap": {"name": "x"}},
            {"name": "s", "secret": {"secretName": "x"}},
            {"name": "e", "emptyDir": {}},
        ]
    )
    assert UnsupportedFieldGuard(available_plugins=()).check(plain) is None
    assert UnsupportedFieldGuard(available_plugins=IN_TREE_REGISTRY).check(plain) is None
