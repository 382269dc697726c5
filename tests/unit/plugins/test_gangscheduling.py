"""GangScheduling (upstream's scheduling.k8s.io/v1beta1 gang API), with the tables of kube-scheduler
v1.37.2 ``pkg/scheduler/framework/plugins/gangscheduling/gangscheduling_test.go`` ported (without composite
hierarchies)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from informers.resource import PODS, WORKLOAD_PODGROUPS
from scheduler.cycle.waiting_pods import WaitingPods
from scheduler.framework import ActionType, CycleState, PodInfo, QueueingHint, Status
from scheduler.framework.handle import WaitingPodHandle
from scheduler.framework.status import Code
from scheduler.plugins.gangscheduling import (
    PERMIT_TIMEOUT_SECONDS,
    PODS_TO_ACTIVATE_KEY,
    GangScheduling,
)
from tests.unit.plugins.plugin_testlib import FakeHandle, pod


def pod_group(name: str, min_count: int | None, namespace: str = "ns1", **spec: Any) -> dict[str, Any]:
    policy: dict[str, Any] = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "workloadRef": {"workloadName": "wl", "templateName": "t"},
            "schedulingPolicy": policy,
            **spec,
        },
    }


def member(name: str, group: str = "", namespace: str = "ns1") -> dict[str, Any]:
    extra = {"schedulingGroup": {"podGroupName": group}} if group else None
    return pod(name, namespace=namespace, uid=name, extra_spec=extra)


class Handle(FakeHandle):
    """FakeHandle with the scheduler's real waiting-pods map; records which plugin allowed which pod."""

    def __init__(self, pods: Sequence[Mapping[str, Any]], groups: Sequence[Mapping[str, Any]]) -> None:
        super().__init__(objects={PODS: pods, WORKLOAD_PODGROUPS: groups})
        self.allowed: list[str] = []
        self.waiting = WaitingPods(asyncio.get_running_loop(), lambda w, s: None)

    def waiting_pods(self) -> Sequence[WaitingPodHandle]:
        handle = self

        class Recording:
            def __init__(self, inner: WaitingPodHandle) -> None:
                self.inner = inner

            @property
            def pod(self) -> PodInfo:
                return self.inner.pod

            def allow(self, plugin: str = "") -> None:
                handle.allowed.append(self.inner.pod.uid)
                self.inner.allow(plugin)

            def reject(self, plugin: str, message: str) -> None:
                self.inner.reject(plugin, message)

        return [Recording(w) for w in self.waiting.values()]


# --- Test_isSchedulableAfterPodAdded -------------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "added", "want"),
    [
        ("pg", member("x", "pg"), QueueingHint.Queue),
        ("pg", member("x", "pg", namespace="foo"), QueueingHint.Skip),
        ("pg1", member("x", "pg2"), QueueingHint.Skip),
    ],
    ids=["matching group", "other namespace", "other group name"],
)
async def test_hint_after_pod_added(target: str, added: dict[str, Any], want: QueueingHint) -> None:
    plugin = GangScheduling({}, Handle([], []))
    assert plugin.is_schedulable_after_pod_added(member("p", target), None, added) is want


async def test_pod_added_hint_wakes_a_known_gang_only_once_min_count_pods_exist() -> None:
    """py-scheduler's shortcut: with the PodGroup known, a sibling's add that still leaves the gang
    short would be re-gated by PreEnqueue anyway, so it is skipped; the add that completes it queues."""
    handle = Handle([member("p1", "pg"), member("p2", "pg")], [pod_group("pg", 3)])
    plugin = GangScheduling({}, handle)
    assert plugin.is_schedulable_after_pod_added(member("p1", "pg"), None, member("p2", "pg")) is (
        QueueingHint.Skip
    )
    third = member("p3", "pg")
    handle.lister(PODS).add(third)
    assert plugin.is_schedulable_after_pod_added(member("p1", "pg"), None, third) is QueueingHint.Queue


