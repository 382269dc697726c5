"""Coscheduling, with cases ported from scheduler-plugins v0.34.7 (pkg/coscheduling/coscheduling_test.go
and core/core_test.go)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from informers.resource import PODGROUPS, PODS, ResourceSpec
from scheduler.cycle.waiting_pods import WaitingPod, WaitingPods
from scheduler.framework import CycleState, NodeInfo, PodInfo, Status
from scheduler.framework.handle import WaitingPodHandle
from scheduler.framework.listers import IndexedLister, Lister, StaticLister
from scheduler.framework.status import Code
from scheduler.plugins.coscheduling import POD_GROUP_LABEL, PODS_TO_ACTIVATE_KEY, Coscheduling
from scheduler.plugins.errors import PluginArgsError
from scheduling_queue.types import QueuedPodInfo
from tests.unit.fakes import PROFILE, CoreEnv, make_node, make_pod, wait_for
from tests.unit.plugins.plugin_testlib import FakeHandle, node, node_info, pod


def pg(name: str, min_member: int, *, created: str = "2024-01-01T00:00:00Z", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
        "spec": {"minMember": min_member, **spec},
    }


def member(
    name: str, group: str, *, cpu: str = "1", node_name: str = "", gated: bool = False
) -> dict[str, Any]:
    raw = pod(
        name,
        uid=f"uid-{name}",
        requests=[{"cpu": cpu}],
        node_name=node_name,
        scheduling_gates=["wait"] if gated else (),
    )
    raw["metadata"]["labels"] = {POD_GROUP_LABEL: group}
    return raw


class GangHandle(FakeHandle):
    """A FakeHandle with a settable clock and the scheduler's real waiting-pods map."""

    def __init__(
        self,
        objects: Mapping[Any, Sequence[Mapping[str, Any]]],
        nodes: Sequence[NodeInfo] = (),
    ) -> None:
        super().__init__(nodes, objects=objects)
        self.clock = 1000.0
        self.decided: list[tuple[str, Status | None]] = []
        self.waiting = WaitingPods(asyncio.get_running_loop(), lambda w, s: self.decided.append((w.key, s)))

    def now(self) -> float:
        return self.clock

    def waiting_pods(self) -> Sequence[WaitingPodHandle]:
        return list(self.waiting.values())

    def hold(self, raw: Mapping[str, Any]) -> WaitingPod:
        return self.waiting.add(PodInfo(raw), "n1", {"Coscheduling": 60.0})


def plugin_for(handle: GangHandle, args: Mapping[str, Any] | None = None) -> Coscheduling:
    return Coscheduling(args, handle)


# --- args ---
async def test_args_default_as_scheduler_plugins() -> None:
    plugin = plugin_for(GangHandle({}))
    assert (plugin.args.permit_waiting_time_seconds, plugin.args.pod_group_backoff_seconds) == (60, 0)
    assert plugin.args.pod_group_reject_percentage == 10


@pytest.mark.parametrize(
    "args",
    [
        {"podGroupBackoffSeconds": -1},
        {"permitWaitingTimeSeconds": -5},
        {"podGroupRejectPercentage": 101},
        {"x": 1},
    ],
)
async def test_invalid_args_stop_startup(args: Mapping[str, Any]) -> None:
    with pytest.raises(PluginArgsError):
        plugin_for(GangHandle({}), args)


# --- QueueSort (TestLess) ---
def qpi(raw: dict[str, Any], *, priority: int = 0, initial: float = 0.0) -> QueuedPodInfo:
    raw["spec"]["priority"] = priority
    return QueuedPodInfo(
        pod=raw,
        key=f"default/{raw['metadata']['name']}",
        initial_attempt_timestamp=initial,
        timestamp=initial,
    )


async def test_less_priority_first() -> None:
    plugin = plugin_for(GangHandle({PODGROUPS: [pg("pg1", 1), pg("pg2", 1)]}))
    assert plugin.less(qpi(member("a", "pg2"), priority=10), qpi(member("b", "pg1"), priority=5))


