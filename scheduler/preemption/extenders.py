"""Preemption's call to the extenders (upstream's ``Evaluator.callExtenders`` in ``preemption.go``).

Between the dry run and the choice of a node, every extender with a ``preemptVerb`` that is interested in
the preemptor may drop candidate nodes or change their victims. The HTTP calls are awaited on the event
loop (``Extenders.process_preemption``); the candidates' victims are read from the cycle's snapshot, which
no informer event changes while the call is out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.extender import ExtenderError, Extenders, Victims
from scheduler.framework.handle import SnapshotLister
from scheduler.framework.objects import object_meta
from scheduler.framework.status import Status
from scheduler.framework.types import PodInfo
from scheduler.preemption.evaluator import Candidate, Evaluator


async def preempt_with_extenders(
    evaluator: Evaluator,
    state: CycleState,
    pod: PodInfo,
    node_to_status: Mapping[str, Status],
    extenders: Extenders,
    snapshot: SnapshotLister,
) -> tuple[str | None, Status | None]:
    """``Evaluator.preempt`` with upstream's step 3 awaited between the dry run and the choice."""
    found = evaluator.candidates(state, pod, node_to_status)
    if isinstance(found, tuple):
        return found
    try:
        found = await call_extenders(extenders, pod, found, snapshot)
    except ExtenderError as err:
        return None, Status.as_error(str(err))
    return evaluator.choose_and_actuate(pod, found)


async def call_extenders(
    extenders: Extenders, pod: PodInfo, candidates: Sequence[Candidate], snapshot: SnapshotLister
) -> list[Candidate]:
    """The candidates the extenders leave, with the victims they chose. Raises ``ExtenderError`` when a
    non-ignorable extender fails or answers a node without victims.

    Upstream rebuilds the list from a map (in random order); here the nodes keep the dry run's order,
    and nodes an extender added follow in its order. Victims keep the order the extender gave.
    """
    if not candidates or not extenders.preempts_for(pod):
        return list(candidates)
    victims = {c.name: Victims([v.pod for v in c.victims], c.num_pdb_violations) for c in candidates}

    def pods_on_node(name: str) -> Iterable[Mapping[str, Any]] | None:
        node = snapshot.get(name)
        return None if node is None else [info.pod for info in node.pods.values()]

    answer = await extenders.process_preemption(pod, victims, pods_on_node)
    order = [c.name for c in candidates if c.name in answer] + [n for n in answer if n not in victims]
    out: list[Candidate] = []
    for name in order:
        # process_preemption resolved every UID against this node of the snapshot, so these lookups hold.
        on_node = {info.uid: info for info in _pods_of(snapshot, name)}
        chosen = answer[name]
        pods = tuple(on_node[str(object_meta(p).get("uid") or "")] for p in chosen.pods)
        out.append(Candidate(name, pods, chosen.num_pdb_violations))
    return out


def _pods_of(snapshot: SnapshotLister, name: str) -> Iterable[PodInfo]:
    node = snapshot.get(name)
    return () if node is None else node.pods.values()
