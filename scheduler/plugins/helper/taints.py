"""Taints and tolerations: ``Toleration.ToleratesTaint`` (``k8s.io/api/core/v1/toleration.go``) and
``FindMatchingUntoleratedTaint`` (``k8s.io/component-helpers/scheduling/corev1/helpers.go``).

The ``Lt``/``Gt`` toleration operators belong to the alpha gate TaintTolerationComparisonOperators
(off by default in v1.36), so, as upstream with the gate off, such a toleration tolerates nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from scheduler.framework.objects import node_spec
from scheduler.framework.types import PodInfo

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
DO_NOT_SCHEDULE_EFFECTS = frozenset((NO_SCHEDULE, NO_EXECUTE))

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

# PodInfo.derived key for the parsed tolerations, shared by TaintToleration and NodeUnschedulable.
TOLERATIONS_KEY = "Tolerations"


class Toleration(NamedTuple):
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        if self.effect and self.effect != effect:
            return False
        if self.key and self.key != key:
            return False
        operator = self.operator
        if operator in ("", "Equal"):
            return self.value == value
        # Anything else (Lt/Gt with their gate off, or an unknown operator) tolerates nothing.
        return operator == "Exists"


def parse_tolerations(raw: Any) -> tuple[Toleration, ...]:
    out: list[Toleration] = []
    for item in raw or ():
        if not isinstance(item, Mapping):
            continue
        out.append(
            Toleration(
                str(item.get("key") or ""),
                str(item.get("operator") or ""),
                str(item.get("value") or ""),
                str(item.get("effect") or ""),
            )
        )
    return tuple(out)


def _build_tolerations(pod: PodInfo) -> tuple[Toleration, ...]:
    return parse_tolerations(pod.spec.get("tolerations"))


def pod_tolerations(pod: PodInfo) -> tuple[Toleration, ...]:
    """The pod's tolerations, parsed once per pod version."""
    return pod.derived(TOLERATIONS_KEY, _build_tolerations)


def taint_fields(taint: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(taint.get("key") or ""), str(taint.get("value") or ""), str(taint.get("effect") or ""))


def tolerates_taint(tolerations: Iterable[Toleration], key: str, value: str, effect: str) -> bool:
    return any(t.tolerates(key, value, effect) for t in tolerations)


def find_untolerated_taint(
    taints: Sequence[Mapping[str, Any]],
    tolerations: Sequence[Toleration],
    effects: frozenset[str] = DO_NOT_SCHEDULE_EFFECTS,
) -> Mapping[str, Any] | None:
    """The first taint with an effect in ``effects`` that no toleration tolerates, else None."""
    for taint in taints:
        key, value, effect = taint_fields(taint)
        if effect in effects and not tolerates_taint(tolerations, key, value, effect):
            return taint
    return None


def node_taints(node: Mapping[str, Any] | None) -> Sequence[Mapping[str, Any]]:
    if not node:
        return ()
    return node_spec(node).get("taints") or ()
