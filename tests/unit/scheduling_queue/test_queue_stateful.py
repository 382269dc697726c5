"""Hypothesis state machine: random add/update/delete/pop/fail/bind/event/clock sequences.

After every step: each live pod is in exactly one place (active, backoff, unschedulable, gated or in
flight), none is lost or duplicated, gated pods are exactly those with scheduling gates, backoff
expiries are upstream's numbers, no pod leaves backoff before its expiry, and every pop returns a
pod that no other ready pod precedes under PrioritySort.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from scheduling_queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    IN_FLIGHT,
    UNSCHEDULABLE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    FakeClock,
    Pod,
    QueuedPodInfo,
    QueueingHint,
    Resource,
    SchedulingQueue,
    priority_sort_less,
    scheduling_gates_pre_enqueue,
)
from scheduling_queue.testing import make_pod, queue_always, with_changes

NODE_ADD = ClusterEvent(Resource.Node, ActionType.Add)
NODE_LABEL = ClusterEvent(Resource.Node, ActionType.UpdateNodeLabel)
EVENTS = [
    (NODE_ADD, None, {"metadata": {"name": "node"}}),
    (NODE_LABEL, {"metadata": {"name": "node"}}, {"metadata": {"name": "node"}}),
    (ClusterEvent(Resource.AssignedPod, ActionType.Delete), make_pod("gone", node_name="node"), None),
    (ClusterEvent(Resource.PersistentVolume, ActionType.Add), None, {"metadata": {"name": "pv"}}),
    (ClusterEvent(Resource.WildCard, ActionType.All, "Custom"), None, None),
]


def even_pods(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.Queue if int(pod["metadata"]["name"][1:]) % 2 == 0 else QueueingHint.Skip


HINTS = {
    "A": [ClusterEventWithHint(NODE_ADD, even_pods)],
    "B": [ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.Delete))],
    "P": [ClusterEventWithHint(NODE_LABEL, queue_always)],
    "SchedulingGates": [
        ClusterEventWithHint(ClusterEvent(Resource.Pod, ActionType.UpdatePodSchedulingGatesEliminated))
    ],
}
FAILURES = {
    "error": ((), ()),
    "A": (("A",), ()),
    "B": (("B",), ()),
    "AB": (("A", "B"), ()),
    "P": ((), ("P",)),
    "A+P": (("A",), ("P",)),
}
POD_IDS = st.integers(min_value=0, max_value=5)


class QueueMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.clock = FakeClock(start=0.0)
        self.q = SchedulingQueue(clock=self.clock, pre_enqueue=scheduling_gates_pre_enqueue, hints=HINTS)
        self.alive: dict[str, dict[str, Any]] = {}  # pending pods (not deleted, not bound), latest version
        self.flying: dict[str, QueuedPodInfo] = {}  # live attempts
        self.zombies: list[QueuedPodInfo] = []  # attempts of pods deleted while in flight
        self.attempts: dict[str, int] = {}
        self.expiry: dict[str, float] = {}  # backoff expiry fixed at the last failure
        self.prev_where: dict[str, str | None] = {}
        self.uids = 0

    # ------------------------------------------------------------------ informer side

    @rule(i=POD_IDS, priority=st.sampled_from([0, 5, 10]), gated=st.booleans())
    def add(self, i: int, priority: int, gated: bool) -> None:
        key = f"default/p{i}"
        if key in self.alive:
            return
        self.uids += 1
        pod = make_pod(
            f"p{i}", priority=priority, uid=f"u{self.uids}", scheduling_gates=["g"] if gated else ()
        )
        self.q.add(pod)
        self.alive[key] = pod
        self.attempts[key] = 0
        self.expiry.pop(key, None)
        self.prev_where.pop(key, None)

    @rule(i=POD_IDS, kind=st.sampled_from(["status", "label", "ungate", "toleration", "priority"]))
    def update(self, i: int, kind: str) -> None:
        key = f"default/p{i}"
        old = self.alive.get(key)
        if old is None:
            return
        if kind == "status":
            new = with_changes(old, status={"conditions": [{"type": "PodScheduled", "status": "False"}]})
        elif kind == "label":
            new = with_changes(old, metadata={"labels": {"v": old["metadata"]["resourceVersion"]}})
        elif kind == "ungate":
            new = with_changes(old, spec={"schedulingGates": []})
        elif kind == "toleration":
            new = with_changes(old, spec={"tolerations": [*old["spec"].get("tolerations", []), {"key": "k"}]})
        else:
            new = with_changes(old, spec={"priority": old["spec"]["priority"] + 1})
        self.q.update(old, new)
        self.alive[key] = new

    @rule(i=POD_IDS)
    def delete(self, i: int) -> None:
        key = f"default/p{i}"
        pod = self.alive.pop(key, None)
        if pod is None:
            return
        self.q.delete(pod)
        self.prev_where.pop(key, None)
        if key in self.flying:
            self.zombies.append(self.flying.pop(key))

    # ------------------------------------------------------------------ scheduling side

    @rule()
    def pop(self) -> None:
        now = self.clock.now()
        ready: dict[str, QueuedPodInfo] = {}
        early: dict[str, QueuedPodInfo] = {}
        for key in self.alive:
            where = self.q.where(key)
            record = self.q.get(key)
            if where == ACTIVE or (
                where == BACKOFF and record is not None and self.q.backoff_expiry(record) <= now
            ):
                assert record is not None
                ready[key] = record
            elif (
                where == BACKOFF
                and record is not None
                and (record.unschedulable_plugins or record.pending_plugins)
            ):
                # SchedulerPopFromBackoffQ: a rejected (not errored) pod may be taken early.
                early[key] = record
        qpi = self.q.pop_nowait()
        if not ready and not early:
            assert qpi is None
            return
        assert qpi is not None
        if ready:
            assert qpi.key in ready and ready[qpi.key] is qpi
            for other in ready.values():
                assert not priority_sort_less(other, qpi), f"{other.key} should pop before {qpi.key}"
        else:
            # Only with activeQ empty, and the head of backoffQ: earliest window, then QueueSort.
            assert qpi.key in early and early[qpi.key] is qpi
            mine = self.expiry[qpi.key]
            for other in early.values():
                theirs = self.expiry[other.key]
                assert theirs > mine or (theirs == mine and not priority_sort_less(other, qpi)), (
                    f"{other.key} should pop from backoffQ before {qpi.key}"
                )
            self.prev_where[qpi.key] = None  # left backoff early, by design
        self.attempts[qpi.key] += 1
        assert qpi.attempts == self.attempts[qpi.key]
        assert qpi.pod is self.alive[qpi.key]
        self.flying[qpi.key] = qpi

    @rule(data=st.data(), failure=st.sampled_from(sorted(FAILURES)))
    def fail(self, data: st.DataObject, failure: str) -> None:
        if not self.flying:
            return
        key = data.draw(st.sampled_from(sorted(self.flying)))
        qpi = self.flying.pop(key)
        unschedulable, pending = FAILURES[failure]
        qpi.unschedulable_plugins = set(unschedulable)
        qpi.pending_plugins = set(pending)
        self.q.add_unschedulable_if_not_present(qpi)
        # Upstream's numbers, to the end of the 1 s ordering window the backoff expires in.
        self.expiry[key] = math.floor(self.clock.now() + min(2.0 ** (self.attempts[key] - 1), 10.0)) + 1.0
        assert self.q.where(key) in (ACTIVE, BACKOFF, UNSCHEDULABLE)
        assert qpi.pod is self.alive[key]

    @rule()
    def fail_zombie(self) -> None:
        if self.zombies:
            qpi = self.zombies.pop(0)
            qpi.unschedulable_plugins = {"A"}
            self.q.add_unschedulable_if_not_present(qpi)

    @rule(data=st.data())
    def bind(self, data: st.DataObject) -> None:
        if not self.flying:
            return
        key = data.draw(st.sampled_from(sorted(self.flying)))
        qpi = self.flying.pop(key)
        self.q.done(qpi)
        # The unscheduled-pod informer then reports the pod gone (it has a node now).
        self.q.delete(self.alive.pop(key))

    @rule(index=st.integers(min_value=0, max_value=len(EVENTS) - 1))
    def event(self, index: int) -> None:
        event, old, new = EVENTS[index]
        self.q.move_all_to_active_or_backoff(event, old, new)

    @rule(seconds=st.sampled_from([0.1, 0.5, 1.0, 2.5, 10.0, 31.0, 301.0]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule()
    def flush_backoff(self) -> None:
        self.q.flush_backoff_completed()

    @rule()
    def flush_unschedulable(self) -> None:
        self.q.flush_unschedulable_leftover()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def every_pod_in_exactly_one_place(self) -> None:
        q, now = self.q, self.clock.now()
        where = {key: q.where(key) for key in self.alive}
        for key, place in where.items():
            assert place is not None, f"{key} lost"
            assert (place == IN_FLIGHT) == (key in self.flying)
            gated = bool(self.alive[key]["spec"].get("schedulingGates"))
            assert (place == GATED) == gated
            if place == BACKOFF:
                record = q.get(key)
                assert record is not None
                assert q.backoff_expiry(record) == self.expiry[key]
            if self.prev_where.get(key) == BACKOFF and place in (ACTIVE, IN_FLIGHT):
                assert now >= self.expiry[key], f"{key} left backoff early"
        for i in range(6):
            key = f"default/p{i}"
            if key not in self.alive:
                assert q.where(key) is None
        assert len(q) == len(self.alive) - len(self.flying)
        listed = [p for pods in q.pending_pods().values() for p in pods]
        keys = [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in listed]
        assert sorted(keys) == sorted(self.alive), "duplicated or stray pods"
        assert all(p is self.alive[k] for p, k in zip(listed, keys, strict=True))
        self.prev_where = where


QueueMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestQueueMachine = QueueMachine.TestCase
