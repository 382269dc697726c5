"""Which equal-priority victims a node gives up when no kubelet has started them (parity_fuzz seed 7).

Upstream sorts a node's potential victims with Go's ``sort.Slice`` and ``MoreImportantPod``, whose tie
break compares ``GetPodStartTime`` of each pod -- ``time.Now()`` for an unstarted pod, read for the
first argument before the second -- so ``less`` is true in both orders. The result is whatever Go's
pdqsort makes of the node's pod order; and that order is upstream's NodeInfo.Pods slice, where a
removed pod's place goes to the last pod. The real kube-scheduler preempted the *oldest* of five
unstarted pods where py evicted two newer ones.
"""

from __future__ import annotations

from typing import Any

from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.preemption.gosort import sort_slice
from scheduler.preemption.pods import by_importance
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


def test_by_importance_as_upstream_orders_unstarted_pods() -> None:
    pods = [_pod("a", 0), _pod("b", 0), _pod("c", 5), _pod("d", 0), _pod("s", 0, "2026-01-01T00:00:00Z")]
    # Higher priority first; a started pod before unstarted ones of its priority; the unstarted ones
    # as Go's insertion sort leaves them with an always-true tie: reversed.
    assert [p.name for p in by_importance(pods)] == ["c", "s", "d", "b", "a"]


def test_node_info_remove_moves_the_last_pod_into_the_gap() -> None:
    info = NodeInfo(node("n"))
    for name in ("a", "b", "c", "d"):
        info.add_pod(_pod(name, 0))
    info.remove_pod("default/b")
    assert [p.name for p in info.pods.values()] == ["a", "d", "c"]
    info.remove_pod("default/c")  # the last one: nothing moves
    assert [p.name for p in info.pods.values()] == ["a", "d"]


def test_oldest_unstarted_pod_is_the_victim() -> None:
    """Four unstarted 1-cpu pods fill a 4-cpu node; a higher-priority 1-cpu pod needs one gone. The
    reprieve order is the node's pods reversed, so the first-added pod is the one left out."""
    pods = [mk(f"p{i}", LOW, {"cpu": "1"}, node_name="node1", start=None) for i in range(4)]
    env = Env([node("node1", allocatable={"cpu": "4", "memory": "1Gi"})], pods)
    [candidate] = env.dry_run(mk("preemptor", 100, {"cpu": "1"}))
    assert names_of(candidate.victims) == ["p0"]