# --- Test_isSchedulableAfterPodGroupAdded --------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "added", "want"),
    [
        (member("p", "pg"), pod_group("pg", 1), QueueingHint.Queue),
        (member("p", "pg1"), pod_group("pg2", 1), QueueingHint.Skip),
        (member("p", "pg", namespace="ns1"), pod_group("pg", 1, namespace="ns2"), QueueingHint.Skip),
    ],
    ids=["matching name", "other name", "other namespace"],
)
async def test_hint_after_pod_group_added(
    target: dict[str, Any], added: dict[str, Any], want: QueueingHint
) -> None:
    plugin = GangScheduling({}, Handle([], []))
    assert plugin.is_schedulable_after_pod_group_added(target, None, added) is want


# --- TestGangSchedulingFlow ----------------------------------------------------------------------
GROUPS = [pod_group("pg1", 3), pod_group("pg2", 4), pod_group("pg3", None)]
P1, P2, P3 = member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")
P4, P5 = member("p4", "pg2"), member("p5", "pg2")


def flow(
    pod_: dict[str, Any],
    initial: Sequence[dict[str, Any]],
    groups: Sequence[dict[str, Any]],
    waiting: Sequence[dict[str, Any]] = (),
) -> tuple[GangScheduling, Handle, Status | None]:
    handle = Handle([*initial, pod_], groups)
    plugin = GangScheduling({}, handle)
    pre_enqueue = plugin.pre_enqueue(PodInfo(pod_))
    # Other pods already hit Permit (assumed, i.e. Reserved) and wait there.
    for raw in waiting:
        info = PodInfo(raw)
        plugin.reserve(CycleState(), info, "some-node")
        status, _ = plugin.permit(CycleState(), info, "some-node")
        assert status is not None and status.code is Code.Wait, raw["metadata"]["name"]
        handle.waiting.add(info, "some-node", {"GangScheduling": PERMIT_TIMEOUT_SECONDS})
    return plugin, handle, pre_enqueue


async def test_non_gang_pod_succeeds_immediately() -> None:
    plugin, _, pre_enqueue = flow(member("non-gang"), [], GROUPS)
    assert pre_enqueue is None
    assert plugin.permit(CycleState(), PodInfo(member("non-gang")), "some-node") == (None, 0.0)


async def test_basic_policy_pod_succeeds_immediately() -> None:
    basic = member("basic-pod", "pg3")
    plugin, _, pre_enqueue = flow(basic, [], GROUPS)
    assert pre_enqueue is None
    assert plugin.permit(CycleState(), PodInfo(basic), "some-node") == (None, 0.0)


async def test_pre_enqueue_waits_for_the_pod_group() -> None:
    _, _, status = flow(P1, [P2, P3, P4, P5], [])
    assert status is not None and status.code is Code.UnschedulableAndUnresolvable
    assert status.message() == 'waiting for pods\'s pod group "pg1" to appear in scheduling queue'


async def test_pre_enqueue_waits_for_min_count_pods() -> None:
    _, _, status = flow(P1, [P2, P4, P5], GROUPS[:2])  # only p1 and p2 of pg1 exist; minCount 3
    assert status is not None and status.code is Code.UnschedulableAndUnresolvable
    assert status.message() == "waiting for minCount pods from a gang to appear in scheduling queue"


async def test_passes_pre_enqueue_then_waits_at_permit_and_activates_the_rest() -> None:
    plugin, _, pre_enqueue = flow(P1, [P2, P3, P4, P5], GROUPS[:2], waiting=[P2, P4, P5])
    assert pre_enqueue is None
    state = CycleState()
    info = PodInfo(P1)
    plugin.reserve(state, info, "some-node")
    status, timeout = plugin.permit(state, info, "some-node")
    # p1 is assumed, but 2 of 3 is short of the quorum: it waits, and p3 is activated.
    assert status is not None and status.code is Code.Wait
    assert status.message() == "waiting for minCount pods from a gang to be scheduled"
    assert timeout == PERMIT_TIMEOUT_SECONDS
    assert [p["metadata"]["name"] for p in state.get(PODS_TO_ACTIVATE_KEY)] == ["p3"]


