"""DynamicResources plugin cases after ``dynamicresources_test.go`` (v1.36.3), as far as they apply."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.framework import (
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    ActionType,
    Code,
    CycleState,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Resource,
)
from scheduler.plugins.dynamicresources import DynamicResources
from tests.unit.plugins.dra_testlib import (
    CLASS_A,
    DRIVER_A,
    NODE_1,
    NODE_2,
    POOL_A,
    REQ_0,
    allocation,
    claim,
    device,
    device_class,
    request,
    result,
    slice_,
)
from tests.unit.plugins.plugin_testlib import FakeHandle

POD_UID = "pod-uid"


def pod(*claims: dict[str, Any], statuses: list[dict[str, Any]] | None = None) -> PodInfo:
    body: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "default", "uid": POD_UID},
        "spec": {"containers": [{"name": "c"}], "resourceClaims": list(claims)},
        "status": {},
    }
    if statuses is not None:
        body["status"]["resourceClaimStatuses"] = statuses
    return PodInfo(body)


def plugin(
    claims: list[dict[str, Any]], slices: list[dict[str, Any]] | None = None
) -> tuple[DynamicResources, FakeHandle]:
    handle = FakeHandle(
        objects={
            RESOURCE_CLAIMS: claims,
            RESOURCE_SLICES: slices
            if slices is not None
            else [
                slice_(f"s-{n}", n, n, DRIVER_A, device("gpu-0"), device("gpu-1")) for n in (NODE_1, NODE_2)
            ],
            DEVICE_CLASSES: [device_class(CLASS_A, f'device.driver == "{DRIVER_A}"')],
        }
    )
    return DynamicResources({}, handle), handle


NODES = [NodeInfo({"metadata": {"name": n, "labels": {}}}) for n in (NODE_1, NODE_2)]


def run_filter(pl: DynamicResources, p: PodInfo) -> tuple[CycleState, Any, dict[str, Any]]:
    state = CycleState()
    _, status = pl.pre_filter(state, p, NODES)
    if status is not None:
        return state, status, {}
    return state, None, {n.name: pl.filter(state, p, n) for n in NODES}


def test_pod_without_claims_is_skipped() -> None:
    pl, _ = plugin([])
    state = CycleState()
    _, status = pl.pre_filter(state, pod(), NODES)
    assert status is not None and status.code is Code.Skip
    pre_flight = pl.pre_bind_pre_flight(state, pod(), NODE_1)
    assert pre_flight is not None and pre_flight.code is Code.Skip


def test_missing_claim_waits_at_pre_enqueue() -> None:
    pl, _ = plugin([])
    status = pl.pre_enqueue(pod({"name": "c", "resourceClaimName": "missing"}))
    assert status is not None and status.code is Code.UnschedulableAndUnresolvable
    assert status.message() == 'resourceclaim.resource.k8s.io "missing" not found'


def test_template_claim_not_created_yet() -> None:
    pl, _ = plugin([])
    status = pl.pre_enqueue(pod({"name": "c", "resourceClaimTemplateName": "t"}))
    assert status is not None and status.message() == 'pod "default/p": ResourceClaim not created yet'


def test_generated_claim_must_be_owned_by_pod() -> None:
    pl, _ = plugin([claim("gen", request(REQ_0), owner_uid="someone-else")])
    status = pl.pre_enqueue(
        pod(
            {"name": "c", "resourceClaimTemplateName": "t"},
            statuses=[{"name": "c", "resourceClaimName": "gen"}],
        )
    )
    assert status is not None and "(Pod is not owner)" in status.message()


def test_allocate_reserve_and_prebind_write_the_claim() -> None:
    c = claim("gen", request(REQ_0), owner_uid=POD_UID)
    pl, handle = plugin([c])
    p = pod(
        {"name": "c", "resourceClaimTemplateName": "t"}, statuses=[{"name": "c", "resourceClaimName": "gen"}]
    )
    assert pl.pre_enqueue(p) is None
    state, status, filtered = run_filter(pl, p)
    assert status is None and filtered == {NODE_1: None, NODE_2: None}
    assert pl.reserve(state, p, NODE_2) is None
    assert pl.pre_bind_pre_flight(state, p, NODE_2) is None  # claims to write: PreBind will act
    assert pl.pre_bind(state, p, NODE_2) is None
    (put_meta, put_status) = handle.api_calls
    assert put_meta[0] == "PUT" and put_meta[1].endswith("/resourceclaims/gen")
    assert put_meta[2]["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert put_status[1].endswith("/resourceclaims/gen/status")
    assert put_status[2]["status"] == {
        "allocation": allocation(result(REQ_0, DRIVER_A, NODE_2, "gpu-0"), node=NODE_2),
        "reservedFor": [{"resource": "pods", "name": "p", "uid": POD_UID}],
    }


def test_in_flight_allocation_keeps_device_from_the_next_pod() -> None:
    c1, c2 = claim("c1", request(REQ_0, count=2)), claim("c2", request(REQ_0, count=2))
    pl, _ = plugin([c1, c2], slices=[slice_("s", NODE_1, POOL_A, DRIVER_A, device("gpu-0"), device("gpu-1"))])
    p1 = pod({"name": "c", "resourceClaimName": "c1"})
    state, _, filtered = run_filter(pl, p1)
    assert filtered[NODE_1] is None
    assert pl.reserve(state, p1, NODE_1) is None
    p2 = PodInfo(
        {
            **pod({"name": "c", "resourceClaimName": "c2"}).pod,
            "metadata": {"name": "p2", "namespace": "default", "uid": "u2"},
        }
    )
    _, _, filtered = run_filter(pl, p2)
    assert filtered[NODE_1] is not None and filtered[NODE_1].message() == "cannot allocate all claims"
    assert filtered[NODE_1].code is Code.UnschedulableAndUnresolvable
    pl.unreserve(state, p1, NODE_1)
    _, _, filtered = run_filter(pl, p2)
    assert filtered[NODE_1] is None


def _second_pod(claim_name: str) -> PodInfo:
    return PodInfo(
        {
            **pod({"name": "c", "resourceClaimName": claim_name}).pod,
            "metadata": {"name": "p2", "namespace": "default", "uid": "u2"},
        }
    )


def _bump(obj: dict[str, Any], version: int, **status: Any) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(version)}, "status": status}


def test_written_allocation_frees_its_device_once_the_informer_passes_the_write() -> None:
    """The informer can skip the allocated version: the claim's deallocation (the pod deleted at once)
    may be the first change its watch delivers. The in-flight entry must not outlive that and hold
    the freed device for good (an integration run saw the waiting pod never scheduled)."""
    c1, c2 = claim("c1", request(REQ_0, count=2)), claim("c2", request(REQ_0, count=2))
    pl, handle = plugin(
        [c1, c2], slices=[slice_("s", NODE_1, POOL_A, DRIVER_A, device("gpu-0"), device("gpu-1"))]
    )
    handle.api_responder = lambda method, path, body: _bump(body, 7, **body.get("status", {}))  # type: ignore[attr-defined]
    p1 = pod({"name": "c", "resourceClaimName": "c1"})
    state, _, filtered = run_filter(pl, p1)
    assert filtered[NODE_1] is None
    assert pl.reserve(state, p1, NODE_1) is None and pl.pre_bind(state, p1, NODE_1) is None
    p2 = _second_pod("c2")
    # The informer still holds the version before the write: the device stays taken.
    _, _, filtered = run_filter(pl, p2)
    assert filtered[NODE_1] is not None and filtered[NODE_1].message() == "cannot allocate all claims"
    # Its next version is already the deallocated one (reservedFor and allocation cleared).
    handle.lister(RESOURCE_CLAIMS).add(_bump(c1, 9))
    _, _, filtered = run_filter(pl, p2)
    assert filtered[NODE_1] is None
    assert len(pl.in_flight) == 0


def test_in_flight_entry_outlives_informer_changes_before_prebind_wrote() -> None:
    """Until PreBind wrote the claim, a newer informer version (another writer's change) does not end
    the entry: the allocation is still on its way."""
    c1, c2 = claim("c1", request(REQ_0, count=2)), claim("c2", request(REQ_0, count=2))
    pl, handle = plugin(
        [c1, c2], slices=[slice_("s", NODE_1, POOL_A, DRIVER_A, device("gpu-0"), device("gpu-1"))]
    )
    p1 = pod({"name": "c", "resourceClaimName": "c1"})
    state, _, _ = run_filter(pl, p1)
    assert pl.reserve(state, p1, NODE_1) is None
    handle.lister(RESOURCE_CLAIMS).add(_bump(c1, 9))
    _, _, filtered = run_filter(pl, _second_pod("c2"))
    assert filtered[NODE_1] is not None and filtered[NODE_1].message() == "cannot allocate all claims"


def test_claim_being_allocated_for_another_pod() -> None:
    c = claim("shared", request(REQ_0))
    pl, _ = plugin([c])
    p1 = pod({"name": "c", "resourceClaimName": "shared"})
    state, _, _ = run_filter(pl, p1)
    pl.reserve(state, p1, NODE_1)
    _, status, _ = run_filter(pl, p1)
    assert (
        status is not None
        and status.message() == "resource claim default/shared is in the process of being allocated"
    )


def test_allocated_claim_constrains_nodes() -> None:
    c = claim("done", request(REQ_0), allocation=allocation(result(REQ_0, DRIVER_A, NODE_1, "gpu-0")))
    pl, handle = plugin([c])
    p = pod({"name": "c", "resourceClaimName": "done"})
    state, _, filtered = run_filter(pl, p)
    assert filtered[NODE_1] is None
    assert (
        filtered[NODE_2] is not None
        and filtered[NODE_2].message() == "resourceclaim not available on the node"
    )
    # Shared: PreBind only adds the reservation.
    assert pl.pre_bind(state, p, NODE_1) is None
    ((_, path, body),) = handle.api_calls
    assert path.endswith("/status") and body["status"]["reservedFor"] == [
        {"resource": "pods", "name": "p", "uid": POD_UID}
    ]


def test_claim_in_use_by_max_consumers() -> None:
    full = [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(256)]
    c = claim(
        "busy",
        request(REQ_0),
        allocation=allocation(result(REQ_0, DRIVER_A, NODE_1, "gpu-0")),
        reservedFor=full,
    )
    pl, _ = plugin([c])
    _, status, _ = run_filter(pl, pod({"name": "c", "resourceClaimName": "busy"}))
    assert status is not None and status.message() == "resourceclaim in use"


def test_missing_device_class() -> None:
    pl, _ = plugin([claim("c", request(REQ_0, class_name="nope"))])
    _, status, _ = run_filter(pl, pod({"name": "c", "resourceClaimName": "c"}))
    assert status is not None and status.message() == f"request {REQ_0}: device class nope does not exist"


def test_dra_extended_resource_is_refused_with_reason() -> None:
    pl, handle = plugin([])
    handle.listers[DEVICE_CLASSES].add(device_class("gpus", extendedResourceName="example.com/gpu"))
    p = PodInfo(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": POD_UID},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"example.com/gpu": "1"}}}]},
        }
    )
    _, status = pl.pre_filter(CycleState(), p, NODES)
    assert status is not None and "DRAExtendedResource" in status.message()


def test_hints() -> None:
    c = claim("gen", request(REQ_0), owner_uid=POD_UID)
    pl, _ = plugin([c])
    p = pod(
        {"name": "c", "resourceClaimTemplateName": "t"}, statuses=[{"name": "c", "resourceClaimName": "gen"}]
    ).pod
    assert pl.is_schedulable_after_claim_change(p, None, c) is QueueingHint.Queue
    other = claim("other", request(REQ_0))
    assert pl.is_schedulable_after_claim_change(p, None, other) is QueueingHint.Skip
    deallocated_old = claim(
        "other", request(REQ_0), allocation=allocation(result(REQ_0, DRIVER_A, NODE_1, "gpu-0"))
    )
    assert pl.is_schedulable_after_claim_change(p, deallocated_old, other) is QueueingHint.Queue
    assert pl.is_schedulable_after_claim_change(p, c, c) is QueueingHint.Skip
    # v1.37.2's TestIsSchedulableAfterTargetPodUpdate: the updated pod's claims all exist (complete),
    # one does not (missing-claim), an object that is not a pod (backoff-wrong-new-object)...
    assert pl.is_schedulable_after_target_pod_update(p, p, p) is QueueingHint.Queue
    missing = pod({"name": "c", "resourceClaimName": "absent"}).pod
    assert pl.is_schedulable_after_target_pod_update(p, missing, missing) is QueueingHint.Skip
    assert pl.is_schedulable_after_target_pod_update(p, None, "not-a-pod") is QueueingHint.Queue
    # ...and, without v1.36's uid comparison, another pending pod's update (a TargetPod event replayed
    # from the in-flight log) is judged by that pod's claims.
    other_pod = copy.deepcopy(pod({"name": "c", "resourceClaimName": "gen"}).pod)
    other_pod["metadata"]["uid"] = "another-pod"
    assert pl.is_schedulable_after_target_pod_update(p, other_pod, other_pod) is QueueingHint.Queue
    assert (Resource.TargetPod, ActionType.UpdatePodGeneratedResourceClaim) in {
        (e.event.resource, e.event.action) for e in pl.events_to_register()
    }
    assert Resource.Pod not in {e.event.resource for e in pl.events_to_register()}
    # A claim deleted while allocated (its deallocation removed the last finalizer) frees its devices.
    assert pl.is_schedulable_after_claim_deleted(p, deallocated_old, None) is QueueingHint.Queue
    assert pl.is_schedulable_after_claim_deleted(p, other, None) is QueueingHint.Skip
    registered = {(e.event.resource, e.event.action) for e in pl.events_to_register()}
    assert (Resource.ResourceClaim, ActionType.Delete) in registered


def test_post_filter_reasons_lead_the_failed_scheduling_text() -> None:
    """Upstream's PostFilter (dynamicresources.go) runs before DefaultPreemption; kube-scheduler v1.36.3
    wrote "... 2 Insufficient cpu. no new claims to deallocate, preemption: ..." for a pod without
    claims, and "still not schedulable" when no claim is a candidate; since v1.37 both are Unschedulable
    without a reason (nothing in the FailedScheduling message)."""
    pl, _ = plugin([])
    state = CycleState()
    pl.pre_filter(state, pod(), NODES)
    nominated, status = pl.post_filter(state, pod(), {})
    assert nominated is None and status is not None
    assert (status.code, status.message()) == (Code.Unschedulable, "")

    c = claim(
        "done", request(REQ_0), allocation=allocation(result(REQ_0, DRIVER_A, NODE_1, "gpu-0"), node=None)
    )
    pl, handle = plugin([c])
    p = pod({"name": "c", "resourceClaimName": "done"})
    state, _, _ = run_filter(pl, p)
    _, status = pl.post_filter(state, p, {})
    assert status is not None
    assert (status.code, status.message()) == (Code.Unschedulable, "")
    assert handle.api_calls == []

    # An earlier PreFilter plugin rejected the pod: upstream's state read fails with ErrNotFound.
    _, status = pl.post_filter(CycleState(), p, {})
    assert status is not None and (status.code, status.message()) == (Code.Error, "not found")


def wrong_topology_claim(**status: Any) -> dict[str, Any]:
    """Allocated to a device on NODE_1 only: NODE_2 rejects the pod with "not available"."""
    c = claim(
        "held", request(REQ_0), allocation=allocation(result(REQ_0, DRIVER_A, NODE_1, "gpu-0")), **status
    )
    c["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    c["status"]["devices"] = [{"driver": DRIVER_A, "pool": NODE_1, "device": "gpu-0"}]
    return c


def test_post_filter_deallocates_an_unreserved_claim_that_ruled_out_a_node() -> None:
    """dynamicresources_test.go "wrong-topology": the claim's status write clears allocation,
    reservedFor and devices; the reason is "deallocation of ResourceClaim completed" (Unschedulable)."""
    c = wrong_topology_claim()
    pl, handle = plugin([c])
    p = pod({"name": "c", "resourceClaimName": "held"})
    state, status, filtered = run_filter(pl, p)
    assert status is None and filtered[NODE_1] is None
    assert filtered[NODE_2] is not None
    assert (filtered[NODE_2].code, filtered[NODE_2].message()) == (
        Code.UnschedulableAndUnresolvable,
        "resourceclaim not available on the node",
    )

    call = pl.post_filter_call(state, p, {})
    assert callable(call), "the write is handed to the framework, not made on the loop"
    assert handle.api_calls == []
    nominated, status = call()
    assert nominated is None and status is not None
    assert (status.code, status.message()) == (Code.Unschedulable, "deallocation of ResourceClaim completed")
    ((method, path, body),) = handle.api_calls
    assert (method, path) == ("PUT", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/held/status")
    assert body["status"] == {}
    # The informer's version is the precondition (UpdateStatus); the rest of the object is unchanged.
    assert body["metadata"] == c["metadata"] and body["spec"] == c["spec"]
    # The informer's object is not touched: its update arrives by watch.
    assert c["status"]["allocation"] is not None and c["status"]["devices"]


def test_post_filter_deallocates_a_claim_reserved_for_this_pod_alone() -> None:
    c = wrong_topology_claim(reservedFor=[{"resource": "pods", "name": "p", "uid": POD_UID}])
    pl, handle = plugin([c])
    p = pod({"name": "c", "resourceClaimName": "held"})
    state, _, _ = run_filter(pl, p)
    _, status = pl.post_filter(state, p, {})
    assert status is not None and status.message() == "deallocation of ResourceClaim completed"
    assert handle.api_calls[0][2]["status"] == {}


def test_post_filter_leaves_a_claim_reserved_for_another_pod() -> None:
    other = {"resource": "pods", "name": "other", "uid": "other-uid"}
    for reserved in ([other], [{"resource": "pods", "name": "p", "uid": POD_UID}, other]):
        c = wrong_topology_claim(reservedFor=reserved)
        pl, handle = plugin([c])
        p = pod({"name": "c", "resourceClaimName": "held"})
        state, status, filtered = run_filter(pl, p)
        assert status is None and filtered[NODE_2] is not None
        outcome = pl.post_filter_call(state, p, {})
        assert isinstance(outcome, tuple)
        _, status = outcome
        assert status is not None
        assert (status.code, status.message()) == (Code.Unschedulable, "")
        assert handle.api_calls == []


def test_post_filter_without_claims_or_after_a_pre_filter_rejection() -> None:
    """No candidate (Unschedulable without a reason, v1.37) also when PreFilter stopped before it read
    the claims (upstream's table: a missing device class)."""
    c = claim("pending", request(REQ_0, "missing-class"))
    pl, handle = plugin([c])
    p = pod({"name": "c", "resourceClaimName": "pending"})
    state, status, _ = run_filter(pl, p)
    assert (
        status is not None and status.message() == "request req-0: device class missing-class does not exist"
    )
    _, status = pl.post_filter(state, p, {})
    assert status is not None
    assert (status.code, status.message()) == (Code.Unschedulable, "")
    assert handle.api_calls == []


def test_post_filter_api_error_is_the_status() -> None:
    """Upstream's statusError(err): Code Error with the API's message; the pod backs off."""
    from scheduler.framework.api_error import ApiError

    pl, handle = plugin([wrong_topology_claim()])
    conflict = (
        'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "held": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )

    def refuse(method: str, path: str, body: Any) -> Any:
        raise ApiError(409, conflict)

    handle.api_responder = refuse  # type: ignore[attr-defined]
    p = pod({"name": "c", "resourceClaimName": "held"})
    state, _, _ = run_filter(pl, p)
    _, status = pl.post_filter(state, p, {})
    assert status is not None and (status.code, status.message()) == (Code.Error, conflict)
    assert isinstance(status.error, ApiError)


def test_filter_allocator_failure_wins_and_is_not_a_deallocation_candidate() -> None:
    """Upstream's Filter runs the allocator before it reports an unavailable claim: a node where the
    pending claim cannot be allocated says so, and its unavailable claim is not remembered."""
    held = wrong_topology_claim()
    pending = claim("pending", request(REQ_0))
    # Only NODE_1 has devices (and both are needed: gpu-0 is held by the allocated claim).
    slices = [slice_(f"s-{NODE_1}", NODE_1, NODE_1, DRIVER_A, device("gpu-0"))]
    pl, handle = plugin([held, pending], slices)
    p = pod({"name": "a", "resourceClaimName": "held"}, {"name": "b", "resourceClaimName": "pending"})
    state, status, filtered = run_filter(pl, p)
    assert status is None
    assert filtered[NODE_2] is not None and filtered[NODE_2].message() == "cannot allocate all claims"
    _, status = pl.post_filter(state, p, {})
    assert status is not None and status.message() == ""
    assert handle.api_calls == []


BINDING = {"bindingConditions": ["attached"], "bindingFailureConditions": ["attach-failed"]}
# 2026-01-01T00:00:00Z
ALLOCATED_AT, ALLOCATED_AT_SECONDS = "2026-01-01T00:00:00Z", 1767225600.0


def binding_claim(
    conditions: list[dict[str, Any]] | None, *, reserved: list[dict[str, Any]] | None = None
) -> Any:
    """Allocated, with no node selector (usable on every node), to a device with binding conditions;
    ``conditions`` is the device's status (None: no ``status.devices`` entry yet)."""
    alloc = allocation(result(REQ_0, DRIVER_A, NODE_1, "gpu-0", **BINDING), node=None)
    alloc["allocationTimestamp"] = ALLOCATED_AT
    c = claim("bc", request(REQ_0), allocation=alloc)
    c["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    if conditions is not None:
        c["status"]["devices"] = [
            {"driver": DRIVER_A, "pool": NODE_1, "device": "gpu-0", "conditions": conditions}
        ]
    if reserved is not None:
        c["status"]["reservedFor"] = reserved
    return c


def cond(type_: str, status: str = "True") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": "R",
        "message": "m",
        "lastTransitionTime": ALLOCATED_AT,
    }


def test_post_filter_deallocates_a_claim_whose_device_binding_failed() -> None:
    """dynamicresources_test.go "bound-claim-with-failed-binding": a binding failure condition of the
    allocated device is true, so the claim is unavailable on every node (Filter), and PostFilter
    deallocates it: allocation, reservedFor and devices cleared."""
    c = binding_claim([cond("attached", "False"), cond("attach-failed")])
    pl, handle = plugin([c])
    p = pod({"name": "c", "resourceClaimName": "bc"})
    state, status, filtered = run_filter(pl, p)
    assert status is None
    for node in (NODE_1, NODE_2):
        got = filtered[node]
        assert got is not None and (got.code, got.message()) == (
            Code.UnschedulableAndUnresolvable,
            "resourceclaim not available on the node",
        )
    _, status = pl.post_filter(state, p, {})
    assert status is not None
    assert (status.code, status.message()) == (Code.Unschedulable, "deallocation of ResourceClaim completed")
    ((method, path, body),) = handle.api_calls
    assert (method, path) == ("PUT", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/bc/status")
    assert body["status"] == {}


def test_post_filter_deallocates_a_claim_whose_binding_conditions_timed_out() -> None:
    """ "bound-claim-with-timed-out-binding": binding conditions still pending bindingTimeout (600 s by
    default) after allocationTimestamp. One second earlier the claim is still usable (PreBind's wait)."""
    for conditions in (None, [cond("attached", "False")]):
        c = binding_claim(conditions)
        pl, handle = plugin([c])
        p = pod({"name": "c", "resourceClaimName": "bc"})
        handle.clock = ALLOCATED_AT_SECONDS + 600  # not yet: the timeout is "before now", strictly
        state, status, filtered = run_filter(pl, p)
        assert status is None and filtered == {NODE_1: None, NODE_2: None}
        _, status = pl.post_filter(state, p, {})
        assert status is not None and status.message() == ""

        handle.clock = ALLOCATED_AT_SECONDS + 601
        state, status, filtered = run_filter(pl, p)
        assert status is None
        assert {n: f.message() for n, f in filtered.items() if f is not None} == {
            NODE_1: "resourceclaim not available on the node",
            NODE_2: "resourceclaim not available on the node",
        }
        _, status = pl.post_filter(state, p, {})
        assert status is not None and status.message() == "deallocation of ResourceClaim completed"
        assert [call[2]["status"] for call in handle.api_calls] == [{}]


def test_binding_conditions_met_or_absent_keep_the_claim() -> None:
    """ "bound-claim-with-succeeded-binding-conditions" and "bound-claim-without-binding-conditions":
    the claim is usable; long after the timeout too (met conditions never time out)."""
    met = binding_claim([cond("attached"), cond("attach-failed", "False")])
    plain = claim(
        "bc", request(REQ_0), allocation=allocation(result(REQ_0, DRIVER_A, NODE_1, "gpu-0"), node=None)
    )
    plain["status"]["allocation"]["allocationTimestamp"] = ALLOCATED_AT
    for c in (met, plain):
        pl, handle = plugin([c])
        handle.clock = ALLOCATED_AT_SECONDS + 3600
        p = pod({"name": "c", "resourceClaimName": "bc"})
        state, status, filtered = run_filter(pl, p)
        assert status is None and filtered == {NODE_1: None, NODE_2: None}
        _, status = pl.post_filter(state, p, {})
        assert status is not None and status.message() == ""
        assert handle.api_calls == []


def test_failed_binding_stops_at_the_first_pending_result() -> None:
    """isClaimReadyForBinding checks result by result and returns at the first pending one: a failure
    condition of a later device is not looked at (nor, before the timeout, is the claim unusable)."""
    alloc = allocation(
        result(REQ_0, DRIVER_A, NODE_1, "gpu-0", **BINDING),
        result(REQ_0, DRIVER_A, NODE_1, "gpu-1", **BINDING),
        node=None,
    )
    alloc["allocationTimestamp"] = ALLOCATED_AT
    c = claim("bc", request(REQ_0), allocation=alloc)
    c["status"]["devices"] = [
        {"driver": DRIVER_A, "pool": NODE_1, "device": "gpu-0", "conditions": [cond("attached", "False")]},
        {"driver": DRIVER_A, "pool": NODE_1, "device": "gpu-1", "conditions": [cond("attach-failed")]},
    ]
    pl, handle = plugin([c])
    handle.clock = ALLOCATED_AT_SECONDS + 1
    p = pod({"name": "c", "resourceClaimName": "bc"})
    _, status, filtered = run_filter(pl, p)
    assert status is None and filtered == {NODE_1: None, NODE_2: None}
    # The first device attached: now the second one's failure counts.
    c["status"]["devices"][0]["conditions"] = [cond("attached")]
    _, status, filtered = run_filter(pl, p)
    assert status is None and all(f is not None for f in filtered.values())


def test_failed_binding_claim_reserved_for_another_pod_is_left_alone() -> None:
    """PostFilter deallocates only a claim reserved for nobody or for this pod alone."""
    other = {"resource": "pods", "name": "other", "uid": "other-uid"}
    mine = {"resource": "pods", "name": "p", "uid": POD_UID}
    for reserved, expected in (
        ([other], ""),  # v1.37: no reason (v1.36: "still not schedulable")
        ([mine], "deallocation of ResourceClaim completed"),
    ):
        c = binding_claim([cond("attach-failed")], reserved=reserved)
        pl, handle = plugin([c])
        p = pod({"name": "c", "resourceClaimName": "bc"})
        state, _, filtered = run_filter(pl, p)
        assert all(f is not None for f in filtered.values())
        _, status = pl.post_filter(state, p, {})
        assert status is not None and status.message() == expected
        assert len(handle.api_calls) == (expected != "")


def test_device_taint_rules_taint_the_devices_they_select() -> None:
    """DRADeviceTaintRules (GA in v1.37): a rule's taint counts as if the driver had published it
    (resourceslice tracker's applyPatches); a toleration lets the pod have the device again."""
    taint = {"key": "maintenance", "value": "yes", "effect": "NoSchedule"}
    rule = {
        "metadata": {"name": "r"},
        "spec": {"deviceSelector": {"driver": DRIVER_A, "pool": NODE_1}, "taint": taint},
    }
    slices = [slice_(f"s-{n}", n, n, DRIVER_A, device("gpu-0")) for n in (NODE_1, NODE_2)]

    def filtered_for(pending: dict[str, Any]) -> dict[str, Any]:
        handle = FakeHandle(
            objects={
                RESOURCE_CLAIMS: [pending],
                RESOURCE_SLICES: slices,
                DEVICE_CLASSES: [device_class(CLASS_A, f'device.driver == "{DRIVER_A}"')],
                DEVICE_TAINT_RULES: [rule],
            }
        )
        _, status, filtered = run_filter(
            DynamicResources({}, handle), pod({"name": "c", "resourceClaimName": "c"})
        )
        assert status is None
        return filtered

    filtered = filtered_for(claim("c", request(REQ_0)))
    assert filtered[NODE_1] is not None and filtered[NODE_1].message() == "cannot allocate all claims"
    assert filtered[NODE_2] is None
    # The published slices stay untouched.
    assert "taints" not in slices[0]["spec"]["devices"][0]

    tolerating = [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}]
    filtered = filtered_for(claim("c", request(REQ_0, tolerations=tolerating)))
    assert filtered[NODE_1] is None


def test_a_rule_without_selector_taints_nothing() -> None:
    from scheduler.plugins.dynamicresources.allocator import apply_taint_rules

    s = slice_("s", NODE_1, POOL_A, DRIVER_A, device("a"), device("b"))
    taint = {"key": "k", "effect": "NoSchedule"}
    assert apply_taint_rules(s, [{"spec": {"taint": taint}}]) is s
    assert apply_taint_rules(s, [{"spec": {"deviceSelector": {"driver": "other"}, "taint": taint}}]) is s
    one = apply_taint_rules(s, [{"spec": {"deviceSelector": {"device": "b"}, "taint": taint}}])
    assert [d.get("taints") for d in one["spec"]["devices"]] == [None, [taint]]
    every = apply_taint_rules(s, [{"spec": {"deviceSelector": {}, "taint": taint}}])
    assert [d.get("taints") for d in every["spec"]["devices"]] == [[taint], [taint]]


def test_an_implicit_extended_resource_without_its_device_class_is_a_plain_extended_resource() -> None:
    """Upstream (noderesources shouldDelegateResourceToDRA) hands a resource to DRA only when a
    DeviceClass maps it: "deviceclass.resource.kubernetes.io/<class>" of a class that does not exist is
    an ordinary extended resource (NodeResourcesFit: Insufficient), not DRA's to refuse."""
    pl, handle = plugin([])
    name = "deviceclass.resource.kubernetes.io/gpus"
    p = PodInfo(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": POD_UID},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {name: "1"}}}]},
        }
    )
    _, status = pl.pre_filter(CycleState(), p, NODES)
    assert status is None or "DRAExtendedResource" not in status.message()
    handle.listers[DEVICE_CLASSES].add(device_class("gpus"))
    _, status = pl.pre_filter(CycleState(), PodInfo(p.pod), NODES)
    assert status is not None and "backed by DeviceClass gpus (DRAExtendedResource)" in status.message()
