"""Facts about pods that preemption orders and protects by (``pkg/scheduler/util/utils.go``:
MoreImportantPod, GetPodStartTime, GetEarliestPodStartTime; ``framework/preemption/util.go``:
MoreImportantVictim; ``defaultpreemption``: podTerminatingByPreemption), as of v1.37.2."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework.objects import object_meta, pod_status
from scheduler.framework.types import PodInfo
from scheduler.preemption.gosort import MAX_INSERTION, sort_slice
from scheduler.util.timestamps import rfc3339_seconds

DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def started_at(pod: PodInfo) -> float | None:
    """``status.startTime``, or None for a pod no kubelet has started."""
    return rfc3339_seconds(pod_status(pod.pod).get("startTime"))


def pod_start_time(pod: PodInfo) -> float:
    """``GetPodStartTime``: ``status.startTime``, or now for a pod the kubelet has not started."""
    started = rfc3339_seconds(pod_status(pod.pod).get("startTime"))
    return time.time() if started is None else started


def by_importance(pods: Sequence[PodInfo], created: Mapping[str, int] | None = None) -> list[PodInfo]:
    """Most important first, as upstream's ``sort.Slice(victims, MoreImportantVictim)`` (v1.37) leaves
    them, Go's sort replayed (``scheduler.preemption.gosort``).

    Each pod is its own victim (GenericWorkload off): higher priority first, then the earlier
    ``EarliestStartTime``, which the victim took when GetVictimsOnNode made it -- ``status.startTime``,
    or ``time.Now()`` then for a pod no kubelet started. Those readings follow the node's pod order,
    so of two unstarted pods of one priority the one earlier on the node (``created``: pod key -> its
    index there; the input order by default) is the more important. (v1.36 read ``time.Now()`` at each
    comparison, so ``less`` held both ways and Go's algorithm decided.) With GenericWorkload the
    victims are ``scheduler.preemption.victims``'s."""
    order = created if created is not None else {p.key: i for i, p in enumerate(pods)}
    if len(pods) <= MAX_INSERTION:
        # Go sorts this few with an insertion sort that swaps only on a strict ``less``: stable. And
        # ``_more_important_victim(a, b)`` holds exactly when ``_victim_rank(a) < _victim_rank(b)``, a
        # strict weak order, so Python's stable sort by that rank leaves what Go's leaves.
        return sorted(pods, key=lambda pod: _victim_rank(pod, order))
    out = list(pods)
    sort_slice(out, lambda a, b: _more_important_victim(a, b, order))
    return out


def _victim_rank(pod: PodInfo, created: Mapping[str, int]) -> tuple[int, int, float]:
    """``_more_important_victim`` as a sort key: higher priority first, then started pods by start
    time, then unstarted ones in node order."""
    started = rfc3339_seconds(pod_status(pod.pod).get("startTime"))
    if started is None:
        return (-pod.priority, 1, created.get(pod.key, 0))
    return (-pod.priority, 0, started)


def by_pod_importance(pods: Sequence[PodInfo]) -> list[PodInfo]:
    """Most important first, as ``sort.Slice(pods, util.MoreImportantPod)`` leaves them (kube-scheduler
    up to v1.36, and scheduler-plugins v0.34.7's preemption, which builds on v1.34): Go's sort replayed
    with ``more_important_as_go_sees_it``, so two unstarted pods of one priority come out as Go's
    algorithm leaves them from the input order (up to 12 such pods: reversed)."""
    out = list(pods)
    sort_slice(out, more_important_as_go_sees_it)
    return out


def _more_important_victim(a: PodInfo, b: PodInfo, created: Mapping[str, int]) -> bool:
    if a.priority != b.priority:
        return a.priority > b.priority
    started_a = rfc3339_seconds(pod_status(a.pod).get("startTime"))
    started_b = rfc3339_seconds(pod_status(b.pod).get("startTime"))
    if started_a is None and started_b is None:
        return created.get(a.key, 0) < created.get(b.key, 0)
    if started_a is None:
        return False  # its "now" is after any start already past
    return True if started_b is None else started_a < started_b


def earliest_start_time(victims: Sequence[PodInfo]) -> float | None:
    """``GetEarliestPodStartTime``: the earliest start among the victims of the highest priority.

    Asked for every candidate a dry run found (~100 per preemptor), so the first victim is read once
    (upstream reads it twice; min of a value with itself) and lower-priority victims not at all."""
    if not victims:
        return None
    first = victims[0]
    max_priority = first.priority
    earliest = pod_start_time(first)
    for pod in victims[1:]:
        priority = pod.priority
        if priority < max_priority:
            continue
        started = pod_start_time(pod)
        if priority == max_priority:
            earliest = min(earliest, started)
        else:
            max_priority = priority
            earliest = started
    return earliest


def terminating_by_preemption(pod: Mapping[str, Any]) -> bool:
    """``podTerminatingByPreemption``: being deleted, with the DisruptionTarget condition a scheduler
    sets before it deletes a victim."""
    if not object_meta(pod).get("deletionTimestamp"):
        return False
    for condition in pod_status(pod).get("conditions") or ():
        if condition.get("type") == DISRUPTION_TARGET:
            return bool(
                condition.get("status") == "True"
                and condition.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
            )
    return False


def more_important_as_go_sees_it(a: PodInfo, b: PodInfo) -> bool:
    """``util.MoreImportantPod(a, b)`` (unchanged in v1.37) as Go evaluates it inside ``sort.Slice``, for
    plugins that sort with it themselves (CapacityScheduling orders a node's pods least important
    first): ``GetPodStartTime`` reads ``time.Now()`` for an unstarted pod, ``a``'s before ``b``'s, so of
    two unstarted pods of one priority ``less`` holds both ways and Go's algorithm decides.
    (DefaultPreemption's own order is v1.37's MoreImportantVictim: ``by_importance``.)"""
    if a.priority != b.priority:
        return a.priority > b.priority
    started_a = rfc3339_seconds(pod_status(a.pod).get("startTime"))
    started_b = rfc3339_seconds(pod_status(b.pod).get("startTime"))
    if started_a is None:
        # now(a) is before now(b), and never before a start time already past.
        return started_b is None
    return True if started_b is None else started_a < started_b
