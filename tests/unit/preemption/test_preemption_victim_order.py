"""Which equal-priority victims a node gives up when no kubelet has started them (parity_fuzz seed 7
against v1.36.3, seed 108 against v1.37.2).

v1.37 sorts a node's potential victims with Go's ``sort.Slice`` and ``MoreImportantVictim``, whose tie
break compares each victim's ``EarliestStartTime``: ``time.Now()`` for an unstarted pod, read when
GetVictimsOnNode made the victims in the node's pod order (upstream's NodeInfo.Pods slice, where a
removed pod's place goes to the last pod). So the earlier of two unstarted pods on the node is the more
important one, reprieved first; the newest is the victim. (v1.36's ``MoreImportantPod`` read
``time.Now()`` at every comparison and preempted the *oldest*.)
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.preemption.gosort import sort_slice
from scheduler.preemption.pods import _more_important_victim, by_importance
from tests.unit.plugins.plugin_testlib import node, pod
from tests.unit.preemption.test_preemption import LOW, Env, mk, names_of


def _always(_a: Any, _b: Any) -> bool:
    return True


def _by_hundreds(a: int, b: int) -> bool:
    return a // 100 > b // 100 if a // 100 != b // 100 else True


def test_sort_slice_replays_go() -> None:
    """Outputs of Go 1.26's sort.Slice for the same inputs and comparators (insertion sort up to 12,
    pdqsort with its pivot, partition and pattern breaking above)."""
    cases: list[tuple[int, Any, list[int]]] = [
        (5, _always, [4, 3, 2, 1, 0]),
        (13, _always, [11, 10, 9, 8, 7, 0, 5, 4, 3, 2, 1, 12, 6]),
        (13, _by_hundreds, [211, 208, 205, 202, 110, 107, 104, 101, 9, 0, 3, 12, 6]),
        (
            40,
            _always,
            [
                37,
                24,
                10,
                16,
                26,
                22,
                0,
                8,
                19,
                12,
                32,
                28,
                7,
                27,
                3,
                4,
                9,
                21,
                1,
                23,
                11,
                25,
                5,
                36,
                18,
                31,
                29,
                34,
                33,
                2,
                6,
                14,
                30,
                17,
                35,
                38,
                39,
                15,
                13,
                20,
            ],
        ),
        (
            40,
            _by_hundreds,
            [
                211,
                217,
                235,
                208,
                229,
                220,
                205,
                223,
                238,
                202,
                226,
                214,
                232,
                101,
                104,
                122,
                128,
                137,
                119,
                107,
                134,
                116,
                131,
                125,
                113,
                110,
                6,
                36,
                9,
                0,
                33,
                39,
                15,
                30,
                18,
                21,
                27,
                3,
                24,
                12,
            ],
        ),
    ]
    for n, less, want in cases:
        xs = list(range(n)) if less is _always else [(i % 3) * 100 + i for i in range(n)]
        sort_slice(xs, less)
        assert xs == want, (n, less.__name__)


def _pod(name: str, priority: int, start: str | None = None) -> PodInfo:
    status = {"startTime": start} if start else None
    return PodInfo(pod(name, uid=name, node_name="n", extra_spec={"priority": priority}, status=status))


@pytest.mark.parametrize("seed", range(200))
def test_by_importance_gives_go_sorts_order(seed: int) -> None:
    """Up to 12 pods are ordered by a stable sort on a rank, more are replayed through Go's sort: both
    give what Go's sort.Slice with MoreImportantVictim gives (started and unstarted pods, shared start
    times and priorities, node orders with gaps and pods missing from them)."""
    rng = random.Random(seed)
    starts = [None, "2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z", "2026-01-02T00:00:00Z"]
    pods = [_pod(f"p{i}", rng.choice([0, 0, 5, 7]), rng.choice(starts)) for i in range(rng.randint(0, 16))]
    created = {p.key: rng.randint(0, 20) for p in pods if rng.random() < 0.9}
    replayed = list(pods)
    sort_slice(replayed, lambda a, b: _more_important_victim(a, b, created))
    assert [p.name for p in by_importance(pods, created)] == [p.name for p in replayed]


def test_by_importance_as_upstream_orders_unstarted_pods() -> None:
    pods = [_pod("a", 0), _pod("b", 0), _pod("c", 5), _pod("d", 0), _pod("s", 0, "2026-01-01T00:00:00Z")]
    # Higher priority first; a started pod before unstarted ones of its priority; the unstarted ones in
    # the order their victims were made (the node's pod order).
    assert [p.name for p in by_importance(pods)] == ["c", "s", "a", "b", "d"]
    created = {p.key: i for i, p in enumerate(reversed(pods))}
    assert [p.name for p in by_importance(pods, created)] == ["c", "s", "d", "b", "a"]


def test_node_info_remove_moves_the_last_pod_into_the_gap() -> None:
    info = NodeInfo(node("n"))
    for name in ("a", "b", "c", "d"):
        info.add_pod(_pod(name, 0))
    info.remove_pod("default/b")
    assert [p.name for p in info.pods.values()] == ["a", "d", "c"]
    info.remove_pod("default/c")  # the last one: nothing moves
    assert [p.name for p in info.pods.values()] == ["a", "d"]


def test_newest_unstarted_pod_is_the_victim() -> None:
    """Four unstarted 1-cpu pods fill a 4-cpu node; a higher-priority 1-cpu pod needs one gone. The
    reprieve order is the node's pod order (v1.37), so the last-added pod is the one left out."""
    pods = [mk(f"p{i}", LOW, {"cpu": "1"}, node_name="node1", start=None) for i in range(4)]
    env = Env([node("node1", allocatable={"cpu": "4", "memory": "1Gi"})], pods)
    [candidate] = env.dry_run(mk("preemptor", 100, {"cpu": "1"}))
    assert names_of(candidate.victims) == ["p3"]


