"""The what-if node of a preemption dry run: pods taken off and given back, Filter asked in between.

``copy_or_amounts`` picks how: by arithmetic where that is exact (``scheduler.framework.trial``), else on a
copy of the node with the PreFilter extensions told of every change, as upstream's SelectVictimsOnNode
does (``CopyTrial``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from scheduler.framework.cycle_state import CycleState, origin_of
from scheduler.framework.handle import NodeTrial, PreemptionHandle
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo, same_pod_in


class CopyTrial:
    """The general way: a copy of the node changed pod by pod, the PreFilter extensions (AddPod,
    RemovePod) run for each change when one is active for the pod, Filter run on the copy."""

    __slots__ = ("_extensions", "_handle", "_pod", "_state", "node")

    def __init__(self, handle: PreemptionHandle, state: CycleState, pod: PodInfo, node: NodeInfo) -> None:
        self._handle = handle
        self._state = state
        self._pod = pod
        self.node = node.clone()
        # Without a PreFilter extension for this pod, its AddPod/RemovePod calls do nothing: leave
        # them out (a dry run makes five to ten per node).
        self._extensions = handle.pre_filter_extensions_active(state)

    def remove(self, pod: PodInfo) -> Status | None:
        self.node.remove_pod(pod.key)
        if not self._extensions:
            return None
        return self._handle.run_pre_filter_extension_remove_pod(self._state, self._pod, pod, self.node)

    def add(self, pod: PodInfo) -> Status | None:
        self.node.add_pod(pod)
        if not self._extensions:
            return None
        return self._handle.run_pre_filter_extension_add_pod(self._state, self._pod, pod, self.node)

    def filter(self) -> Status | None:
        return self._handle.run_filter_plugins_with_nominated_pods(self._state, self._pod, self.node)


def copy_or_amounts(handle: PreemptionHandle, state: CycleState, pod: PodInfo, node: NodeInfo) -> NodeTrial:
    """A trial of ``node`` (the snapshot's, left as it is) for ``pod``: by arithmetic when exact."""
    trial = handle.amounts_trial(state, pod, node)
    return trial if trial is not None else CopyTrial(handle, state, pod, node)


# Distinct preemptor keys kept at most (then forgotten: kept nodes of older keys are judged again).
_MAX_KEYS = 256

# A kept node verdict: (NodeInfo, generation, nominated pods, (signature, priority), the status of a
# hopeless node or None, the victims (most important first), how many of them violate a PDB, the
# budgets the victims were chosen with).
_Kept = tuple[
    NodeInfo, int, Sequence[PodInfo], Hashable, "Status | None", tuple[PodInfo, ...], int, Sequence[object]
]


class DryRunVerdicts:
    """A dry run's verdict on a node, kept while nothing it read changes: the node (the snapshot's
    NodeInfo and its generation), its nominated pods (the nominator's kept tuple), and the preemptor
    as Filter sees it (its scheduling signature, ``Framework.sign_pod``, whose promise is the same
    Filter verdict on a node in the same state) and as victims and counted nominated pods are chosen
    (its priority). A later preemptor of that signature and priority gets the same verdict without a
    what-if run: in the preemption workload each preemptor walks past the nodes earlier ones were
    nominated to (hopeless: it did not fit even with every lower-priority pod gone), and finds again
    the victims earlier ones found on the nodes nobody was nominated to since.

    Victims are kept with the budgets they were chosen with, and given only to a caller passing that
    very object (``ParsedBudgets`` returns the same one while no budget changes, and ``()`` while none
    exists): which pods a budget protects is read from the budgets, each node spending a fresh copy of
    their allowances (upstream's FilterVictimsWithPDBViolation), so with the same budgets a node's
    victims are the same. A hopeless node's status is found before any budget is read, so it is kept
    whatever the budgets. Not used when the victims are chosen by more than priority, when the
    pod cannot be signed, in a cycle that times its plugins, or where the preemptor (or the one
    kept) is itself nominated to the node (it never counts against itself)."""

    def __init__(self, handle: PreemptionHandle) -> None:
        self._handle = handle
        # node name -> its last verdict (_Kept)
        self._kept: dict[str, _Kept] = {}
        # The last pod signed in which cycle (its own CycleState), and its key: a dry run asks once per
        # node. Never across cycles: a signature reads the cluster too (InterPodAffinity signs only
        # while no pod with required anti-affinity exists), and a pod retried unchanged keeps its
        # PodInfo, so a key kept from an earlier cycle could hand it victims chosen under other rules.
        self._signed: tuple[PodInfo, CycleState, Hashable | None] | None = None
        # One object per distinct key, so a kept node's key is compared by identity: comparing equal
        # signatures of different pods item by item cost more than the rest of a skip.
        self._keys: dict[Hashable, Hashable] = {}

    def key(self, state: CycleState, pod: PodInfo) -> Hashable | None:
        if state.record_plugin_metrics:
            return None
        cycle = origin_of(state)
        signed = self._signed
        if signed is None or signed[0] is not pod or signed[1] is not cycle:
            signature = self._handle.sign_pod(pod)
            key: Hashable | None = None
            if signature is not None:
                keys = self._keys
                if len(keys) >= _MAX_KEYS:
                    keys.clear()
                key = keys.setdefault((signature, pod.priority), (signature, pod.priority))
            signed = self._signed = (pod, cycle, key)
        return signed[2]

    def get(
        self, key: Hashable, pod: PodInfo, node: NodeInfo, pdbs: Sequence[object]
    ) -> tuple[list[PodInfo], int, Status | None] | None:
        """The kept verdict, as ``select_victims_on_node`` returns it; None: judge the node."""
        return self.lookup(key, pod, pdbs)(node)

    def lookup(
        self, key: Hashable, pod: PodInfo, pdbs: Sequence[object]
    ) -> Callable[[NodeInfo], tuple[list[PodInfo], int, Status | None] | None]:
        """``get`` for one dry run's nodes, with what every node shares (the key, the pod, the budgets,
        the nominated pods' reader) bound once: a dry run asks for a few hundred nodes, nearly all
        kept, and the calls around each check cost more than the check."""
        kept_get = self._kept.get
        nominated_for = self._handle.nominated_pods_for_node

        def known(node: NodeInfo) -> tuple[list[PodInfo], int, Status | None] | None:
            name = node.name
            kept = kept_get(name)
            if kept is None or kept[0] is not node or kept[1] != node.generation or kept[3] is not key:
                return None
            status = kept[4]
            if status is None and kept[7] is not pdbs:
                return None
            nominated = nominated_for(name)
            if kept[2] is not nominated or same_pod_in(pod, nominated):
                return None
            if status is None:
                # Its own list: the caller may keep or change it.
                return list(kept[5]), kept[6], None
            # Its own copy: the caller's diagnosis may change it.
            return [], 0, Status(status.code, list(status.reasons), status.plugin)

        return known

    def put(self, key: Hashable, pod: PodInfo, node: NodeInfo, status: Status) -> None:
        """Keep a hopeless node's status."""
        if status.code not in (Code.Unschedulable, Code.UnschedulableAndUnresolvable):
            return
        self._keep(key, pod, node, status, (), 0, ())

    def put_victims(
        self,
        key: Hashable,
        pod: PodInfo,
        node: NodeInfo,
        pdbs: Sequence[object],
        victims: Sequence[PodInfo],
        num_violating: int,
    ) -> None:
        """Keep the victims found on a node with the budgets they were chosen with, by reference: only
        budgets that cannot change afterwards (a tuple, as ``ParsedBudgets`` gives, or none)."""
        if pdbs and not isinstance(pdbs, tuple):
            self._kept.pop(node.name, None)
            return
        self._keep(key, pod, node, None, tuple(victims), num_violating, pdbs)

    def _keep(
        self,
        key: Hashable,
        pod: PodInfo,
        node: NodeInfo,
        status: Status | None,
        victims: tuple[PodInfo, ...],
        num_violating: int,
        pdbs: Sequence[object],
    ) -> None:
        nominated = self._handle.nominated_pods_for_node(node.name)
        if same_pod_in(pod, nominated):
            self._kept.pop(node.name, None)
            return
        self._kept[node.name] = (node, node.generation, nominated, key, status, victims, num_violating, pdbs)
