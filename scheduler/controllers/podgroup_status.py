"""PodGroup status, kept current as scheduler-plugins' PodGroup controller does (``pkg/controllers``).

scheduler-plugins runs that controller as a second Deployment; py-scheduler runs it in-process, on the
leader only, whenever Coscheduling is enabled in some profile. It needs finished pods too (``succeeded``,
``failed``, phase Finished/Failed), which the scheduler's own pod watch leaves out
(``status.phase!=Succeeded,status.phase!=Failed``), so it reads pods through an informer of its own
with the label selector ``scheduling.x-k8s.io/pod-group``: only gang members are held twice.

Status transitions, one reconcile of upstream's (v0.34.7, ``PodGroupReconciler.Reconcile``), applied
until nothing changes (upstream gets there through the requeue its own status patch causes):

* ``""`` -> Pending.
* Pending -> Scheduling once ``minMember`` pods exist (``occupiedBy`` from the first pod's owners).
* otherwise ``running``/``succeeded``/``failed`` are counted, then: fewer than ``minMember`` pods ->
  Pending; running+succeeded < minMember -> Scheduling, >= -> Running; any failed with
  failed+running+succeeded >= minMember -> Failed; succeeded >= minMember -> Finished.
* Finished and Failed are final; a Pending/Scheduling group with nothing running whose
  ``scheduleStartTime`` is more than 48 h after its creation is left alone (upstream's GC guard).

Two differences, both deliberate: upstream lists the labelled pods of *every* namespace (its List has no
namespace option), we count the group's own namespace only; and upstream v0.34.7 reads
``scheduleStartTime`` but never writes it, we set it when the group first enters Scheduling, so that
the 48 h guard means something.

Writes go to the status subresource (a JSON merge patch, as upstream's ``Status().Patch``) from a worker
thread, never from the event loop; a failed write is retried with backoff, a 404 (group deleted) dropped.
Each group's changes within ``DEBOUNCE_SECONDS`` are one patch holding only the fields that changed, in
upstream's content (its status fields are ``omitempty``: zero counts are absent); nothing changed, no
request. Upstream sends two requests per reconcile (``Status().Patch`` then ``Patch`` with the same
merge patch, empty ones included), so for a gang created pod by pod it makes several per group where
this makes one per phase change ("" -> Pending when the group appears, Pending -> Scheduling when
``minMember`` pods exist, ...).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote

from informers import NAMESPACE_INDEX, DeletedFinalStateUnknown, index_by_namespace
from informers.resource import PODGROUPS, PODS
from scheduler.cache.informer_listers import InformerLister
from scheduler.framework.listers import Lister
from scheduler.framework.objects import namespaced_name, object_meta, pod_status
from scheduler.framework.objects_scheduling import coscheduling_pod_group_status
from scheduler.plugins.coscheduling.plugin import (
    POD_GROUP_LABEL,
    members_finder,
    min_member,
    pod_group_full_name,
    pod_group_name,
)
from scheduler.util.timestamps import rfc3339_seconds

log = logging.getLogger(__name__)

PENDING, SCHEDULING, RUNNING, FINISHED, FAILED = "Pending", "Scheduling", "Running", "Finished", "Failed"
FINAL_PHASES = (FINISHED, FAILED)
GC_GUARD_SECONDS = 48 * 3600
# Changes within this window are written once (a gang of 100 binding is one patch, not 100).
DEBOUNCE_SECONDS = 0.2
RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0)
STATUS_FIELDS = ("phase", "occupiedBy", "running", "succeeded", "failed", "scheduleStartTime")
COUNT_FIELDS = ("running", "succeeded", "failed")

Patcher = Callable[[str, str, Mapping[str, Any]], None]


def rfc3339(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(int(seconds), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_stats(pods: Iterable[Mapping[str, Any]]) -> tuple[int, int, int]:
    """(running, succeeded, failed), upstream's getCurrentPodStats."""
    running = succeeded = failed = 0
    for pod in pods:
        phase = pod_status(pod).get("phase")
        if phase == "Running":
            running += 1
        elif phase == "Succeeded":
            succeeded += 1
        elif phase == "Failed":
            failed += 1
    return running, succeeded, failed


