"""PodTopologySpread: upstream's table tests (podtopologyspread_upstream_cases.py), args validation,
default constraints, fail-closed pod specs, and the batch paths against the per-node ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache.columns import NodeColumns
from scheduler.framework import NodeSubset, ok_mask
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import REPLICA_SETS, REPLICATION_CONTROLLERS, SERVICES, STATEFUL_SETS
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo, NodeScore, PodInfo, PodSpecError
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    FilterState,
)
from scheduler.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY, PRE_SCORE_STATE_KEY
from scheduler.plugins.podtopologyspread.scoring import ScoreState
from scheduling_queue.types import ActionType, QueueingHint, Resource
from tests.unit.plugins import podtopologyspread_upstream_cases as upstream
from tests.unit.plugins.plugin_testlib import FakeHandle
from tests.unit.plugins.st_wrappers import MakeLabelSelector, MakeNode, MakePod, kind_of

LIST_ARGS = {"defaultingType": "List"}
_LISTER_OF_KIND = {
    "Service": SERVICES,
    "ReplicaSet": REPLICA_SETS,
    "StatefulSet": STATEFUL_SETS,
    "ReplicationController": REPLICATION_CONTROLLERS,
}


def plain(value: Any) -> Any:
    """A ported Go literal without the type tags GoStruct adds."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items() if k != "\x00type"}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def go_fields(value: Any) -> Any:
    """Ported Go struct fields as their JSON names (``MaxSkew`` -> ``maxSkew``); map keys untouched."""
    if isinstance(value, Mapping):
        return {
            (k[:1].lower() + k[1:] if k[:1].isupper() else k): go_fields(v)
            for k, v in value.items()
            if k != "\x00type"
        }
    if isinstance(value, list | tuple):
        return [go_fields(v) for v in value]
    return value


def cluster(
    nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]] = ()
) -> dict[str, NodeInfo]:
    infos = {n["metadata"]["name"]: NodeInfo(n) for n in nodes}
    for existing in pods:
        name = existing["spec"].get("nodeName")
        if name in infos:
            infos[name].add_pod(PodInfo(existing))
    return infos


def handle_for(infos: Sequence[NodeInfo], objs: Sequence[Mapping[str, Any]] | None = None) -> FakeHandle:
    objects: dict[Any, list[Mapping[str, Any]]] = {}
    for obj in objs or ():
        listed = plain(obj)
        # Go's zero value: an object of the tables without a namespace is in namespace "".
        listed.setdefault("metadata", {}).setdefault("namespace", "")
        objects.setdefault(_LISTER_OF_KIND[kind_of(obj)], []).append(listed)
    return FakeHandle(list(infos), objects=objects)


def gate_off_case(case: Mapping[str, Any]) -> str | None:
    """Upstream runs some cases with a feature gate off; v1.36 has both on, so those that exercise the
    gated field would expect another behaviour."""
    text = repr(case.get("pod")) + repr(case.get("defaultConstraints"))
    if case.get("enableNodeInclusionPolicy") is False and ("Policy" in text):
        return "NodeInclusionPolicyInPodTopologySpread is GA (locked on) in v1.36"
    if case.get("enableMatchLabelKeys") is False and "matchLabelKeys" in text:
        return "MatchLabelKeysInPodTopologySpread is on by default in v1.36"
    return None


def batch_subset(infos: Sequence[NodeInfo]) -> NodeSubset:
    columns = NodeColumns(infos)
    return NodeSubset(columns, np.arange(len(infos), dtype=np.int64))


