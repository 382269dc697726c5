"""Snapshot: incremental update by generation, zone-interleaved order, equality with a fresh build."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache import NodeTree, SchedulerCache, Snapshot, new_snapshot, zone_key
from scheduler.framework.handle import SnapshotLister
from scheduler.framework.resources import Resource, comparable_amounts
from scheduler.framework.types import NodeInfo, PodInfo

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"

_rv = itertools.count(1)


def make_node(
    name: str,
    zone: str | None = None,
    region: str | None = None,
    cpu: str = "4",
    images: tuple[str, ...] = (),
) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    if zone is not None:
        labels[ZONE] = zone
    if region is not None:
        labels[REGION] = region
    return {
        "metadata": {"name": name, "resourceVersion": str(next(_rv)), "labels": labels},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "images": [{"names": [image], "sizeBytes": 1000} for image in images],
        },
    }


def make_pod(
    name: str, node: str = "", *, cpu: str = "100m", memory: str | None = None, port: int = 0, uid: str = ""
) -> dict[str, Any]:
    requests = {"cpu": cpu} if memory is None else {"cpu": cpu, "memory": memory}
    container: dict[str, Any] = {"name": "c", "resources": {"requests": requests}}
    if port:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    spec: dict[str, Any] = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {
            "namespace": "ns",
            "name": name,
            "uid": uid or f"uid-{name}",
            "resourceVersion": str(next(_rv)),
        },
        "spec": spec,
        "status": {"phase": "Running"},
    }


def names(snapshot: Snapshot) -> list[str]:
    return [info.name for info in snapshot.node_infos()]


@pytest.fixture
def clone_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    calls: list[str] = []
    original = NodeInfo.clone

    def counting_clone(self: NodeInfo) -> NodeInfo:
        calls.append(self.name)
        return original(self)

    monkeypatch.setattr(NodeInfo, "clone", counting_clone)
    yield calls


def test_snapshot_implements_the_lister_protocol() -> None:
    lister: SnapshotLister = SchedulerCache().snapshot()
    assert lister.num_nodes() == 0


def test_update_reclones_only_changed_nodes(clone_calls: list[str]) -> None:
    cache = SchedulerCache()
    for i in range(100):
        cache.add_node(make_node(f"n{i}"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert len(clone_calls) == 100
    before = {info.name: info for info in snap.node_infos()}
    order = names(snap)
    index = {name: snap.index_of(name) for name in order}

    clone_calls.clear()
    cache.add_pod(make_pod("p", node="n42", cpu="1"))
    cache.update_snapshot(snap)
    assert clone_calls == ["n42"]
    assert names(snap) == order
    assert {name: snap.index_of(name) for name in order} == index
    for info in snap.node_infos():
        if info.name == "n42":
            assert info is not before["n42"]
            assert info.requested.milli_cpu == 1000
            assert snap.get("n42") is info
        else:
            assert info is before[info.name]
    assert before["n42"].requested.milli_cpu == 0  # the old clone was not mutated

    clone_calls.clear()
    cache.update_snapshot(snap)
    assert clone_calls == []
    assert snap.generation == cache.generation


def test_snapshot_is_isolated_from_later_cache_changes() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    snap = cache.snapshot()
    cache.add_pod(make_pod("p", node="n1", cpu="1", port=80))
    info = snap.get("n1")
    assert info is not None
    assert info.requested.milli_cpu == 0
    assert info.pods == {}
    assert info.used_ports == {}


def test_node_add_and_remove_rebuild_the_list(clone_calls: list[str]) -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("a"))
    cache.add_node(make_node("b"))
    snap = cache.snapshot()
    kept = snap.get("a")
    clone_calls.clear()
    cache.add_node(make_node("c"))
    cache.update_snapshot(snap)
    assert clone_calls == ["c"]
    assert names(snap) == ["a", "b", "c"]
    assert snap.get("a") is kept
    assert snap.index_of("c") == 2

    cache.remove_node(make_node("b"))
    cache.update_snapshot(snap)
    assert names(snap) == ["a", "c"]
    assert snap.get("b") is None
    assert snap.index_of("c") == 1
    assert snap.num_nodes() == 2


def test_ghost_nodes_leave_the_snapshot() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("a"))
    cache.add_node(make_node("b"))
    pod = make_pod("p", node="b")
    cache.add_pod(pod)
    snap = cache.snapshot()
    cache.remove_node(make_node("b"))
    cache.update_snapshot(snap)
    assert names(snap) == ["a"]
    cache.remove_pod(pod)
    cache.update_snapshot(snap)
    assert names(snap) == ["a"]
    assert snap.get("b") is None


def test_removed_and_readded_node_takes_its_new_place() -> None:
    cache = SchedulerCache()
    for name in "abc":
        cache.add_node(make_node(name))
    snap = cache.snapshot()
    cache.remove_node(make_node("a"))
    cache.add_node(make_node("a"))
    cache.update_snapshot(snap)
    assert names(snap) == ["b", "c", "a"]
    assert names(snap) == names(cache.snapshot())


def test_assumed_pods_reach_the_snapshot_and_forget_clears_them() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    snap = cache.snapshot()
    cache.assume_pod(PodInfo(make_pod("p", cpu="2")), "n1")
    cache.update_snapshot(snap)
    info = snap.get("n1")
    assert info is not None
    assert info.requested.milli_cpu == 2000
    cache.forget_pod("ns/p")
    cache.update_snapshot(snap)
    info = snap.get("n1")
    assert info is not None
    assert info.requested.milli_cpu == 0


# -- zone order -----------------------------------------------------------------------------------------


def test_nodes_are_interleaved_across_zones() -> None:
    cache = SchedulerCache()
    for name, zone in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")]:
        cache.add_node(make_node(name, zone=zone))
    cache.add_node(make_node("none"))
    assert names(cache.snapshot()) == ["a1", "b1", "c1", "none", "a2", "c2", "a3"]


def test_region_and_zone_form_the_zone_key() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("east-1", zone="z1", region="east"))
    cache.add_node(make_node("east-2", zone="z1", region="east"))
    cache.add_node(make_node("west-1", zone="z1", region="west"))
    assert names(cache.snapshot()) == ["east-1", "west-1", "east-2"]


def test_zone_key_matches_upstream() -> None:
    assert zone_key(None) == ""
    assert zone_key({"other": "x"}) == ""
    assert zone_key({ZONE: "z"}) == ":\x00:z"
    assert zone_key({REGION: "r"}) == "r:\x00:"
    assert zone_key({ZONE: "z", REGION: "r"}) == "r:\x00:z"
    # The deprecated beta labels take precedence, as in component-helpers' GetZoneKey.
    beta = {
        ZONE: "z",
        "failure-domain.beta.kubernetes.io/zone": "bz",
        "failure-domain.beta.kubernetes.io/region": "br",
    }
    assert zone_key(beta) == "br:\x00:bz"


def test_zone_change_moves_the_node() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("a1", zone="a"))
    cache.add_node(make_node("a2", zone="a"))
    cache.add_node(make_node("b1", zone="b"))
    snap = cache.snapshot()
    assert names(snap) == ["a1", "b1", "a2"]
    cache.update_node(make_node("a1", zone="a"), make_node("a1", zone="b"))
    cache.update_snapshot(snap)
    assert names(snap) == ["a2", "b1", "a1"]


def test_node_tree_operations() -> None:
    tree = NodeTree()
    assert tree.list() == []
    assert tree.add("x", "z1")
    assert not tree.add("x", "z2")
    assert tree.add("y", "z2")
    assert tree.num_nodes == 2
    assert "x" in tree
    assert not tree.update("x", "z1")
    assert tree.update("x", "z2")
    assert tree.zone_of("x") == "z2"
    assert tree.list() == ["y", "x"]
    assert tree.remove("y")
    assert not tree.remove("y")
    assert tree.list() == ["x"]


def test_new_snapshot_helper() -> None:
    snap = new_snapshot([make_node("n1"), make_node("n2")], [make_pod("p", node="n2", cpu="1")])
    assert names(snap) == ["n1", "n2"]
    info = snap.get("n2")
    assert info is not None
    assert info.requested.milli_cpu == 1000


# -- property: incremental == from scratch --------------------------------------------------------------

# Few names, so that operations often hit the same node and pod.
NODE_NAMES = ("n0", "n1", "n2", "n3")
POD_NAMES = ("p0", "p1", "p2", "p3", "p4")
ZONES = (None, "za", "zb")
IMAGES = ("img-a", "img-b", "img-c")
CPUS = ("0", "100m", "1", "2500m")
MEMORIES = (None, "64Mi", "1Gi")

node_names = st.sampled_from(NODE_NAMES)
pod_names = st.sampled_from(POD_NAMES)
pod_shape = st.tuples(st.sampled_from(CPUS), st.sampled_from(MEMORIES), st.sampled_from((0, 80, 443)))

operations = st.one_of(
    st.tuples(
        st.just("node"),
        node_names,
        st.sampled_from(ZONES),
        st.frozensets(st.sampled_from(IMAGES)),
        st.sampled_from(("2", "4")),
    ),
    st.tuples(st.just("remove_node"), node_names),
    st.tuples(st.just("pod"), pod_names, node_names, pod_shape),
    st.tuples(st.just("remove_pod"), pod_names),
    st.tuples(st.just("terminate"), pod_names),
    st.tuples(st.just("assume"), pod_names, node_names, pod_shape),
    st.tuples(st.just("forget"), pod_names),
    st.tuples(st.just("finish"), pod_names),
    # Snapshots between other operations are what exercises the incremental path.
    st.just(("snapshot",)),
    st.just(("snapshot",)),
    st.just(("snapshot",)),
)


class Model:
    """What the informer stores would hold, and which pods the scheduler assumed."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        # key -> (the pod as the store has it, the pod as counted, assumed)
        self.pods: dict[str, tuple[dict[str, Any], dict[str, Any], bool]] = {}
        self.incarnation = itertools.count()


