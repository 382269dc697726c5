"""Raw API objects, their store keys, and the tombstone for deletes learned late."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

KubeObject: TypeAlias = dict[str, Any]
"""An API object exactly as the server sent it (parsed JSON), never a client model class."""


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """Delivered to ``on_delete`` when a relist finds an object gone that the watch never reported.

    ``obj`` is the last state the informer knew; the object may have changed before it was deleted.
    """

    key: str
    obj: KubeObject


TransformFunc: TypeAlias = Callable[[KubeObject], KubeObject]
"""Applied to every object before it is stored (client-go's TransformFunc); may edit in place."""


def strip_managed_fields(obj: KubeObject) -> KubeObject:
    """Drop ``metadata.managedFields`` (server-side-apply bookkeeping, often a third of an object)."""
    meta = obj.get("metadata")
    if meta:
        meta.pop("managedFields", None)
    return obj


def meta_namespace_key(obj: KubeObject) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones.

    ``scheduler.framework.objects.meta_namespace_key`` is the scheduler's copy (over any Mapping);
    this one stays because ``informers`` must not import ``scheduler``."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name: str = meta.get("name") or ""
    if namespace:
        return f"{namespace}/{name}"
    return name


def deletion_handling_key(obj: KubeObject | DeletedFinalStateUnknown) -> str:
    """Like :func:`meta_namespace_key` but also accepts a tombstone."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return meta_namespace_key(obj)


def split_key(key: str) -> tuple[str, str]:
    """``(namespace, name)`` from a store key; namespace is ``""`` for cluster-scoped keys."""
    namespace, sep, name = key.partition("/")
    if not sep:
        return "", namespace
    return namespace, name


def resource_version(obj: Mapping[str, Any]) -> str:
    rv: str = (obj.get("metadata") or {}).get("resourceVersion") or ""
    return rv


def revision(obj: Mapping[str, Any]) -> int | None:
    """The resourceVersion as a number, None when it is not one. Opaque by contract, but the API
    server's are etcd revisions, and ordering them is what client-go's assume cache does too."""
    try:
        return int(resource_version(obj))
    except ValueError:
        return None


def uid(obj: KubeObject) -> str:
    value: str = (obj.get("metadata") or {}).get("uid") or ""
    return value
