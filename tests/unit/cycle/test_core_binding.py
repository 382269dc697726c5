"""The binding pool: WaitOnPermit -> PreBind -> Bind -> PostBind off the loop, results back on the loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable

import pytest

from scheduler.client.api import BindingConflict
from scheduler.cycle.binding import BindingPool, BindingResult, BindingTask, Outcome
from scheduler.framework.api_error import ApiError
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import BindPlugin, PostBindPlugin, PreBindPlugin
from scheduler.framework.runtime import Framework, PluginSet
from scheduler.framework.status import Status
from scheduler.framework.types import PodInfo
from scheduling_queue.types import QueuedPodInfo
from tests.unit.fakes import make_pod, wait_for


class Binder:
    name = "FakeBinder"

    def __init__(self, result: Callable[[], Status | None] = lambda: None) -> None:
        self.result = result
        self.calls: list[tuple[str, str, str]] = []

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self.calls.append((pod.key, node_name, threading.current_thread().name))
        return self.result()


class PreBind:
    name = "FakePreBind"

    def __init__(self, status: Status | None = None) -> None:
        self.status = status
        self.calls = 0

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self.calls += 1
        return self.status


class PostBind:
    name = "FakePostBind"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.calls.append(node_name)


class Harness:
    def __init__(self, binder: Binder, pre_bind: PreBind | None = None, may_bind: bool = True) -> None:
        self.loop = asyncio.get_running_loop()
        self.binder = binder
        self.pre_bind = pre_bind or PreBind()
        self.post_bind = PostBind()
        binds: list[BindPlugin] = [binder]
        pre_binds: list[PreBindPlugin] = [self.pre_bind]
        post_binds: list[PostBindPlugin] = [self.post_bind]
        self.fwk = Framework(
            "py-scheduler",
            PluginSet(bind=binds, pre_bind=pre_binds, post_bind=post_binds),
            score_weights={},
        )
        self.results: list[BindingResult] = []
        self.result_threads: list[threading.Thread] = []
        self.allowed = may_bind
        self.pool = BindingPool(self.loop, self._on_done, max_workers=2, may_bind=lambda: self.allowed)

    def _on_done(self, result: BindingResult) -> None:
        self.result_threads.append(threading.current_thread())
        self.results.append(result)

    def task(self, name: str = "p", node: str = "n1") -> BindingTask:
        pod = PodInfo(make_pod(name, node_name=node))
        qpi = QueuedPodInfo(pod.pod, pod.key, 0.0, 0.0)
        return BindingTask(self.fwk, CycleState(), qpi, pod, node, 0.0)

    async def run(self, task: BindingTask) -> BindingResult:
        before = len(self.results)
        self.pool.submit(task)
        await wait_for(lambda: len(self.results) > before)
        return self.results[-1]


@pytest.fixture
async def harness_factory() -> AsyncIterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(*args: object, **kwargs: object) -> Harness:
        harness = Harness(*args, **kwargs)  # type: ignore[arg-type]
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.pool.shutdown()


async def test_bind_runs_on_a_pool_thread_and_the_result_comes_back_on_the_loop(
    harness_factory: Callable[..., Harness],
) -> None:
    harness = harness_factory(Binder())
    loop_thread = threading.current_thread()
    results = [await harness.run(harness.task(f"p{i}")) for i in range(3)]
    assert [r.outcome for r in results] == [Outcome.BOUND] * 3
    assert all(thread is loop_thread for thread in harness.result_threads)
    assert {thread for _, _, thread in harness.binder.calls} <= {"binding_0", "binding_1"}
    assert harness.post_bind.calls == ["n1"] * 3
    assert harness.pool.in_flight == 0


async def test_may_bind_false_abandons_without_calling_bind(harness_factory: Callable[..., Harness]) -> None:
    harness = harness_factory(Binder(), may_bind=False)
    result = await harness.run(harness.task())
    assert result.outcome is Outcome.ABANDONED
    assert harness.binder.calls == []
    assert harness.post_bind.calls == []


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (Status.unschedulable("volume not ready"), Outcome.REJECTED),
        (Status.as_error("csi timeout"), Outcome.ERROR),
    ],
)
async def test_prebind_failures(
    harness_factory: Callable[..., Harness], status: Status, outcome: Outcome
) -> None:
    harness = harness_factory(Binder(), PreBind(status))
    result = await harness.run(harness.task())
    assert result.outcome is outcome
    assert result.status is not None and result.status.plugin == "FakePreBind"
    assert harness.binder.calls == []


@pytest.mark.parametrize(
    ("bind_status", "outcome"),
    [
        (lambda: Status.as_error(BindingConflict(409, "already assigned")), Outcome.CONFLICT),
        (lambda: Status.as_error(ApiError(503, "unavailable")), Outcome.ERROR),
        (lambda: Status.as_error("plain error"), Outcome.ERROR),
        (lambda: Status.unschedulable("node went away"), Outcome.REJECTED),
    ],
)
async def test_bind_failures_are_classified(
    harness_factory: Callable[..., Harness], bind_status: Callable[[], Status], outcome: Outcome
) -> None:
    harness = harness_factory(Binder(bind_status))
    result = await harness.run(harness.task())
    assert result.outcome is outcome
    assert harness.post_bind.calls == []


async def test_a_crashing_binder_is_an_error_not_a_dead_thread(
    harness_factory: Callable[..., Harness],
) -> None:
    def crash() -> Status | None:
        raise ValueError("binder bug")

    harness = harness_factory(Binder(crash))
    result = await harness.run(harness.task("a"))
    assert result.outcome is Outcome.ERROR
    assert result.status is not None and isinstance(result.status.error, ValueError)
    harness.binder.result = lambda: None
    assert (await harness.run(harness.task("b"))).outcome is Outcome.BOUND


async def test_submit_after_shutdown_raises_and_keeps_the_count(
    harness_factory: Callable[..., Harness],
) -> None:
    harness = harness_factory(Binder())
    harness.pool.shutdown()
    with pytest.raises(RuntimeError):
        harness.pool.submit(harness.task())
    assert harness.pool.in_flight == 0
    assert await harness.pool.drain(timeout=0.1)


async def test_results_that_finish_together_reach_the_loop_in_one_drain(
    harness_factory: Callable[..., Harness],
) -> None:
    # Every bind finishes while the loop is blocked: their results must all arrive, in the order the
    # threads reported them, through fewer loop callbacks than results.
    harness = harness_factory(Binder())
    tasks = [harness.task(f"p{i}") for i in range(20)]
    for task in tasks:
        harness.pool.submit(task)
    while harness.pool.in_flight and len(harness.binder.calls) < len(tasks):
        threading.Event().wait(0.01)  # blocks the loop on purpose
    threading.Event().wait(0.05)
    await wait_for(lambda: len(harness.results) == len(tasks))
    assert {r.task.pod.key for r in harness.results} == {t.pod.key for t in tasks}
    assert all(r.outcome is Outcome.BOUND for r in harness.results)
    assert harness.pool.in_flight == 0
    assert harness.pool.drains < len(tasks)


async def test_a_failing_result_handler_does_not_lose_the_rest_of_the_batch(
    harness_factory: Callable[..., Harness],
) -> None:
    harness = harness_factory(Binder())
    delivered: list[str] = []

    def on_done(result: BindingResult) -> None:
        delivered.append(result.task.pod.key)
        if result.task.pod.key == "default/p0":
            raise RuntimeError("handler bug")

    harness.pool._on_done = on_done
    tasks = [harness.task(f"p{i}") for i in range(5)]
    for task in tasks:
        harness.pool.submit(task)
    while len(harness.binder.calls) < len(tasks):
        threading.Event().wait(0.01)
    await wait_for(lambda: len(delivered) == len(tasks))
    assert sorted(delivered) == [f"default/p{i}" for i in range(5)]
    assert harness.pool.in_flight == 0


async def test_prestarted_threads_take_a_burst_of_binds_without_starting_more(
    harness_factory: Callable[..., Harness],
) -> None:
    # A released gang: its binds are submitted together from the loop and run at once. After
    # prestart they run on threads that were already there, so submit() never started one.
    arrived = threading.Barrier(2, timeout=5.0)
    ran_on: list[threading.Thread] = []

    def bind_together() -> Status | None:
        ran_on.append(threading.current_thread())
        arrived.wait()
        return None

    harness = harness_factory(Binder(bind_together))
    assert await asyncio.to_thread(harness.pool.prestart)
    before = set(threading.enumerate())
    tasks = [harness.task(f"p{i}") for i in range(2)]
    for task in tasks:
        harness.pool.submit(task)
    await wait_for(lambda: len(harness.results) == len(tasks))
    assert [r.outcome for r in harness.results] == [Outcome.BOUND] * 2
    assert len(set(ran_on)) == 2
    assert set(ran_on) <= before


async def test_a_pod_whose_own_patch_is_on_the_wire_holds_no_binding_thread() -> None:
    """A released gang's waiter waits for its nominatedNodeName patch without a thread: with one
    binding thread, another pod binds meanwhile; the waiter binds once its patch has landed."""
    loop = asyncio.get_running_loop()
    binder = Binder()
    fwk = Framework("py-scheduler", PluginSet(bind=[binder]), score_weights={})
    landed: dict[str, Callable[[], None]] = {}
    waited: list[str] = []
    release = threading.Event()

    def after_patches(uid: str, then: Callable[[], None]) -> bool:
        if uid.endswith("waiter"):
            landed[uid] = then
            return False
        return True

    def before_bind(uid: str) -> None:
        # The recorder's blocking wait, as binding threads call it: here the waiter's patch would
        # still be on the wire unless its thread started only after it landed.
        if uid.endswith("waiter") and not release.is_set():
            waited.append(uid)
            release.wait(5)

    results: list[BindingResult] = []
    pool = BindingPool(
        loop, results.append, max_workers=1, before_bind=before_bind, after_patches=after_patches
    )

    def task(name: str) -> BindingTask:
        pod = PodInfo(make_pod(name, uid=f"uid-{name}", node_name="n1"))
        return BindingTask(fwk, CycleState(), QueuedPodInfo(pod.pod, pod.key, 0.0, 0.0), pod, "n1", 0.0)

    try:
        pool.submit(task("waiter"))
        pool.submit(task("other"))
        await wait_for(lambda: len(results) == 1)
        assert results[0].task.pod.key == "default/other" and waited == []
        assert pool.in_flight == 1 and pool.is_binding("uid-waiter")
        release.set()
        threading.Thread(target=landed["uid-waiter"]).start()  # the writer thread's callback
        await wait_for(lambda: len(results) == 2)
        assert [r.outcome for r in results] == [Outcome.BOUND] * 2
        assert pool.in_flight == 0
    finally:
        release.set()
        pool.shutdown()


async def test_a_deferred_bind_starts_at_the_limit_if_its_patch_never_reports() -> None:
    loop = asyncio.get_running_loop()
    binder = Binder()
    fwk = Framework("py-scheduler", PluginSet(bind=[binder]), score_weights={})
    results: list[BindingResult] = []
    pool = BindingPool(
        loop, results.append, max_workers=1, after_patches=lambda uid, then: False, patch_wait_limit=0.05
    )
    pod = PodInfo(make_pod("p", node_name="n1"))
    try:
        pool.submit(BindingTask(fwk, CycleState(), QueuedPodInfo(pod.pod, pod.key, 0.0, 0.0), pod, "n1", 0.0))
        await wait_for(lambda: len(results) == 1)
        assert results[0].outcome is Outcome.BOUND
    finally:
        pool.shutdown()
