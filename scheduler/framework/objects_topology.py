"""Typed view of the NodeResourceTopology (``topology.node.k8s.io/v1alpha2``, the CRD of
github.com/k8stopologyawareschedwg/noderesourcetopology-api v0.1.2): what a node agent (the
topology-updater) publishes about a node's NUMA zones, one object per node, named as the node.

Same rules as ``scheduler.framework.objects``: ``TypedDict`` shapes over the raw JSON dicts, all fields
optional, read-only, and accessors that read a missing field and an explicit null alike as empty.
"""

from collections.abc import Mapping
from typing import Any, TypedDict

from scheduler.framework.objects import ObjectMeta

__all__ = [
    "AttributeInfo",
    "CostInfo",
    "NodeResourceTopology",
    "ResourceInfo",
    "Zone",
    "nrt_attributes",
    "nrt_topology_policies",
    "nrt_zones",
]


class AttributeInfo(TypedDict, total=False):
    name: str
    value: str


class CostInfo(TypedDict, total=False):
    # Another zone's name (``node-<id>``) and the distance to it.
    name: str
    value: int


class ResourceInfo(TypedDict, total=False):
    name: str
    # Quantities (a string or an integer).
    capacity: Any
    allocatable: Any
    available: Any


class Zone(TypedDict, total=False):
    name: str
    type: str
    parent: str
    costs: list[CostInfo]
    attributes: list[AttributeInfo]
    resources: list[ResourceInfo]


class NodeResourceTopology(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    # Deprecated in v1alpha2 (the top-level attributes replace it), still read.
    topologyPolicies: list[str]
    zones: list[Zone]
    attributes: list[AttributeInfo]


def _list(obj: Mapping[str, Any], key: str) -> list[Any]:
    value = obj.get(key)
    return value if isinstance(value, list) else []


def nrt_zones(nrt: Mapping[str, Any]) -> list[Zone]:
    return _list(nrt, "zones")


def nrt_attributes(nrt: Mapping[str, Any]) -> list[AttributeInfo]:
    return _list(nrt, "attributes")


def nrt_topology_policies(nrt: Mapping[str, Any]) -> list[str]:
    return _list(nrt, "topologyPolicies")
