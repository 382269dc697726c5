"""The typed views of raw API objects: a missing field and an explicit null both read as empty."""

from __future__ import annotations

from typing import Any

import pytest

from informers.objects import meta_namespace_key as informers_meta_namespace_key
from scheduler.framework import (
    DEFAULT_POD_SCHEDULER_NAME,
    annotations_of,
    labels_of,
    meta_namespace_key,
    name_of,
    namespace_of,
    namespaced_name,
    node_spec,
    node_status,
    object_meta,
    pod_spec,
    pod_status,
    resources_of,
    scheduler_name_of,
    uid_of,
)
from scheduler.framework.objects_resource import (
    allocation_results,
    claim_allocation,
    claim_devices,
    claim_requests,
    claim_reserved_for,
    claim_spec,
    claim_status,
    device_class_spec,
    selector_expression,
    slice_pool,
    slice_spec,
)
from scheduler.framework.objects_scheduling import (
    coscheduling_pod_group_spec,
    coscheduling_pod_group_status,
    lease_spec,
    pdb_spec,
    pdb_status,
    pod_group_scheduling_policy,
    pod_group_spec,
    pod_group_status,
    workload_spec,
)
from scheduler.framework.objects_storage import (
    csi_driver_spec,
    csi_node_driver_limit,
    csi_node_drivers,
    pv_claim_ref,
    pv_node_affinity,
    pv_spec,
    pv_status,
    pvc_spec,
    pvc_status,
    pvc_storage_requests,
)

ACCESSORS = [
    (object_meta, "metadata"),
    (pod_spec, "spec"),
    (pod_status, "status"),
    (node_spec, "spec"),
    (node_status, "status"),
]


@pytest.mark.parametrize(("accessor", "field"), ACCESSORS)
def test_missing_and_null_read_as_empty(accessor: Any, field: str) -> None:
    assert accessor({}) == {}
    assert accessor({field: None}) == {}
    assert accessor({field: {}}) == {}


@pytest.mark.parametrize(("accessor", "field"), ACCESSORS)
def test_present_field_is_the_same_dict(accessor: Any, field: str) -> None:
    value = {"x": 1}
    # A view, not a copy: as cheap as the lookup it replaces, and identity-preserving.
    assert accessor({field: value}) is value


def test_pod_fields() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {"nodeName": "n1", "schedulerName": "s"},
        "status": {"nominatedNodeName": "n2", "phase": "Running"},
    }
    assert object_meta(pod).get("uid") == "u1"
    assert pod_spec(pod).get("nodeName") == "n1"
    assert pod_status(pod).get("nominatedNodeName") == "n2"
    assert pod_status(pod).get("phase") == "Running"


def test_node_fields() -> None:
    node: dict[str, Any] = {
        "metadata": {"name": "n1"},
        "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "2"}},
    }
    assert node_spec(node).get("unschedulable") is True
    assert node_spec(node).get("taints") == [{"key": "k", "effect": "NoSchedule"}]
    assert node_status(node).get("allocatable") == {"cpu": "2"}


@pytest.mark.parametrize("accessor", [labels_of, annotations_of])
def test_labels_and_annotations(accessor: Any) -> None:
    field = "labels" if accessor is labels_of else "annotations"
    assert accessor({}) == {}
    assert accessor({"metadata": None}) == {}
    assert accessor({"metadata": {}}) == {}
    assert accessor({"metadata": {field: None}}) == {}
    assert accessor({"metadata": {field: {"a": "b"}}}) == {"a": "b"}


def test_namespaced_name() -> None:
    assert namespaced_name({"metadata": {"namespace": "ns", "name": "p"}}) == "ns/p"
    # Cluster-scoped, or no metadata at all: the missing parts are empty, as the old inline f-strings.
    assert namespaced_name({"metadata": {"name": "n1"}}) == "/n1"
    assert namespaced_name({"metadata": None}) == "/"
    assert namespaced_name({}) == "/"


# --- the accessors added with the views of the other kinds --------------------------------------

# One-level accessors of every kind: (accessor, field).
KIND_ACCESSORS = [
    (claim_spec, "spec"),
    (claim_status, "status"),
    (slice_spec, "spec"),
    (device_class_spec, "spec"),
    (pv_spec, "spec"),
    (pv_status, "status"),
    (pvc_spec, "spec"),
    (pvc_status, "status"),
    (csi_driver_spec, "spec"),
    (pod_group_spec, "spec"),
    (pod_group_status, "status"),
    (workload_spec, "spec"),
    (coscheduling_pod_group_spec, "spec"),
    (coscheduling_pod_group_status, "status"),
    (pdb_spec, "spec"),
    (pdb_status, "status"),
    (lease_spec, "spec"),
    (resources_of, "resources"),
]


@pytest.mark.parametrize(("accessor", "field"), KIND_ACCESSORS)
def test_kind_accessors_read_missing_and_null_as_empty(accessor: Any, field: str) -> None:
    assert accessor({}) == {}
    assert accessor({field: None}) == {}
    value = {"x": 1}
    assert accessor({field: value}) is value
    # The empty value is a fresh dict each time: a caller that fills it cannot leak into the next read.
    first = accessor({})
    first["leak"] = 1
    assert accessor({}) == {}


