"""InterPodAffinity (``pkg/scheduler/framework/plugins/interpodaffinity/plugin.go``, ``filtering.go``,
``scoring.go``, v1.37.2).

Filter: the incoming pod's required pod affinity and anti-affinity, and the required anti-affinity of
the pods already placed, over any topology key. Score: preferred terms in both directions, plus the
existing pods' required affinity weighted by ``hardPodAffinityWeight``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scheduler.framework import IntArray, MaskedStatuses, all_pass, as_subset
from scheduler.framework.columns import ColumnStore
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import NAMESPACES, Lister
from scheduler.framework.objects import labels_of, name_of, object_meta
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, NodeScore, PodInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import is_assigned_or_nominated, pod_info, safe_hint
from scheduler.plugins.interpodaffinity.columnar import existing_anti_tables, incoming_tables, score_tables
from scheduler.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PreFilterState,
    batch_verdicts,
    existing_anti_affinity_counts,
    incoming_affinity_counts,
    satisfies_existing_pods_anti_affinity,
    satisfies_pod_affinity,
    satisfies_pod_anti_affinity,
)
from scheduler.plugins.interpodaffinity.scoring import (
    PreScoreState,
    TopologyScorer,
    batch_scores,
    node_score,
    normalize,
    normalize_array,
    table_scores,
)
from scheduler.plugins.interpodaffinity.terms import (
    AffinityTerm,
    WeightedAffinityTerm,
    matches_all,
    matches_any,
    pod_affinity_terms,
    pod_labels,
)
from scheduler.util.labelselector import NOTHING
from scheduling_queue.types import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource

if TYPE_CHECKING:
    from scheduler.framework.handle import Handle

log = logging.getLogger(__name__)

PRE_FILTER_STATE_KEY = "PreFilter" + names.INTER_POD_AFFINITY
PRE_SCORE_STATE_KEY = "PreScore" + names.INTER_POD_AFFINITY

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100

_ARGS_FIELDS = ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods")


def _pod_labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return labels_of(obj)


def _namespace_of(obj: Mapping[str, Any]) -> str:
    return str(object_meta(obj).get("namespace") or "")


def _node_labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return labels_of(obj)


def _matches_all_raw(terms: Sequence[AffinityTerm], obj: Mapping[str, Any]) -> bool:
    return matches_all(terms, _namespace_of(obj), _pod_labels_of(obj))


def _matches_any_raw(terms: Sequence[AffinityTerm], obj: Mapping[str, Any]) -> bool:
    return matches_any(terms, _namespace_of(obj), _pod_labels_of(obj))


class InterPodAffinity:
    """Required and preferred inter-pod (anti-)affinity.

    Args (``InterPodAffinityArgs``): ``hardPodAffinityWeight`` (default 1, 0..100) scores a node for
    existing pods whose *required* affinity the incoming pod matches; ``ignorePreferredTermsOfExistingPods``
    (default false) skips scoring for pods without preferred terms of their own.

    Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/`` (v1.37.2).
    """

    name = names.INTER_POD_AFFINITY

    # A signed pod has no affinity terms and meets no existing pod's: PreFilter and PreScore skip.
    pre_state_from_signature = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        """Verdicts here depend on other pods' placement across a topology domain, not on one node:
        sign only when the plugin has nothing to do (no pod affinity of its own, no existing pod with
        required anti-affinity, and no existing pod with any affinity unless those are ignored)."""
        if pod.has_pod_affinity or self._handle is None:
            return None
        if self._nodes_with("pods_with_required_anti_affinity"):
            return None
        if not self.ignore_preferred_terms_of_existing_pods and self._nodes_with("pods_with_affinity"):
            return None
        return ()

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        reader = ArgsReader(self.name)
        top = reader.top(args, "InterPodAffinityArgs", _ARGS_FIELDS)
        weight = reader.integer(
            top.get("hardPodAffinityWeight"), "hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT
        )
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            raise reader.error(
                "hardPodAffinityWeight",
                f"Invalid value: {weight}: not in valid range "
                f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
            )
        ignore = top.get("ignorePreferredTermsOfExistingPods", False)
        if not isinstance(ignore, bool):
            raise reader.error(
                "ignorePreferredTermsOfExistingPods", f"Invalid value: {ignore!r}: must be a boolean"
            )
        self.hard_pod_affinity_weight = weight
        self.ignore_preferred_terms_of_existing_pods = ignore
        self._handle = handle
        # Namespace labels, for namespaceSelector: asked for here so the scheduler starts the informer.
        self._namespaces: Lister | None = handle.lister(NAMESPACES) if handle is not None else None

    # --- namespaces -------------------------------------------------------------------------------

    def _namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The labels of ``namespace``; None (no labels) when it is unknown, as upstream assumes."""
        if self._namespaces is None:
            return None
        obj = self._namespaces.get(namespace)
        if obj is None:
            log.debug("namespace %s not found, assuming no namespace labels", namespace)
            return None
        labels = object_meta(obj).get("labels")
        return labels if isinstance(labels, Mapping) else None

    def _widen(self, term: AffinityTerm) -> AffinityTerm:
        """Upstream's mergeAffinityTermNamespacesIfNotEmpty: a term's non-empty namespaceSelector is
        unrolled into the names of the namespaces it selects now, and the selector becomes Nothing.

        Since v1.37 the term is changed in place (v1.36 reset only a copy's selector, so matching still
        read it against the existing pod's namespace labels, or none for an unknown namespace): a pod in
        a namespace the lister does not know is no longer matched by a selector such as ``NotIn`` alone.
        """
        selector = term.namespace_selector
        # A missing selector (Nothing) selects no names; an empty one already matches everything.
        if selector is NOTHING or selector.empty or self._namespaces is None:
            return term
        selected = {name_of(ns) for ns in self._namespaces.list() if selector.matches(labels_of(ns))}
        return replace(term, namespaces=term.namespaces | selected, namespace_selector=NOTHING)

    def _merge_namespaces(self, terms: tuple[AffinityTerm, ...]) -> tuple[AffinityTerm, ...]:
        return tuple(self._widen(term) for term in terms)

    def _merge_weighted(self, terms: tuple[WeightedAffinityTerm, ...]) -> tuple[WeightedAffinityTerm, ...]:
        return tuple(WeightedAffinityTerm(self._widen(w.term), w.weight) for w in terms)

    # --- snapshot ---------------------------------------------------------------------------------

    def _nodes_with(self, attribute: str, nodes: Sequence[NodeInfo] | None = None) -> Sequence[NodeInfo]:
        """The snapshot's list of nodes hosting such pods; a snapshot without one (a test's, say) is
        scanned instead: ``nodes``, or (None) the snapshot's, read only then."""
        snapshot = self._handle.snapshot if self._handle is not None else None
        method: Callable[[], Sequence[NodeInfo]] | None = getattr(snapshot, f"have_{attribute}_list", None)
        if method is not None:
            return method()
        if nodes is None:
            nodes = self._all_nodes(())
        return [node for node in nodes if getattr(node, attribute)]

    def _columns_for(self, nodes: Sequence[NodeInfo]) -> ColumnStore | None:
        """The snapshot's columns when ``nodes`` are exactly the snapshot's nodes (the cycle's case);
        None (the per-node references) otherwise, e.g. for a test's plain list."""
        snapshot = self._handle.snapshot if self._handle is not None else None
        columns_of = getattr(snapshot, "columns", None)
        if snapshot is None or columns_of is None or nodes is not snapshot.node_infos():
            return None
        columns: ColumnStore = columns_of()
        return columns

    def _all_nodes(self, fallback: Sequence[NodeInfo]) -> Sequence[NodeInfo]:
        if self._handle is None:
            return fallback
        return self._handle.snapshot.node_infos()

    # --- PreFilter / Filter -----------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        terms = pod_affinity_terms(pod)
        if terms.error is not None:
            return None, Status.unschedulable(f"parsing pod: {terms.error}", resolvable=False)
        with_anti = self._nodes_with("pods_with_required_anti_affinity", nodes)
        if not with_anti and not terms.required_affinity and not terms.required_anti_affinity:
            # Nothing to count and nothing to check: upstream's Skip, without the lister calls.
            return None, Status.skip()
        required_affinity = self._merge_namespaces(terms.required_affinity)
        required_anti = self._merge_namespaces(terms.required_anti_affinity)
        labels = pod_labels(pod)
        namespace_labels = self._namespace_labels(pod.namespace)
        pre = PreFilterState(pod.namespace, labels, required_affinity, required_anti, namespace_labels)
        columns = self._columns_for(nodes)
        if columns is not None:
            existing = existing_anti_tables(columns, pod.namespace, labels, namespace_labels)
            if not existing and not required_affinity and not required_anti:
                return None, Status.skip()
            pre.use_tables(columns, (existing, *incoming_tables(columns, required_affinity, required_anti)))
            state.write(PRE_FILTER_STATE_KEY, pre)
            return None, None
        pre.existing_anti_affinity_counts = existing_anti_affinity_counts(
            pod.namespace, labels, namespace_labels, with_anti
        )
        pre.affinity_counts, pre.anti_affinity_counts = incoming_affinity_counts(
            required_affinity, required_anti, nodes
        )
        if not pre.existing_anti_affinity_counts and not required_affinity and not required_anti:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, pre)
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        """PreFilterExtensions.AddPod: count ``to_add`` as if it ran on ``node``."""
        pre: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if pre is None:
            return Status.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        pre.update_with_pod(to_add, node.labels, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        """PreFilterExtensions.RemovePod: stop counting ``to_remove`` on ``node``."""
        pre: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if pre is None:
            return Status.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        pre.update_with_pod(to_remove, node.labels, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        pre: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if pre is None:
            return Status.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        labels = node.labels
        if not satisfies_pod_affinity(pre, labels):
            return Status.unschedulable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, resolvable=False)
        if not satisfies_pod_anti_affinity(pre, labels):
            return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not satisfies_existing_pods_anti_affinity(pre, labels):
            return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        subset = as_subset(nodes)
        pre: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if subset is None or pre is None:
            return [self.filter(state, pod, node) for node in nodes]
        affinity_ok, anti_ok, existing_ok = batch_verdicts(pre, subset)
        ok = affinity_ok & anti_ok & existing_ok
        if ok.all():
            return all_pass(len(subset))
        affinity = Status.unschedulable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, resolvable=False)
        anti = Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        existing = Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)

        # Python lists: the Filter loop asks once per rejected node, and numpy's scalar indexing costs
        # more than the list's.
        affinity_passed, anti_passed = affinity_ok.tolist(), anti_ok.tolist()

        def status_of(index: int) -> Status:
            if not affinity_passed[index]:
                return affinity
            return anti if not anti_passed[index] else existing

        return MaskedStatuses(ok, status_of)

    # --- PreScore / Score -------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        terms = pod_affinity_terms(pod)
        has_constraints = bool(
            terms.preferred_affinity or terms.preferred_anti_affinity
        ) or _has_raw_preferred(pod)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        if terms.error is not None:
            # PreFilter rejects such a pod first; reaching here means Filter was disabled.
            return Status.as_error(f"failed to parse pod: {terms.error}")
        all_nodes = self._all_nodes(nodes)
        if not has_constraints and not self._nodes_with("pods_with_affinity", all_nodes):
            # No terms of its own and no pod with any affinity placed: nothing can score (upstream
            # finds no topology score and skips), without building the tables.
            return Status.skip()
        columns = self._columns_for(all_nodes)
        if columns is not None:
            tables, touched = score_tables(
                columns,
                pod,
                self._merge_weighted(terms.preferred_affinity),
                self._merge_weighted(terms.preferred_anti_affinity),
                self._namespace_labels(pod.namespace),
                self.hard_pod_affinity_weight,
            )
            if not touched:
                return Status.skip()
            state.write(PRE_SCORE_STATE_KEY, PreScoreState.from_tables(columns, tables, touched))
            return None
        if has_constraints:
            candidates: Iterable[NodeInfo] = self._all_nodes(nodes)
        else:
            candidates = self._nodes_with("pods_with_affinity", self._all_nodes(nodes))
        scorer = TopologyScorer(
            pod,
            self._merge_weighted(terms.preferred_affinity),
            self._merge_weighted(terms.preferred_anti_affinity),
            self._namespace_labels(pod.namespace),
            self.hard_pod_affinity_weight,
        )
        scorer.add_nodes(candidates, all_pods=has_constraints)
        if not scorer.scores:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(scorer.scores))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        pre: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre is None:
            return 0, Status.as_error(f"failed to read {PRE_SCORE_STATE_KEY!r} from cycleState")
        return node_score(pre.topology_score, node.labels), None

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[int] | IntArray:
        subset = as_subset(nodes)
        pre: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if subset is None or pre is None:
            return [self.score(state, pod, node)[0] for node in nodes]
        if pre.tables is not None and pre.columns is subset.columns:
            return table_scores(pre.tables, subset)
        return batch_scores(pre.topology_score, subset)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        pre: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre is None:
            return Status.as_error(f"failed to read {PRE_SCORE_STATE_KEY!r} from cycleState")
        if not pre.topology_score:
            return None
        for entry, value in zip(scores, normalize([s.score for s in scores]), strict=True):
            entry.score = value
        return None

    def normalize_score_array(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        pre: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre is None or pre.empty():
            return scores
        return normalize_array(scores)

    # --- Queueing hints ---------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # Delete: a pod whose anti-affinity (or the target's) blocked may be gone. UpdatePodLabel:
            # labels that matched may no longer match. Add: a pod the target has affinity to arrived.
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.AssignedPod, ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete
                ),
                self.is_schedulable_after_assigned_pod_change,
            ),
            # The rejected pod's own labels changed: some existing pod's anti-affinity may no longer apply.
            ClusterEventWithHint(
                ClusterEvent(Resource.TargetPod, ActionType.UpdatePodLabel),
                self.is_schedulable_after_target_pod_update_label,
            ),
            # Queueing hints are on: no UpdateNodeTaint registration, as upstream.
            ClusterEventWithHint(
                ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeLabel),
                self.is_schedulable_after_node_change,
            ),
        ]

    @safe_hint
    def is_schedulable_after_assigned_pod_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if (new_obj is not None and not is_assigned_or_nominated(new_obj)) or (
            old_obj is not None and not is_assigned_or_nominated(old_obj)
        ):
            return QueueingHint.Skip
        target = pod_info(pod)
        terms = pod_affinity_terms(target)
        if terms.error is not None:
            return QueueingHint.Queue  # as upstream, a hint that cannot read the terms queues the pod
        affinity, anti = terms.required_affinity, terms.required_anti_affinity
        if old_obj is not None and new_obj is not None:
            if not _matches_all_raw(affinity, old_obj) and _matches_all_raw(affinity, new_obj):
                return QueueingHint.Queue
            # v1.37: one anti-affinity term the pod stops matching is enough (v1.36 asked for all).
            if _matches_any_raw(anti, old_obj) and not _matches_any_raw(anti, new_obj):
                return QueueingHint.Queue
            return QueueingHint.Skip
        if new_obj is not None:
            return QueueingHint.Queue if _matches_all_raw(affinity, new_obj) else QueueingHint.Skip
        if _matches_any_raw(anti, old_obj):
            return QueueingHint.Queue
        deleted = pod_affinity_terms(pod_info(old_obj))
        if deleted.error is not None:
            return QueueingHint.Queue
        if matches_any(deleted.required_anti_affinity, target.namespace, pod_labels(target)):
            return QueueingHint.Queue
        return QueueingHint.Skip

    def is_schedulable_after_target_pod_update_label(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # v1.37.2 answers Queue without comparing uids (v1.36's Pod hint checked that the relabelled pod
        # was the rejected one); a replayed in-flight TargetPod event of another pod gets Queue too.
        return QueueingHint.Queue

    @safe_hint
    def is_schedulable_after_node_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        terms = pod_affinity_terms(pod_info(pod))
        if terms.error is not None:
            return QueueingHint.Queue  # as upstream, a hint that cannot read the terms queues the pod
        new_labels = _node_labels(new_obj)
        old_labels = _node_labels(old_obj) if old_obj is not None else None
        for term in terms.required_affinity:
            key = term.topology_key
            if old_labels is None:
                if key in new_labels:
                    return QueueingHint.Queue  # a node with the topology key was added
                continue
            if key in new_labels and (key not in old_labels or old_labels[key] != new_labels[key]):
                return QueueingHint.Queue  # the node gained the key, or moved to another domain
        for term in terms.required_anti_affinity:
            if old_labels is None:
                # Any new node may be one without the key, or in a domain free of hated pods.
                return QueueingHint.Queue
            key = term.topology_key
            if key in old_labels and (key not in new_labels or old_labels[key] != new_labels[key]):
                return QueueingHint.Queue  # the node lost the key, or moved to another domain
        return QueueingHint.Skip


def _has_raw_preferred(pod: PodInfo) -> bool:
    """Upstream tests the spec's lists, not the parsed terms (which are empty after a parse error)."""
    affinity = pod.spec.get("affinity")
    if not isinstance(affinity, Mapping):
        return False
    for section in ("podAffinity", "podAntiAffinity"):
        part = affinity.get(section)
        if isinstance(part, Mapping) and part.get("preferredDuringSchedulingIgnoredDuringExecution"):
            return True
    return False
