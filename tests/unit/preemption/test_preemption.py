"""DefaultPreemption and the preemption Evaluator, ported from upstream's tables
(``defaultpreemption/default_preemption_test.go``: TestSelectBestCandidate, TestPodEligibleToPreemptOthers,
TestDryRunPreemption's PDB cases; ``preemption/preemption_test.go``: TestFilterVictimsWithPDBViolation,
TestSelectCandidate), with upstream's case names. Start times are whole seconds (the API's precision)
where upstream uses nanoseconds; the order is the same.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.cache.cache import new_snapshot
from scheduler.cache.snapshot import Snapshot
from scheduler.config.loader import parse_config_with_plugins
from scheduler.cycle import profiles
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    POD_DISRUPTION_BUDGETS,
    ResourceSpec,
    StaticLister,
)
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from scheduler.plugins.defaultpreemption import DefaultPreemption, parse_args
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.registry import IN_TREE_REGISTRY
from scheduler.preemption.evaluator import Candidate, pick_one_node_for_preemption
from scheduler.preemption.pdb import filter_pods_with_pdb_violation, parse_pdbs
from tests.unit.plugins.plugin_testlib import node, pod
from tests.unit.plugins.volume_testlib import pv, pvc

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}


def epoch(seconds: int) -> str:
    return f"1970-01-01T00:00:{seconds:02d}Z"


def mk(
    name: str,
    priority: int,
    res: Mapping[str, str],
    *,
    node_name: str = "",
    start: int | None = 0,
    labels: Mapping[str, str] | None = None,
    nominated: str = "",
    extra_spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    st = dict(status or {})
    if start is not None and node_name:
        st["startTime"] = epoch(start)
    out = pod(
        name,
        uid=name,
        requests=[res],
        node_name=node_name,
        nominated_node_name=nominated,
        extra_spec={"priority": priority, **(extra_spec or {})},
        status=st or None,
    )
    if labels:
        out["metadata"]["labels"] = dict(labels)
    if deleting:
        out["metadata"]["deletionTimestamp"] = epoch(59)
    return out


class Env:
    """A real framework (default profile) over a fixed snapshot, as upstream's tf.NewFramework."""

    def __init__(
        self,
        nodes: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        pdbs: Sequence[Mapping[str, Any]] = (),
        args: Mapping[str, Any] | None = None,
        objects: Mapping[ResourceSpec, Sequence[Mapping[str, Any]]] | None = None,
    ) -> None:
        self.snapshot: Snapshot = new_snapshot(nodes, pods)
        listers: dict[ResourceSpec, StaticLister] = {POD_DISRUPTION_BUDGETS: StaticLister(pdbs)}
        for spec, objs in (objects or {}).items():
            listers[spec] = StaticLister(objs)
        plugin_config = [{"name": "DefaultPreemption", "args": dict(args)}] if args else []
        cfg, registry = parse_config_with_plugins(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "py-scheduler", "pluginConfig": plugin_config}],
            },
            registry=IN_TREE_REGISTRY,
        )

        def handle_for(name: str) -> profiles.FrameworkHandle:
            return profiles.FrameworkHandle(
                name,
                lambda: self.snapshot,
                None,
                lambda: 100.0,
                listers=lambda spec: listers.setdefault(spec, StaticLister()),
            )

        self.fwk: Framework = profiles.build_frameworks(cfg, registry, handle_for)["py-scheduler"]
        # DynamicResources' PostFilter runs first, as upstream's default plugins order it.
        [plugin] = [p for p in self.fwk.plugins.post_filter if isinstance(p, DefaultPreemption)]
        self.plugin = plugin
        # Upstream's tests seed getOffsetRand; any fixed seed makes a run repeatable.
        plugin._rng = random.Random(4)

    def prefilter(self, p: Mapping[str, Any]) -> tuple[CycleState, PodInfo]:
        state = CycleState()
        info = PodInfo(p)
        _, status = self.fwk.run_pre_filter(state, info, self.snapshot.node_infos())
        assert status is None, status
        return state, info

    def dry_run(self, p: Mapping[str, Any]) -> list[Candidate]:
        state, info = self.prefilter(p)
        nodes = self.snapshot.node_infos()
        offset, num = self.plugin.get_offset_and_num_candidates(len(nodes))
        pdbs = self.plugin._pdbs()
        candidates, _, _ = self.plugin.evaluator.dry_run_preemption(state, info, nodes, pdbs, offset, num)
        return candidates

    def node_statuses(self, p: Mapping[str, Any]) -> dict[str, Status]:
        state, info = self.prefilter(p)
        out: dict[str, Status] = {}
        for n in self.snapshot.node_infos():
            status = self.fwk.run_filters(state, info, n, self.fwk.filter_plugins_for(state))
            if status is not None:
                out[n.name] = status
        return out

    def post_filter(self, p: Mapping[str, Any]) -> tuple[str | None, Status | None]:
        state, info = self.prefilter(p)
        statuses = self.node_statuses(p)
        return self.plugin.post_filter(state, info, statuses)