def test_the_fuzzer_compares_messages_without_the_nominee() -> None:
    """v1.37's successful preemption names its node; which of equally good candidates is nominated is
    random (the fuzzer checks the nominee apart), so the message is compared with the node blanked."""
    from bench.parity_fuzz import without_nominee

    kube = "0/3 nodes are available: 3 Insufficient cpu. preemption: found a potential placement for pod on node n1, preempting 1 victims"  # noqa: E501
    py = kube.replace("node n1,", "node n2,")
    assert without_nominee(kube) == without_nominee(py)
    assert without_nominee(kube) != without_nominee(kube.replace("1 victims", "2 victims"))
    assert (
        without_nominee("0/3 nodes are available: 3 Insufficient cpu.")
        == "0/3 nodes are available: 3 Insufficient cpu."
    )


def _three_unstarted_on_one_node(order: str) -> dict[str, list[dict[str, Any]]]:
    """A 4-cpu node full of priority-0 unstarted pods x (2 cpu), y and z (1 cpu each), in ``order``."""
    sizes = {"x": "2", "y": "1", "z": "1"}
    pods = [mk(name, LOW, {"cpu": sizes[name]}, node_name="node1", start=None) for name in order]
    for p in pods:
        p["metadata"]["resourceVersion"] = "1"
    return {"nodes": [node("node1", allocatable={"cpu": "4", "memory": "1Gi"})], "pods": pods}


def test_the_fuzzer_cache_check_allows_a_victim_count_that_follows_pod_order() -> None:
    """A 2-cpu preemptor on the node: reprieved first, x (first on the node) stays and y and z go; y
    first, y and z stay and only x goes. Same node, same pods: the parity fuzzer's cache check (a cache
    kept up to date from events against one built from a listing) must not call that a divergence."""
    from bench.parity_fuzz import _essence, py_verdict

    preemptor = mk("preemptor", 1000, {"cpu": "2"})
    x_first = py_verdict(_three_unstarted_on_one_node("xyz"), preemptor)
    y_first = py_verdict(_three_unstarted_on_one_node("yzx"), preemptor)
    assert x_first.victims == {"node1": ["default/y", "default/z"]}
    assert y_first.victims == {"node1": ["default/x"]}
    assert "preempting 2 victims" in x_first.message and "preempting 1 victims" in y_first.message
    assert _essence(x_first) == _essence(y_first)


def test_the_fuzzer_cache_check_compares_what_each_node_holds() -> None:
    """``snapshot_drift`` ignores the order of a node's pods but names a node whose pods or requests
    differ (a pod counted twice, or one left behind)."""
    from bench.parity_fuzz import snapshot_drift
    from scheduler.cache.cache import new_snapshot

    def snapshot(order: str) -> Any:
        objects = _three_unstarted_on_one_node(order)
        return new_snapshot(objects["nodes"], objects["pods"])

    assert snapshot_drift(snapshot("xyz"), snapshot("zyx")) == []
    [drift] = snapshot_drift(snapshot("xyz"), snapshot("xy"))
    assert drift.startswith("node node1: incremental (['default/x', 'default/y', 'default/z'], (4000,")
    doubled = snapshot("xyz")
    doubled.get("node1").add_pod(doubled.get("node1").pods["default/y"])  # the dict entry replaced
    assert len(doubled.get("node1").pods) == 3
    [drift] = snapshot_drift(doubled, snapshot("xyz"))
    assert "(5000," in drift and "(4000," in drift
