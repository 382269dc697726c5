"""The SchedulingQueue: where every pending pod is, and the moves between those places.

Modelled on kube-scheduler's ``pkg/scheduler/backend/queue`` with queueing hints enabled. Every pod the
queue knows is in exactly one place; each place is a module of its own with one job:

* :mod:`~scheduling_queue.active_queue`: activeQ, the pods ready to be popped, in QueueSort order;
* :mod:`~scheduling_queue.backoff_queue`: backoffQ, the pods waiting out their backoff;
* :mod:`~scheduling_queue.unschedulable_pods`: the pods plugins rejected, indexed by rejector;
* :mod:`~scheduling_queue.gated_pods`: the pods a PreEnqueue plugin holds back, indexed by gate;
* :mod:`~scheduling_queue.in_flight`: the attempts in progress and the events they must replay.

The sub-queues only store and order. This facade decides the moves (upstream's
``scheduling_queue.go``): PreEnqueue on the way into activeQ, queueing hints on cluster events and
failed attempts, the ``scheduler_queue_incoming_pods`` counts, waking a waiting :meth:`pop`, the
nominator and the periodic flushers.

The queue belongs to the scheduler's asyncio loop and takes no locks; call it only from that loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from scheduling_queue import metrics
from scheduling_queue.active_queue import ActiveQueue
from scheduling_queue.backoff_queue import (
    BACKOFF_ORDERING_WINDOW,
    DEFAULT_POD_INITIAL_BACKOFF,
    DEFAULT_POD_MAX_BACKOFF,
    BackoffQueue,
)
from scheduling_queue.events import (
    BACKOFF_COMPLETE,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    FORCE_ACTIVATE,
    SCHEDULE_ATTEMPT_FAILURE,
    event_label,
    is_pod_updated,
    is_wildcard,
    pod_scheduling_properties_change,
)
from scheduling_queue.gated_pods import GatedPods
from scheduling_queue.hints import AFTER_BACKOFF, IMMEDIATELY, SKIP, HintRegistry
from scheduling_queue.in_flight import InFlight, InFlightTracker
from scheduling_queue.nominator import Nominator
from scheduling_queue.types import (
    Clock,
    ClusterEvent,
    ClusterEventWithHint,
    Pod,
    PodRequestsFn,
    PreEnqueueCheck,
    QueuedPodInfo,
    QueueSortLess,
    SameRequestInputsFn,
    pod_key,
    priority_sort_less,
)
from scheduling_queue.unschedulable_pods import UnschedulablePods, count_rejectors

__all__ = [
    "ACTIVE",
    "BACKOFF",
    "BACKOFF_FLUSH_INTERVAL",
    "BACKOFF_ORDERING_WINDOW",
    "DEFAULT_POD_INITIAL_BACKOFF",
    "DEFAULT_POD_MAX_BACKOFF",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE",
    "GATED",
    "IN_FLIGHT",
    "POP_FROM_BACKOFF_Q",
    "UNSCHEDULABLE",
    "UNSCHEDULABLE_FLUSH_INTERVAL",
    "SchedulingQueue",
]

log = logging.getLogger(__name__)

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"
IN_FLIGHT = "in_flight"

DEFAULT_POD_MAX_IN_UNSCHEDULABLE = 300.0
BACKOFF_FLUSH_INTERVAL = 1.0
# The incoming-pods metric's event label for a pod taken from backoffQ (framework.PopFromBackoffQ).
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0

_POD_ADD = event_label(EVENT_UNSCHEDULED_POD_ADD)
_ACTIVE_POD_ADD = (ACTIVE, _POD_ADD)
_EMPTY: Mapping[str, Any] = MappingProxyType({})
_NO_HINTS: Mapping[str, Sequence[ClusterEventWithHint]] = MappingProxyType({})


class SchedulingQueue:
    """kube-scheduler's PriorityQueue for one asyncio loop.

    Args:
        clock: time source for timestamps, backoff and the unschedulable timeout.
        less: the profile's QueueSort. ``priority_sort_less`` (the default) takes a tuple-key fast path.
        pre_enqueue: the profile's PreEnqueue chain; returns the gating plugin's name or ``""``.
            ``None`` means no PreEnqueue plugins. :func:`scheduling_queue.gates.scheduling_gates_pre_enqueue`
            implements SchedulingGates.
        hints: plugin name -> the events it registered (``EventsToRegister``) with optional hint
            functions. A plugin that doesn't implement EnqueueExtensions should be registered by the
            scheduler for the wildcard event, as upstream does.
        initial_backoff / max_backoff: ``podInitialBackoffSeconds`` / ``podMaxBackoffSeconds``.
        max_in_unschedulable: ``podMaxInUnschedulablePodsDuration`` in seconds.
        sleep: async sleep used by :meth:`run`'s periodic flushers; tests pass ``FakeClock.sleep``.
        pod_requests: a pod's requests (``scheduler.framework.resources.pod_request_amounts``), to
            tell which pod updates are ``UpdatePodScaleDown`` or ``UpdatePodScaleUp``; without it none are.
        same_request_inputs: whether two versions of a pod read the same requests
            (``scheduler.framework.resources.same_request_inputs``), so most updates skip computing them.
    """

    def __init__(
        self,
        *,
        clock: Clock,
        less: QueueSortLess = priority_sort_less,
        pre_enqueue: PreEnqueueCheck | None = None,
        hints: Mapping[str, Sequence[ClusterEventWithHint]] = _NO_HINTS,
        initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        backoff_flush_interval: float = BACKOFF_FLUSH_INTERVAL,
        unschedulable_flush_interval: float = UNSCHEDULABLE_FLUSH_INTERVAL,
        pod_requests: PodRequestsFn | None = None,
        same_request_inputs: SameRequestInputsFn | None = None,
        generic_workload: bool = False,
    ) -> None:
        self._clock = clock
        self._now = clock.now
        self._pre_enqueue = pre_enqueue
        self._hints = HintRegistry(hints)
        self._max_in_unschedulable = float(max_in_unschedulable)
        self._sleep = sleep
        self._backoff_flush_interval = backoff_flush_interval
        self._unschedulable_flush_interval = unschedulable_flush_interval
        self._pod_requests = pod_requests
        self._same_request_inputs = same_request_inputs
        # Feature gate GenericWorkload: members of a pod group retry after backoff only (upstream's
        # determineSchedulingHintForInFlightPod: no event-based requeueing at pod group level yet).
        self._generic_workload = generic_workload

        # BackoffQueue validates the backoff bounds; it is built first so a bad config raises early.
        self._backoff = BackoffQueue(less=less, initial_backoff=initial_backoff, max_backoff=max_backoff)
        self._active = ActiveQueue(less)
        self._unschedulable = UnschedulablePods()
        self._gated = GatedPods()
        # Pods the leftover flush moved, until their next attempt fails or PreEnqueue gates them again
        # (upstream's WasFlushedFromUnschedulable): one bound from here counts in
        # scheduler_pod_scheduled_after_flush_total. By key, with the record it was set on.
        self._flushed: dict[str, QueuedPodInfo] = {}
        self._in_flight = InFlightTracker()
        self.nominator = Nominator()
        # The sub-queues' read-only views, bound once: add() and pop_nowait() run per pod and test
        # membership on them directly rather than through a Python-level __contains__ each.
        self._active_pods = self._active.entries
        self._backoff_pods = self._backoff.entries
        self._unschedulable_pods = self._unschedulable.pods
        self._gated_pods = self._gated.pods

        self._waiters: list[asyncio.Future[None]] = []
        self._closed = False
        self._closed_event = asyncio.Event()
        self._incoming = metrics.incoming
        # GenericWorkload: the pod groups that entered a queue (queue, event) since the last pop or
        # event-driven move; a group's members entering together are one ``podgroup`` entity.
        self._entered_groups: set[tuple[str, str, str]] = set()
        metrics.register_source(self)

    # ------------------------------------------------------------------ introspection

    def __len__(self) -> int:
        """Pending pods: active + backoff + unschedulable + gated (in-flight pods are not pending)."""
        return len(self._active) + len(self._backoff) + len(self._unschedulable) + len(self._gated)

    def __contains__(self, key: object) -> bool:
        """Whether the pod ``namespace/name`` is pending (see :meth:`where` for in-flight pods)."""
        return (
            key in self._active_pods
            or key in self._backoff_pods
            or key in self._unschedulable_pods
            or key in self._gated_pods
        )

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def _default_sort(self) -> bool:
        """Whether activeQ orders by the PrioritySort tuple key (the fast path) rather than ``less``."""
        return self._active.tuple_keys

    def where(self, key: str) -> str | None:
        """``active``, ``backoff``, ``unschedulable``, ``gated``, ``in_flight`` or None."""
        if key in self._active_pods:
            return ACTIVE
        if key in self._backoff_pods:
            return BACKOFF
        if key in self._unschedulable_pods:
            return UNSCHEDULABLE
        if key in self._gated_pods:
            return GATED
        if self._in_flight.live(key) is not None:
            return IN_FLIGHT
        return None

    def get(self, key: str) -> QueuedPodInfo | None:
        """The record of a pending or in-flight pod."""
        found = (
            self._active.get(key)
            or self._backoff.get(key)
            or self._unschedulable.get(key)
            or self._gated.get(key)
        )
        if found is not None:
            return found
        rec = self._in_flight.live(key)
        return rec.qpi if rec is not None else None

    def _entity_incoming(self, queue: str, label: str, qpi: QueuedPodInfo) -> None:
        """``scheduler_queue_incoming_entities_total`` with GenericWorkload: a pod outside any group is
        a ``pod`` entity; the members of one pod group entering one queue for one event together (one
        attempt's failure, one event's moves, arrivals between two pops) are one ``podgroup`` entity, as
        upstream's queue holds the group as one QueuedPodGroupInfo."""
        group = _group_key(qpi.pod)
        if not group:
            metrics.incoming_entities[(queue, label, metrics.POD_ENTITY)] += 1
            return
        marker = (group, queue, label)
        if marker not in self._entered_groups:
            self._entered_groups.add(marker)
            metrics.incoming_entities[(queue, label, metrics.POD_GROUP_ENTITY)] += 1

    def entity_counts(self) -> dict[tuple[str, str], int]:
        """(queue, entity type) -> queued entities, at scrape time: each pod outside any group is one
        ``pod``, each pod group with members in that queue one ``podgroup``."""
        out: dict[tuple[str, str], int] = {}
        queues = (
            (ACTIVE, self._active.in_order()),
            (BACKOFF, self._backoff.in_order()),
            (UNSCHEDULABLE, self._unschedulable.all()),
            (GATED, self._gated.all()),
        )
        for queue, entries in queues:
            groups: set[str] = set()
            pods = 0
            for qpi in entries:
                group = _group_key(qpi.pod)
                if group:
                    groups.add(group)
                else:
                    pods += 1
            out[(queue, metrics.POD_ENTITY)] = pods
            out[(queue, metrics.POD_GROUP_ENTITY)] = len(groups)
        return out

    def pending_counts(self) -> tuple[int, int, int, int]:
        """(active, backoff, unschedulable, gated); read by the metrics collector at scrape time."""
        return len(self._active), len(self._backoff), len(self._unschedulable), len(self._gated)

    def unschedulable_counts(self) -> dict[tuple[str, str], int]:
        """``scheduler_unschedulable_pods``: per (plugin, schedulerName), the queued pods that plugin
        rejected in their last attempt or gates, in whichever sub-queue they wait. v1.37.2 counts a pod's
        rejectors from its requeue until it is popped or deleted (activeQ and backoffQ included) and a
        gating plugin from the PreEnqueue that gated it; a pod in flight is not counted."""
        counts = self._unschedulable.counts()
        for entries in (self._active_pods, self._backoff_pods):
            for entry in entries.values():
                qpi: QueuedPodInfo = entry[-1]
                if qpi.unschedulable_plugins or qpi.pending_plugins:
                    count_rejectors(counts, qpi)
        for qpi in self._gated_pods.values():
            count_rejectors(counts, qpi)
        return counts

    def pending_pods(self) -> dict[str, list[Pod]]:
        """Pods by sub-queue, for debugging; ``active`` and ``backoff`` are in pop / expiry order."""
        return {
            ACTIVE: [q.pod for q in self._active.in_order()],
            BACKOFF: [q.pod for q in self._backoff.in_order()],
            UNSCHEDULABLE: [q.pod for q in self._unschedulable.all()],
            GATED: [q.pod for q in self._gated.all()],
            IN_FLIGHT: self.in_flight_pods(),
        }

    def is_in_flight(self, key: str) -> bool:
        """Whether an attempt for ``key`` is between pop and ``done`` (its pod not deleted)."""
        return self._in_flight.live(key) is not None

    def in_flight_pods(self) -> list[Pod]:
        return [r.latest or r.qpi.pod for r in self._in_flight.all_live()]

    @property
    def in_flight_event_count(self) -> int:
        """Events held for replay to in-flight pods (bounded by overlapping attempts)."""
        return self._in_flight.event_count

    def backoff_duration(self, attempts: int) -> float:
        """``initial * 2**(attempts-1)`` capped at max; 0 before the first attempt."""
        return self._backoff.duration(attempts)

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        """When the pod stops backing off: the end of the 1 s ordering window its backoff expires in
        (upstream aligns expiries to the window and backs off while that window is not over)."""
        return self._backoff.expiry(qpi)

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        return self._backoff.expiry(qpi) > self._now()

    # ------------------------------------------------------------------ informer-driven

    def add(self, pod: Pod) -> None:
        """A new pending pod (informer add). A pod already known is treated as an update."""
        meta = pod.get("metadata") or _EMPTY
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"  # pod_key, inlined: hot path
        if (
            key in self._active_pods
            or key in self._backoff_pods
            or key in self._unschedulable_pods
            or key in self._gated_pods
            or key in self._in_flight.records
        ):
            known = self._known_pod(key)
            if known is not None:
                self.update(known, pod)
                return
        now = self._now()
        qpi = QueuedPodInfo(pod, key, now, now)
        if self._pre_enqueue is None:
            # Without PreEnqueue nothing can gate the pod: the push is _move_to_active's, minus its checks.
            self._active.push(qpi)
            self._incoming[_ACTIVE_POD_ADD] += 1
            self._count_entity(ACTIVE, _POD_ADD, qpi, None)
            if self._waiters:
                self._wake()
        elif self._move_to_active(qpi, _POD_ADD) and self._waiters:
            self._wake()
        status = pod.get("status")
        if status and status.get("nominatedNodeName"):
            self.nominator.add_nominated_pod(pod)

    def update(self, old: Pod, new: Pod) -> None:
        """A pending pod changed (informer update).

        In activeQ or backoffQ the pod is swapped in place: its position and backoff expiry stay.
        In unschedulable, an update that only touches status or ignored metadata (see
        :func:`is_pod_updated`) changes nothing else; otherwise the hints of the rejecting plugins
        decide on the ``UpdatePodXYZ`` events it stands for. A gated pod re-runs PreEnqueue. An
        in-flight pod keeps the new version for its requeue and logs the events for replay.
        An unknown pod is added.
        """
        key = pod_key(new)
        rec = self._in_flight.live(key)
        if rec is not None:
            rec.latest = new
            for event in self._properties_change(new, old, target=True):
                self._in_flight.record(event, old, new)
            self.nominator.update_nominated_pod(old, new)
            return
        # Membership on the views first: an update is common for unschedulable pods (the scheduler's
        # own status patches), and should not cost a call into each sub-queue it is not in.
        if key in self._active_pods:
            self._active.update(key, new)
            self.nominator.update_nominated_pod(old, new)
            return
        if key in self._backoff_pods:
            self._backoff.update(key, new)
            self.nominator.update_nominated_pod(old, new)
            return
        found = self._unschedulable_pods.get(key)
        if found is not None:
            found.pod = new
            self.nominator.update_nominated_pod(old, new)
            self._update_unschedulable(found, old, new)
            return
        found = self._gated_pods.get(key)
        if found is not None:
            found.pod = new
            self.nominator.update_nominated_pod(old, new)
            self._update_gated(found, old, new)
            return
        now = self._now()
        qpi = QueuedPodInfo(new, key, now, now)
        # v1.37 adds it as a new pod (addPod), counted under UnscheduledPodAdd.
        if self._move_to_active(qpi, _POD_ADD):
            self._wake()
        self.nominator.add_nominated_pod(new)

    def _update_gated(self, qpi: QueuedPodInfo, old: Pod, new: Pod) -> None:
        """A gated pod changed: as v1.37.2's Update, each TargetPod event the change stands for asks the
        hints of the pod's rejectors (its gating plugin among them); on one that says Queue, PreEnqueue
        runs and the pod is requeued, or gated again and the next event is tried. A change no hint
        answers leaves the pod gated without running PreEnqueue (a relabelled gated pod stays gated,
        its plugins not asked)."""
        for event in self._properties_change(new, old, target=True):
            strategy = self._hints.strategy(qpi, event, old, new)
            if strategy == SKIP:
                continue
            label = event_label(event)
            # Still in unschedulablePods upstream (Update does not take it out first): no new arrival.
            if not self._ungate(qpi, label, strategy, reentering=False):
                continue
            if self._requeue(qpi, strategy, label, ungated=True) == ACTIVE:
                self._wake()
            return

    def _ungate(self, qpi: QueuedPodInfo, label: str, strategy: int, *, reentering: bool) -> bool:
        """PreEnqueue for a gated pod a hint would move, run here once (upstream runs it as the pod
        enters backoffQ or activeQ, and a pod that still gates stays gated wherever the hint would have
        sent it). True when every plugin passed: the pod left the gated set and, as upstream, no plugin
        gates it any more (a later run, after a failed attempt, starts from the first plugin); the
        caller requeues it with ``ungated``. ``reentering``: see ``_add_gated``."""
        pre_enqueue = self._pre_enqueue
        gate = pre_enqueue(qpi.pod, qpi.gating_plugin) if pre_enqueue is not None else ""
        if gate:
            self._add_gated(qpi, gate, label, reentering=reentering, strategy=strategy)
            return False
        self._gated.remove(qpi.key)
        qpi.gating_plugin = ""
        return True

    def _update_unschedulable(self, qpi: QueuedPodInfo, old: Pod, new: Pod) -> None:
        """An unschedulable pod changed: requeue it on the first ``UpdatePodXYZ`` event a rejector's
        hint says may help (upstream's isPodWorthRequeuing per event); else it stays."""
        if not is_pod_updated(old, new):
            # Status-only (e.g. the scheduler's own PodScheduled=False patch): requeueing on it would
            # retry every failed pod right after its failure.
            return
        for event in self._properties_change(new, old, target=True):
            strategy = self._hints.strategy(qpi, event, old, new)
            if strategy != SKIP:
                self._unschedulable.remove(qpi.key)
                if self._requeue(qpi, strategy, event_label(event)) == ACTIVE:
                    self._wake()
                return

    def delete(self, pod: Pod) -> None:
        """The pod is gone (or no longer ours): drop it from wherever it is.

        An in-flight attempt is marked so that its failure does not requeue the pod.
        """
        key = pod_key(pod)
        self.nominator.forget(pod)
        if key in self._active_pods:
            self._active.remove(key)
        elif key in self._backoff_pods:
            self._backoff.remove(key)
        elif key in self._unschedulable_pods:
            self._unschedulable.remove(key)
        else:
            self._gated.remove(key)
        if self._flushed:
            self._flushed.pop(key, None)
        rec = self._in_flight.records.get(key)
        if rec is not None:
            rec.deleted = True

    # ------------------------------------------------------------------ scheduling cycle

    async def pop(self) -> QueuedPodInfo | None:
        """The head of activeQ, waiting for one if needed; None once the queue is closed.

        The pod is in flight until :meth:`add_unschedulable_if_not_present` or :meth:`done`.
        """
        while True:
            qpi = self.pop_nowait()
            if qpi is not None or self._closed:
                return qpi
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                if not fut.done():
                    fut.cancel()
                # A pop cancelled while waiting leaves no waiter behind (a wake-up empties the list).
                if fut in self._waiters:
                    self._waiters.remove(fut)

    def pop_nowait(self) -> QueuedPodInfo | None:
        """Like :meth:`pop` without waiting: None when activeQ is empty or the queue is closed.

        Backoffs that completed since the last flush are flushed first, so a pod never waits for the
        1 s flusher when the scheduler is idle-polling.
        """
        if self._closed:
            return None
        if self._backoff.next_expiry <= self._now():
            self.flush_backoff_completed()
        if self._entered_groups:
            self._entered_groups.clear()
        qpi = self._active.pop()
        if qpi is None:
            return self._pop_backoff()
        qpi.attempts += 1
        self._in_flight.start(qpi)
        return qpi

    def _pop_backoff(self) -> QueuedPodInfo | None:
        """activeQ is empty: take the head of the rejected pods' backoff heap rather than idle
        (upstream's SchedulerPopFromBackoffQ). Pods that failed with an error are never taken early."""
        pre_enqueue = self._pre_enqueue
        while (qpi := self._backoff.pop_rejected()) is not None:
            # Upstream runs PreEnqueue when a pod enters backoffQ, so a pod popped from it early
            # has passed it; here it runs now (e.g. DefaultPreemption holds a preemptor whose
            # victims are still being evicted, which would otherwise preempt them again).
            gate = pre_enqueue(qpi.pod, qpi.gating_plugin) if pre_enqueue is not None else ""
            if gate:
                self._add_gated(qpi, gate, POP_FROM_BACKOFF_Q)
                continue
            self._incoming[(ACTIVE, POP_FROM_BACKOFF_Q)] += 1
            self._count_entity(ACTIVE, POP_FROM_BACKOFF_Q, qpi, None)
            qpi.attempts += 1
            self._in_flight.start(qpi)
            return qpi
        return None

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo) -> None:
        """Requeue a pod after a failed attempt and end its in-flight state.

        The scheduler sets ``qpi.unschedulable_plugins`` / ``pending_plugins`` first; both empty means
        the attempt failed with an error and the pod backs off. Otherwise the events seen while the pod
        was in flight are replayed through the rejecting plugins' hints: if one says Queue the pod goes
        to backoffQ (or activeQ, if its backoff already passed, or for a Pending plugin), else to
        unschedulable. A pod deleted while in flight is dropped.
        """
        rec = self._in_flight.lookup(qpi)
        try:
            key = qpi.key
            if rec is None and self._in_flight.live(key) is not None:
                log.warning("pod %s: requeue of an attempt that is not the one in flight; ignored", key)
                return
            if rec is not None and rec.deleted:
                return
            if key in self:
                log.warning("pod %s is already queued; ignoring its failed attempt", key)
                return
            if rec is not None and rec.latest is not None:
                qpi.pod = rec.latest
            qpi.timestamp = self._now()
            if self._flushed:
                self._forget_flush(qpi)
            if self._requeue(qpi, self._failure_strategy(qpi, rec), SCHEDULE_ATTEMPT_FAILURE) == ACTIVE:
                self._wake()
        finally:
            if rec is not None:
                self._in_flight.finish(rec)

    def _failure_strategy(self, qpi: QueuedPodInfo, rec: InFlight | None) -> int:
        """Where a failed attempt's pod goes (upstream's determineSchedulingHintForInFlightPod)."""
        if rec is None or (not qpi.unschedulable_plugins and not qpi.pending_plugins):
            # An error (no rejector), or nothing to replay: retry after backoff, as upstream.
            return AFTER_BACKOFF
        if self._generic_workload and _in_scheduling_group(qpi.pod):
            return AFTER_BACKOFF
        return self._in_flight_strategy(qpi, rec)

    def pop_specific(self, pod: Pod) -> QueuedPodInfo | None:
        """Take this pending pod out of the queue as if popped (upstream's PopSpecificPod, for the pod
        group cycle): activated first (PreEnqueue runs), then taken from activeQ. None when it is not
        there (gated, in flight, unknown)."""
        key = pod_key(pod)
        if key not in self._active_pods:
            self.activate([pod])
        qpi = self._active.remove(key)
        if qpi is None:
            return None
        qpi.attempts += 1
        self._in_flight.start(qpi)
        return qpi

    def gone_while_in_flight(self, qpi: QueuedPodInfo) -> bool:
        """The informer showed this attempt's pod deleted, bound, or no longer ours since it was popped
        (upstream's handleSchedulingFailure asks its pod lister the same question)."""
        rec = self._in_flight.lookup(qpi)
        return rec is not None and rec.deleted

    def done(self, pod: str | QueuedPodInfo) -> None:
        """The attempt ended without a requeue (bound, or given up): stop tracking it.

        Pass the popped record rather than the key when a deleted pod's name may have been reused.
        """
        if isinstance(pod, QueuedPodInfo):
            rec = self._in_flight.lookup(pod)
            if self._flushed:
                self._forget_flush(pod)
        else:
            rec = self._in_flight.records.get(pod)
            if self._flushed:
                self._flushed.pop(pod, None)
        if rec is not None:
            self._in_flight.finish(rec)

    def was_flushed(self, qpi: QueuedPodInfo) -> bool:
        """Whether the leftover flush moved this pod since its last failed attempt (and PreEnqueue has
        not gated it since): upstream counts such a pod, once bound, in
        scheduler_pod_scheduled_after_flush_total. Ask before :meth:`done`, which forgets it."""
        return self._flushed.get(qpi.key) is qpi

    def _forget_flush(self, qpi: QueuedPodInfo) -> None:
        if self._flushed.get(qpi.key) is qpi:
            del self._flushed[qpi.key]

    def activate(self, pods: Iterable[Pod]) -> None:
        """Move these pods to activeQ now, skipping backoff (upstream's Activate / ForceActivate).

        A pod in flight gets a ForceActivate event so that it is requeued at once if its attempt fails.
        A gated pod runs PreEnqueue again (upstream keeps gated pods in unschedulablePods, which
        Activate searches): e.g. a preemptor whose preemption failed is held no longer.
        """
        activated = False
        for pod in pods:
            key = pod_key(pod)
            # A gated pod stays in the gated map: _move_to_active releases it only if PreEnqueue passes.
            qpi = self._unschedulable.remove(key) or self._gated.get(key) or self._backoff.remove(key)
            if qpi is not None:
                activated |= self._move_to_active(qpi, FORCE_ACTIVATE)
            elif self._in_flight.live(key) is not None:
                self._in_flight.record(EVENT_FORCE_ACTIVATE, None, pod)
        if activated:
            self._wake()

    # ------------------------------------------------------------------ cluster events

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> None:
        """A cluster event happened: requeue the unschedulable pods it may help.

        Only pods rejected by a plugin registered for ``event`` are visited, and only those plugins'
        hints are asked. An event no plugin registered returns after one dict lookup. A wildcard event
        moves every unschedulable pod. The event is logged for replay to in-flight pods.
        ``pre_check(pod)`` can narrow the candidates further (upstream's preCheck).
        """
        matching = self._hints.matching(event)
        wildcard = is_wildcard(event)
        if not matching and not wildcard:
            return
        if not self._unschedulable_pods and not self._gated_pods:
            # Nothing to move (the usual case while the initial lists are delivered, one event per
            # node and bound pod): only the replay log for in-flight pods needs the event.
            self._in_flight.record(event, old, new)
            return
        selected = self._unschedulable.all() if wildcard else self._unschedulable.rejected_by(matching)
        # A gated pod is a candidate only for the events its gating plugin registered: only the plugin
        # that holds it knows what may lift its gate.
        for plugin in matching:
            selected.extend(self._gated.gated_by(plugin))
        if pre_check is not None:
            selected = [q for q in selected if pre_check(q.pod)]
        self._move_pods(selected, event, old, new)

    def assigned_pod_added(self, pod: Pod) -> None:
        """A bound pod appeared: may satisfy inter-pod affinity or topology spread of pending pods."""
        self.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: Pod, new: Pod, event: ClusterEvent | None = None) -> None:
        """A bound pod changed; ``event`` defaults to each ``UpdatePodXYZ`` the change stands for."""
        events = [event] if event is not None else self._properties_change(new, old)
        for ev in events:
            self.move_all_to_active_or_backoff(ev, old, new)

    def _properties_change(self, new: Pod, old: Pod, *, target: bool = False) -> list[ClusterEvent]:
        return pod_scheduling_properties_change(
            new, old, self._pod_requests, target=target, same_request_inputs=self._same_request_inputs
        )

    def assigned_pod_deleted(self, pod: Pod) -> None:
        """A bound pod went away: frees resources, ports, anti-affinity and spread constraints."""
        self.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, pod, None)

    # ------------------------------------------------------------------ periodic work

    def flush_backoff_completed(self) -> None:
        """Move pods whose backoff expired to activeQ (every 1 s in :meth:`run`, and before a pop)."""
        activated = False
        for qpi in self._backoff.pop_expired(self._now()):
            activated |= self._move_to_active(qpi, BACKOFF_COMPLETE)
        if activated:
            self._wake()

    def flush_unschedulable_leftover(self) -> None:
        """Requeue pods unschedulable for longer than ``max_in_unschedulable`` (every 30 s in run).

        Gated pods held that long run PreEnqueue again, as v1.37's flush moves every entity of
        unschedulablePods, gated ones included (a wildcard event reaches a gated pod whatever its
        gating plugin registered): a gate that opened without an event its plugin registered (a
        plugin whose hints miss a case) is found within the period. One still gated waits a full
        period again from this flush."""
        now = self._now()
        limit = self._max_in_unschedulable
        stale = self._unschedulable.older_than(now, limit)
        gated = self._gated.older_than(now, limit)
        self._gated.mark_flushed(gated, now)
        for qpi in (*stale, *gated):
            self._flushed[qpi.key] = qpi
        if stale or gated:
            self._move_pods([*stale, *gated], EVENT_UNSCHEDULABLE_TIMEOUT, None, None)

    async def run(self) -> None:
        """Run the periodic flushers until :meth:`close`."""
        if self._closed:
            return
        tasks = [
            asyncio.create_task(self._every(self._backoff_flush_interval, self.flush_backoff_completed)),
            asyncio.create_task(
                self._every(self._unschedulable_flush_interval, self.flush_unschedulable_leftover)
            ),
        ]
        stop = asyncio.create_task(self._closed_event.wait())
        try:
            await asyncio.wait([stop, *tasks], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (stop, *tasks):
                task.cancel()
            await asyncio.gather(stop, *tasks, return_exceptions=True)

    async def _every(self, interval: float, flush: Callable[[], None]) -> None:
        while not self._closed:
            await self._sleep(interval)
            if not self._closed:
                # A flusher that raised would otherwise end run() and strand every backing-off pod.
                try:
                    flush()
                except Exception:
                    log.exception("scheduling queue: %s failed", getattr(flush, "__name__", flush))

    def close(self) -> None:
        """Stop: waiting and future pops return None, :meth:`run` returns."""
        self._closed = True
        self._closed_event.set()
        self._wake()

    # ------------------------------------------------------------------ moves between sub-queues

    def _known_pod(self, key: str) -> Pod | None:
        qpi = self.get(key)
        if qpi is None:
            return None
        rec = self._in_flight.live(key)
        if rec is not None and rec.latest is not None:
            return rec.latest
        return qpi.pod

    def _wake(self) -> None:
        waiters = self._waiters
        if waiters:
            self._waiters = []
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def _move_to_active(
        self, qpi: QueuedPodInfo, label: str, *, ungated: bool = False, strategy: int | None = None
    ) -> bool:
        """Run PreEnqueue, then push to activeQ; a gated pod goes (or stays) in the gated set instead.
        ``ungated``: the caller has just run PreEnqueue on this gated pod and it passed (upstream runs
        it once per move, so it is not run again here). ``strategy``: see ``_count_entity``."""
        pre_enqueue = self._pre_enqueue
        if pre_enqueue is not None and not ungated:
            gate = pre_enqueue(qpi.pod, qpi.gating_plugin)
            if gate:
                self._add_gated(qpi, gate, label, strategy=strategy)
                return False
            if qpi.gating_plugin:
                self._gated.remove(qpi.key)
                qpi.gating_plugin = ""
                ungated = True
        if ungated and qpi.attempts == 0:
            # Upstream starts the scheduling SLI when the pod first enters activeQ.
            qpi.initial_attempt_timestamp = self._now()
        self._active.push(qpi)
        self._incoming[(ACTIVE, label)] += 1
        self._count_entity(ACTIVE, label, qpi, strategy)
        return True

    def _count_entity(self, queue: str, label: str, qpi: QueuedPodInfo, strategy: int | None) -> None:
        """``scheduler_queue_incoming_entities_total`` for a pod entering ``queue``. v1.37.2 counts an
        entity moved by a hint (``strategy``) only when it lands elsewhere than the hint pointed
        (recordIncomingEntitiesMetrics): a rejection the events left in unschedulablePods, a requeue to
        the backoffQ it still backs off in, or a QueueImmediately to activeQ are not counted; a Queue
        whose backoff is over (to activeQ) and a pod gated again are. Moves without a hint (an add, a
        backoff ending, a pop from backoffQ, Activate) always count. Pod group members count as their
        group (``_entity_incoming``)."""
        if self._generic_workload and _group_key(qpi.pod):
            self._entity_incoming(queue, label, qpi)
            return
        if strategy is None or _QUEUE_OF_STRATEGY[strategy] != queue:
            metrics.incoming_entities[(queue, label, metrics.POD_ENTITY)] += 1

    def _push_backoff(self, qpi: QueuedPodInfo, label: str, strategy: int | None = None) -> None:
        # A pod group member serves its whole backoff: upstream queues the group as one entity whose
        # rejector set stays empty, so its backoffQ keeps it with the errors, never popped early. Taken
        # early, a gang that cannot fit would be retried back to back whenever activeQ is empty.
        early = not (self._generic_workload and _in_scheduling_group(qpi.pod))
        if self._backoff.push(qpi, early=early):
            # A pop waiting on an empty activeQ may take this pod now (SchedulerPopFromBackoffQ).
            self._wake()
        self._incoming[(BACKOFF, label)] += 1
        self._count_entity(BACKOFF, label, qpi, strategy)

    def _add_gated(
        self,
        qpi: QueuedPodInfo,
        gate: str,
        label: str,
        *,
        reentering: bool = False,
        strategy: int | None = None,
    ) -> None:
        # Upstream counts a gated pod as entering unschedulablePods, which is where it keeps them.
        # ``reentering``: an event's move took the pod out and PreEnqueue gated it again; upstream
        # deletes it from unschedulablePods before the requeue, so it enters (and counts) anew.
        if self._flushed:
            # Gated again: upstream clears WasFlushedFromUnschedulable (the flush did not release it).
            self._forget_flush(qpi)
        if self._gated.add(qpi, gate) or reentering:
            self._incoming[(UNSCHEDULABLE, label)] += 1
            self._count_entity(UNSCHEDULABLE, label, qpi, strategy)

    def _add_unschedulable(self, qpi: QueuedPodInfo, label: str, strategy: int | None = None) -> None:
        if self._unschedulable.add(qpi):
            self._incoming[(UNSCHEDULABLE, label)] += 1
            self._count_entity(UNSCHEDULABLE, label, qpi, strategy)

    def _requeue(self, qpi: QueuedPodInfo, strategy: int, label: str, *, ungated: bool = False) -> str:
        """Upstream's requeuePodWithQueueingStrategy; returns where the pod went. ``ungated``: see
        ``_move_to_active``."""
        if strategy == SKIP:
            self._add_unschedulable(qpi, label, strategy)
            return UNSCHEDULABLE
        if strategy == AFTER_BACKOFF and self._backoff.expiry(qpi) > self._now():
            self._push_backoff(qpi, label, strategy)
            return BACKOFF
        if self._move_to_active(qpi, label, ungated=ungated, strategy=strategy):
            return ACTIVE
        return GATED

    def _in_flight_strategy(self, qpi: QueuedPodInfo, rec: InFlight) -> int:
        """The strongest strategy the events seen during the attempt give; stops at the first that
        can't be beaten (IMMEDIATELY, or AFTER_BACKOFF when no Pending plugin could raise it)."""
        result = SKIP
        for event, old, new in self._in_flight.events_since(rec):
            strategy = self._hints.strategy(qpi, event, old, new)
            if strategy == IMMEDIATELY:
                return IMMEDIATELY
            if strategy == AFTER_BACKOFF:
                result = AFTER_BACKOFF
                if not qpi.pending_plugins:
                    return AFTER_BACKOFF
        return result

    def _move_pods(self, pods: Iterable[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any) -> None:
        """Upstream's movePodsToActiveOrBackoffQueue for unschedulable and gated candidates."""
        if self._entered_groups:
            self._entered_groups.clear()
        strategy_of = self._hints.strategy
        matching = self._hints.matching(event)
        wildcard = is_wildcard(event)
        label = event_label(event)
        activated = False
        for qpi in pods:
            strategy = strategy_of(qpi, event, old, new, matching=matching, wildcard=wildcard)
            if strategy == SKIP:
                continue
            # The candidates are a snapshot taken before any hint or PreEnqueue (plugin code) ran: move
            # a pod only if this very record is still where it was selected from.
            key = qpi.key
            ungated = False
            if self._gated_pods.get(key) is qpi:
                if not self._ungate(qpi, label, strategy, reentering=True):
                    continue
                ungated = True
            elif self._unschedulable_pods.get(key) is qpi:
                self._unschedulable.remove(key)
            else:
                continue
            if self._requeue(qpi, strategy, label, ungated=ungated) == ACTIVE:
                activated = True
        self._in_flight.record(event, old, new)
        if activated:
            self._wake()


# The queue a hint's strategy sends a pod to (upstream's strategyToQueueLabel).
_QUEUE_OF_STRATEGY = {IMMEDIATELY: ACTIVE, AFTER_BACKOFF: BACKOFF, SKIP: UNSCHEDULABLE}


def _group_key(pod: Pod) -> str:
    """``namespace/podGroupName`` of a pod group member, else ""."""
    spec = pod.get("spec")
    group = spec.get("schedulingGroup") if spec else None
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    if not name:
        return ""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{name}"


def _in_scheduling_group(pod: Pod) -> bool:
    spec = pod.get("spec")
    return bool(spec and spec.get("schedulingGroup"))
