# ruff: noqa: E501  (upstream's case tables read best one case a line)
"""VolumeZone, VolumeRestrictions and NodeVolumeLimits, ported from upstream's table tests (names kept):
``volumezone/volume_zone_test.go``, ``volumerestrictions/volume_restrictions_test.go``,
``nodevolumelimits/csi_test.go``."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import VOLUME_ATTACHMENTS, Code, CycleState, NodeInfo, PodInfo, Status
from scheduler.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from scheduler.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from scheduler.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone
from scheduling_queue.types import ActionType, QueueingHint, Resource
from tests.unit.plugins.plugin_testlib import node, pod
from tests.unit.plugins.volume_testlib import (
    handle,
    pod_with_claims,
    pv,
    pvc,
    storage_class,
    volume_attachment,
)

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = (Code.UnschedulableAndUnresolvable, [ERR_REASON_CONFLICT])


def _status(status: Status | None) -> tuple[Code, list[str]] | None:
    return None if status is None else (status.code, status.reasons)


# --- VolumeZone: TestSingleZone -------------------------------------------------------------------
ZONE_PVS = (
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", labels={BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
)
ZONE_PVCS = tuple(
    pvc(name, "", volume_name=volume)
    for name, volume in (
        ("PVC_1", "Vol_1"),
        ("PVC_2", "Vol_2"),
        ("PVC_3", "Vol_3"),
        ("PVC_4", "Vol_not_exist"),
        ("PVC_Stable_1", "Vol_Stable_1"),
        ("PVC_Stable_2", "Vol_Stable_2"),
        ("PVC_Stable_3", "Vol_Stable_3"),
    )
)


@pytest.mark.parametrize(
    ("name", "claim", "labels", "want"),
    [
        ("pod without volume", None, {BETA_ZONE: "us-west1-a"}, None),
        ("node without labels", "PVC_1", {}, None),
        ("beta zone label matched", "PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None),
        ("beta region label matched", "PVC_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}, None),
        ("beta region label doesn't match", "PVC_2", {BETA_REGION: "no_us-west1", "uselessLabel": "none"}, CONFLICT),
        ("beta zone label doesn't match", "PVC_1", {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"}, CONFLICT),
        ("zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, None),
        ("region label matched", "PVC_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}, None),
        ("region label doesn't match", "PVC_Stable_2", {REGION: "no_us-west1", "uselessLabel": "none"}, CONFLICT),
        ("zone label doesn't match", "PVC_Stable_1", {ZONE: "no_us-west1-a", "uselessLabel": "none"}, CONFLICT),
        ("pv with zone and region, node with only zone", "PVC_Stable_3", {ZONE: "us-west1-a"}, CONFLICT),
        ("pv with zone,node with beta zone", "PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, CONFLICT),
        ("pv with beta label,node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, None),
        ("pv with beta label,node with ga label, don't match", "PVC_1", {ZONE: "us-west1-b"}, CONFLICT),
    ],
)  # fmt: skip
def test_single_zone(name: str, claim: str | None, labels: dict[str, str], want: Any) -> None:
    plugin = VolumeZone({}, handle(pvcs=ZONE_PVCS, pvs=ZONE_PVS))
    target = pod_with_claims("pod_1", *([claim] if claim else []))
    state = CycleState()
    _, status = plugin.pre_filter(state, target, ())
    if claim is None:
        assert status is not None and status.code is Code.Skip
        return
    assert status is None
    assert _status(plugin.filter(state, target, NodeInfo(node("host1", labels=labels)))) == want


def test_multi_zone_labels_and_missing_or_unbound_claims() -> None:
    """TestMultiZone and TestWithBinding: ``__`` joins zones; unbound claims depend on the class."""
    pvs = (pv("Vol_1", labels={BETA_ZONE: "us-west1-a__us-west1-b"}),)
    pvcs = (
        pvc("PVC_1", "", volume_name="Vol_1"),
        pvc("PVC_NoSC", ""),
        pvc("PVC_EmptySC", "Class_0"),
        pvc("PVC_WaitSC", "Class_Wait"),
        pvc("PVC_ImmediateSC", "Class_Immediate"),
        pvc("PVC_4", "", volume_name="Vol_not_exist"),
    )
    classes = (storage_class("Class_Wait"), storage_class("Class_Immediate", "Immediate"))
    plugin = VolumeZone({}, handle(pvcs=pvcs, pvs=pvs, classes=classes))
    for zone, want in (("us-west1-b", None), ("us-west1-c", CONFLICT)):
        state, target = CycleState(), pod_with_claims("p", "PVC_1")
        assert plugin.pre_filter(state, target, ())[1] is None
        assert _status(plugin.filter(state, target, NodeInfo(node("n", labels={BETA_ZONE: zone})))) == want
    unresolvable = Code.UnschedulableAndUnresolvable
    for claim, want in (
        ("PVC_NoSC", (unresolvable, ["PersistentVolumeClaim had no pv name and storageClass name"])),
        ("PVC_EmptySC", (unresolvable, ['storageclass.storage.k8s.io "Class_0" not found'])),
        ("PVC_ImmediateSC", (unresolvable, ["PersistentVolume had no name"])),
        ("PVC_WaitSC", (Code.Skip, [])),
        ("PVC_4", (unresolvable, ['persistentvolume "Vol_not_exist" not found'])),
        ("PVC_missing", (unresolvable, ['persistentvolumeclaim "PVC_missing" not found'])),
    ):
        assert _status(plugin.pre_filter(CycleState(), pod_with_claims("p", claim), ())[1]) == want, claim
    hint = plugin.is_schedulable_after_pv_change
    raw = pod_with_claims("p", "PVC_1").pod
    assert (
        hint(raw, pvs[0], {**pvs[0], "metadata": {**pvs[0]["metadata"], "labels": {ZONE: "x"}}})
        is QueueingHint.Queue
    )
    assert hint(raw, pvs[0], pvs[0]) is QueueingHint.Skip
    assert plugin.is_schedulable_after_storage_class_added(raw, None, classes[0]) is QueueingHint.Queue
    assert plugin.is_schedulable_after_storage_class_added(raw, None, classes[1]) is QueueingHint.Skip


# --- VolumeRestrictions ---------------------------------------------------------------------------
def _with_volumes(name: str, *volumes: dict[str, Any], node_name: str = "") -> dict[str, Any]:
    raw = pod(name, extra_spec={"volumes": list(volumes)})
    raw["metadata"]["namespace"] = "default"
    if node_name:
        raw["spec"]["nodeName"] = node_name
    return raw


def _run_restrictions(plugin: VolumeRestrictions, target: PodInfo, node_info: NodeInfo) -> Any:
    state = CycleState()
    _, status = plugin.pre_filter(state, target, ())
    if status is not None:
        return _status(status)
    return _status(plugin.filter(state, target, node_info))


DISK = (Code.Unschedulable, [ERR_REASON_DISK_CONFLICT])


@pytest.mark.parametrize(
    ("kind", "volume_a", "volume_b", "read_only_conflicts"),
    [
        ("GCEDisk", {"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}}, False),
        ("AWSDisk", {"awsElasticBlockStore": {"volumeID": "foo"}}, {"awsElasticBlockStore": {"volumeID": "bar"}}, True),
        (
            "RBDDisk",
            {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}},
            {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar"}},
            False,
        ),
        (
            "ISCSIDisk",
            {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}},
            {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}},
            False,
        ),
    ],
)  # fmt: skip
def test_disk_conflicts(
    kind: str, volume_a: dict[str, Any], volume_b: dict[str, Any], read_only_conflicts: bool
) -> None:
    """TestGCEDiskConflicts and friends: "nothing", "one state", "same state", "different state"."""
    plugin = VolumeRestrictions({}, handle())
    a, b = {"name": "a", **volume_a}, {"name": "b", **volume_b}
    pod_a = PodInfo(_with_volumes("pa", a))
    cases = [
        ("nothing", PodInfo(_with_volumes("x")), NodeInfo(node("n")), None),
        ("one state", pod_a, NodeInfo(node("n")), None),
        ("same state", pod_a, _node_with(_with_volumes("e", a)), DISK),
        ("different state", pod_a, _node_with(_with_volumes("e", b)), None),
    ]
    for name, target, node_info, want in cases:
        got = _run_restrictions(plugin, target, node_info)
        assert got == (want if want else (None if name != "nothing" else (Code.Skip, []))), name
    # Both read-only: only EBS still conflicts.
    source = next(k for k in volume_a if k != "name")
    ro = {"name": "a", source: {**volume_a[source], "readOnly": True}}
    got = _run_restrictions(plugin, PodInfo(_with_volumes("pa", ro)), _node_with(_with_volumes("e", ro)))
    assert got == (DISK if read_only_conflicts else None)


def _node_with(*pods: dict[str, Any]) -> NodeInfo:
    info = NodeInfo(node("n"))
    for raw in pods:
        info.add_pod(PodInfo(raw))
    return info


RWOP = (Code.Unschedulable, [ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT])


@pytest.mark.parametrize(
    ("name", "claims", "want"),
    [
        ("nothing", (), (Code.Skip, [])),
        ("failed to get PVC", ("claim-missing",), (Code.UnschedulableAndUnresolvable, ['persistentvolumeclaim "claim-missing" not found'])),
        ("no access mode conflict", ("claim-with-rwop-1",), (Code.Skip, [])),
        ("access mode conflict, unschedulable", ("claim-with-rwop-0",), RWOP),
        ("two conflicts, unschedulable", ("claim-with-rwop-0", "claim-with-rwop-2"), RWOP),
    ],
)  # fmt: skip
def test_access_mode_conflicts(name: str, claims: tuple[str, ...], want: Any) -> None:
    pvcs = tuple(pvc(f"claim-with-rwop-{i}", access_modes=("ReadWriteOncePod",)) for i in range(3))
    # Pods on other nodes hold claims 0 and 2: ReadWriteOncePod is exclusive cluster-wide.
    elsewhere = _node_with(
        _with_volumes("holder-0", {"name": "v", "persistentVolumeClaim": {"claimName": "claim-with-rwop-0"}}, node_name="n"),
        _with_volumes("holder-2", {"name": "v", "persistentVolumeClaim": {"claimName": "claim-with-rwop-2"}}, node_name="n"),
    )  # fmt: skip
    plugin = VolumeRestrictions({}, handle(nodes=(elsewhere,), pvcs=pvcs))
    assert _run_restrictions(plugin, pod_with_claims("p", *claims), NodeInfo(node("other"))) == want


def test_restriction_add_remove_pod() -> None:
    """PreFilterExtensions (upstream AddPod/RemovePod): a what-if run that removes the holder of the
    claim clears the conflict, adding it back restores it; pods of other namespaces never count."""
    pvcs = (pvc("rwop", access_modes=("ReadWriteOncePod",)),)
    holder_raw = _with_volumes(
        "holder", {"name": "v", "persistentVolumeClaim": {"claimName": "rwop"}}, node_name="n"
    )
    holder = PodInfo(holder_raw)
    plugin = VolumeRestrictions({}, handle(nodes=(_node_with(holder_raw),), pvcs=pvcs))
    target = pod_with_claims("p", "rwop")
    state = CycleState()
    assert plugin.pre_filter(state, target, ()) == (None, None)
    free = NodeInfo(node("free"))
    assert _status(plugin.filter(state, target, free)) == RWOP
    what_if = state.clone()
    assert plugin.remove_pod(what_if, target, holder, free) is None
    assert plugin.filter(what_if, target, free) is None
    assert _status(plugin.filter(state, target, free)) == RWOP  # the clone did not leak back
    assert plugin.add_pod(what_if, target, holder, free) is None
    assert _status(plugin.filter(what_if, target, free)) == RWOP
    stranger_raw = _with_volumes("s", {"name": "v", "persistentVolumeClaim": {"claimName": "rwop"}})
    stranger_raw["metadata"]["namespace"] = "elsewhere"
    assert plugin.remove_pod(what_if, target, PodInfo(stranger_raw), free) is None
    assert _status(plugin.filter(what_if, target, free)) == RWOP
    # No PreFilter state: an error, as upstream.
    status = plugin.add_pod(CycleState(), target, holder, free)
    assert status is not None and status.code is Code.Error


def test_restriction_hints() -> None:
    plugin = VolumeRestrictions({}, handle())
    target = _with_volumes("p", {"name": "v", "persistentVolumeClaim": {"claimName": "c"}})
    holder = _with_volumes("h", {"name": "v", "persistentVolumeClaim": {"claimName": "c"}}, node_name="n")
    stranger = _with_volumes(
        "s", {"name": "v", "persistentVolumeClaim": {"claimName": "other"}}, node_name="n"
    )
    assert plugin.is_schedulable_after_assigned_pod_deleted(target, holder, None) is QueueingHint.Queue
    assert plugin.is_schedulable_after_assigned_pod_deleted(target, stranger, None) is QueueingHint.Skip
    assert plugin.is_schedulable_after_pvc_added(target, None, pvc("c")) is QueueingHint.Queue
    assert plugin.is_schedulable_after_pvc_added(target, None, pvc("d")) is QueueingHint.Skip
    # v1.37.2's registrations: the delete hint listens to AssignedPod deletes (v1.36: any Pod delete).
    assert [(e.event.resource, e.event.action) for e in plugin.events_to_register()] == [
        (Resource.AssignedPod, ActionType.Delete),
        (Resource.Node, ActionType.Add),
        (Resource.PersistentVolumeClaim, ActionType.Add),
    ]


# --- NodeVolumeLimits (TestCSILimits, the cases that need no CSI translation) ---------------------
def _csi_node(name: str, limits: dict[str, int]) -> dict[str, Any]:
    drivers = [{"name": d, "nodeID": name, "allocatable": {"count": c}} for d, c in limits.items()]
    return {"metadata": {"name": name}, "spec": {"drivers": drivers}}


def _limits_setup(limit: int) -> tuple[NodeVolumeLimits, NodeInfo]:
    pvs = tuple(pv(f"csi-ebs.csi.aws.com-{i}", "", csi=("ebs.csi.aws.com", f"vol-{i}")) for i in range(4))
    pvcs = tuple(
        pvc(f"csi-ebs.csi.aws.com-{i}", "", volume_name=f"csi-ebs.csi.aws.com-{i}") for i in range(4)
    )
    pvcs += (pvc("csi-ebs.csi.aws.com-dyn", "csi-sc"), pvc("pvc-other", "other-sc"))
    classes = (
        storage_class("csi-sc", provisioner="ebs.csi.aws.com"),
        storage_class("other-sc", provisioner="other"),
    )
    existing = _with_volumes(
        "existing",
        *({"name": f"v{i}", "persistentVolumeClaim": {"claimName": f"csi-ebs.csi.aws.com-{i}"}} for i in range(2)),
        node_name="node-for-csi",
    )  # fmt: skip
    info = _node_with(existing)
    fh = handle(
        nodes=(info,),
        pvs=pvs,
        pvcs=pvcs,
        classes=classes,
        csi_nodes=(_csi_node("n", {"ebs.csi.aws.com": limit}),),
    )
    return NodeVolumeLimits({}, fh), info


@pytest.mark.parametrize(
    ("name", "limit", "claims", "want"),
    [
        ("fits when node volume limit >= new pods CSI volume", 4, ("csi-ebs.csi.aws.com-2",), None),
        ("doesn't when node volume limit <= pods CSI volume", 2, ("csi-ebs.csi.aws.com-2",), (Code.Unschedulable, [ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED])),
        ("should count pending PVCs towards volume limit <= pods CSI volume", 2, ("csi-ebs.csi.aws.com-dyn",), (Code.Unschedulable, [ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED])),
        ("count the same volume once", 2, ("csi-ebs.csi.aws.com-0",), None),
        ("other drivers are not limited", 2, ("pvc-other",), None),
        ("missing claim", 2, ("nope",), (Code.UnschedulableAndUnresolvable, ['looking up PVC default/nope: persistentvolumeclaim "nope" not found'])),
    ],
)  # fmt: skip
def test_csi_limits(name: str, limit: int, claims: tuple[str, ...], want: Any) -> None:
    plugin, info = _limits_setup(limit)
    target = pod_with_claims("p", *claims)
    assert plugin.pre_filter(CycleState(), target, ())[1] is None
    assert _status(plugin.filter(CycleState(), target, info)) == want


def test_csi_limits_skip_pods_without_claims_and_hints() -> None:
    plugin, _ = _limits_setup(2)
    status = plugin.pre_filter(CycleState(), PodInfo(_with_volumes("p", {"name": "e", "emptyDir": {}})), ())[
        1
    ]
    assert status is not None and status.code is Code.Skip
    old, new = _csi_node("n", {"d": 1}), _csi_node("n", {"d": 2})
    raw = pod_with_claims("p", "c").pod
    assert plugin.is_schedulable_after_csinode_updated(raw, old, new) is QueueingHint.Queue
    assert plugin.is_schedulable_after_csinode_updated(raw, new, old) is QueueingHint.Skip
    holder = _with_volumes("h", {"name": "v", "persistentVolumeClaim": {"claimName": "x"}}, node_name="n")
    assert plugin.is_schedulable_after_assigned_pod_deleted(raw, holder, None) is QueueingHint.Queue
    assert (
        plugin.is_schedulable_after_assigned_pod_deleted(raw, _with_volumes("h", node_name="n"), None)
        is QueueingHint.Skip
    )


# --- NodeVolumeLimits: VolumeLimitScaling (TestCSILimitsWithVolumeLimitScaling, v1.37.2) ---------------
@pytest.mark.parametrize(
    ("name", "gate", "driver_on_node", "driver_object", "want"),
    [
        ("gate enabled - allow scheduling when CSIDriver exists but PreventPodSchedulingIfMissing is not set", True, False, {}, None),
        ("gate enabled - fail when driver not installed and PreventPodSchedulingIfMissing is true", True, False, {"preventPodSchedulingIfMissing": True},
         (Code.Unschedulable, ["ebs.csi.aws.com CSI driver is not installed on the node"])),
        ("gate disabled - skip driver presence check (regardless of CSIDriver presence)", False, False, {"preventPodSchedulingIfMissing": True}, None),
        ("gate enabled - driver installed within limit", True, True, {"preventPodSchedulingIfMissing": True}, None),
        ("gate enabled - allow scheduling when CSIDriver object missing", True, False, None, None),
    ],
)  # fmt: skip
def test_csi_limits_with_volume_limit_scaling(
    name: str, gate: bool, driver_on_node: bool, driver_object: dict[str, Any] | None, want: Any
) -> None:
    csi_node = _csi_node("n", {"ebs.csi.aws.com": 2} if driver_on_node else {"other.csi": 2})
    drivers = (
        () if driver_object is None else ({"metadata": {"name": "ebs.csi.aws.com"}, "spec": driver_object},)
    )
    fh = handle(
        pvcs=(pvc("dyn", "csi-sc"),),
        classes=(storage_class("csi-sc", provisioner="ebs.csi.aws.com"),),
        csi_nodes=(csi_node,),
        drivers=drivers,
    )
    plugin = NodeVolumeLimits({}, fh, volume_limit_scaling=gate)
    target = pod_with_claims("p", "dyn")
    assert plugin.pre_filter(CycleState(), target, ())[1] is None
    assert _status(plugin.filter(CycleState(), target, _node_with())) == want


# --- NodeVolumeLimits: volumes attached to the node (getNodeVolumeAttachmentInfo, v1.37.2) -------------
EBS = "ebs.csi.aws.com"
EXCEEDED = (Code.Unschedulable, [ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED])


def _attachments_setup(
    limit: int, attachments: tuple[dict[str, Any], ...], *pods_on_node: dict[str, Any]
) -> tuple[NodeVolumeLimits, NodeInfo, Any]:
    """Node "n" allows ``limit`` EBS volumes; PVs csi-0..3 are EBS, "in-tree" is not CSI; claim c-i is
    bound to csi-i."""
    pvs = (*(pv(f"csi-{i}", "", csi=(EBS, f"vol-{i}")) for i in range(4)), pv("in-tree", ""))
    pvcs = tuple(pvc(f"c-{i}", "", volume_name=f"csi-{i}") for i in range(4))
    info = _node_with(*pods_on_node)
    fh = handle(
        nodes=(info,),
        pvs=pvs,
        pvcs=pvcs,
        csi_nodes=(_csi_node("n", {EBS: limit}),),
        attachments=attachments,
    )
    return NodeVolumeLimits({}, fh), info, fh


def _pod_on_n(name: str, *claims: str) -> dict[str, Any]:
    volumes = ({"name": f"v-{c}", "persistentVolumeClaim": {"claimName": c}} for c in claims)
    return _with_volumes(name, *volumes, node_name="n")


def _limit_verdict(plugin: NodeVolumeLimits, info: NodeInfo, *claims: str) -> Any:
    target = pod_with_claims("p", *claims)
    state = CycleState()
    assert plugin.pre_filter(state, target, ())[1] is None
    return _status(plugin.filter(state, target, info))


def test_volume_attachment_only_volumes_count() -> None:
    one = (volume_attachment("va-0", "n", "csi-0", EBS),)
    two = (*one, volume_attachment("va-1", "n", "csi-1", EBS))
    assert _limit_verdict(_attachments_setup(2, one)[0], _node_with(), "c-2") is None
    plugin, info, _ = _attachments_setup(2, two)
    assert _limit_verdict(plugin, info, "c-2") == EXCEEDED
    # Attached elsewhere: not this node's.
    elsewhere = tuple(volume_attachment(f"va-{i}", "m", f"csi-{i}", EBS) for i in range(2))
    plugin, info, _ = _attachments_setup(2, elsewhere)
    assert _limit_verdict(plugin, info, "c-2") is None


def test_volume_attachment_of_a_pods_volume_counts_once() -> None:
    holder = _pod_on_n("holder", "c-0", "c-1")
    same = (volume_attachment("va-0", "n", "csi-0", EBS), volume_attachment("va-1", "n", "csi-1", EBS))
    plugin, info, _ = _attachments_setup(3, same, holder)
    assert _limit_verdict(plugin, info, "c-2") is None
    other = (*same, volume_attachment("va-3", "n", "csi-3", EBS))
    plugin, info, _ = _attachments_setup(3, other, holder)
    assert _limit_verdict(plugin, info, "c-2") == EXCEEDED


def test_new_volume_attached_only_through_a_volume_attachment_counts_again() -> None:
    # Upstream takes only the node's pods' volumes off the new pod's: one attached by a
    # VolumeAttachment alone is counted both as attached and as new.
    plugin, info, _ = _attachments_setup(1, (volume_attachment("va-0", "n", "csi-0", EBS),))
    assert _limit_verdict(plugin, info, "c-0") == EXCEEDED
    plugin, info, _ = _attachments_setup(1, (), _pod_on_n("holder", "c-0"))
    assert _limit_verdict(plugin, info, "c-0") is None


@pytest.mark.parametrize(
    ("name", "attachment", "want"),
    [
        ("counted: attacher and a CSI PV", volume_attachment("va", "n", "csi-0", EBS), EXCEEDED),
        ("skipped: no attacher", volume_attachment("va", "n", "csi-0", ""), None),
        ("skipped: no PV name", volume_attachment("va", "n", None, EBS), None),
        ("skipped: PV missing", volume_attachment("va", "n", "gone", EBS), None),
        ("skipped: PV not CSI", volume_attachment("va", "n", "in-tree", EBS), None),
    ],
)
def test_volume_attachments_skipped(name: str, attachment: dict[str, Any], want: Any) -> None:
    plugin, info, _ = _attachments_setup(1, (attachment,))
    assert _limit_verdict(plugin, info, "c-2") == want


def test_verdict_follows_volume_attachments_of_the_node() -> None:
    """The per-node memo must not outlive a VolumeAttachment's arrival or departure."""
    plugin, info, fh = _attachments_setup(1, ())
    assert _limit_verdict(plugin, info, "c-2") is None
    attachments = fh.lister(VOLUME_ATTACHMENTS)
    attachments.add(volume_attachment("va-0", "n", "csi-0", EBS))
    assert _limit_verdict(plugin, info, "c-2") == EXCEEDED
    attachments.delete("va-0")
    assert _limit_verdict(plugin, info, "c-2") is None


