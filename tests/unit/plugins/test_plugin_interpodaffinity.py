"""InterPodAffinity: upstream's table tests (``interpodaffinity/filtering_test.go``, ``scoring_test.go``,
``plugin_test.go``, v1.37.2), names kept so each case can be traced, plus NodeInfo/Snapshot list upkeep and
the equivalence of the batch paths with the per-node ones."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeScore, PodInfo
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.interpodaffinity import InterPodAffinity
from scheduler.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
from scheduling_queue.types import ActionType, QueueingHint, Resource
from tests.unit.plugins.ipa_testlib import (
    REQ,
    P,
    everything,
    expr,
    n,
    setup,
    term,
)
from tests.unit.plugins.plugin_testlib import FakeHandle

AFF = (Code.UnschedulableAndUnresolvable, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = (Code.Unschedulable, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXIST = (Code.Unschedulable, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
SKIP = "skip"

Want = tuple[Code, str] | None


def _as_want(status: Status | None) -> Want:
    if status is None or status.code is Code.Success:
        return None
    return status.code, status.message()


def run_filters(
    pod_dict: dict[str, Any], pods: list[dict[str, Any]], nodes: list[dict[str, Any]], **kwargs: Any
) -> tuple[Status | None, list[Want]]:
    """PreFilter then Filter on every node, per node and batched; asserts both paths agree."""
    plugin, snapshot = setup(nodes, pods, **kwargs)
    state = CycleState()
    pod_info = PodInfo(pod_dict)
    _, pre_status = plugin.pre_filter(state, pod_info, snapshot.node_infos())
    if pre_status is not None:
        return pre_status, []
    infos = [snapshot.get(nd["metadata"]["name"]) for nd in nodes]
    per_node = [_as_want(plugin.filter(state, pod_info, info)) for info in infos if info is not None]
    subset = everything(snapshot)
    batched = plugin.filter_nodes(state, pod_info, subset)
    by_name = {subset[i].name: _as_want(batched[i]) for i in range(len(subset))}
    assert [by_name[nd["metadata"]["name"]] for nd in nodes] == per_node
    return None, per_node


# --- TestRequiredAffinitySingleNode -----------------------------------------------------------------

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
LABELS1 = {"region": "r1", "zone": "z11"}


def _existing() -> dict[str, Any]:
    return P().labels(POD_LABEL).node("node1").obj()


def _two_terms(last_in: str) -> P:
    return (
        P()
        .labels(POD_LABEL2)
        .affinity_term(term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")))
        .affinity_term(term("region", expr("service", "In", last_in), expr("service", "NotIn", "WrongValue")))
    )


SVC_IN = expr("service", "In", "securityscan", "value2")
TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}

SINGLE_NODE_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], Any, Want]] = [
    (
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing "
        "pods",
        P().obj(),
        [],
        SKIP,
        None,
    ),
    (
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that "
        "matches the existing pod",
        P().labels(POD_LABEL2).affinity_in("service", "region", ["securityscan", "value2"], REQ).obj(),
        [_existing()],
        None,
        None,
    ),
    (
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in "
        "operator in labelSelector that matches the existing pod",
        P().labels(POD_LABEL2).affinity_not_in("service", "region", ["securityscan3", "value3"], REQ).obj(),
        [_existing()],
        None,
        None,
    ),
    (
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        P().labels(POD_LABEL2).affinity_term(term("", SVC_IN, namespaces=["DiffNameSpace"])).obj(),
        [P().namespace("ns").label("service", "securityscan").node("node1").obj()],
        None,
        AFF,
    ),
    (
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        P().labels(POD_LABEL).affinity_in("service", "", ["antivirusscan", "value2"], REQ).obj(),
        [_existing()],
        None,
        AFF,
    ),
    (
        "satisfies the PodAffinity with different label Operators in multiple "
        "RequiredDuringSchedulingIgnoredDuringExecution ",
        _two_terms("securityscan").obj(),
        [_existing()],
        None,
        None,
    ),
    (
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto "
        "the "
        "node because one of the matchExpression item don't match.",
        _two_terms("securityscan2").obj(),
        [_existing()],
        None,
        AFF,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        P()
        .labels(POD_LABEL2)
        .affinity_in("service", "region", ["securityscan", "value2"], REQ)
        .anti_in("service", "node", ["antivirusscan", "value2"], REQ)
        .obj(),
        [_existing()],
        None,
        None,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        P()
        .labels(POD_LABEL2)
        .affinity_in("service", "region", ["securityscan", "value2"], REQ)
        .anti_in("service", "node", ["antivirusscan", "value2"], REQ)
        .obj(),
        [
            P()
            .node("node1")
            .labels(POD_LABEL)
            .anti_in("service", "node", ["antivirusscan", "value2"], REQ)
            .obj()
        ],
        None,
        None,
    ),
    (
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        P()
        .labels(POD_LABEL2)
        .affinity_in("service", "region", ["securityscan", "value2"], REQ)
        .anti_in("service", "zone", ["securityscan", "value2"], REQ)
        .obj(),
        [_existing()],
        None,
        ANTI,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the "
        "existing pod",
        P()
        .labels(POD_LABEL)
        .affinity_in("service", "region", ["securityscan", "value2"], REQ)
        .anti_in("service", "node", ["antivirusscan", "value2"], REQ)
        .obj(),
        [
            P()
            .labels(POD_LABEL)
            .node("node1")
            .anti_in("service", "zone", ["securityscan", "value2"], REQ)
            .obj()
        ],
        None,
        EXIST,
    ),
    (
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        P().labels(POD_LABEL).affinity_not_in("service", "region", ["securityscan", "value2"], REQ).obj(),
        [P().label("service", "securityscan").node("node2").obj()],
        None,
        AFF,
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
        "constraints. "
        "doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        P().labels(POD_LABEL).obj(),
        [
            P()
            .node("node1")
            .labels(POD_LABEL)
            .anti_in("service", "zone", ["securityscan", "value2"], REQ)
            .obj()
        ],
        None,
        EXIST,
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
        "constraints. "
        "satisfy PodAntiAffinity symmetry with the existing pod",
        P().labels(POD_LABEL).obj(),
        [
            P()
            .node("node1")
            .labels(POD_LABEL)
            .anti_not_in("service", "zone", ["securityscan", "value2"], REQ)
            .obj()
        ],
        SKIP,
        None,
    ),
    (
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with "
        "incoming pod",
        P()
        .labels(POD_LABEL)
        .anti_exists("service", "region", REQ)
        .anti_exists("security", "region", REQ)
        .obj(),
        [P().node("node1").labels(POD_LABEL2).anti_exists("security", "zone", REQ).obj()],
        None,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        P().labels(POD_LABEL).anti_exists("service", "zone", REQ).anti_exists("security", "zone", REQ).obj(),
        [P().node("node1").labels(POD_LABEL2).anti_exists("security", "zone", REQ).obj()],
        None,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        P().labels(POD_LABEL2).anti_exists("security", "zone", REQ).obj(),
        [
            P()
            .node("node1")
            .labels(POD_LABEL)
            .anti_exists("service", "zone", REQ)
            .anti_exists("security", "zone", REQ)
            .obj()
        ],
        None,
        EXIST,
    ),
    (
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        P()
        .labels({"abc": "", "xyz": ""})
        .anti_exists("abc", "zone", REQ)
        .anti_exists("def", "zone", REQ)
        .obj(),
        [
            P()
            .node("node1")
            .labels({"def": "", "xyz": ""})
            .anti_exists("abc", "zone", REQ)
            .anti_exists("def", "zone", REQ)
            .obj()
        ],
        None,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        P()
        .labels({"def": "", "xyz": ""})
        .anti_exists("abc", "zone", REQ)
        .anti_exists("def", "zone", REQ)
        .obj(),
        [
            P()
            .node("node1")
            .labels({"abc": "", "xyz": ""})
            .anti_exists("abc", "zone", REQ)
            .anti_exists("def", "zone", REQ)
            .obj()
        ],
        None,
        ANTI,
    ),
    (
        "affinity with NamespaceSelector",
        P().labels(POD_LABEL2).affinity_term(term("region", SVC_IN, namespace_selector=TEAM1)).obj(),
        [P().namespace("subteam1.team1").labels(POD_LABEL).node("node1").obj()],
        None,
        None,
    ),
    (
        "affinity with non-matching NamespaceSelector",
        P().labels(POD_LABEL2).affinity_term(term("region", SVC_IN, namespace_selector=TEAM1)).obj(),
        [P().namespace("subteam1.team2").labels(POD_LABEL).node("node1").obj()],
        None,
        AFF,
    ),
    (
        "anti-affinity with matching NamespaceSelector",
        P()
        .namespace("subteam1.team1")
        .labels(POD_LABEL2)
        .anti_affinity_term(term("zone", SVC_IN, namespace_selector=TEAM1))
        .obj(),
        [P().namespace("subteam2.team1").labels(POD_LABEL).node("node1").obj()],
        None,
        ANTI,
    ),
    (
        "anti-affinity with matching all NamespaceSelector",
        P()
        .namespace("subteam1.team1")
        .labels(POD_LABEL2)
        .anti_affinity_term(term("zone", SVC_IN, namespace_selector={}))
        .obj(),
        [P().namespace("subteam2.team1").labels(POD_LABEL).node("node1").obj()],
        None,
        ANTI,
    ),
    (
        "anti-affinity with non-matching NamespaceSelector",
        P()
        .namespace("subteam1.team1")
        .labels(POD_LABEL2)
        .anti_affinity_term(term("zone", SVC_IN, namespace_selector=TEAM1))
        .obj(),
        [P().namespace("subteam1.team2").labels(POD_LABEL).node("node1").obj()],
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod_dict", "pods", "want_pre", "want"),
    SINGLE_NODE_CASES,
    ids=[c[0][:90] for c in SINGLE_NODE_CASES],
)
def test_required_affinity_single_node(
    name: str, pod_dict: dict[str, Any], pods: list[dict[str, Any]], want_pre: Any, want: Want
) -> None:
    pre_status, statuses = run_filters(pod_dict, pods, [n("node1", LABELS1)])
    if want_pre == SKIP:
        assert pre_status is not None and pre_status.code is Code.Skip
        return
    assert pre_status is None
    assert statuses == [want]


@pytest.mark.parametrize(
    ("name", "pod_dict"),
    [
        (
            "PodAffinity fails PreFilter with an invalid affinity label syntax",
            P()
            .labels(POD_LABEL)
            .affinity_in("service", "region", ["{{.bad-value.}}"], REQ)
            .affinity_in("service", "node", ["antivirusscan", "value2"], REQ)
            .obj(),
        ),
        (
            "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
            P()
            .labels(POD_LABEL)
            .affinity_in("service", "region", ["foo"], REQ)
            .affinity_in("service", "node", ["{{.bad-value.}}"], REQ)
            .obj(),
        ),
    ],
)
def test_invalid_selector_fails_pre_filter(name: str, pod_dict: dict[str, Any]) -> None:
    pre_status, _ = run_filters(pod_dict, [], [n("node1", LABELS1)])
    assert pre_status is not None
    assert pre_status.code is Code.UnschedulableAndUnresolvable
    assert pre_status.message().startswith("parsing pod: requiredAffinityTerms: ")
    assert 'Invalid value: "{{.bad-value.}}"' in pre_status.message()


# --- TestRequiredAffinityMultipleNodes --------------------------------------------------------------

RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def _abc(name: str, zone: str) -> dict[str, Any]:
    return n(name, {"region": "r1", "zone": zone, "hostname": name})


MULTI_NODE_CASES: list[
    tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], Any, list[Want]]
] = [
    (
        "A pod can be scheduled onto all the nodes that have the same topology key & label value with one "
        "of them "
        "has an existing pod that matches the affinity rules",
        P().affinity_in("foo", "region", ["bar"], REQ).obj(),
        [P("p1").node("node1").labels({"foo": "bar"}).obj()],
        [n("node1", RG_CHINA), n("node2", RG_CHINA_AZ1), n("node3", RG_INDIA)],
        None,
        [None, None, AFF],
    ),
    (
        "The affinity rule is to schedule all of the pods of this collection to the same zone. The first "
        "pod of "
        "the collection should not be blocked from being scheduled onto any node, even there's no existing "
        "pod "
        "that matches the rule anywhere.",
        P()
        .labels({"foo": "bar", "service": "securityscan"})
        .affinity_in("foo", "zone", ["bar"], REQ)
        .affinity_in("service", "zone", ["securityscan"], REQ)
        .obj(),
        [P("p1").node("nodeA").labels({"foo": "bar"}).obj()],
        [n("nodeA", {"zone": "az1", "hostname": "h1"}), n("nodeB", {"zone": "az2", "hostname": "h2"})],
        None,
        [None, None],
    ),
    (
        "The first pod of the collection can only be scheduled on nodes labelled with the requested "
        "topology keys",
        P()
        .labels({"foo": "bar", "service": "securityscan"})
        .affinity_in("foo", "zone", ["bar"], REQ)
        .affinity_in("service", "zone", ["securityscan"], REQ)
        .obj(),
        [P("p1").node("nodeA").labels({"foo": "bar"}).obj()],
        [
            n("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            n("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        None,
        [AFF, AFF],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
        "inter "
        "pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        P().anti_in("foo", "region", ["abc"], REQ).obj(),
        [P().node("nodeA").labels({"foo": "abc"}).obj()],
        [
            n("nodeA", {"region": "r1", "hostname": "nodeA"}),
            n("nodeB", {"region": "r1", "hostname": "nodeB"}),
        ],
        None,
        [ANTI, ANTI],
    ),
    (
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches "
        "a pod.",
        P().anti_in("foo", "region", ["abc"], REQ).anti_in("service", "zone", ["securityscan"], REQ).obj(),
        [P().node("nodeA").labels({"foo": "abc", "service": "securityscan"}).obj()],
        [_abc("nodeA", "z1"), _abc("nodeB", "z2")],
        None,
        [ANTI, ANTI],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
        "inter "
        "pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto "
        "nodeC",
        P().anti_in("foo", "region", ["abc"], REQ).obj(),
        [P().node("nodeA").labels({"foo": "abc"}).obj()],
        [n("nodeA", RG_CHINA), n("nodeB", RG_CHINA_AZ1), n("nodeC", RG_INDIA)],
        None,
        [ANTI, ANTI, None],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
        "inter "
        "pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC "
        "(NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
        P().namespace("NS1").labels({"foo": "123"}).anti_in("foo", "region", ["bar"], REQ).obj(),
        [
            P().node("nodeA").namespace("NS1").labels({"foo": "bar"}).obj(),
            P().node("nodeC").namespace("NS2").anti_in("foo", "region", ["123"], REQ).obj(),
        ],
        [n("nodeA", RG_CHINA), n("nodeB", RG_CHINA_AZ1), n("nodeC", RG_INDIA)],
        None,
        [ANTI, ANTI, None],
    ),
    (
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, "
        "labelSelector "
        "of the term is firstly checked, and then topologyKey of the term is also checked",
        P().label("foo", "").obj(),
        [P().node("nodeA").anti_exists("foo", "invalid-node-label", REQ).obj()],
        [_abc("nodeA", "z1"), _abc("nodeB", "z1")],
        SKIP,
        [],
    ),
    (
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey "
        "matches",
        P().node("nodeA").anti_exists("foo", "invalid-node-label", REQ).obj(),
        [P().node("nodeA").labels({"foo": ""}).obj()],
        [_abc("nodeA", "z1"), _abc("nodeB", "z1")],
        None,
        [None, None],
    ),
    (
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each "
        "existingPod's terms on all nodes",
        P().label("foo", "").label("bar", "").obj(),
        [
            P().node("nodeA").anti_exists("foo", "zone", REQ).obj(),
            P().node("nodeA").anti_exists("bar", "region", REQ).obj(),
        ],
        [_abc("nodeA", "z1"), _abc("nodeB", "z2")],
        None,
        [EXIST, EXIST],
    ),
    (
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least "
        "violates one "
        "anti-affinity rule of existingPod",
        P().anti_exists("foo", "zone", REQ).anti_exists("bar", "region", REQ).obj(),
        [P().node("nodeA").labels({"foo": ""}).obj(), P().node("nodeB").labels({"bar": ""}).obj()],
        [_abc("nodeA", "z1"), _abc("nodeB", "z2")],
        None,
        [ANTI, ANTI],
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
        "counted as a "
        "single term match - case when one term has invalid topologyKey",
        P().label("foo", "").label("bar", "").obj(),
        [
            P()
            .node("nodeA")
            .anti_exists("foo", "invalid-node-label", REQ)
            .anti_exists("bar", "zone", REQ)
            .obj()
        ],
        [_abc("nodeA", "z1"), _abc("nodeB", "z2")],
        None,
        [EXIST, None],
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
        "counted as a "
        "single term match - case when one term has invalid topologyKey",
        P().anti_exists("foo", "invalid-node-label", REQ).anti_exists("bar", "zone", REQ).obj(),
        [P("podA").node("nodeA").labels({"foo": "", "bar": ""}).obj()],
        [_abc("nodeA", "z1"), _abc("nodeB", "z2")],
        None,
        [ANTI, None],
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
        "counted as a "
        "single term match - case when all terms have valid topologyKey",
        P().label("foo", "").label("bar", "").obj(),
        [P().node("nodeA").anti_exists("foo", "region", REQ).anti_exists("bar", "zone", REQ).obj()],
        [_abc("nodeA", "z1"), _abc("nodeB", "z2")],
        None,
        [EXIST, EXIST],
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
        "counted as a "
        "single term match - case when all terms have valid topologyKey",
        P().anti_exists("foo", "region", REQ).anti_exists("bar", "zone", REQ).obj(),
        [P().node("nodeA").labels({"foo": "", "bar": ""}).obj()],
        [_abc("nodeA", "z1"), _abc("nodeB", "z2")],
        None,
        [ANTI, ANTI],
    ),
    (
        "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity "
        "term "
        "matches incoming pod, so incoming pod can only be scheduled to nodeC",
        P().label("foo", "").label("bar", "").obj(),
        [
            P().node("nodeA").anti_exists("foo", "zone", REQ).anti_exists("labelA", "zone", REQ).obj(),
            P().node("nodeB").anti_exists("bar", "zone", REQ).anti_exists("labelB", "zone", REQ).obj(),
        ],
        [_abc("nodeA", "z1"), _abc("nodeB", "z2"), _abc("nodeC", "z3")],
        None,
        [EXIST, EXIST, None],
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
        "topologyKeys match",
        P().affinity_exists("foo", "region", REQ).affinity_exists("bar", "zone", REQ).obj(),
        [P("pod1").labels({"foo": "", "bar": ""}).node("nodeA").obj()],
        [_abc("nodeA", "z1"), _abc("nodeB", "z1")],
        None,
        [None, None],
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
        "topologyKeys match, and the match logic should be satisfied on the same pod",
        P().affinity_exists("foo", "region", REQ).affinity_exists("bar", "zone", REQ).obj(),
        [
            P("pod1").node("nodeA").labels({"foo": ""}).obj(),
            P("pod2").node("nodeB").labels({"bar": ""}).obj(),
        ],
        [_abc("nodeA", "z1"), _abc("nodeB", "z2")],
        None,
        [AFF, AFF],
    ),
]

NS1 = [{"metadata": {"name": "NS1"}}]


@pytest.mark.parametrize(
    ("name", "pod_dict", "pods", "nodes", "want_pre", "want"),
    MULTI_NODE_CASES,
    ids=[c[0][:90] for c in MULTI_NODE_CASES],
)
def test_required_affinity_multiple_nodes(
    name: str,
    pod_dict: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    want_pre: Any,
    want: list[Want],
) -> None:
    pre_status, statuses = run_filters(pod_dict, pods, nodes, namespaces=NS1)
    if want_pre == SKIP:
        assert pre_status is not None and pre_status.code is Code.Skip
        return
    assert pre_status is None
    assert statuses == want


# --- TestPreferredAffinity ----------------------------------------------------------------------------

RG_AZ1 = {"az": "az1"}
RG_AZ2 = {"az": "az2"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
TEAM1_SEL = {"matchExpressions": [expr("team", "In", "team1")]}


def weighted(weight: int, raw_term: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": raw_term}


def preferred_affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def preferred_anti(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": list(terms)}}


STAY_WITH_S1_IN_REGION = preferred_affinity(weighted(5, term("region", expr("security", "In", "S1"))))
STAY_WITH_S2_IN_REGION = preferred_affinity(weighted(6, term("region", expr("security", "In", "S2"))))
AFFINITY3 = preferred_affinity(
    weighted(8, term("region", expr("security", "NotIn", "S1"), expr("security", "In", "S2"))),
    weighted(2, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))),
)
HARD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            term("region", expr("security", "In", "S1", "value2")),
            term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
        ]
    }
}
AWAY_FROM_S1_IN_AZ = preferred_anti(weighted(5, term("az", expr("security", "In", "S1"))))
AWAY_FROM_S2_IN_AZ = preferred_anti(weighted(5, term("az", expr("security", "In", "S2"))))
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = {
    **preferred_affinity(weighted(8, term("region", expr("security", "In", "S1")))),
    **preferred_anti(weighted(5, term("az", expr("security", "In", "S2")))),
}
AFFINITY_NAMESPACE_SELECTOR = preferred_affinity(
    weighted(
        5,
        term(
            "region",
            expr("security", "In", "S1"),
            namespaces=["subteam2.team2"],
            namespace_selector=TEAM1_SEL,
        ),
    )
)
ANTI_AFFINITY_NAMESPACE_SELECTOR = preferred_anti(
    weighted(
        5,
        term(
            "region",
            expr("security", "In", "S1"),
            namespaces=["subteam2.team2"],
            namespace_selector=TEAM1_SEL,
        ),
    )
)
INVALID_AFFINITY_LABELS = preferred_affinity(
    weighted(8, term("region", expr("security", "In", "{{.bad-value.}}")))
)
INVALID_ANTI_AFFINITY_LABELS = preferred_anti(
    weighted(5, term("az", expr("security", "In", "{{.bad-value.}}")))
)


def pp(
    labels: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    node_name: str = "",
    namespace: str = "",
) -> dict[str, Any]:
    builder = P().labels(labels or {}).namespace(namespace).node(node_name)
    if affinity is not None:
        builder.raw_affinity(affinity)
    return builder.obj()


def _nodes(*pairs: tuple[str, dict[str, str]]) -> list[dict[str, Any]]:
    return [n(name, labels) for name, labels in pairs]


THREE_NODES = _nodes(("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", RG_AZ1))
MAX = 100

# (name, pod, pods, nodes, expected scores or status (code, message part), ignorePreferredTermsOfExistingPods)
PREFERRED_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], Any, bool]] = [
    ("all nodes are same priority as Affinity is nil", pp(S1), [], THREE_NODES, (Code.Skip, ""), False),
    (
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
        "which doesn't match either pods in nodes or in topology key",
        pp(S1, STAY_WITH_S1_IN_REGION),
        [pp(S1, node_name="node1"), pp(S2, node_name="node2"), pp(S1, node_name="node3")],
        THREE_NODES,
        [MAX, 0, 0],
        False,
    ),
    (
        "All the nodes that have the same topology key & label value with one of them has an existing pod "
        "that "
        "match the affinity rules, have the same score",
        pp(None, STAY_WITH_S1_IN_REGION),
        [pp(S1, node_name="node1")],
        _nodes(("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)),
        [MAX, MAX, 0],
        False,
    ),
    (
        "Affinity: nodes in one region has more matching pods comparing to other region, so the region "
        "which has "
        "more matches will get high score",
        pp(S1, STAY_WITH_S2_IN_REGION),
        [pp(S2, node_name=f"node{i}") for i in (1, 1, 2, 3, 4, 5)],
        _nodes(
            ("node1", RG_CHINA),
            ("node2", RG_INDIA),
            ("node3", RG_CHINA),
            ("node4", RG_CHINA),
            ("node5", RG_INDIA),
        ),
        [MAX, 0, MAX, MAX, 0],
        False,
    ),
    (
        "Affinity: different Label operators and values for pod affinity scheduling preference, including "
        "some "
        "match failures ",
        pp(S1, AFFINITY3),
        [pp(S1, node_name="node1"), pp(S2, node_name="node2"), pp(S1, node_name="node3")],
        THREE_NODES,
        [20, MAX, 0],
        False,
    ),
    (
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod "
        "affinity "
        "symmetry",
        pp(S2),
        [pp(S1, STAY_WITH_S1_IN_REGION, "node1"), pp(S2, STAY_WITH_S2_IN_REGION, "node2")],
        THREE_NODES,
        [0, MAX, 0],
        False,
    ),
    (
        "Affinity symmetry with namespace selector",
        pp(S1, namespace="subteam1.team1"),
        [pp(S1, AFFINITY_NAMESPACE_SELECTOR, "node1"), pp(S2, STAY_WITH_S2_IN_REGION, "node2")],
        THREE_NODES,
        [MAX, 0, 0],
        False,
    ),
    (
        "AntiAffinity symmetry with namespace selector",
        pp(S1, namespace="subteam1.team1"),
        [pp(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, "node1"), pp(S2, STAY_WITH_S2_IN_REGION, "node2")],
        THREE_NODES,
        [0, MAX, MAX],
        False,
    ),
    (
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity "
        "symmetry",
        pp(S1),
        [pp(S1, HARD_AFFINITY, "node1"), pp(S2, HARD_AFFINITY, "node2")],
        THREE_NODES,
        [MAX, MAX, 0],
        False,
    ),
    (
        "Anti Affinity: pod that does not match existing pods in node will get high score ",
        pp(S1, AWAY_FROM_S1_IN_AZ),
        [pp(S1, node_name="node1"), pp(S2, node_name="node2")],
        _nodes(("node1", RG_AZ1), ("node2", RG_CHINA)),
        [0, MAX],
        False,
    ),
    (
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score "
        "comparing to others ",
        pp(S1, AWAY_FROM_S1_IN_AZ),
        [pp(S1, node_name="node1"), pp(S1, node_name="node2")],
        _nodes(("node1", RG_AZ1), ("node2", RG_CHINA)),
        [0, MAX],
        False,
    ),
    (
        "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more "
        "unmatches will get high score",
        pp(S1, AWAY_FROM_S1_IN_AZ),
        [pp(S1, node_name="node1"), pp(S1, node_name="node1"), pp(S2, node_name="node2")],
        _nodes(("node1", RG_AZ1), ("node2", RG_INDIA)),
        [0, MAX],
        False,
    ),
    (
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        pp(S2),
        [pp(S1, AWAY_FROM_S2_IN_AZ, "node1"), pp(S2, AWAY_FROM_S1_IN_AZ, "node2")],
        _nodes(("node1", RG_AZ1), ("node2", RG_AZ2)),
        [0, MAX],
        False,
    ),
    (
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in "
        "both pod "
        "affinity & anti affinity",
        pp(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [pp(S1, node_name="node1"), pp(S1, node_name="node2")],
        _nodes(("node1", RG_CHINA), ("node2", RG_AZ1)),
        [MAX, 0],
        False,
    ),
    (
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and "
        "existing pods have the same labels",
        pp(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [pp(S1, node_name=f"node{i}") for i in (1, 1, 2, 3, 3, 4, 5)],
        _nodes(
            ("node1", RG_CHINA_AZ1),
            ("node2", RG_INDIA),
            ("node3", RG_CHINA),
            ("node4", RG_CHINA),
            ("node5", RG_INDIA),
        ),
        [MAX, 0, MAX, MAX, 0],
        False,
    ),
    (
        "Affinity and Anti Affinity and symmetry: considered only "
        "preferredDuringSchedulingIgnoredDuringExecution "
        "in both pod affinity & anti affinity & symmetry",
        pp(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            pp(S1, node_name="node1"),
            pp(S2, node_name="node2"),
            pp(None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ, "node3"),
            pp(None, AWAY_FROM_S1_IN_AZ, "node4"),
        ],
        _nodes(("node1", RG_CHINA), ("node2", RG_AZ1), ("node3", RG_INDIA), ("node4", RG_AZ2)),
        [MAX, 0, MAX, 0],
        False,
    ),
    (
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        pp(S1),
        [pp(S1, node_name="node1"), pp(None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ, "node2")],
        _nodes(("node1", RG_CHINA), ("node2", RG_CHINA)),
        [0, 0],
        False,
    ),
    (
        "invalid Affinity fails PreScore",
        pp(None, INVALID_AFFINITY_LABELS),
        [],
        _nodes(("node1", RG_CHINA), ("node2", RG_CHINA)),
        (Code.Error, 'Invalid value: "{{.bad-value.}}"'),
        False,
    ),
    (
        "invalid AntiAffinity fails PreScore",
        pp(None, INVALID_ANTI_AFFINITY_LABELS),
        [],
        _nodes(("node1", RG_CHINA), ("node2", RG_CHINA)),
        (Code.Error, 'Invalid value: "{{.bad-value.}}"'),
        False,
    ),
    (
        "Affinity with pods matching NamespaceSelector",
        pp(S1, AFFINITY_NAMESPACE_SELECTOR, namespace="subteam1.team1"),
        [
            pp(S1, node_name="node1", namespace="subteam1.team1"),
            pp(S1, node_name="node1", namespace="subteam1.team1"),
            pp(S1, node_name="node1", namespace="subteam1.team2"),
            pp(S1, node_name="node2", namespace="subteam2.team1"),
        ],
        _nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        [MAX, 0],
        False,
    ),
    (
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        pp(S1, AFFINITY_NAMESPACE_SELECTOR, namespace="subteam1.team1"),
        [
            pp(S1, node_name="node1", namespace="subteam1.team1"),
            pp(S1, node_name="node1", namespace="subteam1.team1"),
            pp(S1, node_name="node1", namespace="subteam2.team2"),
            pp(S1, node_name="node2", namespace="subteam2.team1"),
        ],
        _nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        [MAX, 0],
        False,
    ),
    (
        "Anti-affinity with pods matching NamespaceSelector",
        pp(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, namespace="subteam1.team1"),
        [
            pp(S1, node_name="node1", namespace="subteam1.team1"),
            pp(S1, node_name="node1", namespace="subteam1.team1"),
            pp(S1, node_name="node1", namespace="subteam1.team2"),
            pp(S1, node_name="node2", namespace="subteam2.team1"),
        ],
        _nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        [0, MAX],
        False,
    ),
    (
        "Anti-affinity with pods matching both NamespaceSelector and Namespaces fields",
        pp(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, namespace="subteam1.team1"),
        [
            pp(S1, node_name="node1", namespace="subteam1.team1"),
            pp(S1, node_name="node1", namespace="subteam1.team1"),
            pp(S1, node_name="node1", namespace="subteam2.team2"),
            pp(S1, node_name="node2", namespace="subteam2.team1"),
        ],
        _nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        [0, MAX],
        False,
    ),
    (
        "Ignore preferred terms of existing pods",
        pp(S2),
        [pp(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ, "node1"), pp(S2, STAY_WITH_S2_IN_REGION, "node2")],
        _nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        (Code.Skip, ""),
        True,
    ),
    (
        "Do not ignore preferred terms of existing pods",
        pp(S2),
        [pp(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ, "node1"), pp(S2, STAY_WITH_S2_IN_REGION, "node2")],
        _nodes(("node1", RG_CHINA), ("node2", RG_INDIA)),
        [0, MAX],
        False,
    ),
    ("No nodes to score", pp(S2), [], [], (Code.Skip, ""), False),
]


def run_scores(
    pod_dict: dict[str, Any], pods: list[dict[str, Any]], nodes: list[dict[str, Any]], args: dict[str, Any]
) -> Status | list[int]:
    """PreScore, Score and NormalizeScore per node and batched; asserts both paths agree."""
    plugin, snapshot = setup(nodes, pods, args=args)
    state = CycleState()
    pod_info = PodInfo(pod_dict)
    status = plugin.pre_score(state, pod_info, snapshot.node_infos())
    if status is not None:
        return status
    infos = [info for nd in nodes if (info := snapshot.get(nd["metadata"]["name"])) is not None]
    scores = []
    for info in infos:
        value, score_status = plugin.score(state, pod_info, info)
        assert score_status is None
        scores.append(NodeScore(info.name, value))
    assert plugin.normalize_score(state, pod_info, scores) is None
    subset = everything(snapshot)
    raw = np.asarray(plugin.score_nodes(state, pod_info, subset), dtype=np.int64)
    batched = plugin.normalize_score_array(state, pod_info, raw)
    by_name = {subset[i].name: int(batched[i]) for i in range(len(subset))}
    assert [by_name[info.name] for info in infos] == [s.score for s in scores]
    return [s.score for s in scores]


@pytest.mark.parametrize(
    ("name", "pod_dict", "pods", "nodes", "want", "ignore"),
    PREFERRED_CASES,
    ids=[c[0][:90] for c in PREFERRED_CASES],
)
def test_preferred_affinity(
    name: str,
    pod_dict: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    want: Any,
    ignore: bool,
) -> None:
    got = run_scores(
        pod_dict, pods, nodes, {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": ignore}
    )
    if isinstance(want, tuple):
        assert isinstance(got, Status)
        assert got.code is want[0]
        assert want[1] in got.message()
    else:
        assert got == want


# --- TestPreferredAffinityWithHardPodAffinitySymmetricWeight ----------------------------------------

HARD_POD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            term(
                "region",
                expr("service", "In", "S1"),
                namespaces=["", "subteam2.team2"],
                namespace_selector=TEAM1_SEL,
            )
        ]
    }
}
SERVICE_S1 = {"service": "S1"}


@pytest.mark.parametrize(
    ("name", "namespace", "weight", "want"),
    [
        ("with default weight", "", 1, [MAX, MAX, 0]),
        ("with zero weight", "", 0, (Code.Skip, "")),
        ("with no matching namespace", "subteam1.team2", 1, (Code.Skip, "")),
        ("with matching NamespaceSelector", "subteam1.team1", 1, [MAX, MAX, 0]),
        ("with matching Namespaces", "subteam2.team2", 1, [MAX, MAX, 0]),
    ],
)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    name: str, namespace: str, weight: int, want: Any
) -> None:
    pods = [pp(None, HARD_POD_AFFINITY, "node1"), pp(None, HARD_POD_AFFINITY, "node2")]
    got = run_scores(
        pp(SERVICE_S1, namespace=namespace), pods, THREE_NODES, {"hardPodAffinityWeight": weight}
    )
    if isinstance(want, tuple):
        assert isinstance(got, Status) and got.code is want[0]
    else:
        assert got == want


# --- Test_isSchedulableAfterPodChange / Test_isSchedulableAfterNodeChange (plugin_test.go) -------------

Q, S = QueueingHint.Queue, QueueingHint.Skip
SVC_VALUES = ["securityscan", "value2"]


def _target() -> P:
    return P("p").uid("p")


def _other() -> P:
    return P().uid("other")


def _two_anti_terms(pod: P) -> dict[str, Any]:
    return (
        pod.anti_in("service", "region", ["securityscan"], REQ).anti_in("app", "region", ["web"], REQ).obj()
    )


ASSIGNED_POD_CHANGE_CASES: list[
    tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any] | None, QueueingHint]
] = [
    (
        "add a pod which matches the pod affinity",
        _target().affinity_in("service", "region", SVC_VALUES, REQ).obj(),
        None,
        _other().node("fake-node").label("service", "securityscan").obj(),
        Q,
    ),
    (
        "add an un-scheduled pod",
        _target().affinity_in("service", "region", SVC_VALUES, REQ).obj(),
        None,
        _other().label("service", "securityscan").obj(),
        S,
    ),
    (
        "add a pod which doesn't match the pod affinity",
        _target().affinity_in("service", "region", SVC_VALUES, REQ).obj(),
        None,
        _other().node("fake-node").label("aaa", "a").obj(),
        S,
    ),
    (
        "update a pod from non-match to match pod affinity",
        _target().affinity_in("service", "region", SVC_VALUES, REQ).obj(),
        _other().node("fake-node").label("aaa", "a").obj(),
        _other().node("fake-node").label("service", "securityscan").obj(),
        Q,
    ),
    (
        "the updating pod matches target pod's affinity both before and after label changes",
        _target().affinity_in("service", "region", SVC_VALUES, REQ).obj(),
        _other().node("fake-node").label("service", "value2").obj(),
        _other().node("fake-node").label("service", "securityscan").obj(),
        S,
    ),
    (
        "update an un-scheduled pod",
        _target().affinity_in("service", "region", SVC_VALUES, REQ).obj(),
        _other().label("aaa", "a").obj(),
        _other().label("service", "securityscan").obj(),
        S,
    ),
    (
        "update a pod from match to non-match the pod affinity",
        _target().affinity_in("service", "region", SVC_VALUES, REQ).obj(),
        _other().node("fake-node").label("service", "securityscan").obj(),
        _other().node("fake-node").label("aaa", "a").obj(),
        S,
    ),
    (
        "update a pod from match to non-match pod's affinity - multiple terms case",
        _target().affinity_exists("aaa", "hostname", REQ).affinity_exists("bbb", "hostname", REQ).obj(),
        _other().node("fake-node").label("aaa", "a").obj(),
        _other().node("fake-node").label("service", "securityscan").obj(),
        S,
    ),
    (
        "update a pod from non-match to match pod's affinity - multiple terms case",
        _target().affinity_exists("aaa", "hostname", REQ).affinity_exists("bbb", "hostname", REQ).obj(),
        _other().node("fake-node").label("aaa", "a").obj(),
        _other().node("fake-node").label("aaa", "").label("bbb", "").obj(),
        Q,
    ),
    (
        "modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
        _target().anti_in("service", "region", SVC_VALUES, REQ).obj(),
        _other().node("fake-node").label("service", "securityscan").obj(),
        _other().node("fake-node").label("service", "aaaa").obj(),
        Q,
    ),
    (
        "modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
        _target().anti_in("service", "region", SVC_VALUES, REQ).obj(),
        _other().node("fake-node").label("service", "bbb").obj(),
        _other().node("fake-node").label("service", "securityscan").obj(),
        S,
    ),
    (
        "delete a pod which doesn't match pod's anti-affinity",
        _target().anti_in("service", "region", SVC_VALUES, REQ).obj(),
        _other().node("fake-node").label("aaa", "a").obj(),
        None,
        S,
    ),
    (
        "delete a pod which matches pod's anti-affinity",
        _target().anti_in("service", "region", SVC_VALUES, REQ).obj(),
        _other().node("fake-node").label("service", "securityscan").obj(),
        None,
        Q,
    ),
    (
        "delete a pod with anti-affinity that matches pending pod",
        P("p").label("service", "securityscan").obj(),
        P().node("fake-node").anti_in("service", "region", SVC_VALUES, REQ).obj(),
        None,
        Q,
    ),
    (
        "delete a pod with anti-affinity that doesn't match pending pod",
        P("p").label("service", "foo").obj(),
        P().node("fake-node").anti_in("service", "region", SVC_VALUES, REQ).obj(),
        None,
        S,
    ),
    (
        "delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't "
        "match "
        "pending pod",
        P("p").anti_in("service", "region", SVC_VALUES, REQ).label("service", "foo").obj(),
        P().node("fake-node").anti_in("service", "region", SVC_VALUES, REQ).label("service", "foo").obj(),
        None,
        S,
    ),
    (
        "delete a nominated pod which doesn't match pod's anti-affinity",
        P("p").anti_in("service", "region", SVC_VALUES, REQ).obj(),
        P().nominated("fake-node").label("aaa", "a").obj(),
        None,
        S,
    ),
    (
        "delete a nominated pod which matches pod's anti-affinity",
        P("p").anti_in("service", "region", SVC_VALUES, REQ).obj(),
        P().nominated("fake-node").label("service", "securityscan").obj(),
        None,
        Q,
    ),
    # v1.37.2's anti-affinity hints ask for any matching term (podMatchesAnyAffinityTerms).
    (
        "modify pod label to change it from matching only one of target pod's anti-affinity terms to "
        "matching none",
        P("p")
        .anti_in("service", "region", ["securityscan"], REQ)
        .anti_in("app", "region", ["web"], REQ)
        .obj(),
        _other().node("fake-node").label("service", "securityscan").label("app", "bar").obj(),
        _other().node("fake-node").label("service", "foo").label("app", "bar").obj(),
        Q,
    ),
    (
        "modify pod label but it still matches one of target pod's anti-affinity terms",
        P("p")
        .anti_in("service", "region", ["securityscan"], REQ)
        .anti_in("app", "region", ["web"], REQ)
        .obj(),
        _other().node("fake-node").label("service", "securityscan").label("app", "bar").obj(),
        _other().node("fake-node").label("service", "foo").label("app", "web").obj(),
        S,
    ),
    (
        "delete a pod which matches only one of target pod's anti-affinity terms",
        P("p")
        .anti_in("service", "region", ["securityscan"], REQ)
        .anti_in("app", "region", ["web"], REQ)
        .obj(),
        _other().node("fake-node").label("service", "securityscan").obj(),
        None,
        Q,
    ),
    (
        "delete a pod with anti-affinity that matches pending pod on only one term",
        P("p").label("service", "securityscan").obj(),
        _other()
        .node("fake-node")
        .anti_in("service", "region", ["securityscan"], REQ)
        .anti_in("app", "region", ["web"], REQ)
        .obj(),
        None,
        Q,
    ),
]


@pytest.mark.parametrize(
    ("name", "target", "old", "new", "want"),
    ASSIGNED_POD_CHANGE_CASES,
    ids=[c[0] for c in ASSIGNED_POD_CHANGE_CASES],
)
def test_is_schedulable_after_assigned_pod_change(
    name: str,
    target: dict[str, Any],
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    want: QueueingHint,
) -> None:
    """v1.37.2's Test_isSchedulableAfterAssignedPodChange (the target's own relabel is a TargetPod
    event now, judged by its own hint below)."""
    plugin, _ = setup([])
    assert plugin.is_schedulable_after_assigned_pod_change(target, old, new) is want


def test_is_schedulable_after_target_pod_update_label() -> None:
    """v1.37.2's Test_isSchedulableAfterTargetPodUpdateLabel, plus the case upstream's change implies:
    another pending pod's relabel (a TargetPod event replayed from the in-flight log) queues too, where
    v1.36's Pod hint, by uid, skipped it."""
    plugin, _ = setup([])
    target = _target().label("foo", "baz").obj()
    assert plugin.is_schedulable_after_target_pod_update_label(target, target, target) is Q
    other_old, other_new = _other().label("foo", "bar").obj(), _other().label("foo", "baz").obj()
    assert plugin.is_schedulable_after_target_pod_update_label(target, other_old, other_new) is Q


