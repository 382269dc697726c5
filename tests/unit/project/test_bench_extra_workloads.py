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


def test_steady_state_dra_pods_take_claims_from_the_template_the_controller_needs() -> None:
    workload = workloads.build(workloads.DRA_STEADY, quick=True)
    templates = [o for o in workload.objects if o.body["kind"] == "ResourceClaimTemplate"]
    assert [t.body["metadata"]["name"] for t in templates] == [workloads.CLAIM_TEMPLATE]
    assert f"/namespaces/{workloads.MEASURED_NAMESPACE}/" in templates[0].path
    for pod in workload.pods:
        assert pod["spec"]["resourceClaims"] == [
            {"name": "resource", "resourceClaimTemplateName": workloads.CLAIM_TEMPLATE}
        ]
    assert workload.controllers == ("resourceclaim-controller",)
    assert workload.steady_in_flight == 10 and workload.watch_claims
    devices = sum(
        len(o.body["spec"]["devices"]) for o in workload.objects if o.body["kind"] == "ResourceSlice"
    )
    assert devices > len(workload.init_pods)  # room for the steady pods


def _claim_event(uid: str, pool: str, device: str | None, pod: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if device is not None:
        result = {"driver": workloads.DRA_DRIVER, "pool": pool, "device": device, "request": "req-0"}
        status["allocation"] = {"devices": {"results": [result]}}
    if pod:
        status["reservedFor"] = [{"resource": "pods", "name": pod, "uid": "u"}]
    return {"metadata": {"uid": uid, "name": uid, "namespace": "bench"}, "status": status}


def test_claim_watch_counts_a_device_taken_while_held_and_frees_it_on_release() -> None:
    import asyncio

    from bench.claim_watch import ClaimWatch

    async def scenario() -> tuple[int, list[str]]:
        watch = ClaimWatch(client=None)  # type: ignore[arg-type]  # fed by hand, no API
        watch._note(_claim_event("a", "n1", "gpu-0", pod="p1"))
        watch._note(_claim_event("b", "n1", "gpu-0", pod="p2"))  # while a holds it: twice
        watch._note(_claim_event("a", "n1", None))  # a deallocated
        watch._release("b")  # b deleted
        watch._note(_claim_event("c", "n1", "gpu-0", pod="p3"))  # free again: fine
        watch._note(_claim_event("d", "n2", "gpu-1", pod="p4"))
        problems = await watch.problems({"p1": "n1", "p3": "n1", "p4": "n1", "p5": "n1"}, timeout=0.01)
        return watch.twice, problems

    twice, problems = asyncio.run(scenario())
    assert twice == 1
    assert problems == [
        "1 devices allocated while another claim held them",
        "1 bound pods whose claims the watch never saw allocated for them",
        "1 pods whose claims were allocated on another node",
    ]


def test_gang_workload_has_a_podgroup_per_gang_and_its_crd() -> None:
    workload = workloads.build(workloads.GANG, quick=True)
    groups = {o.body["metadata"]["name"]: o.body["spec"]["minMember"] for o in workload.objects}
    labelled = {p["metadata"]["labels"][workloads.POD_GROUP_LABEL] for p in workload.pods}
    assert set(groups) == labelled and set(groups.values()) == {8}
    assert all(o.body["kind"] == "PodGroup" for o in workload.objects)
    # The ElasticQuota CRD too: the peer's controller, run beside it, does not start without it.
    assert workload.crds == (workloads.PODGROUP_CRD, workloads.ELASTICQUOTA_CRD)
    assert all(path.exists() for path in workload.crds)
    stuck = {name.rsplit("-", 1)[0] for name in workload.expect_unschedulable}
    assert stuck and all(name.startswith("stuck-") for name in stuck)
