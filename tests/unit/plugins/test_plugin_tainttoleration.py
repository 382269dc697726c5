"""TaintToleration and NodeUnschedulable: cases from upstream's taint_toleration_test.go and
node_unschedulable_test.go (v1.36)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.status import Code
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.helper.taints import Toleration
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.tainttoleration import TaintToleration
from scheduling_queue.types import ActionType, QueueingHint, Resource
from tests.unit.plugins.plugin_testlib import node, node_info, pod, run_filter, run_score

UNTOLERATED = "node(s) had untolerated taint(s)"


def tainted(name: str, *taints: tuple[str, str, str]) -> dict[str, Any]:
    return node(name, taints=[{"key": k, "value": v, "effect": e} for k, v, e in taints])


def tolerating(*tolerations: dict[str, Any]) -> dict[str, Any]:
    return pod(tolerations=list(tolerations))


FILTER_CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("no tolerations, tainted node", tolerating(), tainted("a", ("dedicated", "user1", "NoSchedule")), False),
    (
        "toleration without operator equals the taint",
        tolerating({"key": "dedicated", "value": "user1", "effect": "NoSchedule"}),
        tainted("a", ("dedicated", "user1", "NoSchedule")),
        True,
    ),
    (
        "Equal with another value",
        tolerating({"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}),
        tainted("a", ("dedicated", "user1", "NoSchedule")),
        False,
    ),
    (
        "Exists tolerates any value",
        tolerating({"key": "foo", "operator": "Exists", "effect": "NoSchedule"}),
        tainted("a", ("foo", "bar", "NoSchedule")),
        True,
    ),
    (
        "multiple tolerations cover multiple taints",
        tolerating(
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
        ),
        tainted("a", ("dedicated", "user2", "NoSchedule"), ("foo", "bar", "NoSchedule")),
        True,
    ),
    (
        "non-empty effect must match",
        tolerating({"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}),
        tainted("a", ("foo", "bar", "NoSchedule")),
        False,
    ),
    (
        "empty effect tolerates every effect",
        tolerating({"key": "foo", "operator": "Equal", "value": "bar"}),
        tainted("a", ("foo", "bar", "NoSchedule")),
        True,
    ),
    (
        "PreferNoSchedule taints never filter",
        tolerating({"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}),
        tainted("a", ("dedicated", "user1", "PreferNoSchedule")),
        True,
    ),
    ("NoExecute filters too", tolerating(), tainted("a", ("k", "v", "NoExecute")), False),
    (
        "empty key with Exists tolerates everything",
        tolerating({"operator": "Exists"}),
        tainted("a", ("k", "v", "NoExecute")),
        True,
    ),
    (
        "Gt is an alpha operator (gate off): it tolerates nothing",
        tolerating({"key": "sla", "operator": "Gt", "value": "100", "effect": "NoSchedule"}),
        tainted("a", ("sla", "200", "NoSchedule")),
        False,
    ),
    (
        "mixed tolerations with the gate off: only Equal is honored",
        tolerating(
            {"key": "sla", "operator": "Gt", "value": "100", "effect": "NoSchedule"},
            {"key": "sla", "operator": "Equal", "value": "200", "effect": "NoSchedule"},
        ),
        tainted("a", ("sla", "200", "NoSchedule")),
        True,
    ),
    ("untainted node", tolerating(), node("a"), True),
]


@pytest.mark.parametrize(
    ("pod_dict", "node_dict", "fits"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(pod_dict: dict[str, Any], node_dict: dict[str, Any], fits: bool) -> None:
    status = run_filter(TaintToleration({}), pod_dict, node_info(node_dict))
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.UnschedulableAndUnresolvable
        assert status.reasons == [UNTOLERATED]


SCORE_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[int]]] = [
    (
        "tolerated taints score higher than intolerable ones",
        tolerating({"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}),
        [
            tainted("nodeA", ("foo", "bar", "PreferNoSchedule")),
            tainted("nodeB", ("foo", "blah", "PreferNoSchedule")),
        ],
        [100, 0],
    ),
    (
        "all taints tolerated: same score however many",
        tolerating(
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "PreferNoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "PreferNoSchedule"},
        ),
        [
            tainted("nodeA"),
            tainted("nodeB", ("cpu-type", "arm64", "PreferNoSchedule")),
            tainted(
                "nodeC", ("cpu-type", "arm64", "PreferNoSchedule"), ("disk-type", "ssd", "PreferNoSchedule")
            ),
        ],
        [100, 100, 100],
    ),
    (
        "the more intolerable taints, the lower the score",
        tolerating({"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}),
        [
            tainted("nodeA"),
            tainted("nodeB", ("cpu-type", "arm64", "PreferNoSchedule")),
            tainted(
                "nodeC", ("cpu-type", "arm64", "PreferNoSchedule"), ("disk-type", "ssd", "PreferNoSchedule")
            ),
        ],
        [100, 50, 0],
    ),
    (
        "only PreferNoSchedule taints and tolerations count",
        tolerating(
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "NoSchedule"},
        ),
        [
            tainted("nodeA"),
            tainted("nodeB", ("cpu-type", "arm64", "NoSchedule")),
            tainted(
                "nodeC", ("cpu-type", "arm64", "PreferNoSchedule"), ("disk-type", "ssd", "PreferNoSchedule")
            ),
        ],
        [100, 100, 0],
    ),
    (
        "no taints and no tolerations: lands on the untainted node",
        tolerating(),
        [tainted("nodeA"), tainted("nodeB", ("cpu-type", "arm64", "PreferNoSchedule"))],
        [100, 0],
    ),
]


@pytest.mark.parametrize(
    ("pod_dict", "nodes", "expected"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(pod_dict: dict[str, Any], nodes: list[dict[str, Any]], expected: list[int]) -> None:
    assert run_score(TaintToleration({}), pod_dict, [node_info(n) for n in nodes]) == expected


def hints(plugin: Any) -> dict[Resource, Any]:
    return {r.event.resource: r for r in plugin.events_to_register()}


def test_events() -> None:
    registrations = hints(TaintToleration({}))
    assert registrations[Resource.Node].event.action == ActionType.Add | ActionType.UpdateNodeTaint
    assert registrations[Resource.TargetPod].event.action == ActionType.UpdatePodToleration
    assert set(registrations) == {Resource.Node, Resource.TargetPod}  # v1.37.2: no Pod registration


NODE_HINT_CASES = [
    (
        "skip when the added node has an untolerated taint",
        None,
        [("dedicated", "user1", "NoSchedule")],
        QueueingHint.Skip,
    ),
    (
        "queue when the added node's taints are tolerated",
        None,
        [("dedicated", "user2", "NoSchedule")],
        QueueingHint.Queue,
    ),
    (
        "skip an unrelated change",
        [("dedicated", "user1", "NoSchedule")],
        [("dedicated", "user1", "NoSchedule"), ("dedicated", "user3", "NoSchedule")],
        QueueingHint.Skip,
    ),
    (
        "queue when the taint becomes tolerated",
        [("dedicated", "user1", "NoSchedule")],
        [("dedicated", "user2", "NoSchedule")],
        QueueingHint.Queue,
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"), [c[1:] for c in NODE_HINT_CASES], ids=[c[0] for c in NODE_HINT_CASES]
)
def test_node_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    target = tolerating({"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"})
    hint = hints(TaintToleration({}))[Resource.Node].hint
    old_node = None if old is None else tainted("a", *old)
    assert hint(target, old_node, tainted("a", *new)) is expected


def test_node_hint_bad_object_queues() -> None:
    hint = hints(TaintToleration({}))[Resource.Node].hint
    assert hint(tolerating(), None, "not-a-node") is QueueingHint.Queue


def test_target_pod_toleration_hint() -> None:
    """v1.37.2's Test_isSchedulableAfterTargetPodTolerationChange ("queue-on-toleration-added"), and the
    hint's new unconditional Queue: another pending pod's toleration change (a TargetPod event replayed
    from the in-flight log) queues too, where v1.36's Pod hint skipped it by uid."""
    hint = hints(TaintToleration({}))[Resource.TargetPod].hint
    target = pod(name="pod-1")
    added = pod(name="pod-1", tolerations=[{"key": "foo", "effect": "NoSchedule"}])
    assert hint(target, target, added) is QueueingHint.Queue
    me = pod(uid="me")
    assert hint(me, pod(uid="other"), pod(uid="other", tolerations=[{"operator": "Exists"}])) is (
        QueueingHint.Queue
    )