def big_nodes(*names: str) -> list[dict[str, Any]]:
    return [node(n, allocatable=VERY_LARGE) for n in names]


SELECT_BEST_CANDIDATE = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        mk("p", HIGH, LARGE),
        [mk("p1", MID, LARGE, node_name="node1"), mk("p2", MID, LARGE, node_name="node2")],
        {"node1", "node2"},
    ),
    (
        "node with min highest priority pod is picked",
        ["node1", "node2", "node3"],
        mk("p", HIGH, VERY_LARGE),
        [
            mk("p1.1", MID, MEDIUM, node_name="node1"),
            mk("p1.2", MID, LARGE, node_name="node1"),
            mk("p2.1", MID, MEDIUM, node_name="node2"),
            mk("p2.2", LOW, MEDIUM, node_name="node2"),
            mk("p3.1", LOW, MEDIUM, node_name="node3"),
            mk("p3.2", LOW, MEDIUM, node_name="node3"),
        ],
        {"node3"},
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        ["node1", "node2", "node3"],
        mk("p", HIGH, VERY_LARGE),
        [
            mk("p1.1", MID, MEDIUM, node_name="node1"),
            mk("p1.2", MID, LARGE, node_name="node1"),
            mk("p2.1", MID, LARGE, node_name="node2"),
            mk("p2.2", LOW, MEDIUM, node_name="node2"),
            mk("p3.1", MID, MEDIUM, node_name="node3"),
            mk("p3.2", MID, MEDIUM, node_name="node3"),
        ],
        {"node2"},
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        ["node1", "node2", "node3"],
        mk("p", HIGH, VERY_LARGE),
        [
            mk("p1.1", MID, SMALL, node_name="node1"),
            mk("p1.2", NEG, SMALL, node_name="node1"),
            mk("p1.3", MID, SMALL, node_name="node1"),
            mk("p1.4", NEG, SMALL, node_name="node1"),
            mk("p2.1", MID, LARGE, node_name="node2"),
            mk("p2.2", NEG, MEDIUM, node_name="node2"),
            mk("p3.1", MID, MEDIUM, node_name="node3"),
            mk("p3.2", NEG, SMALL, node_name="node3"),
            mk("p3.3", LOW, SMALL, node_name="node3"),
        ],
        {"node2"},
    ),
    (
        "sum of adjusted priorities is considered",
        ["node1", "node2", "node3"],
        mk("p", HIGH, VERY_LARGE),
        [
            mk("p1.1", MID, SMALL, node_name="node1"),
            mk("p1.2", NEG, SMALL, node_name="node1"),
            mk("p1.3", NEG, SMALL, node_name="node1"),
            mk("p2.1", MID, LARGE, node_name="node2"),
            mk("p2.2", NEG, MEDIUM, node_name="node2"),
            mk("p3.1", MID, MEDIUM, node_name="node3"),
            mk("p3.2", NEG, SMALL, node_name="node3"),
            mk("p3.3", LOW, SMALL, node_name="node3"),
        ],
        {"node2"},
    ),
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ["node1", "node2", "node3", "node4"],
        mk("p", VERY_HIGH, VERY_LARGE),
        [
            mk("p1.1", MID, SMALL, node_name="node1"),
            mk("p1.2", LOW, SMALL, node_name="node1"),
            mk("p1.3", LOW, SMALL, node_name="node1"),
            mk("p2.1", HIGH, LARGE, node_name="node2"),
            mk("p3.1", MID, MEDIUM, node_name="node3"),
            mk("p3.2", LOW, SMALL, node_name="node3"),
            mk("p3.3", LOW, SMALL, node_name="node3"),
            mk("p3.4", LOW, MEDIUM, node_name="node3"),
            mk("p4.1", MID, MEDIUM, node_name="node4"),
            mk("p4.2", MID, SMALL, node_name="node4"),
            mk("p4.3", MID, SMALL, node_name="node4"),
            mk("p4.4", NEG, SMALL, node_name="node4"),
        ],
        {"node1"},
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        ["node1", "node2", "node3"],
        mk("p", HIGH, VERY_LARGE),
        [
            mk("p1.1", MID, MEDIUM, node_name="node1", start=2),
            mk("p1.2", MID, MEDIUM, node_name="node1", start=2),
            mk("p2.1", MID, MEDIUM, node_name="node2", start=3),
            mk("p2.2", MID, MEDIUM, node_name="node2", start=3),
            mk("p3.1", MID, MEDIUM, node_name="node3", start=1),
            mk("p3.2", MID, MEDIUM, node_name="node3", start=1),
        ],
        {"node2"},
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        mk("p", HIGH, VERY_LARGE),
        [
            mk("p1.1", MID, MEDIUM, node_name="node1", start=4),
            mk("p1.2", MID, MEDIUM, node_name="node1", start=2),
            mk("p2.1", MID, MEDIUM, node_name="node2", start=5),
            mk("p2.2", MID, MEDIUM, node_name="node2", start=1),
            mk("p3.1", MID, MEDIUM, node_name="node3", start=3),
            mk("p3.2", MID, MEDIUM, node_name="node3", start=6),
        ],
        {"node3"},
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        mk("p", HIGH, VERY_LARGE),
        [
            mk("p1.1", LOW, MEDIUM, node_name="node1", start=4),
            mk("p1.2", MID, MEDIUM, node_name="node1", start=2),
            mk("p2.1", MID, MEDIUM, node_name="node2", start=6),
            mk("p2.2", LOW, MEDIUM, node_name="node2", start=1),
            mk("p3.1", LOW, MEDIUM, node_name="node3", start=3),
            mk("p3.2", MID, MEDIUM, node_name="node3", start=5),
        ],
        {"node2"},
    ),
]