def _node(labels: dict[str, str]) -> dict[str, Any]:
    return n("node-a", labels)


def _zone_affinity() -> dict[str, Any]:
    return P("p").affinity_in("service", "zone", SVC_VALUES, REQ).obj()


def _zone_anti() -> dict[str, Any]:
    return P("p").anti_affinity_term(term("zone", match_labels={"another": "label"})).obj()


NODE_CHANGE_CASES: list[tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any], QueueingHint]] = [
    (
        "add a new node with matched pod affinity topologyKey",
        _zone_affinity(),
        None,
        _node({"zone": "zone1"}),
        Q,
    ),
    (
        "add a new node without matched topologyKey",
        P("p").affinity_in("service", "region", SVC_VALUES, REQ).obj(),
        None,
        _node({"zone": "zone1"}),
        S,
    ),
    ("update node label but not topologyKey", _zone_affinity(), _node({"aaa": "a"}), _node({"aaa": "b"}), S),
    (
        "update node label that isn't related to the pod affinity",
        _zone_affinity(),
        _node({"zone": "zone1"}),
        _node({"zone": "zone1", "unrelated-label": "unrelated"}),
        S,
    ),
    (
        "update node with different affinity topologyKey value",
        _zone_affinity(),
        _node({"zone": "zone1"}),
        _node({"zone": "zone2"}),
        Q,
    ),
    (
        "update node to have the affinity topology label",
        _zone_affinity(),
        _node({"aaa": "a"}),
        _node({"zone": "zone1"}),
        Q,
    ),
    (
        "add a new node with matched pod anti-affinity topologyKey",
        _zone_anti(),
        None,
        _node({"zone": "zone1"}),
        Q,
    ),
    ("add a new node without matched pod anti-affinity topologyKey", _zone_anti(), None, _node({}), Q),
    (
        "update node label that isn't related to the pod anti-affinity",
        _zone_anti(),
        _node({"zone": "zone1"}),
        _node({"zone": "zone1", "unrelated-label": "unrelated"}),
        S,
    ),
    (
        "update node with different anti-affinity topologyKey value",
        _zone_anti(),
        _node({"zone": "zone1"}),
        _node({"zone": "zone2"}),
        Q,
    ),
    (
        "update node to have the anti-affinity topology label",
        _zone_anti(),
        _node({"aaa": "a"}),
        _node({"zone": "zone1"}),
        S,
    ),
    (
        "update node label not to have anti-affinity topology label",
        _zone_anti(),
        _node({"zone": "zone1"}),
        _node({"aaa": "a"}),
        Q,
    ),
]


