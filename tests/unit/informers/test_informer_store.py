"""Indexer: keys, indexes, replace, thread-safety; plus a property test of informer convergence."""

from __future__ import annotations

import asyncio
import random
import threading
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from informers import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    PODS,
    DeletedFinalStateUnknown,
    Indexer,
    ResourceSpec,
    SharedInformer,
    deletion_handling_key,
    index_by_namespace,
    index_by_node_name,
    meta_namespace_key,
    split_key,
)
from informers.testing import FakeApiServer, FakeClock, connection_refused, eventually, make_pod


def pod(name: str, ns: str = "default", node: str = "") -> dict[str, Any]:
    return make_pod(name, ns, node=node)


def test_keys() -> None:
    assert meta_namespace_key(pod("a", "ns")) == "ns/a"
    assert meta_namespace_key({"metadata": {"name": "node-1"}}) == "node-1"
    assert deletion_handling_key(DeletedFinalStateUnknown("ns/a", pod("a", "ns"))) == "ns/a"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("node-1") == ("", "node-1")


def test_resource_paths() -> None:
    assert PODS.path() == "/api/v1/pods"
    assert PODS.path("kube-system") == "/api/v1/namespaces/kube-system/pods"
    deploy = ResourceSpec("apps", "v1", "deployments", namespaced=True)
    assert deploy.path("x") == "/apis/apps/v1/namespaces/x/deployments"
    assert deploy.name == "deployments.apps"
    nodes = ResourceSpec("", "v1", "nodes", namespaced=False)
    assert nodes.path("ignored") == "/api/v1/nodes"


def test_get_list_keys_and_indexes() -> None:
    store = Indexer(indexers={NODE_NAME_INDEX: index_by_node_name, NAMESPACE_INDEX: index_by_namespace})
    store.add(pod("a", node="n1"))
    store.add(pod("b", node="n1"))
    store.add(pod("c", "other"))
    assert sorted(store.keys()) == ["default/a", "default/b", "other/c"]
    assert store.get("default/a") is not None and store.get("nope") is None
    assert sorted(store.index_keys(NODE_NAME_INDEX, "n1")) == ["default/a", "default/b"]
    assert store.by_index(NODE_NAME_INDEX, "") == []  # unassigned pods are in no bucket
    assert [p["metadata"]["name"] for p in store.by_index(NAMESPACE_INDEX, "other")] == ["c"]

    old = store.update(pod("a", node="n2"))
    assert old is not None and old["spec"]["nodeName"] == "n1"
    assert store.index_keys(NODE_NAME_INDEX, "n1") == ["default/b"]
    assert store.index_keys(NODE_NAME_INDEX, "n2") == ["default/a"]
    store.delete("default/b")
    assert "n1" not in store.index_values(NODE_NAME_INDEX)
    assert len(store) == 2 and "default/a" in store


def test_replace_rebuilds_indexes_and_returns_old() -> None:
    store = Indexer(indexers={NODE_NAME_INDEX: index_by_node_name})
    store.add(pod("a", node="n1"))
    old = store.replace({"default/x": pod("x", node="n9")})
    assert list(old) == ["default/a"]
    assert store.index_keys(NODE_NAME_INDEX, "n1") == []
    assert store.index_keys(NODE_NAME_INDEX, "n9") == ["default/x"]


def test_indexer_added_later_indexes_existing_objects() -> None:
    store = Indexer()
    store.add(pod("a", node="n1"))
    store.add_indexers({NODE_NAME_INDEX: index_by_node_name})
    assert store.index_keys(NODE_NAME_INDEX, "n1") == ["default/a"]


def test_concurrent_readers_see_consistent_indexes() -> None:
    store = Indexer(indexers={NODE_NAME_INDEX: index_by_node_name})
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                for node in ("n0", "n1", "n2"):
                    for p in store.by_index(NODE_NAME_INDEX, node):
                        assert p["spec"].get("nodeName") == node
                store.list()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    rng = random.Random(1)
    for i in range(3000):
        store.upsert(pod(f"p{i % 50}", node=f"n{rng.randrange(3)}"))
        if i % 7 == 0:
            store.delete(f"default/p{rng.randrange(50)}")
    stop.set()
    for t in threads:
        t.join()
    assert errors == []


# -- property: whatever the faults, the informer converges to the server's state ------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["create", "update", "delete"]), st.integers(0, 3)),
        st.tuples(st.sampled_from(["disconnect", "compact", "bookmark", "settle"]), st.booleans()),
    ),
    max_size=40,
)


