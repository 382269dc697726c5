"""The preemption Executor: evicts the chosen victims off the event loop
(``pkg/scheduler/framework/preemption/executor.go``, async preemption as on by default in v1.36).

On the loop, ``actuate`` decides what happens in memory at once: victims waiting at Permit are rejected
there, lower-priority pods nominated to the node lose their nomination, and the preemptor is marked
"running preemption" so DefaultPreemption's PreEnqueue holds it back. The API writes run in a pool of
writer threads, in upstream's order: first the cleared nominations; then every victim but the last, in
parallel (upstream's ``Parallelizer().Until``), each one a ``DisruptionTarget`` condition patch (reason
``PreemptionByScheduler``) and a delete; then, once they all succeeded, the last victim. Each write's
result comes back to the loop with ``call_soon_threadsafe`` (the ``Preempted`` Event, the bookkeeping),
and the loop starts the next phase: no thread waits for another phase to end. Writes waiting for a
writer go oldest preemption first (``_submit``), so a run's last victim does not queue behind the first
writes of runs started after it. The preemptor is not polled: it waits in the queue and is woken by
the victims' deletion events (its Filter rejectors' queueing hints).

As upstream, the preemptor counts as running preemption until its last victim is deleted or has a
deletionTimestamp; on a failed API call it is activated at once so a new attempt can decide again. Two
refinements close races in which an attempt can only fail (or evict the same victim again), and only
change when the preemptor is retried, never what it decides:

* A victim deleted with a zero grace period (no finalizers) is removed by the same request that sets
  its deletionTimestamp; that transient terminating state does not release the preemptor, its removal
  does. (Upstream releases it in between, and an attempt then fails on "a terminating pod on the
  nominated node", writing a FailedScheduling Event and a status patch for nothing.) A victim in
  graceful termination releases it at once, as upstream: it may find room elsewhere meanwhile.
* After the last deletion succeeded, the hold lasts until the informer shows every deletion that
  succeeded (upstream stops holding when its goroutine ends; an attempt before the watch catches up
  sees the victim still running and preempts it again). At most ``SETTLE_TIMEOUT`` seconds, then the
  preemptor is activated.
* On a failed write the preemptor is activated (upstream) once the informer shows the deletions that
  did succeed, not before: an attempt on a cache that still shows an evicted pod may reprieve it and
  evict another pod of the same priority in its place, one victim too many.

``preempt_now`` is the synchronous preemption of kube-scheduler v1.34's ``prepareCandidate``, which
scheduler-plugins v0.34.7's CapacityScheduling uses (it builds its Evaluator with async preemption
off): the PostFilter awaits the victims' writes, then the cleared nominations, and the next pod is
scheduled only after that, so the next preemptor meets the victims already deleted and this preemptor
nominated. The writes run in the same writer threads; the awaiting coroutine runs on the loop and
returns once the informer shows what the API server did (each deleted victim gone, or terminating when
it has a grace period), as upstream's next cycle sees it: until then the cache would still count the
victims, and the next preemptor would evict others in their place.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from scheduler import metrics
from scheduler.client.events import NORMAL, rfc3339
from scheduler.framework.api_error import ApiError
from scheduler.framework.objects import namespaced_name, object_meta, pod_status, uid_of
from scheduler.framework.status import Status
from scheduler.framework.types import PodInfo
from scheduler.preemption.pods import DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER

log = logging.getLogger(__name__)

# Writes in flight at once, over all preemptions. Upstream runs a goroutine per preemption and 16
# (parallelism) victims of each at a time; a bounded pool keeps a burst of preemptions from opening a
# connection per victim. Each write is two round trips (patch, delete) that mostly wait on the apiserver.
PREEMPTION_WRITERS = 32
# What became of one victim's writes.
EVICTED, GONE, FAILED = "evicted", "gone", "failed"
# How long a finished preemption may wait for the informer to show its last victim's deletion.
SETTLE_TIMEOUT = 10.0
# How often a failed preemption looks for the informer to have shown its deletions.
SETTLE_POLL = 0.05
# How often a synchronous preemption, which holds up the scheduling cycle, looks for the same.
SYNC_POLL = 0.002
# The candidate a pod group's preemption names (upstream's cluster-wide domain).
CLUSTER_DOMAIN = "cluster"


class VictimApi(Protocol):
    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None: ...

    def delete_pod(self, namespace: str, name: str, uid: str = "") -> bool: ...


class Recorder(Protocol):
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
    ) -> None: ...


class Waiting(Protocol):
    def reject(self, plugin: str, message: str) -> None: ...


class Nominations(Protocol):
    """The queue's side: who is nominated where, clearing a nomination, and Activate."""

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]: ...

    def clear_nomination(self, pod: Mapping[str, Any]) -> None: ...

    def activate(self, pod: Mapping[str, Any]) -> None: ...