def _apply(cache: SchedulerCache, model: Model, snap: Snapshot, op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "node":
        _, name, zone, images, cpu = op
        node = make_node(name, zone=zone, cpu=cpu, images=tuple(sorted(images)))
        if name in model.nodes:
            cache.update_node(model.nodes[name], node)
        else:
            cache.add_node(node)
        model.nodes[name] = node
    elif kind == "remove_node":
        name = op[1]
        if name in model.nodes:
            cache.remove_node(model.nodes.pop(name))
    elif kind == "pod":
        _, name, node_name, (cpu, memory, port) = op
        key = f"ns/{name}"
        current = model.pods.get(key)
        if current is None:
            pod = make_pod(
                name,
                node_name,
                cpu=cpu,
                memory=memory,
                port=port,
                uid=f"uid-{name}-{next(model.incarnation)}",
            )
            cache.add_pod(pod)
        else:
            stored, counted, assumed = current
            uid = stored["metadata"]["uid"]
            # nodeName is immutable once bound; the confirmation of an assumed pod may pick any node.
            node_name = node_name if assumed else counted["spec"]["nodeName"]
            pod = make_pod(name, node_name, cpu=cpu, memory=memory, port=port, uid=uid)
            cache.update_pod(stored, pod)
        model.pods[key] = (pod, pod, False)
    elif kind == "remove_pod":
        key = f"ns/{op[1]}"
        if key in model.pods:
            stored, _, _ = model.pods.pop(key)
            cache.remove_pod(stored)
    elif kind == "terminate":
        key = f"ns/{op[1]}"
        current = model.pods.get(key)
        if current is not None and not current[2]:
            stored = current[0]
            meta = {**stored["metadata"], "resourceVersion": str(next(_rv))}
            done = {**stored, "metadata": meta, "status": {"phase": "Succeeded"}}
            cache.update_pod(stored, done)
            del model.pods[key]
    elif kind == "assume":
        _, name, node_name, (cpu, memory, port) = op
        key = f"ns/{name}"
        if key not in model.pods:
            pending = make_pod(
                name, "", cpu=cpu, memory=memory, port=port, uid=f"uid-{name}-{next(model.incarnation)}"
            )
            assumed_info = cache.assume_pod(PodInfo(pending), node_name)
            model.pods[key] = (pending, dict(assumed_info.pod), True)
    elif kind == "forget":
        key = f"ns/{op[1]}"
        current = model.pods.get(key)
        was_assumed = current is not None and current[2]
        assert cache.forget_pod(key) is was_assumed
        if was_assumed:
            del model.pods[key]
    elif kind == "finish":
        cache.finish_binding(f"ns/{op[1]}")
    else:
        cache.update_snapshot(snap)
        _check(cache, model, snap)


def _check(cache: SchedulerCache, model: Model, snap: Snapshot) -> None:
    fresh = cache.snapshot()
    assert names(snap) == names(fresh)
    assert sorted(names(snap)) == sorted(model.nodes)
    assert snap.num_nodes() == len(model.nodes)
    assert snap.generation == cache.generation

    scratch = new_snapshot(model.nodes.values(), [counted for _, counted, _ in model.pods.values()])
    assert sorted(names(scratch)) == sorted(names(snap))
    for name in model.nodes:
        info = snap.get(name)
        assert info is not None
        assert snap.index_of(name) is not None
        assert snap.node_infos()[snap.index_of(name) or 0] is info
        expected = scratch.get(name)
        assert expected is not None
        assert info.node is model.nodes[name]
        assert set(info.pods) == set(expected.pods)
        assert comparable_amounts(info.requested) == comparable_amounts(expected.requested)
        assert comparable_amounts(info.non_zero_requested) == comparable_amounts(expected.non_zero_requested)
        assert info.used_ports == expected.used_ports
        assert comparable_amounts(info.allocatable) == comparable_amounts(expected.allocatable)

        # Independently of the cache code: sum the model's pods on this node.
        on_node = [
            PodInfo(counted) for _, counted, _ in model.pods.values() if counted["spec"]["nodeName"] == name
        ]
        requested, non_zero = Resource(), Resource()
        ports: Counter[Any] = Counter()
        for pod in on_node:
            requested.add(pod.requests)
            non_zero.add(pod.non_zero_requests)
            ports.update(pod.host_ports)
        assert comparable_amounts(info.requested) == comparable_amounts(requested)
        assert comparable_amounts(info.non_zero_requested) == comparable_amounts(non_zero)
        assert info.used_ports == dict(ports)

    for image in IMAGES:
        holders = sum(
            1 for node in model.nodes.values() if any(image in i["names"] for i in node["status"]["images"])
        )
        assert snap.image_num_nodes(image) == holders
    assert cache.assumed_count() == sum(1 for _, _, assumed in model.pods.values() if assumed)
    assert cache.sizes()["pods"] == len(model.pods)
    known = set(model.nodes) | {counted["spec"]["nodeName"] for _, counted, _ in model.pods.values()}
    assert cache.sizes()["nodes"] == len(known)
    assert cache.compare(list(model.nodes.values()), [stored for stored, _, _ in model.pods.values()]) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(operations, max_size=60))
