"""Events and the PodScheduled condition, written off the loop, aggregated, retried and ordered.

A crowd of unschedulable pods retried every few seconds would otherwise flood the API server. Like
client-go's events library, the first occurrence of (pod, reason, message) is created at once and
repeats within ``series_window`` only bump a series count, which is flushed at most every
``flush_interval`` seconds. Scheduled events are never aggregated: each pod is bound once.

A write that fails for want of the API server (connection refused, timeout, 429, 5xx) is kept and
tried again, up to 12 tries, as the events.k8s.io/v1 broadcaster kube-scheduler records through does
(client-go v0.36 ``tools/events`` ``attemptRecording``: ``maxTriesPerEvent = 12``, each sleep
``wait.Jitter(defaultSleepDuration = 10s, 0.25)``, i.e. 10 to 12.5 s, so about two minutes in all).
(The legacy core/v1 sink, ``tools/record`` ``recordToSink``, sleeps a random 0-10 s first, then 10 s;
kube-scheduler uses it only where events.k8s.io/v1 is not served.) client-go retries only transport
errors, and 429/5xx only within the REST client's Retry-After retries; py-scheduler also keeps a
write answered 429 or 5xx without Retry-After (an API server still starting), on the same schedule.
The waits are timers (``retry_due``, called by the loop every second): no thread sleeps. A write is
dropped early when its pod is deleted (``forget_pod``), and every pending one at shutdown. Without this a
4-second API server restart lost the ``Scheduled`` event of a quarter of the pods bound around it.

The PodScheduled=False patch of a failed attempt and the Binding of a later attempt run on different
thread pools. ``before_bind`` orders them: the binding thread cancels a condition patch that has not
started, and waits for one that is on the wire, so the patch can never land after the bind and leave a
bound pod showing PodScheduled=False.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import logging
import math
import random
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import Any

from cachetools import TTLCache

from scheduler.client.api import SchedulerApi
from scheduler.framework.api_error import ApiError
from scheduler.framework.objects import object_meta, pod_status
from scheduler.util.threads import prestart_workers

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"

# Threads writing Events and pod conditions; each holds one API connection while it writes. client-go
# writes each Event from a goroutine of its own. With 2 (or 16) writers here, Scheduled events fell
# thousands behind the bindings at 300 pods/s on a busy API server, each write waiting its turn.
EVENT_WRITERS = 64
# Threads of their own for series PATCHes (counts of repeated Events): thousands of series flushed at
# once must never take the writers that new Events and condition patches need.
SERIES_WRITERS = 4

# The API server rejects an Event whose note is longer (upstream's validation.NoteLengthLimit).
NOTE_LENGTH_LIMIT = 1024

# client-go tools/events: maxTriesPerEvent and defaultSleepDuration, each sleep wait.Jitter(d, 0.25):
# d + rand[0, 1) * 0.25 * d.
MAX_TRIES = 12
RETRY_INTERVAL = 10.0
RETRY_JITTER = 0.25
# Writes waiting for a retry. Past this (an API server down for minutes under a flood of pods) the
# oldest are dropped, as client-go drops when its queue is full, so memory stays bounded.
MAX_PENDING_RETRIES = 10_000
# New Events queued for a writer, not yet started: past this a new aggregated one (FailedScheduling) is
# dropped, as client-go's broadcaster drops the newest (maxQueuedEvents, watch.DropIfChannelFull), so a
# flood of failures with new messages faster than the client's QPS never delays every later write by
# minutes.
MAX_QUEUED_EVENTS = 1000

# Per-request timeout of a condition patch. A binding thread waits at most this long (plus a margin)
# for a patch already on the wire, after which that patch has surely failed or landed.
STATUS_PATCH_TIMEOUT = 10.0
EVENT_TIMEOUT = 10.0


# An Event's name is a DNS subdomain (at most 253 characters), as every object's.
EVENT_NAME_LIMIT = 253
_EVENT_NAME_SUFFIX = 1 + 16  # "." and 8 random bytes in hex


def event_name(pod_name: str, suffix: str = "") -> str:
    """ "<pod>.<random hex>", the pod's part cut so the name stays valid: client-go's recorder appends
    its suffix to any name, and the API server refuses the Event of a pod named near the 253-character
    limit (its FailedScheduling was lost). A cut ending in "." or "-" keeps the name a subdomain.
    ``suffix``: 16 hex digits instead of random ones (``once_per_pod_suffix``)."""
    keep = pod_name[: EVENT_NAME_LIMIT - _EVENT_NAME_SUFFIX].rstrip(".-")
    return f"{keep or 'pod'}.{suffix or secrets.token_hex(8)}"


def once_per_pod_suffix(uid: str, reason: str) -> str:
    """The name suffix of an Event a pod gets at most once (Scheduled: a pod is bound once), the same
    for every writer: a second write of it, by a restarted scheduler or a lost answer's retry, is
    refused by the API server (409) instead of making a duplicate."""
    return hashlib.sha256(f"{uid}/{reason}".encode()).hexdigest()[:16]


def truncate_note(message: str) -> str:
    """Upstream's truncateMessage: cut to the limit, ending in " ..." so the cut shows."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return message[: NOTE_LENGTH_LIMIT - len(suffix)] + suffix


