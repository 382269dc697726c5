"""Read-only listers of other API kinds for plugins (upstream's ``SharedInformerFactory`` listers).

A plugin asks its Handle for a lister at construction: ``handle.lister(NAMESPACES)``. The scheduler starts
an informer for that kind only because some enabled plugin asked, and scheduling begins only once it has
synced, so a lister never answers from a half-filled store during a cycle. Objects are the raw JSON dicts
of the watch: treat them as read-only.

Unit tests give plugins a :class:`StaticLister` (or a ``FakeHandle`` built on it) at the same seam.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from informers.resource import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    ELASTIC_QUOTAS,
    NAMESPACES,
    NODE_RESOURCE_TOPOLOGIES,
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
    RESOURCE_QUOTAS,
    RESOURCE_SLICES,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    WORKLOAD_PODGROUPS,
    ResourceSpec,
)
from scheduler.framework.objects import object_meta

KubeObject = Mapping[str, Any]
IndexFunc = Callable[[KubeObject], Iterable[str]]
"""The index values of an object (none, one or several), as client-go's ``cache.IndexFunc``."""

__all__ = [
    "CSI_DRIVERS",
    "CSI_NODES",
    "CSI_STORAGE_CAPACITIES",
    "DEVICE_CLASSES",
    "DEVICE_TAINT_RULES",
    "ELASTIC_QUOTAS",
    "NAMESPACES",
    "NODE_RESOURCE_TOPOLOGIES",
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
    "RESOURCE_QUOTAS",
    "RESOURCE_SLICES",
    "SERVICES",
    "STATEFUL_SETS",
    "STORAGE_CLASSES",
    "VOLUME_ATTACHMENTS",
    "WORKLOAD_PODGROUPS",
    "IndexFunc",
    "IndexedLister",
    "KubeObject",
    "Lister",
    "ListerEventHandler",
    "ResourceSpec",
    "StaticLister",
    "WatchedLister",
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


class ListerEventHandler(Protocol):
    """Changes of a listed kind, on the event loop, in the order the watch saw them (upstream's
    ResourceEventHandler on a shared informer). A deleted object arrives as its last known state."""

    def on_add(self, obj: KubeObject) -> None: ...

    def on_update(self, old: KubeObject, new: KubeObject) -> None: ...

    def on_delete(self, obj: KubeObject) -> None: ...


@runtime_checkable
class WatchedLister(Lister, Protocol):
    """A Lister that also tells a plugin about changes, for a cache the plugin keeps incrementally (as
    upstream plugins add handlers to the informer factory's informers). ``accept`` narrows what the
    handler sees: an update moving an object out of it arrives as a delete, into it as an add. Objects
    already listed when the handler is added arrive as adds."""

    def add_event_handler(
        self, handler: ListerEventHandler, accept: Callable[[KubeObject], bool] | None = None
    ) -> None: ...


@runtime_checkable
class IndexedLister(Lister, Protocol):
    """A Lister that keeps the secondary indexes plugins ask for (upstream plugins call AddIndexers on
    the shared informer, then ByIndex): ``add_index`` at construction, ``by_index`` in a cycle. The
    index is kept with the store itself, so it never lags behind ``list``."""

    def add_index(self, name: str, index: IndexFunc) -> None:
        """Index every object, present and future, by ``index``. A name already added keeps its first
        function (the plugins of several profiles ask for the same index)."""
        ...

    def by_index(self, name: str, value: str) -> Sequence[KubeObject]:
        """The objects whose index ``name`` holds ``value``; empty for an index never added."""
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
        self._handlers: list[tuple[ListerEventHandler, Callable[[KubeObject], bool] | None]] = []
        self._indexes: dict[str, IndexFunc] = {}
        self.version = 0
        for obj in objects:
            self.add(obj)

    def add(self, obj: KubeObject) -> None:
        """Adds or replaces ``obj``; handlers hear an add or an update."""
        meta = object_meta(obj)
        key = object_key(meta.get("name", ""), meta.get("namespace", ""))
        old = self._by_key.get(key)
        self._by_key[key] = obj
        self.version += 1
        for handler, accept in self._handlers:
            was = old is not None and (accept is None or accept(old))
            now = accept is None or accept(obj)
            if was and now and old is not None:
                handler.on_update(old, obj)
            elif now:
                handler.on_add(obj)
            elif was and old is not None:
                handler.on_delete(old)

    def delete(self, name: str, namespace: str = "") -> None:
        old = self._by_key.pop(object_key(name, namespace), None)
        self.version += 1
        if old is not None:
            for handler, accept in self._handlers:
                if accept is None or accept(old):
                    handler.on_delete(old)

    def add_event_handler(
        self, handler: ListerEventHandler, accept: Callable[[KubeObject], bool] | None = None
    ) -> None:
        self._handlers.append((handler, accept))
        for obj in self._by_key.values():
            if accept is None or accept(obj):
                handler.on_add(obj)

    def list(self, namespace: str | None = None) -> Sequence[KubeObject]:
        if namespace is None:
            return list(self._by_key.values())
        return [o for o in self._by_key.values() if object_meta(o).get("namespace") == namespace]

    def get(self, name: str, namespace: str = "") -> KubeObject | None:
        return self._by_key.get(object_key(name, namespace))

    def add_index(self, name: str, index: IndexFunc) -> None:
        self._indexes.setdefault(name, index)

    def by_index(self, name: str, value: str) -> Sequence[KubeObject]:
        # Computed per call: a static lister is small (tests, simulate's snapshots).
        index = self._indexes.get(name)
        if index is None:
            return []
        return [o for o in self._by_key.values() if value in index(o)]
