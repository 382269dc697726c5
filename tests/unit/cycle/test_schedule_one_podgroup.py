"""The pod group cycle of kube-scheduler v1.37.2 (``schedule_one_podgroup.go``) with GangScheduling's
PlacementFeasible and DefaultPreemption's PodGroupPostFilter (workload-aware preemption): what each
member is told, what the PodGroup's condition says, what is evicted, and that nothing is held."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from informers.resource import PODS, WORKLOAD_PODGROUPS, ResourceSpec
from scheduler import metrics
from scheduler.app.event_handlers import EventHandlers
from scheduler.cycle.schedule_one_podgroup import PodGroupCycle
from scheduler.framework.listers import Lister, StaticLister
from scheduler.plugins.defaultpreemption import WorkloadAwareDefaultPreemption
from scheduler.plugins.gangscheduling import GangScheduling
from tests.unit.fakes import PROFILE, CoreEnv, make_node, make_pod, wait_for
from tests.unit.preemption.test_preemption_cycle import deletes, nominations, with_priority

MakeEnv = Callable[..., CoreEnv]


def pod_group(name: str, min_count: int, priority: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid", "generation": 1},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, "priority": priority},
    }


def member(name: str, group: str, cpu: str, priority: int = 0) -> dict[str, Any]:
    pod = with_priority(make_pod(name, cpu=cpu), priority)
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return pod


def low(name: str, node: str, started: str) -> dict[str, Any]:
    pod = with_priority(make_pod(name, cpu="1", node_name=node), 10)
    pod["status"] = {"phase": "Running", "startTime": started}
    return pod


class Gang:
    """A CoreEnv running the pod group cycle with GangScheduling and workload-aware DefaultPreemption,
    its listers fed with the group's pods and PodGroups."""

    def __init__(
        self,
        make_env: MakeEnv,
        nodes: Sequence[Mapping[str, Any]],
        groups: Sequence[dict[str, Any]],
        members: Sequence[dict[str, Any]],
    ) -> None:
        self.pods = StaticLister(members)
        self.groups = StaticLister(groups)
        listers: dict[ResourceSpec, Lister] = {PODS: self.pods, WORKLOAD_PODGROUPS: self.groups}
        self.env = make_env(
            nodes,
            extra_registry={
                "GangScheduling": GangScheduling,
                "DefaultPreemption": WorkloadAwareDefaultPreemption,
            },
            profile={
                "schedulerName": PROFILE,
                "plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}},
            },
            listers=lambda spec: listers.get(spec) or StaticLister(),
        )
        # The gates are off in the fake's frameworks; the cycle, not the guard, is under test.
        self.env.fwk.guard = None
        self.cycle = PodGroupCycle(
            self.env.sched,
            lambda ns, name: [
                p for p in self.pods.list(ns) if p["spec"]["schedulingGroup"]["podGroupName"] == name
            ],
            lambda ns, name: self.groups.get(name, ns),
        )
        self.env.sched.pod_group_cycle = self.cycle
        for pod in members:
            self.env.queue.add(pod)

    async def run_cycle(self) -> None:
        qpi = self.env.queue.pop_nowait()
        assert qpi is not None
        await self.cycle.schedule(qpi)

    def notes(self) -> dict[str, str]:
        """The last FailedScheduling message of each pod."""
        return {
            e["regarding"]["name"]: e["note"]
            for e in self.env.rest.events()
            if e["reason"] == "FailedScheduling"
        }

    def conditions(self, name: str) -> list[dict[str, Any]]:
        return [
            c.body["status"]["conditions"][0]
            for c in self.env.rest.matching(
                "PATCH", f"/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups/{name}/status"
            )
        ]


def counted(result: str) -> float:
    return float(metrics.POD_GROUP_SCHEDULE_ATTEMPTS.labels(result, PROFILE)._value.get())


async def test_a_gang_that_cannot_reach_min_count_stops_at_placement_feasible_and_holds_nothing(
    make_env: MakeEnv,
) -> None:
    """Four members of 3 CPU on two 4-CPU nodes, minCount 4: two fit, the third does not (no
    PostFilter for it), PlacementFeasible then says the gang cannot be satisfied and the fourth is not
    tried. PodGroupPostFilter finds nothing to preempt. The texts are v1.37.2's."""
    members = [member(f"big-{i}", "big", "3") for i in range(4)]
    gang = Gang(
        make_env, [make_node("n1", cpu="4"), make_node("n2", cpu="4")], [pod_group("big", 4)], members
    )
    before = counted(metrics.POD_GROUP_UNSCHEDULABLE)
    await gang.run_cycle()
    gang.env.flush_writes()

    group_message = (
        "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor"
    )
    assert gang.notes() == {
        "big-0": f"pod group is unschedulable, {group_message}",
        "big-1": f"pod group is unschedulable, {group_message}",
        "big-2": "0/2 nodes are available: 2 Insufficient cpu.",
        "big-3": "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining",
    }
    [condition] = gang.conditions("big")
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        group_message,
    )
    assert counted(metrics.POD_GROUP_UNSCHEDULABLE) == before + 1
    # Nothing is held: no pod assumed, and the snapshot is the cache's again.
    assert gang.env.cache.assumed_count() == 0
    assert not gang.env.sched.snapshot.has_changes()
    assert all(not node.pods for node in gang.env.sched.snapshot.node_infos())
    assert gang.env.rest.bindings() == {}