def micro_time(now: float) -> str:
    """RFC 3339 with microseconds, as datetime would print it. Called once per pod on the loop: the
    whole seconds are formatted once per second, the rest is integer arithmetic (~5x cheaper)."""
    global _second_stamp
    # datetime.fromtimestamp's rounding: the fraction to the nearest microsecond, half to even.
    whole, part = math.modf(now)
    second, fraction = int(part), round(whole * 1_000_000)
    if fraction >= 1_000_000:
        second, fraction = second + 1, fraction - 1_000_000
    cached_second, prefix = _second_stamp
    if second != cached_second:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _second_stamp = (second, prefix)
    return f"{prefix}.{fraction:06d}Z"


# The last whole second micro_time formatted, and its text.
_second_stamp: tuple[int, str] = (-1, "")


def rfc3339(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class _Series:
    namespace: str
    name: str
    count: int
    last_seen: float
    flushed_count: int
    # The Event as first created: created again, with its series, when the series PATCH finds it gone.
    body: dict[str, Any]
    # A PATCH of this series is queued and not yet started: a flush does not queue another.
    queued: bool = False


@dataclass(eq=False)
class _StatusGate:
    """Orders one pod's condition patch before its next Binding (see ``before_bind``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    idle: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False
    # A nominatedNodeName write: a later condition patch that sets the nomination supersedes it.
    nomination: bool = False
    # A PodScheduled=False patch, and whether it also sets nominatedNodeName: a later condition patch
    # supersedes it (see ``pod_condition_unschedulable``).
    condition: bool = False
    nominates: bool = False
    # Called (on the writer thread) once the write on the wire has finished: see ``after_patches``.
    on_idle: list[Callable[[], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.idle.set()


class _Countdown:
    """Calls ``then`` once, at the ``count``-th tick (ticks come from writer threads)."""

    def __init__(self, count: int, then: Callable[[], None]) -> None:
        self._left = count
        self._then = then
        self._lock = threading.Lock()

    def tick(self) -> None:
        with self._lock:
            self._left -= 1
            last = self._left == 0
        if last:
            self._then()


@dataclass(eq=False)
class _Write:
    """One Event or condition write, kept until it succeeds, fails for good, or its pod is gone."""

    uid: str
    what: str
    send: Callable[[], None]
    gate: _StatusGate | None = None
    tries: int = 0
    # A new Event counted in the recorder's queued Events until a writer starts it.
    queued_event: bool = False


class EventRecorder:
    """Called on the event loop (except ``before_bind`` and inline events, which binding threads
    write themselves); the other HTTP calls run on a writer pool."""

    def __init__(
        self,
        api: SchedulerApi,
        *,
        reporting_instance: str,
        clock: Callable[[], float],
        series_window: float = 600.0,
        writers: int = EVENT_WRITERS,
        retry_interval: float = RETRY_INTERVAL,
        max_tries: int = MAX_TRIES,
        jitter: Callable[[], float] = random.random,
        max_queued_events: int = MAX_QUEUED_EVENTS,
        events_api: SchedulerApi | None = None,
    ) -> None:
        self._api = api
        # Events go through a client of their own, with its own QPS, as kube-scheduler's eventClient:
        # a flood of Events never holds back Bindings and condition patches (``api``), nor the reverse.
        self._events_api = events_api or api
        self._instance = reporting_instance
        self._clock = clock
        self._series: TTLCache[tuple[str, str, str], _Series] = TTLCache(
            maxsize=50_000, ttl=series_window, timer=clock
        )
        self._dirty: set[tuple[str, str, str]] = set()
        self._executor = ThreadPoolExecutor(max_workers=writers, thread_name_prefix="events")
        self._series_executor = ThreadPoolExecutor(
            max_workers=SERIES_WRITERS, thread_name_prefix="event-series"
        )
        self._writers = writers
        self._retry_interval = retry_interval
        self._max_tries = max_tries
        self._jitter = jitter
        self._max_queued_events = max_queued_events
        self._queued_events = 0  # under _lock
        # Shared by writer threads, the loop and binding threads; every access holds _lock.
        self._lock = threading.Lock()
        self._futures: set[Future[None]] = set()
        self._retries: dict[_Write, float] = {}  # write -> due time (insertion order = age)
        self._gates: dict[str, list[_StatusGate]] = {}  # pod uid -> its unfinished condition patches
        # pod uid -> (resourceVersion, reason, message) of the last PodScheduled=False patch sent from
        # that version of the pod, while it may still land: see pod_condition_unschedulable.
        self._conditions_sent: TTLCache[str, tuple[str, str, str]] = TTLCache(
            maxsize=50_000, ttl=series_window, timer=clock
        )
        self._closed = False
        # Pods deleted recently: a write of theirs that fails after forget_pod() is not retried.
        self._gone: TTLCache[str, bool] = TTLCache(maxsize=50_000, ttl=series_window, timer=clock)
        self.created = 0
        self.aggregated = 0
        self.retried = 0
        self.dropped = 0
        self.conditions_skipped = 0

    # --- the writer pool ----------------------------------------------------------------------
    def prestart(self) -> bool:
        """Start every writer thread now (off the loop; it blocks), so a burst of writes submitted from
        the loop (a gang's nominatedNodeName patches) never waits there for threads to start."""
        return prestart_workers(self._executor, self._writers)

    def _submit(self, write: _Write, executor: ThreadPoolExecutor | None = None) -> None:
        with self._lock:
            if self._closed:
                # Shutdown went ahead: a late binding result must not raise into the loop.
                log.debug("%s dropped: the recorder is shut down", write.what)
                return
            future = (executor or self._executor).submit(self._run, write)
            self._futures.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._futures.discard(future)

    def _run(self, write: _Write) -> None:
        if write.queued_event:
            write.queued_event = False
            with self._lock:
                self._queued_events -= 1
        gate = write.gate
        if gate is not None:
            with gate.lock:
                if gate.cancelled:
                    return  # superseded by a Binding or a newer patch: never send it late
                gate.idle.clear()
        kept = False
        try:
            write.send()
        except ApiError as err:
            write.tries += 1
            if err.retryable and write.tries < self._max_tries:
                log.info("%s failed (try %d, will retry): %s", write.what, write.tries, err)
                kept = self._keep_for_retry(write)
            else:
                with self._lock:
                    self.dropped += 1
                    if gate is not None:
                        self._conditions_sent.pop(write.uid, None)
                log.warning("%s failed (try %d, giving up): %s", write.what, write.tries, err)
        except Exception:
            log.exception("%s crashed", write.what)
        finally:
            if gate is not None:
                with gate.lock:
                    gate.idle.set()
                    callbacks, gate.on_idle = gate.on_idle, []
                if not kept:
                    self._drop_gate(write.uid, gate)
                for callback in callbacks:
                    callback()

    def _drop_gate(self, uid: str, gate: _StatusGate) -> None:
        with self._lock:
            gates = self._gates.get(uid)
            if gates is not None and gate in gates:
                gates.remove(gate)
                if not gates:
                    del self._gates[uid]

    def _keep_for_retry(self, write: _Write) -> bool:
        # wait.Jitter(defaultSleepDuration, 0.25): never sooner than the interval, up to 25% later.
        due = self._clock() + self._retry_interval * (1.0 + RETRY_JITTER * self._jitter())
        with self._lock:
            if self._closed or write.uid in self._gone:
                return False
            self._retries[write] = due
            while len(self._retries) > MAX_PENDING_RETRIES:
                oldest = next(iter(self._retries))
                del self._retries[oldest]
                self.dropped += 1
                if oldest.gate is not None:
                    self._conditions_sent.pop(oldest.uid, None)
                log.warning("%s dropped: too many writes waiting for a retry", oldest.what)
        return True

    def retry_due(self) -> int:
        """Resubmit the writes whose retry time has come (call periodically from the loop)."""
        now = self._clock()
        with self._lock:
            due = [w for w, at in self._retries.items() if at <= now]
            for write in due:
                del self._retries[write]
        for write in due:
            self.retried += 1
            self._submit(write)
        return len(due)

    @property
    def pending_retries(self) -> int:
        with self._lock:
            return len(self._retries)

    def forget_pod(self, uid: str) -> None:
        """The pod is gone: its writes waiting for a retry are dropped (call from the loop)."""
        if not uid:
            return
        with self._lock:
            self._gone[uid] = True
            for write in [w for w in self._retries if w.uid == uid]:
                del self._retries[write]
            gates = self._gates.pop(uid, ())
            self._conditions_sent.pop(uid, None)
        for gate in gates:
            with gate.lock:
                gate.cancelled = True

    # --- Events -------------------------------------------------------------------------------
    def event(
        self,
        pod: Mapping[str, Any],
        *,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        controller: str,
        aggregate: bool = True,
        inline: bool = False,
        once_per_pod: bool = False,
    ) -> None:
        """``inline``: write it in the calling thread (a binding thread, never the loop), not through
        the writer pool: one thread hand-off less per pod. Only for events that are not aggregated
        (the series bookkeeping belongs to the loop); a retry still goes through the pool.
        ``once_per_pod``: an Event the pod gets once (Scheduled), named after its uid and reason, so
        writing it again never makes a second one."""
        meta = object_meta(pod)
        namespace = meta.get("namespace", "default")
        uid = meta.get("uid", "")
        key = (uid, reason, message)
        now = self._clock()
        if aggregate:
            series = self._series.get(key)
            if series is not None:
                series.count += 1
                series.last_seen = now
                self._dirty.add(key)
                self.aggregated += 1
                return
        name = event_name(meta.get("name", "pod"), once_per_pod_suffix(uid, reason) if once_per_pod else "")
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(now),
            "reportingController": controller,
            "reportingInstance": self._instance,
            "action": action,
            "reason": reason,
            "note": truncate_note(message),
            "type": event_type,
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": namespace,
                "name": meta.get("name", ""),
                "uid": uid,
                "resourceVersion": meta.get("resourceVersion", ""),
            },
        }
        write = _Write(uid, f"{reason} event for {namespace}/{meta.get('name', '')}", self._creator(body))
        if inline and not aggregate:
            with self._lock:
                if self._closed:
                    log.debug("%s dropped: the recorder is shut down", write.what)
                    return
                self.created += 1
            self._run(write)
            return
        with self._lock:
            # Only an aggregated Event may be dropped: its series brings it back. A Scheduled Event
            # (a pod gets it once; the start-up recovery sends up to 2,000 at once) is always kept.
            if aggregate and self._queued_events >= self._max_queued_events:
                self.dropped += 1
                log.debug("%s dropped: %d Events queued already", write.what, self._queued_events)
                full = True
            else:
                self._queued_events += 1
                full = False
                write.queued_event = True
        if aggregate:
            # Kept even when dropped: a repeat's series PATCH finds no Event and creates it.
            self._series[key] = _Series(namespace, name, 1, now, 1, body)
        if full:
            return
        self.created += 1
        self._submit(write)

    def _creator(self, body: dict[str, Any]) -> Callable[[], None]:
        namespace = body["metadata"]["namespace"]

        def create() -> None:
            try:
                self._events_api.create_event(namespace, body, timeout=EVENT_TIMEOUT)
            except ApiError as err:
                # A retry of a create that reached the server before its answer was lost.
                if err.status != 409:
                    raise

        return create

    def flush_series(self) -> None:
        """Send the counts of repeated events (call periodically from the loop)."""
        dirty, self._dirty = self._dirty, set()
        for key in dirty:
            series = self._series.get(key)
            if series is None or series.count == series.flushed_count:
                continue
            if series.queued:
                self._dirty.add(key)  # its queued PATCH carries an older count: the next flush sends this
                continue
            series.flushed_count = series.count
            series.queued = True
            patch = {"series": {"count": series.count, "lastObservedTime": micro_time(series.last_seen)}}
            send = functools.partial(self._patch_series, series, patch)
            write = _Write(key[0], f"series of event {series.namespace}/{series.name}", send)
            self._submit(write, self._series_executor)

    def _patch_series(self, series: _Series, patch: dict[str, Any]) -> None:
        """PATCH the series; an Event that is gone (expired by the API server's event TTL, or its create
        failed for good: a namespace being terminated, an API server down past every retry) is created
        again with the series, as client-go's ``recordEvent`` does, so a pod that keeps failing still
        shows why. (Writer thread: ``series.body`` is never changed after the loop made it.)"""
        series.queued = False
        try:
            self._events_api.patch_event(series.namespace, series.name, patch, timeout=EVENT_TIMEOUT)
        except ApiError as err:
            if err.status != 404:
                raise
            self._creator({**series.body, **patch})()

    # --- the PodScheduled condition -----------------------------------------------------------
    def pod_condition_unschedulable(
        self, pod: Mapping[str, Any], *, reason: str, message: str, nominated_node: str | None = None
    ) -> None:
        """Set PodScheduled=False with ``reason``, unless the pod already says exactly that, or this
        very version of the pod was already given exactly that by a patch that may still land.

        The second case is a pod tried again before the watch has shown the patch of its previous
        failure (a cluster event sent it back at once): its object still lacks the condition, but a
        second identical patch would only move lastTransitionTime and cost the API server a write
        and a watch event for every watcher of pods."""
        meta = object_meta(pod)
        namespace, name, uid = meta.get("namespace", "default"), meta.get("name", ""), meta.get("uid", "")
        sent = (meta.get("resourceVersion", ""), reason, message)
        if nominated_node is None:
            for condition in pod_status(pod).get("conditions") or ():
                if (
                    condition.get("type") == "PodScheduled"
                    and condition.get("status") == "False"
                    and condition.get("reason") == reason
                    and condition.get("message") == message
                ):
                    return
            with self._lock:
                if sent[0] and self._conditions_sent.get(uid) == sent:
                    self.conditions_skipped += 1
                    return
        now = rfc3339(self._clock())
        patch: dict[str, Any] = {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": reason,
                        "message": message,
                        "lastProbeTime": None,
                        "lastTransitionTime": now,
                    }
                ]
            }
        }
        if nominated_node is not None:
            patch["status"]["nominatedNodeName"] = nominated_node
        nominates = nominated_node is not None
        gate = _StatusGate(condition=True, nominates=nominates)
        with self._lock:
            gates = self._gates.setdefault(uid, [])
            # An earlier condition patch of this pod is superseded by this one (a newer message), unless
            # it carries a nomination this one does not; a nominatedNodeName write, when this one sets
            # the nomination too.
            earlier = [
                g
                for g in gates
                if (g.condition and (nominates or not g.nominates)) or (g.nomination and nominates)
            ]
            if earlier:
                gates[:] = [g for g in gates if g not in earlier]  # this patch waits for them instead
            gates.append(gate)
            self._conditions_sent[uid] = sent
        # An earlier write not yet sent never is (a pod retried faster than the writers, held back by
        # the client's QPS, would otherwise queue one stale patch per attempt, without bound); one on
        # the wire lands first, so the pod ends with this patch whatever the writers' order.
        for superseded in earlier:
            with superseded.lock:
                superseded.cancelled = True

        def send() -> None:
            for superseded in earlier:
                superseded.idle.wait(STATUS_PATCH_TIMEOUT + 1.0)
            self._api.patch_pod_status(namespace, name, patch, timeout=STATUS_PATCH_TIMEOUT)

        self._submit(_Write(uid, f"PodScheduled=False of {namespace}/{name}", send, gate=gate))

    def pod_condition_scheduled(self, pod: Mapping[str, Any]) -> None:
        """PodScheduled=True on a bound pod that a failed attempt's patch left showing False (what the
        API server sets at binding; a kubelet would also set it, a cluster without one never would)."""
        meta = object_meta(pod)
        namespace, name, uid = meta.get("namespace", "default"), meta.get("name", ""), meta.get("uid", "")
        condition = {
            "type": "PodScheduled",
            "status": "True",
            "reason": None,
            "message": None,
            "lastProbeTime": None,
            "lastTransitionTime": rfc3339(self._clock()),
        }
        patch = {"status": {"conditions": [condition]}}
        send = functools.partial(
            self._api.patch_pod_status, namespace, name, patch, timeout=STATUS_PATCH_TIMEOUT
        )
        self._submit(_Write(uid, f"PodScheduled=True of {namespace}/{name}", send))

    def annotate_pod(self, key: str, uid: str, annotations: Mapping[str, str]) -> None:
        """Merge ``annotations`` into pod ``key`` (namespace/name), off the loop like the condition.

        Sent through pods/status, which system:kube-scheduler may patch (the apiserver keeps metadata
        changes made there, except ownerReferences). The uid in the patch makes it fail (422, not
        retried) on a namesake that replaced the pod."""
        namespace, _, name = key.partition("/")
        patch = {"metadata": {"uid": uid, "annotations": dict(annotations)}}
        send = functools.partial(
            self._api.patch_pod_status, namespace, name, patch, timeout=STATUS_PATCH_TIMEOUT
        )
        self._submit(_Write(uid, f"annotation of {key}", send))

    def patch_pod_group_status(self, path: str, uid: str, patch: Mapping[str, Any], what: str) -> None:
        """Strategic-merge patch of a PodGroup's status subresource at ``path``, off the loop like the
        pods' conditions and retried on transient failures (upstream: retry.OnError)."""
        content_type = "application/strategic-merge-patch+json"

        def send() -> None:
            self._api.request_json("PATCH", path, patch, content_type=content_type)

        self._submit(_Write(uid, what, send))

    def nominate_pod(self, pod: Mapping[str, Any], node_name: str, *, inline: bool = False) -> None:
        """``status.nominatedNodeName`` = ``node_name`` (upstream's updatePod with a NominatingInfo
        and no condition). ``inline``: written now on the calling (binding) thread, raising on
        failure; otherwise off the loop like the condition, retried on transient failures."""
        meta = object_meta(pod)
        namespace, name, uid = meta.get("namespace", "default"), meta.get("name", ""), meta.get("uid", "")
        patch = {"status": {"nominatedNodeName": node_name}}
        send = functools.partial(
            self._api.patch_pod_status, namespace, name, patch, timeout=STATUS_PATCH_TIMEOUT
        )
        if inline:
            send()
            return
        gate = _StatusGate(nomination=True)
        with self._lock:
            self._gates.setdefault(uid, []).append(gate)
        self._submit(_Write(uid, f"nominatedNodeName of {namespace}/{name}", send, gate=gate))

    def before_bind(self, uid: str, timeout: float = STATUS_PATCH_TIMEOUT + 1.0) -> bool:
        """Called by a binding thread right before the Binding POST of pod ``uid``.

        A condition patch not yet sent (or waiting for a retry) is cancelled; one on the wire is waited
        for, at most ``timeout``. Returns False when that wait timed out (the caller may bind anyway:
        the patch's own timeout is shorter, so it has failed or landed by then).
        """
        gates = self.cancel_condition_patches(uid)
        if not gates:
            return True
        deadline = time.monotonic() + timeout
        return all(gate.idle.wait(max(0.0, deadline - time.monotonic())) for gate in gates)

    def after_patches(self, uid: str, then: Callable[[], None]) -> bool:
        """``before_bind`` without the wait, for the loop: pod ``uid``'s patches not yet sent are
        cancelled; True when none is on the wire (bind now), else False, and ``then`` is called on a
        writer thread once every one on the wire has finished. A released gang's waiters thus wait
        for their own nominatedNodeName patch without holding a binding thread each."""
        on_wire: list[_StatusGate] = []
        for gate in self.cancel_condition_patches(uid):
            with gate.lock:
                if not gate.idle.is_set():
                    on_wire.append(gate)
        if not on_wire:
            return True
        countdown = _Countdown(len(on_wire), then)
        for gate in on_wire:
            with gate.lock:
                landed = gate.idle.is_set()
                if not landed:
                    gate.on_idle.append(countdown.tick)
            if landed:
                countdown.tick()
        return False

    def cancel_condition_patches(self, uid: str) -> list[_StatusGate]:
        """Cancel pod ``uid``'s condition patches not yet sent (or waiting for a retry): the pod is
        bound, and a PodScheduled=False landing now would contradict it. Returns every gate, those on
        the wire included (``before_bind`` waits for them). Never blocks: callable from the loop."""
        # Nearly every pod bound never had a condition patch. Both maps gain entries on the loop only
        # (pod_condition_unschedulable, nominate_pod), so a lookup without the lock that finds neither
        # is what the locked pops below would find, and it spares every binding the lock (shared
        # with every binding thread's Event) and TTLCache.pop: ~6 us per pod on the loop.
        try:
            absent = uid not in self._gates and uid not in self._conditions_sent
        except TypeError:
            # TTLCache.__setitem__ links a key before it sets its expiry: an insert in progress (none
            # is made for a pod that is binding today) is left to the locked path.
            absent = False
        if absent:
            return []
        with self._lock:
            gates = self._gates.pop(uid, [])
            # A cancelled patch never lands: a later failure of this pod must send its own.
            self._conditions_sent.pop(uid, None)
        for gate in gates:
            with gate.lock:
                gate.cancelled = True
        return gates

    # --- shutdown -----------------------------------------------------------------------------
    def shutdown(self, wait: bool = True, timeout: float | None = None) -> bool:
        """Stop accepting writes. With ``wait``, wait for those in progress, at most ``timeout``.

        Writes waiting for a retry are abandoned. Returns True when nothing is left on the wire.
        """
        with self._lock:
            self._closed = True
            abandoned = len(self._retries)
            self._retries.clear()
            futures = set(self._futures)
        if abandoned:
            log.warning("%d event/condition writes abandoned at shutdown (API server unreachable)", abandoned)
        done = True
        if wait and futures:
            _, not_done = wait_futures(futures, timeout=timeout)
            done = not not_done
            if not done:
                log.warning("%d event/condition writes still in flight at shutdown", len(not_done))
        # Threads stuck on a dead connection are left behind; the CLI exits without joining them.
        self._executor.shutdown(wait=wait and done, cancel_futures=True)
        self._series_executor.shutdown(wait=wait and done, cancel_futures=True)
        return done
