"""NodeAffinity: cases from upstream's node_affinity_test.go (v1.36) and the selector semantics of
``k8s.io/apimachinery/pkg/labels``."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo, PodSpecError
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.nodeaffinity import NodeAffinity, pod_required_affinity
from scheduling_queue.types import ActionType, QueueingHint, Resource
from tests.unit.plugins.plugin_testlib import node, node_info, pod, pre_score_code, run_filter, run_score

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def name_field(operator: str, *values: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": operator, "values": list(values)}


def term(
    expressions: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if expressions is not None:
        out["matchExpressions"] = expressions
    if fields is not None:
        out["matchFields"] = fields
    return out


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": t} for w, t in weighted
            ]
        }
    }


FILTER_CASES: list[tuple[str, dict[str, Any], str, dict[str, str], bool]] = [
    ("missing labels", pod(node_selector={"foo": "bar"}), "n", {}, False),
    ("same labels", pod(node_selector={"foo": "bar"}), "n", {"foo": "bar"}, True),
    ("node labels are superset", pod(node_selector={"foo": "bar"}), "n", {"foo": "bar", "baz": "blah"}, True),
    ("node labels are subset", pod(node_selector={"foo": "bar", "baz": "blah"}), "n", {"foo": "bar"}, False),
    (
        "In matches",
        pod(affinity=required(term([expr("foo", "In", "bar", "value2")]))),
        "n",
        {"foo": "bar"},
        True,
    ),
    (
        "Gt matches",
        pod(affinity=required(term([expr("kernel-version", "Gt", "0204")]))),
        "n",
        {"kernel-version": "0206"},
        True,
    ),
    (
        "Gt does not match an equal value",
        pod(affinity=required(term([expr("v", "Gt", "5")]))),
        "n",
        {"v": "5"},
        False,
    ),
    ("Lt matches", pod(affinity=required(term([expr("v", "Lt", "5")]))), "n", {"v": "-3"}, True),
    (
        "Gt on a non-numeric label never matches",
        pod(affinity=required(term([expr("v", "Gt", "1")]))),
        "n",
        {"v": "x"},
        False,
    ),
    (
        "Gt on a missing label never matches",
        pod(affinity=required(term([expr("v", "Gt", "1")]))),
        "n",
        {},
        False,
    ),
    (
        "NotIn matches",
        pod(affinity=required(term([expr("mem-type", "NotIn", "DDR", "DDR2")]))),
        "n",
        {"mem-type": "DDR3"},
        True,
    ),
    (
        "NotIn matches a missing label",
        pod(affinity=required(term([expr("mem-type", "NotIn", "DDR")]))),
        "n",
        {},
        True,
    ),
    (
        "Exists matches",
        pod(affinity=required(term([expr("GPU", "Exists")]))),
        "n",
        {"GPU": "NVIDIA-GRID-K1"},
        True,
    ),
    ("DoesNotExist", pod(affinity=required(term([expr("GPU", "DoesNotExist")]))), "n", {"GPU": "x"}, False),
    (
        "affinity that doesn't match",
        pod(affinity=required(term([expr("foo", "In", "value1", "value2")]))),
        "n",
        {"foo": "bar"},
        False,
    ),
    ("empty terms match no nodes", pod(affinity=required(term([]))), "n", {"foo": "bar"}, False),
    ("no terms at all match no nodes", pod(affinity=required()), "n", {"foo": "bar"}, False),
    ("no affinity schedules anywhere", pod(), "n", {"foo": "bar"}, True),
    ("affinity without nodeAffinity", pod(affinity={"podAffinity": {}}), "n", {"foo": "bar"}, True),
    (
        "multiple expressions are ANDed",
        pod(affinity=required(term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]))),
        "n",
        {"GPU": "NVIDIA-GRID-K1"},
        True,
    ),
    (
        "multiple expressions ANDed, one fails",
        pod(affinity=required(term([expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]))),
        "n",
        {"GPU": "NVIDIA-GRID-K1"},
        False,
    ),
    (
        "terms are ORed",
        pod(
            affinity=required(
                term([expr("foo", "In", "bar", "value2")]), term([expr("diffkey", "In", "wrong")])
            )
        ),
        "n",
        {"foo": "bar"},
        True,
    ),
    (
        "nodeSelector and affinity both match",
        pod(node_selector={"foo": "bar"}, affinity=required(term([expr("foo", "Exists")]))),
        "n",
        {"foo": "bar"},
        True,
    ),
    (
        "affinity matches but nodeSelector does not",
        pod(node_selector={"foo": "bar"}, affinity=required(term([expr("foo", "Exists")]))),
        "n",
        {"foo": "barrrrrr"},
        False,
    ),
    (
        "matchFields In matches",
        pod(affinity=required(term(fields=[name_field("In", "node1")]))),
        "node1",
        {},
        True,
    ),
    (
        "matchFields In does not match",
        pod(affinity=required(term(fields=[name_field("In", "node1")]))),
        "node2",
        {},
        False,
    ),
    (
        "matchFields NotIn",
        pod(affinity=required(term(fields=[name_field("NotIn", "node1")]))),
        "node2",
        {},
        True,
    ),
    (
        "two terms: matchFields does not match, matchExpressions does",
        pod(affinity=required(term(fields=[name_field("In", "node1")]), term([expr("foo", "In", "bar")]))),
        "node2",
        {"foo": "bar"},
        True,
    ),
    (
        "one term: matchFields does not match, matchExpressions does",
        pod(affinity=required(term([expr("foo", "In", "bar")], [name_field("In", "node1")]))),
        "node2",
        {"foo": "bar"},
        False,
    ),
    (
        "one term: both match",
        pod(affinity=required(term([expr("foo", "In", "bar")], [name_field("In", "node1")]))),
        "node1",
        {"foo": "bar"},
        True,
    ),
]


@pytest.mark.parametrize(
    ("pod_dict", "node_name", "labels", "fits"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
@pytest.mark.parametrize("pre_filter", [True, False], ids=["with-prefilter", "without-prefilter"])
def test_filter(
    pod_dict: dict[str, Any], node_name: str, labels: dict[str, str], fits: bool, pre_filter: bool
) -> None:
    plugin = NodeAffinity({})
    info = node_info(node(node_name, labels=labels))
    if pre_filter:
        status = run_filter(plugin, pod_dict, info)
    else:
        status = plugin.filter(CycleState(), PodInfo(pod_dict), info)
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.UnschedulableAndUnresolvable
        # A PreFilter narrowing by name rejects other nodes before Filter runs.
        assert status.reasons in ([REASON_POD], ["filtered out by PreFilter"])


def test_pre_filter_skips_pods_without_node_constraints() -> None:
    _, status = NodeAffinity({}).pre_filter(CycleState(), PodInfo(pod()), [])
    assert status is not None
    assert status.code is Code.Skip
    # An empty nodeSelector is still a selector to upstream (not nil), so no Skip.
    _, status = NodeAffinity({}).pre_filter(CycleState(), PodInfo(pod(node_selector={})), [])
    assert status is None


def test_pre_filter_narrows_by_node_name() -> None:
    plugin = NodeAffinity({})
    two_terms = pod(
        affinity=required(term(fields=[name_field("In", "node1")]), term(fields=[name_field("In", "node2")]))
    )
    result, status = plugin.pre_filter(CycleState(), PodInfo(two_terms), [])
    assert status is None
    assert result is not None
    assert result.node_names == {"node1", "node2"}
    # A term without a name pin means any node may match: no narrowing.
    mixed = pod(affinity=required(term(fields=[name_field("In", "node1")]), term([expr("foo", "In", "bar")])))
    result, status = plugin.pre_filter(CycleState(), PodInfo(mixed), [])
    assert result is None
    assert status is None


def test_pre_filter_conflicting_names() -> None:
    conflicting = pod(affinity=required(term(fields=[name_field("In", "node1"), name_field("In", "node2")])))
    _, status = NodeAffinity({}).pre_filter(CycleState(), PodInfo(conflicting), [])
    assert status is not None
    assert status.code is Code.UnschedulableAndUnresolvable
    assert status.reasons == ["pod affinity terms conflict"]


ADDED_REQUIRED = {
    "addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term([expr("zone", "In", "foo")])]
        }
    }
}


def test_added_affinity_filter() -> None:
    plugin = NodeAffinity(ADDED_REQUIRED)
    both = pod(affinity=required(term([expr("x", "In", "1")])))
    assert run_filter(plugin, both, node_info(node("n", labels={"zone": "foo", "x": "1"}))) is None
    status = run_filter(plugin, both, node_info(node("n", labels={"zone": "foo"})))
    assert status is not None
    assert status.reasons == [REASON_POD]
    status = run_filter(plugin, pod(), node_info(node("n", labels={"x": "1"})))
    assert status is not None
    assert status.code is Code.UnschedulableAndUnresolvable
    assert status.reasons == [REASON_ENFORCED]


BAD_REQUIRED_TERMS: list[tuple[dict[str, Any], str]] = [
    (term([expr("foo", "Like", "bar")]), 'operator: Unsupported value: "Like"'),
    (term([expr("foo", "Gt", "ten")]), "the value must be an integer"),
    # Go's ParseInt(s, 10, 64) takes no digit separators and nothing beyond int64.
    (term([expr("foo", "Gt", "1_0")]), "the value must be an integer"),
    (term([expr("foo", "Lt", "9223372036854775808")]), "the value must be an integer"),
    (term([expr("foo", "Gt", "1", "2")]), "exactly one value is required"),
    (term([expr("foo", "In")]), "values set can't be empty"),
    (term([expr("foo", "Exists", "x")]), "values set must be empty"),
    (term([expr("foo", "NotIn", "invalid value: ___@#$%^")]), "values[0]: Invalid value"),
    (term(fields=[name_field("Exists")]), 'matchFields[0].operator: Unsupported value: "Exists"'),
    # PreFilter still narrows to the raw names (as upstream); Filter then rejects the broken term.
    (term(fields=[name_field("In", "n", "b")]), "must have one element"),
    # One bad requirement spoils its whole term, even next to a good one.
    (term([expr("foo", "In", "bar"), expr("foo", "Gt", "abc")]), "the value must be an integer"),
]


@pytest.mark.parametrize(("bad_term", "message"), BAD_REQUIRED_TERMS)
def test_required_term_parse_error_is_lazy(bad_term: dict[str, Any], message: str) -> None:
    """Upstream's LazyErrorNodeSelector: a term that fails to parse matches no node, the others still
    count, and Filter reports the plain reason (the parse error is ignored there)."""
    plugin = NodeAffinity({})
    labelled = node_info(node("n", labels={"foo": "bar", "zone": "a"}))
    alone = pod("bad", affinity=required(bad_term))
    status = run_filter(plugin, alone, labelled)
    assert status is not None
    assert status.code is Code.UnschedulableAndUnresolvable
    assert status.reasons == [REASON_POD]
    # Without PreFilter (Filter's fallback) the same.
    status = plugin.filter(CycleState(), PodInfo(alone), labelled)
    assert status is not None
    assert status.reasons == [REASON_POD]
    # A good term after the bad one places the pod.
    with_good = pod("bad", affinity=required(bad_term, term([expr("zone", "In", "a")])))
    assert run_filter(plugin, with_good, labelled) is None
    # The error is reported (lazily) only when no term matched.
    parsed = PodInfo(alone)
    matched, error = pod_required_affinity(parsed).match({"foo": "bar"}, "n")
    assert not matched
    assert error is not None
    assert message in error
    assert "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution" in error
    assert pod_required_affinity(PodInfo(with_good)).match({"zone": "a"}, "n") == (True, None)


def test_required_term_parse_error_hint_queues() -> None:
    """Upstream's hint returns Queue (with the error) when Match reports the lazy error."""
    hint = node_hint({})
    bad = pod(affinity=required(term([expr("foo", "Gt", "1_0")])))
    assert hint(bad, None, node("n")) is QueueingHint.Queue
    # A matching good term wins over the error: Queue for an add, Skip when it matched before.
    mixed = pod(affinity=required(term([expr("foo", "Gt", "1_0")]), term([expr("zone", "In", "a")])))
    assert hint(mixed, None, node("n", labels={"zone": "a"})) is QueueingHint.Queue
    labelled = node("n", labels={"zone": "a"})
    assert hint(mixed, labelled, node("n", labels={"zone": "a", "x": "y"})) is QueueingHint.Skip