@dataclass(slots=True)
class _Run:
    preemptor: PodInfo
    node_name: str
    started: float
    # Set when the last victim's write starts (upstream's lastVictimsPendingPreemption), with its uid.
    last_victim: str = ""
    last_uid: str = ""
    failed: bool = False
    victims: list[PodInfo] = field(default_factory=list)
    # (key, uid) of the victims whose deletion the API server acknowledged.
    deleted: list[tuple[str, str]] = field(default_factory=list)
    # Writes of the current phase not yet reported back to the loop.
    pending: int = 0
    # Who preempts, as upstream's ExecutorPreemptor names it ("pod" or "podgroup"), its uid, and the
    # pods to activate when the run ends (a pod group's members).
    kind: str = "pod"
    subject_uid: str = ""
    members: tuple[PodInfo, ...] = ()


class PreemptionExecutor:
    """Owned by the event loop; only ``_write`` runs in the writer threads."""

    def __init__(
        self,
        *,
        api: VictimApi | None,
        recorder: Recorder,
        nominations: Nominations,
        assigned_pod: Callable[[str], PodInfo | None],
        waiting_pods: Callable[[], Mapping[str, Waiting]],
        clock: Callable[[], float] = time.time,
        writers: int = PREEMPTION_WRITERS,
        settle_timeout: float = SETTLE_TIMEOUT,
    ) -> None:
        self._api = api
        self._recorder = recorder
        self._nominations = nominations
        self._assigned_pod = assigned_pod
        self._waiting_pods = waiting_pods
        self._clock = clock
        self._pool = ThreadPoolExecutor(max_workers=writers, thread_name_prefix="preemption")
        # The asynchronous runs' writes, oldest run first (see _submit): (run started, order, write).
        self._writes: list[tuple[float, int, Callable[[], None]]] = []
        self._writes_lock = threading.Lock()
        self._write_order = itertools.count()
        self._runs: dict[str, _Run] = {}
        # Finished runs whose last deletion the informer has not shown yet.
        self._settling: dict[str, _Run] = {}
        self._settle_timeout = settle_timeout
        self.preempted = 0

    # --- loop side ----------------------------------------------------------------------------
    def actuate(
        self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo], plugin: str
    ) -> Status | None:
        """Start evicting ``victims`` from ``node_name`` for ``preemptor``; returns at once."""
        to_delete = [v for v in victims if not object_meta(v.pod).get("deletionTimestamp")]
        if not to_delete:
            return None
        metrics.PREEMPTION_VICTIMS.observe(len(victims))
        run = _Run(preemptor, node_name, time.perf_counter())
        lower = [
            p for p in self._nominations.nominated_pods_for_node(node_name) if p.priority < preemptor.priority
        ]
        for nominated in lower:
            # In memory now, so no cycle hands the room to them before the status patch lands.
            self._nominations.clear_nomination(nominated.pod)
        run.victims.extend(self._reject_waiting(run, to_delete, plugin))
        if not run.victims and not lower:
            return None
        # One line per decision: which round chose what, when a preemptor preempts more than once.
        log.info(
            "preempting %d pod(s) on node %s for %s: %s",
            len(to_delete),
            node_name,
            preemptor.key,
            ", ".join(v.key for v in to_delete),
        )
        key = _ident(preemptor)
        self._runs[key] = run
        self._settling.pop(key, None)
        metrics.GOROUTINES.labels(metrics.OPERATION_PREEMPTION).inc()
        loop = asyncio.get_running_loop()
        lower_pods = [p.pod for p in lower if pod_status(p.pod).get("nominatedNodeName")]
        if lower_pods:
            run.pending = 1
            self._submit(run, functools.partial(self._clear_nominations, loop, key, run, lower_pods))
        else:
            self._preempt_all_but_last(loop, key, run)
        return None

    async def preempt_now(
        self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo], plugin: str
    ) -> Status | None:
        """Synchronous preemption (v1.34's ``prepareCandidate``, see the module docstring): every victim
        in parallel (rejected at Permit, or a DisruptionTarget patch and a delete), then the
        lower-priority pods nominated to the node lose their nomination. None once done and shown by the
        informer; an error status when a victim's write failed (the nominations are then left alone)."""
        loop = asyncio.get_running_loop()
        run = _Run(preemptor, node_name, time.perf_counter(), victims=list(victims))
        to_write = self._reject_waiting(run, victims, plugin)
        writes: list[asyncio.Future[str]] = [
            loop.run_in_executor(self._pool, self._preempt_victim_safely, run, victim) for victim in to_write
        ]
        if to_write:
            log.info(
                "preempting %d pod(s) on node %s for %s: %s",
                len(to_write),
                node_name,
                preemptor.key,
                ", ".join(v.key for v in to_write),
            )
        outcomes = await asyncio.gather(*writes)
        failed = []
        for victim, outcome in zip(to_write, outcomes, strict=True):
            if outcome == FAILED:
                failed.append(victim.key)
                continue
            if outcome == EVICTED:
                self._record_preempted(run, victim, False)
            run.deleted.append((victim.key, victim.uid))
        if failed:
            await self._shown_by_informer(run)
            return Status.as_error(f"preempting {', '.join(failed)} for {preemptor.key} failed")
        metrics.PREEMPTION_VICTIMS.observe(len(victims))
        lower = [
            p for p in self._nominations.nominated_pods_for_node(node_name) if p.priority < preemptor.priority
        ]
        for nominated in lower:
            self._nominations.clear_nomination(nominated.pod)
        lower_pods = [p.pod for p in lower if pod_status(p.pod).get("nominatedNodeName")]
        if lower_pods:
            # As upstream, a failed clear is logged and the preemption still succeeds.
            await loop.run_in_executor(self._pool, self._clear_nominations_blocking, lower_pods)
        await self._shown_by_informer(run)
        return None

    async def _shown_by_informer(self, run: _Run) -> None:
        """Wait (polling the cache, at most ``settle_timeout``) until no acknowledged deletion of ``run``
        is still shown as a running pod."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._settle_timeout
        while self._deleted_victim_remains(run):
            if loop.time() >= deadline:
                log.warning(
                    "preemption for %s: the informer has not shown every victim's deletion after %.0fs",
                    run.preemptor.key,
                    self._settle_timeout,
                )
                return
            await asyncio.sleep(SYNC_POLL)

    def actuate_group(
        self,
        pod_group: Mapping[str, Any],
        members: Sequence[PodInfo],
        victims: Sequence[PodInfo],
        plugin: str,
    ) -> Status | None:
        """Upstream's actuatePodGroupPreemption: evict ``victims`` (on any nodes) for a pod group's
        ``members``. The run is keyed by the PodGroup's uid, which DefaultPreemption's PreEnqueue asks
        about for every member; Events say "Preempted by podgroup <uid> on node cluster". When it ends,
        the members are activated once the informer shows the deletions: they retry after backoff
        only, and no victim's deletion event wakes them."""
        metrics.WORKLOAD_PREEMPTION_VICTIMS.observe(len(victims))
        to_delete = [v for v in victims if not object_meta(v.pod).get("deletionTimestamp")]
        if not to_delete or not members:
            return None
        uid = uid_of(pod_group)
        run = _Run(members[0], CLUSTER_DOMAIN, time.perf_counter())
        run.kind, run.subject_uid, run.members = "podgroup", uid, tuple(members)
        run.victims.extend(self._reject_waiting(run, to_delete, plugin))
        if not run.victims:
            self._activate(run)
            return None
        log.info(
            "preempting %d pod(s) for pod group %s: %s",
            len(to_delete),
            namespaced_name(pod_group),
            ", ".join(v.key for v in to_delete),
        )
        key = uid or namespaced_name(pod_group)
        self._runs[key] = run
        self._settling.pop(key, None)
        metrics.GOROUTINES.labels(metrics.OPERATION_PREEMPTION).inc()
        # Upstream clears lower-priority nominations on the candidate's node, "cluster": there are none.
        self._preempt_all_but_last(asyncio.get_running_loop(), key, run)
        return None

    def _activate(self, run: _Run) -> None:
        for pod in run.members or (run.preemptor,):
            self._nominations.activate(pod.pod)

    def is_pod_running_preemption(self, pod: Mapping[str, Any]) -> bool:
        """``IsPodRunningPreemption``: until the last victim is gone or terminating (while the others
        are still being evicted, regardless of the last one); see the module docstring for the
        zero-grace and settling refinements.

        Asked by PreEnqueue for every held preemptor on every victim's deletion (upstream's queue
        re-runs PreEnqueue for each): no run and nothing settling is answered without a look-up."""
        runs, settling = self._runs, self._settling
        if not runs and not settling:
            return False
        key = uid_of(pod) or namespaced_name(pod)  # the run's key, as _ident makes it from a PodInfo
        run = runs.get(key)
        if run is not None:
            return not run.last_victim or self._victim_remains(run.last_victim, run.last_uid)
        run = settling.get(key)
        if run is None:
            return False
        if self._deleted_victim_remains(run):
            return True
        del settling[key]
        return False

    def _deleted_victim_remains(self, run: _Run) -> bool:
        """The informer still shows a victim whose deletion the API server acknowledged."""
        return any(self._victim_remains(key, uid) for key, uid in run.deleted)

    def _victim_remains(self, key: str, uid: str) -> bool:
        victim = self._assigned_pod(key)
        if victim is None:
            return False
        meta = object_meta(victim.pod)
        if uid and meta.get("uid") != uid:
            return False  # a namesake: the victim itself is gone
        if not meta.get("deletionTimestamp"):
            return True
        # Being removed right now (grace period 0, nothing to finalize) rather than terminating.
        return meta.get("deletionGracePeriodSeconds") == 0 and not meta.get("finalizers")

    @property
    def in_flight(self) -> int:
        return len(self._runs)

    def shutdown(self, wait: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)

    def _reject_waiting(self, run: _Run, victims: Sequence[PodInfo], plugin: str) -> list[PodInfo]:
        """Rejects the victims still waiting at Permit (that frees their room without an API call) and
        returns the others, which must be evicted through the API."""
        waiting = self._waiting_pods()
        to_evict: list[PodInfo] = []
        for victim in victims:
            held = waiting.get(victim.key)
            if held is not None:
                held.reject(plugin, "preempted")
                self._record_preempted(run, victim, True)
            else:
                to_evict.append(victim)
        return to_evict

    def _record_preempted(self, run: _Run, victim: PodInfo, in_memory: bool) -> None:
        message = f"Preempted by {run.kind} {run.subject_uid or run.preemptor.uid} on node {run.node_name}"
        if in_memory:
            message += " (in kube-scheduler memory)."
        self.preempted += 1
        self._recorder.event(
            victim.pod,
            event_type=NORMAL,
            reason="Preempted",
            action="Preempting",
            message=message,
            controller=run.preemptor.scheduler_name,
            aggregate=False,
        )

    def _preempt_all_but_last(self, loop: asyncio.AbstractEventLoop, key: str, run: _Run) -> None:
        """Phase two: every victim but the last, all at once."""
        others = run.victims[:-1]
        if not others:
            self._preempt_last(loop, key, run)
            return
        run.pending = len(others)
        for victim in others:
            self._submit(run, functools.partial(self._write_victim, loop, key, run, victim))

    def _preempt_last(self, loop: asyncio.AbstractEventLoop, key: str, run: _Run) -> None:
        """Phase three: the last victim, once the others are gone (upstream's order). From now on the
        preemptor's hold ends as soon as this victim is terminating."""
        if not run.victims:
            self._finish(key, run)
            return
        last = run.victims[-1]
        run.last_victim = last.key
        run.last_uid = last.uid
        run.pending = 1
        self._submit(run, functools.partial(self._write_victim, loop, key, run, last))

    def _nominations_cleared(self, loop: asyncio.AbstractEventLoop, key: str, run: _Run, ok: bool) -> None:
        # As upstream, a failed clear marks the run failed but the victims are still evicted.
        run.failed |= not ok
        run.pending = 0
        self._preempt_all_but_last(loop, key, run)

    def _victim_written(
        self, loop: asyncio.AbstractEventLoop, key: str, run: _Run, victim: PodInfo, outcome: str
    ) -> None:
        if outcome == FAILED:
            run.failed = True
        else:
            if outcome == EVICTED:
                # Upstream records no Event for a victim that was already gone.
                self._record_preempted(run, victim, False)
            run.deleted.append((victim.key, victim.uid))
        run.pending -= 1
        if run.pending:
            return
        if run.last_victim or run.failed:
            # The last victim is done, or another failed and the last one is spared (upstream).
            self._finish(key, run)
        else:
            self._preempt_last(loop, key, run)

    def _finish(self, key: str, run: _Run) -> None:
        if self._runs.get(key) is run:
            del self._runs[key]
        metrics.GOROUTINES.labels(metrics.OPERATION_PREEMPTION).dec()
        result = metrics.GOROUTINE_RESULT_ERROR if run.failed else metrics.GOROUTINE_RESULT_SUCCESS
        metrics.PREEMPTION_GOROUTINES_DURATION.labels(result).observe(time.perf_counter() - run.started)
        metrics.PREEMPTION_GOROUTINES_EXECUTION.labels(result).inc()
        elapsed = time.perf_counter() - run.started
        metrics.PREEMPTION_EXECUTION_DURATION.labels(run.kind, result).observe(elapsed)
        if self._deleted_victim_remains(run):
            # Deleted, but the watch has not shown it yet: hold on until it does. A finished run's
            # preemptor is woken by the delete events (its rejectors' hints; PreEnqueue releases it),
            # or activated at the timeout in case they never come. A failed run's preemptor is
            # activated as soon as the cache shows the deletions (a timer; no thread waits).
            self._settling[key] = run
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self._settle_timeout
            if run.failed or run.members:
                loop.call_later(SETTLE_POLL, self._activate_when_settled, key, run, deadline)
            else:
                loop.call_later(self._settle_timeout, self._settle_expired, key, run)
        elif run.failed or run.members:
            # As upstream: the preemptor tries again now rather than waiting for events that may never come.
            self._activate(run)

    def _settle_expired(self, key: str, run: _Run) -> None:
        if self._settling.get(key) is run:
            del self._settling[key]
            self._activate(run)

    def _activate_when_settled(self, key: str, run: _Run, deadline: float) -> None:
        if self._settling.get(key) is not run:
            return  # released meanwhile by PreEnqueue, on its way to activeQ
        loop = asyncio.get_running_loop()
        if self._deleted_victim_remains(run) and loop.time() < deadline:
            loop.call_later(SETTLE_POLL, self._activate_when_settled, key, run, deadline)
            return
        self._settle_expired(key, run)

    def _submit(self, run: _Run, write: Callable[[], None]) -> None:
        """Queue one of an asynchronous run's writes; the writers take the oldest run's first.

        In a burst of preemptions the writes queue up, and every preemptor is held (its PreEnqueue
        re-run on every victim's deletion) until its run ends. In submission order a run's last victim,
        written only after the others, would queue behind the first writes of every run started
        meanwhile; oldest first, runs end about in the order they started, each held for less time.
        Each pool task runs exactly one write: the oldest waiting when it starts."""
        with self._writes_lock:
            heapq.heappush(self._writes, (run.started, next(self._write_order), write))
        self._pool.submit(self._write_oldest)

    def _write_oldest(self) -> None:
        with self._writes_lock:
            _, _, write = heapq.heappop(self._writes)
        write()

    # --- writer threads -----------------------------------------------------------------------
    def _clear_nominations(
        self,
        loop: asyncio.AbstractEventLoop,
        key: str,
        run: _Run,
        lower_nominated: Sequence[Mapping[str, Any]],
    ) -> None:
        ok = self._clear_nominations_blocking(lower_nominated)
        _report(loop, self._nominations_cleared, loop, key, run, ok)

    def _clear_nominations_blocking(self, lower_nominated: Sequence[Mapping[str, Any]]) -> bool:
        ok = True
        for pod in lower_nominated:
            meta = object_meta(pod)
            try:
                self._patch(meta, {"status": {"nominatedNodeName": None}})
            except ApiError as err:
                log.warning("clearing the nomination of %s: %s", meta.get("name"), err)
                ok = False
            except Exception:
                log.exception("clearing the nomination of %s crashed", meta.get("name"))
                ok = False
        return ok

    def _write_victim(self, loop: asyncio.AbstractEventLoop, key: str, run: _Run, victim: PodInfo) -> None:
        outcome = self._preempt_victim_safely(run, victim)
        _report(loop, self._victim_written, loop, key, run, victim, outcome)

    def _preempt_victim_safely(self, run: _Run, victim: PodInfo) -> str:
        try:
            return self._preempt_victim(run, victim)
        except Exception:
            log.exception("preempting %s for %s crashed", victim.key, run.preemptor.key)
            return FAILED

    def _preempt_victim(self, run: _Run, victim: PodInfo) -> str:
        """Patch DisruptionTarget, then delete: EVICTED, GONE (already deleted, or replaced by a
        namesake: done, without a Preempted Event, as upstream), or FAILED."""
        if self._api is None:
            return EVICTED
        pod = victim.pod
        condition: dict[str, Any] = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": REASON_PREEMPTION_BY_SCHEDULER,
            "message": (
                f"{run.preemptor.scheduler_name}: preempting to accommodate a higher priority {run.kind}"
            ),
            "lastTransitionTime": rfc3339(self._clock()),
        }
        generation = object_meta(pod).get("generation")
        if isinstance(generation, int):
            condition["observedGeneration"] = generation
        try:
            if not _has_condition(pod, condition):
                self._patch(object_meta(pod), {"status": {"conditions": [condition]}})
            if not self._api.delete_pod(victim.namespace, victim.name, victim.uid):
                log.info("preemption victim %s of %s is already gone", victim.key, run.preemptor.key)
                return GONE
        except ApiError as err:
            if err.status == 404:
                log.info("preemption victim %s of %s is already gone", victim.key, run.preemptor.key)
                return GONE
            log.warning("preempting %s for %s: %s", victim.key, run.preemptor.key, err)
            return FAILED
        return EVICTED

    def _patch(self, meta: Mapping[str, Any], patch: Mapping[str, Any]) -> None:
        if self._api is not None:
            self._api.patch_pod_status(meta.get("namespace", ""), meta.get("name", ""), patch)


def _report(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    """Hand a write's result to the loop; after shutdown there is no one left to tell."""
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:
        log.debug("preemption result dropped: loop closed")


def _has_condition(pod: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """``UpdatePodCondition`` would change nothing: same status, reason and message already there."""
    for condition in pod_status(pod).get("conditions") or ():
        if condition.get("type") == wanted["type"]:
            return all(condition.get(k) == wanted[k] for k in ("status", "reason", "message"))
    return False


def _ident(pod: PodInfo) -> str:
    return pod.uid or pod.key
