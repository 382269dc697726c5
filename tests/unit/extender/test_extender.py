"""Extenders: the wire format (fixtures written from the Go structs of ``extender/v1/types.go``, which
carry no JSON tags), and the HTTP client and runner against a real aiohttp server on loopback."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer

from scheduler.app.event_handlers import EventHandlers
from scheduler.config.types import ExtenderConfig, ExtenderManagedResource
from scheduler.extender.client import HTTPExtender
from scheduler.extender.runner import EXTENDER_NAME, ExtenderFilterError, Extenders
from scheduler.extender.wire import (
    MetaVictims,
    WireError,
    binding_args,
    decode_binding_result,
    decode_filter_result,
    decode_host_priority_list,
    decode_preemption_result,
    extender_args,
    preemption_args,
    to_meta_victims,
)
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.extender import ExtenderError, Victims
from scheduler.framework.fit_error import FitError
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo, PodInfo
from tests.unit.cycle.test_core_algorithm import Setup
from tests.unit.fakes import PROFILE, CoreEnv, make_node, make_pod, wait_for
from tests.unit.preemption.test_preemption_cycle import MakeEnv, deletes, nominations, running, with_priority

Handler = Callable[[dict[str, Any]], Awaitable[Any]]


# --- wire ---------------------------------------------------------------------------------------------
def test_extender_args_carry_full_nodes_or_only_names() -> None:
    pod = {"metadata": {"name": "p"}}
    node = {"metadata": {"name": "n1"}}
    assert json.dumps(extender_args(pod, [node], None)) == (
        '{"Pod": {"metadata": {"name": "p"}}, '
        '"Nodes": {"metadata": {}, "items": [{"metadata": {"name": "n1"}}]}, '
        '"NodeNames": null}'
    )
    assert extender_args(pod, None, ["n1"]) == {"Pod": pod, "Nodes": None, "NodeNames": ["n1"]}


def test_binding_and_preemption_args() -> None:
    assert binding_args("p", "ns", "u1", "n1") == {
        "PodName": "p",
        "PodNamespace": "ns",
        "PodUID": "u1",
        "Node": "n1",
    }
    victim = {"metadata": {"name": "v", "uid": "uv"}}
    victims = {"n1": Victims([victim], 2)}
    assert preemption_args({"metadata": {}}, victims, None) == {
        "Pod": {"metadata": {}},
        "NodeNameToVictims": {"n1": {"Pods": [victim], "NumPDBViolations": 2}},
        "NodeNameToMetaVictims": None,
    }
    assert preemption_args({}, None, to_meta_victims(victims))["NodeNameToMetaVictims"] == {
        "n1": {"Pods": [{"UID": "uv"}], "NumPDBViolations": 2}
    }


def test_filter_result_decodes_go_names_case_insensitively() -> None:
    go = decode_filter_result(
        {
            "Nodes": {"items": [{"metadata": {"name": "a"}}]},
            "NodeNames": None,
            "FailedNodes": {"b": "why b"},
            "FailedAndUnresolvableNodes": {"c": "why c"},
            "Error": "",
        }
    )
    assert (go.nodes, go.node_names, go.failed_nodes, go.failed_and_unresolvable_nodes, go.error) == (
        ["a"],
        None,
        {"b": "why b"},
        {"c": "why c"},
        "",
    )
    # encoding/json matches keys ignoring case; unknown keys are ignored; a missing field is its zero.
    lower = decode_filter_result({"nodenames": ["a"], "failedNodes": {"b": "x"}, "extra": 1})
    assert (lower.nodes, lower.node_names, lower.failed_nodes, lower.error) == (None, ["a"], {"b": "x"}, "")
    assert decode_filter_result({"error": "boom"}).error == "boom"


def test_host_priority_list_binding_and_preemption_results() -> None:
    hosts = decode_host_priority_list([{"Host": "a", "Score": 3}, {"host": "b", "score": 10}])
    assert [(h.host, h.score) for h in hosts] == [("a", 3), ("b", 10)]
    assert decode_host_priority_list(None) == []
    assert decode_binding_result({"Error": ""}) == ""
    assert decode_binding_result({"Error": "nope"}) == "nope"
    assert decode_preemption_result(
        {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 1}}}
    ) == {"n1": MetaVictims(["u1"], 1)}


@pytest.mark.parametrize(
    ("decode", "body"),
    [
        (decode_host_priority_list, [{"Host": "a", "Score": 2.5}]),
        (decode_host_priority_list, [{"Host": "a", "Score": "2"}]),
        (decode_host_priority_list, {"Host": "a"}),
        (decode_filter_result, {"FailedNodes": ["a"]}),
        (decode_filter_result, {"NodeNames": "a"}),
        (decode_filter_result, []),
    ],
)
def test_wrong_types_are_errors(decode: Callable[[Any], Any], body: Any) -> None:
    with pytest.raises(WireError, match="json: cannot unmarshal"):
        decode(body)


# --- a real server on loopback -------------------------------------------------------------------
class FakeExtender:
    """Routes each verb to a handler a test sets; records what it was sent."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}
        self.received: dict[str, list[dict[str, Any]]] = {}
        self.server: TestServer | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        verb = request.match_info["verb"]
        body = await request.json()
        self.received.setdefault(verb, []).append(body)
        handler = self.handlers.get(verb)
        if handler is None:
            return web.Response(status=404)
        answer = await handler(body)
        if isinstance(answer, web.StreamResponse):
            return answer
        return web.json_response(answer)

    @property
    def url(self) -> str:
        assert self.server is not None
        return str(self.server.make_url("/api"))

    def config(self, **kw: Any) -> ExtenderConfig:
        return ExtenderConfig(url_prefix=self.url, **kw)