def test_bad_preferred_term_is_a_pod_spec_error() -> None:
    """Preferred terms stay strict (NewPreferredSchedulingTerms): PreScore fails with the error."""
    plugin = NodeAffinity({})
    bad = PodInfo(pod("bad", affinity=preferred((2, term([expr("invalid key", "In", "bar")])))))
    with pytest.raises(PodSpecError, match=r"pod default/bad: spec\.affinity\.nodeAffinity") as caught:
        plugin.pre_score(CycleState(), bad, [])
    assert 'key: Invalid value: "invalid key"' in str(caught.value)
    # A zero-weight term is not looked at, so its error is not reported.
    zero = PodInfo(pod("zero", affinity=preferred((0, term([expr("foo", "Gt", "1_0")])))))
    status = plugin.pre_score(CycleState(), zero, [])
    assert status is not None
    assert status.code is Code.Skip


# --- Score --------------------------------------------------------------------------------------

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, term([expr("foo", "In", "bar")])))
AFFINITY2 = preferred(
    (2, term([expr("foo", "In", "bar")])),
    (4, term([expr("key", "In", "value")])),
    (5, term([expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")])),
)

SCORE_CASES: list[tuple[str, dict[str, Any], list[tuple[str, dict[str, str]]], dict[str, Any], list[int]]] = [
    (
        "no node matches: all zero",
        pod(affinity=preferred((2, term([expr("foo", "In", "bar")])))),
        [("node1", {"abc": "az11"}), ("node2", LABEL2), ("node3", LABEL3)],
        {},
        [0, 0, 0],
    ),
    (
        "only node1 matches",
        pod(affinity=AFFINITY1),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        {},
        [100, 0, 0],
    ),
    (
        "different priorities",
        pod(affinity=AFFINITY2),
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        {},
        [18, 100, 36],
    ),
    (
        "added affinity",
        pod(),
        [("node1", LABEL1), ("node2", LABEL2)],
        {"addedAffinity": AFFINITY1["nodeAffinity"]},
        [100, 0],
    ),
    (
        "added affinity and pod affinity add up",
        pod(affinity=AFFINITY1),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        {"addedAffinity": preferred((3, term([expr("key", "In", "value")])))["nodeAffinity"]},
        [40, 60, 100],
    ),
    (
        "zero-weight and empty terms are ignored",
        pod(
            affinity=preferred(
                (0, term([expr("foo", "In", "bar")])), (5, term([])), (1, term([expr("key", "Exists")]))
            )
        ),
        [("node1", LABEL1), ("node2", LABEL2)],
        {},
        [0, 100],
    ),
]


@pytest.mark.parametrize(
    ("pod_dict", "nodes", "args", "expected"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
@pytest.mark.parametrize("pre_score", [True, False], ids=["with-prescore", "without-prescore"])
def test_score(pod_dict: Any, nodes: Any, args: dict[str, Any], expected: list[int], pre_score: bool) -> None:
    infos = [node_info(node(name, labels=labels)) for name, labels in nodes]
    assert run_score(NodeAffinity(args), pod_dict, infos, pre_score=pre_score) == expected


def test_pre_score_skips_without_preferences() -> None:
    infos = [node_info(node("node1", labels=LABEL1))]
    assert pre_score_code(NodeAffinity({}), pod(), infos) is Code.Skip
    assert (
        pre_score_code(NodeAffinity({"addedAffinity": AFFINITY1["nodeAffinity"]}), pod(), infos)
        is Code.Success
    )


# --- args ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [term([expr("a", "Bad")])]
                    }
                }
            },
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator",
        ),
        (
            {
                "addedAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": term([expr("a", "In")])}
                    ]
                }
            },
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values",
        ),
        (
            {"addedAffinity": {"requiredDuringSchedulingRequiredDuringExecution": {}}},
            "addedAffinity.requiredDuringSchedulingRequiredDuringExecution: unknown field",
        ),
        ({"addedAffinities": {}}, "addedAffinities: unknown field"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError) as caught:
        NodeAffinity(args)
    assert str(caught.value).startswith("NodeAffinity: ")
    assert message in str(caught.value)


