"""Informers against the real control plane: paged initial sync, event order, selectors, slow handlers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import pytest

from informers import (
    NAMESPACES,
    NODE_NAME_INDEX,
    PODS,
    AsyncTransport,
    DeletedFinalStateUnknown,
    InformerFactory,
    SharedInformer,
    index_by_node_name,
    meta_namespace_key,
)
from informers.testing import create_all, eventually

pytestmark = pytest.mark.integration

NO_SCHEDULER = "informer-test-nobody"  # no scheduler picks these pods up


def pod_body(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "schedulerName": NO_SCHEDULER,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


class CountingTransport:
    """Passes through to the real (pipelined) transport, recording each LIST page and WATCH request."""

    def __init__(self, inner: AsyncTransport) -> None:
        self.inner = inner
        self.lists: list[dict[str, str]] = []
        self.watches: list[dict[str, str]] = []
        real = inner.request_bytes

        async def recording(method: str, path: str, **kwargs: Any) -> bytes:
            if method == "GET":
                self.lists.append(dict(kwargs.get("params") or {}))
            return await real(method, path, **kwargs)

        inner.request_bytes = recording  # type: ignore[method-assign]

    async def list(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        return await self.inner.list(path, params)

    def list_pages(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[dict[str, Any], None]:
        return self.inner.list_pages(path, params)

    def watch(self, path: str, params: Mapping[str, str]) -> AsyncGenerator[dict[str, Any], None]:
        self.watches.append(dict(params))
        return self.inner.watch(path, params)


async def fresh_list(
    transport: AsyncTransport, path: str, params: Mapping[str, str] | None = None
) -> dict[str, str]:
    """key -> resourceVersion from one unpaginated consistent LIST."""
    body = await transport.list(path, dict(params or {}))
    return {meta_namespace_key(o): o["metadata"]["resourceVersion"] for o in body["items"]}


def store_versions(informer: SharedInformer) -> dict[str, str]:
    return {k: v["metadata"]["resourceVersion"] for k, v in informer.store.items().items()}


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
        self.events.append(("add", meta_namespace_key(obj), obj["metadata"]["resourceVersion"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(("update", meta_namespace_key(new), new["metadata"]["resourceVersion"]))

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.events.append(("tombstone", obj.key, obj.obj["metadata"]["resourceVersion"]))
        else:
            self.events.append(("delete", meta_namespace_key(obj), obj["metadata"]["resourceVersion"]))


async def test_initial_sync_of_1200_pods_crosses_pages(kubeconfig: str, namespace: str) -> None:
    async with AsyncTransport.from_kubeconfig(kubeconfig) as transport:
        path = PODS.path(namespace)
        await create_all(transport, path, [pod_body(f"p-{i:04d}") for i in range(1200)], concurrency=24)
        counting = CountingTransport(transport)
        informer = SharedInformer(counting, PODS, namespace=namespace, page_size=250)
        log = Log()
        reg = informer.add_event_handler(log)
        async with informer:
            assert await informer.wait_for_sync(60)
            assert await reg.wait_synced(60)
            assert len(counting.lists) == 5
            assert all(p["limit"] == "250" for p in counting.lists)
            assert sum("continue" in p for p in counting.lists) == 4
            assert store_versions(informer) == await fresh_list(transport, path)
            assert len(log.events) == 1200 and {e[0] for e in log.events} == {"add"}
            await eventually(lambda: len(counting.watches) == 1, 10)
            assert counting.watches[0]["resourceVersion"] == informer.last_sync_resource_version
            assert counting.watches[0]["allowWatchBookmarks"] == "true"


async def test_add_update_delete_arrive_in_order(kubeconfig: str, namespace: str) -> None:
    async with AsyncTransport.from_kubeconfig(kubeconfig) as transport:
        path = PODS.path(namespace)
        informer = SharedInformer(transport, PODS, namespace=namespace)
        log = Log()
        informer.add_event_handler(log)
        async with informer:
            assert await informer.wait_for_sync(30)
            names = [f"o-{i:02d}" for i in range(30)]
            await create_all(transport, path, [pod_body(n) for n in names], concurrency=10)

            async def churn(name: str) -> None:
                for step in range(2):
                    await transport.request(
                        "PATCH",
                        f"{path}/{name}",
                        body={"metadata": {"labels": {"step": str(step)}}},
                        content_type="application/merge-patch+json",
                    )
                await transport.request("DELETE", f"{path}/{name}", body={"gracePeriodSeconds": 0})

            await asyncio.gather(*(churn(n) for n in names))
            await eventually(lambda: sum(e[0] == "delete" for e in log.events) == 30, 30)
            assert len(informer.store) == 0

        per_key: dict[str, list[str]] = {}
        for kind, key, _ in log.events:
            per_key.setdefault(key, []).append(kind)
        assert sorted(per_key) == sorted(f"{namespace}/{n}" for n in names)
        for kinds in per_key.values():
            # Two label patches; a delete may add one more update (deletionTimestamp) before it.
            assert kinds[0] == "add" and kinds[-1] == "delete", kinds
            assert set(kinds[1:-1]) == {"update"} and len(kinds) in (4, 5), kinds
        # One watch stream, delivered in order: resourceVersions strictly increase.
        rvs = [int(rv) for _, _, rv in log.events]
        assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)


async def test_field_selector_drops_finished_pods_and_indexes_by_node(
    kubeconfig: str, namespace: str
) -> None:
    async with AsyncTransport.from_kubeconfig(kubeconfig) as transport:
        path = PODS.path(namespace)
        await create_all(transport, path, [pod_body("runs"), pod_body("finishes")])
        informer = SharedInformer(
            transport,
            PODS,
            namespace=namespace,
            field_selector="status.phase!=Succeeded,status.phase!=Failed",
            indexers={NODE_NAME_INDEX: index_by_node_name},
        )
        log = Log()
        informer.add_event_handler(log)
        async with informer:
            assert await informer.wait_for_sync(30)
            await transport.request(
                "POST",
                f"{path}/runs/binding",
                body={
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": "runs"},
                    "target": {"name": "n1"},
                },
            )
            await eventually(
                lambda: informer.store.index_keys(NODE_NAME_INDEX, "n1") == [f"{namespace}/runs"], 30
            )
            await transport.request(
                "PATCH",
                f"{path}/finishes/status",
                body={"status": {"phase": "Succeeded"}},
                content_type="application/merge-patch+json",
            )
            await eventually(lambda: ("delete", f"{namespace}/finishes") in [e[:2] for e in log.events], 30)
            assert sorted(informer.store.keys()) == [f"{namespace}/runs"]


async def test_failing_and_slow_handlers_do_not_stall_others_or_the_watch(
    kubeconfig: str, namespace: str
) -> None:
    async with AsyncTransport.from_kubeconfig(kubeconfig) as transport:
        path = PODS.path(namespace)
        informer = SharedInformer(transport, PODS, namespace=namespace)
        slow_started = asyncio.Event()
        slow_calls: list[str] = []

        async def slow(obj: dict[str, Any], is_initial_list: bool) -> None:
            slow_calls.append(obj["metadata"]["name"])
            slow_started.set()
            await asyncio.sleep(60)  # far longer than the test; stop() cancels it

        def failing(obj: dict[str, Any], is_initial_list: bool) -> None:
            raise RuntimeError("handler bug")

        fast = Log()
        slow_reg = informer.add_event_handler(on_add=slow)
        bad_reg = informer.add_event_handler(on_add=failing)
        informer.add_event_handler(fast)
        async with informer:
            assert await informer.wait_for_sync(30)
            await create_all(transport, path, [pod_body(f"s-{i:02d}") for i in range(40)], concurrency=8)
            await eventually(lambda: len(fast.events) == 40, 30)
            await eventually(lambda: bad_reg.errors == 40, 30)
            assert slow_started.is_set() and len(slow_calls) == 1
            assert slow_reg.pending == 39
            assert len(informer.store) == 40  # the watch kept going
        assert not informer.started  # stop() returned despite the sleeping handler


async def test_factory_shares_and_syncs_informers(kubeconfig: str, namespace: str) -> None:
    async with AsyncTransport.from_kubeconfig(kubeconfig, qps=50, burst=100) as transport:
        await create_all(transport, PODS.path(namespace), [pod_body("f-1")])
        factory = InformerFactory(transport, namespace=namespace)
        pods = factory.informer_for(PODS)
        namespaces = factory.informer_for(
            NAMESPACES, label_selector="kubernetes.io/metadata.name=" + namespace
        )
        assert factory.informer_for(PODS) is pods
        async with factory:
            assert await factory.wait_for_cache_sync(30)
            assert pods.store.keys() == [f"{namespace}/f-1"]
            assert namespaces.store.keys() == [namespace]
            assert namespaces.store.get(namespace)["kind"] == "Namespace"  # type: ignore[index]