def occupied_by(pod: Mapping[str, Any]) -> str:
    """upstream's fillOccupiedObj: the first pod's owners, ``namespace/name``, sorted, comma-joined."""
    meta = object_meta(pod)
    refs = sorted(
        f"{meta.get('namespace', '')}/{ref.get('name', '')}" for ref in meta.get("ownerReferences") or []
    )
    return ",".join(refs)


def _reconcile_once(status: dict[str, Any], need: int, pods: list[Mapping[str, Any]], now: float) -> None:
    phase = status.get("phase") or ""
    if phase == "":
        status["phase"] = PENDING
    elif phase == PENDING:
        if len(pods) >= need:
            status["phase"] = SCHEDULING
            status.setdefault("scheduleStartTime", rfc3339(now))
            if pods:
                owners = occupied_by(pods[0])
                if owners:
                    status["occupiedBy"] = owners
    else:
        running, succeeded, failed = pod_stats(pods)
        status["running"], status["succeeded"], status["failed"] = running, succeeded, failed
        if len(pods) < need:
            status["phase"] = PENDING
            return
        status["phase"] = SCHEDULING if succeeded + running < need else RUNNING
        if failed and failed + running + succeeded >= need:
            status["phase"] = FAILED
        if succeeded >= need:
            status["phase"] = FINISHED


def desired_status(
    pod_group: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], now: float
) -> dict[str, Any] | None:
    """The status the controller writes for ``pod_group`` given its pods, or None to leave it alone."""
    current: dict[str, Any] = dict(coscheduling_pod_group_status(pod_group))
    phase = current.get("phase") or ""
    if phase in FINAL_PHASES:
        return None
    if phase in (PENDING, SCHEDULING) and not current.get("running"):
        start, created = (
            rfc3339_seconds(current.get("scheduleStartTime")),
            rfc3339_seconds(object_meta(pod_group).get("creationTimestamp")),
        )
        if start is not None and created is not None and start - created > GC_GUARD_SECONDS:
            return None
    # Pods in order of creation, so "the first pod" (occupiedBy) is stable across reconciles.
    members = sorted(pods, key=lambda p: (object_meta(p).get("creationTimestamp") or "", namespaced_name(p)))
    need = min_member(pod_group)
    status = dict(current)
    for _ in range(4):  # "" -> Pending -> Scheduling -> counted: at most three steps to a fixed point
        before = dict(status)
        _reconcile_once(status, need, members, now)
        if status == before:
            break
    return status


def _stored(field: str, value: Any) -> Any:
    """How upstream's object holds a field: its status fields are ``omitempty``, so a count of zero (or
    an empty string) is no field at all."""
    return None if field in (*COUNT_FIELDS, "occupiedBy") and value in (0, "") else value


