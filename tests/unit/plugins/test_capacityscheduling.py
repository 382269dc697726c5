"""CapacityScheduling: cases of scheduler-plugins v0.34.7's ``capacity_scheduling_test.go`` and
``elasticquota_test.go`` (TestPreFilter, TestDryRunPreemption, TestPodEligibleToPreemptOthers, TestReserve,
TestUnreserve, TestAddElasticQuota...; the cases, not the code), on a real framework with the upstream
profile (multiPoint CapacityScheduling, postFilter only CapacityScheduling), plus the quota cache's events
and the queueing hints."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.app.event_handlers import EventHandlers
from scheduler.cache.cache import new_snapshot
from scheduler.config.loader import parse_config_with_plugins
from scheduler.cycle import profiles
from scheduler.framework import QueueingHint
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import ELASTIC_QUOTAS, PODS, ResourceSpec, StaticLister
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from scheduler.plugins.capacityscheduling import CapacityScheduling, QuotaPreemptor
from scheduler.plugins.capacityscheduling.elasticquota import (
    UPPER_BOUND_OF_MAX,
    Amounts,
    amounts_of,
    pod_request,
)
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.registry import IN_TREE_REGISTRY
from scheduler.preemption.evaluator import Evaluator
from tests.unit.fakes import PROFILE, CoreEnv, make_node, make_pod
from tests.unit.plugins.plugin_testlib import node, pod

LOW, MID, HIGH = 0, 100, 1000


def eq(
    namespace: str, min_list: Mapping[str, str] | None, max_list: Mapping[str, str] | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if min_list is not None:
        spec["min"] = dict(min_list)
    if max_list is not None:
        spec["max"] = dict(max_list)
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "eq", "namespace": namespace, "uid": f"eq-{namespace}", "resourceVersion": "1"},
        "spec": spec,
    }


def mk(
    name: str,
    namespace: str,
    memory: int,
    priority: int = MID,
    *,
    node_name: str = "",
    deleting: bool = False,
    nominated: str = "",
    extra_spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    out = pod(
        name,
        namespace=namespace,
        uid=name,
        requests=[{"memory": str(memory)}],
        node_name=node_name,
        nominated_node_name=nominated,
        extra_spec={"priority": priority, **(extra_spec or {})},
        status={"phase": "Running", "startTime": "1970-01-01T00:00:01Z"} if node_name else None,
    )
    if deleting:
        out["metadata"]["deletionTimestamp"] = "1970-01-01T00:00:59Z"
    return out


UPSTREAM_PROFILE = {
    "schedulerName": "py-scheduler",
    "plugins": {
        "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
        "postFilter": {"enabled": [{"name": "CapacityScheduling"}], "disabled": [{"name": "*"}]},
    },
}


class Env:
    """A real framework with the upstream profile over a fixed snapshot and static listers."""

    def __init__(
        self,
        nodes: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        quotas: Sequence[Mapping[str, Any]],
    ) -> None:
        self.snapshot = new_snapshot(nodes, [p for p in pods if p["spec"].get("nodeName")])
        self.listers: dict[ResourceSpec, StaticLister] = {
            PODS: StaticLister(pods),
            ELASTIC_QUOTAS: StaticLister(quotas),
        }
        cfg, registry = parse_config_with_plugins(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [UPSTREAM_PROFILE],
            },
            registry=IN_TREE_REGISTRY,
        )

        def handle_for(name: str) -> profiles.FrameworkHandle:
            return profiles.FrameworkHandle(
                name,
                lambda: self.snapshot,
                None,
                lambda: 100.0,
                listers=lambda spec: self.listers.setdefault(spec, StaticLister()),
            )

        self.fwk: Framework = profiles.build_frameworks(cfg, registry, handle_for)["py-scheduler"]
        [plugin] = [p for p in self.fwk.plugins.post_filter if isinstance(p, CapacityScheduling)]
        self.plugin = plugin

    def prefilter(self, p: Mapping[str, Any]) -> tuple[CycleState, PodInfo, Status | None]:
        state = CycleState()
        info = PodInfo(p)
        _, status = self.fwk.run_pre_filter(state, info, self.snapshot.node_infos())
        return state, info, status

    def post_filter(self, p: Mapping[str, Any]) -> tuple[str | None, Status | None]:
        state, info, status = self.prefilter(p)
        statuses: dict[str, Status] = {}
        for n in self.snapshot.node_infos():
            if status is not None:
                statuses[n.name] = status
                continue
            got = self.fwk.run_filters(state, info, n, self.fwk.filter_plugins_for(state))
            if got is not None:
                statuses[n.name] = got
        return self.plugin.post_filter(state, info, statuses)

    def victims(self, p: Mapping[str, Any]) -> list[list[str]]:
        state, info, _ = self.prefilter(p)
        preemptor = QuotaPreemptor(self.plugin.handle, state)
        evaluator = Evaluator(
            "CapacityScheduling", lambda: self.snapshot, preemptor, lambda: [], lambda: None
        )
        nodes = self.snapshot.node_infos()
        candidates, _, _ = evaluator.dry_run_preemption(state, info, nodes, [], 0, len(nodes))
        return [[v.name for v in c.victims] for c in candidates]


# --- PreFilter (TestPreFilter) ------------------------------------------------------------------


def test_prefilter_pod_subject_to_quota() -> None:
    env = Env(
        [node("n1", allocatable={"memory": "100000"})],
        [mk("used", "ns1", 300, node_name="n1")],
        [eq("ns1", {"memory": "1000"}, {"memory": "2000"})],
    )
    assert env.prefilter(mk("ns1-p1", "ns1", 500))[2] is None
    _, _, status = env.prefilter(mk("ns1-p2", "ns1", 1800))
    assert status is not None and status.code is Code.Unschedulable
    assert status.message() == (
        "Pod ns1/ns1-p2 is rejected in PreFilter because ElasticQuota ns1 is more than Max"
    )


def test_prefilter_sum_of_used_over_sum_of_min() -> None:
    env = Env(
        [node("n1", allocatable={"memory": "100000"})],
        [mk("a", "ns1", 1800, node_name="n1"), mk("b", "ns2", 200, node_name="n1")],
        [
            eq("ns1", {"memory": "1000"}, {"memory": "2000"}),
            eq("ns2", {"memory": "1000"}, {"memory": "2000"}),
        ],
    )
    _, _, status = env.prefilter(mk("ns2-p1", "ns2", 500))
    assert status is not None and status.code is Code.Unschedulable
    assert status.message() == (
        "Pod ns2/ns2-p1 is rejected in PreFilter because total ElasticQuota used is more than min"
    )


def test_prefilter_without_quota_passes() -> None:
    env = Env([node("n1", allocatable={"memory": "100"})], [], [eq("ns1", {"memory": "1"}, {"memory": "1"})])
    assert env.prefilter(mk("free", "ns2", 500))[2] is None


def test_prefilter_counts_nominated_pods_ahead_in_the_same_quota() -> None:
    # 300 used + a nominated pod of equal priority (600) + this one (500) > max 1000.
    env = Env(
        [node("n1", allocatable={"memory": "100000"})],
        [mk("used", "ns1", 300, node_name="n1")],
        [eq("ns1", {"memory": "5000"}, {"memory": "1000"})],
    )
    nominated = PodInfo(mk("nom", "ns1", 600, nominated="n1"))
    handle = env.plugin.handle
    original = handle.nominated_pods_for_node
    handle.nominated_pods_for_node = lambda name: [nominated] if name == "n1" else []  # type: ignore[method-assign,assignment]
    try:
        assert env.prefilter(mk("lower", "ns1", 500, priority=LOW))[2] is not None
        # A more important pod is not held back by a less important nominated one.
        assert env.prefilter(mk("higher", "ns1", 500, priority=HIGH))[2] is None
    finally:
        handle.nominated_pods_for_node = original  # type: ignore[method-assign]


# --- victims (TestDryRunPreemption) --------------------------------------------------------------


def test_in_namespace_preemption() -> None:
    env = Env(
        [node("node-a", allocatable={"memory": "150"})],
        [
            mk("t1-p1", "ns1", 50, MID, node_name="node-a"),
            mk("t1-p2", "ns2", 50, MID, node_name="node-a"),
            mk("t1-p3", "ns2", 50, MID, node_name="node-a"),
        ],
        [eq("ns1", {"memory": "50"}, {"memory": "200"}), eq("ns2", {"memory": "200"}, {"memory": "200"})],
    )
    assert env.victims(mk("t1-p", "ns1", 50, HIGH)) == [["t1-p1"]]


def test_cross_namespace_preemption() -> None:
    env = Env(
        [node("node-a", allocatable={"memory": "150"})],
        [
            mk("t1-p1", "ns1", 50, MID, node_name="node-a"),
            mk("t1-p2", "ns2", 50, HIGH, node_name="node-a"),
            mk("t1-p3", "ns2", 50, MID, node_name="node-a"),
        ],
        [eq("ns1", {"memory": "150"}, {"memory": "200"}), eq("ns2", {"memory": "50"}, {"memory": "200"})],
    )
    assert env.victims(mk("t1-p", "ns1", 50, HIGH)) == [["t1-p3"]]


def test_no_preemption_across_quotas_within_min() -> None:
    # ns2 is within its min: a preemptor within its own min finds no borrower to evict.
    env = Env(
        [node("node-a", allocatable={"memory": "100"})],
        [mk("a", "ns1", 50, LOW, node_name="node-a"), mk("b", "ns2", 50, LOW, node_name="node-a")],
        [eq("ns1", {"memory": "100"}, {"memory": "200"}), eq("ns2", {"memory": "100"}, {"memory": "200"})],
    )
    assert env.victims(mk("p", "ns1", 50, HIGH)) == []
    _nominated, status = env.post_filter(mk("p", "ns1", 50, HIGH))
    assert status is not None and status.code is Code.Unschedulable
    assert "No victims found on node node-a for preemptor pod p" in status.message()
    assert not status.message().startswith("preemption:")


def test_without_quotas_preempts_lower_priority_pods_without_quota() -> None:
    env = Env(
        [node("node-a", allocatable={"memory": "100"})],
        [mk("a", "free", 60, LOW, node_name="node-a"), mk("q", "ns1", 40, LOW, node_name="node-a")],
        [eq("ns1", {"memory": "100"}, {"memory": "200"})],
    )
    assert env.victims(mk("p", "free", 50, HIGH)) == [["a"]]
    nominated, status = env.post_filter(mk("p", "free", 50, HIGH))
    assert (nominated, status) == ("node-a", None)


# --- eligibility (TestPodEligibleToPreemptOthers) ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "preemptor", "pods", "quotas", "nominated_status", "want"),
    [
        (
            "Pod with PreemptNever preemption policy",
            mk("p", "ns1", 10, HIGH, extra_spec={"preemptionPolicy": "Never"}),
            [],
            [eq("ns1", {"memory": "100"}, {"memory": "200"})],
            None,
            False,
        ),
        (
            "Pod with unschedulableAndUnresolvable nominated node",
            mk("p", "ns1", 10, HIGH, nominated="node-a"),
            [mk("t", "ns1", 10, LOW, node_name="node-a", deleting=True)],
            [eq("ns1", {"memory": "100"}, {"memory": "200"})],
            Status(Code.UnschedulableAndUnresolvable),
            True,
        ),
        (
            "Pod with terminating pod in the same namespace",
            mk("p", "ns1", 10, HIGH, nominated="node-a"),
            [mk("t", "ns1", 10, LOW, node_name="node-a", deleting=True)],
            [eq("ns1", {"memory": "100"}, {"memory": "200"})],
            Status(Code.Unschedulable),
            False,
        ),
        (
            "Pod with terminating pod in another namespace",
            mk("p", "ns1", 10, HIGH, nominated="node-a"),
            [mk("t", "ns2", 60, LOW, node_name="node-a", deleting=True)],
            [eq("ns1", {"memory": "100"}, {"memory": "200"}), eq("ns2", {"memory": "50"}, {"memory": "200"})],
            Status(Code.Unschedulable),
            False,
        ),
        (
            "Pod without elasticQuotas and terminating pod exists in the same namespace",
            mk("p", "free", 10, HIGH, nominated="node-a"),
            [mk("t", "free", 10, LOW, node_name="node-a", deleting=True)],
            [],
            Status(Code.Unschedulable),
            False,
        ),
        (
            "Pod without ElasticQuotas and terminating pod exists in another namespace",
            mk("p", "free", 10, HIGH, nominated="node-a"),
            [mk("t", "ns2", 10, LOW, node_name="node-a", deleting=True)],
            [eq("ns2", {"memory": "100"}, {"memory": "200"})],
            Status(Code.Unschedulable),
            True,
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    name: str,
    preemptor: dict[str, Any],
    pods: list[dict[str, Any]],
    quotas: list[dict[str, Any]],
    nominated_status: Status | None,
    want: bool,
) -> None:
    env = Env([node("node-a", allocatable={"memory": "1000"})], pods, quotas)
    state, info, _ = env.prefilter(preemptor)
    got, _ = QuotaPreemptor(env.plugin.handle, state).pod_eligible_to_preempt_others(info, nominated_status)
    assert got is want


# --- Reserve / Unreserve (TestReserve, TestUnreserve) --------------------------------------------


def test_reserve_and_unreserve_account_assumed_pods_once() -> None:
    env = Env(
        [node("n1", allocatable={"memory": "1000"})], [], [eq("ns1", {"memory": "1000"}, {"memory": "2000"})]
    )
    info = env.plugin.cache.infos["ns1"]
    p1, p2 = PodInfo(mk("p1", "ns1", 10)), PodInfo(mk("p2", "ns1", 20))
    state = CycleState()
    assert env.plugin.reserve(state, p1, "n1") is None
    assert env.plugin.reserve(state, p1, "n1") is None
    assert env.plugin.reserve(state, p2, "n1") is None
    assert info.used.memory == 30 and info.pods == {"p1", "p2"}
    env.plugin.unreserve(state, p1, "n1")
    env.plugin.unreserve(state, p1, "n1")
    assert info.used.memory == 20 and info.pods == {"p2"}
    # A pod of a namespace without a quota is not tracked.
    assert env.plugin.reserve(state, PodInfo(mk("x", "other", 5)), "n1") is None
    assert "other" not in env.plugin.cache.infos


# --- quota cache (TestAddElasticQuota, TestUpdateElasticQuota, TestDeleteElasticQuota, pods) ------


def test_quota_defaults_without_min_or_max() -> None:
    env = Env(
        [node("n1", allocatable={"memory": "1000"})],
        [],
        [eq("both", {"cpu": "1", "memory": "1"}, {"cpu": "2", "memory": "2"}), eq("none", None, None)],
    )
    none = env.plugin.cache.infos["none"]
    assert (none.min.milli_cpu, none.min.memory, none.min.ephemeral_storage) == (0, 0, 0)
    assert (none.max.milli_cpu, none.max.memory, none.max.ephemeral_storage) == (UPPER_BOUND_OF_MAX,) * 3
    both = env.plugin.cache.infos["both"]
    assert (both.min.milli_cpu, both.max.milli_cpu) == (1000, 2000)


def test_cache_follows_quota_and_assigned_pod_events() -> None:
    env = Env([node("n1", allocatable={"memory": "1000"})], [mk("bound", "ns1", 10, node_name="n1")], [])
    cache = env.plugin.cache
    quotas, pods = env.listers[ELASTIC_QUOTAS], env.listers[PODS]
    quotas.add(eq("ns1", {"memory": "100"}, {"memory": "200"}))
    # Pods already assigned when the quota appears are counted (a deliberate difference, see docs).
    assert cache.infos["ns1"].used.memory == 10
    pods.add(mk("pending", "ns1", 20))
    assert cache.infos["ns1"].used.memory == 10
    pods.add(mk("pending", "ns1", 20, node_name="n1"))
    assert cache.infos["ns1"].used.memory == 30
    # An update keeps what is used; min/max change.
    quotas.add(eq("ns1", {"memory": "50"}, {"memory": "60"}))
    assert cache.infos["ns1"].used.memory == 30 and cache.infos["ns1"].max.memory == 60
    done = mk("pending", "ns1", 20, node_name="n1")
    done["status"]["phase"] = "Succeeded"
    pods.add(done)
    assert cache.infos["ns1"].used.memory == 10
    pods.delete("bound", "ns1")
    assert cache.infos["ns1"].used.memory == 0
    quotas.delete("eq", "ns1")
    assert "ns1" not in cache.infos


def test_resource_math_as_upstream() -> None:
    # A name that is no scalar resource is not counted; scalars are; init containers raise, overhead adds.
    assert amounts_of({"foo": "5", "example.com/gpu": "2", "cpu": "1500m"}) == Amounts(
        milli_cpu=1500, scalar={"example.com/gpu": 2}
    )
    p = pod(
        "p",
        requests=[{"cpu": "2", "memory": "1G"}, {"cpu": "1", "memory": "1G"}],
        init_requests=[{"cpu": "2", "memory": "1G"}, {"cpu": "2", "memory": "3G"}],
        extra_spec={"overhead": {"cpu": "100m"}},
    )
    req = pod_request(p)
    assert (req.milli_cpu, req.memory) == (3100, 3_000_000_000)


# --- events and hints ---------------------------------------------------------------------------


def test_hints_wake_on_freed_quota_and_any_quota_change() -> None:
    env = Env(
        [node("n1", allocatable={"memory": "1000"})],
        [mk("b", "ns1", 10, node_name="n1")],
        [eq("ns1", {"memory": "100"}, {"memory": "200"})],
    )
    plugin = env.plugin
    pending = mk("p", "ns1", 10)
    assert plugin.is_schedulable_after_pod_delete(pending, mk("u", "ns1", 10), None) is QueueingHint.Skip
    assert (
        plugin.is_schedulable_after_pod_delete(pending, mk("x", "free", 10, node_name="n1"), None)
        is QueueingHint.Skip
    )
    assert plugin.cache.infos["ns1"].used.memory == 10
    assert (
        plugin.is_schedulable_after_pod_delete(pending, mk("b", "ns1", 10, node_name="n1"), None)
        is QueueingHint.Queue
    )
    # The hint brought the cache up to date before the woken pod reads it.
    assert plugin.cache.infos["ns1"].used.memory == 0
    gone = eq("ns1", {"memory": "100"}, {"memory": "200"})
    assert plugin.is_schedulable_after_quota_change(pending, gone, None) is QueueingHint.Queue
    assert "ns1" not in plugin.cache.infos
    events = {str(e.event.resource) for e in plugin.events_to_register()}
    assert events == {"Pod", "elasticquotas.v1alpha1.scheduling.x-k8s.io"}


def test_args_are_refused() -> None:
    with pytest.raises(PluginArgsError, match=r"^CapacityScheduling: foo: unknown field$"):
        CapacityScheduling({"foo": 1}, Env([], [], []).plugin.handle)


# --- synchronous preemption in the scheduling cycle ----------------------------------------------


class QuotaCycle:
    """A whole scheduler (CoreEnv) with the upstream profile, quota ``q`` (min = max = the nodes' cpu)
    and a fake informer: a victim's DELETE reaches the scheduler cache and the plugin's pod lister a
    moment after the API server answered it, unless ``deliver`` is off."""

    def __init__(self, make_env: Any, nodes: Sequence[Mapping[str, Any]]) -> None:
        self.env: CoreEnv = make_env(nodes, profile={**UPSTREAM_PROFILE, "schedulerName": PROFILE})
        self.handlers = EventHandlers(queue=self.env.queue, cache=self.env.cache, profiles=[PROFILE])
        [plugin] = [p for p in self.env.fwk.plugins.post_filter if isinstance(p, CapacityScheduling)]
        self.plugin = plugin
        cpu = str(sum(int(n["status"]["allocatable"]["cpu"]) for n in nodes))
        plugin.cache.add_quota(eq("q", {"cpu": cpu}, {"cpu": cpu}))
        self.deliver = True
        self.deletes: list[str] = []
        respond = self.env.rest.respond
        loop = asyncio.get_running_loop()

        def watched(method: str, path: str, body: Any) -> tuple[int, bytes]:
            answer: tuple[int, bytes] = respond(method, path, body)
            if method == "DELETE" and answer[0] < 300:
                name = path.rsplit("/", 1)[-1]
                self.deletes.append(name)
                if self.deliver:
                    loop.call_soon_threadsafe(loop.call_later, 0.01, self._watch_delete, name)
            return answer

        self.env.rest.respond = watched

    def _watch_delete(self, name: str) -> None:
        cached = self.env.cache.get_pod(f"q/{name}")
        if cached is not None:
            self.handlers.on_pod_delete(cached.pod)
        self.plugin._pods.delete(name, "q")  # type: ignore[attr-defined]

    def running(self, name: str, node_name: str, priority: int) -> None:
        p = with_priority(make_pod(name, namespace="q", cpu="1", node_name=node_name), priority)
        p["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
        self.handlers.on_pod_add(p)
        self.plugin._pods.add(p)  # type: ignore[attr-defined]


def with_priority(p: dict[str, Any], priority: int) -> dict[str, Any]:
    p["spec"]["priority"] = priority
    return p


async def test_reclaiming_pods_of_one_quota_each_evict_one_victim(make_env: Any) -> None:
    """Three high-priority pods of a quota at its max, scheduled back to back: each PostFilter awaits
    its victim's deletion until the informer shows it, so the next preemptor counts the victim gone
    (and the earlier preemptors nominated) and evicts exactly one more."""
    cycle = QuotaCycle(make_env, [make_node("n1", cpu="2"), make_node("n2", cpu="2")])
    env = cycle.env
    for i in range(4):
        cycle.running(f"low{i}", f"n{i % 2 + 1}", LOW)
    for i in range(3):
        env.queue.add(with_priority(make_pod(f"high{i}", namespace="q", cpu="1"), HIGH))
    for i in range(3):
        await env.schedule_next()
        # The cycle returned only once the victim's deletion was shown, in the cache and the quota.
        assert len(cycle.deletes) == i + 1
        assert all(env.cache.get_pod(f"q/{name}") is None for name in cycle.deletes)
        assert cycle.plugin.cache.infos["q"].used.milli_cpu == (3 - i) * 1000
    assert len(set(cycle.deletes)) == 3
    nominated = {env.queue.nominator.nominated_node_for(env.queue.get(f"q/high{i}").pod) for i in range(3)}  # type: ignore[union-attr]
    assert nominated <= {"n1", "n2"}
    assert not env.sched.preemption.in_flight  # nothing left running off the loop


async def test_a_failed_victim_write_is_the_preemptors_error(make_env: Any) -> None:
    cycle = QuotaCycle(make_env, [make_node("n1", cpu="1")])
    env = cycle.env
    cycle.running("low", "n1", LOW)
    respond = env.rest.respond

    def refuse(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "DELETE":
            return 500, b'{"message": "etcd is down", "code": 500}'
        return respond(method, path, body)

    env.rest.respond = refuse
    env.queue.add(with_priority(make_pod("high", namespace="q", cpu="1"), HIGH))
    await env.schedule_next()
    record = env.decisions.store.latest("q/high")
    assert record is not None
    assert "preempting q/low for q/high failed" in record.post_filter
    assert env.queue.nominator.nominated_node_for(env.queue.get("q/high").pod) == ""  # type: ignore[union-attr]


async def test_the_cycle_waits_for_the_informer_no_longer_than_the_settle_timeout(make_env: Any) -> None:
    cycle = QuotaCycle(make_env, [make_node("n1", cpu="1")])
    env = cycle.env
    cycle.deliver = False  # the watch never shows the deletion
    env.sched.preemption._settle_timeout = 0.05
    cycle.running("low", "n1", LOW)
    env.queue.add(with_priority(make_pod("high", namespace="q", cpu="1"), HIGH))
    await env.schedule_next()
    assert cycle.deletes == ["low"]
    assert env.queue.nominator.nominated_node_for(env.queue.get("q/high").pod) == "n1"  # type: ignore[union-attr]


def test_post_filter_outside_the_cycle_refuses_to_preempt() -> None:
    """``post_filter`` cannot await the victims' deletion: with the scheduler's Executor it says so
    rather than evicting without waiting."""
    env = Env(
        [node("node-a", allocatable={"memory": "100"})],
        [mk("a", "free", 60, LOW, node_name="node-a")],
        [],
    )
    env.plugin.handle.framework.preemption_executor = object()  # type: ignore[attr-defined]
    nominated, status = env.post_filter(mk("p", "free", 50, HIGH))
    assert nominated is None
    assert status is not None and status.code is Code.Error
    assert status.message() == "CapacityScheduling preempts only within the scheduling cycle"
