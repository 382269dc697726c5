"""PreemptionToleration: cases of scheduler-plugins v0.34.7's ``preemption_toleration_policy_test.go`` and
``preemption_toleration_test.go`` (TestExemptedFromPreemption; the cases, not the code), args, and the
plugin's victims on a real framework with DefaultPreemption replaced."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.cache.cache import new_snapshot
from scheduler.config.loader import parse_config_with_plugins
from scheduler.cycle import profiles
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import PRIORITY_CLASSES, ResourceSpec, StaticLister
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.preemptiontoleration import (
    ANNOTATION_MINIMUM_PREEMPTABLE_PRIORITY as MIN_KEY,
)
from scheduler.plugins.preemptiontoleration import (
    ANNOTATION_TOLERATION_SECONDS as SECONDS_KEY,
)
from scheduler.plugins.preemptiontoleration import (
    MissingPriorityClass,
    PolicyError,
    PreemptionToleration,
    exempted_from_preemption,
    parse_policy,
)
from scheduler.plugins.registry import IN_TREE_REGISTRY
from tests.unit.plugins.plugin_testlib import node, pod

NOW = 1000.0


def pc(name: str, value: int, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": name, "resourceVersion": "1"}
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta, "value": value}


def mk(
    name: str,
    priority: int,
    *,
    class_name: str = "",
    node_name: str = "",
    scheduled_at: float | None = None,
    never: bool = False,
    memory: str = "100",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"priority": priority}
    if class_name:
        spec["priorityClassName"] = class_name
    if never:
        spec["preemptionPolicy"] = "Never"
    status: dict[str, Any] = {"phase": "Running"} if node_name else {}
    if scheduled_at is not None:
        stamp = f"1970-01-01T00:{int(scheduled_at) // 60:02d}:{int(scheduled_at) % 60:02d}Z"
        status["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}]
    return pod(
        name,
        uid=name,
        requests=[{"memory": memory}],
        node_name=node_name,
        extra_spec=spec,
        status=status or None,
    )


@pytest.mark.parametrize(
    ("annotations", "want"),
    [
        (None, (2, 0)),
        ({MIN_KEY: "100", SECONDS_KEY: "10"}, (100, 10)),
        ({MIN_KEY: "100", SECONDS_KEY: "-1"}, (100, -1)),
        ({MIN_KEY: "a"}, None),
        ({SECONDS_KEY: "a"}, None),
        ({MIN_KEY: "4294967296"}, None),
    ],
)
def test_parse_policy(annotations: Mapping[str, str] | None, want: tuple[int, int] | None) -> None:
    if want is None:
        with pytest.raises(PolicyError):
            parse_policy(pc("c", 1, annotations))
    else:
        assert parse_policy(pc("c", 1, annotations)) == want


VICTIM_CLASS = pc("victim", 1, {MIN_KEY: "10", SECONDS_KEY: "60"})


@pytest.mark.parametrize(
    ("name", "victim", "preemptor", "klass", "want"),
    [
        (
            "unparsable policy: not exempted",
            mk("v", 1, class_name="bad"),
            mk("p", 5),
            pc("bad", 1, {MIN_KEY: "a"}),
            False,
        ),
        (
            "preemptor PreemptNever: exempted",
            mk("v", 1, class_name="victim"),
            mk("p", 5, never=True),
            VICTIM_CLASS,
            True,
        ),
        ("no priority class: not exempted", mk("v", 1), mk("p", 5), None, False),
        (
            "preemptor above minimum: not exempted",
            mk("v", 1, class_name="victim"),
            mk("p", 11),
            VICTIM_CLASS,
            False,
        ),
        (
            "preemptor at minimum: not exempted",
            mk("v", 1, class_name="victim"),
            mk("p", 10),
            VICTIM_CLASS,
            False,
        ),
        (
            "toleration 0: not exempted",
            mk("v", 1, class_name="c0", scheduled_at=NOW - 1),
            mk("p", 5),
            pc("c0", 1, {MIN_KEY: "10", SECONDS_KEY: "0"}),
            False,
        ),
        (
            "negative toleration: exempted forever",
            mk("v", 1, class_name="neg", scheduled_at=0),
            mk("p", 5),
            pc("neg", 1, {MIN_KEY: "10", SECONDS_KEY: "-1"}),
            True,
        ),
        (
            "toleration expired: not exempted",
            mk("v", 1, class_name="victim", scheduled_at=NOW - 61),
            mk("p", 5),
            VICTIM_CLASS,
            False,
        ),
        (
            "within toleration: exempted",
            mk("v", 1, class_name="victim", scheduled_at=NOW - 30),
            mk("p", 5),
            VICTIM_CLASS,
            True,
        ),
        ("not scheduled yet: exempted", mk("v", 1, class_name="victim"), mk("p", 5), VICTIM_CLASS, True),
    ],
)
def test_exempted_from_preemption(
    name: str, victim: dict[str, Any], preemptor: dict[str, Any], klass: dict[str, Any] | None, want: bool
) -> None:
    assert exempted_from_preemption(PodInfo(victim), PodInfo(preemptor), klass, NOW) is want


def test_missing_priority_class_is_an_error() -> None:
    with pytest.raises(MissingPriorityClass):
        exempted_from_preemption(PodInfo(mk("v", 1, class_name="gone")), PodInfo(mk("p", 5)), None, NOW)


def test_args_as_default_preemption_args() -> None:
    with pytest.raises(PluginArgsError, match=r"^PreemptionToleration: minCandidateNodesPercentage: Invalid"):
        PreemptionToleration.parse_args({"minCandidateNodesPercentage": 101})
    with pytest.raises(PluginArgsError, match=r"^PreemptionToleration: foo: unknown field$"):
        PreemptionToleration.parse_args({"foo": 1})
    args = PreemptionToleration.parse_args({"kind": "PreemptionTolerationArgs"})
    assert (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute) == (10, 100)


def _env(pods: list[dict[str, Any]], classes: list[dict[str, Any]]) -> tuple[PreemptionToleration, Any]:
    snapshot = new_snapshot([node("n1", allocatable={"memory": "200"})], pods)
    listers: dict[ResourceSpec, StaticLister] = {PRIORITY_CLASSES: StaticLister(classes)}
    cfg, registry = parse_config_with_plugins(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "py-scheduler",
                    "plugins": {
                        "postFilter": {
                            "enabled": [{"name": "PreemptionToleration"}],
                            "disabled": [{"name": "DefaultPreemption"}],
                        }
                    },
                }
            ],
        },
        registry=IN_TREE_REGISTRY,
    )
    fwk = profiles.build_frameworks(
        cfg,
        registry,
        lambda name: profiles.FrameworkHandle(
            name,
            lambda: snapshot,
            None,
            lambda: NOW,
            listers=lambda spec: listers.setdefault(spec, StaticLister()),
        ),
    )["py-scheduler"]
    [plugin] = [p for p in fwk.plugins.post_filter if isinstance(p, PreemptionToleration)]
    return plugin, fwk


def test_post_filter_spares_tolerating_victims_until_their_window_expires() -> None:
    pods = [
        mk("tolerating", 1, class_name="victim", node_name="n1", scheduled_at=NOW - 30, memory="100"),
        mk("expired", 1, class_name="victim", node_name="n1", scheduled_at=NOW - 61, memory="100"),
    ]
    plugin, fwk = _env(pods, [VICTIM_CLASS])
    preemptor = PodInfo(mk("p", 5, memory="100"))
    state = CycleState()
    fwk.run_pre_filter(state, preemptor, plugin.handle.snapshot.node_infos())
    statuses = {"n1": Status(Code.Unschedulable, ["Insufficient memory"])}
    assert plugin.post_filter(state, preemptor, statuses) == ("n1", None)
    # Asking for more than the expired pod frees finds nothing, and says so without a prefix.
    big = PodInfo(mk("big", 5, memory="200"))
    state = CycleState()
    fwk.run_pre_filter(state, big, plugin.handle.snapshot.node_infos())
    _nominated, status = plugin.post_filter(state, big, statuses)
    assert status is not None and status.code is Code.Unschedulable
    assert not status.message().startswith("preemption:")


# --- synchronous preemption in the scheduling cycle ----------------------------------------------


async def test_preemptors_in_a_burst_each_evict_only_what_they_need(make_env: Any) -> None:
    """scheduler-plugins builds PreemptionToleration's Evaluator with async preemption off: each
    PostFilter returns only once its victim's deletion reached the cache, so the next preemptor of the
    burst meets it gone (and the earlier preemptor nominated) and evicts one pod more, not two."""
    import asyncio

    from scheduler.app.event_handlers import EventHandlers
    from tests.unit.fakes import PROFILE, make_node, make_pod

    profile = {
        "schedulerName": PROFILE,
        "plugins": {
            "postFilter": {
                "enabled": [{"name": "PreemptionToleration"}],
                "disabled": [{"name": "DefaultPreemption"}],
            }
        },
    }
    env = make_env([make_node("n1", cpu="2"), make_node("n2", cpu="2")], profile=profile)
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    deletes: list[str] = []
    respond = env.rest.respond
    loop = asyncio.get_running_loop()

    def show_delete(name: str) -> None:
        cached = env.cache.get_pod(f"default/{name}")
        if cached is not None:
            handlers.on_pod_delete(cached.pod)

    def watched(method: str, path: str, body: Any) -> tuple[int, bytes]:
        answer: tuple[int, bytes] = respond(method, path, body)
        if method == "DELETE" and answer[0] < 300:
            name = path.rsplit("/", 1)[-1]
            deletes.append(name)
            loop.call_soon_threadsafe(loop.call_later, 0.01, show_delete, name)
        return answer

    env.rest.respond = watched
    for i in range(4):
        low = make_pod(f"low{i}", cpu="1", node_name=f"n{i % 2 + 1}")
        low["spec"]["priority"] = 0
        low["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
        handlers.on_pod_add(low)
    for i in range(2):
        high = make_pod(f"high{i}", cpu="1")
        high["spec"]["priority"] = 1000
        env.queue.add(high)
    for i in range(2):
        await env.schedule_next()
        assert len(deletes) == i + 1  # the cycle returned after its one victim was deleted and seen
        assert all(env.cache.get_pod(f"default/{name}") is None for name in deletes)
    assert len(set(deletes)) == 2
    assert not env.sched.preemption.in_flight  # nothing left running off the loop


def test_post_filter_outside_the_cycle_refuses_to_evict() -> None:
    """Without the event loop to await the deletions on, a preemption with victims is an error rather
    than an eviction nobody waits for."""
    from scheduler.preemption.synchronous import refuse_outside_cycle

    async def evicting() -> tuple[str | None, Status | None]:
        return "n1", None

    nominated, status = refuse_outside_cycle("PreemptionToleration", evicting())
    assert nominated is None and status is not None and status.code is Code.Error
    assert refuse_outside_cycle("PreemptionToleration", ("n1", None)) == ("n1", None)