@pytest.mark.parametrize(
    ("name", "target", "old", "new", "want"), NODE_CHANGE_CASES, ids=[c[0] for c in NODE_CHANGE_CASES]
)
def test_is_schedulable_after_node_change(
    name: str, target: dict[str, Any], old: dict[str, Any] | None, new: dict[str, Any], want: QueueingHint
) -> None:
    plugin, _ = setup([])
    assert plugin.is_schedulable_after_node_change(target, old, new) is want


def test_events_to_register_as_upstream_with_queueing_hints() -> None:
    plugin, _ = setup([])
    events = {(e.event.resource, e.event.action) for e in plugin.events_to_register()}
    assert events == {
        (Resource.AssignedPod, ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete),
        (Resource.TargetPod, ActionType.UpdatePodLabel),
        (Resource.Node, ActionType.Add | ActionType.UpdateNodeLabel),
    }


def test_hint_on_unreadable_pod_queues_rather_than_raising() -> None:
    plugin, _ = setup([])
    broken = P("p").affinity_in("service", "zone", ["{{.bad-value.}}"], REQ).obj()
    assert plugin.is_schedulable_after_node_change(broken, None, _node({"zone": "a"})) is Q


# --- args -------------------------------------------------------------------------------------------


def test_args_default() -> None:
    plugin = InterPodAffinity({}, FakeHandle())
    assert plugin.hard_pod_affinity_weight == 1
    assert plugin.ignore_preferred_terms_of_existing_pods is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"hardPodAffinityWeight": -1},
            "InterPodAffinity: hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
        ),
        (
            {"hardPodAffinityWeight": 101},
            "InterPodAffinity: hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            {"hardPodAffinityWeight": "1"},
            "InterPodAffinity: hardPodAffinityWeight: Invalid value: '1': must be an integer",
        ),
        (
            {"ignorePreferredTermsOfExistingPods": "yes"},
            "InterPodAffinity: ignorePreferredTermsOfExistingPods: ",
        ),
        ({"hardPodAffinityWeigth": 1}, "InterPodAffinity: hardPodAffinityWeigth: unknown field"),
        ({"kind": "NodeAffinityArgs"}, "InterPodAffinity: kind: "),
    ],
)
def test_args_validated_like_upstream(args: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError) as err:
        InterPodAffinity(args, FakeHandle())
    assert str(err.value).startswith(message)


