"""The framework runner (``scheduler.framework.runtime.Framework``) with hand-made plugins."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.cache import Snapshot
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import ReservePlugin
from scheduler.framework.podgroup import PodGroupInfo, PodGroupSchedulingFunc
from scheduler.framework.runtime import (
    ALL_EVENTS,
    MAX_PERMIT_WAIT,
    PRE_FILTER_NARROWING_KEY,
    Framework,
    PluginError,
    PluginSet,
    implemented_points,
)
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, NodeScore, PodInfo, PreFilterResult
from scheduling_queue import FakeClock, SchedulingQueue
from scheduling_queue.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueuedPodInfo,
    Resource,
    priority_sort_less,
)
from tests.unit.fakes import PROFILE, build_frameworks, make_node, make_pod

POD = PodInfo(make_pod("p"))
NODES = [NodeInfo(make_node(f"n{i}")) for i in range(3)]


def fwk(plugins: PluginSet, weights: dict[str, int] | None = None) -> Framework:
    return Framework("test", plugins, score_weights=weights or {})


class Narrow:
    def __init__(self, name: str, nodes: set[str] | None, status: Status | None = None) -> None:
        self.name = name
        self.nodes = nodes
        self.status = status

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        result = None if self.nodes is None else PreFilterResult(set(self.nodes))
        return result, self.status


class Gate:
    def __init__(
        self, name: str, deny: frozenset[str] = frozenset(), code: Code = Code.Unschedulable
    ) -> None:
        self.name = name
        self.deny = deny
        self.code = code
        self.calls: list[str] = []

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self.calls.append(node.name)
        if node.name in self.deny:
            return Status(self.code, [f"{self.name} says no"])
        return None


class ByName:
    """Scores n0=0, n1=10, n2=20; optionally normalizes by reversing."""

    def __init__(self, name: str, reverse: bool = False, bad: int | None = None) -> None:
        self.name = name
        self.reverse = reverse
        self.bad = bad

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        if self.bad is not None:
            return self.bad, None
        return int(node.name[1:]) * 10, None


class Reversed(ByName):
    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        top = max(s.score for s in scores)
        for s in scores:
            s.score = top - s.score
        return None


class BatchByName(ByName):
    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Sequence[int]:
        return [int(n.name[1:]) * 10 for n in nodes]

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        raise AssertionError("the batch path must be used")


class SkipPreScore:
    name = "ByName"

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        return Status.skip()


# --- PreFilter ---------------------------------------------------------------------------------------


def test_prefilter_skip_drops_that_plugins_filter() -> None:
    skipper = Narrow("A", None, Status.skip())
    gate_a, gate_b = Gate("A"), Gate("B")
    framework = fwk(PluginSet(pre_filter=[skipper], filter=[gate_a, gate_b]))
    state = CycleState()
    assert framework.run_pre_filter(state, POD, NODES) == (None, None)
    assert state.skip_filter_plugins == {"A"}
    assert [p.name for p in framework.filter_plugins_for(state)] == ["B"]
    assert [p.name for p in framework.filter_plugins_for(CycleState())] == ["A", "B"]


def test_prefilter_results_intersect() -> None:
    framework = fwk(PluginSet(pre_filter=[Narrow("A", {"n0", "n1"}), Narrow("B", {"n1", "n2"})]))
    state = CycleState()
    result, status = framework.run_pre_filter(state, POD, NODES)
    assert status is None
    assert result is not None and result.node_names == {"n1"}
    assert state.read(PRE_FILTER_NARROWING_KEY) == ["A", "B"]


def test_prefilter_empty_intersection_messages_match_upstream() -> None:
    one = fwk(PluginSet(pre_filter=[Narrow("NodeName", set())]))
    _, status = one.run_pre_filter(CycleState(), POD, NODES)
    assert status is not None and status.code is Code.UnschedulableAndUnresolvable
    assert status.message() == "node(s) didn't satisfy plugin NodeName"

    two = fwk(PluginSet(pre_filter=[Narrow("NodeName", {"n0"}), Narrow("NodeAffinity", {"n1"})]))
    _, status = two.run_pre_filter(CycleState(), POD, NODES)
    assert status is not None and status.code is Code.UnschedulableAndUnresolvable
    assert status.message() == "node(s) didn't satisfy plugin(s) [NodeAffinity NodeName] simultaneously"
    assert status.plugin == "NodeAffinity"


def test_prefilter_rejection_stops_and_names_the_plugin() -> None:
    later = Narrow("Later", {"n0"})
    framework = fwk(PluginSet(pre_filter=[Narrow("A", None, Status.unschedulable("nope")), later]))
    result, status = framework.run_pre_filter(CycleState(), POD, NODES)
    assert result is None
    assert status is not None and (status.plugin, status.message()) == ("A", "nope")


# --- Filter -----------------------------------------------------------------------------------------


def test_filters_stop_at_first_failure_and_name_the_plugin() -> None:
    a, b = Gate("A", deny=frozenset({"n1"})), Gate("B")
    framework = fwk(PluginSet(filter=[a, b]))
    state = CycleState()
    plugins = framework.filter_plugins_for(state)
    assert framework.run_filters(state, POD, NODES[0], plugins) is None
    status = framework.run_filters(state, POD, NODES[1], plugins)
    assert status is not None and (status.plugin, status.reasons) == ("A", ["A says no"])
    assert b.calls == ["n0"]


# --- Score ------------------------------------------------------------------------------------------


def test_scores_are_normalized_then_weighted_and_summed() -> None:
    framework = fwk(PluginSet(score=[ByName("Plain"), Reversed("Rev")]), weights={"Plain": 2, "Rev": 3})
    # Plain: 0,10,20 x2 ; Rev normalized: 20,10,0 x3
    assert framework.run_score(CycleState(), POD, NODES) == [60, 50, 40]


def test_unset_weight_counts_once() -> None:
    framework = fwk(PluginSet(score=[ByName("Plain")]))
    assert framework.run_score(CycleState(), POD, NODES) == [0, 10, 20]


def test_batch_score_path_is_used_when_offered() -> None:
    framework = fwk(PluginSet(score=[BatchByName("Batch")]))
    assert framework.run_score(CycleState(), POD, NODES) == [0, 10, 20]


def test_prescore_skip_drops_that_plugins_score() -> None:
    framework = fwk(PluginSet(pre_score=[SkipPreScore()], score=[ByName("ByName"), ByName("Other")]))
    state = CycleState()
    assert framework.run_pre_score(state, POD, NODES) is None
    assert state.skip_score_plugins == {"ByName"}
    assert framework.run_score(state, POD, NODES) == [0, 10, 20]


@pytest.mark.parametrize("bad", [-1, 101])
def test_out_of_range_scores_are_plugin_errors(bad: int) -> None:
    framework = fwk(PluginSet(score=[ByName("Bad", bad=bad)]))
    with pytest.raises(PluginError) as info:
        framework.run_score(CycleState(), POD, NODES)
    assert info.value.status.code is Code.Error
    assert info.value.status.plugin == "Bad"


def test_known_raw_scores_are_weighted_as_computed_ones_and_still_checked() -> None:
    framework = fwk(PluginSet(score=[ByName("Plain"), Reversed("Rev")]), weights={"Plain": 2, "Rev": 3})
    known = {"Plain": np.array([0, 10, 20], dtype=np.int64), "Rev": np.array([0, 10, 20], dtype=np.int64)}
    for in_range in (False, True):
        given = {name: values.copy() for name, values in known.items()}
        totals = framework.run_score_array(CycleState(), POD, NODES, given, raw_in_range=in_range)
        assert totals.tolist() == framework.run_score(CycleState(), POD, NODES) == [60, 50, 40]
    # Not vouched for: a known raw score out of range is the plugin's error, as a computed one.
    with pytest.raises(PluginError) as info:
        framework.run_score_array(CycleState(), POD, NODES, {"Plain": np.array([0, 101, 0], dtype=np.int64)})
    assert info.value.status.plugin == "Plain"


def test_a_normalizer_out_of_range_is_an_error_even_over_known_raw_scores() -> None:
    class Overshoot(ByName):
        def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
            for s in scores:
                s.score += 100
            return None

    framework = fwk(PluginSet(score=[Overshoot("Over")]))
    known = {"Over": np.array([0, 10, 20], dtype=np.int64)}
    with pytest.raises(PluginError) as info:
        framework.run_score_array(CycleState(), POD, NODES, known, raw_in_range=True)
    assert info.value.status.plugin == "Over"


def test_score_error_status_raises() -> None:
    class Failing:
        name = "Failing"

        def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
            return 0, Status.as_error("boom")

    with pytest.raises(PluginError, match="boom"):
        fwk(PluginSet(score=[Failing()])).run_score(CycleState(), POD, NODES)


# --- Reserve / Permit -------------------------------------------------------------------------------


class Recorder:
    def __init__(
        self, name: str, log: list[str], reserve: Status | None = None, fail_unreserve: bool = False
    ):
        self.name = name
        self.log = log
        self._reserve = reserve
        self.fail_unreserve = fail_unreserve

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self.log.append(f"reserve {self.name}")
        return self._reserve

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.log.append(f"unreserve {self.name}")
        if self.fail_unreserve:
            raise RuntimeError("unreserve failed")


def test_reserve_stops_at_failure_and_unreserve_runs_in_reverse_despite_errors() -> None:
    log: list[str] = []
    plugins: list[ReservePlugin] = [
        Recorder("a", log),
        Recorder("b", log, reserve=Status.unschedulable("full"), fail_unreserve=True),
        Recorder("c", log),
    ]
    framework = fwk(PluginSet(reserve=plugins))
    status = framework.run_reserve(CycleState(), POD, "n0")
    assert status is not None and status.plugin == "b"
    framework.run_unreserve(CycleState(), POD, "n0")
    assert log == ["reserve a", "reserve b", "unreserve c", "unreserve b", "unreserve a"]


class Permit:
    def __init__(self, name: str, status: Status | None, timeout: float = 0.0) -> None:
        self.name = name
        self.status = status
        self.timeout = timeout

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return self.status, self.timeout


def test_permit_wait_takes_the_shortest_timeout_and_names_its_plugin() -> None:
    wait = Status(Code.Wait)
    framework = fwk(
        PluginSet(permit=[Permit("slow", Status(Code.Wait), 30), Permit("ok", None), Permit("fast", wait, 5)])
    )
    status, timeout = framework.run_permit(CycleState(), POD, "n0")
    assert status is not None and status.code is Code.Wait and status.plugin == "fast"
    assert timeout == 5


def test_permit_wait_is_capped_at_fifteen_minutes() -> None:
    framework = fwk(PluginSet(permit=[Permit("long", Status(Code.Wait), 24 * 3600)]))
    assert framework.run_permit(CycleState(), POD, "n0")[1] == MAX_PERMIT_WAIT == 900


def test_permit_rejection_wins_over_wait() -> None:
    framework = fwk(
        PluginSet(
            permit=[Permit("w", Status(Code.Wait), 10), Permit("no", Status.unschedulable("gang incomplete"))]
        )
    )
    status, timeout = framework.run_permit(CycleState(), POD, "n0")
    assert status is not None and (status.code, status.plugin, timeout) == (Code.Unschedulable, "no", 0.0)


def test_permit_all_allow() -> None:
    framework = fwk(PluginSet(permit=[Permit("a", None), Permit("b", Status())]))
    assert framework.run_permit(CycleState(), POD, "n0") == (None, 0.0)


# --- binding side -----------------------------------------------------------------------------------


class Binder:
    def __init__(self, name: str, status: Status | None, log: list[str]) -> None:
        self.name = name
        self.status = status
        self.log = log

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self.log.append(self.name)
        return self.status


def test_bind_skip_passes_to_the_next_binder() -> None:
    log: list[str] = []
    framework = fwk(PluginSet(bind=[Binder("first", Status.skip(), log), Binder("second", None, log)]))
    assert framework.run_bind(CycleState(), POD, "n0") is None
    assert log == ["first", "second"]


def test_bind_with_every_binder_skipping_is_an_error() -> None:
    framework = fwk(PluginSet(bind=[Binder("only", Status.skip(), [])]))
    status = framework.run_bind(CycleState(), POD, "n0")
    assert status is not None and status.code is Code.Error


def test_bind_failure_names_the_plugin() -> None:
    framework = fwk(PluginSet(bind=[Binder("b", Status.as_error("409"), [])]))
    status = framework.run_bind(CycleState(), POD, "n0")
    assert status is not None and status.plugin == "b"


def test_prebind_skip_is_success_and_postbind_errors_are_swallowed() -> None:
    class PreBind:
        name = "pb"

        def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
            return Status.skip()

    class PostBind:
        name = "post"

        def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
            raise RuntimeError("post bind failed")

    framework = fwk(PluginSet(pre_bind=[PreBind()], post_bind=[PostBind()]))
    assert framework.run_pre_bind(CycleState(), POD, "n0") is None
    framework.run_post_bind(CycleState(), POD, "n0")


# --- queue side -------------------------------------------------------------------------------------


def test_default_queue_sort_is_priority_sort() -> None:
    assert fwk(PluginSet()).queue_sort_less() is priority_sort_less

    class Fifo:
        name = "Fifo"

        def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
            return a.timestamp < b.timestamp

    fifo = Fifo()
    assert fwk(PluginSet(queue_sort=[fifo])).queue_sort_less() == fifo.less


def test_the_default_profiles_queue_orders_by_the_tuple_key() -> None:
    # The configured PrioritySort hands over the function the queue recognises, so activeQ compares
    # (priority, timestamp) tuples in C instead of calling a plugin method per heap comparison.
    frameworks = build_frameworks(Snapshot, None, lambda: 0.0)
    less = frameworks[PROFILE].queue_sort_less()
    assert less is priority_sort_less
    queue = SchedulingQueue(clock=FakeClock(), less=less)
    assert queue._default_sort
    queue.close()


def test_plugins_without_registrations_hear_every_event() -> None:
    node_add = ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Add))

    class Registered:
        name = "Registered"

        def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
            return None

        def events_to_register(self) -> Sequence[ClusterEventWithHint]:
            return [node_add]

    events = fwk(PluginSet(filter=[Registered(), Gate("Plain")])).events_to_register()
    assert events == {"Registered": [node_add], "Plain": [ALL_EVENTS]}


def test_pre_enqueue_names_the_gating_plugin() -> None:
    class Gated:
        name = "Gates"

        def pre_enqueue(self, pod: PodInfo) -> Status | None:
            return Status.unschedulable("waiting for gates", resolvable=False)

    status = fwk(PluginSet(pre_enqueue=[Gated()])).run_pre_enqueue(POD)
    assert status is not None and status.plugin == "Gates"


def test_pre_enqueue_runs_the_last_gating_plugin_first_and_alone_while_it_gates() -> None:
    """v1.37.2's runPreEnqueuePluginsForPod: the pod's gating plugin first; while it still gates
    the others are not asked, and it stays the one named; the extension point says Success."""
    calls: list[str] = []
    points: list[tuple[str, str]] = []

    class Gate:
        def __init__(self, name: str) -> None:
            self.name = name

        def pre_enqueue(self, pod: PodInfo) -> Status | None:
            calls.append(self.name)
            return Status.unschedulable(f"{self.name} gates", resolvable=False)

    framework = Framework(
        "test",
        PluginSet(pre_enqueue=[Gate("A"), Gate("B"), Gate("C")]),
        score_weights={},
        observe_point=lambda point, status, seconds: points.append((point, status)),
    )
    status = framework.run_pre_enqueue(POD, "B")
    assert status is not None and status.plugin == "B"
    assert calls == ["B"]
    status = framework.run_pre_enqueue(POD)
    assert status is not None and status.plugin == "A"
    assert calls == ["B", "A"]
    # A gating plugin the profile no longer has: the chain in order.
    status = framework.run_pre_enqueue(POD, "Gone")
    assert status is not None and status.plugin == "A"
    assert points == [("PreEnqueue", "Success")] * 3


def test_implemented_points_by_method_name() -> None:
    both: Any = Reversed("x")
    assert implemented_points(both) == {"score"}
    assert implemented_points(Gate("g")) == {"filter"}


# --- PostFilter with a blocking call (BlockingPostFilterPlugin) ------------------------------------


class Writer:
    """A PostFilter plugin that hands the framework a blocking call (as DynamicResources' deallocation)."""

    name = "Writer"

    def __init__(self, answer: Status | None, *, write: bool = True, wait_for: Any = None) -> None:
        self.answer = answer
        self.write = write
        self.wait_for = wait_for  # a threading.Event the call blocks on
        self.threads: list[str] = []

    def post_filter_call(
        self, state: CycleState, pod: PodInfo, node_statuses: Any
    ) -> tuple[str | None, Status | None] | Any:
        if not self.write:
            return None, self.answer

        def call() -> tuple[str | None, Status | None]:
            import threading

            self.threads.append(threading.current_thread().name)
            if self.wait_for is not None and not self.wait_for.wait(5):
                return None, Status.as_error("the loop was blocked")
            return None, self.answer

        return call

    def post_filter(self, state: CycleState, pod: PodInfo, node_statuses: Any) -> Any:
        raise AssertionError("the framework calls post_filter_call")


class Preempt:
    name = "DefaultPreemption"

    def __init__(self) -> None:
        self.calls = 0

    def post_filter(self, state: CycleState, pod: PodInfo, node_statuses: Any) -> Any:
        self.calls += 1
        return None, Status.unschedulable("preemption: not helpful")


async def test_post_filter_pauses_for_a_blocking_call_and_resumes_with_the_next_plugin() -> None:
    import threading

    from scheduler.framework.runtime import PausedPostFilter

    writer, preempt = Writer(Status.unschedulable("deallocation of ResourceClaim completed")), Preempt()
    framework = fwk(PluginSet(post_filter=[writer, preempt]))
    outcome = framework.run_post_filter(CycleState(), POD, {})
    assert isinstance(outcome, PausedPostFilter)
    assert writer.threads == [] and preempt.calls == 0, "nothing ran past the pause"
    nominated, status = await framework.resume_post_filter(outcome)
    assert writer.threads and writer.threads[0] != threading.current_thread().name
    # Unschedulable goes on to the next plugin (upstream's RunPostFilterPlugins); reasons are joined.
    assert preempt.calls == 1
    assert nominated is None and status is not None
    assert (status.code, status.plugin) == (Code.Unschedulable, "Writer")
    assert status.message() == "deallocation of ResourceClaim completed, preemption: not helpful"


async def test_post_filter_blocking_call_error_stops_before_preemption() -> None:
    from scheduler.framework.runtime import PausedPostFilter

    writer, preempt = Writer(Status.as_error("409: conflict")), Preempt()
    framework = fwk(PluginSet(post_filter=[writer, preempt]))
    outcome = framework.run_post_filter(CycleState(), POD, {})
    assert isinstance(outcome, PausedPostFilter)
    nominated, status = await framework.resume_post_filter(outcome)
    assert preempt.calls == 0
    assert nominated is None and status is not None
    assert (status.code, status.plugin, status.message()) == (Code.Error, "Writer", "409: conflict")


def test_post_filter_without_a_write_stays_synchronous() -> None:
    writer, preempt = Writer(Status.unschedulable("still not schedulable"), write=False), Preempt()
    framework = fwk(PluginSet(post_filter=[writer, preempt]))
    outcome = framework.run_post_filter(CycleState(), POD, {})
    assert isinstance(outcome, tuple), "no pause when the plugin needs no write"
    _, status = outcome
    assert status is not None and status.message() == "still not schedulable, preemption: not helpful"


async def test_post_filter_blocking_call_leaves_the_loop_free() -> None:
    """The call waits for an event only the loop sets: it completes only if the loop keeps running."""
    import asyncio
    import threading

    from scheduler.framework.runtime import PausedPostFilter

    released = threading.Event()
    writer = Writer(Status.unschedulable("deallocation of ResourceClaim completed"), wait_for=released)
    framework = fwk(PluginSet(post_filter=[writer]))
    outcome = framework.run_post_filter(CycleState(), POD, {})
    assert isinstance(outcome, PausedPostFilter)
    asyncio.get_running_loop().call_later(0.05, released.set)
    _, status = await framework.resume_post_filter(outcome)
    assert status is not None and status.message() == "deallocation of ResourceClaim completed"


async def test_post_filter_with_extenders_awaits_a_blocking_call_too() -> None:
    writer, preempt = Writer(Status.unschedulable("deallocation of ResourceClaim completed")), Preempt()
    framework = fwk(PluginSet(post_filter=[writer, preempt]))
    extenders: Any = object()  # no plugin here consults them
    _, status = await framework.run_post_filter_with_extenders(CycleState(), POD, {}, extenders)
    assert writer.threads and preempt.calls == 1
    assert status is not None and status.code is Code.Unschedulable


# --- pod group points (GenericWorkload): RunPlacementFeasiblePlugins, RunPodGroupPostFilterPlugins ---
class Feasible:
    def __init__(self, name: str, status: Status | None) -> None:
        self.name = name
        self.status = status
        self.asked = 0

    def placement_feasible(
        self, state: CycleState, pod_group: Mapping[str, Any], scheduled: int, remaining: int
    ) -> Status | None:
        self.asked += 1
        return self.status

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return None, 0.0


def test_placement_feasible_waits_on_any_stops_at_unschedulable_and_names_the_plugin() -> None:
    waits = Feasible("Waits", Status(Code.Wait, ["not yet"]))
    refuses = Feasible("Refuses", Status.unschedulable("never"))
    after = Feasible("After", None)
    status = fwk(PluginSet(permit=[waits, refuses, after])).run_placement_feasible(CycleState(), {}, 0, 1)
    assert status is not None and (status.code, status.message(), status.plugin) == (
        Code.Unschedulable,
        "never",
        "Refuses",
    )
    assert after.asked == 0
    status = fwk(PluginSet(permit=[waits, after])).run_placement_feasible(CycleState(), {}, 0, 1)
    assert status is not None and (status.code, status.plugin) == (Code.Wait, "Waits")
    assert fwk(PluginSet(permit=[after])).run_placement_feasible(CycleState(), {}, 1, 0) is None
    odd = Feasible("Odd", Status(Code.Skip))
    status = fwk(PluginSet(permit=[odd])).run_placement_feasible(CycleState(), {}, 0, 1)
    assert status is not None and (status.code, status.message()) == (
        Code.Error,
        "unexpected status from PlacementFeasible plugin: Skip",
    )


class GroupPostFilter:
    def __init__(
        self, name: str, status: Status | None, nominations: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.status = status
        self.nominations = nominations

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None]:
        return None, None

    def pod_group_post_filter(
        self, state: CycleState, group: PodGroupInfo, schedule: PodGroupSchedulingFunc
    ) -> tuple[Mapping[str, str] | None, Status | None]:
        return self.nominations, self.status


def test_pod_group_post_filter_first_success_wins_and_unschedulable_reasons_add_up() -> None:
    group = PodGroupInfo({}, ())
    no = GroupPostFilter("No", Status.unschedulable("a"))
    also_no = GroupPostFilter("AlsoNo", Status.unschedulable("b"))
    yes = GroupPostFilter("Yes", None, {"ns/p": "n1"})
    framework = fwk(PluginSet(post_filter=[no, yes, also_no]))
    assert framework.run_pod_group_post_filter(CycleState(), group, lambda: ([], None)) == (
        {"ns/p": "n1"},
        Status(),
    )
    nominations, status = fwk(PluginSet(post_filter=[no, also_no])).run_pod_group_post_filter(
        CycleState(), group, lambda: ([], None)
    )
    assert nominations is None and (status.code, status.reasons, status.plugin) == (
        Code.Unschedulable,
        ["a", "b"],
        "No",
    )
    broken = GroupPostFilter("Broken", Status.as_error("boom"))
    _, status = fwk(PluginSet(post_filter=[broken, yes])).run_pod_group_post_filter(
        CycleState(), group, lambda: ([], None)
    )
    assert (status.code, status.message()) == (
        Code.Error,
        'error in "Broken" PodGroupPostFilter plugins: boom',
    )


def _plain_pre_enqueue(
    plugins: Sequence[Any],
    pod: PodInfo,
    rng: Any,
    percent: int,
    points: list[tuple[str, str]],
    samples: list[tuple[str, str, str]],
    gating_plugin: str = "",
) -> Status | None:
    """The PreEnqueue chain written out as v1.37.2's runPreEnqueuePluginsForPod: one sampling draw per
    call, the last gating plugin first (alone while it still gates), each plugin timed when sampled,
    the first rejection named after its plugin, one extension-point observation, always Success."""
    record = rng.randrange(100) < percent
    result: Status | None = None
    gating = [p for p in plugins if p.name == gating_plugin]
    for plugin in [*gating, *(p for p in plugins if p.name != gating_plugin)]:
        status = plugin.pre_enqueue(pod)
        if record:
            samples.append((plugin.name, "PreEnqueue", "Success" if status is None else status.code.name))
        if status is not None and status.code is not Code.Success:
            result = status.with_plugin(plugin.name)
            break
    points.append(("PreEnqueue", "Success"))
    return result


@pytest.mark.parametrize("seed", range(20))
def test_pre_enqueue_observes_what_the_plain_chain_does(seed: int) -> None:
    """Random chains of passing, explicitly succeeding and rejecting plugins, asked many times with a
    seeded sampling draw and the last gating plugin: the same verdicts, extension-point observations
    and plugin samples (labels and order) as the plain chain, and the draw advanced alike."""
    rng = random.Random(seed)

    class Answer:
        def __init__(self, name: str, answers: list[Status | None]) -> None:
            self.name = name
            self.answers = answers
            self.calls = 0

        def pre_enqueue(self, pod: PodInfo) -> Status | None:
            answer = self.answers[self.calls % len(self.answers)]
            self.calls += 1
            # A fresh status each call, as plugins make them (with_plugin names it).
            return None if answer is None else Status(answer.code, list(answer.reasons))

    def chain() -> list[Answer]:
        choices = [
            None,
            Status(Code.Success),
            Status.unschedulable("no", resolvable=False),
            Status.unschedulable("x"),
        ]
        r = random.Random(seed * 7)
        return [Answer(f"P{i}", [r.choice(choices) for _ in range(5)]) for i in range(r.randint(1, 4))]

    percent = rng.choice([0, 10, 50, 100])
    points: list[tuple[str, str]] = []
    samples: list[tuple[str, str, str]] = []
    framework = Framework(
        "test",
        PluginSet(pre_enqueue=chain()),  # type: ignore[arg-type]
        score_weights={},
        observe_point=lambda point, status, seconds: points.append((point, status)),
        observe_plugin=lambda plugin, point, status, seconds: samples.append((plugin, point, status)),
        rng=random.Random(seed),
        plugin_metrics_sample_percent=percent,
    )
    plain_points: list[tuple[str, str]] = []
    plain_samples: list[tuple[str, str, str]] = []
    plain_plugins = chain()
    plain_rng = random.Random(seed)
    gating = ""
    for _ in range(60):
        # As the queue asks: with the plugin that gated the pod last time.
        got = framework.run_pre_enqueue(POD, gating)
        want = _plain_pre_enqueue(plain_plugins, POD, plain_rng, percent, plain_points, plain_samples, gating)
        assert (got is None) == (want is None)
        if got is not None and want is not None:
            assert (got.code, got.reasons, got.plugin) == (want.code, want.reasons, want.plugin)
        gating = got.plugin if got is not None else ""
    assert points == plain_points
    assert samples == plain_samples
    assert framework._rng.random() == plain_rng.random()