def test_volume_attachment_deleted_hint() -> None:
    plugin, _, _ = _attachments_setup(1, ())
    registered = {(e.event.resource, e.event.action): e.hint for e in plugin.events_to_register()}
    # v1.37.2's csi.go registrations (the pod delete is an AssignedPod delete; v1.36: any Pod delete).
    assert list(registered) == [
        (Resource.CSINode, ActionType.Add),
        (Resource.CSINode, ActionType.Update),
        (Resource.AssignedPod, ActionType.Delete),
        (Resource.PersistentVolumeClaim, ActionType.Add),
        (Resource.VolumeAttachment, ActionType.Delete),
    ]
    hint = registered[(Resource.VolumeAttachment, ActionType.Delete)]
    assert hint == plugin.is_schedulable_after_volume_attachment_deleted
    ebs_va = volume_attachment("va", "n", "csi-0", EBS)
    other_va = volume_attachment("va", "n", "csi-0", "other.csi")
    with_claim = pod_with_claims("p", "c-0").pod
    assert hint(with_claim, ebs_va, None) is QueueingHint.Queue
    assert hint(with_claim, other_va, None) is QueueingHint.Queue
    ephemeral = pod_with_claims("p", ephemeral=("scratch",)).pod
    assert hint(ephemeral, ebs_va, None) is QueueingHint.Skip
    empty_dir = _with_volumes("p", {"name": "e", "emptyDir": {}})
    assert hint(empty_dir, ebs_va, None) is QueueingHint.Skip
    inline = _with_volumes("p", {"name": "d", "awsElasticBlockStore": {"volumeID": "vol-9"}})
    assert hint(inline, ebs_va, None) is QueueingHint.Queue
    assert hint(inline, other_va, None) is QueueingHint.Skip