# The test's own loop: the default fixture loop is the session's, where this server would never run.
@pytest_asyncio.fixture(loop_scope="function")
async def fake() -> AsyncIterator[FakeExtender]:
    ext = FakeExtender()
    app = web.Application()
    app.router.add_post("/api/{verb}", ext._handle)
    ext.server = TestServer(app, host="127.0.0.1")
    await ext.server.start_server()
    yield ext
    await ext.server.close()


def nodes(*names: str) -> list[NodeInfo]:
    return [NodeInfo(make_node(n)) for n in names]


def pod(name: str = "p", **kw: Any) -> PodInfo:
    return PodInfo(make_pod(name, **kw))


async def keep(names: set[str], *, unresolvable: bool = False) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    async def handler(body: dict[str, Any]) -> Any:
        items = body["Nodes"]["items"] if body["Nodes"] else None
        all_names = body["NodeNames"] or [n["metadata"]["name"] for n in items or []]
        failed = {n: f"{n} is not welcome" for n in all_names if n not in names}
        if body["NodeNames"] is not None:
            return {"NodeNames": [n for n in all_names if n in names], "FailedNodes": failed}
        key = "FailedAndUnresolvableNodes" if unresolvable else "FailedNodes"
        return {"Nodes": {"items": [n for n in items or [] if n["metadata"]["name"] in names]}, key: failed}

    return handler


async def test_filter_keeps_allowed_nodes_and_records_reasons(fake: FakeExtender) -> None:
    fake.handlers["filter"] = await keep({"a", "c"}, unresolvable=True)
    extenders = Extenders([HTTPExtender(fake.config(filter_verb="filter"))])
    statuses: dict[str, Any] = {}
    passed = await extenders.find_nodes_that_pass(pod(), nodes("a", "b", "c"), statuses)
    assert [n.name for n in passed] == ["a", "c"]
    assert statuses["b"].code is Code.UnschedulableAndUnresolvable
    assert statuses["b"].reasons == ["b is not welcome"]
    sent = fake.received["filter"][0]
    assert sent["Pod"]["metadata"]["name"] == "p" and sent["NodeNames"] is None
    assert [n["metadata"]["name"] for n in sent["Nodes"]["items"]] == ["a", "b", "c"]
    await extenders.close()


async def test_node_cache_capable_sends_names_only(fake: FakeExtender) -> None:
    fake.handlers["filter"] = await keep({"b"})
    extenders = Extenders([HTTPExtender(fake.config(filter_verb="filter", node_cache_capable=True))])
    statuses: dict[str, Any] = {}
    passed = await extenders.find_nodes_that_pass(pod(), nodes("a", "b"), statuses)
    assert [n.name for n in passed] == ["b"]
    assert statuses["a"].code is Code.Unschedulable
    assert fake.received["filter"][0]["Nodes"] is None
    assert fake.received["filter"][0]["NodeNames"] == ["a", "b"]

    async def claims_unknown(body: dict[str, Any]) -> Any:
        return {"NodeNames": ["zzz"]}

    fake.handlers["filter"] = claims_unknown
    with pytest.raises(ExtenderFilterError, match='claims a filtered node "zzz" which is not found'):
        await extenders.find_nodes_that_pass(pod(), nodes("a"), {})
    await extenders.close()