# Two-level accessors: (accessor, path to the value, empty result).
NESTED_ACCESSORS: list[tuple[Any, tuple[str, ...], Any]] = [
    (claim_devices, ("spec", "devices"), {}),
    (claim_requests, ("spec", "devices", "requests"), ()),
    (claim_reserved_for, ("status", "reservedFor"), ()),
    (allocation_results, ("devices", "results"), ()),
    (slice_pool, ("spec", "pool"), {}),
    (pv_node_affinity, ("spec", "nodeAffinity"), {}),
    (pv_claim_ref, ("spec", "claimRef"), {}),
    (pvc_storage_requests, ("spec", "resources", "requests"), {}),
    (pod_group_scheduling_policy, ("spec", "schedulingPolicy"), {}),
    (csi_node_drivers, ("spec", "drivers"), ()),
]


def _nest(path: tuple[str, ...], leaf: Any) -> dict[str, Any]:
    obj: Any = leaf
    for key in reversed(path):
        obj = {key: obj}
    return dict(obj)


@pytest.mark.parametrize(("accessor", "path", "empty"), NESTED_ACCESSORS)
def test_nested_accessors_read_any_missing_or_null_level_as_empty(
    accessor: Any, path: tuple[str, ...], empty: Any
) -> None:
    assert accessor({}) == empty
    for depth in range(1, len(path) + 1):
        # Every level in turn empty (the levels below it missing) and null.
        assert accessor(_nest(path[:depth], {})) == empty
        assert accessor(_nest(path[:depth], None)) == empty
    value: Any = [{"name": "r"}] if isinstance(empty, tuple) else {"k": "v"}
    assert accessor(_nest(path, value)) is value


def test_csi_node_drivers_of_no_csi_node() -> None:
    assert csi_node_drivers(None) == ()


def test_csi_node_driver_limit() -> None:
    assert csi_node_driver_limit({"name": "d"}) is None
    assert csi_node_driver_limit({"allocatable": None}) is None
    assert csi_node_driver_limit({"allocatable": {}}) is None
    assert csi_node_driver_limit({"allocatable": {"count": 0}}) == 0
    assert csi_node_driver_limit({"allocatable": {"count": 5}}) == 5


def test_claim_allocation() -> None:
    assert claim_allocation({}) is None
    assert claim_allocation({"status": None}) is None
    assert claim_allocation({"status": {"allocation": None}}) is None
    # An empty allocation is still an allocation (the claim is allocated); a non-object is not.
    assert claim_allocation({"status": {"allocation": {}}}) == {}
    assert claim_allocation({"status": {"allocation": "x"}}) is None
    allocation: dict[str, Any] = {"devices": {"results": []}}
    assert claim_allocation({"status": {"allocation": allocation}}) is allocation


def test_selector_expression() -> None:
    assert selector_expression({}) == ""
    assert selector_expression({"cel": None}) == ""
    assert selector_expression({"cel": {"expression": None}}) == ""
    assert selector_expression({"cel": {"expression": "true"}}) == "true"


@pytest.mark.parametrize(
    ("accessor", "field"), [(name_of, "name"), (namespace_of, "namespace"), (uid_of, "uid")]
)
def test_metadata_strings(accessor: Any, field: str) -> None:
    assert accessor({}) == ""
    assert accessor({"metadata": None}) == ""
    assert accessor({"metadata": {}}) == ""
    assert accessor({"metadata": {field: None}}) == ""
    assert accessor({"metadata": {field: "v"}}) == "v"


def test_scheduler_name_of() -> None:
    assert DEFAULT_POD_SCHEDULER_NAME == "default-scheduler"
    assert scheduler_name_of({}) == "default-scheduler"
    assert scheduler_name_of({"spec": None}) == "default-scheduler"
    assert scheduler_name_of({"spec": {"schedulerName": None}}) == "default-scheduler"
    assert scheduler_name_of({"spec": {"schedulerName": ""}}) == "default-scheduler"
    assert scheduler_name_of({"spec": {"schedulerName": "py-scheduler"}}) == "py-scheduler"


def test_meta_namespace_key_against_namespaced_name() -> None:
    pod = {"metadata": {"namespace": "ns", "name": "p"}}
    # The two keys agree on namespaced objects...
    assert meta_namespace_key(pod) == namespaced_name(pod) == "ns/p"
    # ...and differ on cluster-scoped ones: the store key is the bare name.
    pv = {"metadata": {"name": "pv-1"}}
    assert meta_namespace_key(pv) == "pv-1"
    assert namespaced_name(pv) == "/pv-1"
    assert meta_namespace_key({"metadata": {"namespace": None, "name": "n"}}) == "n"
    assert meta_namespace_key({}) == ""


def test_meta_namespace_key_matches_the_informers_copy() -> None:
    objects: list[dict[str, Any]] = [
        {"metadata": {"namespace": "ns", "name": "a"}},
        {"metadata": {"name": "b"}},
        {"metadata": {}},
    ]
    for obj in objects:
        assert meta_namespace_key(obj) == informers_meta_namespace_key(obj)


def test_spec_template_and_continue_accessors_read_missing_and_null_as_empty() -> None:
    from scheduler.framework.objects import list_continue, pod_template_of, spec_of

    deployment = {"spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "web"}}}}}
    assert spec_of(deployment)["replicas"] == 2
    assert spec_of({}) == {} and spec_of({"spec": None}) == {}
    assert pod_template_of(deployment) == {"metadata": {"labels": {"app": "web"}}}
    assert pod_template_of({"spec": None}) == {} and pod_template_of({"spec": {"template": None}}) == {}
    assert list_continue({"metadata": {"continue": "abc"}}) == "abc"
    assert list_continue({"metadata": None}) == "" and list_continue({}) == ""
