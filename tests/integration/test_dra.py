"""Issue 18 on the real control plane: Dynamic Resource Allocation with kube-controller-manager's
resourceclaim controller, py-scheduler and the real kube-scheduler side by side.

The test publishes ResourceSlices as a DRA driver would (no kubelet, no driver runs here), creates a
DeviceClass with a CEL selector and ResourceClaimTemplates, and checks what each scheduler writes into
``status.allocation`` of the generated claims.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, wait_for
from tests.integration.workload import (
    RUN_LABEL,
    list_events,
    list_pods,
    make_pod,
    new_run_id,
    sole_kube_scheduler,
)

GROUP, VERSION = "resource.k8s.io", "v1"
DRIVER = "gpu.example.com"


@pytest.fixture(scope="module")
def kube_scheduler(control_plane: Any) -> Iterator[Any]:
    with sole_kube_scheduler(control_plane) as handle:
        yield handle


@pytest.fixture
def run_id(core_v1: Any, api_client: Any) -> Iterator[str]:
    rid = new_run_id()
    yield rid
    custom = _custom(api_client)
    for plural in ("resourceslices", "deviceclasses"):
        with contextlib.suppress(Exception):
            custom.delete_collection_cluster_custom_object(
                GROUP, VERSION, plural, label_selector=f"{RUN_LABEL}={rid}"
            )
    core_v1.delete_collection_node(label_selector=f"{RUN_LABEL}={rid}", _preload_content=False)


@pytest.fixture
def scheduler(kubeconfig: str, tmp_path: Path, controller_manager: Any) -> Iterator[SchedulerProcess]:
    proc = SchedulerProcess(kubeconfig, tmp_path).start()
    try:
        proc.wait_ready(60)
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"


def _custom(api_client: Any) -> Any:
    from kubernetes.client import CustomObjectsApi

    return CustomObjectsApi(api_client)


def _gpu(name: str, model: str) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {"model": {"string": model}, "driverVersion": {"version": "1.2.0"}},
        "capacity": {"memory": {"value": "40Gi"}},
    }


def _publish(api_client: Any, run_id: str, node: str, models: list[str]) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}", "labels": {RUN_LABEL: run_id}},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [_gpu(f"gpu-{i}", model) for i, model in enumerate(models)],
        },
    }
    _custom(api_client).create_cluster_custom_object(GROUP, VERSION, "resourceslices", body)


def _device_class(api_client: Any, run_id: str) -> str:
    name = f"gpu-{run_id}"
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": {RUN_LABEL: run_id}},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": f'device.driver == "{DRIVER}" && '
                        f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("1.0.0")) && '
                        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("16Gi")) >= 0'
                    }
                }
            ]
        },
    }
    _custom(api_client).create_cluster_custom_object(GROUP, VERSION, "deviceclasses", body)
    return name


def _template(api_client: Any, namespace: str, name: str, class_name: str, *, pair: bool = False) -> None:
    if pair:
        devices: dict[str, Any] = {
            "requests": [
                {"name": "a", "exactly": {"deviceClassName": class_name}},
                {"name": "b", "exactly": {"deviceClassName": class_name}},
            ],
            "constraints": [{"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/model"}],
        }
    else:
        devices = {"requests": [{"name": "gpu", "exactly": {"deviceClassName": class_name}}]}
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": devices}},
    }
    _custom(api_client).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "resourceclaimtemplates", body
    )


def _nodes(api_client: Any, run_id: str, prefix: str, count: int, pool: str) -> list[str]:
    names = [f"{prefix}{i}-{run_id}" for i in range(count)]
    create_nodes(api_client, [make_node(n, labels={RUN_LABEL: run_id, "pool": pool}) for n in names])
    return names


def _claim_pod(name: str, run_id: str, template: str, scheduler_name: str, pool: str) -> dict[str, Any]:
    pod = make_pod(name, run_id, scheduler_name=scheduler_name, node_selector={"pool": pool})
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def _claims(api_client: Any, namespace: str) -> list[dict[str, Any]]:
    got = _custom(api_client).list_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims")
    return list(got["items"])


def _normalized(allocation: dict[str, Any], node: str) -> dict[str, Any]:
    """The allocation with the node name abstracted, and the timestamp left out."""
    text = repr({k: v for k, v in allocation.items() if k != "allocationTimestamp"})
    return {"allocation": text.replace(node, "NODE")}


def _allocations_by_pod(api_client: Any, namespace: str) -> dict[str, dict[str, Any]]:
    out = {}
    for claim in _claims(api_client, namespace):
        status = claim.get("status") or {}
        for ref in status.get("reservedFor") or ():
            if status.get("allocation"):
                out[ref["name"]] = status["allocation"]
    return out


def test_each_pod_gets_a_distinct_device_then_waits_and_wakes(
    api_client: Any,
    core_v1: Any,
    namespace: str,
    run_id: str,
    scheduler: SchedulerProcess,
    kube_scheduler: Any,
) -> None:
    class_name = _device_class(api_client, run_id)
    ours = _nodes(api_client, run_id, "d", 4, "py")
    theirs = _nodes(api_client, run_id, "k", 4, "kube")
    for node in ours + theirs:
        _publish(api_client, run_id, node, ["a100", "a100"])
    _template(api_client, namespace, "one-gpu", class_name)
    for i in range(9):
        core_v1.create_namespaced_pod(
            namespace, _claim_pod(f"py-{i}", run_id, "one-gpu", "py-scheduler", "py")
        )
        core_v1.create_namespaced_pod(
            namespace, _claim_pod(f"kube-{i}", run_id, "one-gpu", "default-scheduler", "kube")
        )

    def settled() -> tuple[dict[str, str], list[str]] | None:
        pods = list_pods(core_v1, namespace)
        bound = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")}
        pending = [p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName")]
        if len(bound) == 16 and len(pending) == 2:
            return bound, pending
        return None

    bound, pending = wait_for(settled, 120, "8+8 pods bound, one of each scheduler pending")
    allocations = wait_for(
        lambda: (a := _allocations_by_pod(api_client, namespace)) and len(a) == 16 and a,
        30,
        "16 claims allocated and reserved",
    )
    for owner in ("py", "kube"):
        devices = {
            (r["pool"], r["device"])
            for name, alloc in allocations.items()
            if name.startswith(f"{owner}-")
            for r in alloc["devices"]["results"]
        }
        assert len(devices) == 8, f"{owner}: devices not distinct: {devices}"
    # Same objects, same allocation: compare py-scheduler's writes with kube-scheduler's.
    py_shapes = sorted(str(_normalized(a, bound[n])) for n, a in allocations.items() if n.startswith("py-"))
    kube_shapes = sorted(
        str(_normalized(a, bound[n])) for n, a in allocations.items() if n.startswith("kube-")
    )
    assert py_shapes == kube_shapes
    for name, alloc in allocations.items():
        (result,) = alloc["devices"]["results"]
        assert result["pool"] == bound[name] and result["driver"] == DRIVER

    (waiting_py,) = [p for p in pending if p.startswith("py-")]

    def reason() -> str | None:
        for event in list_events(core_v1, namespace):
            if (event.get("involvedObject") or {}).get("name") == waiting_py and event.get(
                "reason"
            ) == "FailedScheduling":
                return str(event.get("message"))
        return None

    note = wait_for(reason, 60, "FailedScheduling for the fifth pair")
    assert "cannot allocate all claims" in note, note

    # Deleting a pod frees its device (the controller deallocates its claim) and wakes the waiting pod.
    victim = next(n for n in bound if n.startswith("py-"))
    core_v1.delete_namespaced_pod(victim, namespace, grace_period_seconds=0)
    node = wait_for(
        lambda: next(
            (
                p["spec"].get("nodeName")
                for p in list_pods(core_v1, namespace)
                if p["metadata"]["name"] == waiting_py
            ),
            None,
        ),
        120,
        f"{waiting_py} bound after {victim} was deleted",
    )
    assert node == bound[victim]


def test_match_attribute_places_two_devices_of_the_same_model(
    api_client: Any,
    core_v1: Any,
    namespace: str,
    run_id: str,
    scheduler: SchedulerProcess,
    kube_scheduler: Any,
) -> None:
    class_name = _device_class(api_client, run_id)
    (ours,) = _nodes(api_client, run_id, "m", 1, "py")
    (theirs,) = _nodes(api_client, run_id, "q", 1, "kube")
    for node in (ours, theirs):
        _publish(api_client, run_id, node, ["a100", "h100", "a100"])
    _template(api_client, namespace, "pair", class_name, pair=True)
    core_v1.create_namespaced_pod(namespace, _claim_pod("py-pair", run_id, "pair", "py-scheduler", "py"))
    core_v1.create_namespaced_pod(
        namespace, _claim_pod("kube-pair", run_id, "pair", "default-scheduler", "kube")
    )
    allocations = wait_for(
        lambda: (a := _allocations_by_pod(api_client, namespace)) and len(a) == 2 and a,
        90,
        "both pair claims allocated",
    )
    py, kube = allocations["py-pair"], allocations["kube-pair"]
    assert [(r["request"], r["device"]) for r in py["devices"]["results"]] == [("a", "gpu-0"), ("b", "gpu-2")]
    assert _normalized(py, ours) == _normalized(kube, theirs)


def test_post_filter_deallocates_an_idle_claim_allocated_where_the_pod_cannot_go(
    api_client: Any,
    core_v1: Any,
    namespace: str,
    run_id: str,
    scheduler: SchedulerProcess,
) -> None:
    """Upstream's PostFilter deallocation: a claim allocated (through ``/status``, as another scheduler
    could have left it) to a device on a node the pod may not use, reserved for nobody. py-scheduler's
    PostFilter clears the allocation ("deallocation of ResourceClaim completed"), the claim's update
    requeues the pod, and the next attempt allocates a device where the pod fits."""
    class_name = _device_class(api_client, run_id)
    (elsewhere,) = _nodes(api_client, run_id, "x", 1, "elsewhere")
    (fits,) = _nodes(api_client, run_id, "f", 1, "py")
    for node in (elsewhere, fits):
        _publish(api_client, run_id, node, ["a100"])
    custom = _custom(api_client)
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaim",
        "metadata": {"name": "idle"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": class_name}}]}},
    }
    created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", claim)
    created["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": DRIVER, "pool": elsewhere, "device": "gpu-0"}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [elsewhere]}]}
                ]
            },
        }
    }
    custom.replace_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "resourceclaims", "idle", created
    )

    pod = make_pod("needs-gpu", run_id, scheduler_name="py-scheduler", node_selector={"pool": "py"})
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "idle"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    core_v1.create_namespaced_pod(namespace, pod)

    def bound() -> str | None:
        for p in list_pods(core_v1, namespace):
            if p["metadata"]["name"] == "needs-gpu" and p["spec"].get("nodeName"):
                return str(p["spec"]["nodeName"])
        return None

    node = wait_for(bound, 90, "the pod bound once its claim was deallocated and allocated again")
    assert node == fits
    (after,) = _claims(api_client, namespace)
    status = after["status"]
    (result,) = status["allocation"]["devices"]["results"]
    assert (result["pool"], result["device"]) == (fits, "gpu-0")
    assert [r["name"] for r in status["reservedFor"]] == ["needs-gpu"]

    messages = [
        str(e.get("message"))
        for e in list_events(core_v1, namespace)
        if (e.get("involvedObject") or {}).get("name") == "needs-gpu"
        and e.get("reason") == "FailedScheduling"
    ]
    assert any("deallocation of ResourceClaim completed" in m for m in messages), messages


def test_post_filter_deallocates_a_claim_whose_device_binding_failed_or_timed_out(
    api_client: Any,
    core_v1: Any,
    namespace: str,
    run_id: str,
    scheduler: SchedulerProcess,
) -> None:
    """Upstream's Filter marks an allocated claim unavailable on every node when its device binding
    failed (a binding failure condition of the device is true) or its binding conditions are still
    pending ``bindingTimeout`` (600 s) after ``allocationTimestamp`` (DRADeviceBindingConditions, beta and
    on in v1.36); PostFilter deallocates it. Each claim is allocated through ``/status`` to a device with
    binding conditions on the node the pod fits, as a driver's scheduler could have left it; py-scheduler
    deallocates both, and the next attempts allocate the plain devices."""
    class_name = _device_class(api_client, run_id)
    (fits,) = _nodes(api_client, run_id, "b", 1, "py")
    conditions = {"bindingConditions": ["attached"], "bindingFailureConditions": ["attach-failed"]}
    devices = [{**_gpu(f"gpu-{i}", "a100"), **conditions} for i in range(2)]
    devices += [_gpu(f"gpu-{i}", "a100") for i in range(2, 4)]
    custom = _custom(api_client)
    custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "resourceslices",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{fits}-{DRIVER}", "labels": {RUN_LABEL: run_id}},
            "spec": {
                "driver": DRIVER,
                "nodeName": fits,
                "pool": {"name": fits, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        },
    )

    def condition(type_: str, status: str) -> dict[str, Any]:
        return {
            "type": type_,
            "status": status,
            "reason": "Test",
            "message": "set by the test",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }

    # name -> (device, allocationTimestamp, the device's conditions)
    cases: dict[str, tuple[str, str | None, list[dict[str, Any]]]] = {
        "failed": ("gpu-0", None, [condition("attached", "False"), condition("attach-failed", "True")]),
        "timed-out": ("gpu-1", "2020-01-01T00:00:00Z", [condition("attached", "False")]),
    }
    for name, (device, stamp, device_conditions) in cases.items():
        claim = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": class_name}}]}},
        }
        created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", claim)
        allocation: dict[str, Any] = {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": fits, "device": device, **conditions}
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [fits]}]}
                ]
            },
        }
        if stamp is not None:
            allocation["allocationTimestamp"] = stamp
        created["status"] = {
            "allocation": allocation,
            "devices": [{"driver": DRIVER, "pool": fits, "device": device, "conditions": device_conditions}],
        }
        written = custom.replace_namespaced_custom_object_status(
            GROUP, VERSION, namespace, "resourceclaims", name, created
        )
        # The API server keeps what the test wrote (the gates are on): otherwise the case proves nothing.
        (kept,) = written["status"]["allocation"]["devices"]["results"]
        assert kept.get("bindingConditions") == ["attached"], written["status"]
        if stamp is not None:
            assert written["status"]["allocation"].get("allocationTimestamp"), written["status"]
        pod = make_pod(f"pod-{name}", run_id, scheduler_name="py-scheduler", node_selector={"pool": "py"})
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name}]
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
        core_v1.create_namespaced_pod(namespace, pod)

    def bound() -> dict[str, str] | None:
        nodes = {
            p["metadata"]["name"]: str(p["spec"].get("nodeName") or "") for p in list_pods(core_v1, namespace)
        }
        return nodes if all(nodes.get(f"pod-{n}") for n in cases) else None

    nodes = wait_for(bound, 90, "both pods bound once their claims were deallocated and allocated again")
    assert {nodes[f"pod-{n}"] for n in cases} == {fits}
    got: dict[str, str] = {}
    for after in _claims(api_client, namespace):
        status = after["status"]
        (result,) = status["allocation"]["devices"]["results"]
        assert "bindingConditions" not in result
        assert [r["name"] for r in status["reservedFor"]] == [f"pod-{after['metadata']['name']}"]
        assert not status.get("devices"), "the deallocation cleared the old device's status"
        got[after["metadata"]["name"]] = result["device"]
    assert sorted(got) == sorted(cases) and sorted(got.values()) == ["gpu-2", "gpu-3"]

    for name in cases:
        messages = [
            str(e.get("message"))
            for e in list_events(core_v1, namespace)
            if (e.get("involvedObject") or {}).get("name") == f"pod-{name}"
            and e.get("reason") == "FailedScheduling"
        ]
        assert any("deallocation of ResourceClaim completed" in m for m in messages), (name, messages)


def test_a_device_taint_rule_keeps_its_device_from_both_schedulers(
    api_client: Any,
    core_v1: Any,
    namespace: str,
    run_id: str,
    scheduler: SchedulerProcess,
    kube_scheduler: Any,
) -> None:
    """DRADeviceTaintRules is GA in v1.37: a DeviceTaintRule's NoSchedule taint on gpu-0 of each node
    counts as if the driver had published it, so both schedulers allocate gpu-1 instead."""
    class_name = _device_class(api_client, run_id)
    (ours,) = _nodes(api_client, run_id, "t", 1, "py")
    (theirs,) = _nodes(api_client, run_id, "u", 1, "kube")
    for node in (ours, theirs):
        _publish(api_client, run_id, node, ["a100", "a100"])
    rule = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "DeviceTaintRule",
        "metadata": {"name": f"maintenance-{run_id}", "labels": {RUN_LABEL: run_id}},
        "spec": {
            "deviceSelector": {"driver": DRIVER, "device": "gpu-0"},
            "taint": {"key": "maintenance", "value": "yes", "effect": "NoSchedule"},
        },
    }
    custom = _custom(api_client)
    custom.create_cluster_custom_object(GROUP, VERSION, "devicetaintrules", rule)
    try:
        _template(api_client, namespace, "one", class_name)
        core_v1.create_namespaced_pod(namespace, _claim_pod("py-one", run_id, "one", "py-scheduler", "py"))
        core_v1.create_namespaced_pod(
            namespace, _claim_pod("kube-one", run_id, "one", "default-scheduler", "kube")
        )
        allocations = wait_for(
            lambda: (a := _allocations_by_pod(api_client, namespace)) and len(a) == 2 and a,
            90,
            "both claims allocated",
        )
        py, kube = allocations["py-one"], allocations["kube-one"]
        assert [r["device"] for r in py["devices"]["results"]] == ["gpu-1"]
        assert _normalized(py, ours) == _normalized(kube, theirs)
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "devicetaintrules", f"maintenance-{run_id}")