async def test_less_earlier_group_creation_first_then_name() -> None:
    groups = [pg("old", 1, created="2024-01-01T00:00:00Z"), pg("new", 1, created="2024-01-02T00:00:00Z")]
    plugin = plugin_for(GangHandle({PODGROUPS: groups}))
    # A pod of the older group goes first even if it was created later itself.
    assert plugin.less(qpi(member("z", "old"), initial=9e9), qpi(member("a", "new"), initial=0.0))
    # Same group: name order keeps members adjacent and stable.
    assert plugin.less(qpi(member("a", "old")), qpi(member("b", "old")))
    assert not plugin.less(qpi(member("b", "old")), qpi(member("a", "old")))


async def test_less_pod_without_group_uses_its_own_timestamp() -> None:
    plugin = plugin_for(GangHandle({PODGROUPS: [pg("pg1", 1, created="2024-01-01T00:00:00Z")]}))
    lone = pod("lone")
    assert plugin.less(qpi(lone, initial=0.0), qpi(member("a", "pg1")))


async def test_less_a_failed_group_sorts_by_its_failure_time() -> None:
    groups = [pg("first", 2, created="2024-01-01T00:00:00Z"), pg("second", 2, created="2024-01-02T00:00:00Z")]
    handle = GangHandle({PODGROUPS: groups, PODS: [member("a", "first"), member("b", "second")]})
    plugin = plugin_for(handle)
    plugin.unreserve(CycleState(), PodInfo(member("a", "first")), "n1")  # fails at handle.clock (1970+1000s)
    assert plugin.less(qpi(member("a", "first")), qpi(member("b", "second")))


# --- PreEnqueue / PreFilter (TestPreFilter) ---
async def test_pod_without_group_passes_everything() -> None:
    plugin = plugin_for(GangHandle({}))
    lone = PodInfo(pod("lone"))
    assert plugin.pre_enqueue(lone) is None
    assert plugin.pre_filter(CycleState(), lone, []) == (None, None)
    assert plugin.permit(CycleState(), lone, "n1") == (None, 0.0)


async def test_pre_enqueue_holds_until_the_group_exists_and_is_complete() -> None:
    handle = GangHandle({PODS: [member("a", "pg1"), member("b", "pg1")]})
    plugin = plugin_for(handle)
    status = plugin.pre_enqueue(PodInfo(member("a", "pg1")))
    assert status is not None and status.message() == "PodGroup default/pg1 not found"
    handle.lister(PODGROUPS).add(pg("pg1", 3))
    status = plugin.pre_enqueue(PodInfo(member("a", "pg1")))
    assert status is not None and "current pods number: 2, minMember of group: 3" in status.message()
    handle.lister(PODS).add(member("c", "pg1"))
    assert plugin.pre_enqueue(PodInfo(member("a", "pg1"))) is None


def nodes_with_cpu(*cpus: str, existing: Sequence[Mapping[str, Any]] = ()) -> list[NodeInfo]:
    infos = [
        node_info(node(f"n{i}", allocatable={"cpu": cpu, "memory": "16Gi"})) for i, cpu in enumerate(cpus)
    ]
    for raw in existing:
        infos[0].add_pod(PodInfo(raw))
    return infos


@pytest.mark.parametrize(
    ("case", "group", "members", "nodes", "want"),
    [
        ("pod does not belong to any pod group", None, 1, ("4",), None),
        ("pod count less than minMember", pg("pg1", 3), 2, ("4",), "cannot find enough sibling pods"),
        ("pod count equal minMember", pg("pg1", 2), 2, ("4",), None),
        ("pod count more than minMember", pg("pg1", 2), 3, ("4",), None),
        (
            "cluster resource enough, minResources satisfied",
            pg("pg1", 2, minResources={"cpu": "3"}),
            2,
            ("2", "2"),
            None,
        ),
        (
            "cluster resource not enough",
            pg("pg1", 2, minResources={"cpu": "20"}),
            2,
            ("4", "4"),
            "resource gap: cpu=12000",
        ),
        ("not enough pod slots", pg("pg1", 2, minResources={"cpu": "1"}), 2, ("4",), None),
    ],
)
async def test_pre_filter_table(
    case: str, group: dict[str, Any] | None, members: int, nodes: tuple[str, ...], want: str | None
) -> None:
    pods = [member(f"p{i}", "pg1") for i in range(members)]
    handle = GangHandle({PODS: pods, PODGROUPS: [group] if group else []})
    plugin = plugin_for(handle)
    _, status = plugin.pre_filter(CycleState(), PodInfo(pods[0]), nodes_with_cpu(*nodes))
    if want is None:
        assert status is None, case
    else:
        assert status is not None and status.code is Code.UnschedulableAndUnresolvable, case
        assert want in status.message(), case


