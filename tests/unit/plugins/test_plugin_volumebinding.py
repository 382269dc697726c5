"""VolumeBinding, ported from upstream's ``volumebinding/volume_binding_test.go`` (case names kept)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, Code, CycleState, Status
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from scheduling_queue.types import QueueingHint
from tests.unit.plugins.volume_testlib import (
    HOSTNAME,
    WAIT_SC,
    handle,
    labelled_node,
    pod_with_claims,
    pv,
    pvc,
    storage_class,
)

UNRESOLVABLE = Code.UnschedulableAndUnresolvable
REGION, ZONE = "topology.kubernetes.io/region", "topology.kubernetes.io/zone"
# Upstream's tests score with this shape (defaultShapePoint), not the API default: fuller is better.
TEST_SHAPE = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}


def _status(status: Status | None) -> tuple[Code, list[str]] | None:
    return None if status is None else (status.code, status.reasons)


CASES: list[dict[str, Any]] = [
    {"name": "pod has not pvcs", "pod": pod_with_claims("pod-a"), "pre_filter": (Code.Skip, [])},
    {
        "name": "all bound",
        "pod": pod_with_claims("pod-a", "pvc-a"),
        "pvcs": (pvc("pvc-a", volume_name="pv-a"),),
        "pvs": (pv("pv-a"),),
        "filter": [None],
    },
    {
        "name": "PVC does not exist",
        "pod": pod_with_claims("pod-a", "pvc-a"),
        "pre_filter": (UNRESOLVABLE, ['persistentvolumeclaim "pvc-a" not found']),
    },
    {
        "name": "Part of PVCs do not exist",
        "pod": pod_with_claims("pod-a", "pvc-a", "pvc-b"),
        "pvcs": (pvc("pvc-a", volume_name="pv-a"),),
        "pre_filter": (UNRESOLVABLE, ['persistentvolumeclaim "pvc-b" not found']),
    },
    {
        "name": "immediate claims not bound",
        "pod": pod_with_claims("pod-a", "pvc-a"),
        "pvcs": (pvc("pvc-a", "immediate-sc"),),
        "pre_filter": (UNRESOLVABLE, ["pod has unbound immediate PersistentVolumeClaims"]),
    },
    {
        "name": "unbound claims no matches",
        "pod": pod_with_claims("pod-a", "pvc-a"),
        "pvcs": (pvc("pvc-a"),),
        "filter": [(UNRESOLVABLE, [ERR_REASON_BIND_CONFLICT])],
    },
    {
        "name": "bound and unbound unsatisfied",
        "pod": pod_with_claims("pod-a", "pvc-a", "pvc-b"),
        "nodes": (labelled_node("node-a", foo="barbar"),),
        "pvcs": (pvc("pvc-a", volume_name="pv-a"), pvc("pvc-b")),
        "pvs": (pv("pv-a", affinity={"foo": ["bar"]}),),
        "filter": [(UNRESOLVABLE, [ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT])],
    },
    {
        "name": "pv not found",
        "pod": pod_with_claims("pod-a", "pvc-a"),
        "pvcs": (pvc("pvc-a", volume_name="pv-a"),),
        "filter": [(UNRESOLVABLE, [ERR_REASON_PV_NOT_EXIST])],
    },
    {
        "name": "pv not found claim lost",
        "pod": pod_with_claims("pod-a", "pvc-a"),
        "pvcs": (pvc("pvc-a", volume_name="pv-a", phase="Lost"),),
        "pre_filter": (
            UNRESOLVABLE,
            ['persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'],
        ),
    },
    {
        "name": "local volumes with close capacity are preferred",
        "pod": pod_with_claims("pod-a", "pvc-a"),
        "nodes": (labelled_node("node-a"), labelled_node("node-b"), labelled_node("node-c")),
        "pvcs": (pvc("pvc-a", storage="50Gi"),),
        "pvs": (
            pv("pv-a-0", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-a-1", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-b-0", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            pv("pv-b-1", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
        ),
        "scoring": True,
        "filter": [None, None, (UNRESOLVABLE, [ERR_REASON_BIND_CONFLICT])],
        "scores": [25, 50, 0],
    },
    {
        "name": "local volumes with close capacity are preferred (multiple pvcs)",
        "pod": pod_with_claims("pod-a", "pvc-0", "pvc-1"),
        "nodes": (labelled_node("node-a"), labelled_node("node-b"), labelled_node("node-c")),
        "classes": (WAIT_SC, storage_class("wait-hdd-sc")),
        "pvcs": (pvc("pvc-0", storage="50Gi"), pvc("pvc-1", "wait-hdd-sc", storage="100Gi")),
        "pvs": (
            pv("pv-a-0", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-a-1", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-a-2", "wait-hdd-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-a-3", "wait-hdd-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-b-0", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            pv("pv-b-1", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            pv("pv-b-2", "wait-hdd-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            pv("pv-b-3", "wait-hdd-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
        ),
        "scoring": True,
        "filter": [None, None, (UNRESOLVABLE, [ERR_REASON_BIND_CONFLICT])],
        "scores": [38, 75, 0],
    },
    {
        "name": "zonal volumes with close capacity are preferred",
        "pod": pod_with_claims("pod-a", "pvc-a"),
        "nodes": tuple(
            labelled_node(f"zone-{z}-node-{n}", **{REGION: f"region-{z}", ZONE: f"zone-{z}"})
            for z in "abc"
            for n in "ab"
        ),
        "pvcs": (pvc("pvc-a", storage="50Gi"),),
        "pvs": tuple(
            pv(
                f"pv-{z}-{i}",
                capacity=cap,
                affinity={REGION: [f"region-{z}"], ZONE: [f"zone-{z}"]},
            )
            for z, cap in (("a", "200Gi"), ("b", "100Gi"))
            for i in range(2)
        ),
        "scoring": True,
        "filter": [None, None, None, None] + [(UNRESOLVABLE, [ERR_REASON_BIND_CONFLICT])] * 2,
        "scores": [25, 25, 50, 50, 0, 0],
    },
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_volume_binding(case: dict[str, Any]) -> None:
    nodes = case.get("nodes") or (labelled_node("node-a"),)
    kwargs = {k: case[k] for k in ("pvcs", "pvs", "classes") if k in case}
    fh = handle(nodes=nodes, **kwargs)
    scoring = case.get("scoring", False)
    plugin = VolumeBinding(TEST_SHAPE if scoring else {}, fh, storage_capacity_scoring=scoring)
    state = CycleState()
    _, status = plugin.pre_filter(state, case["pod"], nodes)
    assert _status(status) == case.get("pre_filter")
    if status is not None:
        return
    got = [_status(plugin.filter(state, case["pod"], n)) for n in nodes]
    assert got == case["filter"]
    if "scores" in case:
        assert plugin.pre_score(state, case["pod"], nodes) is None
        assert [plugin.score(state, case["pod"], n)[0] for n in nodes] == case["scores"]
    else:
        assert plugin.pre_score(state, case["pod"], nodes) is not None  # Skip: scoring is off


def test_storage_capacity_score_for_dynamic_provisioning() -> None:
    """ "storage capacity score": capacity tracked per node by CSIStorageCapacity."""
    driver = {"metadata": {"name": "test-driver"}, "spec": {"storageCapacity": True}}
    sc = storage_class("wait-sc-with-storage-capacity", provisioner="test-driver")
    nodes = (labelled_node("node-a"), labelled_node("node-b"), labelled_node("node-c"))

    def capacity(name: str, node_name: str, size: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "namespace": "default"},
            "storageClassName": sc["metadata"]["name"],
            "capacity": size,
            "nodeTopology": {"matchLabels": {HOSTNAME: node_name}},
        }

    fh = handle(
        nodes=nodes,
        classes=(WAIT_SC, sc),
        drivers=(driver,),
        pvcs=(pvc("pvc-dynamic", sc["metadata"]["name"], storage="10Gi"),),
        capacities=(
            capacity("node-a", "node-a", "100Gi"),
            capacity("node-b", "node-b", "50Gi"),
            capacity("node-c", "node-c", "10Gi"),
        ),
    )  # fmt: skip
    plugin = VolumeBinding(TEST_SHAPE, fh, storage_capacity_scoring=True)
    state = CycleState()
    pod = pod_with_claims("pod-a", "pvc-dynamic")
    assert plugin.pre_filter(state, pod, nodes)[1] is None
    assert [plugin.filter(state, pod, n) for n in nodes] == [None, None, None]
    assert [plugin.score(state, pod, n)[0] for n in nodes] == [10, 20, 100]
    # Not enough room anywhere: the capacity reason.
    small = handle(
        nodes=nodes[:1], classes=(sc,), drivers=(driver,),
        pvcs=(pvc("pvc-dynamic", sc["metadata"]["name"], storage="200Gi"),),
        capacities=(capacity("node-a", "node-a", "100Gi"),),
    )  # fmt: skip
    plugin = VolumeBinding({}, small)
    state = CycleState()
    assert plugin.pre_filter(state, pod, nodes[:1])[1] is None
    assert _status(plugin.filter(state, pod, nodes[0])) == (UNRESOLVABLE, [ERR_REASON_NOT_ENOUGH_SPACE])


def test_allowed_topologies_and_no_provisioner_decide_where_claims_can_be_provisioned() -> None:
    zonal = storage_class(
        "zonal",
        provisioner="example.com/csi",
        allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}],
    )
    static = storage_class("static", provisioner="kubernetes.io/no-provisioner")
    nodes = (labelled_node("node-a", zone="a"), labelled_node("node-b", zone="b"))
    fh = handle(nodes=nodes, classes=(zonal, static), pvcs=(pvc("c1", "zonal"), pvc("c2", "static")))
    plugin = VolumeBinding({}, fh)
    for claim, want in (
        ("c1", [None, (UNRESOLVABLE, [ERR_REASON_BIND_CONFLICT])]),
        ("c2", [(UNRESOLVABLE, [ERR_REASON_BIND_CONFLICT])] * 2),
    ):
        state = CycleState()
        pod = pod_with_claims("p", claim)
        plugin.pre_filter(state, pod, nodes)
        assert [_status(plugin.filter(state, pod, n)) for n in nodes] == want, claim


def test_selected_node_restricts_provisioning_to_that_node() -> None:
    sc = storage_class("dyn", provisioner="example.com/csi")
    nodes = (labelled_node("node-a"), labelled_node("node-b"))
    claim = pvc("c", "dyn", annotations={"volume.kubernetes.io/selected-node": "node-b"})
    plugin = VolumeBinding({}, handle(nodes=nodes, classes=(sc,), pvcs=(claim,)))
    state = CycleState()
    pod = pod_with_claims("p", "c")
    plugin.pre_filter(state, pod, nodes)
    assert [_status(plugin.filter(state, pod, n)) for n in nodes] == [
        (UNRESOLVABLE, [ERR_REASON_BIND_CONFLICT]),
        None,
    ]


def test_ephemeral_volume_claim_must_exist_and_be_owned_by_the_pod() -> None:
    pod = pod_with_claims("pod-a", ephemeral=("data",), uid="pod-uid")
    plugin = VolumeBinding({}, handle())
    _, status = plugin.pre_filter(CycleState(), pod, ())
    assert _status(status) == (
        UNRESOLVABLE,
        ['waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-data"'],
    )
    plugin = VolumeBinding({}, handle(pvcs=(pvc("pod-a-data", owner_uid="someone-else"),)))
    _, status = plugin.pre_filter(CycleState(), pod, ())
    assert _status(status) == (
        UNRESOLVABLE,
        ["PVC default/pod-a-data was not created for pod default/pod-a (pod is not owner)"],
    )
    plugin = VolumeBinding({}, handle(pvcs=(pvc("pod-a-data", owner_uid="pod-uid"),)))
    _, status = plugin.pre_filter(CycleState(), pod, ())
    assert status is None


def test_smallest_matching_pv_is_chosen_and_reserve_keeps_two_pods_off_the_same_pv() -> None:
    nodes = (labelled_node("node-a"),)
    claims = (pvc("c1", storage="5Gi"), pvc("c2", storage="5Gi"), pvc("c3", storage="5Gi"))
    pvs = (
        pv("big", capacity="100Gi", affinity={HOSTNAME: ["node-a"]}),
        pv("small", capacity="10Gi", affinity={HOSTNAME: ["node-a"]}),
        pv("tiny", capacity="1Gi", affinity={HOSTNAME: ["node-a"]}),
    )
    fh = handle(nodes=nodes, pvcs=claims, pvs=pvs)
    plugin = VolumeBinding({}, fh)
    chosen: list[Any] = []
    for claim in ("c1", "c2", "c3"):
        state = CycleState()
        pod = pod_with_claims(f"p-{claim}", claim)
        plugin.pre_filter(state, pod, nodes)
        status = plugin.filter(state, pod, nodes[0])
        if status is not None:
            assert _status(status) == (UNRESOLVABLE, [ERR_REASON_BIND_CONFLICT])
            chosen.append(None)
            continue
        assert plugin.reserve(state, pod, "node-a") is None
        chosen.append(state.get("VolumeBinding").pod_volumes_by_node["node-a"].static_bindings[0].pv)
    assert [c["metadata"]["name"] if c else None for c in chosen] == ["small", "big", None]
    assert chosen[0]["spec"]["claimRef"]["name"] == "c1"
    assert chosen[0]["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"


def test_unreserve_releases_the_assumed_pv() -> None:
    nodes = (labelled_node("node-a"),)
    fh = handle(nodes=nodes, pvcs=(pvc("c1"), pvc("c2")), pvs=(pv("only"),))
    plugin = VolumeBinding({}, fh)
    first, pod1 = CycleState(), pod_with_claims("p1", "c1")
    plugin.pre_filter(first, pod1, nodes)
    assert plugin.filter(first, pod1, nodes[0]) is None
    plugin.reserve(first, pod1, "node-a")
    second, pod2 = CycleState(), pod_with_claims("p2", "c2")
    plugin.pre_filter(second, pod2, nodes)
    assert plugin.filter(second, pod2, nodes[0]) is not None
    plugin.unreserve(first, pod1, "node-a")
    second = CycleState()
    plugin.pre_filter(second, pod2, nodes)
    assert plugin.filter(second, pod2, nodes[0]) is None


def test_prebind_writes_claim_ref_and_selected_node_then_waits_for_the_pv_controller() -> None:
    sc = storage_class("dyn", provisioner="example.com/csi")
    nodes = (labelled_node("node-a"),)
    fh = handle(
        nodes=nodes, classes=(WAIT_SC, sc), pvcs=(pvc("static"), pvc("dynamic", "dyn")), pvs=(pv("pv-1"),)
    )
    plugin = VolumeBinding({"bindTimeoutSeconds": 30}, fh)
    sleeps: list[float] = []

    def controller(seconds: float) -> None:
        """The PV controller and provisioner, one step per poll."""
        sleeps.append(seconds)
        pvcs, pvs = fh.lister(PERSISTENT_VOLUME_CLAIMS), fh.lister(PERSISTENT_VOLUMES)
        done = {"pv.kubernetes.io/bind-completed": "yes"}
        static = pvcs.get("static", "default")
        assert static is not None
        pvcs.add(
            {
                **static,
                "metadata": {**static["metadata"], "annotations": done},
                "spec": {**static["spec"], "volumeName": "pv-1"},
            }
        )
        dynamic = pvcs.get("dynamic", "default")
        assert dynamic is not None
        anns = {**dynamic["metadata"]["annotations"], **done}
        pvcs.add(
            {
                **dynamic,
                "metadata": {**dynamic["metadata"], "annotations": anns},
                "spec": {**dynamic["spec"], "volumeName": "pv-new"},
            }
        )
        pvs.add(pv("pv-new", "dyn"))

    plugin.binder._sleep = controller
    state, pod = CycleState(), pod_with_claims("p", "static", "dynamic")
    plugin.pre_filter(state, pod, nodes)
    assert plugin.filter(state, pod, nodes[0]) is None
    assert plugin.reserve(state, pod, "node-a") is None
    # Claims to bind: PreBindPreFlight says PreBind will act (upstream's NominatedNodeNameForExpectation).
    assert plugin.pre_bind_pre_flight(state, pod, "node-a") is None
    pre_flight = plugin.pre_bind_pre_flight(state, pod, "node-b")
    assert pre_flight is not None and pre_flight.code is Code.Error
    assert plugin.pre_bind(state, pod, "node-a") is None
    written = {obj["metadata"]["name"]: obj for _, obj in fh.updates}
    assert written["pv-1"]["spec"]["claimRef"]["name"] == "static"
    assert written["pv-1"]["spec"]["claimRef"]["uid"] == "uid-static"
    assert written["dynamic"]["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-a"
    assert len(sleeps) == 1


def test_prebind_times_out_and_reports_a_reset_selected_node() -> None:
    sc = storage_class("dyn", provisioner="example.com/csi")
    nodes = (labelled_node("node-a"),)
    fh = handle(nodes=nodes, classes=(sc,), pvcs=(pvc("dynamic", "dyn"),))
    plugin = VolumeBinding({"bindTimeoutSeconds": 0}, fh)
    state, pod = CycleState(), pod_with_claims("p", "dynamic")
    plugin.pre_filter(state, pod, nodes)
    plugin.filter(state, pod, nodes[0])
    plugin.reserve(state, pod, "node-a")
    status = plugin.pre_bind(state, pod, "node-a")
    assert status is not None and status.code is Code.Error
    assert "context deadline exceeded" in status.message()
    # The provisioner gave up on the node: it drops the annotation (other annotations stay).
    for anns, message in (({"x": "y"}, "provisioning failed"), ({}, "selectedNode annotation reset")):
        state, pod = CycleState(), pod_with_claims("p2", "dynamic")
        fh.lister(PERSISTENT_VOLUME_CLAIMS).add(pvc("dynamic", "dyn", rv="10"))
        plugin.pre_filter(state, pod, nodes)
        plugin.filter(state, pod, nodes[0])
        plugin.reserve(state, pod, "node-a")
        after = pvc("dynamic", "dyn", rv="11", annotations=anns)

        def provisioner_gave_up(obj: Any, after: dict[str, Any] = after) -> dict[str, Any]:
            fh.lister(PERSISTENT_VOLUME_CLAIMS).add(after)
            return after

        plugin.binder._update_pvc = provisioner_gave_up
        status = plugin.pre_bind(state, pod, "node-a")
        assert status is not None and f'{message} for PVC "dynamic"' in status.message()


@pytest.mark.parametrize(
    ("args", "scoring", "error"),
    [
        (
            {"bindTimeoutSeconds": -10},
            False,
            "bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds",
        ),
        ({"shape": [{"utilization": 0, "score": 10}]}, False, "unexpected field `shape`"),
        (
            {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]},
            True,
            "sorted in increasing order",
        ),
        ({"shape": [{"utilization": 101, "score": 1}]}, True, "not in valid range [0, 100]"),
        ({"shape": [{"utilization": 10, "score": 11}]}, True, "not in valid range [0, 10]"),
        ({"bindTimeout": 1}, False, "bindTimeout: unknown field"),
    ],
)
def test_args_validation(args: dict[str, Any], scoring: bool, error: str) -> None:
    with pytest.raises(PluginArgsError) as err:
        VolumeBinding(args, handle(), storage_capacity_scoring=scoring)
    assert error in str(err.value)


def test_args_defaults() -> None:
    """StorageCapacityScoring is beta and on by default since v1.37: the default shape applies."""
    plugin = VolumeBinding({}, handle())
    assert plugin.args.bind_timeout_seconds == 600 and plugin.args.shape == ((0, 10), (100, 0))
    assert plugin.storage_capacity_scoring
    assert VolumeBinding({}, handle(), storage_capacity_scoring=False).args.shape == ()


def test_queueing_hints() -> None:
    plugin = VolumeBinding({}, handle())
    pod = pod_with_claims("pod-a", "pvc-a", ephemeral=("eph",)).pod
    other_ns = {**pvc("pvc-a"), "metadata": {"name": "pvc-a", "namespace": "other"}}
    assert plugin.is_schedulable_after_pvc_change(pod, None, other_ns) is QueueingHint.Skip
    assert plugin.is_schedulable_after_pvc_change(pod, None, pvc("pvc-b")) is QueueingHint.Skip
    assert plugin.is_schedulable_after_pvc_change(pod, None, pvc("pvc-a")) is QueueingHint.Queue
    assert plugin.is_schedulable_after_pvc_change(pod, None, pvc("pod-a-eph")) is QueueingHint.Queue
    sc = storage_class("s")
    assert plugin.is_schedulable_after_storage_class_change(pod, None, sc) is QueueingHint.Queue
    topo = {**sc, "allowedTopologies": [{"matchLabelExpressions": [{"key": "k", "values": ["v"]}]}]}
    assert plugin.is_schedulable_after_storage_class_change(pod, sc, topo) is QueueingHint.Queue
    assert plugin.is_schedulable_after_storage_class_change(pod, sc, dict(sc)) is QueueingHint.Skip
    cap = {"metadata": {"name": "c"}, "capacity": "10Gi"}
    assert plugin.is_schedulable_after_capacity_change(pod, None, cap) is QueueingHint.Queue
    assert (
        plugin.is_schedulable_after_capacity_change(pod, cap, {**cap, "capacity": "20Gi"})
        is QueueingHint.Queue
    )
    assert (
        plugin.is_schedulable_after_capacity_change(pod, cap, {**cap, "capacity": "5Gi"}) is QueueingHint.Skip
    )
    assert (
        plugin.is_schedulable_after_capacity_change(pod, cap, {**cap, "maximumVolumeSize": "20Gi"})
        is QueueingHint.Queue
    )
    csinode = {"metadata": {"name": "n", "annotations": {}}}
    migrated = {
        "metadata": {"name": "n", "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "x"}}
    }
    assert plugin.is_schedulable_after_csinode_change(pod, None, csinode) is QueueingHint.Queue
    assert plugin.is_schedulable_after_csinode_change(pod, csinode, migrated) is QueueingHint.Queue
    assert plugin.is_schedulable_after_csinode_change(pod, csinode, dict(csinode)) is QueueingHint.Skip
