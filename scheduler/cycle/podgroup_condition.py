"""The ``PodGroupInitiallyScheduled`` condition a pod group cycle writes on its PodGroup
(scheduling.k8s.io/v1beta1; v1.36's v1alpha2 called it ``PodGroupScheduled``).

Mirrors ``submitPodGroupAlgorithmResult`` and ``updatePodGroupCondition`` of kube-scheduler v1.36.3
(``pkg/scheduler/schedule_one_podgroup.go``); v1.37.2 writes the pod group result's own status message
instead of these fixed texts, which is not ported yet (docs/kubernetes-1.37.md). After every pod group
cycle,

* the group scheduled: ``True``, reason ``Scheduled``, no message;
* the group unschedulable: ``False``, reason ``Unschedulable``, message ``pod group is unschedulable``
  (``pod group is unschedulable, pod group is waiting for preemption to complete`` when it is feasible
  once a member's preemption completes);
* a member failed with an error: ``False``, reason ``SchedulerError``, the error's text.

``observedGeneration`` is the PodGroup's generation. A condition already ``True`` is never turned back to
``False`` (a later cycle for extra pods must not regress it), and nothing is written when nothing changes
(apimachinery's ``SetStatusCondition``: ``lastTransitionTime`` moves only when the status does). The
patch is a strategic merge patch of ``podgroups/{name}/status`` (conditions merge by type), sent off
the event loop by the EventRecorder's writers and retried on transient failures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.client.events import rfc3339
from scheduler.framework.objects import object_meta
from scheduler.framework.objects_scheduling import pod_group_status

POD_GROUP_SCHEDULED = "PodGroupInitiallyScheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
# Upstream's errPodGroupUnschedulable: the message of an unschedulable group.
POD_GROUP_UNSCHEDULABLE_MSG = "pod group is unschedulable"
# A feasible group whose members need a preemption first; the status text is the error's, then this.
WAITING_ON_PREEMPTION_MSG = "pod group is waiting for preemption to complete"
WAITING_ON_PREEMPTION_STATUS_MSG = f"{POD_GROUP_UNSCHEDULABLE_MSG}, {WAITING_ON_PREEMPTION_MSG}"
# The prefix of a group's error when one member's attempt failed with an error.
MEMBER_ERROR_PREFIX = "failed to schedule other pod from a pod group: "
# SetStatusCondition's "changed": lastTransitionTime alone never makes a write.
_COMPARED = ("status", "reason", "message", "observedGeneration")


def scheduled_condition_patch(
    pod_group: Mapping[str, Any], status: bool, reason: str, message: str, now: float
) -> dict[str, Any] | None:
    """The status patch that sets ``PodGroupInitiallyScheduled`` on ``pod_group``, or None when nothing
    is to be written (unchanged, or already True and this cycle's outcome is not)."""
    meta = object_meta(pod_group)
    current = pod_group_status(pod_group)
    existing: Mapping[str, Any] | None = None
    for listed in current.get("conditions") or ():
        if isinstance(listed, Mapping) and listed.get("type") == POD_GROUP_SCHEDULED:
            existing = listed
            break
    wanted = "True" if status else "False"
    if existing is not None and existing.get("status") == "True" and wanted != "True":
        return None
    generation = meta.get("generation")
    condition: dict[str, Any] = {
        "type": POD_GROUP_SCHEDULED,
        "status": wanted,
        "reason": reason,
        "message": message,
        "lastTransitionTime": rfc3339(now),
    }
    if isinstance(generation, int):
        condition["observedGeneration"] = generation
    if existing is not None:
        if existing.get("status") == wanted:
            # The status did not change: neither does the transition time.
            condition["lastTransitionTime"] = existing.get("lastTransitionTime") or rfc3339(now)
        if all(existing.get(k) == condition.get(k) for k in _COMPARED):
            return None
    return {"status": {"conditions": [condition]}}