def status_patch(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch taking ``current`` to ``desired`` over the fields the controller owns, with
    upstream's content (``client.MergeFrom`` of ``omitempty`` fields): a count of zero is left out, and
    one that falls to zero is removed (null), never written as 0. Empty when nothing changed: no write."""
    patch: dict[str, Any] = {}
    for name in STATUS_FIELDS:
        if name not in desired:
            continue
        want = _stored(name, desired[name])
        if _stored(name, current.get(name)) != want:
            patch[name] = want
    return patch


def patch_status_with(api: Any) -> Patcher:
    """A Patcher over SchedulerApi: merge patch of podgroups/{name}/status."""

    def patch(namespace: str, name: str, status: Mapping[str, Any]) -> None:
        path = f"{PODGROUPS.path(namespace)}/{quote(name, safe='')}/status"
        api.request_json("PATCH", path, {"status": dict(status)}, content_type="application/merge-patch+json")

    return patch


class PodGroupStatusController:
    """Event-driven: pod and PodGroup changes mark a group dirty; one task on the loop computes statuses
    from the listers and hands the patches to a thread. Started only while leading."""

    def __init__(
        self,
        pod_groups: Lister,
        pods: Lister,
        patch: Patcher,
        *,
        clock: Callable[[], float],
        debounce: float = DEBOUNCE_SECONDS,
    ) -> None:
        self.pod_groups = pod_groups
        self.pods = pods
        self._members = members_finder(pods)
        self.patch = patch
        self.clock = clock
        self.debounce = debounce
        self._dirty: set[str] = set()
        self._attempts: dict[str, int] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.writes = 0  # successful patches, for tests and logs
        self.passes = 0  # passes over the dirty groups finished (their patches written or failed)

    # --- event handlers (called on the loop by the informers) ---------------------------------------
    def mark(self, key: str) -> None:
        if key.endswith("/"):
            return
        self._dirty.add(key)
        self._wake.set()

    def on_pod_group(self, obj: Any, *_: Any) -> None:
        obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(obj, Mapping):
            self.mark(namespaced_name(obj))

    def on_pod_group_update(self, old: Any, new: Any) -> None:
        self.on_pod_group(new)

    def on_pod(self, obj: Any, *_: Any) -> None:
        obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(obj, Mapping) and pod_group_name(obj):
            self.mark(pod_group_full_name(obj))

    def on_pod_update(self, old: Any, new: Any) -> None:
        self.on_pod(old)  # a pod relabelled out of a group changes the old group too
        self.on_pod(new)

    # --- running ------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            for pg in self.pod_groups.list():
                self.mark(namespaced_name(pg))
            self._task = asyncio.get_running_loop().create_task(self._run(), name="podgroup-status")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            await asyncio.sleep(self.debounce)
            self._wake.clear()
            keys, self._dirty = self._dirty, set()
            for key, status in self.compute(keys):
                namespace, name = key.split("/", 1)
                try:
                    await loop.run_in_executor(None, self.patch, namespace, name, status)
                except Exception as err:
                    self._retry_later(loop, key, err)
                else:
                    self._attempts.pop(key, None)
                    self.writes += 1
            self.passes += 1

    def compute(self, keys: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
        """The patches due for ``keys``: synchronous, from the listers, no I/O."""
        out: list[tuple[str, dict[str, Any]]] = []
        now = self.clock()
        for key in sorted(keys):
            namespace, name = key.split("/", 1)
            pg = self.pod_groups.get(name, namespace)
            if pg is None:
                self._attempts.pop(key, None)
                continue
            members = self._members(namespace, name)
            desired = desired_status(pg, members, now)
            if desired is None:
                continue
            patch = status_patch(coscheduling_pod_group_status(pg), desired)
            if patch:
                out.append((key, patch))
        return out

    def _retry_later(self, loop: asyncio.AbstractEventLoop, key: str, err: Exception) -> None:
        if getattr(err, "status", None) == 404:
            self._attempts.pop(key, None)  # deleted meanwhile: nothing to write
            return
        attempt = self._attempts.get(key, 0)
        self._attempts[key] = attempt + 1
        delay = RETRY_SECONDS[min(attempt, len(RETRY_SECONDS) - 1)]
        log.warning("PodGroup %s: status update failed (retrying in %gs): %s", key, delay, err)
        loop.call_later(delay, self.mark, key)


def install(
    factory: Any, pod_groups: Lister | None, api: Any, clock: Callable[[], float]
) -> PodGroupStatusController | None:
    """When Coscheduling is on (some plugin asked for the PodGroup lister): a pod informer of gang
    members only (finished ones included), and the controller fed by it and the PodGroup informer."""
    if pod_groups is None:
        return None
    members = factory.informer_for(
        PODS, label_selector=POD_GROUP_LABEL, indexers={NAMESPACE_INDEX: index_by_namespace}
    )
    pods = InformerLister(PODS)
    pods.bind(members)
    controller = PodGroupStatusController(pod_groups, pods, patch_status_with(api), clock=clock)
    members.add_event_handler(
        on_add=controller.on_pod,
        on_update=controller.on_pod_update,
        on_delete=controller.on_pod,
        name="podgroup-status",
    )
    groups = factory.informer_for(PODGROUPS, indexers={NAMESPACE_INDEX: index_by_namespace})
    groups.add_event_handler(
        on_add=controller.on_pod_group,
        on_update=controller.on_pod_group_update,
        on_delete=controller.on_pod_group,
        name="podgroup-status",
    )
    return controller


__all__ = [
    "POD_GROUP_LABEL",
    "PodGroupStatusController",
    "desired_status",
    "patch_status_with",
    "pod_stats",
    "status_patch",
]