def ids(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    return [case["name"] for case in cases]


# --- upstream: TestPreFilterState ----------------------------------------------------------------


@pytest.mark.parametrize("case", upstream.PRE_FILTER_STATE, ids=ids(upstream.PRE_FILTER_STATE))
def test_upstream_pre_filter_state(case: dict[str, Any]) -> None:
    if reason := gate_off_case(case):
        pytest.skip(reason)
    infos = cluster(case.get("nodes") or [], case.get("existingPods") or ())
    args = {"defaultingType": "List", "defaultConstraints": go_fields(case.get("defaultConstraints") or [])}
    plugin = PodTopologySpread(args, handle_for(list(infos.values()), case.get("objs")))
    state = CycleState()
    _, status = plugin.pre_filter(state, PodInfo(case["pod"]), list(infos.values()))
    if case.get("wantPrefilterStatus") is not None:
        assert status is not None
        assert status.code is case["wantPrefilterStatus"]
        return
    assert status is None
    got: FilterState = state.read(PRE_FILTER_STATE_KEY)
    want = go_fields(case["want"])
    assert [c.topology_key for c in got.constraints] == [c["topologyKey"] for c in want["constraints"]]
    assert [c.max_skew for c in got.constraints] == [c["maxSkew"] for c in want["constraints"]]
    assert [c.min_domains for c in got.constraints] == [c["minDomains"] for c in want["constraints"]]
    assert [c.honor_node_affinity for c in got.constraints] == [
        c["nodeAffinityPolicy"] == "Honor" for c in want["constraints"]
    ]
    assert [c.honor_node_taints for c in got.constraints] == [
        c["nodeTaintsPolicy"] == "Honor" for c in want["constraints"]
    ]
    assert got.counts == [dict(m) for m in want["tpValueToMatchNum"]]
    for index, constraint in enumerate(want["constraints"]):
        upstream_min = want["criticalPaths"][index][0][1]
        expected = 0 if len(got.counts[index]) < constraint["minDomains"] else upstream_min
        assert got.min_counts[index] == expected


# --- upstream: TestSingleConstraint, TestMultipleConstraints --------------------------------------


@pytest.mark.parametrize(
    "case",
    upstream.SINGLE_CONSTRAINT + upstream.MULTIPLE_CONSTRAINTS,
    ids=ids(upstream.SINGLE_CONSTRAINT + upstream.MULTIPLE_CONSTRAINTS),
)
def test_upstream_filter(case: dict[str, Any]) -> None:
    if reason := gate_off_case(case):
        pytest.skip(reason)
    infos = cluster(case.get("nodes") or [], case.get("existingPods") or ())
    nodes = list(infos.values())
    plugin = PodTopologySpread(LIST_ARGS, handle_for(nodes))
    pod = PodInfo(case["pod"])
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, nodes)
    assert status is None
    got = {}
    for info in nodes:
        result = plugin.filter(state, pod, info)
        got[info.name] = Code.Success if result is None else result.code
    assert got == case["wantStatusCode"]
    # The batch path agrees node by node, messages included.
    batch = plugin.filter_nodes(state, pod, batch_subset(nodes))
    for info, verdict in zip(nodes, batch, strict=True):
        single = plugin.filter(state, pod, info)
        assert (verdict is None) == (single is None), info.name
        if verdict is not None and single is not None:
            assert (verdict.code, verdict.reasons) == (single.code, single.reasons)


# --- upstream: TestPreScoreSkip, TestPreScoreStateEmptyNodes ---------------------------------------


@pytest.mark.parametrize("case", upstream.PRE_SCORE_SKIP, ids=ids(upstream.PRE_SCORE_SKIP))
def test_upstream_pre_score_skip(case: dict[str, Any]) -> None:
    infos = list(cluster(case["nodes"]).values())
    plugin = PodTopologySpread(go_fields(case["config"]), handle_for(infos, case.get("objs")))
    status = plugin.pre_score(CycleState(), PodInfo(case["pod"]), infos)
    assert status is not None
    assert status.code is Code.Skip