async def test_a_feasible_gang_binds_whole_and_its_condition_is_scheduled(make_env: MakeEnv) -> None:
    members = [member(f"m{i}", "g", "1") for i in range(3)]
    gang = Gang(make_env, [make_node("n1", cpu="4")], [pod_group("g", 3)], members)
    await gang.run_cycle()
    await gang.env.wait_bindings(3)
    gang.env.flush_writes()
    assert gang.env.rest.bindings() == {"m0": "n1", "m1": "n1", "m2": "n1"}
    [condition] = gang.conditions("g")
    assert (condition["status"], condition["reason"], condition["message"]) == ("True", "Scheduled", "")


async def test_a_gang_preempts_one_victim_on_each_of_two_nodes_then_binds(make_env: MakeEnv) -> None:
    """Two nodes full of low-priority pods; a gang of two high-priority members needs room on both.
    Workload-aware preemption takes every lower-priority pod off the cluster, places the gang (one
    member per node), then gives back the victims most important first (the longest running): on each
    node the newest pod goes. Both members are nominated where the run put them, and bind once the
    victims are gone."""
    nodes = [make_node("n1", cpu="2"), make_node("n2", cpu="2")]
    members = [member("vip-0", "vips", "1", 1000), member("vip-1", "vips", "1", 1000)]
    gang = Gang(make_env, nodes, [pod_group("vips", 2, priority=1000)], members)
    env = gang.env
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    started = {
        "low-old-1": ("n1", "2024-01-01T00:00:00Z"),
        "low-new-1": ("n1", "2024-01-02T00:00:00Z"),
        "low-old-2": ("n2", "2024-01-01T00:00:00Z"),
        "low-new-2": ("n2", "2024-01-02T00:00:00Z"),
    }
    for name, (node, when) in started.items():
        handlers.on_pod_add(low(name, node, when))
    attempts = metrics.WORKLOAD_PREEMPTION_ATTEMPTS.labels("Success")
    before_attempts = attempts._value.get()
    before_waiting = counted(metrics.POD_GROUP_WAITING_ON_PREEMPTION)

    await gang.run_cycle()
    await wait_for(lambda: env.sched.preemption.in_flight == 0)
    await wait_for(lambda: len(gang.conditions("vips")) == 1 and len(env.rest.status_patches()) >= 4)

    assert sorted(deletes(env)) == ["low-new-1", "low-new-2"]
    assert attempts._value.get() == before_attempts + 1
    assert counted(metrics.POD_GROUP_WAITING_ON_PREEMPTION) == before_waiting + 1
    placed = {nominations(env, name)[-1] for name in ("vip-0", "vip-1")}
    assert placed == {"n1", "n2"}
    preempted = [e for e in env.rest.events() if e["reason"] == "Preempted"]
    assert {e["note"] for e in preempted} == {"Preempted by podgroup vips-uid on node cluster"}
    [condition] = gang.conditions("vips")
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
        "pod group preemption: found a placement for podgroup, preempting 2 victims",
    )
    assert gang.notes()["vip-1"] == "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    assert env.rest.bindings() == {}

    # The informer shows the victims gone; the members are activated and the next cycle binds both.
    for name in ("low-new-1", "low-new-2"):
        victim = env.cache.get_pod(f"default/{name}")
        assert victim is not None
        handlers.on_pod_delete(victim.pod)
    env.clock.advance(60)
    env.queue.flush_backoff_completed()
    await gang.run_cycle()
    await env.wait_bindings(2)
    assert sorted(env.rest.bindings()) == ["vip-0", "vip-1"]
    assert set(env.rest.bindings().values()) == {"n1", "n2"}


async def test_a_gang_whose_members_refuse_to_preempt_is_not_eligible(make_env: MakeEnv) -> None:
    members = [member("m0", "g", "2", 1000), member("m1", "g", "2", 1000)]
    for pod in members:
        pod["spec"]["preemptionPolicy"] = "Never"
    gang = Gang(make_env, [make_node("n1", cpu="2")], [pod_group("g", 2, priority=1000)], members)
    EventHandlers(queue=gang.env.queue, cache=gang.env.cache, profiles=[PROFILE]).on_pod_add(
        low("low-0", "n1", "2024-01-01T00:00:00Z")
    )
    await gang.run_cycle()
    gang.env.flush_writes()
    assert deletes(gang.env) == []
    [condition] = gang.conditions("g")
    assert condition["message"] == (
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
        "pod group preemption: not eligible due to preemptionPolicy=Never."
    )


async def test_a_crash_inside_the_group_cycle_requeues_every_member_it_popped(
    make_env: MakeEnv, monkeypatch: Any
) -> None:
    """A bug in a plugin must not strand the members the cycle took from the queue: each goes back as
    an error (backoffQ), none is left in flight, and the snapshot is the cache's again."""
    from scheduling_queue import BACKOFF

    members = [member(f"m{i}", "g", "1") for i in range(3)]
    gang = Gang(make_env, [make_node("n1", cpu="4")], [pod_group("g", 3)], members)

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("plugin bug")

    monkeypatch.setattr(gang.env.fwk, "run_placement_feasible", broken)
    await gang.run_cycle()
    assert {
        m["metadata"]["name"]: gang.env.queue.where(f"default/{m['metadata']['name']}") for m in members
    } == {
        "m0": BACKOFF,
        "m1": BACKOFF,
        "m2": BACKOFF,
    }
    assert not gang.env.sched.snapshot.has_changes()
    assert gang.env.rest.bindings() == {}
