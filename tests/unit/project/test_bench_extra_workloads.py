"""The volumes, dra and extender bench workloads: their objects reference each other as the schedulers
need, and the end-state checks catch what they are for. No control plane."""

from __future__ import annotations

from typing import Any

import pytest

from bench import prereqs, workloads


@pytest.mark.parametrize("name", workloads.EXTRA_WORKLOADS)
@pytest.mark.parametrize("quick", [True, False])
def test_extra_workloads_build_and_run_by_default(name: str, quick: bool) -> None:
    assert name in workloads.ALL_WORKLOADS
    workload = workloads.build(name, quick=quick)
    assert workload.name == name
    assert workload.pods and len(set(workload.pod_names)) == len(workload.pods)


def test_volumes_pvs_and_pvcs_are_bound_to_each_other() -> None:
    workload = workloads.build(workloads.VOLUMES, quick=True)
    pvcs = {
        (o.path.split("/")[4], o.body["metadata"]["name"]): o
        for o in workload.objects
        if o.body["kind"] == "PersistentVolumeClaim"
    }
    pvs = {o.body["metadata"]["name"]: o for o in workload.objects if o.body["kind"] == "PersistentVolume"}
    csinodes = {o.body["metadata"]["name"] for o in workload.objects if o.body["kind"] == "CSINode"}
    assert csinodes == {n["metadata"]["name"] for n in workload.nodes}
    for namespace, pods in ((workloads.MEASURED_NAMESPACE, workload.pods),
                            (workloads.INIT_NAMESPACE, workload.init_pods)):  # fmt: skip
        for pod in pods:
            claim = pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
            pvc = pvcs[(namespace, claim)]
            assert pvc.status == {"phase": "Bound"}
            assert pvc.body["metadata"]["annotations"][workloads.BIND_COMPLETED] == "true"
            pv = pvs[pvc.body["spec"]["volumeName"]]
            assert pv.status == {"phase": "Bound"}
            assert pv.body["spec"]["claimRef"]["namespace"] == namespace
            assert pv.body["spec"]["claimRef"]["name"] == claim
            assert pv.body["spec"]["csi"]["driver"] == workloads.CSI_DRIVER


def test_dra_has_a_claim_per_pod_and_a_device_per_claim() -> None:
    workload = workloads.build(workloads.DRA, quick=True)
    kinds = [o.body["kind"] for o in workload.objects]
    assert kinds[0] == "DeviceClass"
    claims = {
        (o.path.split("/")[5], o.body["metadata"]["name"])
        for o in workload.objects
        if o.body["kind"] == "ResourceClaim"
    }
    for namespace, pods in ((workloads.MEASURED_NAMESPACE, workload.pods),
                            (workloads.INIT_NAMESPACE, workload.init_pods)):  # fmt: skip
        for pod in pods:
            assert (namespace, pod["spec"]["resourceClaims"][0]["resourceClaimName"]) in claims
    devices = sum(
        len(o.body["spec"]["devices"]) for o in workload.objects if o.body["kind"] == "ResourceSlice"
    )
    assert devices == len(claims) == len(workload.pods) + len(workload.init_pods)  # filled up completely


def _claim(name: str, node: str, device: str, pod: str | None) -> dict[str, Any]:
    result = {"driver": workloads.DRA_DRIVER, "pool": node, "device": device, "request": "req-0"}
    status: dict[str, Any] = {"allocation": {"devices": {"results": [result]}}}
    if pod:
        status["reservedFor"] = [{"resource": "pods", "name": pod, "uid": "u"}]
    return {"metadata": {"name": name, "namespace": "bench"}, "status": status}


def _pod(name: str, claim: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {"nodeName": node, "resourceClaims": [{"name": "resource", "resourceClaimName": claim}]},
    }


def test_claim_check_catches_double_allocation_and_wrong_node() -> None:
    pods = [_pod("a", "ca", "n1"), _pod("b", "cb", "n1")]
    good = [_claim("ca", "n1", "instance-0", "a"), _claim("cb", "n1", "instance-1", "b")]
    assert prereqs._verify_claims(good, pods) == []
    twice = [_claim("ca", "n1", "instance-0", "a"), _claim("cb", "n1", "instance-0", "b")]
    assert prereqs._verify_claims(twice, pods) == ["1 devices allocated twice"]
    elsewhere = [_claim("ca", "n1", "instance-0", "a"), _claim("cb", "n2", "instance-0", "b")]
    assert prereqs._verify_claims(elsewhere, pods) == ["1 claims allocated on another node than their pod's"]
    unreserved = [_claim("ca", "n1", "instance-0", "a"), _claim("cb", "n1", "instance-1", None)]
    assert prereqs._verify_claims(unreserved, pods) == ["1 bound pods without an allocated, reserved claim"]


def test_extender_check_catches_pods_on_filtered_out_nodes() -> None:
    workload = workloads.build(workloads.EXTENDER, quick=True)
    rejected = next(n for n in workload.nodes if n["metadata"]["labels"][workloads.EXTENDER_LABEL] == "no")
    accepted = next(n for n in workload.nodes if n["metadata"]["labels"][workloads.EXTENDER_LABEL] == "ok")
    pods = [{"metadata": {"name": "p1"}, "spec": {"nodeName": accepted["metadata"]["name"]}}]
    assert prereqs.verify(None, workload, pods, workload.nodes) == []  # type: ignore[arg-type]
    pods.append({"metadata": {"name": "p2"}, "spec": {"nodeName": rejected["metadata"]["name"]}})
    assert prereqs.verify(None, workload, pods, workload.nodes) == [  # type: ignore[arg-type]
        "1 pods on nodes the extender filters out"
    ]