def test_toleration_matching() -> None:
    assert Toleration("", "Exists", "", "").tolerates("any", "thing", "NoExecute")
    assert not Toleration("k", "Exists", "", "NoSchedule").tolerates("k", "v", "NoExecute")
    assert Toleration("k", "", "", "").tolerates("k", "", "NoSchedule")
    assert not Toleration("k", "Weird", "v", "").tolerates("k", "v", "NoSchedule")


def test_no_args_plugins_reject_args() -> None:
    with pytest.raises(PluginArgsError, match="TaintToleration: foo: unknown field"):
        TaintToleration({"foo": 1})


# --- NodeUnschedulable --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "fits"),
    [
        (False, [], True),
        (True, [], False),
        (
            True,
            [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
            True,
        ),
        (
            True,
            [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}],
            False,
        ),
        (True, [{"operator": "Exists"}], True),
    ],
)
def test_node_unschedulable_filter(
    unschedulable: bool, tolerations: list[dict[str, str]], fits: bool
) -> None:
    status = run_filter(
        NodeUnschedulable({}), pod(tolerations=tolerations), node_info(node("n", unschedulable=unschedulable))
    )
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.UnschedulableAndUnresolvable
        assert status.reasons == ["node(s) were unschedulable"]


def test_node_unschedulable_hints() -> None:
    registrations = hints(NodeUnschedulable({}))
    assert registrations[Resource.Node].event.action == ActionType.Add | ActionType.UpdateNodeTaint
    node_hint = registrations[Resource.Node].hint
    target = pod()
    cordoned, schedulable = node("n", unschedulable=True), node("n")
    assert node_hint(target, None, schedulable) is QueueingHint.Queue
    assert node_hint(target, None, cordoned) is QueueingHint.Skip
    assert node_hint(target, cordoned, schedulable) is QueueingHint.Queue
    assert node_hint(target, schedulable, schedulable) is QueueingHint.Skip
    assert node_hint(target, schedulable, cordoned) is QueueingHint.Skip
    assert registrations[Resource.TargetPod].event.action == ActionType.UpdatePodToleration
    assert set(registrations) == {Resource.Node, Resource.TargetPod}
    # v1.37.2's TestIsSchedulableAfterPodTolerationChange (isSchedulableAfterTargetPodTolerationChange).
    pod_hint = registrations[Resource.TargetPod].hint
    me = pod(uid="me")
    tolerant = pod(
        uid="me",
        tolerations=[
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
        ],
    )
    assert pod_hint(me, me, tolerant) is QueueingHint.Queue
    assert (
        pod_hint(me, me, pod(uid="me", tolerations=[{"key": "other", "operator": "Exists"}]))
        is QueueingHint.Skip
    )
    assert pod_hint(me, "not-a-pod", "not-a-pod") is QueueingHint.Queue  # upstream's error cases queue
    # No uid comparison any more: another pending pod's update (replayed from the in-flight log) is
    # judged by that pod's tolerations (v1.36 skipped it).
    assert (
        pod_hint(me, pod(uid="x"), pod(uid="x", tolerations=[{"operator": "Exists"}])) is QueueingHint.Queue
    )
    assert pod_hint(me, pod(uid="x"), pod(uid="x", tolerations=[{"key": "k", "operator": "Exists"}])) is (
        QueueingHint.Skip
    )