async def test_pre_filter_gated_siblings_hold_the_group() -> None:
    pods = [member("a", "pg1"), member("b", "pg1", gated=True)]
    plugin = plugin_for(GangHandle({PODS: pods, PODGROUPS: [pg("pg1", 2)]}))
    _, status = plugin.pre_filter(CycleState(), PodInfo(pods[0]), nodes_with_cpu("4"))
    assert status is not None and "gated pods" in status.message()


async def test_min_resources_do_not_count_the_groups_own_pods_as_used() -> None:
    bound = member("a", "pg1", cpu="3", node_name="n0")
    pods = [bound, member("b", "pg1")]
    plugin = plugin_for(GangHandle({PODS: pods, PODGROUPS: [pg("pg1", 2, minResources={"cpu": "4"})]}))
    _, status = plugin.pre_filter(CycleState(), PodInfo(pods[1]), nodes_with_cpu("4", existing=[bound]))
    assert status is None


async def test_backed_off_group_is_rejected_until_backoff_expires() -> None:
    pods = [member("a", "pg1"), member("b", "pg1")]
    handle = GangHandle({PODS: pods, PODGROUPS: [pg("pg1", 2)]})
    plugin = plugin_for(handle, {"podGroupBackoffSeconds": 10})
    _, status = plugin.post_filter(CycleState(), PodInfo(pods[0]), {})
    assert status is not None and "gets rejected" in status.message()
    _, status = plugin.pre_filter(CycleState(), PodInfo(pods[1]), nodes_with_cpu("4"))
    assert status is not None and status.message() == "podGroup default/pg1 failed recently"
    handle.clock += 10
    assert plugin.pre_filter(CycleState(), PodInfo(pods[1]), nodes_with_cpu("4")) == (None, None)


# --- Permit (TestPermit) ---
async def test_permit_group_not_found_is_unschedulable() -> None:
    plugin = plugin_for(GangHandle({PODS: [member("a", "pg1")]}))
    status, _ = plugin.permit(CycleState(), PodInfo(member("a", "pg1")), "n1")
    assert (
        status is not None and status.code is Code.Unschedulable and status.message() == "PodGroup not found"
    )


async def test_permit_waits_for_min_member_then_allows_all() -> None:
    pods = [member(n, "pg1") for n in "abc"]
    handle = GangHandle({PODS: pods, PODGROUPS: [pg("pg1", 3)]})
    plugin = plugin_for(handle, {"permitWaitingTimeSeconds": 10})
    state = CycleState()
    status, timeout = plugin.permit(state, PodInfo(pods[0]), "n1")
    assert status is not None and status.code is Code.Wait and timeout == 10.0
    # The first to wait activates its siblings.
    assert [p["metadata"]["name"] for p in state.get(PODS_TO_ACTIVATE_KEY)] == ["b", "c"]
    a = handle.hold(pods[0])
    status, _ = plugin.permit(CycleState(), PodInfo(pods[1]), "n1")
    assert status is not None and status.code is Code.Wait
    b = handle.hold(pods[1])
    assert plugin.permit(CycleState(), PodInfo(pods[2]), "n1") == (None, 0.0)
    assert a.decided and b.decided
    await asyncio.sleep(0)
    assert sorted(handle.decided, key=lambda d: d[0]) == [("default/a", None), ("default/b", None)]


async def test_permit_uses_the_groups_schedule_timeout() -> None:
    pods = [member("a", "pg1"), member("b", "pg1")]
    plugin = plugin_for(GangHandle({PODS: pods, PODGROUPS: [pg("pg1", 2, scheduleTimeoutSeconds=7)]}))
    assert plugin.permit(CycleState(), PodInfo(pods[0]), "n1")[1] == 7.0