async def test_filter_errors_fail_unless_ignorable(fake: FakeExtender) -> None:
    async def error(body: dict[str, Any]) -> Any:
        return {"Error": "the extender is unhappy"}

    async def status_500(body: dict[str, Any]) -> Any:
        return web.Response(status=500)

    fake.handlers["filter"] = error
    strict = Extenders([HTTPExtender(fake.config(filter_verb="filter"))])
    with pytest.raises(ExtenderFilterError) as info:
        await strict.find_nodes_that_pass(pod(), nodes("a"), {})
    assert str(info.value) == "the extender is unhappy"
    fake.handlers["filter"] = status_500
    with pytest.raises(ExtenderFilterError) as info:
        await strict.find_nodes_that_pass(pod(), nodes("a"), {})
    assert str(info.value) == f"failed filter with extender at URL {fake.url}/filter, code 500"
    lenient = Extenders([HTTPExtender(fake.config(filter_verb="filter", ignorable=True))])
    assert [n.name for n in await lenient.find_nodes_that_pass(pod(), nodes("a"), {})] == ["a"]
    await strict.close()
    await lenient.close()


async def test_http_timeout_is_enforced(fake: FakeExtender) -> None:
    async def slow(body: dict[str, Any]) -> Any:
        await asyncio.sleep(2)
        return {"NodeNames": []}

    fake.handlers["filter"] = slow
    strict = Extenders([HTTPExtender(fake.config(filter_verb="filter", http_timeout=0.2))])
    start = time.monotonic()
    with pytest.raises(ExtenderFilterError) as info:
        await strict.find_nodes_that_pass(pod(), nodes("a"), {})
    assert time.monotonic() - start < 1.5
    assert str(info.value) == (
        f'Post "{fake.url}/filter": context deadline exceeded '
        "(Client.Timeout exceeded while awaiting headers)"
    )
    lenient = Extenders([HTTPExtender(fake.config(filter_verb="filter", http_timeout=0.2, ignorable=True))])
    assert len(await lenient.find_nodes_that_pass(pod(), nodes("a", "b"), {})) == 2
    await strict.close()
    await lenient.close()


async def test_ignorable_extenders_run_last() -> None:
    a = HTTPExtender(ExtenderConfig(url_prefix="http://a", ignorable=True))
    b = HTTPExtender(ExtenderConfig(url_prefix="http://b"))
    c = HTTPExtender(ExtenderConfig(url_prefix="http://c"))
    assert [e.name for e in Extenders([a, b, c]).extenders] == ["http://b", "http://c", "http://a"]


def test_managed_resources_decide_interest() -> None:
    ext = HTTPExtender(ExtenderConfig(managed_resources=(ExtenderManagedResource("example.com/gpu"),)))
    plain = make_pod("plain")
    gpu = make_pod("gpu")
    gpu["spec"]["initContainers"] = [{"name": "i", "resources": {"limits": {"example.com/gpu": "1"}}}]
    assert not ext.is_interested(PodInfo(plain))
    assert ext.is_interested(PodInfo(gpu))
    assert HTTPExtender(ExtenderConfig()).is_interested(PodInfo(plain))


async def test_prioritize_scales_weights_and_ignores_failures(fake: FakeExtender) -> None:
    async def scores(body: dict[str, Any]) -> Any:
        await asyncio.sleep(0.3)
        return [{"Host": "a", "Score": 1}, {"Host": "b", "Score": 10}, {"Host": "zz", "Score": 10}]

    async def broken(body: dict[str, Any]) -> Any:
        await asyncio.sleep(0.3)
        return web.Response(status=503)

    fake.handlers["prio"] = scores
    fake.handlers["broken"] = broken
    extenders = Extenders(
        [
            HTTPExtender(fake.config(prioritize_verb="prio", weight=2)),
            HTTPExtender(fake.config(prioritize_verb="prio", weight=1)),
            HTTPExtender(fake.config(prioritize_verb="broken", weight=5)),
        ]
    )
    start = time.monotonic()
    totals = await extenders.prioritize(pod(), nodes("a", "b", "c"))
    # Called concurrently, as upstream's goroutines: well under the 0.9 s of three calls in a row.
    assert time.monotonic() - start < 0.8
    assert totals is not None
    # score * weight * (MaxNodeScore / MaxExtenderPriority)
    assert totals.tolist() == [1 * 2 * 10 + 1 * 1 * 10, 10 * 2 * 10 + 10 * 1 * 10, 0]
    await extenders.close()


