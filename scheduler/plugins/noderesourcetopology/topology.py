"""Reading a NodeResourceTopology as scheduler-plugins v0.34.7 does: the node's topology manager
configuration (``pkg/noderesourcetopology/nodeconfig/topologymanager.go``) and its NUMA zones
(``createNUMANodeList`` of ``pluginhelpers.go``, ``numaresources.go``).

Configuration: kubelet's defaults (scope ``container``, policy ``none``, 8 NUMA nodes), then the
deprecated ``topologyPolicies`` (its first entry, one of the six ``<Policy><Scope>Level`` names), then the
top-level ``attributes`` ``topologyManagerScope``, ``topologyManagerPolicy`` and
``topologyManagerMaxNUMANodes`` in order, each taken only when its value is valid (a known scope or
policy; an integer above 1, capped at 1024).

Zones: only those of type ``Node`` named ``node-<id>`` (``id`` a non-negative decimal integer of at most
64) are NUMA nodes, in the order listed; each carries its resources' ``available`` amounts and its
``costs`` to the other NUMA nodes (by their ids). Any other zone is ignored.

An object that cannot be read (an unreadable quantity) counts as no object at all: upstream's client
fails to decode it and the plugin proceeds as if the node had published nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler.framework.objects_topology import nrt_attributes, nrt_topology_policies, nrt_zones
from scheduler.framework.quantity import QuantityError, parse_quantity

SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"
POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"
DEFAULT_MAX_NUMA_NODES = 8
LIMIT_NUMA_NODES = 1024
MAX_NUMA_ID = 64
ZONE_TYPE_NUMA_NODE = "Node"
NUMA_NAME_PREFIX = "node-"

ATTRIBUTE_SCOPE = "topologyManagerScope"
ATTRIBUTE_POLICY = "topologyManagerPolicy"
ATTRIBUTE_MAX_NUMA_NODES = "topologyManagerMaxNUMANodes"

_SCOPES = (SCOPE_CONTAINER, SCOPE_POD)
_POLICIES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)
# The deprecated topologyPolicies values and the (policy, scope) each stands for; "None",
# "BestEffort" and "Restricted" (no scope) leave the defaults.
_LEGACY_POLICIES: Mapping[str, tuple[str, str]] = {
    "SingleNUMANodePodLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_POD),
    "SingleNUMANodeContainerLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_CONTAINER),
    "BestEffortPodLevel": (POLICY_BEST_EFFORT, SCOPE_POD),
    "BestEffortContainerLevel": (POLICY_BEST_EFFORT, SCOPE_CONTAINER),
    "RestrictedPodLevel": (POLICY_RESTRICTED, SCOPE_POD),
    "RestrictedContainerLevel": (POLICY_RESTRICTED, SCOPE_CONTAINER),
}
# Go's strconv.Atoi: an optional sign and decimal digits, nothing else.
_ATOI = re.compile(r"^[+-]?[0-9]+$")


@dataclass(frozen=True, slots=True)
class TopologyManagerConfig:
    scope: str = SCOPE_CONTAINER
    policy: str = POLICY_NONE
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES

    def __str__(self) -> str:
        return f"policy={self.policy} scope={self.scope} maxNUMANodes={self.max_numa_nodes}"


def topology_manager_config(nrt: Mapping[str, Any]) -> TopologyManagerConfig:
    scope, policy, max_numa = SCOPE_CONTAINER, POLICY_NONE, DEFAULT_MAX_NUMA_NODES
    policies = nrt_topology_policies(nrt)
    if policies:
        legacy = _LEGACY_POLICIES.get(policies[0]) if isinstance(policies[0], str) else None
        if legacy is not None:
            policy, scope = legacy
    for attr in nrt_attributes(nrt):
        name, value = attr.get("name"), attr.get("value")
        if not isinstance(value, str):
            continue
        if name == ATTRIBUTE_SCOPE and value in _SCOPES:
            scope = value
        elif name == ATTRIBUTE_POLICY and value in _POLICIES:
            policy = value
        elif name == ATTRIBUTE_MAX_NUMA_NODES and _ATOI.match(value) and int(value) > 1:
            max_numa = min(int(value), LIMIT_NUMA_NODES)
    return TopologyManagerConfig(scope, policy, max_numa)


def numa_id(name: Any) -> int | None:
    """The id of a canonical NUMA zone name ``node-<id>``, or None."""
    if not isinstance(name, str) or not name.startswith(NUMA_NAME_PREFIX):
        return None
    digits = name[len(NUMA_NAME_PREFIX) :]
    if not _ATOI.match(digits):
        return None
    value = int(digits)
    return value if value >= 0 else None


@dataclass(slots=True)
class NUMANode:
    numa_id: int
    # resource name -> available amount (exact).
    resources: dict[str, Fraction]
    # other NUMA node id -> distance.
    costs: dict[int, int] = field(default_factory=dict)

    def copy(self) -> NUMANode:
        return NUMANode(self.numa_id, dict(self.resources), self.costs)


class UnreadableTopology(ValueError):
    """The object holds a value upstream's client could not decode."""


def _amount(raw: Any) -> Fraction:
    if raw is None:
        return Fraction(0)
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise UnreadableTopology(f"quantity {raw!r}")
    try:
        return parse_quantity(raw)
    except QuantityError as err:
        raise UnreadableTopology(str(err)) from None


def numa_nodes(nrt: Mapping[str, Any]) -> list[NUMANode]:
    """The NUMA nodes of ``nrt`` in listed order. Raises UnreadableTopology."""
    nodes: list[NUMANode] = []
    # NUMA id -> the (last) zone of that id: its costs are the node's.
    # (The API server has checked the object against the CRD's schema: the shapes hold, values may not.)
    zone_of: dict[int, Mapping[str, Any]] = {}
    for zone in nrt_zones(nrt):
        resources: dict[str, Fraction] = {}
        for info in zone.get("resources") or ():
            if isinstance(info, Mapping):
                resources[str(info.get("name", ""))] = _amount(info.get("available"))
        for cost in zone.get("costs") or ():
            if isinstance(cost, Mapping) and not isinstance(cost.get("value", 0), int):
                raise UnreadableTopology(f"cost {cost.get('value')!r}")
        if zone.get("type") != ZONE_TYPE_NUMA_NODE:
            continue
        ident = numa_id(zone.get("name"))
        # Upstream skips ids above 64 (and panics on 64 itself, indexing a 64-slot table): both skipped.
        if ident is None or ident >= MAX_NUMA_ID:
            continue
        zone_of[ident] = zone
        nodes.append(NUMANode(ident, resources))
    for node in nodes:
        node.costs = _costs(zone_of[node.numa_id])
    return nodes


def _costs(zone: Mapping[str, Any]) -> dict[int, int]:
    out: dict[int, int] = {}
    for cost in zone.get("costs") or ():
        if not isinstance(cost, Mapping):
            continue
        ident = numa_id(cost.get("name"))
        if ident is None or ident > MAX_NUMA_ID:
            continue
        out[ident] = int(cost.get("value") or 0)
    return out


def parse_topology(nrt: Mapping[str, Any]) -> tuple[TopologyManagerConfig, list[NUMANode]] | None:
    """(configuration, NUMA nodes) of an object, or None when upstream's client could not decode it."""
    try:
        return topology_manager_config(nrt), numa_nodes(nrt)
    except UnreadableTopology:
        return None
