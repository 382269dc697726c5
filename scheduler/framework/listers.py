"""Read-only listers of other API kinds for plugins (upstream's ``SharedInformerFactory`` listers).

A plugin asks its Handle for a lister at construction: ``handle.lister(NAMESPACES)``. The scheduler starts
an informer for that kind only because some enabled plugin asked, and scheduling begins only once it has
synced, so a lister never answers from a half-filled store during a cycle. Objects are the raw JSON dicts
of the watch: treat them as read-only.

Unit tests give plugins a :class:`StaticLister` (or a ``FakeHandle`` built on it) at the same seam.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from informers.resource import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    NAMESPACES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    POD_DISRUPTION_BUDGETS,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    WORKLOAD_PODGROUPS,
    ResourceSpec,
)
from scheduler.framework.objects import object_meta

KubeObject = Mapping[str, Any]

__all__ = [
    "CSI_DRIVERS",
    "CSI_NODES",
    "CSI_STORAGE_CAPACITIES",
    "DEVICE_CLASSES",
    "DEVICE_TAINT_RULES",
    "NAMESPACES",
    "PERSISTENT_VOLUMES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODGROUPS",
    "PODS",
    "POD_DISRUPTION_BUDGETS",
    "PRIORITY_CLASSES",
    "REPLICATION_CONTROLLERS",
    "REPLICA_SETS",
    "RESOURCE_CLAIMS",
    "RESOURCE_CLAIM_TEMPLATES",
    "RESOURCE_SLICES",
    "SERVICES",
    "STATEFUL_SETS",
    "STORAGE_CLASSES",
    "WORKLOAD_PODGROUPS",
    "KubeObject",
    "Lister",
    "ResourceSpec",
    "StaticLister",
    "lister_version",
    "object_key",
]


class Lister(Protocol):
    """The objects of one kind, as the scheduler's informer last saw them."""

    def list(self, namespace: str | None = None) -> Sequence[KubeObject]:
        """All objects, or those of ``namespace`` (ignored for cluster-scoped kinds)."""
        ...

    def get(self, name: str, namespace: str = "") -> KubeObject | None:
        """One object by name (and namespace, for namespaced kinds), or None."""
        ...


def object_key(name: str, namespace: str = "") -> str:
    """The store key of an object: ``namespace/name``, or ``name`` for cluster-scoped kinds."""
    return f"{namespace}/{name}" if namespace else name


def lister_version(lister: Lister) -> int | None:
    """A number that changes whenever ``lister``'s content does, or None if the lister keeps none.

    Plugins key what they derive from listed objects by it (with the snapshot's generations for the
    nodes), so it is recomputed only after a change. The informer-backed and static listers keep one.
    """
    version = getattr(lister, "version", None)
    return version if isinstance(version, int) else None


class StaticLister:
    """A Lister over a fixed list of objects: for unit tests and for simulate's read-only snapshots."""

    def __init__(self, objects: Iterable[KubeObject] = ()) -> None:
        self._by_key: dict[str, KubeObject] = {}
        self.version = 0
        for obj in objects:
            self.add(obj)

    def add(self, obj: KubeObject) -> None:
        meta = object_meta(obj)
        self._by_key[object_key(meta.get("name", ""), meta.get("namespace", ""))] = obj
        self.version += 1

    def delete(self, name: str, namespace: str = "") -> None:
        self._by_key.pop(object_key(name, namespace), None)
        self.version += 1

    def list(self, namespace: str | None = None) -> Sequence[KubeObject]:
        if namespace is None:
            return list(self._by_key.values())
        return [o for o in self._by_key.values() if object_meta(o).get("namespace") == namespace]

    def get(self, name: str, namespace: str = "") -> KubeObject | None:
        return self._by_key.get(object_key(name, namespace))