async def test_bind_from_a_thread_uses_the_loop(fake: FakeExtender) -> None:
    async def bind(body: dict[str, Any]) -> Any:
        return {"Error": "" if body["Node"] == "good" else "cannot bind there"}

    fake.handlers["bind"] = bind
    extenders = Extenders([HTTPExtender(fake.config(bind_verb="bind"))])
    extenders.start(asyncio.get_running_loop())
    p = pod("b1")
    results = await asyncio.gather(
        asyncio.to_thread(extenders.bind, p, "good"), asyncio.to_thread(extenders.bind, p, "bad")
    )
    assert results[0] == (True, None)
    handled, status = results[1]
    assert handled and status is not None and status.code is Code.Error
    assert status.message() == "cannot bind there"
    good = {"PodName": "b1", "PodNamespace": "default", "PodUID": p.uid, "Node": "good"}
    assert good in fake.received["bind"]
    # Not interested: the Bind plugins run instead.
    gpu_only = Extenders(
        [HTTPExtender(fake.config(bind_verb="bind", managed_resources=(ExtenderManagedResource("x.io/y"),)))]
    )
    assert gpu_only.bind(p, "good") == (False, None)
    assert threading.active_count() >= 1
    await extenders.close()


async def test_preemption_converts_meta_victims_back_to_pods(fake: FakeExtender) -> None:
    v1 = make_pod("v1", node_name="n1")
    v2 = make_pod("v2", node_name="n1")

    async def preempt(body: dict[str, Any]) -> Any:
        assert body["NodeNameToVictims"] is None
        assert body["NodeNameToMetaVictims"]["n1"]["Pods"] == [
            {"UID": v1["metadata"]["uid"]},
            {"UID": v2["metadata"]["uid"]},
        ]
        return {
            "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": v2["metadata"]["uid"]}], "NumPDBViolations": 0}}
        }

    fake.handlers["preempt"] = preempt
    extenders = Extenders([HTTPExtender(fake.config(preempt_verb="preempt", node_cache_capable=True))])
    out = await extenders.process_preemption(
        pod(), {"n1": Victims([v1, v2], 1)}, lambda n: [v1, v2] if n == "n1" else None
    )
    assert out == {"n1": Victims([v2], 0)}
    with pytest.raises(ExtenderError, match="claims to preempt pod"):
        await extenders.process_preemption(pod(), {"n1": Victims([v1, v2], 1)}, lambda n: [v1])
    await extenders.close()


# --- the algorithm with extenders --------------------------------------------------------------------
async def test_fit_error_shows_extender_reasons_and_blames_extender(fake: FakeExtender) -> None:
    fake.handlers["filter"] = await keep(set(), unresolvable=True)
    setup = Setup([make_node("a"), make_node("b")])
    extenders = Extenders([HTTPExtender(fake.config(filter_verb="filter"))])
    setup.cache.update_snapshot(setup.snapshot)
    with pytest.raises(FitError) as info:
        await setup.algorithm.schedule_pod_with_extenders(
            setup.fwk, CycleState(), pod(), setup.snapshot, extenders
        )
    assert info.value.message() == "0/2 nodes are available: 1 a is not welcome, 1 b is not welcome."
    assert EXTENDER_NAME in info.value.diagnosis.unschedulable_plugins
    await extenders.close()


async def test_extender_scores_decide_among_equal_nodes(fake: FakeExtender) -> None:
    async def prefer_c(body: dict[str, Any]) -> Any:
        return [
            {"Host": n["metadata"]["name"], "Score": 10 if n["metadata"]["name"] == "c" else 0}
            for n in body["Nodes"]["items"]
        ]

    fake.handlers["prio"] = prefer_c
    setup = Setup([make_node("a"), make_node("b"), make_node("c"), make_node("d")])
    extenders = Extenders([HTTPExtender(fake.config(prioritize_verb="prio", weight=1))])
    for i in range(6):
        setup.cache.update_snapshot(setup.snapshot)
        result = await setup.algorithm.schedule_pod_with_extenders(
            setup.fwk, CycleState(), pod(f"p{i}"), setup.snapshot, extenders
        )
        assert result.node_name == "c"
    await extenders.close()