@pytest.mark.parametrize("case", upstream.PRE_SCORE_STATE, ids=ids(upstream.PRE_SCORE_STATE))
def test_upstream_pre_score_state(case: dict[str, Any]) -> None:
    if reason := gate_off_case(case):
        pytest.skip(reason)
    infos = list(cluster(case["nodes"], case.get("existingPods") or ()).values())
    plugin = PodTopologySpread(go_fields(case["config"]), handle_for(infos, case.get("objs")))
    state = CycleState()
    assert plugin.pre_score(state, PodInfo(case["pod"]), infos) is None
    got: ScoreState = state.read(PRE_SCORE_STATE_KEY)
    want = go_fields(case["want"])
    assert [c.topology_key for c in got.constraints] == [c["topologyKey"] for c in want["constraints"]]
    assert [c.max_skew for c in got.constraints] == [c["maxSkew"] for c in want["constraints"]]
    assert got.ignored == set(want["ignoredNodes"])
    assert got.counts == [dict(m) for m in want["topologyValueToPodCounts"]]
    assert got.weights == pytest.approx(list(want["topologyNormalizingWeight"]), rel=0, abs=0)


# --- upstream: TestPodTopologySpreadScore ----------------------------------------------------------


@pytest.mark.parametrize("case", upstream.SCORE, ids=ids(upstream.SCORE))
def test_upstream_score(case: dict[str, Any]) -> None:
    if reason := gate_off_case(case):
        pytest.skip(reason)
    all_nodes = [*case["nodes"], *(case.get("failedNodes") or ())]
    infos = cluster(all_nodes, case.get("existingPods") or ())
    plugin = PodTopologySpread(
        {"defaultingType": "System"}, handle_for(list(infos.values()), case.get("objs"))
    )
    pod = PodInfo(case["pod"])
    candidates = [infos[n["metadata"]["name"]] for n in case["nodes"]]
    state = CycleState()
    assert plugin.pre_score(state, pod, candidates) is None
    scores = []
    for info in candidates:
        value, status = plugin.score(state, pod, info)
        assert status is None
        scores.append(NodeScore(info.name, value))
    raw = [s.score for s in scores]
    assert plugin.normalize_score(state, pod, scores) is None
    assert [(s.name, s.score) for s in scores] == [(w["Name"], w["Score"]) for w in case["want"]]
    # The batch path: same raw scores over the snapshot's columns, same normalised ones.
    batch_raw = plugin.score_nodes(state, pod, batch_subset(candidates))
    assert list(batch_raw) == raw
    normalised = plugin.normalize_score_array(state, pod, np.asarray(batch_raw, dtype=np.int64))
    assert normalised.tolist() == [w["Score"] for w in case["want"]]


# --- upstream: Test_isSchedulableAfterNodeChange, Test_isSchedulableAfterAssignedPodChange, -------
# --- Test_isSchedulableAfterTargetPodChange (v1.37.2) ------------------------------------------------


@pytest.mark.parametrize("case", upstream.HINT_NODE_CHANGE, ids=ids(upstream.HINT_NODE_CHANGE))
def test_upstream_hint_node_change(case: dict[str, Any]) -> None:
    plugin = PodTopologySpread(LIST_ARGS, FakeHandle())
    old, new = plain(case.get("oldNode")), plain(case.get("newNode"))
    assert plugin.is_schedulable_after_node_change(case["pod"], old, new) is case["expectedHint"]


@pytest.mark.parametrize(
    "case", upstream.HINT_ASSIGNED_POD_CHANGE, ids=ids(upstream.HINT_ASSIGNED_POD_CHANGE)
)
def test_upstream_hint_assigned_pod_change(case: dict[str, Any]) -> None:
    plugin = PodTopologySpread(LIST_ARGS, FakeHandle())
    hint = plugin.is_schedulable_after_assigned_pod_change(
        case["pod"], case.get("oldPod"), case.get("newPod")
    )
    assert hint is case["expectedHint"]


