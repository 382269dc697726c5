"""Plugin-owned node columns: a plugin declares a column, the snapshot keeps exactly the declared ones,
updates them row by row, and a clash between two declarations stops startup."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.cycle.algorithm import SchedulingAlgorithm
from scheduler.framework import (
    ColumnConflictError,
    ColumnSpec,
    CycleState,
    InternedColumn,
    MaskedStatuses,
    NodeColumn,
    NodeInfo,
    NodeSubset,
    PluginFactory,
    PodInfo,
    Status,
    as_subset,
)
from scheduler.framework.runtime import Framework, node_columns_of
from scheduler.plugins import names
from scheduler.plugins.noderesources import columns as resource_columns
from scheduler.plugins.tainttoleration import TAINTS
from tests.unit.fakes import PROFILE, build_frameworks, make_node, make_pod

computed: list[str] = []


def _pods_on(info: NodeInfo) -> int:
    computed.append(info.name)
    return len(info.pods)


# "One pod per node": a Filter whose batch path reads a column it declares.
PODS = NodeColumn("OnePerNode/pods", np.int64, _pods_on, count_nonzero=True)
RACK = InternedColumn("OnePerNode/rack", lambda info: info.labels.get("rack"))


class OnePerNode:
    name = "OnePerNode"

    def __init__(self, args: Mapping[str, Any] | None = None, handle: object = None) -> None:
        self.batch_calls = 0

    def node_columns(self) -> Sequence[ColumnSpec]:
        return (PODS, RACK)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return Status.unschedulable("node is taken") if node.pods else None

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        subset = as_subset(nodes)
        if subset is None:
            return [self.filter(state, pod, node) for node in nodes]
        self.batch_calls += 1
        taken = Status.unschedulable("node is taken")
        return MaskedStatuses(subset.gather(PODS) == 0, lambda index: taken)


class Impostor:
    """Declares OnePerNode's column name with another meaning."""

    name = "Impostor"

    def __init__(self, args: Mapping[str, Any] | None = None, handle: object = None) -> None:
        pass

    def node_columns(self) -> Sequence[ColumnSpec]:
        return (NodeColumn("OnePerNode/pods", np.int64, lambda info: info.allocatable.allowed_pod_number),)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


EXTRA: Mapping[str, PluginFactory] = {"OnePerNode": OnePerNode, "Impostor": Impostor}


def _profile(filters: Sequence[str], disabled: Sequence[str] = ()) -> dict[str, Any]:
    """The default plugins plus ``filters``, without ``disabled`` at any extension point."""
    return {
        "schedulerName": PROFILE,
        "plugins": {
            "multiPoint": {"disabled": [{"name": name} for name in disabled]},
            "filter": {"enabled": [{"name": name} for name in filters]},
        },
    }


def _framework(profile: Mapping[str, Any], snapshot: list[Snapshot]) -> Framework:
    return build_frameworks(lambda: snapshot[0], None, lambda: 0.0, profile=profile, extra_registry=EXTRA)[
        PROFILE
    ]


def _cache(count: int) -> SchedulerCache:
    cache = SchedulerCache()
    for i in range(count):
        node = make_node(f"n{i}", labels={"rack": f"r{i % 2}"})
        cache.add_node(node)
    return cache


def _plugin(fwk: Framework, name: str) -> Any:
    return next(plugin for plugin in fwk.all_plugins() if plugin.name == name)


def test_a_declared_column_is_built_and_follows_node_changes_row_by_row() -> None:
    holder: list[Snapshot] = []
    fwk = _framework(_profile(["OnePerNode"]), holder)
    assert PODS in fwk.node_columns and RACK in fwk.node_columns
    cache = _cache(4)
    snapshot = Snapshot(node_columns_of([fwk]))
    holder.append(snapshot)
    cache.update_snapshot(snapshot)
    columns = snapshot.columns()
    assert columns.array(PODS).tolist() == [0, 0, 0, 0]
    assert columns.nonzero_rows(PODS) == 0
    assert [columns.distinct(RACK)[code] for code in columns.array(RACK).tolist()] == ["r0", "r1", "r0", "r1"]

    position = snapshot.index_of("n2")
    assert position is not None
    computed.clear()
    cache.add_pod(make_pod("p", node_name="n2"))
    cache.update_snapshot(snapshot)
    assert snapshot.columns() is columns, "a pod change must not rebuild the columns"
    assert computed == ["n2"], "only the changed row is recomputed"
    expected = [0, 0, 0, 0]
    expected[position] = 1
    assert columns.array(PODS).tolist() == expected
    assert columns.nonzero_rows(PODS) == 1

    cache.update_node(None, make_node("n2", labels={"rack": "r9"}))
    cache.remove_pod(make_pod("p", node_name="n2"))
    cache.update_snapshot(snapshot)
    assert columns.nonzero_rows(PODS) == 0
    assert columns.distinct(RACK)[int(columns.array(RACK)[position])] == "r9"