def test_incremental_snapshot_equals_a_fresh_build(ops: list[tuple[Any, ...]]) -> None:
    cache = SchedulerCache()
    model = Model()
    snap = Snapshot()
    for op in ops:
        _apply(cache, model, snap, op)
    cache.update_snapshot(snap)
    _check(cache, model, snap)


def test_pods_counted_in_the_snapshot_only_until_restore() -> None:
    """A pod group cycle's trial placements and preemption's what-if runs change the snapshot, never the
    cache; each change is a new NodeInfo with a generation no cache node has, and restore puts the
    cache's NodeInfos back."""
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    cache.add_node(make_node("n2"))
    cache.add_pod(make_pod("running", "n2"))
    snapshot = cache.snapshot()
    before = {info.name: info for info in snapshot.node_infos()}
    columns = snapshot.columns()
    trial = PodInfo(make_pod("trial", "n1", cpu="1"))
    running = snapshot.get("n2")
    assert running is not None
    victim = running.pods["ns/running"]

    snapshot.add_pod(trial, "n1")
    snapshot.remove_pod(victim, "n2")
    n1, n2 = snapshot.get("n1"), snapshot.get("n2")
    assert n1 is not None and n2 is not None
    assert list(n1.pods) == ["ns/trial"] and n1.requested.milli_cpu == 1000
    assert not n2.pods
    assert n1.generation < 0 and n2.generation < 0 and n1.generation != n2.generation
    assert snapshot.node_infos()[snapshot.index_of("n1") or 0] is n1
    assert snapshot.has_changes()
    # The cache never heard of it, nor of the removal.
    assert cache.node_info("n1").pods == {}  # type: ignore[union-attr]
    assert list(cache.node_info("n2").pods) == ["ns/running"]  # type: ignore[union-attr]
    # The NodeInfo of before the first change (the cache's clone) is kept as it was, to be put back.
    assert before["n1"].pods == {}
    # Every change is a new generation (caches keyed by generation see each one).
    first = n1.generation
    snapshot.remove_pod(trial, "n1")
    again = snapshot.get("n1")
    assert again is not None and again.generation < first and not again.pods
    snapshot.add_pod(trial, "n1")

    snapshot.restore()
    assert {info.name: info for info in snapshot.node_infos()} == before
    assert not snapshot.has_changes()
    assert snapshot.columns() is columns
    cache.update_snapshot(snapshot)
    assert {info.name: info for info in snapshot.node_infos()} == before