@pytest.mark.parametrize("case", upstream.HINT_TARGET_POD_CHANGE, ids=ids(upstream.HINT_TARGET_POD_CHANGE))
def test_upstream_hint_target_pod_change(case: dict[str, Any]) -> None:
    plugin = PodTopologySpread(LIST_ARGS, FakeHandle())
    hint = plugin.is_schedulable_after_target_pod_change(case["pod"], case.get("oldPod"), case.get("newPod"))
    assert hint is case["expectedHint"]


def test_target_pod_hint_does_not_compare_uids() -> None:
    """v1.37.2 judges a TargetPod event by the updated pod's tolerations and labels against the rejected
    pod's constraints, whoever was updated: another pending pod's update, replayed from the in-flight
    log, queues the rejected pod too (v1.36's Pod hint skipped it: an unassigned pod is not involved)."""
    plugin = PodTopologySpread(LIST_ARGS, FakeHandle())
    honor = (
        MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", upstream.fooSelector, None, None, "Honor", None)
        .Obj()
    )
    other_old = MakePod().UID("other").Name("other").Obj()
    other_tolerating = (
        MakePod().UID("other").Name("other").Toleration("node.kubernetes.io/unschedulable").Obj()
    )
    assert (
        plugin.is_schedulable_after_target_pod_change(honor, other_old, other_tolerating)
        is QueueingHint.Queue
    )
    other_labelled = MakePod().UID("other").Name("other").Label("foo", "").Obj()
    assert (
        plugin.is_schedulable_after_target_pod_change(honor, other_old, other_labelled) is QueueingHint.Queue
    )
    other_unrelated = MakePod().UID("other").Name("other").Label("unrelated", "").Obj()
    assert (
        plugin.is_schedulable_after_target_pod_change(honor, other_old, other_unrelated) is QueueingHint.Skip
    )


def test_events_to_register() -> None:
    """v1.37.2's registrations (plugin.go EventsToRegister)."""
    assigned, target, node_event = PodTopologySpread(LIST_ARGS, FakeHandle()).events_to_register()
    assert assigned.event.resource is Resource.AssignedPod
    assert assigned.event.action == ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete
    assert target.event.resource is Resource.TargetPod
    assert target.event.action == ActionType.UpdatePodToleration | ActionType.UpdatePodLabel
    assert node_event.event.resource is Resource.Node
    assert node_event.event.action == (
        ActionType.Add | ActionType.Delete | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint
    )


# --- args: upstream's TestValidatePodTopologySpreadArgs ---------------------------------------------


def _constraint(max_skew: int, key: str, action: str, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action, **extra}