@pytest.mark.parametrize(
    ("name", "node_names", "preemptor", "pods", "expected"),
    SELECT_BEST_CANDIDATE,
    ids=[case[0] for case in SELECT_BEST_CANDIDATE],
)
def test_select_best_candidate(
    name: str,
    node_names: list[str],
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    expected: set[str],
) -> None:
    env = Env(big_nodes(*node_names), pods)
    candidates = env.dry_run(preemptor)
    best = pick_one_node_for_preemption(candidates) if len(candidates) > 1 else candidates[0]
    assert best is not None and best.name in expected


ELIGIBLE = [
    (
        "Pod with nominated node",
        mk("p_with_nominated_node", HIGH, SMALL, nominated="node1"),
        [mk("p1", LOW, SMALL, node_name="node1", deleting=True)],
        Status(Code.UnschedulableAndUnresolvable, ["node(s) had untolerated taint"]),
        True,
    ),
    ("Pod without nominated node", mk("p_without_nominated_node", HIGH, SMALL), [], None, True),
    (
        "Pod with 'PreemptNever' preemption policy",
        mk("p_with_preempt_never_policy", HIGH, SMALL, extra_spec={"preemptionPolicy": "Never"}),
        [],
        None,
        False,
    ),
    (
        "preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
        mk("p_with_nominated_node", HIGH, SMALL, nominated="node1"),
        [
            mk(
                "p1",
                LOW,
                SMALL,
                node_name="node1",
                deleting=True,
                status={
                    "conditions": [
                        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
                    ]
                },
            )
        ],
        None,
        False,
    ),
    (
        "non-victim Pods terminating",
        mk("p_with_nominated_node", HIGH, SMALL, nominated="node1"),
        [mk("p1", LOW, SMALL, node_name="node1", deleting=True)],
        None,
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "preemptor", "pods", "nominated_status", "expected"), ELIGIBLE, ids=[c[0] for c in ELIGIBLE]
)
def test_pod_eligible_to_preempt_others(
    name: str,
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    nominated_status: Status | None,
    expected: bool,
) -> None:
    env = Env(big_nodes("node1"), pods)
    eligible, _ = env.plugin.pod_eligible_to_preempt_others(PodInfo(preemptor), nominated_status)
    assert eligible is expected


