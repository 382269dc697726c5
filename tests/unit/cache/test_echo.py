"""The bind's echo held in place: the cache swaps the PodInfo without a new node generation only when no
snapshot reader can tell the versions apart and the ordinary path would leave every map in the same order.

The reference is the same cache with the in-place swap turned off (the ordinary remove-then-add path);
the fast cache's snapshot (which keeps the versions it saw) must read the same as the reference's, both
updated at the same points, node columns included."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.cache.cache import _PodState
from scheduler.cache.columns import NodeColumns
from scheduler.cache.echo import same_but_unread
from scheduler.framework.columns import ColumnSpec
from scheduler.framework.runtime import node_columns_of
from scheduler.framework.types import NodeInfo, PodInfo
from tests.unit.fakes import build_frameworks

_rv = itertools.count(1000)


class OrdinaryCache(SchedulerCache):
    """The reference: every new version of a pod goes through remove-then-add."""

    def _swap_in_place(self, key: str, state: _PodState, info: PodInfo) -> bool:
        return False


def _profile_columns() -> tuple[ColumnSpec, ...]:
    snapshot = Snapshot()
    return node_columns_of(build_frameworks(lambda: snapshot, None, lambda: 0.0).values())


COLUMNS = _profile_columns()


def make_node(name: str, zone: str = "a", cpu: str = "8") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": str(next(_rv)),
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        },
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
    }


def pending_pod(name: str, *, host_port: int = 0, affinity: str = "", cpu: str = "100m") -> dict[str, Any]:
    """A pending pod as the API server returns it; ``affinity``: "anti" (required anti-affinity, in both of
    a node's affinity lists) or "preferred" (preferred affinity, in the first only)."""
    container: dict[str, Any] = {
        "name": "c",
        "image": "pause",
        "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}},
    }
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec: dict[str, Any] = {"containers": [container], "schedulerName": "py-scheduler", "priority": 0}
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    if affinity == "anti":
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    elif affinity == "preferred":
        preferred = [{"weight": 1, "podAffinityTerm": term}]
        spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": str(next(_rv)),
            "labels": {"app": "web"},
        },
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def echo_of(pod: Mapping[str, Any], node: str) -> dict[str, Any]:
    """What the watch delivers once the Binding landed: nodeName, PodScheduled=True, a new version."""
    bound = copy.deepcopy(dict(pod))
    bound["metadata"]["resourceVersion"] = str(next(_rv))
    bound["spec"]["nodeName"] = node
    conditions = [c for c in bound["status"].get("conditions", ()) if c["type"] != "PodScheduled"]
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-27T10:00:00Z"}
    )
    bound["status"]["conditions"] = conditions
    return bound