def test_the_scheduling_cycle_hands_a_plugin_its_column() -> None:
    holder: list[Snapshot] = []
    fwk = _framework(_profile(["OnePerNode"]), holder)
    cache = _cache(3)
    snapshot = Snapshot(node_columns_of([fwk]))
    holder.append(snapshot)
    algorithm = SchedulingAlgorithm(rng=random.Random(0))
    placed = []
    for i in range(3):
        cache.update_snapshot(snapshot)
        pod = PodInfo(make_pod(f"p{i}"))
        node_name = algorithm.schedule_pod(fwk, CycleState(), pod, snapshot).node_name
        cache.assume_pod(pod, node_name)
        placed.append(node_name)
    assert sorted(placed) == ["n0", "n1", "n2"]
    assert _plugin(fwk, "OnePerNode").batch_calls == 3


def test_a_profile_without_the_plugin_does_not_compute_its_column() -> None:
    holder: list[Snapshot] = []
    fwk = _framework(_profile([], disabled=[names.TAINT_TOLERATION]), holder)
    assert TAINTS not in fwk.node_columns
    assert PODS not in fwk.node_columns
    cache = _cache(5)
    snapshot = Snapshot(node_columns_of([fwk]))
    holder.append(snapshot)
    cache.update_snapshot(snapshot)
    computed.clear()
    algorithm = SchedulingAlgorithm(rng=random.Random(0))
    for i in range(3):
        pod = PodInfo(make_pod(f"p{i}"))
        cache.assume_pod(pod, algorithm.schedule_pod(fwk, CycleState(), pod, snapshot).node_name)
        cache.update_snapshot(snapshot)
    columns = snapshot.columns(fwk.node_columns)
    assert not columns.has(TAINTS) and not columns.has(PODS)
    assert computed == []
    assert columns.has(resource_columns.ALLOCATABLE_CPU)
    with pytest.raises(KeyError, match="node_columns"):
        NodeSubset(columns, np.arange(len(columns), dtype=np.int64)).gather(TAINTS)


def test_resource_plugins_share_their_columns_and_a_clash_stops_startup() -> None:
    holder: list[Snapshot] = []
    fwk = _framework({"schedulerName": PROFILE}, holder)
    # Fit and BalancedAllocation both read allocatable cpu: one column.
    assert [spec.name for spec in fwk.node_columns].count(resource_columns.ALLOCATABLE_CPU.name) == 1
    with pytest.raises(ColumnConflictError, match=r"OnePerNode/pods.*Impostor"):
        _framework(_profile(["OnePerNode", "Impostor"]), holder)


def test_columns_a_cycle_asks_for_survive_nodes_being_added() -> None:
    holder: list[Snapshot] = []
    fwk = _framework(_profile(["OnePerNode"]), holder)
    cache = _cache(2)
    snapshot = Snapshot()  # no specs up front: the cycle's request builds them
    holder.append(snapshot)
    cache.update_snapshot(snapshot)
    assert snapshot.columns(fwk.node_columns).has(PODS)
    cache.add_node(make_node("n9"))
    cache.add_pod(make_pod("p", node_name="n9"))
    cache.update_snapshot(snapshot)
    columns = snapshot.columns()
    position = snapshot.index_of("n9")
    assert position is not None
    assert columns.has(PODS) and int(columns.array(PODS)[position]) == 1
    assert columns.nonzero_rows(PODS) == 1


def test_integer_columns_saturate_when_built_and_when_a_row_changes() -> None:
    """The API server accepts ``cpu: 1e100`` on a pod bound through spec.nodeName: past int64."""
    cache = _cache(2)
    huge = make_pod("huge", cpu="10e99", node_name="n0")
    cache.add_pod(huge)
    snapshot = Snapshot([resource_columns.REQUESTED_CPU, resource_columns.FREE_CPU])
    cache.update_snapshot(snapshot)
    columns = snapshot.columns()
    top, bottom = int(np.iinfo(np.int64).max), int(np.iinfo(np.int64).min)
    row = snapshot.index_of("n0")
    assert row is not None
    assert int(columns.array(resource_columns.REQUESTED_CPU)[row]) == top
    assert int(columns.array(resource_columns.FREE_CPU)[row]) == bottom

    cache.remove_pod(huge)
    cache.add_pod(make_pod("huge-too", cpu="10e99", node_name="n1"))
    cache.update_snapshot(snapshot)
    assert snapshot.columns() is columns, "a pod change updates rows in place"
    other = snapshot.index_of("n1")
    assert other is not None
    assert int(columns.array(resource_columns.REQUESTED_CPU)[other]) == top
    assert int(columns.array(resource_columns.REQUESTED_CPU)[row]) == 0


def test_a_label_memo_is_kept_across_pod_changes_and_dropped_when_a_label_code_changes() -> None:
    cache = _cache(3)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    columns = snapshot.columns()
    builds: list[list[int]] = []

    def racks() -> list[int]:
        builds.append(columns.label_codes("rack").tolist())
        return builds[-1]

    first = columns.label_memo("racks", racks)
    cache.add_pod(make_pod("p", node_name="n1"))
    cache.update_node(None, make_node("n0", labels={"rack": "r0"}))  # the same labels again
    cache.update_snapshot(snapshot)
    assert snapshot.columns() is columns
    assert columns.label_memo("racks", racks) is first and len(builds) == 1

    cache.update_node(None, make_node("n0", labels={"rack": "r7"}))
    cache.update_snapshot(snapshot)
    again = columns.label_memo("racks", racks)
    assert len(builds) == 2 and again != first
    assert again == columns.label_codes("rack").tolist()