def pdb(name: str, labels: Mapping[str, str], allowed: int, disrupted: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": dict(labels)}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": {p: epoch(0) for p in disrupted}},
    }


def names_of(pods: Sequence[PodInfo]) -> list[str]:
    return [p.name for p in pods]


def test_filter_victims_with_pdb_violation() -> None:
    """TestFilterVictimsWithPDBViolation: the allowance is spent in order; disrupted pods are free."""
    pods = [PodInfo(mk(f"p{i}", LOW, SMALL, node_name="n", labels={"app": "foo"})) for i in range(1, 4)]
    budgets = parse_pdbs([pdb("pdb", {"app": "foo"}, 1)])
    violating, non_violating = filter_pods_with_pdb_violation(pods, budgets)
    assert names_of(violating) == ["p2", "p3"] and names_of(non_violating) == ["p1"]
    # "pod in disruptedPods is not counted"
    budgets = parse_pdbs([pdb("pdb", {"app": "foo"}, 1, disrupted=["p1"])])
    violating, non_violating = filter_pods_with_pdb_violation(pods, budgets)
    assert names_of(violating) == ["p3"] and names_of(non_violating) == ["p1", "p2"]
    # Another namespace, an empty selector, or a pod without labels never violates.
    other = [pdb("x", {"app": "foo"}, 0) | {"metadata": {"name": "x", "namespace": "other"}}]
    empty = [{"metadata": {"name": "e", "namespace": "default"}, "spec": {"selector": {}}, "status": {}}]
    for budgets in (parse_pdbs(other), parse_pdbs(empty)):
        assert filter_pods_with_pdb_violation(pods, budgets) == ([], pods)


def test_dry_run_preemption_pdb_cases() -> None:
    """TestDryRunPreemption "preemption with violation of the pdb with pod whose eviction was processed":
    a node whose victims a PDB protects comes after a PDB-free node, and counts its violations."""
    pods = [
        mk("p1.1", MID, LARGE, node_name="node1", labels={"app": "foo"}),
        mk("p1.2", MID, MEDIUM, node_name="node1", labels={"app": "foo"}),
        mk("p2.1", MID, LARGE, node_name="node2", labels={"app": "bar"}),
        mk("p2.2", MID, MEDIUM, node_name="node2", labels={"app": "bar"}),
    ]
    env = Env(big_nodes("node1", "node2"), pods, pdbs=[pdb("foo", {"app": "foo"}, 0)])
    candidates = env.dry_run(mk("p", HIGH, LARGE))
    by_name = {c.name: c for c in candidates}
    assert by_name["node1"].num_pdb_violations == 1 and names_of(by_name["node1"].victims) == ["p1.1"]
    assert by_name["node2"].num_pdb_violations == 0
    assert [c.name for c in candidates][-1] == "node1"  # violating candidates last
    assert pick_one_node_for_preemption(candidates).name == "node2"  # type: ignore[union-attr]


def test_victims_are_the_minimal_set_most_important_reprieved_first() -> None:
    """SelectVictimsOnNode: all lower-priority pods removed, then re-added most important first; only
    those that do not fit beside the preemptor stay victims. Equal or higher priority is never a victim."""
    pods = [
        mk("mid", MID, MEDIUM, node_name="node1"),
        mk("low", LOW, MEDIUM, node_name="node1"),
        mk("same", HIGH, SMALL, node_name="node1"),
    ]
    env = Env(big_nodes("node1"), pods)
    [candidate] = env.dry_run(mk("p", HIGH, MEDIUM))
    assert names_of(candidate.victims) == ["low"]


def _rwop_objects(name: str) -> dict[ResourceSpec, list[dict[str, Any]]]:
    """A ReadWriteOncePod claim bound to a PV with no node affinity (VolumeBinding passes it)."""
    mode = ("ReadWriteOncePod",)
    claim = pvc(name, volume_name=f"pv-{name}", access_modes=mode)
    volume = pv(f"pv-{name}", phase="Bound", access_modes=mode, claim=claim)
    return {PERSISTENT_VOLUME_CLAIMS: [claim], PERSISTENT_VOLUMES: [volume]}