@pytest.mark.parametrize(
    ("name", "args", "want"),
    [
        (
            "valid config",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    _constraint(1, "node", "DoNotSchedule"),
                    _constraint(2, "zone", "ScheduleAnyway"),
                ],
            },
            None,
        ),
        (
            "maxSkew less than zero",
            {"defaultingType": "List", "defaultConstraints": [_constraint(-1, "node", "DoNotSchedule")]},
            "defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)",
        ),
        (
            "empty topology key",
            {"defaultingType": "List", "defaultConstraints": [_constraint(1, "", "DoNotSchedule")]},
            "defaultConstraints[0].topologyKey: Required value: can not be empty",
        ),
        (
            "whenUnsatisfiable is empty",
            {"defaultingType": "List", "defaultConstraints": [_constraint(1, "node", "")]},
            "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
        ),
        (
            "whenUnsatisfiable contains unsupported action",
            {"defaultingType": "List", "defaultConstraints": [_constraint(1, "node", "unknown action")]},
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "unknown action": supported values: '
            '"DoNotSchedule", "ScheduleAnyway"',
        ),
        (
            "duplicated constraints",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    _constraint(1, "node", "DoNotSchedule"),
                    _constraint(2, "node", "DoNotSchedule"),
                ],
            },
            'defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"',
        ),
        (
            "label selector present",
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    _constraint(1, "key", "DoNotSchedule", labelSelector={"matchLabels": {"a": "b"}})
                ],
            },
            "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they "
            "deduced for each pod",
        ),
        ("list default constraints, no constraints", {"defaultingType": "List"}, None),
        ("system default constraints", {"defaultingType": "System"}, None),
        (
            "wrong constraints",
            {"defaultingType": "unknown"},
            'defaultingType: Unsupported value: "unknown": supported values: "System", "List"',
        ),
        (
            "system default constraints, but has constraints",
            {"defaultingType": "System", "defaultConstraints": [_constraint(1, "key", "DoNotSchedule")]},
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
        ),
        (
            "defaultingType omitted means System, which takes no constraints",
            {"defaultConstraints": [_constraint(1, "key", "DoNotSchedule")]},
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
        ),
        (
            "invalid topology key",
            {"defaultingType": "List", "defaultConstraints": [_constraint(1, "a/b/c", "DoNotSchedule")]},
            'defaultConstraints[0].topologyKey: Invalid value: "a/b/c": prefix part must be a lowercase RFC '
            "1123 subdomain",
        ),
        (
            "bad nodeTaintsPolicy",
            {
                "defaultingType": "List",
                "defaultConstraints": [_constraint(1, "zone", "DoNotSchedule", nodeTaintsPolicy="Maybe")],
            },
            'defaultConstraints[0].nodeTaintsPolicy: Unsupported value: "Maybe": supported values: "Honor", '
            '"Ignore"',
        ),
        (
            "every problem at once",
            {"defaultingType": "List", "defaultConstraints": [_constraint(0, "", "DoNotSchedule")]},
            "[defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf), "
            "defaultConstraints[0].topologyKey: Required value: can not be empty]",
        ),
    ],
)
def test_args_validation(name: str, args: dict[str, Any], want: str | None) -> None:
    if want is None:
        PodTopologySpread(args, FakeHandle())
        return
    with pytest.raises(PluginArgsError) as caught:
        PodTopologySpread(args, FakeHandle())
    assert str(caught.value) == f"PodTopologySpread: {want}"


def test_args_reject_unknown_fields() -> None:
    with pytest.raises(PluginArgsError, match="PodTopologySpread: foo: unknown field"):
        PodTopologySpread({"foo": 1}, FakeHandle())
    with pytest.raises(PluginArgsError, match=r"defaultConstraints\[0\]\.maxskew: unknown field"):
        PodTopologySpread({"defaultingType": "List", "defaultConstraints": [{"maxskew": 1}]}, FakeHandle())


class RecordingHandle(FakeHandle):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[Any] = []

    def lister(self, resource: Any) -> Any:
        self.asked.append(resource)
        return super().lister(resource)


@pytest.mark.parametrize(
    ("args", "wants_listers"),
    [
        ({}, True),
        ({"defaultingType": "System"}, True),
        ({"defaultingType": "List"}, False),
        ({"defaultingType": "List", "defaultConstraints": [_constraint(1, "zone", "DoNotSchedule")]}, True),
    ],
)
def test_listers_only_when_defaulting(args: dict[str, Any], wants_listers: bool) -> None:
    handle = RecordingHandle()
    PodTopologySpread(args, handle)
    assert sorted(map(str, handle.asked)) == (
        sorted(map(str, [SERVICES, REPLICATION_CONTROLLERS, REPLICA_SETS, STATEFUL_SETS]))
        if wants_listers
        else []
    )


# --- default constraints: System and List, selectors from Services and controllers -------------------

ZONES = ("z1", "z1", "z2")


def _zonal_nodes() -> list[dict[str, Any]]:
    return [
        MakeNode()
        .Name(f"n{i}")
        .Label("kubernetes.io/hostname", f"n{i}")
        .Label("topology.kubernetes.io/zone", zone)
        .Obj()
        for i, zone in enumerate(ZONES)
    ]


