"""NodeAffinity (``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go``)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.framework import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    IntArray,
    MaskedStatuses,
    NodeInfo,
    NodeScore,
    PodInfo,
    PodSpecError,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    as_subset,
)
from scheduler.framework.objects import labels_of, name_of
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import pod_info, safe_hint
from scheduler.plugins.helper.nodeselector_batch import preferred_scores, required_mask, selector_mask
from scheduler.plugins.helper.normalize import default_normalize_score, default_normalize_score_array
from scheduler.plugins.helper.signature import spec_part
from scheduler.util.nodeselector import (
    OBJECT_NAME_FIELD,
    NodeSelector,
    PreferredTerms,
    RequiredNodeAffinity,
    SelectorError,
    parse_node_selector,
    parse_preferred_terms,
    preferred_terms,
    required_node_affinity,
    required_terms_raw,
)

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

PRE_FILTER_STATE_KEY = "PreFilter" + names.NODE_AFFINITY
PRE_SCORE_STATE_KEY = "PreScore" + names.NODE_AFFINITY
_REQUIRED_KEY = "NodeAffinity.required"
_PREFERRED_KEY = "NodeAffinity.preferred"

_ADDED_AFFINITY_FIELDS = (
    "requiredDuringSchedulingIgnoredDuringExecution",
    "preferredDuringSchedulingIgnoredDuringExecution",
)


def _build_required(pod: PodInfo) -> RequiredNodeAffinity:
    try:
        return required_node_affinity(pod.spec)
    except SelectorError as err:
        raise PodSpecError(f"pod {pod.key}: {err}") from None


def _build_preferred(pod: PodInfo) -> PreferredTerms | None:
    try:
        return preferred_terms(pod.spec)
    except SelectorError as err:
        raise PodSpecError(f"pod {pod.key}: {err}") from None


def pod_required_affinity(pod: PodInfo) -> RequiredNodeAffinity:
    """``spec.nodeSelector`` and the required node affinity, parsed once per pod version."""
    return pod.derived(_REQUIRED_KEY, _build_required)


def pod_preferred_affinity(pod: PodInfo) -> PreferredTerms | None:
    return pod.derived(_PREFERRED_KEY, _build_preferred)


def _node_names_from_terms(terms: Sequence[Any]) -> set[str] | None:
    """The node names the required terms allow through ``metadata.name In``, or None for "any".

    As upstream: every term must pin names this way (terms are ORed), otherwise no narrowing.
    """
    node_names: set[str] | None = None
    for term in terms:
        term_names: set[str] | None = None
        fields = term.get("matchFields") if isinstance(term, Mapping) else None
        for requirement in fields or ():
            if requirement.get("key") == OBJECT_NAME_FIELD and requirement.get("operator") == "In":
                values = set(requirement.get("values") or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        node_names = term_names if node_names is None else node_names | term_names
    return node_names


class NodeAffinity:
    """Filter on ``spec.nodeSelector`` + required node affinity; Score by preferred terms.

    Args (``NodeAffinityArgs``): ``addedAffinity`` applies to every pod of the profile on top of the
    pod's own: its required part must match too (reason "scheduler-enforced"), its preferred terms
    add to the score.

    Upstream: ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`` (v1.37.2).
    """

    name = names.NODE_AFFINITY
    # Filter reads the node's labels and the pod's required node affinity, never the pods on the node
    # (preemption dry runs ask once per node).
    filter_ignores_pods_on_node = True

    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        """nodeSelector and the affinity stanza (its pod (anti-)affinity parts make InterPodAffinity
        decline anyway)."""
        return spec_part(pod, "nodeSelector", "affinity")

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        reader = ArgsReader(self.name)
        top = reader.top(args, "NodeAffinityArgs", ("addedAffinity",))
        added = reader.mapping(top.get("addedAffinity"), "addedAffinity", fields=_ADDED_AFFINITY_FIELDS)
        self.added_node_selector: NodeSelector | None = None
        self.added_preferred: PreferredTerms | None = None
        try:
            required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
            if required is not None:
                self.added_node_selector = parse_node_selector(
                    required, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                )
            preferred = added.get("preferredDuringSchedulingIgnoredDuringExecution")
            if preferred:
                parsed = parse_preferred_terms(
                    preferred, "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
                )
                self.added_preferred = parsed if parsed.terms else None
        except SelectorError as err:
            raise reader.error("", str(err)) from None

    # --- Filter -----------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        spec = pod.spec
        terms = required_terms_raw(spec)
        if terms is None and self.added_node_selector is None and spec.get("nodeSelector") is None:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, pod_required_affinity(pod))
        if not terms:
            return None, None
        node_names = _node_names_from_terms(terms)
        if node_names is None:
            return None, None
        if not node_names:
            return None, Status.unschedulable(ERR_REASON_CONFLICT, resolvable=False)
        return PreFilterResult(node_names), None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if self.added_node_selector is not None and not self.added_node_selector.matches(
            node.labels, node.name
        ):
            return Status.unschedulable(ERR_REASON_ENFORCED, resolvable=False)
        required: RequiredNodeAffinity | None = state.get(PRE_FILTER_STATE_KEY)
        if required is None:
            required = pod_required_affinity(pod)
        # Upstream ignores the lazy parse error here ("backwards compatibility"): a pod whose only
        # terms fail to parse is unschedulable with the plain reason, not an error.
        if not required.matches(node.labels, node.name):
            return Status.unschedulable(ERR_REASON_POD, resolvable=False)
        return None

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        subset = as_subset(nodes)
        required: RequiredNodeAffinity | None = state.get(PRE_FILTER_STATE_KEY)
        if required is None:
            required = pod_required_affinity(pod)
        enforced = (
            selector_mask(self.added_node_selector, subset)
            if subset is not None and self.added_node_selector is not None
            else None
        )
        matched = required_mask(required, subset) if subset is not None else None
        if matched is None or (self.added_node_selector is not None and enforced is None):
            return [self.filter(state, pod, node) for node in nodes]
        pod_status = Status.unschedulable(ERR_REASON_POD, resolvable=False)
        if enforced is None:
            return MaskedStatuses(matched, lambda index: pod_status)
        enforced_status = Status.unschedulable(ERR_REASON_ENFORCED, resolvable=False)
        added_ok = enforced
        return MaskedStatuses(
            added_ok & matched, lambda index: pod_status if added_ok[index] else enforced_status
        )

    # --- Score ------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        preferred = pod_preferred_affinity(pod)
        if preferred is not None and not preferred.terms:
            preferred = None
        # No terms at all would score every node 0; skipping is the same and cheaper.
        if preferred is None and self.added_preferred is None:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, preferred)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        total = 0
        if self.added_preferred is not None:
            total += self.added_preferred.score(node.labels, node.name)
        if PRE_SCORE_STATE_KEY in state:
            preferred: PreferredTerms | None = state.read(PRE_SCORE_STATE_KEY)
        else:
            preferred = pod_preferred_affinity(pod)
        if preferred is not None:
            total += preferred.score(node.labels, node.name)
        return total, None

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[int] | IntArray:
        subset = as_subset(nodes)
        if PRE_SCORE_STATE_KEY in state:
            preferred: PreferredTerms | None = state.read(PRE_SCORE_STATE_KEY)
        else:
            preferred = pod_preferred_affinity(pod)
        if subset is not None:
            total: IntArray | None = np.zeros(len(subset), dtype=np.int64)
            for terms in (self.added_preferred, preferred):
                if terms is None or total is None:
                    continue
                scores = preferred_scores(terms, subset)
                total = None if scores is None else total + scores
            if total is not None:
                return total
        return [self.score(state, pod, node)[0] for node in nodes]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def normalize_score_array(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return default_normalize_score_array(MAX_NODE_SCORE, False, scores)

    # --- Queueing hints ---------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeLabel),
                self.is_schedulable_after_node_change,
            )
        ]

    @safe_hint
    def is_schedulable_after_node_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        new_labels, new_name = _labels_and_name(new_obj)
        if self.added_node_selector is not None and not self.added_node_selector.matches(
            new_labels, new_name
        ):
            return QueueingHint.Skip
        required = pod_required_affinity(pod_info(pod))
        # As upstream, a lazy term parse error (only reported when no term matched) answers Queue.
        matched, error = required.match(new_labels, new_name)
        if error is not None:
            return QueueingHint.Queue
        if not matched:
            return QueueingHint.Skip
        if old_obj is None:
            return QueueingHint.Queue
        old_labels, old_name = _labels_and_name(old_obj)
        was_matched, error = required.match(old_labels, old_name)
        # It matched before too: the change did not help this pod.
        return QueueingHint.Skip if was_matched and error is None else QueueingHint.Queue


def _labels_and_name(node: Mapping[str, Any]) -> tuple[Mapping[str, str], str]:
    return labels_of(node), name_of(node)
