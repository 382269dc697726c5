"""Node names grouped by zone, listed round-robin across zones (upstream's ``node_tree.go``).

The scheduler samples only a share of the nodes per cycle (percentageOfNodesToScore) starting at a
rotating index. Interleaving the zones in the node list makes any such window span the zones evenly
instead of covering one zone's nodes first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.objects import object_meta

LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"


def zone_key(labels: Mapping[str, str] | None) -> str:
    """component-helpers' ``GetZoneKey``: "" for no zone, else region and zone joined.

    The deprecated beta labels win when present, as upstream. The NUL separator keeps a region or zone
    containing ":" from colliding with another pair.
    """
    if not labels:
        return ""
    zone = labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE)
    if zone is None:
        zone = labels.get(LABEL_TOPOLOGY_ZONE, "")
    region = labels.get(LABEL_FAILURE_DOMAIN_BETA_REGION)
    if region is None:
        region = labels.get(LABEL_TOPOLOGY_REGION, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def node_zone_key(node: Mapping[str, Any]) -> str:
    return zone_key(object_meta(node).get("labels"))


class NodeTree:
    """Zones in first-seen order, each holding its node names in insertion order."""

    __slots__ = ("_node_zone", "_zones")

    def __init__(self) -> None:
        # Dicts used as ordered sets: O(1) removal, insertion order kept.
        self._zones: dict[str, dict[str, None]] = {}
        self._node_zone: dict[str, str] = {}

    @property
    def num_nodes(self) -> int:
        return len(self._node_zone)

    def __contains__(self, name: object) -> bool:
        return name in self._node_zone

    def add(self, name: str, zone: str) -> bool:
        """Adds the node; False if it is already present (in any zone)."""
        if name in self._node_zone:
            return False
        self._zones.setdefault(zone, {})[name] = None
        self._node_zone[name] = zone
        return True

    def remove(self, name: str) -> bool:
        zone = self._node_zone.pop(name, None)
        if zone is None:
            return False
        names = self._zones[zone]
        del names[name]
        if not names:
            del self._zones[zone]
        return True

    def update(self, name: str, zone: str) -> bool:
        """Moves the node to ``zone`` (adding it if absent); True if the tree changed."""
        current = self._node_zone.get(name)
        if current == zone:
            return False
        self.remove(name)
        self.add(name, zone)
        return True

    def zone_of(self, name: str) -> str | None:
        return self._node_zone.get(name)

    def list(self) -> list[str]:
        """The first node of each zone, then the second of each, and so on."""
        columns = [list(names) for names in self._zones.values()]
        out: list[str] = []
        depth = 0
        while columns:
            out.extend(column[depth] for column in columns)
            depth += 1
            columns = [column for column in columns if len(column) > depth]
        return out
