"""Assumed PVs and PVCs over an informer lister (``volumebinding/passive_assume_cache.go``).

Reserve records the binding a pod will make (a PV with its ``claimRef``, a PVC with its selected node)
before the API knows, so the next pod's Filter already sees the PV as taken. An assumed object counts
only while the informer still holds the very version it was derived from: as soon as a newer version
arrives (our own update, or anyone else's), the informer's object wins. That makes expiry passive:
nothing has to be told about watch events.

Reserve and Unreserve run on the loop, PreBind in binding threads: a lock guards the assumed map.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from informers.objects import resource_version
from scheduler.framework import Lister, meta_namespace_key
from scheduler.plugins.helper.volumes import KubeObject


class NotFoundError(LookupError):
    """The informer does not hold the object."""


class OutOfSyncError(RuntimeError):
    """The object to assume was derived from a version the informer no longer holds."""


# The informer's store key: PersistentVolumes (cluster-scoped) by name, claims by namespace/name.
_key = meta_namespace_key


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return name, namespace


class AssumeCache:
    """The informer's objects, overlaid with assumed versions that are still current."""

    def __init__(self, lister: Lister, kind: str) -> None:
        self._lister = lister
        self.kind = kind
        self._lock = threading.Lock()
        self._assumed: dict[str, KubeObject] = {}

    def get_api_obj(self, key: str) -> KubeObject:
        """The informer's object; raises NotFoundError."""
        name, namespace = _split(key)
        obj = self._lister.get(name, namespace)
        if obj is None:
            raise NotFoundError(f'{self.kind} "{key}" not found')
        return obj

    def get(self, key: str) -> KubeObject:
        """The assumed object if it is still derived from the informer's version, else the informer's."""
        obj = self.get_api_obj(key)
        with self._lock:
            assumed = self._assumed.get(key)
            if assumed is None:
                return obj
            if resource_version(assumed) == resource_version(obj):
                return assumed
            # The informer moved on: the assumption has expired (upstream's mayExpire).
            del self._assumed[key]
            return obj

    def list(self, keep: Callable[[KubeObject], bool] | None = None) -> Sequence[KubeObject]:
        objects = self._lister.list()
        with self._lock:
            if not self._assumed:
                return [o for o in objects if keep is None or keep(o)]
            result = []
            for stored in objects:
                assumed = self._assumed.get(_key(stored))
                current = (
                    assumed
                    if assumed is not None and resource_version(assumed) == resource_version(stored)
                    else stored
                )
                if keep is None or keep(current):
                    result.append(current)
            return result

    def assume(self, obj: KubeObject) -> None:
        key = _key(obj)
        stored = self.get_api_obj(key)
        if resource_version(stored) != resource_version(obj):
            raise OutOfSyncError(
                f'"{key}" is out of sync (stored: {resource_version(stored)}, '
                f"assume: {resource_version(obj)})"
            )
        with self._lock:
            self._assumed[key] = obj

    def restore(self, obj: KubeObject) -> None:
        """Drops the assumption ``obj`` made, if it is still the one recorded."""
        key = _key(obj)
        with self._lock:
            assumed = self._assumed.get(key)
            if assumed is not None and resource_version(assumed) == resource_version(obj):
                del self._assumed[key]

    def assumed_count(self) -> int:
        with self._lock:
            return len(self._assumed)