# --- hints --------------------------------------------------------------------------------------


def node_hint(args: dict[str, Any]) -> Any:
    (registration,) = NodeAffinity(args).events_to_register()
    assert registration.event.resource is Resource.Node
    assert registration.event.action == ActionType.Add | ActionType.UpdateNodeLabel
    return registration.hint


WANTS_FOO_BAR = pod(affinity=required(term([expr("foo", "In", "bar")])))
HINT_CASES: list[tuple[str, dict[str, Any], Any, Any, QueueingHint]] = [
    ("bad new object", {}, None, "not-a-node", QueueingHint.Queue),
    ("skip add of a node that does not match", {}, None, node("n"), QueueingHint.Skip),
    ("queue add of a matching node", {}, None, node("n", labels={"foo": "bar"}), QueueingHint.Queue),
    ("skip unrelated label change", {}, node("n"), node("n", labels={"k": "v"}), QueueingHint.Skip),
    (
        "skip suitable to unsuitable",
        {},
        node("n", labels={"foo": "bar"}),
        node("n", labels={"k": "v"}),
        QueueingHint.Skip,
    ),
    (
        "queue when the change makes it match",
        {},
        node("n"),
        node("n", labels={"foo": "bar"}),
        QueueingHint.Queue,
    ),
    (
        "skip a change that keeps it matching",
        {},
        node("n", labels={"foo": "bar"}),
        node("n", labels={"foo": "bar", "x": "y"}),
        QueueingHint.Skip,
    ),
    (
        "skip add not matching the enforced affinity",
        ADDED_REQUIRED,
        None,
        node("n", labels={"foo": "bar"}),
        QueueingHint.Skip,
    ),
    (
        "queue add matching both",
        ADDED_REQUIRED,
        None,
        node("n", labels={"foo": "bar", "zone": "foo"}),
        QueueingHint.Queue,
    ),
]


@pytest.mark.parametrize(
    ("args", "old", "new", "expected"), [c[1:] for c in HINT_CASES], ids=[c[0] for c in HINT_CASES]
)
def test_node_hint(args: dict[str, Any], old: Any, new: Any, expected: QueueingHint) -> None:
    assert node_hint(args)(WANTS_FOO_BAR, old, new) is expected


def test_hint_with_broken_pod_queues() -> None:
    broken = pod(affinity=required(term([expr("foo", "Like", "bar")])))
    assert node_hint({})(broken, None, node("n")) is QueueingHint.Queue
