"""Informer events -> queue and cache (``scheduler.app.event_handlers``), as upstream's
``eventhandlers.go``."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from informers import PODS, DeletedFinalStateUnknown, SharedInformer
from informers.testing import FakeApiServer, eventually
from scheduler.app.event_handlers import EventHandlers, node_update_actions
from scheduler.cache import SchedulerCache
from scheduler.cycle.profiles import queue_hints
from scheduler.framework.resources import pod_request_amounts
from scheduler.framework.types import PodInfo
from scheduling_queue import EVENT_UNSCHEDULED_POD_ADD, FakeClock, SchedulingQueue
from scheduling_queue.types import ActionType, QueuedPodInfo
from tests.unit.fakes import PROFILE, build_frameworks, make_node, make_pod


class Env:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.cache = SchedulerCache()
        frameworks = build_frameworks(self.cache.snapshot, None, self.clock.now)
        self.queue = SchedulingQueue(
            clock=self.clock, hints=queue_hints(frameworks), pod_requests=pod_request_amounts
        )
        self.handlers = EventHandlers(queue=self.queue, cache=self.cache, profiles=[PROFILE])

    def make_unschedulable(self, pod: dict[str, Any], *plugins: str) -> QueuedPodInfo:
        """Pop ``pod`` and fail it as rejected by ``plugins``: it lands in unschedulablePods."""
        self.handlers.on_pod_add(pod)
        qpi = self.queue.pop_nowait()
        assert qpi is not None
        qpi.unschedulable_plugins = set(plugins)
        self.queue.add_unschedulable_if_not_present(qpi)
        assert self.queue.where(qpi.key) == "unschedulable"
        return qpi


@pytest.fixture
def env() -> Iterator[Env]:
    made = Env()
    yield made
    made.queue.close()


def bumped(obj: dict[str, Any], mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    mutate(new)
    new["metadata"]["resourceVersion"] = str(int(new["metadata"]["resourceVersion"]) + 1000)
    return new


# --- pods -------------------------------------------------------------------------------------------


def test_unassigned_pod_of_our_profile_goes_to_the_queue(env: Env) -> None:
    env.handlers.on_pod_add(make_pod("mine"))
    assert env.queue.where("default/mine") == "active"
    assert env.cache.get_pod("default/mine") is None


def test_unassigned_pod_of_another_scheduler_is_ignored(env: Env) -> None:
    env.handlers.on_pod_add(make_pod("theirs", scheduler_name="default-scheduler"))
    assert env.queue.where("default/theirs") is None
    assert env.cache.get_pod("default/theirs") is None


@pytest.mark.parametrize("scheduler_name", [PROFILE, "default-scheduler", "someone-else"])
def test_assigned_pods_of_any_scheduler_count_in_the_cache(env: Env, scheduler_name: str) -> None:
    env.handlers.on_node_add(make_node("n1"))
    env.handlers.on_pod_add(make_pod("bound", cpu="1", node_name="n1", scheduler_name=scheduler_name))
    assert env.queue.where("default/bound") is None
    info = env.cache.node_info("n1")
    assert info is not None and info.requested.milli_cpu == 1000


def test_binding_moves_a_pod_from_queue_to_cache(env: Env) -> None:
    env.handlers.on_node_add(make_node("n1"))
    pod = make_pod("p", cpu="1")
    env.handlers.on_pod_add(pod)
    bound = bumped(pod, lambda p: p["spec"].__setitem__("nodeName", "n1"))
    env.handlers.on_pod_update(pod, bound)
    assert env.queue.where("default/p") is None
    cached = env.cache.get_pod("default/p")
    assert cached is not None and cached.node_name == "n1"


def test_binding_confirms_an_assumed_pod(env: Env) -> None:
    env.handlers.on_node_add(make_node("n1"))
    pod = make_pod("p", cpu="1")
    env.handlers.on_pod_add(pod)
    qpi = env.queue.pop_nowait()
    assert qpi is not None
    env.cache.assume_pod(PodInfo(pod), "n1")
    env.handlers.on_pod_update(pod, bumped(pod, lambda p: p["spec"].__setitem__("nodeName", "n1")))
    assert not env.cache.is_assumed("default/p")
    assert env.cache.get_pod("default/p") is not None


def _assumed_after_its_attempt(env: Env) -> dict[str, Any]:
    """A pod popped, assumed on n1 and its attempt done: bound by the API server, not yet seen bound."""
    env.handlers.on_node_add(make_node("n1"))
    pod = make_pod("p", cpu="1")
    env.handlers.on_pod_add(pod)
    qpi = env.queue.pop_nowait()
    assert qpi is not None
    env.cache.assume_pod(PodInfo(pod), "n1")
    env.queue.done(qpi)
    return pod


def test_an_assumed_pods_late_status_update_is_ignored_as_upstream(env: Env) -> None:
    # A gang waiter's nominatedNodeName write, seen after its bind returned: no new attempt.
    pod = _assumed_after_its_attempt(env)
    nominated = bumped(pod, lambda p: p.setdefault("status", {}).__setitem__("nominatedNodeName", "n1"))
    env.handlers.on_pod_update(pod, nominated)
    assert env.queue.where("default/p") is None
    assert env.queue.pop_nowait() is None
    assert env.queue.nominator.nominated_pods_for_node("n1") == []
    assert env.cache.is_assumed("default/p")


def test_an_assumed_pods_update_during_its_attempt_still_reaches_the_queue(env: Env) -> None:
    env.handlers.on_node_add(make_node("n1"))
    pod = make_pod("p", cpu="1")
    env.handlers.on_pod_add(pod)
    qpi = env.queue.pop_nowait()
    assert qpi is not None
    env.cache.assume_pod(PodInfo(pod), "n1")
    newer = bumped(pod, lambda p: p["metadata"].__setitem__("labels", {"a": "b"}))
    env.handlers.on_pod_update(pod, newer)
    assert env.queue.in_flight_pods() == [newer]  # a requeue after a failed bind takes this version


def test_a_namesake_of_an_assumed_pod_still_reaches_the_queue(env: Env) -> None:
    pod = _assumed_after_its_attempt(env)
    env.handlers.on_pod_update(pod, bumped(pod, lambda p: p["metadata"].__setitem__("uid", "another-uid")))
    assert env.queue.where("default/p") == "active"


def deleting(pod: dict[str, Any]) -> dict[str, Any]:
    return bumped(pod, lambda p: p["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"))


def test_the_deletion_of_an_assumed_pod_frees_its_room_and_moves_others_but_not_itself(env: Env) -> None:
    """Upstream's handleAssumedPodDeletion for a pod past Permit (its bind returned, or still in PreBind
    or Bind): it leaves the cache at once, pods rejected for want of its room get AssignedPodDelete,
    and the deleting pod itself is not queued (it was: to activeQ, for a "skip schedule deleting pod")."""
    pod = _assumed_after_its_attempt(env)
    waiter = env.make_unschedulable(make_pod("waiter", cpu="1"), "NodeResourcesFit")
    env.handlers.on_pod_update(pod, deleting(pod))
    assert env.queue.where("default/p") is None
    assert not env.cache.is_assumed("default/p") and env.cache.get_pod("default/p") is None
    info = env.cache.node_info("n1")
    assert info is not None and info.requested.milli_cpu == 0
    assert env.queue.where(waiter.key) in ("active", "backoff")


def test_the_deletion_of_an_assumed_pod_during_its_attempt_keeps_the_version_for_a_requeue(env: Env) -> None:
    """Still binding (in flight): removed from the cache as well, and the in-flight record keeps the
    deleting version, so a requeue after its failed Binding is skipped as a deleting pod."""
    env.handlers.on_node_add(make_node("n1"))
    pod = make_pod("p", cpu="1")
    env.handlers.on_pod_add(pod)
    assert env.queue.pop_nowait() is not None
    env.cache.assume_pod(PodInfo(pod), "n1")
    newer = deleting(pod)
    env.handlers.on_pod_update(pod, newer)
    assert env.queue.in_flight_pods() == [newer]
    assert env.cache.get_pod("default/p") is None


def _record_rejections(env: Env, *, waiting: bool) -> list[tuple[str, str]]:
    """Stands in for ``Scheduler.reject_deleted_waiting_pod``: records each (key, uid) asked about and
    answers ``waiting`` (whether the pod waited at Permit and was rejected)."""
    rejected: list[tuple[str, str]] = []

    def reject(key: str, uid: str) -> bool:
        rejected.append((key, uid))
        return waiting

    env.handlers.reject_deleted_waiting_pod = reject
    return rejected


def test_the_deletion_of_a_pod_waiting_at_permit_rejects_it_instead(env: Env) -> None:
    """Waiting at Permit: rejected (its binding cycle then releases it), not removed here."""
    rejected = _record_rejections(env, waiting=True)
    pod = _assumed_after_its_attempt(env)
    waiter = env.make_unschedulable(make_pod("waiter", cpu="1"), "NodeResourcesFit")
    env.handlers.on_pod_update(pod, deleting(pod))
    assert rejected == [("default/p", "uid-default-p")]
    assert env.cache.is_assumed("default/p")  # the binding cycle forgets it
    assert env.queue.where(waiter.key) in ("active", "backoff")
    assert env.queue.where("default/p") is None


def test_the_deletion_of_a_pod_not_assumed_takes_the_usual_path(env: Env) -> None:
    rejected = _record_rejections(env, waiting=False)
    env.handlers.on_node_add(make_node("n1"))
    env.handlers.on_pod_add(make_pod("bound", cpu="1", node_name="n1", scheduler_name="default-scheduler"))
    waiter = env.make_unschedulable(make_pod("waiter", cpu="1"), "NodeResourcesFit")
    pending = make_pod("pending")
    env.handlers.on_pod_add(pending)
    env.handlers.on_pod_update(pending, deleting(pending))
    qpi = env.queue.get("default/pending")
    assert qpi is not None and qpi.pod["metadata"]["deletionTimestamp"]
    assert rejected == []
    assert env.queue.where(waiter.key) == "unschedulable"
    info = env.cache.node_info("n1")
    assert info is not None and info.requested.milli_cpu == 1000


def test_a_namesakes_deletion_leaves_the_assumed_pod_alone(env: Env) -> None:
    pod = _assumed_after_its_attempt(env)
    namesake = bumped(pod, lambda p: p["metadata"].__setitem__("uid", "another-uid"))
    env.handlers.on_pod_update(namesake, deleting(namesake))
    assert env.cache.is_assumed("default/p")


def test_deleting_an_assumed_pod_outright_frees_its_room_too(env: Env) -> None:
    """The delete event itself (no update with deletionTimestamp first), as upstream's
    deletePodFromSchedulingQueue -> handleAssumedPodDeletion."""
    pod = _assumed_after_its_attempt(env)
    env.handlers.on_pod_delete(pod)
    assert env.cache.get_pod("default/p") is None


def test_scheduler_name_changing_away_leaves_the_queue(env: Env) -> None:
    pod = make_pod("p")
    env.handlers.on_pod_add(pod)
    env.handlers.on_pod_update(pod, bumped(pod, lambda p: p["spec"].__setitem__("schedulerName", "other")))
    assert env.queue.where("default/p") is None


def test_unassigned_update_reaches_the_queue(env: Env) -> None:
    pod = make_pod("p")
    env.handlers.on_pod_add(pod)
    newer = bumped(pod, lambda p: p["metadata"].__setitem__("labels", {"a": "b"}))
    env.handlers.on_pod_update(pod, newer)
    qpi = env.queue.get("default/p")
    assert qpi is not None and qpi.pod is newer


def test_deletes_reach_queue_and_cache_tombstones_included(env: Env) -> None:
    env.handlers.on_node_add(make_node("n1"))
    pending, bound = make_pod("pending"), make_pod("bound", cpu="1", node_name="n1")
    env.handlers.on_pod_add(pending)
    env.handlers.on_pod_add(bound)
    env.handlers.on_pod_delete(DeletedFinalStateUnknown("default/pending", pending))
    env.handlers.on_pod_delete(bound)
    assert env.queue.where("default/pending") is None
    assert env.cache.get_pod("default/bound") is None
    info = env.cache.node_info("n1")
    assert info is not None and info.requested.milli_cpu == 0


def test_pods_seen_bound_and_pods_deleted_are_reported(env: Env) -> None:
    """What settles a Binding whose outcome was unknown: every pod the watch shows newly bound (an
    add of an assigned pod, an update that assigns it) and every deleted pod."""
    bound: list[str] = []
    deleted: list[str] = []
    env.handlers.on_pod_bound = lambda pod: bound.append(pod["metadata"]["name"])
    env.handlers.on_pod_deleted = lambda pod: deleted.append(pod["metadata"]["name"])
    env.handlers.on_node_add(make_node("n1"))
    pending = make_pod("p", cpu="1")
    env.handlers.on_pod_add(pending)
    env.handlers.on_pod_add(make_pod("other", node_name="n1", scheduler_name="default-scheduler"))
    assigned = bumped(pending, lambda p: p["spec"].__setitem__("nodeName", "n1"))
    env.handlers.on_pod_update(pending, assigned)
    env.handlers.on_pod_update(assigned, bumped(assigned, lambda p: p["metadata"].__setitem__("labels", {})))
    assert bound == ["other", "p"]
    env.handlers.on_pod_delete(DeletedFinalStateUnknown("default/p", assigned))
    env.handlers.on_pod_delete(make_pod("q"))
    assert deleted == ["p", "q"]


def test_freed_room_wakes_a_pod_rejected_for_resources(env: Env) -> None:
    env.handlers.on_node_add(make_node("n1", cpu="2"))
    hog = make_pod("hog", cpu="2", node_name="n1", scheduler_name="default-scheduler")
    env.handlers.on_pod_add(hog)
    env.make_unschedulable(make_pod("waiting", cpu="1"), "NodeResourcesFit")
    env.handlers.on_pod_delete(hog)
    assert env.queue.where("default/waiting") in {"active", "backoff"}


# --- nodes ------------------------------------------------------------------------------------------


def test_node_add_update_delete_reach_the_cache(env: Env) -> None:
    node = make_node("n1", cpu="2")
    env.handlers.on_node_add(node)
    bigger = bumped(node, lambda n: n["status"]["allocatable"].__setitem__("cpu", "8"))
    env.handlers.on_node_update(node, bigger)
    info = env.cache.node_info("n1")
    assert info is not None and info.allocatable.milli_cpu == 8000
    env.handlers.on_node_delete(DeletedFinalStateUnknown("n1", bigger))
    assert env.cache.node_info("n1") is None


def test_node_add_wakes_pods_rejected_for_resources(env: Env) -> None:
    env.make_unschedulable(make_pod("p", cpu="1"), "NodeResourcesFit")
    env.handlers.on_node_add(make_node("n1"))
    assert env.queue.where("default/p") in {"active", "backoff"}


def test_a_heartbeat_only_node_update_wakes_nobody(env: Env) -> None:
    node = make_node("n1", cpu="1")
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t0"}]
    env.handlers.on_node_add(node)
    env.make_unschedulable(make_pod("p", cpu="2"), "NodeResourcesFit")
    beat = bumped(node, lambda n: n["status"]["conditions"][0].__setitem__("lastHeartbeatTime", "t1"))
    env.handlers.on_node_update(node, beat)
    assert env.queue.where("default/p") == "unschedulable"
    bigger = bumped(beat, lambda n: n["status"]["allocatable"].__setitem__("cpu", "4"))
    env.handlers.on_node_update(beat, bigger)
    assert env.queue.where("default/p") in {"active", "backoff"}


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(obj: dict[str, Any]) -> None:
        target = obj
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value

    return mutate


BASE_NODE = make_node("n1", labels={"zone": "a"})
BASE_NODE["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t0"}]


@pytest.mark.parametrize(
    ("mutate", "want"),
    [
        (_set(("status", "allocatable", "cpu"), "8"), ActionType.UpdateNodeAllocatable),
        (
            _set(("metadata", "labels"), {"kubernetes.io/hostname": "n1", "zone": "b"}),
            ActionType.UpdateNodeLabel,
        ),
        (_set(("spec", "taints"), [{"key": "k", "effect": "NoSchedule"}]), ActionType.UpdateNodeTaint),
        (_set(("spec", "unschedulable"), True), ActionType.UpdateNodeTaint),
        (
            _set(("status", "conditions"), [{"type": "Ready", "status": "False", "lastHeartbeatTime": "t0"}]),
            ActionType.UpdateNodeCondition,
        ),
        (
            _set(("status", "conditions"), [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t9"}]),
            ActionType(0),
        ),
        (_set(("metadata", "annotations"), {"a": "b"}), ActionType.UpdateNodeAnnotation),
        (_set(("status", "nodeInfo"), {"kubeletVersion": "v9"}), ActionType(0)),
    ],
)
def test_node_update_actions_classifies_changes(
    mutate: Callable[[dict[str, Any]], None], want: ActionType
) -> None:
    assert node_update_actions(BASE_NODE, bumped(BASE_NODE, mutate)) == want


def test_node_update_actions_combines_several_changes() -> None:
    def both(node: dict[str, Any]) -> None:
        node["status"]["allocatable"]["cpu"] = "8"
        node["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]

    assert node_update_actions(BASE_NODE, bumped(BASE_NODE, both)) == (
        ActionType.UpdateNodeAllocatable | ActionType.UpdateNodeTaint
    )


def test_unschedulable_false_and_missing_are_the_same() -> None:
    assert node_update_actions(
        BASE_NODE, bumped(BASE_NODE, _set(("spec", "unschedulable"), False))
    ) == ActionType(0)


def test_only_chosen_pending_pods_broadcast_their_add(env: Env) -> None:
    """A gang member's add is an UnscheduledPod/Add event for the others (Coscheduling's held members);
    any other pending pod's add stays a plain queue add."""
    events: list[tuple[Any, Any]] = []

    def record(event: Any, old: Any, new: Any, *_: Any) -> None:
        events.append((event, new))

    env.queue.move_all_to_active_or_backoff = record  # type: ignore[method-assign,assignment]
    env.handlers.wakes_on_add = lambda pod: "gang" in (pod["metadata"].get("labels") or {})
    plain = make_pod("plain")
    member = make_pod("member")
    member["metadata"].setdefault("labels", {})["gang"] = "g"
    env.handlers.on_pod_add(plain)
    env.handlers.on_pod_add(member)
    assert [(e, p["metadata"]["name"]) for e, p in events] == [(EVENT_UNSCHEDULED_POD_ADD, "member")]
    assert env.queue.where("default/member") == "active"


