"""The ``PodGroupInitiallyScheduled`` condition a pod group cycle writes on its PodGroup
(scheduling.k8s.io/v1beta1; v1.36's v1alpha2 called it ``PodGroupScheduled``).

Mirrors ``submitPodGroupAlgorithmResult`` and ``updatePodGroupCondition`` of kube-scheduler v1.37.2
(``pkg/scheduler/schedule_one_podgroup.go``). After every pod group cycle the condition carries the pod
group result's own status:

* the group scheduled: ``True``, reason ``Scheduled``, the result's message (empty);
* the group unschedulable: ``False``, reason ``Unschedulable``, the result's message, e.g. "minCount (4)
  cannot be satisfied: 2 scheduled, 1 remaining, pod group preemption: No preemption victims found for
  incoming preemptor", or "..., pod group preemption: found a placement for podgroup, preempting 2
  victims" when the group waits for its preemption;
* the group failed with an error (a member's, or the cycle's validation): ``False``, reason
  ``SchedulerError``, the error's text.

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
# Upstream's errPodGroupUnschedulable: leads the message of a member placed alone in a group that is not.
POD_GROUP_UNSCHEDULABLE_MSG = "pod group is unschedulable"
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