def _rs(name: str, selector: Mapping[str, Any] | None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"selector": selector}}


def test_system_defaults_spread_a_replica_set() -> None:
    existing = [
        MakePod().Name(f"e{i}").Namespace("ns").Node("n0").Label("app", "web").Obj() for i in range(4)
    ]
    infos = cluster(_zonal_nodes(), existing)
    nodes = list(infos.values())
    handle = FakeHandle(
        nodes, objects={REPLICA_SETS: [_rs("web-1", MakeLabelSelector().Label("app", "web").Obj())]}
    )
    plugin = PodTopologySpread({}, handle)
    pod = PodInfo(
        MakePod()
        .Name("p")
        .Namespace("ns")
        .Label("app", "web")
        .OwnerReference("web-1", ("apps/v1", "ReplicaSet"))
        .Obj()
    )
    # Soft only: Filter skips, Score prefers the empty zone and hosts.
    _, status = plugin.pre_filter(CycleState(), pod, nodes)
    assert status is not None and status.code is Code.Skip
    state = CycleState()
    assert plugin.pre_score(state, pod, nodes) is None
    score_state: ScoreState = state.read(PRE_SCORE_STATE_KEY)
    assert [(c.topology_key, c.max_skew) for c in score_state.constraints] == [
        ("kubernetes.io/hostname", 3),
        ("topology.kubernetes.io/zone", 5),
    ]
    scores = [NodeScore(n.name, plugin.score(state, pod, n)[0]) for n in nodes]
    plugin.normalize_score(state, pod, scores)
    by_name = {s.name: s.score for s in scores}
    assert by_name["n2"] == 100
    assert by_name["n0"] < by_name["n1"] < by_name["n2"]


@pytest.mark.parametrize(
    ("owner", "objects", "matches", "ignores"),
    [
        # ReplicaSet, StatefulSet: their label selectors are ANDed with the Services' selectors.
        (
            ("apps/v1", "ReplicaSet"),
            {REPLICA_SETS: [_rs("c", {"matchLabels": {"app": "web"}})]},
            {"app": "web", "tier": "fe"},
            {"app": "web"},
        ),
        (
            ("apps/v1", "StatefulSet"),
            {STATEFUL_SETS: [_rs("c", {"matchLabels": {"app": "web"}})]},
            {"app": "web", "tier": "fe"},
            {"tier": "fe"},
        ),
        # ReplicationController: a plain map merged with the Services'.
        (
            ("v1", "ReplicationController"),
            {REPLICATION_CONTROLLERS: [_rs("c", {"app": "web"})]},
            {"app": "web", "tier": "fe"},
            {"app": "web"},
        ),
        # Another apiVersion is not a supported controller: only the Service counts.
        (
            ("extensions/v1beta1", "ReplicaSet"),
            {REPLICA_SETS: [_rs("c", {"matchLabels": {"app": "web"}})]},
            {"tier": "fe"},
            {"app": "web"},
        ),
    ],
)
def test_default_selector(
    owner: tuple[str, str],
    objects: dict[Any, list[dict[str, Any]]],
    matches: dict[str, str],
    ignores: dict[str, str],
) -> None:
    service = {"metadata": {"name": "s", "namespace": "ns"}, "spec": {"selector": {"tier": "fe"}}}
    no_selector = {"metadata": {"name": "headless", "namespace": "ns"}, "spec": {}}
    other_ns = {"metadata": {"name": "s", "namespace": "other"}, "spec": {"selector": {"zzz": "1"}}}
    handle = FakeHandle(objects={**objects, SERVICES: [service, no_selector, other_ns]})
    plugin = PodTopologySpread({}, handle)
    pod = PodInfo(
        MakePod()
        .Name("p")
        .Namespace("ns")
        .Labels({"app": "web", "tier": "fe"})
        .OwnerReference("c", owner)
        .Obj()
    )
    (hostname, _zone) = plugin.constraints(pod, "ScheduleAnyway")
    assert hostname.selector.matches(matches)
    assert not hostname.selector.matches(ignores)


