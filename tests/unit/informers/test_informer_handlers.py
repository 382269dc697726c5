"""SharedInformer handler delivery, relist reconciliation, resync and the factory, on a fake server."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from informers import (
    NODE_NAME_INDEX,
    NODES,
    PODS,
    DeletedFinalStateUnknown,
    InformerFactory,
    SharedInformer,
    index_by_node_name,
    strip_managed_fields,
)
from informers import handlers as handlers_module
from informers.handlers import Listener, ResourceEventHandlerFuncs
from informers.testing import FakeApiServer, FakeClock, connection_refused, eventually, make_pod


def name(obj: Any) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return "tombstone:" + obj.key
    return str(obj["metadata"]["name"])


class Recorder:
    """Records (event, name) and checks the store already reflects each event when it is delivered."""

    def __init__(self, informer: SharedInformer | None = None) -> None:
        self.events: list[tuple[str, ...]] = []
        self.informer = informer
        self.store_lagged: list[str] = []

    def _check(self, obj: Any, present: bool) -> None:
        if self.informer is None:
            return
        key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else self.informer.store.key_of(obj)
        stored = self.informer.store.get(key)
        if present and stored is None:
            self.store_lagged.append(key)

    def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
        self._check(obj, True)
        self.events.append(("add", name(obj), "initial" if is_initial_list else "live"))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._check(new, True)
        self.events.append(
            ("update", name(new), old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])
        )

    def on_delete(self, obj: Any) -> None:
        self.events.append(("delete", name(obj)))


async def started(server: FakeApiServer, informer: SharedInformer) -> None:
    informer.start()
    assert await informer.wait_for_sync(5)
    await eventually(lambda: server.open_watches >= 1)


async def test_initial_list_then_add_update_delete_in_order_store_first() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a"))
    informer = SharedInformer(server, PODS, clock=FakeClock())
    rec = Recorder(informer)
    reg = informer.add_event_handler(rec)
    await started(server, informer)
    b = server.create(PODS, make_pod("b"))
    b2 = server.update(PODS, b | {"spec": {"nodeName": "n1"}})
    server.delete(PODS, "default/a")
    await eventually(lambda: len(rec.events) == 4)
    assert rec.events == [
        ("add", "a", "initial"),
        ("add", "b", "live"),
        ("update", "b", b["metadata"]["resourceVersion"], b2["metadata"]["resourceVersion"]),
        ("delete", "a"),
    ]
    assert rec.store_lagged == []
    assert reg.has_synced()
    assert sorted(informer.store.keys()) == ["default/b"]
    await informer.stop()


async def test_indexes_follow_updates() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a", node="n1"))
    informer = SharedInformer(server, PODS, indexers={NODE_NAME_INDEX: index_by_node_name}, clock=FakeClock())
    await started(server, informer)
    assert [name(p) for p in informer.store.by_index(NODE_NAME_INDEX, "n1")] == ["a"]
    a = server.get(PODS, "default/a")
    assert a is not None
    server.update(PODS, a | {"spec": {"nodeName": "n2"}})
    await eventually(lambda: informer.store.index_keys(NODE_NAME_INDEX, "n2") == ["default/a"])
    assert informer.store.by_index(NODE_NAME_INDEX, "n1") == []
    assert informer.store.by_index("namespace", "default")[0]["metadata"]["name"] == "a"
    await informer.stop()


async def test_relist_after_gone_reconciles_with_tombstones_adds_and_updates() -> None:
    server = FakeApiServer()
    for n in ("keep", "change", "vanish", "recreate"):
        server.create(PODS, make_pod(n))
    informer = SharedInformer(server, PODS, clock=FakeClock())
    rec = Recorder(informer)
    informer.add_event_handler(rec)
    await started(server, informer)
    await eventually(lambda: len(rec.events) == 4)
    rec.events.clear()
    old_recreate = server.get(PODS, "default/recreate")
    assert old_recreate is not None

    # The informer is disconnected while things change, and the history is compacted away.
    server.watch_failures.extend([connection_refused()])
    server.disconnect(connection_refused())
    await eventually(lambda: server.open_watches == 0)
    change = server.get(PODS, "default/change")
    assert change is not None
    server.update(PODS, change | {"status": {"phase": "Running"}})
    server.delete(PODS, "default/vanish")
    server.delete(PODS, "default/recreate")
    server.create(PODS, make_pod("recreate"))
    server.create(PODS, make_pod("new"))
    server.compact()
    await eventually(lambda: len(server.list_calls) == 2 and server.open_watches == 1)
    await eventually(lambda: len(rec.events) == 5)

    kinds = sorted(rec.events, key=str)
    assert ("delete", "tombstone:default/vanish") in kinds
    assert ("delete", "tombstone:default/recreate") in kinds
    assert ("add", "recreate", "live") in kinds
    assert ("add", "new", "live") in kinds
    assert any(e[0] == "update" and e[1] == "change" for e in kinds)
    assert not any(e[1] == "keep" for e in kinds), "unchanged objects are not re-delivered on relist"
    assert informer.store.items() == server.objects(PODS) | {}  # same content
    assert {k: v["metadata"]["resourceVersion"] for k, v in informer.store.items().items()} == {
        k: v["metadata"]["resourceVersion"] for k, v in server.objects(PODS).items()
    }
    await informer.stop()


async def test_failing_handler_is_counted_and_does_not_stop_delivery_or_others() -> None:
    server = FakeApiServer()
    server._collection(PODS)
    informer = SharedInformer(server, PODS, clock=FakeClock())
    good = Recorder()
    seen_by_bad: list[str] = []

    def bad_add(obj: dict[str, Any], initial: bool) -> None:
        seen_by_bad.append(name(obj))
        raise RuntimeError("boom")

    bad = informer.add_event_handler(on_add=bad_add)
    informer.add_event_handler(good)
    before = (
        REGISTRY.get_sample_value("py_scheduler_informer_handler_errors_total", {"resource": "pods"}) or 0
    )
    await started(server, informer)
    for i in range(5):
        server.create(PODS, make_pod(f"p{i}"))
    await eventually(lambda: len(good.events) == 5 and len(seen_by_bad) == 5)
    assert bad.errors == 5
    after = REGISTRY.get_sample_value("py_scheduler_informer_handler_errors_total", {"resource": "pods"})
    assert after == before + 5
    await informer.stop()


async def test_slow_async_handler_does_not_stall_other_handlers_or_the_watch() -> None:
    server = FakeApiServer()
    server._collection(PODS)
    informer = SharedInformer(server, PODS, clock=FakeClock())
    release = asyncio.Event()
    slow_seen: list[str] = []

    async def slow_add(obj: dict[str, Any], initial: bool) -> None:
        slow_seen.append(name(obj))
        await release.wait()

    slow = informer.add_event_handler(on_add=slow_add)
    fast = Recorder()
    informer.add_event_handler(fast)
    await started(server, informer)
    for i in range(20):
        server.create(PODS, make_pod(f"p{i}"))
    await eventually(lambda: len(fast.events) == 20 and len(informer.store) == 20)
    assert slow_seen == ["p0"]
    assert slow.pending == 19
    release.set()
    await eventually(lambda: len(slow_seen) == 20)
    assert slow_seen == [f"p{i}" for i in range(20)]
    await informer.stop()


async def test_filter_turns_updates_into_adds_and_deletes() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("assigned", node="n1"))
    server.create(PODS, make_pod("pending"))
    informer = SharedInformer(server, PODS, clock=FakeClock())
    unassigned = Recorder()
    informer.add_event_handler(unassigned, filter_func=lambda p: not p["spec"].get("nodeName"))
    await started(server, informer)
    pending = server.get(PODS, "default/pending")
    assert pending is not None
    bound = server.update(PODS, pending | {"spec": {"nodeName": "n2"}})
    server.update(PODS, bound | {"spec": {}})
    await eventually(lambda: len(unassigned.events) == 3)
    assert [e[:2] for e in unassigned.events] == [
        ("add", "pending"),
        ("delete", "pending"),
        ("add", "pending"),
    ]
    await informer.stop()


async def test_raising_filter_is_counted_and_skips() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a"))
    informer = SharedInformer(server, PODS, clock=FakeClock())
    rec = Recorder()

    def bad_filter(obj: dict[str, Any]) -> bool:
        raise KeyError("nope")

    reg = informer.add_event_handler(rec, filter_func=bad_filter)
    await started(server, informer)
    await eventually(reg.has_synced)
    assert rec.events == [] and reg.errors == 1
    await informer.stop()


async def test_late_handler_gets_store_as_initial_adds_and_syncs() -> None:
    server = FakeApiServer()
    for i in range(3):
        server.create(PODS, make_pod(f"p{i}"))
    informer = SharedInformer(server, PODS, clock=FakeClock())
    await started(server, informer)
    rec = Recorder()
    reg = informer.add_event_handler(rec)
    assert await reg.wait_synced(5)
    assert sorted(rec.events) == [("add", f"p{i}", "initial") for i in range(3)]
    server.create(PODS, make_pod("p3"))
    await eventually(lambda: len(rec.events) == 4)
    informer.remove_event_handler(reg)
    server.create(PODS, make_pod("p4"))
    await eventually(lambda: "default/p4" in informer.store)
    await asyncio.sleep(0)
    assert len(rec.events) == 4
    await informer.stop()


async def test_async_and_sync_handlers_both_supported() -> None:
    server = FakeApiServer()
    server.create(NODES, {"metadata": {"name": "n"}})
    informer = SharedInformer(server, NODES, clock=FakeClock())
    got: list[str] = []

    async def on_add(obj: dict[str, Any], initial: bool) -> None:
        await asyncio.sleep(0)
        got.append("async:" + name(obj))

    informer.add_event_handler(on_add=on_add)
    informer.add_event_handler(on_add=lambda obj, initial: got.append("sync:" + name(obj)))
    await started(server, informer)
    await eventually(lambda: len(got) == 2)
    assert sorted(got) == ["async:n", "sync:n"]
    await informer.stop()


async def test_periodic_resync_delivers_identical_updates() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a"))
    clock = FakeClock(auto_advance=False)
    informer = SharedInformer(server, PODS, clock=clock, resync_period=30.0)
    rec = Recorder()
    informer.add_event_handler(rec)
    await started(server, informer)
    await eventually(lambda: clock.waiting == 1)
    rv = server.get(PODS, "default/a")["metadata"]["resourceVersion"]  # type: ignore[index]
    clock.advance(30.0)
    await eventually(lambda: len(rec.events) == 2)
    assert rec.events[1] == ("update", "a", rv, rv)
    await informer.stop()


async def test_transform_applies_before_store_and_handlers() -> None:
    server = FakeApiServer()
    first = make_pod("a")
    first["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    server.create(PODS, first)
    informer = SharedInformer(server, PODS, clock=FakeClock(), transform=strip_managed_fields)
    rec = Recorder()
    seen: list[dict[str, Any]] = []
    informer.add_event_handler(on_add=lambda obj, initial: seen.append(obj))
    informer.add_event_handler(rec)
    await started(server, informer)
    second = make_pod("b")
    second["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    server.create(PODS, second)
    await eventually(lambda: len(seen) == 2)
    assert all("managedFields" not in o["metadata"] for o in informer.store.list())
    assert all("managedFields" not in o["metadata"] for o in seen)
    await informer.stop()


async def test_factory_shares_informers_and_waits_for_sync() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a"))
    server.create(NODES, {"metadata": {"name": "n"}})
    factory = InformerFactory(server, clock=FakeClock())
    pods = factory.informer_for(PODS)
    assert factory.informer_for(PODS) is pods
    assert factory.informer_for(PODS, field_selector="spec.nodeName=") is not pods
    nodes = factory.informer_for(NODES, indexers={"zone": lambda n: []})
    assert factory.informer_for(NODES, indexers={"zone": lambda n: [], "x": lambda n: []}) is nodes
    assert set(nodes.store.index_names()) == {"zone", "x"}
    async with factory:
        assert await factory.wait_for_cache_sync(5)
        assert factory.unsynced() == []
        assert [name(p) for p in pods.store.list()] == ["a"]
    assert not pods.started


async def test_wait_for_cache_sync_times_out_when_list_keeps_failing() -> None:
    server = FakeApiServer()
    server._collection(PODS)
    server.list_failures.extend(connection_refused() for _ in range(10_000))
    factory = InformerFactory(server, clock=FakeClock(auto_advance=False))
    informer = factory.informer_for(PODS)
    factory.start()
    assert not await factory.wait_for_cache_sync(0.05)
    assert factory.unsynced() == [informer]
    await factory.stop()


async def test_handlers_sync_waits_for_the_first_list_to_reach_every_handler() -> None:
    server = FakeApiServer()
    for i in range(3):
        server.create(PODS, make_pod(f"p{i}"))
    server.create(NODES, {"metadata": {"name": "n"}})
    factory = InformerFactory(server, clock=FakeClock())
    gate = asyncio.Event()
    delivered: list[str] = []

    async def slow_add(obj: dict[str, Any], initial: bool) -> None:
        await gate.wait()
        delivered.append(name(obj))

    factory.informer_for(PODS).add_event_handler(on_add=slow_add)
    nodes = factory.informer_for(NODES)
    nodes.add_event_handler(on_add=lambda obj, initial: delivered.append(name(obj)))
    async with factory:
        # The stores hold the lists while the pod handler still waits on its first object.
        assert await factory.wait_for_cache_sync(5)
        handlers = asyncio.ensure_future(factory.wait_for_handlers_sync(5))
        await eventually(lambda: delivered == ["n"])
        assert not handlers.done()
        assert nodes.handlers_synced()
        assert not factory.informer_for(PODS).handlers_synced()
        gate.set()
        assert await handlers
        assert sorted(delivered) == ["n", "p0", "p1", "p2"]
        assert factory.informer_for(PODS).handlers_synced()


async def test_handlers_sync_times_out_while_a_handler_is_stuck() -> None:
    server = FakeApiServer()
    server.create(PODS, make_pod("a"))
    factory = InformerFactory(server, clock=FakeClock())
    never = asyncio.Event()

    async def stuck(obj: dict[str, Any], initial: bool) -> None:
        await never.wait()

    factory.informer_for(PODS).add_event_handler(on_add=stuck)
    async with factory:
        assert await factory.wait_for_cache_sync(5)
        assert not await factory.wait_for_handlers_sync(0.05)


async def test_a_handler_without_some_kinds_queues_only_the_kinds_it_has() -> None:
    """A delete-only handler (the app's pending-write cleanup on pods) is not woken for adds and
    updates; filter-made deletes and adds still reach the handlers that have them, in order."""
    server = FakeApiServer()
    server.create(PODS, make_pod("pending"))
    informer = SharedInformer(server, PODS, clock=FakeClock())
    deletes: list[str] = []
    adds: list[str] = []
    delete_only = informer.add_event_handler(
        on_delete=lambda obj: deletes.append(name(obj)),
        filter_func=lambda p: not p["spec"].get("nodeName"),
    )
    add_only = informer.add_event_handler(
        on_add=lambda obj, initial: adds.append(name(obj)),
        filter_func=lambda p: not p["spec"].get("nodeName"),
    )
    await started(server, informer)
    assert await delete_only.wait_synced(5) and await add_only.wait_synced(5)
    pending = server.get(PODS, "default/pending")
    assert pending is not None
    bound = server.update(PODS, pending | {"spec": {"nodeName": "n2"}})  # leaves the filter: a delete
    server.update(PODS, bound | {"spec": {}})  # enters it again: an add
    server.create(PODS, make_pod("other"))
    await eventually(lambda: "default/other" in informer.store and len(adds) == 3)
    server.delete(PODS, "default/other")
    await eventually(lambda: len(deletes) == 2)
    assert deletes == ["pending", "other"]
    assert adds == ["pending", "pending", "other"]
    await informer.stop()


def test_a_listener_does_not_queue_kinds_its_handler_lacks() -> None:
    """Nothing is queued (so the listener's task is not woken) for a kind without a function."""
    filter_calls: list[str] = []

    def unassigned(pod: Any) -> bool:
        filter_calls.append(name(pod))
        return not pod["spec"].get("nodeName")

    listener = Listener(ResourceEventHandlerFuncs(on_delete=lambda obj: None), resource="pods")
    filtered = Listener(
        ResourceEventHandlerFuncs(on_delete=lambda obj: None), resource="pods", filter_func=unassigned
    )
    pending, bound = make_pod("a"), make_pod("a", node="n1")
    for target in (listener, filtered):
        target.add_all([pending, make_pod("b")], True)
        target.add(pending, False)
        target.update(pending, pending)
    assert listener.pending == filtered.pending == 0
    listener.update(pending, bound)
    filtered.update(pending, bound)  # leaves the filter: a delete, which the handler has
    listener.delete(bound)
    assert (listener.pending, filtered.pending) == (1, 1)
    # The filter still sees every event, as before.
    assert filter_calls == ["a", "b", "a", "a", "a", "a", "a"]


async def _idle(listener: Listener) -> None:
    """Started, and its task waiting for work (a few loop passes)."""
    listener.start()
    for _ in range(3):
        await asyncio.sleep(0)


async def test_an_idle_listener_calls_a_plain_handler_in_line() -> None:
    """No task wake-up per event: an idle listener with plain functions delivers during the call
    that enqueues, and the sync count includes it."""
    seen: list[str] = []
    listener = Listener(
        ResourceEventHandlerFuncs(on_add=lambda obj, initial: seen.append(name(obj))), resource="pods"
    )
    listener.mark_synced()
    await _idle(listener)
    listener.add(make_pod("a"), False)
    assert seen == ["a"] and listener.pending == 0
    listener.add(make_pod("b"), False)
    assert seen == ["a", "b"]
    await listener.stop()


async def test_a_listener_not_started_or_stopped_does_not_deliver_in_line() -> None:
    seen: list[str] = []
    listener = Listener(
        ResourceEventHandlerFuncs(on_add=lambda obj, initial: seen.append(name(obj))), resource="pods"
    )
    listener.add(make_pod("before-start"), False)
    assert seen == [] and listener.pending == 1
    await _idle(listener)
    assert seen == ["before-start"]
    await listener.stop()
    listener.add(make_pod("after-stop"), False)
    assert seen == ["before-start"] and listener.pending == 1


async def test_coroutine_handlers_go_through_the_task() -> None:
    seen: list[str] = []

    async def on_add(obj: Any, initial: bool) -> None:
        seen.append(name(obj))

    listener = Listener(ResourceEventHandlerFuncs(on_add=on_add), resource="pods")
    await _idle(listener)
    listener.add(make_pod("a"), False)
    assert seen == [] and listener.pending == 1
    await eventually(lambda: seen == ["a"])
    await listener.stop()


async def test_an_awaitable_returned_in_line_is_awaited_before_later_events() -> None:
    """A plain function may return an awaitable; the events after it wait for it, and the
    listener is synced only once it completed."""
    seen: list[str] = []
    release = asyncio.Event()

    async def slow(label: str) -> None:
        await release.wait()
        seen.append(label)

    def on_add(obj: Any, initial: bool) -> Any:
        if name(obj) == "slow":
            return slow("slow")
        seen.append(name(obj))
        return None

    listener = Listener(ResourceEventHandlerFuncs(on_add=on_add), resource="pods")
    await _idle(listener)
    listener.add(make_pod("slow"), True)
    listener.mark_synced()
    listener.add(make_pod("after"), False)
    for _ in range(5):
        await asyncio.sleep(0)
    assert seen == [] and not listener.has_synced()
    release.set()
    await eventually(lambda: seen == ["slow", "after"])
    assert listener.has_synced()
    await listener.stop()


async def test_an_event_a_handler_causes_is_delivered_after_the_current_one() -> None:
    """Re-entrant enqueue from inside an in-line call: queued behind, delivered by the task."""
    seen: list[str] = []
    listener: Listener

    def on_add(obj: Any, initial: bool) -> None:
        seen.append("start " + name(obj))
        if name(obj) == "outer":
            listener.add(make_pod("inner"), False)
        seen.append("end " + name(obj))

    listener = Listener(ResourceEventHandlerFuncs(on_add=on_add), resource="pods")
    await _idle(listener)
    listener.add(make_pod("outer"), False)
    listener.add(make_pod("next"), False)  # queued behind "inner", not called ahead of it
    assert seen == ["start outer", "end outer"]
    await eventually(lambda: len(seen) == 6)
    assert seen == ["start outer", "end outer", "start inner", "end inner", "start next", "end next"]
    await listener.stop()


async def test_a_burst_is_delivered_in_order_and_yields_the_loop() -> None:
    """At most _YIELD_EVERY events in line before the task takes over: a long synchronous burst
    (a relist's reconcile) leaves the loop room to run other tasks, and order holds."""
    seen: list[str] = []
    listener = Listener(
        ResourceEventHandlerFuncs(on_add=lambda obj, initial: seen.append(name(obj))), resource="pods"
    )
    await _idle(listener)
    names = [f"p{i}" for i in range(3 * handlers_module._YIELD_EVERY)]
    for pod_name in names:
        listener.add(make_pod(pod_name), False)
    assert seen == names[: handlers_module._YIELD_EVERY]
    await eventually(lambda: len(seen) == len(names))
    assert seen == names
    await listener.stop()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "update", "delete", "pass"]), st.booleans()), max_size=150))
