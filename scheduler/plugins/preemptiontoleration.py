"""PreemptionToleration: a PriorityClass says which priorities may preempt its pods, and after how long
(scheduler-plugins v0.34.7 ``pkg/preemptiontoleration/preemption_toleration.go`` and
``preemption_toleration_policy.go``).

A PostFilter plugin that replaces DefaultPreemption in a profile: the same preemption (the scheduler's
Evaluator, PDBs, nominated node, victim writes; candidates from a random offset, as many as
``minCandidateNodesPercentage``/``minCandidateNodesAbsolute`` ask), except that a lower-priority pod is
exempted from being a victim when its PriorityClass's annotations say so:

* ``preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority`` (default: the class's value
  + 1): a preemptor of at least this priority may preempt the pod at once;
* ``preemption-toleration.scheduling.x-k8s.io/toleration-seconds`` (default 0): a preemptor below that
  priority may preempt the pod only once it has been scheduled (its PodScheduled condition's
  lastTransitionTime) for this long; negative means never.

A pod without a priorityClassName is never exempted; annotations that do not parse exempt nothing (as
upstream, which logs it). A victim candidate whose PriorityClass does not exist makes that node's
dry run an error, as upstream. Eligibility is upstream's older rule: any terminating lower-priority pod on
the nominated node means wait. Preemption is synchronous, as upstream builds its Evaluator: the cycle
awaits the victims' deletion (scheduler/preemption/synchronous.py). Messages carry no ``preemption:``
prefix (upstream returns the evaluator's status as it is).

Args (``PreemptionTolerationArgs``): DefaultPreemptionArgs' fields and defaults.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from informers.resource import PRIORITY_CLASSES
from scheduler import metrics
from scheduler.framework import CycleState, Handle, NodeInfo, PodInfo, Status
from scheduler.framework.interface import PostFilterAwaitable
from scheduler.framework.objects import annotations_of, object_meta, pod_status
from scheduler.framework.status import Code
from scheduler.plugins import names
from scheduler.plugins.defaultpreemption import (
    NO_VICTIMS_MSG,
    NOT_ELIGIBLE_NEVER_MSG,
    NOT_ELIGIBLE_TERMINATING_MSG,
    PREEMPT_NEVER,
    DefaultPreemption,
    DefaultPreemptionArgs,
)
from scheduler.plugins.defaultpreemption import (
    parse_args as parse_default_preemption_args,
)
from scheduler.preemption.pdb import PodDisruptionBudget
from scheduler.preemption.pods import by_pod_importance
from scheduler.preemption.synchronous import decide_then_evict, refuse_outside_cycle

ARGS_KIND = "PreemptionTolerationArgs"
ANNOTATION_KEY_PREFIX = "preemption-toleration.scheduling.x-k8s.io/"
ANNOTATION_MINIMUM_PREEMPTABLE_PRIORITY = ANNOTATION_KEY_PREFIX + "minimum-preemptable-priority"
ANNOTATION_TOLERATION_SECONDS = ANNOTATION_KEY_PREFIX + "toleration-seconds"
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class PolicyError(ValueError):
    pass


def _parse_int(text: Any, bounds: tuple[int, int]) -> int:
    """Go's ``strconv.ParseInt(s, 10, bits)``: optional sign, decimal digits only, in range."""
    if not isinstance(text, str):
        raise PolicyError(f"invalid syntax: {text!r}")
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise PolicyError(f"invalid syntax: {text!r}")
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        raise PolicyError(f"value out of range: {text!r}")
    return value


def parse_policy(priority_class: Mapping[str, Any]) -> tuple[int, int]:
    """(minimumPreemptablePriority, tolerationSeconds) of a PriorityClass. Raises PolicyError."""
    annotations = annotations_of(priority_class)
    value = priority_class.get("value")
    class_value = value if isinstance(value, int) else 0
    if ANNOTATION_MINIMUM_PREEMPTABLE_PRIORITY in annotations:
        minimum = _parse_int(annotations[ANNOTATION_MINIMUM_PREEMPTABLE_PRIORITY], _INT32)
    else:
        # int32 arithmetic, as upstream's pc.Value + 1.
        minimum = ((class_value + 1 - _INT32[0]) % 2**32) + _INT32[0]
    seconds = 0
    if ANNOTATION_TOLERATION_SECONDS in annotations:
        seconds = _parse_int(annotations[ANNOTATION_TOLERATION_SECONDS], _INT64)
    return minimum, seconds


def _scheduled_at(pod: Mapping[str, Any]) -> float | None:
    for condition in pod_status(pod).get("conditions") or ():
        if condition.get("type") == "PodScheduled":
            if condition.get("status") != "True":
                return None
            stamp = condition.get("lastTransitionTime")
            if not isinstance(stamp, str):
                return 0.0
            try:
                return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            except ValueError:
                return 0.0
    return None