class Replay:
    """Rebuilds state purely from handler events: it must end equal to the server too."""

    def __init__(self) -> None:
        self.state: dict[str, str] = {}
        self.violations: list[str] = []

    def on_add(self, obj: dict[str, Any], initial: bool) -> None:
        key = meta_namespace_key(obj)
        if key in self.state:
            self.violations.append(f"add of known {key}")
        self.state[key] = obj["metadata"]["resourceVersion"]

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        key = meta_namespace_key(new)
        if self.state.get(key) != old["metadata"]["resourceVersion"]:
            self.violations.append(f"update of {key} from unseen version")
        self.state[key] = new["metadata"]["resourceVersion"]

    def on_delete(self, obj: Any) -> None:
        key = deletion_handling_key(obj)
        if self.state.pop(key, None) is None:
            self.violations.append(f"delete of unknown {key}")


async def _run_scenario(script: list[tuple[str, Any]]) -> None:
    server = FakeApiServer()
    server._collection(PODS)
    informer = SharedInformer(server, PODS, clock=FakeClock(), page_size=3)
    replay = Replay()
    reg = informer.add_event_handler(replay)
    informer.start()
    try:
        assert await informer.wait_for_sync(5)
        for op, arg in script:
            key = f"default/p{arg}" if isinstance(arg, int) and not isinstance(arg, bool) else ""
            if op == "create" and server.get(PODS, key) is None:
                server.create(PODS, pod(f"p{arg}"))
            elif op == "update" and (cur := server.get(PODS, key)) is not None:
                server.update(PODS, cur | {"status": {"phase": "Running", "n": server.rv}})
            elif op == "delete" and server.get(PODS, key) is not None:
                server.delete(PODS, key)
            elif op == "disconnect":
                server.disconnect(connection_refused() if arg else None)
            elif op == "compact":
                server.compact()
            elif op == "bookmark":
                server.bookmark()
            elif op == "settle":
                for _ in range(5):
                    await asyncio.sleep(0)

        want = {k: v["metadata"]["resourceVersion"] for k, v in server.objects(PODS).items()}

        def converged() -> bool:
            have = {k: v["metadata"]["resourceVersion"] for k, v in informer.store.items().items()}
            return have == want and replay.state == want and reg.pending == 0

        await eventually(converged)
        assert replay.violations == []
    finally:
        await informer.stop()


GAP_DELETE = [("create", 1), ("settle", True), ("disconnect", False), ("delete", 1), ("compact", True)]
GAP_RECREATE = [
    ("create", 1),
    ("settle", True),
    ("disconnect", True),
    ("delete", 1),
    ("create", 1),
    ("compact", True),
]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=ops)
@example(script=GAP_DELETE)
@example(script=GAP_RECREATE)
def test_informer_converges_to_server_state_under_faults(script: list[tuple[str, Any]]) -> None:
    asyncio.run(_run_scenario(script))


def _label_values(obj: Any) -> Any:
    """A multi-valued index func that returns a generator: the values in label order."""
    return (value for value in (obj.get("metadata", {}).get("labels") or {}).values())


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5),
            st.lists(st.sampled_from(["x", "y", "z"]), max_size=3),
            st.booleans(),
            st.sampled_from(["default", "x", "y"]),
        ),
        max_size=40,
    )
)
def test_incremental_indexes_equal_indexes_built_from_scratch(
    ops: list[tuple[int, list[str], bool, str]],
) -> None:
    """Upserts and deletes keep every index what indexing the final content afresh gives, whether
    the index func returns the same list (the usual update), the same values reordered, or a
    generator; the namespace index too, which an update of a stored key leaves alone."""
    indexers = {
        NODE_NAME_INDEX: index_by_node_name,
        "labels": _label_values,
        NAMESPACE_INDEX: index_by_namespace,
    }
    store = Indexer(indexers=indexers)
    for index, values, delete, namespace in ops:
        name = f"p{index}"
        if delete:
            store.delete(f"{namespace}/{name}")
            continue
        obj = pod(name, node=values[0] if values else "")
        obj["metadata"]["namespace"] = namespace
        obj["metadata"]["labels"] = {f"k{i}": v for i, v in enumerate(values)}
        store.upsert(obj)
    fresh = Indexer(indexers=indexers)
    fresh.replace(store.items())
    for index_name in indexers:
        for value in ("x", "y", "z", "", "default"):
            assert sorted(store.index_keys(index_name, value)) == sorted(fresh.index_keys(index_name, value))
        assert sorted(store.index_values(index_name)) == sorted(fresh.index_values(index_name))


def test_namespace_index_follows_an_update_when_keys_are_not_namespaced() -> None:
    """With another key function the key does not fix the namespace: an update that moves an object
    to another namespace moves it in the namespace index."""
    store = Indexer(
        key_func=lambda obj: obj["metadata"]["name"], indexers={NAMESPACE_INDEX: index_by_namespace}
    )
    first = pod("p")
    store.upsert(first)
    moved = pod("p")
    moved["metadata"]["namespace"] = "other"
    store.upsert(moved)
    assert store.index_keys(NAMESPACE_INDEX, "other") == ["p"]
    assert store.index_keys(NAMESPACE_INDEX, first["metadata"]["namespace"]) == []
