"""Filter verdicts on the nodes that hold nominated pods, kept across cycles while nothing they read
changes.

Upstream's findNodesThatPassFilters judges such a node with RunFilterPluginsWithNominatedPods (the
nominated pods of higher or equal priority added, then, if that passes, without them) in every cycle.
While preemptors wait for their victims to leave, many nodes hold one, and each cycle of the next
preemptors walks past all of them: the same node, the same nominated pods, a pod of the same shape, the
same verdict. A verdict here is kept per node with what it read:

* the node: the snapshot's NodeInfo and its generation (a snapshot node changes only with a new one);
* its nominated pods: the nominator's tuple for the node, a new object whenever they change;
* the pod as Filter sees it: its scheduling signature (``Framework.sign_pod``, whose promise is the same
  Filter verdict on a node in the same state; it includes the profile), and as the counted nominated
  pods are chosen, its priority.

Not used for a pod that cannot be signed, in a cycle that times its plugins (the series must be
observed), or where the pod itself is nominated to the node (it never counts against itself, while a
pod of the same signature would count it). Errors are not kept.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo, same_pod_in

# What ``get`` returns when nothing is kept (None is a kept verdict: the node passes).
MISSING = Status(Code.Error, ["no kept verdict"])

# Past this many kept nodes beyond those with nominations now, the stale entries are dropped.
_SLACK = 64
# Distinct statuses shared at most (a few per plugin in practice).
_MAX_SHARED = 1024
# Distinct pod keys kept at most (then forgotten: verdicts kept for older keys are judged again).
_MAX_KEYS = 256


class NominatedVerdicts:
    """Per node name: (NodeInfo, generation, nominated tuple, key, verdict). Loop-side only."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[NodeInfo, int, Sequence[PodInfo], Hashable, Status | None]] = {}
        # One Status object per distinct (code, reasons, plugin): a diagnosis counts its statuses by
        # identity (``distinct_statuses``), as the batch path's shared ones, not one per node.
        self._shared: dict[tuple[Code, tuple[str, ...], str], Status] = {}
        self._keys: dict[Hashable, Hashable] = {}

    def key(self, signature: Hashable | None, pod: PodInfo) -> Hashable | None:
        """What a verdict depends on in the pod, or None: keep nothing for it. One object per
        distinct key, so a kept verdict's key is compared by identity."""
        if signature is None:
            return None
        keys = self._keys
        if len(keys) >= _MAX_KEYS:
            keys.clear()
        key = (signature, pod.priority)
        return keys.setdefault(key, key)

    def get(self, key: Hashable, pod: PodInfo, node: NodeInfo, nominated: Sequence[PodInfo]) -> Status | None:
        """The kept verdict of ``node`` for a pod of ``key``, or ``MISSING``."""
        kept = self._kept.get(node.name)
        if (
            kept is None
            or kept[0] is not node
            or kept[1] != node.generation
            or kept[2] is not nominated
            or kept[3] is not key
        ):
            return MISSING
        return MISSING if same_pod_in(pod, nominated) else kept[4]

    def kept_or_judged(
        self,
        key: Hashable,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        nominated_for: Callable[[str], Sequence[PodInfo]],
        judge: Callable[[NodeInfo], Status | None],
    ) -> list[Status | None]:
        """Per node in order, ``get``'s kept verdict, or else ``put(judge(node))``: what a Filter loop
        asks of every node with nominations, in one loop (three calls per node cost more than the
        check; a cycle walks past every such node, nearly all kept)."""
        kept_get = self._kept.get
        out: list[Status | None] = []
        for node in nodes:
            name = node.name
            nominated = nominated_for(name)
            kept = kept_get(name)
            if (
                kept is not None
                and kept[0] is node
                and kept[1] == node.generation
                and kept[2] is nominated
                and kept[3] is key
                and not same_pod_in(pod, nominated)
            ):
                out.append(kept[4])
                continue
            out.append(self.put(key, pod, node, nominated, judge(node)))
        return out

    def put(
        self, key: Hashable, pod: PodInfo, node: NodeInfo, nominated: Sequence[PodInfo], status: Status | None
    ) -> Status | None:
        """Keep ``status`` (the verdict just judged) where that is exact; returns it, or an equal
        Status already kept for another node (Filter statuses are never changed once made)."""
        if (status is not None and status.code is Code.Error) or same_pod_in(pod, nominated):
            self._kept.pop(node.name, None)
            return status
        if status is not None:
            shared = self._shared
            if len(shared) >= _MAX_SHARED:
                shared.clear()
            status = shared.setdefault((status.code, tuple(status.reasons), status.plugin), status)
        self._kept[node.name] = (node, node.generation, nominated, key, status)
        return status

    def prune(self, live: Sequence[str]) -> None:
        """Drop the nodes not in ``live`` (those with nominations now) once too many are kept."""
        kept = self._kept
        if len(kept) <= len(live) + _SLACK:
            return
        current = set(live)
        for name in [name for name in kept if name not in current]:
            del kept[name]
