"""Informer-backed listers handed to plugins through the Handle.

Frameworks are built (and plugins ask for listers) before the informer factory exists, so a lister is
first a promise: ``InformerListers.lister(spec)`` records the kind and returns a lister that reads the
informer's store once :meth:`InformerListers.start` has created it. Scheduling starts only after every
informer has synced, so plugins never see the empty store of the promise.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from informers import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    InformerFactory,
    ResourceSpec,
    SharedInformer,
    index_by_namespace,
)
from informers.store import Indexer
from informers.store import IndexFunc as StoreIndexFunc
from scheduler.framework.listers import IndexFunc, KubeObject, ListerEventHandler, object_key


def _attach(
    informer: SharedInformer, handler: ListerEventHandler, accept: Callable[[KubeObject], bool] | None
) -> None:
    """Hands ``handler`` the informer's events, a tombstone unwrapped to the object it stands for."""

    def on_add(obj: Any, is_initial_list: bool = False) -> None:
        handler.on_add(obj)

    def on_delete(obj: Any) -> None:
        handler.on_delete(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    def accepts(obj: Any) -> bool:
        return accept is None or accept(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    informer.add_event_handler(
        on_add=on_add,
        on_update=handler.on_update,
        on_delete=on_delete,
        filter_func=accepts if accept is not None else None,
    )


class InformerLister:
    """A Lister over one informer's store (thread-safe reads: the store takes its own lock)."""

    __slots__ = ("_handlers", "_informer", "_store", "indexes", "spec")

    def __init__(self, spec: ResourceSpec) -> None:
        self.spec = spec
        self._store: Indexer | None = None
        self._informer: SharedInformer | None = None
        self._handlers: list[tuple[ListerEventHandler, Callable[[KubeObject], bool] | None]] = []
        # Indexes plugins asked for (IndexedLister), given to the informer when it is created.
        self.indexes: dict[str, IndexFunc] = {}

    def bind(self, informer: SharedInformer) -> None:
        self._store = informer.store
        self._informer = informer
        for handler, accept in self._handlers:
            _attach(informer, handler, accept)

    def add_index(self, name: str, index: IndexFunc) -> None:
        """See ``IndexedLister``: kept by the informer's store, updated with it under its lock."""
        self.indexes.setdefault(name, index)
        store = self._store
        if store is not None and name not in store.index_names():
            store.add_indexers({name: self.indexes[name]})

    def by_index(self, name: str, value: str) -> Sequence[KubeObject]:
        store = self._store
        if store is None or name not in self.indexes:
            return []
        return store.by_index(name, value)

    def add_event_handler(
        self, handler: ListerEventHandler, accept: Callable[[KubeObject], bool] | None = None
    ) -> None:
        """See ``WatchedLister``: attached when the informer is created (before it starts), so the
        handler hears the first list too, and the scheduler waits for it before scheduling."""
        self._handlers.append((handler, accept))
        if self._informer is not None:
            _attach(self._informer, handler, accept)

    @property
    def version(self) -> int:
        """Changes whenever the store's content does (see ``listers.lister_version``)."""
        store = self._store
        return -1 if store is None else store.version

    def list(self, namespace: str | None = None) -> Sequence[KubeObject]:
        store = self._store
        if store is None:
            return []
        if namespace is None or not self.spec.namespaced:
            return store.list()
        return store.by_index(NAMESPACE_INDEX, namespace)

    def get(self, name: str, namespace: str = "") -> KubeObject | None:
        store = self._store
        if store is None:
            return None
        return store.get(object_key(name, namespace if self.spec.namespaced else ""))


class InformerListers:
    """The kinds plugins asked for, one lister (and later one informer) per kind."""

    def __init__(self) -> None:
        self._listers: dict[ResourceSpec, InformerLister] = {}

    def lister(self, spec: ResourceSpec) -> InformerLister:
        found = self._listers.get(spec)
        if found is None:
            found = self._listers[spec] = InformerLister(spec)
        return found

    @property
    def kinds(self) -> list[ResourceSpec]:
        return list(self._listers)

    def start(
        self,
        factory: InformerFactory,
        field_selectors: Mapping[ResourceSpec, str] | None = None,
        unserved: Collection[ResourceSpec] = (),
    ) -> dict[ResourceSpec, SharedInformer]:
        """Creates the informer of every requested kind and binds its lister; the caller starts them.

        ``field_selectors``: the selector of an informer the scheduler already runs (pods), so that a
        plugin's lister shares it rather than watching the kind a second time. ``unserved``: kinds the
        API server serves at no version (discovery); their listers stay unbound and read as empty.
        """
        informers: dict[ResourceSpec, SharedInformer] = {}
        for spec, lister in self._listers.items():
            if spec in unserved:
                continue
            indexers: dict[str, StoreIndexFunc] = dict(lister.indexes)
            if spec.namespaced:
                indexers[NAMESPACE_INDEX] = index_by_namespace
            selector = (field_selectors or {}).get(spec)
            informer = factory.informer_for(spec, field_selector=selector, indexers=indexers or None)
            lister.bind(informer)
            informers[spec] = informer
        return informers
