"""The typed views of raw API objects: a missing field and an explicit null both read as empty."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import (
    annotations_of,
    labels_of,
    namespaced_name,
    node_spec,
    node_status,
    object_meta,
    pod_spec,
    pod_status,
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