# Echoes that change something a reader reads, each on top of the plain echo.
READ_CHANGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "topology labels": lambda p: p["metadata"]["labels"].update({"topology.kubernetes.io/zone": "a"}),
    "annotations": lambda p: p["metadata"].update(annotations={"note": "x"}),
    "owner": lambda p: p["metadata"].update(
        ownerReferences=[{"kind": "ReplicaSet", "name": "r", "uid": "1"}]
    ),
    "deletion": lambda p: p["metadata"].update(deletionTimestamp="2026-11-27T10:00:05Z"),
    "start time": lambda p: p["status"].update(startTime="2026-11-27T10:00:02Z"),
    "nominated node cleared": lambda p: p["status"].update(nominatedNodeName=None),
    "pod IP": lambda p: p["status"].update(podIP="10.0.0.1"),
    "disruption condition": lambda p: p["status"]["conditions"].append(
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ),
    "priority": lambda p: p["spec"].update(priority=5),
    "requests": lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="200m"),
    "status resources": lambda p: p["status"].update(
        containerStatuses=[{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
    ),
    "phase": lambda p: p["status"].update(phase="Running"),
    "new top-level field": lambda p: p.update(extra={}),
}


# -- the comparison ----------------------------------------------------------------------------------


def test_an_echo_differs_only_in_what_no_reader_reads() -> None:
    pending = pending_pod("p")
    assumed = copy.deepcopy(pending)
    assumed["spec"]["nodeName"] = "n1"
    echo = echo_of(pending, "n1")
    echo["metadata"]["managedFields"] = [{"manager": "kube-scheduler"}]
    assert same_but_unread(assumed, echo)
    # A retried pod: PodScheduled=False before, True in the echo.
    assumed["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    assert same_but_unread(assumed, echo)
    assert not same_but_unread(pending, echo)  # the node name differs


@pytest.mark.parametrize("change", READ_CHANGES.values(), ids=READ_CHANGES.keys())
def test_an_echo_changing_what_a_reader_reads_is_told_apart(
    change: Callable[[dict[str, Any]], None],
) -> None:
    pending = pending_pod("p")
    pending["status"]["nominatedNodeName"] = "n1"
    assumed = copy.deepcopy(pending)
    assumed["spec"]["nodeName"] = "n1"
    echo = echo_of(pending, "n1")
    assert same_but_unread(assumed, echo)
    change(echo)
    assert not same_but_unread(assumed, echo)


# -- the cache ------------------------------------------------------------------------------------------


NODE_OBJECTS = [make_node("n1", "a"), make_node("n2", "b")]


def _cache_with_nodes(cls: type[SchedulerCache] = SchedulerCache) -> SchedulerCache:
    cache = cls()
    for node in NODE_OBJECTS:
        cache.add_node(node)
    return cache


def test_a_plain_echo_changes_no_generation_and_clones_nothing() -> None:
    cache = _cache_with_nodes()
    snapshot = Snapshot(COLUMNS)
    pending = pending_pod("p")
    assumed = cache.assume_pod(cache.pod_infos.get(pending), "n1")
    cache.update_snapshot(snapshot)
    snapshot.columns()
    node_before, generation = snapshot.get("n1"), cache.generation
    echo = echo_of(pending, "n1")
    cache.update_pod(pending, echo)
    confirmed = cache.get_pod("default/p")
    assert confirmed is not None and confirmed.pod is echo
    assert not cache.is_assumed("default/p") and cache.assumed_count() == 0
    assert cache.generation == generation
    live = cache.node_info("n1")
    assert live is not None and live.pods["default/p"] is confirmed
    cache.update_snapshot(snapshot)
    assert snapshot.get("n1") is node_before
    assert node_before is not None and node_before.pods["default/p"] is assumed
    # Later changes of the node bring the bound version into the snapshot.
    cache.add_pod(echo_of(pending_pod("q"), "n1"))
    cache.update_snapshot(snapshot)
    refreshed = snapshot.get("n1")
    assert refreshed is not None and refreshed.pods["default/p"] is confirmed
    # Removing the confirmed pod works from the swapped-in version.
    cache.remove_pod(echo)
    assert "default/p" not in (cache.node_info("n1") or NodeInfo()).pods


def _echo_takes_ordinary_path(cache: SchedulerCache, pending: dict[str, Any], echo: dict[str, Any]) -> None:
    generation = cache.generation
    cache.update_pod(pending, echo)
    assert cache.generation > generation


@pytest.mark.parametrize("change", READ_CHANGES.values(), ids=READ_CHANGES.keys())
def test_an_echo_changing_a_read_field_takes_the_ordinary_path(
    change: Callable[[dict[str, Any]], None],
) -> None:
    cache = _cache_with_nodes()
    pending = pending_pod("p")
    cache.assume_pod(cache.pod_infos.get(pending), "n1")
    echo = echo_of(pending, "n1")
    change(echo)
    _echo_takes_ordinary_path(cache, pending, echo)


def test_an_echo_of_a_pod_that_is_not_its_nodes_last_takes_the_ordinary_path() -> None:
    """Upstream's removal moves the node's last pod into the removed one's place: the order changes."""
    cache, reference = _cache_with_nodes(), _cache_with_nodes(OrdinaryCache)
    first, second = pending_pod("p1"), pending_pod("p2")
    for c in (cache, reference):
        c.assume_pod(c.pod_infos.get(first), "n1")
        c.assume_pod(c.pod_infos.get(second), "n1")
    echo = echo_of(first, "n1")
    _echo_takes_ordinary_path(cache, first, echo)
    reference.update_pod(first, echo)
    assert list((cache.node_info("n1") or NodeInfo()).pods) == ["default/p2", "default/p1"]
    assert list((reference.node_info("n1") or NodeInfo()).pods) == ["default/p2", "default/p1"]


def test_an_echo_of_a_pod_with_host_ports_takes_the_ordinary_path() -> None:
    cache = _cache_with_nodes()
    pending = pending_pod("p", host_port=8080)
    cache.assume_pod(cache.pod_infos.get(pending), "n1")
    _echo_takes_ordinary_path(cache, pending, echo_of(pending, "n1"))


def test_an_echo_last_on_its_node_but_not_in_its_affinity_list_takes_the_ordinary_path() -> None:
    cache, reference = _cache_with_nodes(), _cache_with_nodes(OrdinaryCache)
    plain, a, x = pending_pod("n"), pending_pod("a", affinity="anti"), pending_pod("x", affinity="anti")
    plain_bound, x_bound = echo_of(plain, "n1"), echo_of(x, "n1")
    for c in (cache, reference):
        c.add_pod(plain_bound)
        c.assume_pod(c.pod_infos.get(a), "n1")
        c.add_pod(x_bound)
        c.remove_pod(plain_bound)  # pods [x, a], with affinity [a, x]
    node = cache.node_info("n1")
    assert node is not None and list(node.pods) == ["default/x", "default/a"]
    assert list(node.pods_with_affinity) == ["default/a", "default/x"]
    echo = echo_of(a, "n1")
    _echo_takes_ordinary_path(cache, a, echo)
    reference.update_pod(a, echo)
    assert _cache_view(cache) == _cache_view(reference)


def test_an_echo_last_in_its_affinity_list_but_not_in_its_anti_affinity_list_takes_the_ordinary_path() -> (
    None
):
    cache, reference = _cache_with_nodes(), _cache_with_nodes(OrdinaryCache)
    z, x, y = (
        pending_pod("z", affinity="preferred"),
        pending_pod("x", affinity="anti"),
        pending_pod("y", affinity="anti"),
    )
    z_bound, y_bound = echo_of(z, "n1"), echo_of(y, "n1")
    for c in (cache, reference):
        c.add_pod(z_bound)
        c.assume_pod(c.pod_infos.get(x), "n1")
        c.add_pod(y_bound)
        c.remove_pod(z_bound)  # pods and affinity [y, x], required anti-affinity [x, y]
    node = cache.node_info("n1")
    assert node is not None and list(node.pods) == list(node.pods_with_affinity) == ["default/y", "default/x"]
    assert list(node.pods_with_required_anti_affinity) == ["default/x", "default/y"]
    echo = echo_of(x, "n1")
    _echo_takes_ordinary_path(cache, x, echo)
    reference.update_pod(x, echo)
    assert _cache_view(cache) == _cache_view(reference)


def test_an_echo_on_another_node_moves_the_pod() -> None:
    cache = _cache_with_nodes()
    pending = pending_pod("p")
    cache.assume_pod(cache.pod_infos.get(pending), "n1")
    _echo_takes_ordinary_path(cache, pending, echo_of(pending, "n2"))
    assert "default/p" in (cache.node_info("n2") or NodeInfo()).pods


# -- the fast path against the ordinary one, over random sequences -------------------------------------


def _unread_removed(pod: Mapping[str, Any]) -> Any:
    """The pod without what the in-place swap may leave stale in a snapshot (an independent copy of the
    rule, so a too-lenient comparison in the product fails here)."""
    out = copy.deepcopy(dict(pod))
    for field in ("resourceVersion", "managedFields"):
        out.get("metadata", {}).pop(field, None)
    status = out.get("status")
    if isinstance(status, dict) and "conditions" in status:
        status["conditions"] = [c for c in status["conditions"] if c.get("type") != "PodScheduled"]
        if not status["conditions"]:
            del status["conditions"]
    return out


def _node_view(info: NodeInfo) -> Any:
    return (
        info.name,
        info.node,
        [
            (key, _unread_removed(pod.pod), pod.requests, pod.priority, pod.host_ports)
            for key, pod in info.pods.items()
        ],
        list(info.pods_with_affinity),
        list(info.pods_with_required_anti_affinity),
        list(info.used_ports.items()),
        info.requested,
        info.non_zero_requested,
    )


def _cache_view(cache: SchedulerCache) -> Any:
    """Every node as the cache holds it, with the exact pod objects (both caches got the same dicts)."""
    view = []
    for name in sorted(cache.dump()["nodes"]):
        info = cache.node_info(name)
        assert info is not None
        pods = [(key, pod.pod) for key, pod in info.pods.items()]
        view.append((_node_view(info), pods))
    return view, sorted(cache.dump()["assumed_pods"])


def _columns_view(columns: NodeColumns) -> Any:
    return {spec.name: columns.array(spec).tolist() for spec in COLUMNS}


def _assert_snapshots_read_the_same(fast: Snapshot, ordinary: Snapshot) -> None:
    """``fast`` (the in-place cache's snapshot) reads as ``ordinary`` (the reference's, updated at the
    same points), and its node columns, kept row by row, equal columns built afresh from its nodes."""
    assert [info.name for info in fast.node_infos()] == [info.name for info in ordinary.node_infos()]
    for kept, built in zip(fast.node_infos(), ordinary.node_infos(), strict=True):
        assert _node_view(kept) == _node_view(built)
    # As sets: their order follows the order nodes were last put, which no reader depends on.
    for lists in (Snapshot.have_pods_with_affinity_list, Snapshot.have_pods_with_required_anti_affinity_list):
        assert sorted(n.name for n in lists(fast)) == sorted(n.name for n in lists(ordinary))
    kept_columns = fast.columns()
    assert _columns_view(kept_columns) == _columns_view(ordinary.columns())
    fresh_columns = NodeColumns(fast.node_infos(), COLUMNS)
    assert _columns_view(kept_columns) == _columns_view(fresh_columns)
    for key in ("topology.kubernetes.io/zone", "kubernetes.io/hostname"):
        assert np.array_equal(
            np.unique(kept_columns.label_codes(key), return_inverse=True)[1],
            np.unique(fresh_columns.label_codes(key), return_inverse=True)[1],
        )


PODS = [f"p{i}" for i in range(6)]
NODES = ["n1", "n2", "n3"]
# A step's pod is picked by index among the pods the step applies to (not assumed yet, assumed, known to
# the informer), so most generated steps do something.
_pick = st.integers(min_value=0, max_value=5)
_assume = st.tuples(st.just("assume"), _pick, st.sampled_from(NODES))
_plain_echo = st.tuples(st.just("echo"), _pick, st.none())
_changed_echo = st.tuples(st.just("echo"), _pick, st.sampled_from(list(READ_CHANGES)))
# Assumes and echoes weigh more than the other steps: the in-place path needs both.
_step = st.one_of(
    _assume,
    _assume,
    _assume,
    _plain_echo,
    _plain_echo,
    _plain_echo,
    _changed_echo,
    _changed_echo,
    st.tuples(st.just("echo elsewhere"), _pick, st.sampled_from(NODES)),
    st.tuples(st.just("status"), _pick, st.sampled_from(list(READ_CHANGES))),
    st.tuples(st.just("delete"), _pick, st.none()),
    st.tuples(st.just("forget"), _pick, st.none()),
    st.tuples(st.just("node update"), st.sampled_from(NODES), st.sampled_from(["4", "8", "16"])),
    st.tuples(st.just("node delete"), st.sampled_from(NODES), st.none()),
    st.tuples(st.just("snapshot"), st.none(), st.none()),
)


def _nth(names: list[str], index: int) -> str | None:
    return sorted(names)[index % len(names)] if names else None


@settings(max_examples=300, deadline=None)
@given(
    shapes=st.fixed_dictionaries(
        {name: st.sampled_from(["plain", "port", "anti", "preferred"]) for name in PODS}
    ),
    steps=st.lists(_step, min_size=4, max_size=40),
)
def test_the_in_place_echo_reads_as_the_ordinary_path(shapes: dict[str, str], steps: list[Any]) -> None:
    fast, reference = SchedulerCache(), OrdinaryCache()
    nodes = [make_node(name, zone="ab"[i % 2]) for i, name in enumerate(NODES)]
    for cache in (fast, reference):
        for node in nodes:
            cache.add_node(node)
    kept, ordinary = Snapshot(COLUMNS), Snapshot(COLUMNS)
    for cache, snapshot in ((fast, kept), (reference, ordinary)):
        cache.update_snapshot(snapshot)
        snapshot.columns()
    pending = {
        name: pending_pod(
            name,
            host_port=8080 + index if shape == "port" else 0,
            affinity=shape if shape in ("anti", "preferred") else "",
        )
        for index, (name, shape) in enumerate(shapes.items())
    }
    # The version the informer holds per pod (what an update's old object is).
    stored: dict[str, dict[str, Any]] = {}
    for action, pick, arg in steps:
        if action in ("assume", "echo", "echo elsewhere", "forget", "status", "delete"):
            absent = [name for name in PODS if fast.get_pod(f"default/{name}") is None]
            assumed = [name for name in PODS if fast.is_assumed(f"default/{name}")]
            candidates = {"assume": absent, "status": list(stored), "delete": list(stored)}.get(
                action, assumed
            )
            target = _nth(candidates, pick)
            if target is None:
                continue
            key = f"default/{target}"
        else:
            target = pick
        if action == "assume":
            for cache in (fast, reference):
                cache.assume_pod(PodInfo(pending[target]), arg)
        elif action in ("echo", "echo elsewhere"):
            cached = fast.get_pod(key)
            assert cached is not None
            echo = echo_of(pending[target], arg if action == "echo elsewhere" else cached.node_name)
            if action == "echo" and arg is not None:
                READ_CHANGES[arg](echo)
            old = stored.get(target, pending[target])
            for cache in (fast, reference):
                cache.update_pod(old, echo)
            stored[target] = echo
        elif action == "status":
            old = stored[target]
            newer = copy.deepcopy(old)
            newer["metadata"]["resourceVersion"] = str(next(_rv))
            READ_CHANGES[arg](newer)
            for cache in (fast, reference):
                cache.update_pod(old, newer)
            stored[target] = newer
        elif action == "delete":
            old = stored.pop(target)
            for cache in (fast, reference):
                cache.remove_pod(old)
        elif action == "forget":
            for cache in (fast, reference):
                cache.forget_pod(key)
        elif action == "node delete":
            gone = make_node(target)
            for cache in (fast, reference):
                cache.remove_node(gone)
        elif action == "node update":
            node = make_node(target, zone="b", cpu=arg)
            for cache in (fast, reference):
                cache.update_node(None, node)
        else:
            fast.update_snapshot(kept)
            reference.update_snapshot(ordinary)
            _assert_snapshots_read_the_same(kept, ordinary)
        assert _cache_view(fast) == _cache_view(reference)
    fast.update_snapshot(kept)
    reference.update_snapshot(ordinary)
    _assert_snapshots_read_the_same(kept, ordinary)
