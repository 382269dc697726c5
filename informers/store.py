"""Thread-safe object store keyed by ``namespace/name``, with named secondary indexes.

The informer writes only from the event loop; any thread may read. Reads return the stored dicts
themselves (no copies): treat them as read-only.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping

from informers.objects import KubeObject, meta_namespace_key

KeyFunc = Callable[[KubeObject], str]
IndexFunc = Callable[[KubeObject], Iterable[str]]
"""Returns the index values of an object; an object may have none, one or several."""

NAMESPACE_INDEX = "namespace"
NODE_NAME_INDEX = "nodeName"


def index_by_namespace(obj: KubeObject) -> builtins.list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def index_by_node_name(obj: KubeObject) -> builtins.list[str]:
    """Pods by ``spec.nodeName``; unassigned pods are in no bucket."""
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


class Indexer:
    """Store plus indexes, the counterpart of client-go's ``cache.Indexer``."""

    def __init__(
        self, key_func: KeyFunc = meta_namespace_key, indexers: Mapping[str, IndexFunc] | None = None
    ):
        self._key_func = key_func
        self._lock = threading.RLock()
        self._items: dict[str, KubeObject] = {}
        self._indexers: dict[str, IndexFunc] = {}
        # The indexers an update (a new version of a stored key) can move: all but the namespace
        # index when keys are ``namespace/name``, as the key fixes the namespace. The pod informer
        # updates every pod at least once (the bind's echo), on the event loop.
        self._update_indexers: dict[str, IndexFunc] = {}
        # index name -> index value -> keys
        self._indices: dict[str, dict[str, set[str]]] = {}
        # Counts changes (upsert, delete, replace), so readers can keep what they derived from the
        # content until it changes.
        self.version = 0
        if indexers:
            self.add_indexers(indexers)

    # -- reads -------------------------------------------------------------------------------------

    def key_of(self, obj: KubeObject) -> str:
        return self._key_func(obj)

    def get(self, key: str) -> KubeObject | None:
        with self._lock:
            return self._items.get(key)

    def get_for(self, obj: KubeObject) -> KubeObject | None:
        """The stored version of the object with ``obj``'s key."""
        return self.get(self._key_func(obj))

    def list(self) -> builtins.list[KubeObject]:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._items)

    def items(self) -> dict[str, KubeObject]:
        """A snapshot ``key -> object`` (a new dict; the objects are shared)."""
        with self._lock:
            return dict(self._items)

    def by_index(self, index_name: str, value: str) -> builtins.list[KubeObject]:
        with self._lock:
            keys = self._index(index_name).get(value, ())
            return [self._items[k] for k in keys]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        with self._lock:
            return list(self._index(index_name).get(value, ()))

    def index_values(self, index_name: str) -> builtins.list[str]:
        with self._lock:
            return list(self._index(index_name))

    def index_names(self) -> builtins.list[str]:
        with self._lock:
            return list(self._indexers)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def _index(self, index_name: str) -> dict[str, set[str]]:
        try:
            return self._indices[index_name]
        except KeyError:
            raise KeyError(f"no index named {index_name!r}") from None

    # -- writes ------------------------------------------------------------------------------------

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes; allowed at any time, existing objects are indexed at once."""
        with self._lock:
            for name in indexers:
                if name in self._indexers:
                    raise ValueError(f"index {name!r} already exists")
            for name, fn in indexers.items():
                self._indexers[name] = fn
                if not (fn is index_by_namespace and self._key_func is meta_namespace_key):
                    self._update_indexers[name] = fn
                index: dict[str, set[str]] = {}
                for key, obj in self._items.items():
                    for value in fn(obj):
                        index.setdefault(value, set()).add(key)
                self._indices[name] = index

    def upsert(self, obj: KubeObject) -> KubeObject | None:
        """Insert or replace; returns the previous object with that key, if any."""
        key = self._key_func(obj)
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self.version += 1
            if old is None:
                if self._indexers:
                    self._reindex(self._indexers, key, None, obj)
            elif self._update_indexers:
                self._reindex(self._update_indexers, key, old, obj)
            return old

    add = upsert
    update = upsert

    def delete(self, key: str) -> KubeObject | None:
        """Remove by key; returns the removed object, if any."""
        with self._lock:
            old = self._items.pop(key, None)
            self.version += 1
            if old is not None and self._indexers:
                self._reindex(self._indexers, key, old, None)
            return old

    def replace(self, items: Mapping[str, KubeObject]) -> dict[str, KubeObject]:
        """Swap in a complete new content (``key -> object``); returns the old content."""
        new = dict(items)
        indices: dict[str, dict[str, set[str]]] = {}
        for name, fn in self._indexers.items():
            index: dict[str, set[str]] = {}
            for key, obj in new.items():
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)
            indices[name] = index
        with self._lock:
            if set(indices) != set(self._indexers):  # an index was added meanwhile from another thread
                return self.replace(new)
            old, self._items, self._indices = self._items, new, indices
            self.version += 1
            return old

    def _reindex(
        self, indexers: Mapping[str, IndexFunc], key: str, old: KubeObject | None, new: KubeObject | None
    ) -> None:
        for name, fn in indexers.items():
            old_list = fn(old) if old is not None else ()
            new_list = fn(new) if new is not None else ()
            if old_list == new_list:
                # The usual update (same namespace, same node): no sets to build for every event.
                continue
            old_values, new_values = set(old_list), set(new_list)
            if old_values == new_values:
                continue
            index = self._indices[name]
            for value in old_values - new_values:
                bucket = index.get(value)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del index[value]
            for value in new_values - old_values:
                index.setdefault(value, set()).add(key)