def test_default_constraints_need_something_selecting_the_pod() -> None:
    plugin = PodTopologySpread({}, FakeHandle())
    pod = PodInfo(MakePod().Name("p").Namespace("ns").Label("app", "web").Obj())
    assert plugin.constraints(pod, "ScheduleAnyway") == ()


def test_list_defaulting_hard_constraint_filters() -> None:
    nodes = list(
        cluster(
            _zonal_nodes(), [MakePod().Name("e").Namespace("ns").Node("n0").Label("app", "web").Obj()]
        ).values()
    )
    service = {"metadata": {"name": "s", "namespace": "ns"}, "spec": {"selector": {"app": "web"}}}
    args = {
        "defaultingType": "List",
        "defaultConstraints": [_constraint(1, "kubernetes.io/hostname", "DoNotSchedule")],
    }
    plugin = PodTopologySpread(args, FakeHandle(nodes, objects={SERVICES: [service]}))
    pod = PodInfo(MakePod().Name("p").Namespace("ns").Label("app", "web").Obj())
    state = CycleState()
    assert plugin.pre_filter(state, pod, nodes) == (None, None)
    verdicts = [plugin.filter(state, pod, n) for n in nodes]
    assert verdicts[0] is not None and verdicts[0].reasons == [ERR_REASON_CONSTRAINTS_NOT_MATCH]
    assert verdicts[1:] == [None, None]


def test_missing_label_is_unresolvable_and_terminating_pods_do_not_count() -> None:
    nodes = [*_zonal_nodes(), MakeNode().Name("bare").Obj()]
    existing = [
        MakePod().Name("gone").Node("n0").Label("foo", "").Terminating().Obj(),
        MakePod().Name("x").Node("n2").Label("foo", "").Obj(),
    ]
    infos = list(cluster(nodes, existing).values())
    pod = (
        MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            1, "topology.kubernetes.io/zone", "DoNotSchedule", upstream.fooSelector, None, None, None, None
        )
        .Obj()
    )
    plugin = PodTopologySpread(LIST_ARGS, FakeHandle(infos))
    state = CycleState()
    plugin.pre_filter(state, PodInfo(pod), infos)
    got: FilterState = state.read(PRE_FILTER_STATE_KEY)
    assert got.counts == [{"z1": 0, "z2": 1}]
    status = plugin.filter(state, PodInfo(pod), infos[-1])
    assert status is not None
    assert (status.code, status.reasons) == (
        Code.UnschedulableAndUnresolvable,
        [ERR_REASON_NODE_LABEL_NOT_MATCH],
    )


@pytest.mark.parametrize(
    "constraint",
    [
        {"maxSkew": "one", "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"},
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]},
        },
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "nodeAffinityPolicy": "Sometimes",
        },
    ],
)
def test_bad_pod_spec_is_a_pod_spec_error(constraint: dict[str, Any]) -> None:
    pod = MakePod().Name("p").Obj()
    pod["spec"]["topologySpreadConstraints"] = [constraint]
    plugin = PodTopologySpread(LIST_ARGS, FakeHandle())
    with pytest.raises(PodSpecError, match=r"spec\.topologySpreadConstraints\[0\]"):
        plugin.pre_filter(CycleState(), PodInfo(pod), [])
    # A queueing hint never raises: it queues the pod.
    assert (
        plugin.is_schedulable_after_node_change(pod, None, MakeNode().Name("n").Obj()) is QueueingHint.Queue
    )


def test_filter_without_pre_filter_is_an_error() -> None:
    status = PodTopologySpread(LIST_ARGS, FakeHandle()).filter(
        CycleState(), PodInfo(MakePod().Obj()), NodeInfo(MakeNode().Name("n").Obj())
    )
    assert status is not None and status.code is Code.Error