# --- preemptVerb in the scheduling cycle (upstream's callExtenders) ------------------------------------


def _preemption_env(make_env: MakeEnv, extender: HTTPExtender) -> CoreEnv:
    """n1 holds two priority-10 pods, n2 two priority-50 ones: the dry run alone picks n1."""
    env = make_env([make_node("n1", cpu="2"), make_node("n2", cpu="2")])
    handlers = EventHandlers(queue=env.queue, cache=env.cache, profiles=[PROFILE])
    for name, node, priority in (("a1", "n1", 10), ("a2", "n1", 10), ("b1", "n2", 50), ("b2", "n2", 50)):
        handlers.on_pod_add(running(name, node, "1", priority))
    env.sched.extenders = Extenders([extender])
    env.queue.add(with_priority(make_pod("vip", cpu="1"), 100))
    return env


async def _preempt_once(env: CoreEnv) -> None:
    qpi = env.queue.pop_nowait()
    assert qpi is not None
    await env.sched.schedule_one_with_extenders(qpi)
    await wait_for(lambda: env.sched.preemption.in_flight == 0)


async def test_preempt_verb_may_move_preemption_to_another_node(
    fake: FakeExtender, make_env: MakeEnv
) -> None:
    async def only_n2(body: dict[str, Any]) -> Any:
        b2 = next(p for p in body["NodeNameToVictims"]["n2"]["Pods"] if p["metadata"]["name"] == "b2")
        return {
            "NodeNameToMetaVictims": {"n2": {"Pods": [{"UID": b2["metadata"]["uid"]}], "NumPDBViolations": 0}}
        }

    fake.handlers["preempt"] = only_n2
    env = _preemption_env(make_env, HTTPExtender(fake.config(preempt_verb="preempt")))
    await _preempt_once(env)
    [sent] = fake.received["preempt"]
    assert sent["Pod"]["metadata"]["name"] == "vip"
    assert sorted(sent["NodeNameToVictims"]) == ["n1", "n2"]  # every candidate of the dry run
    assert sent["NodeNameToMetaVictims"] is None
    assert deletes(env) == ["b2"]
    env.flush_writes()
    assert nominations(env, "vip") == ["n2"]
    await env.sched.extenders.close()


async def test_preempt_verb_leaving_no_candidate_evicts_nobody(fake: FakeExtender, make_env: MakeEnv) -> None:
    async def none(body: dict[str, Any]) -> Any:
        return {"NodeNameToMetaVictims": {}}

    fake.handlers["preempt"] = none
    env = _preemption_env(make_env, HTTPExtender(fake.config(preempt_verb="preempt")))
    await _preempt_once(env)
    assert fake.received["preempt"] and deletes(env) == []
    env.flush_writes()
    [failed] = [e for e in env.rest.events() if e["reason"] == "FailedScheduling"]
    assert "no candidate node for preemption" in failed["note"]
    await env.sched.extenders.close()


@pytest.mark.parametrize("ignorable", [False, True])
async def test_a_failing_preempt_verb_stops_preemption_unless_ignorable(
    fake: FakeExtender, make_env: MakeEnv, ignorable: bool
) -> None:
    async def broken(body: dict[str, Any]) -> Any:
        return web.Response(status=500)

    fake.handlers["preempt"] = broken
    env = _preemption_env(make_env, HTTPExtender(fake.config(preempt_verb="preempt", ignorable=ignorable)))
    await _preempt_once(env)
    assert fake.received["preempt"]
    # Ignorable: the dry run's choice stands (one of n1's pods); otherwise nobody is evicted.
    assert len(deletes(env)) == (1 if ignorable else 0)
    assert all(name in ("a1", "a2") for name in deletes(env))
    await env.sched.extenders.close()


async def test_an_uninterested_preempt_verb_is_not_called(fake: FakeExtender, make_env: MakeEnv) -> None:
    config = fake.config(
        preempt_verb="preempt", managed_resources=(ExtenderManagedResource("example.com/gpu", False),)
    )
    env = _preemption_env(make_env, HTTPExtender(config))
    await _preempt_once(env)
    assert "preempt" not in fake.received
    assert len(deletes(env)) == 1
    await env.sched.extenders.close()
