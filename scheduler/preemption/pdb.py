"""PodDisruptionBudgets as preemption reads them (``filterPodsWithPDBViolation`` in
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``).

The scheduler never evicts through the Eviction API; it only prefers victims whose eviction keeps every
budget within ``status.disruptionsAllowed`` (as the disruption controller last computed it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.objects import labels_of, object_meta
from scheduler.framework.objects_scheduling import pdb_spec, pdb_status
from scheduler.framework.types import PodInfo
from scheduler.util.labelselector import LabelSelector, parse_label_selector
from scheduler.util.nodeselector import SelectorError


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    # Pods the disruption controller already counts as disrupted: evicting them again costs nothing.
    disrupted_pods: frozenset[str]


def parse_pdbs(objects: Iterable[Mapping[str, Any]]) -> list[PodDisruptionBudget]:
    """The budgets with a readable selector; upstream skips one whose selector does not parse."""
    out: list[PodDisruptionBudget] = []
    for obj in objects:
        meta = object_meta(obj)
        spec = pdb_spec(obj)
        status = pdb_status(obj)
        try:
            selector = parse_label_selector(spec.get("selector"), "spec.selector")
        except SelectorError:
            continue
        allowed = status.get("disruptionsAllowed")
        out.append(
            PodDisruptionBudget(
                namespace=meta.get("namespace", ""),
                selector=selector,
                disruptions_allowed=allowed if isinstance(allowed, int) else 0,
                disrupted_pods=frozenset(status.get("disruptedPods") or ()),
            )
        )
    return out


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Splits ``pods`` (in order) into those whose eviction would break a budget and the rest.

    Each budget's allowance is spent by the pods in the order given, so with ``disruptionsAllowed: 1``
    and two matching pods only the second violates. An empty selector matches nothing here, as upstream.
    """
    if not pdbs:
        return [], list(pods)
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        labels = labels_of(pod.pod)
        violated = False
        if labels:
            for i, pdb in enumerate(pdbs):
                if pdb.namespace != pod.namespace:
                    continue
                if pdb.selector.empty or not pdb.selector.matches(labels):
                    continue
                if pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating
