"""A node change that only adds or removes pods recomputes only the node columns that read pods.

Every column states ``reads_pods``; the cache tells the snapshot which changes were pods only, and the
snapshot's columns then keep the other columns' values. The reference is the columns built afresh from
the snapshot's nodes (every column computed, as before), compared after every snapshot update of random
sequences of node and pod events."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.cache.columns import NodeColumns
from scheduler.framework.columns import (
    GENERATION_COLUMN,
    NAME_KEY,
    ColumnSpec,
    InternedColumn,
    NodeColumn,
    reads_pods,
)
from scheduler.framework.runtime import node_columns_of
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.noderesourcesallocatable import NodeResourcesAllocatable
from tests.unit.cache.test_echo import echo_of, pending_pod
from tests.unit.fakes import build_frameworks, make_node

SOURCE = Path(__file__).resolve().parents[3] / "scheduler"
_rv = itertools.count(5000)


def _profile_columns() -> tuple[ColumnSpec, ...]:
    snapshot = Snapshot()
    return node_columns_of(build_frameworks(lambda: snapshot, None, lambda: 0.0).values())


def _in_tree_columns() -> tuple[ColumnSpec, ...]:
    """The default profile's columns, the batching cache's, and those other arguments make."""
    specs: list[ColumnSpec] = [*_profile_columns(), GENERATION_COLUMN]
    fits = [
        {"scoringStrategy": {"type": strategy, "resources": [{"name": "cpu", "weight": 1}]}}
        for strategy in ("LeastAllocated", "MostAllocated")
    ]
    for args in fits:
        specs += NodeResourcesFit(args).node_columns()
    specs += NodeResourcesBalancedAllocation({"resources": [{"name": "cpu", "weight": 1}]}).node_columns()
    for mode in ("Least", "Most"):
        specs += NodeResourcesAllocatable({"mode": mode}).node_columns()
    return tuple({spec.name: spec for spec in specs}.values())


IN_TREE = _in_tree_columns()


def test_every_column_in_the_source_states_whether_it_reads_pods() -> None:
    """Undeclared would be safe (recomputed on every change) but slow; in-tree columns must say."""
    calls = []
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                "NodeColumn",
                "InternedColumn",
            ):
                stated = [kw.value for kw in node.keywords if kw.arg == "reads_pods"]
                ok = (
                    len(stated) == 1 and isinstance(stated[0], ast.Constant) and type(stated[0].value) is bool
                )
                calls.append((f"{path.relative_to(SOURCE.parent)}:{node.lineno}", ok))
    assert len(calls) >= 10
    assert [where for where, ok in calls if not ok] == []


@pytest.mark.parametrize("spec", IN_TREE, ids=[spec.name for spec in IN_TREE])
def test_each_in_tree_column_declares_it(spec: ColumnSpec) -> None:
    assert spec.reads_pods is not None


def test_undeclared_columns_count_as_reading_pods() -> None:
    assert reads_pods(NodeColumn("X/y", np.int64, _zone))
    assert reads_pods(InternedColumn("X/z", _zone))
    assert not reads_pods(NodeColumn("X/y", np.int64, _zone, reads_pods=False))


def _pod(name: str, cpu: str = "100m") -> dict[str, Any]:
    """A pending pod requesting cpu, memory and ephemeral storage (every requested column moves)."""
    pod = pending_pod(name, cpu=cpu)
    pod["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "1Gi"
    return pod


def _node_with_pods(node: dict[str, Any], count: int) -> NodeInfo:
    info = NodeInfo(node)
    for index in range(count):
        pod = _pod(f"p{index}", cpu=f"{100 * (index + 1)}m")
        pod["spec"]["nodeName"] = info.name
        info.add_pod(PodInfo(pod))
    return info


NODE_SHAPES = [
    make_node("plain"),
    make_node("tainted", cpu="16", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
    make_node("cordoned", memory="1Gi", pods=3, unschedulable=True, labels={"zone": "a"}),
]


@pytest.mark.parametrize("node", NODE_SHAPES, ids=[n["metadata"]["name"] for n in NODE_SHAPES])
def test_columns_declared_not_to_read_pods_do_not_change_with_pods(node: dict[str, Any]) -> None:
    """The declaration holds: the same Node with 0..4 pods on it gives the same value."""
    pod_free = [spec for spec in IN_TREE if not reads_pods(spec)]
    assert pod_free, "the allocatable columns, taints and cordoned at least"
    views = []
    for count in range(5):
        info = _node_with_pods(node, count)
        info.generation = count
        views.append([spec.compute(info) for spec in pod_free])
    assert all(view == views[0] for view in views)
    # ... while the pod columns do move (the comparison above can fail).
    pods_column = next(spec for spec in IN_TREE if spec.name == "noderesources/pods")
    assert pods_column.compute(_node_with_pods(node, 0)) != pods_column.compute(_node_with_pods(node, 2))


# -- random sequences: the columns kept row by row against columns built afresh ----------------------


def _zone(info: NodeInfo) -> Any:
    return info.labels.get("zone")


TEST_COLUMNS: tuple[ColumnSpec, ...] = (
    # A Node fact, an interned one, and an undeclared column that reads pods.
    NodeColumn("Test/cpu-label", np.int64, lambda info: int(info.labels.get("cpu", "0")), reads_pods=False),
    InternedColumn("Test/zone", _zone, reads_pods=False),
    NodeColumn("Test/pods-undeclared", np.int64, lambda info: len(info.pods), count_nonzero=True),
)
COLUMNS = (*IN_TREE, *TEST_COLUMNS)
LABEL_KEYS = ("zone", "kubernetes.io/hostname", NAME_KEY)


def _decoded(columns: NodeColumns) -> dict[str, Any]:
    """Every column as values (interned and label codes decoded), with the counts kept."""
    view: dict[str, Any] = {}
    for spec in COLUMNS:
        values = columns.array(spec).tolist()
        if isinstance(spec, InternedColumn):
            distinct = columns.distinct(spec)
            key = spec.key or (lambda value: value)
            values = [None if code == 0 else key(distinct[code]) for code in values]
        view[spec.name] = values
        if isinstance(spec, InternedColumn) or spec.count_nonzero:
            view[spec.name + "/nonzero"] = columns.nonzero_rows(spec)
    for label in LABEL_KEYS:
        names = columns.label_values(label)
        view["label/" + label] = [names[code] for code in columns.label_codes(label).tolist()]
    view["infos"] = list(columns.infos)
    return view


def _assert_columns_as_built_afresh(snapshot: Snapshot) -> None:
    kept = snapshot.columns()
    fresh = NodeColumns(snapshot.node_infos(), COLUMNS)
    assert _decoded(kept) == _decoded(fresh)
    for spec in COLUMNS:
        if isinstance(spec, NodeColumn):
            assert kept.all_positive(spec) == fresh.all_positive(spec), spec.name


NODES = ["n1", "n2", "n3", "n4"]
PODS = [f"p{i}" for i in range(8)]
_pick = st.integers(min_value=0, max_value=7)
_node_change = st.sampled_from(["cpu", "taint", "cordon", "label", "same", "pods"])
_step = st.one_of(
    st.tuples(st.just("assume"), _pick, st.sampled_from(NODES)),
    st.tuples(st.just("assume"), _pick, st.sampled_from(NODES)),
    st.tuples(st.just("echo"), _pick, st.none()),
    st.tuples(st.just("echo"), _pick, st.none()),
    st.tuples(st.just("bound elsewhere"), _pick, st.sampled_from(NODES)),
    st.tuples(st.just("delete"), _pick, st.none()),
    st.tuples(st.just("forget"), _pick, st.none()),
    st.tuples(st.just("node update"), st.sampled_from(NODES), _node_change),
    st.tuples(st.just("node delete"), st.sampled_from(NODES), st.none()),
    st.tuples(st.just("node add"), st.sampled_from(NODES), st.none()),
    st.tuples(st.just("snapshot add"), _pick, st.sampled_from(NODES)),
    st.tuples(st.just("snapshot remove"), _pick, st.none()),
    st.tuples(st.just("snapshot restore"), st.none(), st.none()),
    st.tuples(st.just("update"), st.none(), st.none()),
    st.tuples(st.just("update"), st.none(), st.none()),
)


def _node(name: str, version: dict[str, str]) -> dict[str, Any]:
    shape = version.get("shape", "")
    node = make_node(
        name,
        cpu=version.get("cpu", "4"),
        pods=int(version.get("pods", "110")),
        labels={"zone": version.get("zone", "a"), "cpu": version.get("cpu", "4")},
        taints=[{"key": "t", "value": "v", "effect": "NoSchedule"}] if "taint" in shape else (),
        unschedulable="cordon" in shape,
    )
    node["metadata"]["resourceVersion"] = str(next(_rv))
    return node


def _sorted_pick(names: Sequence[str], index: int) -> str | None:
    return sorted(names)[index % len(names)] if names else None


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(_step, min_size=4, max_size=50), read_between=st.booleans())
def test_kept_columns_equal_columns_built_afresh(steps: list[Any], read_between: bool) -> None:
    cache = SchedulerCache()
    versions = {name: {"zone": "ab"[i % 2]} for i, name in enumerate(NODES)}
    live = set(NODES)
    for node_name in NODES:
        cache.add_node(_node(node_name, versions[node_name]))
    snapshot = Snapshot(COLUMNS)
    cache.update_snapshot(snapshot)
    _assert_columns_as_built_afresh(snapshot)
    for label in LABEL_KEYS:
        snapshot.columns().label_codes(label)
    stored: dict[str, dict[str, Any]] = {}  # the informer's version of each bound pod
    in_snapshot: dict[str, PodInfo] = {}  # pods added inside the snapshot, by name
    name: str | None
    for action, pick, arg in steps:
        if action == "assume":
            name = _sorted_pick([p for p in PODS if cache.get_pod(f"default/{p}") is None], pick)
            if name is not None:
                cache.assume_pod(PodInfo(_pod(name, cpu=f"{100 * (1 + pick)}m")), arg)
        elif action in ("echo", "bound elsewhere"):
            name = _sorted_pick([p for p in PODS if cache.is_assumed(f"default/{p}")], pick)
            if name is not None:
                cached = cache.get_pod(f"default/{name}")
                assert cached is not None
                echo = echo_of(cached.pod, arg or cached.node_name)
                cache.update_pod(cached.pod, echo)
                stored[name] = echo
        elif action == "delete":
            name = _sorted_pick(list(stored), pick)
            if name is not None:
                cache.remove_pod(stored.pop(name))
        elif action == "forget":
            name = _sorted_pick([p for p in PODS if cache.is_assumed(f"default/{p}")], pick)
            if name is not None:
                cache.forget_pod(f"default/{name}")
        elif action == "node update" and pick in live:
            version = versions[pick]
            if arg == "cpu":
                version["cpu"] = str(int(version.get("cpu", "4")) * 2 % 15 or 1)
            elif arg in ("taint", "cordon"):
                shape = version.get("shape", "")
                version["shape"] = shape.replace(arg, "") if arg in shape else shape + arg
            elif arg == "label":
                version["zone"] = "c" if version.get("zone") != "c" else "a"
            elif arg == "pods":
                version["pods"] = "2" if version.get("pods") != "2" else "110"
            cache.update_node(None, _node(pick, version))
        elif action == "node delete" and pick in live:
            cache.remove_node(_node(pick, versions[pick]))
            live.discard(pick)
        elif action == "node add" and pick not in live:
            cache.add_node(_node(pick, versions[pick]))
            live.add(pick)
        elif action == "snapshot add":
            what_if = f"what-if-{pick}"
            if what_if not in in_snapshot:
                pod = _pod(what_if, cpu="300m")
                pod["spec"]["nodeName"] = arg
                in_snapshot[what_if] = PodInfo(pod)
                snapshot.add_pod(in_snapshot[what_if], arg)
        elif action == "snapshot remove":
            name = _sorted_pick(list(in_snapshot), pick)
            if name is not None:
                info = in_snapshot.pop(name)
                snapshot.remove_pod(info, info.node_name)
        elif action == "snapshot restore":
            snapshot.restore()
            in_snapshot.clear()
        elif action == "update":
            cache.update_snapshot(snapshot)
            _assert_columns_as_built_afresh(snapshot)
        if read_between:
            _assert_columns_as_built_afresh(snapshot)
    cache.update_snapshot(snapshot)
    _assert_columns_as_built_afresh(snapshot)
    # Without the changes made inside it, the kept snapshot reads as one built from scratch.
    snapshot.restore()
    cache.update_snapshot(snapshot)
    scratch = Snapshot(COLUMNS)
    cache.update_snapshot(scratch)
    expected, got = _decoded(scratch.columns()), _decoded(snapshot.columns())
    assert [info.name for info in expected.pop("infos")] == [info.name for info in got.pop("infos")]
    assert got == expected


def test_a_pod_only_change_keeps_the_node_columns_and_recomputes_the_pod_ones() -> None:
    """What the saving is: after an assume, the columns that read no pods are not computed again."""
    calls: list[str] = []

    def counting(name: str, pods: bool) -> NodeColumn:
        def compute(info: NodeInfo) -> int:
            calls.append(name)
            return len(info.pods) if pods else info.allocatable.milli_cpu

        return NodeColumn("Count/" + name, np.int64, compute, reads_pods=pods)

    columns = (counting("node", False), counting("pods", True))
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    snapshot = Snapshot(columns)
    cache.update_snapshot(snapshot)
    snapshot.columns()
    calls.clear()
    cache.assume_pod(PodInfo(pending_pod("a")), "n1")
    cache.update_snapshot(snapshot)
    assert calls == ["pods"]
    assert snapshot.columns().array(columns[1]).tolist() == [1]
    calls.clear()
    cache.update_node(None, make_node("n1", cpu="8"))
    cache.update_snapshot(snapshot)
    assert calls == ["node", "pods"]
    assert snapshot.columns().array(columns[0]).tolist() == [8000]
    # Pods and the Node changed between two updates: the whole row.
    calls.clear()
    cache.assume_pod(PodInfo(pending_pod("b")), "n1")
    cache.update_node(None, make_node("n1", cpu="2"))
    cache.update_snapshot(snapshot)
    assert calls == ["node", "pods"]
    assert snapshot.columns().array(columns[0]).tolist() == [2000]