async def test_final_gang_pod_allows_every_waiting_member_of_its_gang_only() -> None:
    plugin, handle, _ = flow(P1, [P2, P3, P4, P5], GROUPS[:2], waiting=[P2, P3, P4, P5])
    info = PodInfo(P1)
    plugin.reserve(CycleState(), info, "some-node")
    assert plugin.permit(CycleState(), info, "some-node") == (None, 0.0)
    # p1 itself is not waiting; p2 and p3 are allowed, pg2's p4 and p5 keep waiting.
    assert sorted(handle.allowed) == ["p2", "p3"]
    assert sorted(w.pod.uid for w in handle.waiting.values()) == ["p4", "p5"]


async def test_unreserve_takes_a_member_out_of_the_quorum() -> None:
    plugin, _, _ = flow(P1, [P2, P3], GROUPS[:1], waiting=[P2])
    for raw in (P1, P3):
        plugin.reserve(CycleState(), PodInfo(raw), "n")
    plugin.unreserve(CycleState(), PodInfo(P3), "n")
    status, _ = plugin.permit(CycleState(), PodInfo(P1), "n")
    assert status is not None and status.code is Code.Wait


async def test_bound_members_count_towards_the_quorum() -> None:
    group = {"schedulingGroup": {"podGroupName": "pg1"}}
    bound = [pod(n, namespace="ns1", uid=n, node_name="n", extra_spec=group) for n in ("p2", "p3")]
    plugin, _, _ = flow(P1, bound, GROUPS[:1])
    plugin.reserve(CycleState(), PodInfo(P1), "n")
    assert plugin.permit(CycleState(), PodInfo(P1), "n") == (None, 0.0)


async def test_permit_errors_when_the_pod_group_is_gone() -> None:
    plugin, handle, _ = flow(P1, [P2, P3], GROUPS[:1])
    handle.lister(WORKLOAD_PODGROUPS).delete("pg1", "ns1")
    status, _ = plugin.permit(CycleState(), PodInfo(P1), "n")
    assert status is not None and status.code is Code.Error
    assert 'podgroups.scheduling.k8s.io "pg1" not found' in status.message()


# --- fail closed on alpha fields py-scheduler does not implement ------------------------------------
@pytest.mark.parametrize(
    ("spec", "field", "gate"),
    [
        ({"schedulingConstraints": {"topology": [{"key": "rack"}]}}, "schedulingConstraints.topology",
         "TopologyAwareWorkloadScheduling"),
        ({"resourceClaims": [{"name": "c", "resourceClaimName": "x"}]}, "resourceClaims",
         "DRAWorkloadResourceClaims"),
        ({"parentCompositePodGroupName": "top"}, "parentCompositePodGroupName", "CompositePodGroup"),
        ({"preemptionPolicy": "Never"}, "preemptionPolicy", "PodGroupPreemptionPolicy"),
    ],
)  # fmt: skip
async def test_pre_filter_refuses_unsupported_pod_group_fields_by_name(
    spec: dict[str, Any], field: str, gate: str
) -> None:
    plugin = GangScheduling({}, Handle([P1], [pod_group("pg1", 1, **spec)]))
    _, status = plugin.pre_filter(CycleState(), PodInfo(P1), [])
    assert status is not None and status.code is Code.UnschedulableAndUnresolvable
    assert status.message() == (
        f"pod group ns1/pg1 uses {field}, which py-scheduler does not support yet ({gate})"
    )


@pytest.mark.parametrize("mode", [{"single": {}}, {"all": {}}], ids=["single", "all"])
async def test_pre_filter_accepts_what_the_api_server_defaults(mode: dict[str, Any]) -> None:
    # v1beta1: the Priority admission plugin sets spec.priority on every PodGroup (since v1.37); either
    # disruption mode is honoured (by preemption); constraints may be serialised as null.
    group = pod_group(
        "pg1",
        1,
        disruptionMode=mode,
        schedulingConstraints=None,
        priorityClassName="high",
        priority=1000,
    )
    plugin = GangScheduling({}, Handle([P1], [group]))
    _, status = plugin.pre_filter(CycleState(), PodInfo(P1), [])
    assert status is not None and status.code is Code.Skip


