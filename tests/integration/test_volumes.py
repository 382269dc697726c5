"""Issue 12 on the real control plane: pods with persistent volumes, bound as kube-scheduler binds them.

kube-controller-manager runs the PV binder and the built-in host-path provisioner; StatefulSets are real.
PVs, StorageClasses and CSINodes are cluster-scoped, so every name carries the run id and they are
deleted by label afterwards.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from devcluster.nodes import HOSTNAME_LABEL, create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, wait_for
from tests.integration.workload import (
    RUN_LABEL,
    list_events,
    list_pods,
    make_pod,
    new_run_id,
    sole_kube_scheduler,
)

ZONE = "topology.kubernetes.io/zone"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
CSI_DRIVER = "csi.py-scheduler.test"


@pytest.fixture
def run_id(api_client: Any, core_v1: Any) -> Iterator[str]:
    from kubernetes.client import StorageV1Api

    rid = new_run_id()
    yield rid
    selector = f"{RUN_LABEL}={rid}"
    storage = StorageV1Api(api_client)
    core_v1.delete_collection_node(label_selector=selector, _preload_content=False)
    core_v1.delete_collection_persistent_volume(label_selector=selector, _preload_content=False)
    storage.delete_collection_storage_class(label_selector=selector, _preload_content=False)
    storage.delete_collection_csi_node(label_selector=selector, _preload_content=False)
    storage.delete_collection_volume_attachment(label_selector=selector, _preload_content=False)


@pytest.fixture
def scheduler(kubeconfig: str, tmp_path: Path, controller_manager: Any) -> Iterator[SchedulerProcess]:
    proc = SchedulerProcess(kubeconfig, tmp_path).start()
    try:
        proc.wait_ready(60)
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"


# --- objects ------------------------------------------------------------------------------------
def _nodes(
    api_client: Any, run_id: str, count: int, *, cpus: list[str] | None = None, zones: list[str] | None = None
) -> list[str]:
    names = [f"n{i}-{run_id}" for i in range(count)]
    nodes = []
    for i, name in enumerate(names):
        labels = {RUN_LABEL: run_id}
        if zones:
            labels[ZONE] = zones[i]
        nodes.append(make_node(name, cpu=cpus[i] if cpus else "4", labels=labels))
    create_nodes(api_client, nodes)
    return names


def _storage_class(api_client: Any, run_id: str, name: str, provisioner: str, mode: str) -> str:
    from kubernetes.client import StorageV1Api

    full = f"{name}-{run_id}"
    body = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": full, "labels": {RUN_LABEL: run_id}},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    StorageV1Api(api_client).create_storage_class(body=body, _preload_content=False)
    return full


def _pv(
    core_v1: Any,
    run_id: str,
    name: str,
    *,
    storage_class: str = "",
    node: str | None = None,
    zone: str | None = None,
    size: str = "1Gi",
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
    claim: tuple[str, str] | None = None,
    csi_handle: str | None = None,
) -> str:
    full = f"{name}-{run_id}"
    labels = {RUN_LABEL: run_id}
    if zone:
        labels[ZONE] = zone
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(access_modes),
        "storageClassName": storage_class,
        "persistentVolumeReclaimPolicy": "Retain",
    }
    if csi_handle:
        spec["csi"] = {"driver": CSI_DRIVER, "volumeHandle": csi_handle}
    else:
        spec["hostPath"] = {"path": f"/tmp/{full}"}
    if node:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}
                ]
            }
        }
    if claim:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": full, "labels": labels},
        "spec": spec,
    }
    core_v1.create_persistent_volume(body=body, _preload_content=False)
    return full


def _pvc(
    core_v1: Any,
    namespace: str,
    name: str,
    *,
    storage_class: str = "",
    size: str = "1Gi",
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
    volume_name: str | None = None,
) -> str:
    spec: dict[str, Any] = {
        "accessModes": list(access_modes),
        "resources": {"requests": {"storage": size}},
        "storageClassName": storage_class,
    }
    if volume_name:
        spec["volumeName"] = volume_name
    body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}
    core_v1.create_namespaced_persistent_volume_claim(namespace, body=body, _preload_content=False)
    return name


def _pod_with_claims(name: str, run_id: str, claims: list[str], *, cpu: str = "100m") -> dict[str, Any]:
    pod = make_pod(name, run_id, cpu=cpu)
    pod["spec"]["volumes"] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": claim}} for i, claim in enumerate(claims)
    ]
    return pod


def _create_pod(core_v1: Any, namespace: str, pod: Mapping[str, Any]) -> None:
    core_v1.create_namespaced_pod(namespace, body=pod, _preload_content=False)


def _pvcs(core_v1: Any, namespace: str) -> dict[str, dict[str, Any]]:
    resp = core_v1.list_namespaced_persistent_volume_claim(namespace, _preload_content=False)
    return {p["metadata"]["name"]: p for p in orjson.loads(resp.data)["items"]}


def _pvs(core_v1: Any, run_id: str) -> dict[str, dict[str, Any]]:
    resp = core_v1.list_persistent_volume(label_selector=f"{RUN_LABEL}={run_id}", _preload_content=False)
    return {p["metadata"]["name"]: p for p in orjson.loads(resp.data)["items"]}


def _pods(core_v1: Any, namespace: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in list_pods(core_v1, namespace)}


def _failed_message(core_v1: Any, namespace: str, pod: str) -> str:
    messages = [
        e["message"]
        for e in sorted(list_events(core_v1, namespace), key=lambda e: e.get("eventTime") or "")
        if e["involvedObject"]["name"] == pod and e["reason"] == "FailedScheduling"
    ]
    return messages[-1] if messages else ""


def _bound_pods(core_v1: Any, namespace: str, count: int, timeout: float = 90) -> dict[str, dict[str, Any]]:
    def done() -> dict[str, dict[str, Any]] | None:
        pods = _pods(core_v1, namespace)
        bound = {n: p for n, p in pods.items() if p["spec"].get("nodeName")}
        return bound if len(bound) >= count else None

    result: dict[str, dict[str, Any]] = wait_for(done, timeout, f"{count} bound pods in {namespace}", 0.3)
    return result


def _pv_of_claim(core_v1: Any, namespace: str, claim: str) -> str:
    return str(_pvcs(core_v1, namespace)[claim]["spec"].get("volumeName") or "")


def _assert_no_pv_double_claimed(core_v1: Any, run_id: str) -> None:
    refs = [
        (pv["spec"]["claimRef"]["namespace"], pv["spec"]["claimRef"]["name"])
        for pv in _pvs(core_v1, run_id).values()
        if pv["spec"].get("claimRef")
    ]
    assert len(refs) == len(set(refs)), refs


def _wait_reason(core_v1: Any, namespace: str, pod: str, reason: str, timeout: float = 60) -> str:
    def found() -> str | None:
        message = _failed_message(core_v1, namespace, pod)
        return message if reason in message else None

    try:
        message: str = wait_for(found, timeout, f"FailedScheduling of {pod} with {reason!r}", 0.5)
    except AssertionError as err:
        seen = [
            (e["reason"], e.get("message"))
            for e in list_events(core_v1, namespace)
            if e["involvedObject"]["name"] == pod
        ]
        raise AssertionError(
            f"{err}; events of {pod}: {seen}; pod: {_pods(core_v1, namespace).get(pod)}"
        ) from None
    assert not _pods(core_v1, namespace)[pod]["spec"].get("nodeName")
    return message


# --- tests --------------------------------------------------------------------------------------
def test_statefulset_claims_are_provisioned_on_the_node_of_their_pod(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    from kubernetes.client import AppsV1Api

    _nodes(api_client, run_id, 3)
    sc = _storage_class(api_client, run_id, "hostpath", "kubernetes.io/host-path", "WaitForFirstConsumer")
    template = make_pod("unused", run_id)
    template["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db", RUN_LABEL: run_id}}, "spec": template["spec"]},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": sc,
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }
    AppsV1Api(api_client).create_namespaced_stateful_set(namespace, body=body, _preload_content=False)
    pods = _bound_pods(core_v1, namespace, 3)
    claims = _pvcs(core_v1, namespace)
    for name, pod in pods.items():
        claim = claims[f"data-{name}"]
        assert claim["metadata"]["annotations"][SELECTED_NODE] == pod["spec"]["nodeName"]
        assert claim["status"]["phase"] == "Bound" and claim["spec"]["volumeName"]


def test_local_pvs_pin_pods_to_their_nodes_and_a_full_node_leaves_the_pod_waiting(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    # The first node is small: a big pod fits only on the others, where its PV is not.
    nodes = _nodes(api_client, run_id, 3, cpus=["4", "8", "8"])
    sc = _storage_class(api_client, run_id, "local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer")
    for i, node in enumerate(nodes):
        _pv(core_v1, run_id, f"local{i}", storage_class=sc, node=node)
    for i in range(3):
        _pvc(core_v1, namespace, f"c{i}", storage_class=sc)
        _create_pod(core_v1, namespace, _pod_with_claims(f"p{i}", run_id, [f"c{i}"]))
    pods = _bound_pods(core_v1, namespace, 3)
    pvs = _pvs(core_v1, run_id)
    used = set()
    for i in range(3):
        claim = f"c{i}"
        pv_name = wait_for(functools.partial(_pv_of_claim, core_v1, namespace, claim), 30, f"{claim} bound")
        used.add(pv_name)
        pinned = pvs[pv_name]["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][
            0
        ]
        assert pods[f"p{i}"]["spec"]["nodeName"] == pinned["values"][0]
    assert len(used) == 3
    _assert_no_pv_double_claimed(core_v1, run_id)

    # A fourth PV on the small node, and a pod too big for what is left there.
    _pv(core_v1, run_id, "local3", storage_class=sc, node=nodes[0])
    _pvc(core_v1, namespace, "c3", storage_class=sc)
    _create_pod(core_v1, namespace, _pod_with_claims("big", run_id, ["c3"], cpu="3950m"))
    message = _wait_reason(core_v1, namespace, "big", "didn't find available persistent volumes to bind")
    assert "Insufficient cpu" in message


def test_zonal_pv_places_the_pod_in_its_zone_or_leaves_it_waiting(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    nodes = _nodes(api_client, run_id, 3, zones=["zone-a", "zone-a", "zone-b"])
    for zone in ("zone-b", "zone-c"):
        pv = _pv(core_v1, run_id, f"z-{zone}", zone=zone)
        _pvc(core_v1, namespace, f"c-{zone}", volume_name=pv)
        _create_pod(core_v1, namespace, _pod_with_claims(f"p-{zone}", run_id, [f"c-{zone}"]))
    pods = _bound_pods(core_v1, namespace, 1)
    assert pods["p-zone-b"]["spec"]["nodeName"] == nodes[2]
    _wait_reason(core_v1, namespace, "p-zone-c", "node(s) had no available volume zone")


def test_csinode_limit_leaves_the_third_volume_waiting(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    from kubernetes.client import StorageV1Api

    (node,) = _nodes(api_client, run_id, 1)
    csinode = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node, "labels": {RUN_LABEL: run_id}},
        "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": node, "allocatable": {"count": 2}}]},
    }
    StorageV1Api(api_client).create_csi_node(body=csinode, _preload_content=False)
    for i in range(3):
        pv = _pv(core_v1, run_id, f"csi{i}", csi_handle=f"h{i}-{run_id}")
        _pvc(core_v1, namespace, f"c{i}", volume_name=pv)
    wait_for(
        lambda: all(p["status"].get("phase") == "Bound" for p in _pvcs(core_v1, namespace).values()),
        60,
        "claims bound",
        0.3,
    )
    for i in range(3):
        _create_pod(core_v1, namespace, _pod_with_claims(f"p{i}", run_id, [f"c{i}"]))
        if i < 2:
            _bound_pods(core_v1, namespace, i + 1)
    _wait_reason(core_v1, namespace, "p2", "node(s) exceed max volume count")


def test_volume_attachments_fill_a_node_as_for_kube_scheduler(
    api_client: Any,
    core_v1: Any,
    namespace: str,
    run_id: str,
    scheduler: SchedulerProcess,
    control_plane: Any,
) -> None:
    """A node whose CSINode allows 2 volumes of a driver and that has 2 VolumeAttachments of CSI PVs
    (used by no pod) is full: kube-scheduler v1.37.2 and py-scheduler both place a pod with one new
    volume of that driver on the other node, and both refuse it, with the same message, where the full
    node is the only one it may use, until one VolumeAttachment's deletion requeues it onto that node."""
    from kubernetes.client import StorageV1Api

    from tests.conftest import _delete_namespace

    storage = StorageV1Api(api_client)
    pools = {"kube": f"vakube-{run_id}", "py": namespace}
    core_v1.create_namespace(body={"metadata": {"name": pools["kube"]}}, _preload_content=False)
    try:
        for pool, pool_namespace in pools.items():
            nodes = [
                make_node(f"{pool}-{role}-{run_id}", labels={RUN_LABEL: run_id, "pool": pool})
                for role in ("full", "free")
            ]
            create_nodes(api_client, nodes)
            for node in nodes:
                name = node["metadata"]["name"]
                csinode = {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": name, "labels": {RUN_LABEL: run_id}},
                    "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": name, "allocatable": {"count": 2}}]},
                }
                storage.create_csi_node(body=csinode, _preload_content=False)
            for i in range(2):
                attached_pv = _pv(core_v1, run_id, f"{pool}-attached{i}", csi_handle=f"{pool}-a{i}-{run_id}")
                attachment = {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "VolumeAttachment",
                    "metadata": {"name": f"{pool}-va{i}-{run_id}", "labels": {RUN_LABEL: run_id}},
                    "spec": {
                        "attacher": CSI_DRIVER,
                        "nodeName": f"{pool}-full-{run_id}",
                        "source": {"persistentVolumeName": attached_pv},
                    },
                }
                storage.create_volume_attachment(body=attachment, _preload_content=False)
            for claim in ("new", "pinned"):
                pv = _pv(core_v1, run_id, f"{pool}-{claim}", csi_handle=f"{pool}-{claim}-{run_id}")
                _pvc(core_v1, pool_namespace, claim, volume_name=pv)
        wait_for(
            lambda: all(
                p["status"].get("phase") == "Bound"
                for ns in pools.values()
                for p in _pvcs(core_v1, ns).values()
            ),
            60,
            "claims bound",
            0.3,
        )
        placed: dict[str, str] = {}
        refusals: dict[str, str] = {}
        with sole_kube_scheduler(control_plane):
            for pool, ns in pools.items():
                scheduler_name = "default-scheduler" if pool == "kube" else "py-scheduler"
                pod = _pod_with_claims("p", run_id, ["new"])
                pod["spec"]["schedulerName"] = scheduler_name
                pod["spec"]["nodeSelector"] = {"pool": pool}
                _create_pod(core_v1, ns, pod)
                placed[pool] = _bound_pods(core_v1, ns, 1)["p"]["spec"]["nodeName"]
                pinned = _pod_with_claims("pinned", run_id, ["pinned"])
                pinned["spec"]["schedulerName"] = scheduler_name
                pinned["spec"]["nodeSelector"] = {HOSTNAME_LABEL: f"{pool}-full-{run_id}"}
                _create_pod(core_v1, ns, pinned)
                refusals[pool] = _wait_reason(core_v1, ns, "pinned", "node(s) exceed max volume count")
            # Both still hold the pinned pods: the VolumeAttachments are all there.
            names = {v["metadata"]["name"] for v in _volume_attachments(api_client, run_id)}
            assert names == {f"{pool}-va{i}-{run_id}" for pool in pools for i in range(2)}
            # A detach frees a slot: its deletion requeues the pinned pods, which now fit.
            for pool, ns in pools.items():
                storage.delete_volume_attachment(f"{pool}-va0-{run_id}", _preload_content=False)
                assert _bound_pods(core_v1, ns, 2)["pinned"]["spec"]["nodeName"] == f"{pool}-full-{run_id}"
        assert placed == {pool: f"{pool}-free-{run_id}" for pool in pools}
        assert refusals["py"] == refusals["kube"]
        assert "1 node(s) exceed max volume count" in refusals["py"]
    finally:
        _delete_namespace(core_v1, pools["kube"])


