"""Facts about pods that preemption orders and protects by (``pkg/scheduler/util/utils.go``:
MoreImportantPod, GetPodStartTime, GetEarliestPodStartTime; ``defaultpreemption``:
podTerminatingByPreemption)."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from scheduler.framework.objects import object_meta, pod_status
from scheduler.framework.types import PodInfo
from scheduler.preemption.gosort import sort_slice

DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    return _parse_rfc3339(value)


@functools.lru_cache(maxsize=8192)
def _parse_rfc3339(value: str) -> float | None:
    # Memoised: a dry run orders every node's lower-priority pods by start time, and pods started in
    # the same second share the string, so most lookups are hits.
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pod_start_time(pod: PodInfo) -> float:
    """``GetPodStartTime``: ``status.startTime``, or now for a pod the kubelet has not started."""
    started = _parse_time(pod_status(pod.pod).get("startTime"))
    return time.time() if started is None else started


def more_important_pod(a: PodInfo, b: PodInfo) -> bool:
    """``MoreImportantPod``: higher priority, or equal priority and started earlier."""
    if a.priority != b.priority:
        return a.priority > b.priority
    return pod_start_time(a) < pod_start_time(b)


def by_importance(pods: Sequence[PodInfo]) -> list[PodInfo]:
    """Most important first, as upstream's ``sort.Slice(victims, MoreImportantPod)`` leaves them: Go's
    sort replayed with MoreImportantPod's comparisons (``scheduler.preemption.gosort``). For two
    unstarted pods of equal priority upstream compares two successive ``time.Now()`` readings, so
    ``less`` holds in both orders; the result then depends on Go's algorithm and the input order (the
    node's pod order), e.g. up to 12 such pods come out reversed."""
    out = list(pods)
    sort_slice(out, _more_important_as_go_sees_it)
    return out


def _more_important_as_go_sees_it(a: PodInfo, b: PodInfo) -> bool:
    """``MoreImportantPod(a, b)`` with GetPodStartTime's ``time.Now()`` taken for ``a`` before ``b``."""
    if a.priority != b.priority:
        return a.priority > b.priority
    started_a = _parse_time(pod_status(a.pod).get("startTime"))
    started_b = _parse_time(pod_status(b.pod).get("startTime"))
    if started_a is None:
        # now(a) is before now(b), and never before a start time already past.
        return started_b is None
    return True if started_b is None else started_a < started_b


def earliest_start_time(victims: Sequence[PodInfo]) -> float | None:
    """``GetEarliestPodStartTime``: the earliest start among the victims of the highest priority."""
    if not victims:
        return None
    max_priority = victims[0].priority
    earliest = pod_start_time(victims[0])
    for pod in victims:
        if pod.priority == max_priority:
            earliest = min(earliest, pod_start_time(pod))
        elif pod.priority > max_priority:
            max_priority = pod.priority
            earliest = pod_start_time(pod)
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
    """``MoreImportantPod(a, b)`` as Go evaluates it inside ``sort.Slice`` (see ``by_importance``), for
    plugins that sort with it themselves (CapacityScheduling orders a node's pods least important first)."""
    return _more_important_as_go_sees_it(a, b)