async def test_permit_counts_members_bound_before_a_restart() -> None:
    pods = [member("a", "pg1", node_name="n1"), member("b", "pg1", node_name="n1"), member("c", "pg1")]
    plugin = plugin_for(GangHandle({PODS: pods, PODGROUPS: [pg("pg1", 3)]}))
    assert plugin.permit(CycleState(), PodInfo(pods[2]), "n1") == (None, 0.0)


async def test_deleted_members_stop_counting() -> None:
    pods = [member("a", "pg1"), member("b", "pg1")]
    handle = GangHandle({PODS: pods, PODGROUPS: [pg("pg1", 2)]})
    plugin = plugin_for(handle)
    plugin.permit(CycleState(), PodInfo(pods[0]), "n1")
    handle.lister(PODS).delete("a", "default")
    handle.lister(PODS).add(member("a2", "pg1"))
    status, _ = plugin.permit(CycleState(), PodInfo(pods[1]), "n1")
    assert status is not None and status.code is Code.Wait


# --- PostFilter / Unreserve (TestPostFilter, TestUnreserve) ---
async def test_unreserve_rejects_every_waiting_member() -> None:
    pods = [member(n, "pg1") for n in "abc"] + [member("x", "other")]
    handle = GangHandle({PODS: pods, PODGROUPS: [pg("pg1", 4), pg("other", 2)]})
    plugin = plugin_for(handle)
    held = [handle.hold(p) for p in pods[1:]]
    plugin.unreserve(CycleState(), PodInfo(pods[0]), "n1")
    await asyncio.sleep(0)
    assert sorted(k for k, _ in handle.decided) == ["default/b", "default/c"]
    assert all(s is not None and s.plugin == "Coscheduling" for _, s in handle.decided)
    assert not held[2].decided  # another group's pod is untouched


@pytest.mark.parametrize(
    ("case", "min_member", "assigned", "percentage", "rejects_group"),
    [
        ("enough assigned: do not reject", 3, 3, 10, False),
        ("small gap within the threshold", 10, 9, 10, False),
        ("large gap: reject the group", 4, 1, 10, True),
        ("percentage 0 always rejects", 10, 9, 0, True),
        ("percentage 100 never rejects", 4, 0, 100, False),
    ],
)
async def test_post_filter_table(
    case: str, min_member: int, assigned: int, percentage: int, rejects_group: bool
) -> None:
    pods = [member(f"p{i}", "pg1") for i in range(min_member + 1)]
    handle = GangHandle({PODS: pods, PODGROUPS: [pg("pg1", min_member)]})
    plugin = plugin_for(handle, {"podGroupRejectPercentage": percentage})
    for p in pods[:assigned]:
        plugin.permit(CycleState(), PodInfo(p), "n1")
        handle.hold(p)
    _, status = plugin.post_filter(CycleState(), PodInfo(pods[-1]), {})
    assert status is not None and status.code is Code.Unschedulable, case
    await asyncio.sleep(0)
    assert ("gets rejected" in status.message()) is rejects_group, case
    rejected = [key for key, decision in handle.decided if decision is not None]
    assert bool(rejected) is (rejects_group and assigned > 0), case


# --- queueing hints ---
async def test_hints_wake_a_group_on_its_own_pod_group_and_members_only() -> None:
    waiting = member("a", "pg1")
    plugin = plugin_for(GangHandle({PODGROUPS: [pg("pg1", 2)], PODS: [waiting, member("b", "pg1")]}))
    assert plugin.is_schedulable_after_pod_add(waiting, None, member("b", "pg1")).name == "Queue"
    assert plugin.is_schedulable_after_pod_add(waiting, None, member("b", "pg2")).name == "Skip"
    assert plugin.is_schedulable_after_pod_add(member("solo", ""), None, member("b", "pg1")).name == "Skip"


async def test_a_complete_namesake_group_in_another_namespace_wakes_nobody_here() -> None:
    waiting, namesake, elsewhere = member("a", "pg1"), member("c", "pg1"), pg("pg1", 1)
    namesake["metadata"]["namespace"] = elsewhere["metadata"]["namespace"] = "elsewhere"
    handle = GangHandle({PODGROUPS: [pg("pg1", 2), elsewhere], PODS: [waiting, namesake]})
    plugin = plugin_for(handle)
    assert plugin.is_schedulable_after_pod_add(namesake, None, namesake).name == "Queue"  # its own group
    assert plugin.is_schedulable_after_pod_add(waiting, None, namesake).name == "Skip"
    assert plugin.is_schedulable_after_pod_group_change(waiting, None, pg("pg1", 2)).name == "Queue"
    assert plugin.is_schedulable_after_pod_group_change(waiting, None, pg("pg2", 2)).name == "Skip"
    status_only = pg("pg1", 2)
    assert plugin.is_schedulable_after_pod_group_change(waiting, pg("pg1", 2), status_only).name == "Skip"
    assert plugin.is_schedulable_after_pod_group_change(waiting, pg("pg1", 3), pg("pg1", 2)).name == "Queue"


async def test_a_member_add_wakes_the_group_only_once_min_member_exist_counting_once_per_event() -> None:
    held = [member(f"m{i}", "pg1") for i in range(3)]
    handle = GangHandle({PODGROUPS: [pg("pg1", 4)], PODS: held})
    plugin = plugin_for(handle)
    counts = 0
    siblings = plugin.siblings

    def counting(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        nonlocal counts
        counts += 1
        return siblings(pod)

    plugin.siblings = counting  # type: ignore[method-assign]
    # The third of four: nobody wakes, and the three held pods cost one count.
    assert {plugin.is_schedulable_after_pod_add(p, None, held[2]).name for p in held} == {"Skip"}
    assert counts == 1
    fourth = member("m3", "pg1")
    handle.listers[PODS].add(fourth)
    assert {plugin.is_schedulable_after_pod_add(p, None, fourth).name for p in held} == {"Queue"}
    assert counts == 2
    # A member whose PodGroup does not exist yet waits for the PodGroup's add.
    orphan = member("o", "nopg")
    assert plugin.is_schedulable_after_pod_add(orphan, None, member("o2", "nopg")).name == "Skip"


async def test_room_events_wake_only_a_group_turned_away_by_its_min_resources() -> None:
    """A pod deleted or a node added can only change the minResources verdict: a group rejected for
    anything else (its members released after a sibling failed, say) is not woken by them."""
    pods = [member("a", "pg1"), member("b", "pg1")]
    handle = GangHandle({PODS: pods, PODGROUPS: [pg("pg1", 2, minResources={"cpu": "20"})]})
    plugin = plugin_for(handle)
    other, sibling = member("x", "pg2", node_name="n0"), member("b", "pg1", node_name="n0")
    assert plugin.is_schedulable_after_pod_delete(pods[0], other, None).name == "Skip"
    assert plugin.is_schedulable_after_node_change(pods[0], None, node("n9")).name == "Skip"

    _, status = plugin.pre_filter(CycleState(), PodInfo(pods[0]), nodes_with_cpu("4", "4"))
    assert status is not None and "resource gap" in status.message()
    assert plugin.is_schedulable_after_pod_delete(pods[1], other, None).name == "Queue"
    assert plugin.is_schedulable_after_node_change(pods[1], None, node("n9")).name == "Queue"
    # The group's own pods already count as free room.
    assert plugin.is_schedulable_after_pod_delete(pods[1], sibling, None).name == "Skip"

    _, status = plugin.pre_filter(CycleState(), PodInfo(pods[0]), nodes_with_cpu(*["4"] * 5))
    assert status is None
    assert plugin.is_schedulable_after_pod_delete(pods[1], other, None).name == "Skip"
    assert plugin.is_schedulable_after_node_change(pods[1], None, node("n9")).name == "Skip"


class PlainLister:
    """A Lister that keeps no indexes (a Handle's lister need not be an IndexedLister)."""

    def __init__(self, objects: Sequence[Mapping[str, Any]]) -> None:
        self._inner = StaticLister(objects)

    def list(self, namespace: str | None = None) -> Sequence[Mapping[str, Any]]:
        return self._inner.list(namespace)

    def get(self, name: str, namespace: str = "") -> Mapping[str, Any] | None:
        return self._inner.get(name, namespace)


class PlainHandle(GangHandle):
    def lister(self, resource: ResourceSpec) -> PlainLister:  # type: ignore[override]
        return PlainLister(super().lister(resource).list())


async def test_members_are_the_same_from_the_index_or_a_scan_of_the_namespace() -> None:
    pods = [member("a0", "pg1"), member("a1", "pg1"), member("b0", "pg2"), member("x", "")]
    elsewhere = member("a0", "pg1")
    elsewhere["metadata"]["namespace"] = "other"
    pods.append(elsewhere)
    indexed = plugin_for(GangHandle({PODS: pods}))
    plain = plugin_for(PlainHandle({PODS: pods}))
    assert not isinstance(plain.pods, IndexedLister)

    def uids(found: Sequence[Mapping[str, Any]]) -> list[str]:
        return sorted(f"{s['metadata']['namespace']}/{s['metadata']['uid']}" for s in found)

    for p in pods:
        if p["metadata"]["labels"][POD_GROUP_LABEL]:  # only members are asked for their siblings
            assert uids(indexed.siblings(p)) == uids(plain.siblings(p)), p["metadata"]
    assert sorted(s["metadata"]["name"] for s in indexed.siblings(pods[0])) == ["a0", "a1"]


# --- the whole scheduler: a gang that cannot complete ---
def _gang_member(name: str, *, fits: bool = True) -> dict[str, Any]:
    raw = make_pod(name, cpu="1", uid=f"uid-{name}", node_selector=None if fits else {"no-such": "label"})
    raw["metadata"]["labels"] = {POD_GROUP_LABEL: "stuck"}
    return raw


async def test_a_gang_that_cannot_complete_is_tried_once_then_waits_for_its_events(
    make_env: Callable[..., CoreEnv],
) -> None:
    """Three members, the last fits no node (scheduler-plugins' TestCoschedulingPlugin shape, on the
    real cycle, queue and binding pool): the first two wait at Permit, the third fails Filter and its
    PostFilter rejects them. All three then wait in unschedulablePods for one of their plugins' events,
    as under scheduler-plugins, whose Coscheduling registers only pod adds and PodGroup adds/updates.
    The reservations the rejected members release (AssignedPodDelete) must not wake their siblings:
    with the early pop from backoffQ that made the group retry in a loop, each round's releases
    starting the next."""
    members = [_gang_member("stuck-0"), _gang_member("stuck-1"), _gang_member("stuck-2", fits=False)]
    listers: dict[ResourceSpec, Lister] = {
        PODS: StaticLister(members),
        PODGROUPS: StaticLister([pg("stuck", 3)]),
    }
    env = make_env(
        [make_node("n1", cpu="4"), make_node("n2", cpu="4")],
        profile={
            "schedulerName": PROFILE,
            # scheduler-plugins' manifests/coscheduling profile, as the gang bench runs it.
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
            },
            "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}],
        },
        listers=lambda spec: listers.get(spec) or StaticLister(),
    )
    for raw in members:
        env.queue.add(raw)
    keys = [f"default/{p['metadata']['name']}" for p in members]

    def attempts() -> list[int]:
        return [queued.attempts if (queued := env.queue.get(k)) is not None else 0 for k in keys]

    def parked() -> bool:
        return all(env.queue.where(k) == "unschedulable" for k in keys)

    # Until all three are parked, or a member is tried a fourth time (the loop this guards against).
    task = asyncio.create_task(env.sched.run())
    try:
        await wait_for(lambda: parked() or max(attempts()) > 3)
        for _ in range(50):  # the loop has every chance to pick one of them up again
            await asyncio.sleep(0)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert [env.queue.where(k) for k in keys] == ["unschedulable"] * 3
    assert attempts() == [1, 1, 1]
    assert env.rest.bindings() == {}
    assert not any(env.cache.is_assumed(k) for k in keys)