def _volume_attachments(api_client: Any, run_id: str) -> list[dict[str, Any]]:
    from kubernetes.client import StorageV1Api

    resp = StorageV1Api(api_client).list_volume_attachment(
        label_selector=f"{RUN_LABEL}={run_id}", _preload_content=False
    )
    items: list[dict[str, Any]] = orjson.loads(resp.data)["items"]
    return items


def test_a_csi_driver_that_must_be_installed_keeps_the_pod_off_a_node_without_it(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    """VolumeLimitScaling, beta and on in v1.37: a CSIDriver with preventPodSchedulingIfMissing makes a
    node whose CSINode does not list it unschedulable for a pod with one of its volumes; the CSINode
    that lists it (its add requeues the pod) lets the pod bind."""
    from kubernetes.client import StorageV1Api

    storage = StorageV1Api(api_client)
    (node,) = _nodes(api_client, run_id, 1)
    driver = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": CSI_DRIVER, "labels": {RUN_LABEL: run_id}},
        "spec": {"attachRequired": True, "preventPodSchedulingIfMissing": True},
    }
    storage.create_csi_driver(body=driver, _preload_content=False)
    try:
        pv = _pv(core_v1, run_id, "needs-driver", csi_handle=f"h-{run_id}")
        _pvc(core_v1, namespace, "c", volume_name=pv)
        wait_for(
            lambda: _pvcs(core_v1, namespace)["c"]["status"].get("phase") == "Bound", 60, "claim bound", 0.3
        )
        _create_pod(core_v1, namespace, _pod_with_claims("p", run_id, ["c"]))
        _wait_reason(core_v1, namespace, "p", f"{CSI_DRIVER} CSI driver is not installed on the node")
        csinode = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": node, "labels": {RUN_LABEL: run_id}},
            "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": node}]},
        }
        storage.create_csi_node(body=csinode, _preload_content=False)
        _bound_pods(core_v1, namespace, 1)
    finally:
        storage.delete_csi_driver(CSI_DRIVER, _preload_content=False)