# --- batch paths equal the per-node reference on random clusters -----------------------------------

_KEYS = ("zone", "kubernetes.io/hostname", "rack")


@st.composite
def random_cluster(draw: st.DrawFn) -> tuple[list[NodeInfo], dict[str, Any]]:
    node_count = draw(st.integers(1, 12))
    nodes = []
    for i in range(node_count):
        builder = MakeNode().Name(f"n{i}")
        if draw(st.booleans()) or i == 0:
            builder.Label("zone", draw(st.sampled_from(["a", "b", "c"])))
        if draw(st.integers(0, 4)):
            builder.Label("kubernetes.io/hostname", f"n{i}")
        if draw(st.booleans()):
            builder.Label("rack", draw(st.sampled_from(["r1", "r2"])))
        if draw(st.integers(0, 3)) == 0:
            builder.Taints(upstream.taints)
        nodes.append(builder.Obj())
    pods = []
    for j in range(draw(st.integers(0, 25))):
        existing = MakePod().Name(f"e{j}").Node(f"n{draw(st.integers(0, node_count - 1))}")
        existing.Namespace(draw(st.sampled_from(["", "", "other"])))
        for label in draw(st.sets(st.sampled_from(["foo", "bar"]))):
            existing.Label(label, "")
        if draw(st.integers(0, 5)) == 0:
            existing.Terminating()
        pods.append(existing.Obj())
    pod = MakePod().Name("p").Label("foo", "")
    if draw(st.booleans()):
        pod.Toleration("node.kubernetes.io/unschedulable")
    if draw(st.booleans()):
        pod.NodeAffinityNotIn("rack", ["r2"])
    for key in draw(st.lists(st.sampled_from(_KEYS), min_size=1, max_size=3, unique=True)):
        pod.SpreadConstraint(
            draw(st.integers(1, 3)),
            key,
            draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
            draw(st.sampled_from([upstream.fooSelector, upstream.barSelector, None, {}])),
            draw(st.sampled_from([None, 1, 2, 4])),
            draw(st.sampled_from([None, "Honor", "Ignore"])),
            draw(st.sampled_from([None, "Honor", "Ignore"])),
            None,
        )
    return list(cluster(nodes, pods).values()), pod.Obj()


@settings(max_examples=150, deadline=None)
@given(random_cluster())
def test_batch_paths_equal_per_node(data: tuple[list[NodeInfo], dict[str, Any]]) -> None:
    infos, pod_dict = data
    pod = PodInfo(pod_dict)
    plugin = PodTopologySpread(LIST_ARGS, FakeHandle(infos))
    subset = batch_subset(infos)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, infos)
    if status is None:
        single = [plugin.filter(state, pod, n) for n in infos]
        batch = plugin.filter_nodes(state, pod, subset)
        assert ok_mask(batch).tolist() == [s is None for s in single]
        for one, many in zip(single, batch, strict=True):
            if one is not None:
                assert many is not None and (many.code, many.reasons) == (one.code, one.reasons)
    # Score the nodes that would be candidates: any sub-list of the snapshot in snapshot order.
    candidates = infos[::2] or infos
    state = CycleState()
    if plugin.pre_score(state, pod, candidates) is not None:
        return
    single_raw = [plugin.score(state, pod, n)[0] for n in candidates]
    positions = np.arange(0, len(infos), 2 if infos[::2] else 1, dtype=np.int64)
    batch_raw = plugin.score_nodes(state, pod, NodeSubset(NodeColumns(infos), positions))
    assert list(batch_raw) == single_raw
    scores = [NodeScore(n.name, v) for n, v in zip(candidates, single_raw, strict=True)]
    plugin.normalize_score(state, pod, scores)
    assert plugin.normalize_score_array(state, pod, np.asarray(batch_raw)).tolist() == [
        s.score for s in scores
    ]
