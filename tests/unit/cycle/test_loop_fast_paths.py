"""The scheduling loop's cheaper forms of plain operations give exactly the plain answers: the
round-robin order, consecutive subsets' sliced gathers, the store-level all-positive answer, the
shared all-pass masks, the one-reduction score range check, the pod request sums and millicores."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.cycle.filter_loop import _round_robin
from scheduler.framework import NodeColumn, NodeInfo, NodeSubset, all_pass
from scheduler.framework.columns import consecutive_subset
from scheduler.framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE
from scheduler.framework.quantity import parse_quantity
from scheduler.framework.resources import (
    _ceil,
    _ceil_milli,
    pod_request_amounts,
    pod_requests_and_non_zero,
)
from scheduler.framework.runtime import _out_of_range
from tests.unit.fakes import make_node


def _capacity(info: NodeInfo) -> int:
    return int(info.labels.get("capacity", "0"))


CAPACITY = NodeColumn("FastPaths/capacity", np.int64, _capacity)


def _snapshot(capacities: list[int]) -> Snapshot:
    cache = SchedulerCache()
    for i, capacity in enumerate(capacities):
        cache.add_node(make_node(f"n{i:03d}", labels={"capacity": str(capacity)}))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    snapshot.columns((CAPACITY,))
    return snapshot


@given(count=st.integers(0, 40), start=st.integers(0, 200))
def test_the_round_robin_order_is_the_snapshot_from_the_start_index(count: int, start: int) -> None:
    order = _round_robin(count, start)
    plain = (np.arange(count, dtype=np.int64) + start) % count if count else np.zeros(0, dtype=np.int64)
    assert order.tolist() == plain.tolist()
    assert not count or not order.flags.writeable


@settings(max_examples=60, deadline=None)
@given(
    capacities=st.lists(st.integers(0, 9), min_size=1, max_size=12),
    first=st.integers(0, 11),
    length=st.integers(0, 12),
)
def test_a_consecutive_subset_gathers_what_fancy_indexing_does(
    capacities: list[int], first: int, length: int
) -> None:
    snapshot = _snapshot(capacities)
    columns = snapshot.columns()
    count = len(capacities)
    first %= count
    length = min(length, count)
    positions = (np.arange(length, dtype=np.int64) + first) % count
    fast = consecutive_subset(columns, positions, first)
    plain = NodeSubset(columns, positions)
    assert fast.gather(CAPACITY).tolist() == plain.gather(CAPACITY).tolist()
    assert fast.label_codes("capacity").tolist() == plain.label_codes("capacity").tolist()
    assert [node.name for node in fast] == [node.name for node in plain]
    assert (
        fast.all_positive(CAPACITY)
        == plain.all_positive(CAPACITY)
        == all(capacities[p] > 0 for p in positions.tolist())
    )
    if length and first + length <= count:
        # A view of the column itself: writing through it must fail, not change the snapshot.
        with pytest.raises(ValueError):
            fast.gather(CAPACITY)[:1] = 7


def test_all_positive_is_forgotten_when_a_row_becomes_zero_and_relearnt() -> None:
    cache = SchedulerCache()
    for i in range(4):
        cache.add_node(make_node(f"n{i}", labels={"capacity": "3"}))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    columns = snapshot.columns((CAPACITY,))
    everything = np.arange(4, dtype=np.int64)
    assert columns.all_positive(CAPACITY)
    assert NodeSubset(columns, everything).all_positive(CAPACITY)

    cache.update_node(make_node("n2", labels={"capacity": "3"}), make_node("n2", labels={"capacity": "0"}))
    cache.update_snapshot(snapshot)
    assert snapshot.columns() is columns
    assert not columns.all_positive(CAPACITY)
    assert not NodeSubset(columns, everything).all_positive(CAPACITY)
    # A subset without the zero row is still all positive, from its own rows.
    assert NodeSubset(columns, np.array([0, 1, 3], dtype=np.int64)).all_positive(CAPACITY)

    cache.update_node(make_node("n2", labels={"capacity": "0"}), make_node("n2", labels={"capacity": "5"}))
    cache.update_snapshot(snapshot)
    assert columns.all_positive(CAPACITY)


def test_all_pass_masks_are_shared_read_only_and_all_true() -> None:
    first, second = all_pass(5), all_pass(5)
    assert first.ok is second.ok
    assert first.ok.tolist() == [True] * 5 and first.all_ok
    assert list(first) == [None] * 5
    with pytest.raises(ValueError):
        first.ok[0] = False
    assert all_pass(0).ok.tolist() == []


@given(st.lists(st.integers(-(2**62), 2**62), max_size=20))
def test_the_score_range_check_flags_exactly_the_out_of_range_arrays(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    outside = any(not MIN_NODE_SCORE <= v <= MAX_NODE_SCORE for v in values)
    assert (bool(len(array)) and _out_of_range(array)) == outside


def test_the_score_range_check_at_the_edges() -> None:
    assert not _out_of_range(np.array([MIN_NODE_SCORE, MAX_NODE_SCORE], dtype=np.int64))
    assert _out_of_range(np.array([MIN_NODE_SCORE - 1], dtype=np.int64))
    assert _out_of_range(np.array([MAX_NODE_SCORE + 1], dtype=np.int64))
    assert _out_of_range(np.array([np.iinfo(np.int64).min], dtype=np.int64))


@pytest.mark.parametrize(
    "containers",
    [
        [{"cpu": "100m", "memory": "128Mi"}],
        [{"cpu": "100m"}, {"cpu": "250m", "memory": "1Gi"}, {}],
        [{"example.com/gpu": "1"}, {"example.com/gpu": "2", "cpu": "1.5"}],
    ],
)
def test_pod_requests_sum_each_resource_exactly(containers: list[dict[str, str]]) -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [
                {"name": f"c{i}", "resources": {"requests": wanted}} for i, wanted in enumerate(containers)
            ]
        },
    }
    expected: dict[str, Fraction] = {}
    for requests in containers:
        for name, quantity in requests.items():
            expected[name] = expected.get(name, Fraction(0)) + parse_quantity(quantity)
    amounts = pod_request_amounts(pod)
    assert amounts == expected
    assert all(type(value) is Fraction for value in amounts.values())
    plain, non_zero = pod_requests_and_non_zero(pod)
    assert plain.milli_cpu == int(expected.get("cpu", 0) * 1000)
    assert plain.memory == int(expected.get("memory", 0))
    assert plain.get("example.com/gpu") == int(expected.get("example.com/gpu", 0))
    assert non_zero.milli_cpu >= plain.milli_cpu


@given(st.fractions(min_value=-(10**6), max_value=10**9))
def test_millicores_round_up_as_the_fraction_arithmetic_does(amount: Fraction) -> None:
    assert _ceil_milli(amount) == _ceil(amount * 1000) == math.ceil(amount * 1000)
