"""The informer-backed listers plugins get from the Handle: secondary indexes (IndexedLister)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from informers import InformerFactory
from informers.resource import PODS
from scheduler.cache.informer_listers import InformerListers
from scheduler.framework.listers import IndexedLister


def labelled(name: str, group: str, namespace: str = "ns") -> dict[str, Any]:
    labels = {"group": group} if group else {}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def by_group(obj: Mapping[str, Any]) -> list[str]:
    group = obj["metadata"]["labels"].get("group")
    return [f"{obj['metadata']['namespace']}/{group}"] if group else []


def names(objs: Any) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


def test_an_index_asked_for_before_the_informer_exists_follows_every_store_change() -> None:
    factory = InformerFactory(transport=None)  # type: ignore[arg-type]
    listers = InformerListers()
    pods = listers.lister(PODS)
    assert isinstance(pods, IndexedLister)
    pods.add_index("group", by_group)
    pods.add_index("group", lambda obj: ["ignored"])  # a second profile's plugin: the first one stays
    assert pods.by_index("group", "ns/a") == []  # not started yet: reads as empty, as list() does
    store = listers.start(factory)[PODS].store
    store.upsert(labelled("a-0", "a"))
    store.upsert(labelled("a-1", "a"))
    store.upsert(labelled("b-0", "b"))
    store.upsert(labelled("a-0", "a", namespace="other"))
    assert names(pods.by_index("group", "ns/a")) == ["a-0", "a-1"]
    # No lag: an update moving a pod out of the group, or a delete, shows at once.
    store.upsert(labelled("a-1", ""))
    store.delete("ns/b-0")
    assert names(pods.by_index("group", "ns/a")) == ["a-0"]
    assert pods.by_index("group", "ns/b") == []
    assert pods.by_index("never-added", "ns/a") == []
    assert names(pods.list("ns")) == ["a-0", "a-1"]


def test_an_index_asked_for_after_start_indexes_what_the_store_already_holds() -> None:
    factory = InformerFactory(transport=None)  # type: ignore[arg-type]
    listers = InformerListers()
    pods = listers.lister(PODS)
    store = listers.start(factory)[PODS].store
    store.upsert(labelled("a-0", "a"))
    pods.add_index("group", by_group)
    assert names(pods.by_index("group", "ns/a")) == ["a-0"]