# --- ordering across schedulers (issue 13) ------------------------------------------------------------


async def test_a_binding_by_another_scheduler_counts_before_a_later_pod_is_queued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kube-scheduler fills a node, then a py-scheduler preemptor is created. Cache and queue are fed by
    one ordered handler on one pod watch, so when the preemptor reaches the queue the cache already
    counts the fill: py-scheduler can't place it on the "empty" node. Runs through the real informer
    (reflector, store, listener queue) on a fake API server."""
    env = Env()
    server = FakeApiServer()
    informer = SharedInformer(server, PODS)
    informer.add_event_handler(
        on_add=env.handlers.on_pod_add,
        on_update=env.handlers.on_pod_update,
        on_delete=env.handlers.on_pod_delete,
    )
    env.cache.add_node(make_node("n1", cpu="2"))
    seen: list[tuple[str, int]] = []
    queue_add = env.queue.add

    def add(pod: dict[str, Any]) -> None:
        node = env.cache.node_info("n1")
        seen.append((pod["metadata"]["name"], node.requested.milli_cpu if node else -1))
        queue_add(pod)

    monkeypatch.setattr(env.queue, "add", add)
    fillers = [
        server.create(PODS, make_pod(f"low-{i}", cpu="1", scheduler_name="default-scheduler")) for i in (0, 1)
    ]
    informer.start()
    try:
        assert await informer.wait_for_sync(5)
        for filler in fillers:
            server.update(PODS, {**filler, "spec": {**filler["spec"], "nodeName": "n1"}})
        server.create(PODS, make_pod("vip", cpu="1"))
        await eventually(lambda: env.queue.where("default/vip") == "active")
    finally:
        await informer.stop()
        env.queue.close()
    assert seen == [("vip", 2000)]


# --- a stream of MODIFIED events: reused PodInfos never hide a change -------------------------------


def _counted(cache: SchedulerCache, node: str) -> tuple[int, int, list[str]]:
    info = cache.node_info(node)
    assert info is not None
    return info.requested.milli_cpu, info.requested.memory, sorted(info.pods)


def test_a_stream_of_pod_updates_leaves_the_cache_as_parsing_every_version_would(env: Env) -> None:
    """The watch's view of one pod: added pending, assumed and bound, then status-only changes (which
    reuse the parsed PodInfo), then changes that must be parsed (labels, an in-place resize), then
    terminal. After every event the cache must equal a cache built from that version alone."""
    env.handlers.on_node_add(make_node("n1"))
    pending = make_pod("p", cpu="500m", memory="1Gi")
    env.handlers.on_pod_add(pending)
    qpi = env.queue.pop_nowait()
    assert qpi is not None
    env.cache.assume_pod(PodInfo(pending), "n1")

    def bind(p: dict[str, Any]) -> None:
        p["spec"]["nodeName"] = "n1"
        p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]

    def resize(p: dict[str, Any]) -> None:
        p["status"]["containerStatuses"] = [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]

    stream = [
        bind,
        lambda p: p["status"].update(phase="Running", startTime="2024-01-01T00:00:00Z"),
        lambda p: p["status"].update(podIP="10.0.0.7"),
        lambda p: p["metadata"].update(labels={"app": "web"}),
        resize,
        lambda p: p["status"].update(phase="Running", hostIP="192.168.0.1"),
        lambda p: p["status"].update(phase="Succeeded"),
    ]
    old = pending
    for change in stream:
        new = bumped(old, change)
        env.handlers.on_pod_update(old, new)
        reference = SchedulerCache()
        reference.add_node(make_node("n1"))
        reference.add_pod(new)
        assert _counted(env.cache, "n1") == _counted(reference, "n1"), new["status"]
        cached = env.cache.get_pod("default/p")
        if new["status"].get("phase") == "Succeeded":
            assert cached is None
        else:
            assert cached is not None and cached.pod is new
            fresh = PodInfo(new)
            assert (cached.requests, cached.non_zero_requests, cached.node_name) == (
                fresh.requests,
                fresh.non_zero_requests,
                fresh.node_name,
            )
        assert not env.cache.is_assumed("default/p")
        old = new
    # The bind and the two status-only updates before the labels changed were answered without a
    # parse; the resize and what followed it (status resources) were parsed.
    assert env.cache.pod_infos.successors == 3


def _with(
    pod: dict[str, Any], *, priority: int | None = None, nominated: str | None = None
) -> dict[str, Any]:
    if priority is not None:
        pod["spec"]["priority"] = priority
    if nominated is not None:
        pod.setdefault("status", {})["nominatedNodeName"] = nominated
    return pod


@pytest.mark.parametrize("leaves", ["renominated", "deleted"])
def test_a_nominated_pod_leaving_its_node_wakes_the_pods_it_held_back(env: Env, leaves: str) -> None:
    """Upstream's updatePodInSchedulingQueue and deletePodFromSchedulingQueue: a pending pod's
    nomination counts on its node for pods of lower or equal priority, so when the nomination moves or
    the pod is deleted, those rejected by NodeResourcesFit get AssignedPodDelete (the fit hint queues
    them for a deleted pod that was nominated); pods of higher priority never saw it, and stay."""
    low = env.make_unschedulable(_with(make_pod("low", cpu="1"), priority=5), "NodeResourcesFit")
    equal = env.make_unschedulable(_with(make_pod("equal", cpu="1"), priority=10), "NodeResourcesFit")
    high = env.make_unschedulable(_with(make_pod("high", cpu="1"), priority=50), "NodeResourcesFit")
    preemptor = _with(make_pod("preemptor", cpu="1"), priority=10, nominated="n1")
    env.handlers.on_pod_add(preemptor)
    if leaves == "renominated":
        env.handlers.on_pod_update(
            preemptor, bumped(preemptor, lambda p: p["status"].update(nominatedNodeName="n2"))
        )
    else:
        env.handlers.on_pod_delete(preemptor)
    assert env.queue.where(low.key) in ("backoff", "active")
    assert env.queue.where(equal.key) in ("backoff", "active")
    assert env.queue.where(high.key) == "unschedulable"


def test_a_pod_never_nominated_wakes_nobody_when_it_goes(env: Env) -> None:
    low = env.make_unschedulable(_with(make_pod("low", cpu="1"), priority=5), "NodeResourcesFit")
    other = _with(make_pod("other", cpu="1"), priority=10)
    env.handlers.on_pod_add(other)
    relabelled = bumped(other, lambda p: p["metadata"].setdefault("labels", {}).update(x="y"))
    env.handlers.on_pod_update(other, relabelled)
    env.handlers.on_pod_delete(relabelled)
    assert env.queue.where(low.key) == "unschedulable"