class MissingPriorityClass(LookupError):
    pass


def exempted_from_preemption(
    victim: PodInfo, preemptor: PodInfo, priority_class: Mapping[str, Any] | None, now: float
) -> bool:
    """Upstream's ``ExemptedFromPreemption``. ``priority_class`` is the victim's class (None when it
    names none). Raises MissingPriorityClass when it names one that does not exist."""
    class_name = victim.spec.get("priorityClassName") or ""
    if not class_name:
        return False
    if priority_class is None:
        raise MissingPriorityClass(f'priorityclass.scheduling.k8s.io "{class_name}" not found')
    if preemptor.spec.get("preemptionPolicy") == PREEMPT_NEVER:
        return True
    try:
        minimum, seconds = parse_policy(priority_class)
    except PolicyError:
        return False
    if preemptor.priority >= minimum:
        return False
    if seconds < 0:
        return True
    scheduled_at = _scheduled_at(victim.pod)
    if scheduled_at is None:
        return True
    return scheduled_at + seconds > now


class PreemptionToleration(DefaultPreemption):
    name = names.PREEMPTION_TOLERATION
    # scheduler-plugins v0.34.7 builds on kube-scheduler v1.34's preemption: no success message.
    says_placement = False

    def order_victims(self, pods: Sequence[PodInfo], created: Mapping[str, int]) -> list[PodInfo]:
        """v1.34's MoreImportantPod, as scheduler-plugins v0.34.7 sorts."""
        return by_pod_importance(pods)

    def __init__(
        self, args: Mapping[str, Any] | None = None, handle: Handle | None = None, **kw: Any
    ) -> None:
        super().__init__(args, handle, **kw)
        assert handle is not None
        self._priority_classes = handle.lister(PRIORITY_CLASSES)
        self._now = 0.0

    @staticmethod
    def parse_args(args: Mapping[str, Any] | None) -> DefaultPreemptionArgs:
        return parse_default_preemption_args(args, names.PREEMPTION_TOLERATION, ARGS_KIND)

    def post_filter_awaitable(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None] | PostFilterAwaitable:
        """Upstream's ``Evaluator.Preempt`` with async preemption off, as scheduler-plugins v0.34.7
        builds it: the victims are gone before the next pod's cycle (scheduler/preemption/synchronous.py)."""
        metrics.PREEMPTION_ATTEMPTS.inc()
        self._now = self.handle.now()
        found = self.evaluator.candidates(state, pod, node_statuses)
        executor = getattr(self.handle, "preemption_executor", None)
        return decide_then_evict(self.name, found, executor, pod)

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None]:
        """The scheduling cycle calls ``post_filter_awaitable``."""
        return refuse_outside_cycle(self.name, self.post_filter_awaitable(state, pod, node_statuses))

    def _priority_class(self, victim: PodInfo) -> Mapping[str, Any] | None:
        class_name = victim.spec.get("priorityClassName") or ""
        return self._priority_classes.get(class_name) if class_name else None

    def is_preemption_allowed(self, node: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        if victim.priority >= preemptor.priority:
            return False
        try:
            return not exempted_from_preemption(victim, preemptor, self._priority_class(victim), self._now)
        except MissingPriorityClass:
            return False

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        if pod.spec.get("preemptionPolicy") == PREEMPT_NEVER:
            return False, NOT_ELIGIBLE_NEVER_MSG
        nominated = pod_status(pod.pod).get("nominatedNodeName") or ""
        if nominated:
            if (
                nominated_node_status is not None
                and nominated_node_status.code is Code.UnschedulableAndUnresolvable
            ):
                return True, ""
            node = self.handle.snapshot.get(nominated)
            if node is not None:
                for other in node.pods.values():
                    if object_meta(other.pod).get("deletionTimestamp") and other.priority < pod.priority:
                        return False, NOT_ELIGIBLE_TERMINATING_MSG
        return True, ""

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status | None]:
        for other in node.pods.values():
            if other.priority < pod.priority:
                try:
                    exempted_from_preemption(other, pod, self._priority_class(other), self._now)
                except MissingPriorityClass as err:
                    return [], 0, Status.as_error(str(err))
        victims, violating, status = super().select_victims_on_node(state, pod, node, pdbs)
        if status is not None and status.message() == NO_VICTIMS_MSG:
            # Upstream's own wording when nothing on the node may be preempted.
            message = f"No victims found on node {node.name} for preemptor pod {pod.name}"
            return [], 0, Status(Code.UnschedulableAndUnresolvable, [message])
        return victims, violating, status