def test_second_pod_of_a_read_write_once_pod_claim_waits(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    _nodes(api_client, run_id, 2)
    pv = _pv(core_v1, run_id, "rwop", access_modes=("ReadWriteOncePod",))
    _pvc(core_v1, namespace, "shared", volume_name=pv, access_modes=("ReadWriteOncePod",))
    _create_pod(core_v1, namespace, _pod_with_claims("first", run_id, ["shared"]))
    _bound_pods(core_v1, namespace, 1)
    _create_pod(core_v1, namespace, _pod_with_claims("second", run_id, ["shared"]))
    _wait_reason(core_v1, namespace, "second", "ReadWriteOncePod access mode already in-use by another pod")


def test_pod_with_unbound_immediate_claim_binds_promptly_once_the_claim_binds(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    _nodes(api_client, run_id, 1)
    _pvc(core_v1, namespace, "later")
    _create_pod(core_v1, namespace, _pod_with_claims("waiter", run_id, ["later"]))
    _wait_reason(core_v1, namespace, "waiter", "pod has unbound immediate PersistentVolumeClaims")
    # Pre-bound to the claim, the PV controller binds both at once.
    _pv(core_v1, run_id, "late", claim=(namespace, "later"))
    wait_for(
        lambda: _pvcs(core_v1, namespace)["later"]["status"].get("phase") == "Bound", 60, "claim bound", 0.1
    )
    claim_bound = time.monotonic()
    _bound_pods(core_v1, namespace, 1, timeout=30)
    # Event-driven: far sooner than the 5 minute flush of unschedulable pods.
    assert time.monotonic() - claim_bound < 10


def test_scheduler_killed_during_prebind_leaves_no_double_claims_and_every_pod_bound(
    api_client: Any,
    core_v1: Any,
    namespace: str,
    run_id: str,
    kubeconfig: str,
    tmp_path: Path,
    controller_manager: Any,
) -> None:
    nodes = _nodes(api_client, run_id, 3)
    local = _storage_class(
        api_client, run_id, "local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"
    )
    # Nobody provisions this class until the test does, acting as the external provisioner: PreBind of
    # its pods waits, and the scheduler is killed right there.
    manual = _storage_class(api_client, run_id, "manual", "example.com/manual", "WaitForFirstConsumer")
    for i, node in enumerate(nodes):
        _pv(core_v1, run_id, f"local{i}", storage_class=local, node=node)
    for i in range(3):
        _pvc(core_v1, namespace, f"l{i}", storage_class=local)
        _create_pod(core_v1, namespace, _pod_with_claims(f"local{i}", run_id, [f"l{i}"]))
    for i in range(2):
        _pvc(core_v1, namespace, f"m{i}", storage_class=manual)
        _create_pod(core_v1, namespace, _pod_with_claims(f"manual{i}", run_id, [f"m{i}"]))

    first = SchedulerProcess(kubeconfig, tmp_path, name="first").start()
    try:
        first.wait_ready(60)

        def provisioning_requested() -> bool:
            claims = _pvcs(core_v1, namespace)
            return all(
                SELECTED_NODE in (claims[f"m{i}"]["metadata"].get("annotations") or {}) for i in range(2)
            )

        wait_for(provisioning_requested, 60, "provisioning requested for the manual claims", 0.2)
    finally:
        first.kill()
    assert all(
        not p["spec"].get("nodeName") for n, p in _pods(core_v1, namespace).items() if n.startswith("manual")
    )

    second = SchedulerProcess(kubeconfig, tmp_path, name="second").start()
    try:
        second.wait_ready(60)
        # Provision the manual claims where the scheduler asked for them.
        for i in range(2):
            claim = _pvcs(core_v1, namespace)[f"m{i}"]
            node = claim["metadata"]["annotations"][SELECTED_NODE]
            _pv(core_v1, run_id, f"manual{i}", storage_class=manual, node=node, claim=(namespace, f"m{i}"))
        pods = _bound_pods(core_v1, namespace, 5, timeout=120)
    finally:
        code = second.stop()
    assert code == 0, second.log_tail()
    _assert_no_pv_double_claimed(core_v1, run_id)
    pvs = _pvs(core_v1, run_id)
    claims = _pvcs(core_v1, namespace)
    for name, pod in pods.items():
        claim = claims[pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]]
        pv = pvs[claim["spec"]["volumeName"]]
        pinned = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0][
            "values"
        ]
        assert pod["spec"]["nodeName"] == pinned[0], name