def test_args_accept_the_full_range_and_kind() -> None:
    plugin = InterPodAffinity(
        {
            "kind": "InterPodAffinityArgs",
            "hardPodAffinityWeight": 100,
            "ignorePreferredTermsOfExistingPods": True,
        },
        FakeHandle(),
    )
    assert plugin.hard_pod_affinity_weight == 100
    assert plugin.ignore_preferred_terms_of_existing_pods is True
    assert InterPodAffinity({"hardPodAffinityWeight": 0}, FakeHandle()).hard_pod_affinity_weight == 0


def test_unrolled_namespace_selector_no_longer_matches_pods_of_unknown_namespaces() -> None:
    """v1.37.2's mergeAffinityTermNamespacesIfNotEmpty resets the term's own selector to Nothing: a
    ``NotIn`` selector unrolled into the known namespaces' names does not match an existing pod whose
    namespace the lister does not know (v1.36 still matched it against no labels)."""
    not_team2 = {"matchExpressions": [expr("team", "NotIn", "team2")]}
    incoming = (
        P()
        .namespace("subteam1.team1")
        .labels(POD_LABEL2)
        .anti_affinity_term(term("zone", SVC_IN, namespace_selector=not_team2))
        .obj()
    )
    unknown_ns = P().namespace("not-listed").labels(POD_LABEL).node("node1").obj()
    known_ns = P().namespace("subteam2.team1").labels(POD_LABEL).node("node1").obj()
    assert run_filters(incoming, [unknown_ns], [n("node1", LABELS1)]) == (None, [None])
    assert run_filters(incoming, [known_ns], [n("node1", LABELS1)]) == (None, [ANTI])