def test_read_write_once_pod_holder_is_the_victim() -> None:
    """VolumeRestrictions' RemovePod: the dry run sees that evicting the low-priority holder of a
    ReadWriteOncePod claim frees it; the pod beside it, which does not help, is reprieved."""
    claim = {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]}
    pods = [
        mk("holder", LOW, SMALL, node_name="node1", extra_spec=claim),
        mk("bystander", LOW, SMALL, node_name="node1"),
        mk("other", LOW, SMALL, node_name="node2"),
    ]
    env = Env(big_nodes("node1", "node2"), pods, objects=_rwop_objects("c"))
    preemptor = mk("p", HIGH, SMALL, extra_spec=claim)
    statuses = env.node_statuses(preemptor)
    assert {n: s.plugin for n, s in statuses.items()} == {
        "node1": "VolumeRestrictions",
        "node2": "VolumeRestrictions",
    }
    [candidate] = env.dry_run(preemptor)
    assert candidate.name == "node1" and names_of(candidate.victims) == ["holder"]
    nominated, status = env.post_filter(preemptor)
    assert nominated == "node1" and (status is None or status.code is Code.Success)


def test_read_write_once_pod_holder_of_higher_priority_means_no_candidate() -> None:
    claim = {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]}
    pods = [
        mk("holder", HIGH, SMALL, node_name="node1", extra_spec=claim),
        mk("low", LOW, SMALL, node_name="node1"),
    ]
    env = Env(big_nodes("node1"), pods, objects=_rwop_objects("c"))
    assert env.dry_run(mk("p", HIGH, SMALL, extra_spec=claim)) == []


def test_post_filter_messages() -> None:
    env = Env(
        [node("node1", allocatable=VERY_LARGE), node("node2", allocatable=MEDIUM)],
        [mk("big", HIGH, VERY_LARGE, node_name="node1")],
    )
    # node1 is full of an equal-priority pod (no victims); node2 is too small for the pod at all.
    nominated, status = env.post_filter(mk("p", HIGH, LARGE))
    assert nominated == ""
    assert status is not None and status.message() == (
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )
    nominated, status = env.post_filter(
        mk("never", VERY_HIGH, LARGE, extra_spec={"preemptionPolicy": "Never"})
    )
    assert nominated is None
    assert (
        status is not None and status.message() == "preemption: not eligible due to preemptionPolicy=Never."
    )
    # A success nominates the node and (v1.37) says so; without an executor nothing is evicted.
    nominated, status = env.post_filter(mk("vip", VERY_HIGH, LARGE))
    assert nominated == "node1"
    assert status is not None and status.code is Code.Success
    assert status.message() == (
        "preemption: found a potential placement for pod on node node1, preempting 1 victims"
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            {"minCandidateNodesPercentage": -1},
            "minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
        ),
        ({"minCandidateNodesPercentage": 101}, "not in valid range [0, 100]"),
        (
            {"minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
        ),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        ),
        ({"minCandidateNodes": 1}, "unknown field"),
    ],
)
def test_args_validation(args: dict[str, Any], error: str) -> None:
    with pytest.raises(PluginArgsError, match=re.escape(error)):
        parse_args(args)


def test_args_defaults_and_num_candidates() -> None:
    args = parse_args({})
    assert (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute) == (10, 100)
    env = Env(
        big_nodes("node1"), [], args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 10}
    )
    # calculateNumCandidates: max(percentage of nodes, absolute), at most all nodes.
    assert env.plugin.get_offset_and_num_candidates(1000)[1] == 400
    assert env.plugin.get_offset_and_num_candidates(20)[1] == 10
    assert env.plugin.get_offset_and_num_candidates(5)[1] == 5
    offsets = {env.plugin.get_offset_and_num_candidates(50)[0] for _ in range(50)}
    assert len(offsets) > 1 and all(0 <= o < 50 for o in offsets)


def test_pick_one_node_for_preemption_fewest_pdb_violations_first() -> None:
    low = PodInfo(mk("low", LOW, SMALL, node_name="a"))
    mid = PodInfo(mk("mid", MID, SMALL, node_name="b"))
    candidates = [Candidate("a", (low,), 1), Candidate("b", (mid,), 0)]
    assert pick_one_node_for_preemption(candidates).name == "b"  # type: ignore[union-attr]
