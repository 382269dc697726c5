"""PodDisruptionBudgets as preemption reads them (``filterPodsWithPDBViolation`` in
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``).

The scheduler never evicts through the Eviction API; it only prefers victims whose eviction keeps every
budget within ``status.disruptionsAllowed`` (as the disruption controller last computed it).

Upstream lists the budgets once per preemptor (``getPodDisruptionBudgets``) and spends a fresh copy of
their allowances on each node (``FilterVictimsWithPDBViolation``): nothing a node's dry run does with them
outlives it. So a parse kept while the listed objects stay the same (``ParsedBudgets``) is the one a
fresh parse would give, and a node's kept verdict may say which parse it read (``DryRunVerdicts``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.listers import Lister
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


class ParsedBudgets:
    """A lister's budgets, parsed again only when its objects change; called as ``parse_pdbs`` of the
    lister's list. While the lister lists the very objects of the last call (the same number, each the
    same dict), it returns the very tuple it returned then, so a caller can tell "the same budgets" by
    identity. Sound because the informer's store never changes a stored dict: an update stores the
    newly decoded one (``Indexer.upsert``), a relist a whole new content (``Indexer.replace``); and the
    list kept here holds the old dicts, so no new one can reuse an old one's id. The store lists in
    insertion order, an update keeping its key's place, so unchanged budgets list in the same order
    (another order would only cost a parse). A tuple, so that no reader can change what later readers
    get; nothing that reads budgets changes one (``filter_pods_with_pdb_violation`` spends a copy of
    the allowances)."""

    __slots__ = ("_objects", "_parsed", "lister")

    def __init__(self, lister: Lister) -> None:
        # Public so a test can swap it: objects of another lister are other dicts, so parsed anew.
        self.lister = lister
        self._objects: tuple[Mapping[str, Any], ...] = ()
        self._parsed: tuple[PodDisruptionBudget, ...] = ()

    def __call__(self) -> tuple[PodDisruptionBudget, ...]:
        objects = self.lister.list()
        kept = self._objects
        if len(objects) == len(kept) and all(new is old for new, old in zip(objects, kept, strict=True)):
            return self._parsed
        self._objects = tuple(objects)
        self._parsed = tuple(parse_pdbs(objects))
        return self._parsed


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
