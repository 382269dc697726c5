"""Workload-aware preemption (``podgrouppreemption.go`` of kube-scheduler v1.37.2): the evaluator's
victims and nominations, the Executor's pod group run, and DefaultPreemption's PreEnqueue hold."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from scheduler.app.event_handlers import EventHandlers
from scheduler.framework.listers import StaticLister
from scheduler.framework.podgroup import PodGroupInfo, ProposedAssignment
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from scheduler.plugins.defaultpreemption import WorkloadAwareDefaultPreemption
from tests.unit.cycle.test_schedule_one_podgroup import Gang, low, member, pod_group
from tests.unit.fakes import PROFILE, CoreEnv, make_node, wait_for
from tests.unit.fakes import make_pod as make_pod_named
from tests.unit.preemption.test_preemption_cycle import deletes, with_priority

MakeEnv = Callable[..., CoreEnv]


def plugin_of(gang: Gang) -> WorkloadAwareDefaultPreemption:
    [plugin] = [p for p in gang.env.fwk.plugins.post_filter if isinstance(p, WorkloadAwareDefaultPreemption)]
    return plugin


class Placement:
    """A ProposedAssignment that counts its assume/forget calls (the cycle's are tested with the cycle);
    its cycle state has been through PreFilter, as the group's algorithm leaves it."""

    def __init__(self, gang: Gang, pod: PodInfo, node_name: str) -> None:
        self.gang = gang
        self.pod = pod
        self.node_name = node_name
        self.state = gang.env.fwk.new_cycle_state()
        gang.env.fwk.run_pre_filter(self.state, pod, gang.env.sched.snapshot.node_infos())
        self.assumed = 0

    def assume(self) -> None:
        self.assumed += 1
        self.gang.env.sched.snapshot.add_pod(self.pod, self.node_name)

    def forget(self) -> None:
        self.assumed -= 1
        self.gang.env.sched.snapshot.remove_pod(self.pod, self.node_name)


def setup(make_env: MakeEnv, pdbs: Sequence[dict[str, Any]] = ()) -> tuple[Gang, EventHandlers]:
    nodes = [make_node("n1", cpu="2"), make_node("n2", cpu="2")]
    members = [member("vip-0", "vips", "1", 1000), member("vip-1", "vips", "1", 1000)]
    gang = Gang(make_env, nodes, [pod_group("vips", 2, priority=1000)], members)
    handlers = EventHandlers(queue=gang.env.queue, cache=gang.env.cache, profiles=[PROFILE])
    for name, node, day in (("a1", "n1", 1), ("b1", "n1", 2), ("a2", "n2", 1), ("b2", "n2", 2)):
        pod = low(name, node, f"2024-01-0{day}T00:00:00Z")
        pod["metadata"]["labels"] = {"app": name[0]}
        handlers.on_pod_add(pod)
    plugin = plugin_of(gang)
    plugin._pdbs.lister = StaticLister(pdbs)
    gang.env.cache.update_snapshot(gang.env.sched.snapshot)
    return gang, handlers


def members_of(gang: Gang) -> tuple[PodInfo, ...]:
    return tuple(PodInfo(p) for p in gang.pods.list("default"))


KEEP_B = {
    "metadata": {"name": "keep-b", "namespace": "default"},
    "spec": {"selector": {"matchLabels": {"app": "b"}}},
    "status": {"disruptionsAllowed": 0},
}


@pytest.mark.parametrize(
    ("pdbs", "evicted"),
    [((), {"b1", "b2"}), ((KEEP_B,), {"a1", "a2"})],
    ids=["the newest on each node", "a budget keeps the newest"],
)
async def test_victims_on_two_nodes_the_least_important_unless_a_budget_protects_them(
    make_env: MakeEnv, pdbs: Sequence[dict[str, Any]], evicted: set[str]
) -> None:
    """Every lower-priority pod is taken off; the members placed one per node; the victims given back
    most important first (the older "a" pods before the newer "b" ones), those a PodDisruptionBudget
    protects before the others: with a budget allowing no disruption of the "b" pods, the "a" pods go."""
    gang, _ = setup(make_env, pdbs)
    members = members_of(gang)
    placements: list[Placement] = []

    def schedule() -> tuple[list[ProposedAssignment], Status | None]:
        # Run with the victims off the snapshot, as the pod group cycle's algorithm.
        placements.extend([Placement(gang, members[0], "n1"), Placement(gang, members[1], "n2")])
        return list(placements), None

    group = PodGroupInfo(gang.groups.get("vips", "default") or {}, members)
    decided = plugin_of(gang).pod_group_evaluator.evaluate(group, 1000, schedule)
    gang.env.sched.snapshot.restore()
    assert not isinstance(decided, Status), decided
    assert {v.name for v in decided.victims} == evicted
    assert decided.num_pdb_violations == 0
    assert decided.nominations == {"default/vip-0": "n1", "default/vip-1": "n2"}
    assert [p.assumed for p in placements] == [0, 0]  # every what-if placement undone


async def test_nothing_below_the_groups_priority_means_no_victims(make_env: MakeEnv) -> None:
    gang, _ = setup(make_env)
    members = members_of(gang)
    group = PodGroupInfo(pod_group("vips", 2, priority=5), members)
    decided = plugin_of(gang).pod_group_evaluator.evaluate(group, 5, lambda: ([], None))
    assert isinstance(decided, Status)
    assert (decided.code, decided.message()) == (
        Code.UnschedulableAndUnresolvable,
        "No preemption victims found for incoming preemptor",
    )


async def test_the_group_is_held_while_its_preemption_runs_then_its_members_are_activated(
    make_env: MakeEnv,
) -> None:
    """The run is keyed by the PodGroup: PreEnqueue holds every member while the victims are evicted
    ("waiting for the preemption for this pod group to be finished"); once the informer shows them
    gone, the members are activated (they retry after backoff only, no deletion event wakes them)."""
    gang, handlers = setup(make_env)
    env = gang.env
    plugin = plugin_of(gang)
    group = gang.groups.get("vips", "default")
    assert group is not None
    victims = [p for name in ("b1", "b2") if (p := env.cache.get_pod(f"default/{name}")) is not None]
    for _ in members_of(gang):  # members in backoff, as after the cycle that preempted
        qpi = env.queue.pop_nowait()
        assert qpi is not None
        env.queue.add_unschedulable_if_not_present(qpi)
    assert env.sched.preemption.actuate_group(group, members_of(gang), victims, "DefaultPreemption") is None
    held = plugin.pre_enqueue(members_of(gang)[0])
    assert (
        held is not None and held.message() == "waiting for the preemption for this pod group to be finished"
    )
    await wait_for(lambda: env.sched.preemption.in_flight == 0)
    env.flush_writes()
    assert sorted(deletes(env)) == ["b1", "b2"]
    conditions = [
        c.body["status"]["conditions"][0]["message"]
        for c in env.rest.status_patches()
        if "conditions" in c.body["status"]
    ]
    assert set(conditions) == {"py-scheduler: preempting to accommodate a higher priority podgroup"}
    notes = {e["note"] for e in env.rest.events() if e["reason"] == "Preempted"}
    assert notes == {"Preempted by podgroup vips-uid on node cluster"}
    # Still held until the informer shows the deletions; then the members go to activeQ at once.
    assert plugin.pre_enqueue(members_of(gang)[0]) is not None
    for victim in victims:
        handlers.on_pod_delete(victim.pod)
    await wait_for(lambda: all(env.queue.where(f"default/vip-{i}") == "active" for i in range(2)))
    assert plugin.pre_enqueue(members_of(gang)[0]) is None
    env.close()


async def test_a_preemption_still_under_way_on_the_nominated_nodes_is_not_repeated(make_env: MakeEnv) -> None:
    """isOngoingPreemption: a member nominated where a lower-priority pod is terminating by this
    scheduler's preemption keeps its nomination, and nothing new is evicted."""
    gang, _ = setup(make_env)
    env = gang.env
    node = env.sched.snapshot.get("n1")
    assert node is not None
    leaving = node.pods["default/b1"].pod
    leaving["metadata"]["deletionTimestamp"] = "2024-01-03T00:00:00Z"
    leaving["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    first, second = members_of(gang)
    members = (PodInfo({**first.pod, "status": {"nominatedNodeName": "n1"}}), second)
    group = PodGroupInfo(gang.groups.get("vips", "default") or {}, members)
    nominations, status = plugin_of(gang).pod_group_post_filter(
        env.fwk.new_cycle_state(), group, lambda: ([], None)
    )
    assert status is not None
    assert (status.code, status.message()) == (
        Code.Success,
        "pod group preemption: ongoing preemption on nominated nodes",
    )
    assert nominations == {"default/vip-0": "n1", "default/vip-1": ""}
    await wait_for(lambda: env.sched.preemption.in_flight == 0)
    assert deletes(env) == []


def running_member(name: str, group: str, node: str, priority: int = 10) -> dict[str, Any]:
    pod = member(name, group, "1", priority)
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    return pod


def whole_group(name: str, priority: int = 10) -> dict[str, Any]:
    group = pod_group(name, 1, priority=priority)
    group["spec"]["disruptionMode"] = {"all": {}}
    return group


def single_pod_victims(gang: Gang, preemptor: PodInfo, node_name: str) -> list[str]:
    """What a pod's own preemption (DefaultPreemption's PostFilter dry run) would evict for it there."""
    env = gang.env
    env.cache.update_snapshot(env.sched.snapshot)
    state = env.fwk.new_cycle_state()
    env.fwk.run_pre_filter(state, preemptor, env.sched.snapshot.node_infos())
    node = env.sched.snapshot.get(node_name)
    assert node is not None
    victims, _, status = plugin_of(gang).select_victims_on_node(state, preemptor, node.clone(), [])
    assert status is None, status
    return [v.name for v in victims]


async def test_a_pods_own_preemption_with_pod_groups_as_victims(make_env: MakeEnv) -> None:
    """GenericWorkload, a pod's own preemption: of two victims of one priority started together, the
    lone pod goes before a pod group's member (MoreImportantVictim's rank); a member counts at its
    PodGroup's priority (GetPodPriority); and the members of a PodGroup in ``disruptionMode: {all: {}}``
    are one victim: evicting it for room on one node evicts its member on the other node too."""
    groups = [pod_group("others", 1, priority=10), pod_group("vip", 1, priority=1000), whole_group("whole")]
    gang = Gang(make_env, [make_node(f"n{i}", cpu="2") for i in (1, 2, 3)], groups, [])
    handlers = EventHandlers(queue=gang.env.queue, cache=gang.env.cache, profiles=[PROFILE])
    handlers.on_pod_add(low("lone", "n1", "2024-01-01T00:00:00Z"))
    handlers.on_pod_add(running_member("grouped", "others", "n1"))
    handlers.on_pod_add(running_member("says-10", "vip", "n2"))  # its PodGroup says 1000
    handlers.on_pod_add(low("filler", "n2", "2024-01-01T00:00:00Z"))
    handlers.on_pod_add(running_member("whole-3", "whole", "n3"))
    handlers.on_pod_add(running_member("whole-1", "whole", "n3"))
    preemptor = PodInfo(with_priority(make_pod_named("preemptor", cpu="1"), 500))
    assert single_pod_victims(gang, preemptor, "n1") == ["lone"]
    assert single_pod_victims(gang, preemptor, "n2") == ["filler"]
    node = gang.env.sched.snapshot.get("n2")
    assert node is not None
    assert not plugin_of(gang).is_preemption_allowed(node, node.pods["default/says-10"], preemptor)
    gang.env.close()


async def test_a_pod_group_in_disruption_mode_all_is_evicted_whole_across_nodes(make_env: MakeEnv) -> None:
    gang = Gang(make_env, [make_node(f"n{i}", cpu="1") for i in (1, 2)], [whole_group("whole")], [])
    handlers = EventHandlers(queue=gang.env.queue, cache=gang.env.cache, profiles=[PROFILE])
    handlers.on_pod_add(running_member("whole-a", "whole", "n1"))
    handlers.on_pod_add(running_member("whole-b", "whole", "n2"))
    preemptor = PodInfo(with_priority(make_pod_named("preemptor", cpu="1"), 500))
    assert sorted(single_pod_victims(gang, preemptor, "n1")) == ["whole-a", "whole-b"]
    # A pod group's preemption takes it whole too, and counts one workload disruption.
    members = (PodInfo(member("vip-0", "vips", "1", 1000)),)
    gang.groups.add(pod_group("vips", 1, priority=1000))
    placements: list[Placement] = []

    def schedule() -> tuple[list[ProposedAssignment], Status | None]:
        placements.append(Placement(gang, members[0], "n2"))
        return list(placements), None

    group = PodGroupInfo(pod_group("vips", 1, priority=1000), members)
    decided = plugin_of(gang).pod_group_evaluator.evaluate(group, 1000, schedule)
    gang.env.sched.snapshot.restore()
    assert not isinstance(decided, Status), decided
    assert sorted(v.name for v in decided.victims) == ["whole-a", "whole-b"]
    assert decided.num_pod_group_disruptions == 1
    gang.env.close()