def test_in_line_and_task_delivery_give_the_handler_the_same_sequence(steps: list[tuple[str, bool]]) -> None:
    """Random enqueues, loop passes and coroutine results: a listener that may deliver in line
    calls its handler with exactly the sequence a task-only listener does."""

    async def run(in_line: bool) -> list[tuple[str, str]]:
        calls: list[tuple[str, str]] = []

        async def later(kind: str, label: str) -> None:
            await asyncio.sleep(0)
            calls.append((kind + " done", label))

        def record(kind: str, label: str, awaits: bool) -> Any:
            calls.append((kind, label))
            return later(kind, label) if awaits else None

        awaiting: set[str] = set()
        listener = Listener(
            ResourceEventHandlerFuncs(
                on_add=lambda obj, initial: record("add", name(obj), name(obj) in awaiting),
                on_update=lambda old, new: record("update", name(new), name(new) in awaiting),
            ),
            resource="pods",
        )
        if not in_line:
            listener._sync_handlers = False
        await _idle(listener)
        for index, (kind, flag) in enumerate(steps):
            pod = make_pod(f"p{index}")
            if flag:
                awaiting.add(name(pod))
            if kind == "add":
                listener.add(pod, False)
            elif kind == "update":
                listener.update(pod, pod)
            elif kind == "delete":
                listener.delete(pod)  # no function for it: never delivered
            elif flag:
                await asyncio.sleep(0)
        await eventually(lambda: listener.pending == 0 and listener._returned is None)
        for _ in range(5):
            await asyncio.sleep(0)
        await listener.stop()
        return calls

    assert asyncio.run(run(True)) == asyncio.run(run(False))