# --- Test_isSchedulableAfterPodGroupUpdated -------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "old", "new", "want"),
    [
        ("pg", pod_group("pg", 4), pod_group("pg", 3), QueueingHint.Queue),
        ("pg", pod_group("pg", None), pod_group("pg", None), QueueingHint.Skip),
        ("pg", pod_group("pg", 3), pod_group("pg", 4), QueueingHint.Skip),
        ("pg", pod_group("pg", 3), pod_group("pg", 3), QueueingHint.Skip),
        ("pg-other", pod_group("pg", 4), pod_group("pg", 3), QueueingHint.Skip),
        ("pg", pod_group("pg", 4, namespace="ns2"), pod_group("pg", 3, namespace="ns2"), QueueingHint.Skip),
    ],
    ids=[
        "minCount decreased",
        "basic policy",
        "minCount increased",
        "minCount unchanged",
        "other group",
        "other namespace",
    ],
)
async def test_hint_after_pod_group_updated(
    target: str, old: dict[str, Any], new: dict[str, Any], want: QueueingHint
) -> None:
    plugin = GangScheduling({}, Handle([], []))
    assert plugin.is_schedulable_after_pod_group_updated(member("p", target), old, new) is want


async def test_events_are_upstreams_pod_adds_pending_and_bound_pod_group_add_and_update() -> None:
    plugin = GangScheduling({}, Handle([], []))
    events = {(str(e.event.resource), int(e.event.action)) for e in plugin.events_to_register()}
    assert events == {
        ("UnscheduledPod", int(ActionType.Add)),
        ("AssignedPod", int(ActionType.Add)),
        ("scheduling.k8s.io/PodGroup", int(ActionType.Add)),
        ("scheduling.k8s.io/PodGroup", int(ActionType.Update)),
    }


# --- TestPlacementFeasible (without composite pod groups) ------------------------------------------
@pytest.mark.parametrize(
    ("min_count", "members", "tried", "want"),
    [
        (2, 2, [Code.Success, Code.Success], [Code.Wait, Code.Success]),
        (3, 3, [Code.Unschedulable], [Code.Unschedulable]),
        (2, 2, [Code.Success, Code.Unschedulable], [Code.Wait, Code.Unschedulable]),
        (None, 1, [Code.Unschedulable], [Code.Unschedulable]),
        (None, 1, [Code.Success], [Code.Success]),
    ],
    ids=[
        "all pods succeed, minCount met at end",
        "first pod fails, minCount not satisfiable",
        "second pod fails, minCount not satisfiable",
        "basic group with nothing scheduled fails",
        "basic group with one scheduled succeeds",
    ],
)
async def test_placement_feasible_after_each_member(
    min_count: int | None, members: int, tried: list[Code], want: list[Code]
) -> None:
    plugin = GangScheduling({}, Handle([], []))
    group = pod_group("pg", min_count)
    scheduled = 0
    for i, outcome in enumerate(tried):
        scheduled += outcome is Code.Success
        status = plugin.placement_feasible(CycleState(), group, scheduled, members - (i + 1))
        assert (Code.Success if status is None else status.code) is want[i], i


async def test_placement_feasible_messages_are_upstreams() -> None:
    plugin = GangScheduling({}, Handle([], []))
    group = pod_group("pg", 4)
    waiting = plugin.placement_feasible(CycleState(), group, 0, 4)
    assert waiting is not None
    assert waiting.message() == "minCount (4) is not yet satisfied: 0 scheduled, 4 remaining"
    refused = plugin.placement_feasible(CycleState(), group, 2, 1)
    assert refused is not None
    assert (refused.code, refused.message()) == (
        Code.Unschedulable,
        "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining",
    )
    assert plugin.placement_feasible(CycleState(), group, 4, 0) is None
