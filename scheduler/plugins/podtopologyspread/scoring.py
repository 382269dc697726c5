"""PreScore/Score/NormalizeScore for ``whenUnsatisfiable: ScheduleAnyway`` (upstream
``podtopologyspread/scoring.go``).

A node's raw score sums, over the constraints whose key it has, ``count * weight + (maxSkew - 1)``,
where ``count`` is the matching pods in the node's domain and ``weight = ln(domains + 2)``, so that
constraints with few domains (zones) are not drowned by those with many (hostnames). Fewer pods is
better: NormalizeScore maps the lowest raw score to 100.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from scheduler.framework import BoolArray, IntArray, NodeSubset, as_subset
from scheduler.framework.columns import ColumnStore
from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.framework.types import NodeInfo, NodeScore, PodInfo
from scheduler.plugins.helper.gomath import go_round
from scheduler.plugins.helper.taints import pod_tolerations
from scheduler.plugins.nodeaffinity import pod_required_affinity
from scheduler.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    SpreadConstraint,
    count_matching,
    node_has_all_keys,
)
from scheduler.plugins.podtopologyspread.filtering import (
    domain_dict,
    inclusion_mask,
    matching_counts,
    read_only,
    value_lookup,
)
from scheduler.util.labelselector import selector_identity

FloatArray = npt.NDArray[np.float64]


@dataclass(slots=True)
class ScoreState:
    """Upstream's preScoreState.

    Built from the snapshot's columns, the domain counts of non-hostname constraints live in
    ``tables`` (matching pods by label code) until ``counts`` is first read."""

    constraints: tuple[SpreadConstraint, ...]
    # Names of the candidate nodes missing a topology key: scored 0 (only when all keys are required).
    ignored: set[str] = field(default_factory=set)
    # Per constraint: topology value -> matching pods (hostname constraints count per node in Score).
    counts_: list[dict[str, int]] | None = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    # Which of the nodes last scored are ignored, aligned with them: NormalizeScore's array form sees
    # scores without node names.
    ignored_mask: BoolArray | None = None
    # Per constraint, by label code of its key: matching pods (tables) and which codes are domains.
    tables: list[IntArray] | None = None
    domains: list[BoolArray] | None = None
    columns: ColumnStore | None = None

    @property
    def counts(self) -> list[dict[str, int]]:
        if self.counts_ is None:
            assert self.tables is not None and self.domains is not None and self.columns is not None
            self.counts_ = [
                {} if c.topology_key == LABEL_HOSTNAME else domain_dict(self.columns, c.topology_key, t, d)
                for c, t, d in zip(self.constraints, self.tables, self.domains, strict=True)
            ]
        self.tables = self.domains = None
        return self.counts_


def topology_normalizing_weight(size: int) -> float:
    """``ln(size + 2)``: in [1.09, 8.52] for 1 to 5,000 domains."""
    return math.log(size + 2)


def build_score_state(
    pod: PodInfo,
    constraints: tuple[SpreadConstraint, ...],
    candidates: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo],
    *,
    require_all_topologies: bool,
    columns: ColumnStore | None = None,
) -> ScoreState:
    """``initPreScoreState`` over the candidates, then the counts over every node of the snapshot."""
    subset = as_subset(candidates)
    if subset is not None and columns is not None and subset.columns is columns:
        return _build_from_columns(pod, constraints, subset, columns, require_all_topologies)
    state = ScoreState(constraints, counts_=[{} for _ in constraints])
    counts = state.counts
    for node in candidates:
        labels = node.labels
        if require_all_topologies and not node_has_all_keys(labels, constraints):
            state.ignored.add(node.name)
            continue
        for index, constraint in enumerate(constraints):
            if constraint.topology_key != LABEL_HOSTNAME:
                # A node without the key (system defaults) makes "" a domain, as upstream.
                counts[index].setdefault(labels.get(constraint.topology_key, ""), 0)
    for index, constraint in enumerate(constraints):
        size = (
            len(candidates) - len(state.ignored)
            if constraint.topology_key == LABEL_HOSTNAME
            else len(counts[index])
        )
        state.weights.append(topology_normalizing_weight(size))

    needs_policies = any(c.honor_node_affinity or c.honor_node_taints for c in constraints)
    affinity = pod_required_affinity(pod) if needs_policies else None
    tolerations = pod_tolerations(pod) if needs_policies else ()
    namespace = pod.namespace
    for node in all_nodes:
        if not node.pods:
            continue
        labels = node.labels
        if require_all_topologies and not node_has_all_keys(labels, constraints):
            continue
        for index, constraint in enumerate(constraints):
            domains = counts[index]
            value = labels.get(constraint.topology_key, "")
            # Only domains of some candidate matter (hostname ones are counted in Score).
            if value not in domains:
                continue
            if affinity is not None and not constraint.includes_node(node, affinity, tolerations):
                continue
            domains[value] += count_matching(node.pods.values(), constraint.selector, namespace)
    return state


class _ScoreLayout:
    """What PreScore's counting reads of the nodes' labels alone: which rows have every key (None: all,
    or not required) and, per non-hostname key, each row's code with a missing label read as the ""
    domain, and those codes on the rows that have every key. Kept until a label code changes."""

    __slots__ = ("codes", "has_all", "kept_codes", "lengths")

    def __init__(self, columns: ColumnStore, keys: tuple[str, ...], require_all: bool) -> None:
        has_all: BoolArray = np.ones(len(columns), dtype=np.bool_)
        if require_all:
            for key in keys:
                has_all &= columns.label_codes(key) > 0
        self.has_all: BoolArray | None = None if has_all.all() else read_only(has_all)
        self.codes: dict[str, IntArray] = {}
        self.kept_codes: dict[str, IntArray] = {}
        self.lengths: dict[str, int] = {}
        for key in keys:
            if key == LABEL_HOSTNAME:
                continue
            codes = columns.label_codes(key)
            # A node without the key is in the "" domain (system defaults), as is one labelled "".
            empty = columns.label_code(key, "")
            codes = np.where(codes == 0, empty, codes) if empty > 0 else codes.copy()
            self.codes[key] = read_only(codes)
            self.kept_codes[key] = read_only(codes if self.has_all is None else codes[self.has_all])
            self.lengths[key] = len(columns.label_values(key))


def _build_from_columns(
    pod: PodInfo,
    constraints: tuple[SpreadConstraint, ...],
    candidates: NodeSubset,
    columns: ColumnStore,
    require_all: bool,
) -> ScoreState:
    """``build_score_state`` by label codes, ``all_nodes`` being every row of ``columns``."""
    keys = tuple(c.topology_key for c in constraints)
    layout = columns.label_memo(
        ("PodTopologySpread/score-layout", keys, require_all),
        lambda: _ScoreLayout(columns, keys, require_all),
    )
    positions = candidates.positions
    has_all = layout.has_all
    kept = positions
    state = ScoreState(constraints, counts_=None, tables=[], domains=[], columns=columns)
    assert state.tables is not None and state.domains is not None
    if has_all is not None:
        ignored = ~has_all[positions]
        if ignored.any():
            kept = positions[~ignored]
            state.ignored = {info.name for info in columns.infos[positions[ignored]].tolist()}
    by_selector: dict[tuple[object, ...], IntArray] = {}
    for constraint in constraints:
        key = constraint.topology_key
        if key == LABEL_HOSTNAME:
            state.weights.append(topology_normalizing_weight(len(kept)))
            state.tables.append(np.zeros(0, dtype=np.int64))
            state.domains.append(np.zeros(0, dtype=np.bool_))
            continue
        codes = layout.codes[key]
        length = layout.lengths[key]
        domains: BoolArray = np.bincount(codes[kept], minlength=length) > 0
        state.weights.append(topology_normalizing_weight(int(np.count_nonzero(domains))))
        included = (
            inclusion_mask(pod, constraint, columns)
            if constraint.honor_node_affinity or constraint.honor_node_taints
            else None
        )
        identity = selector_identity(constraint.selector)
        matched = by_selector.get(identity)
        if matched is None:
            matched = by_selector[identity] = matching_counts(columns, constraint.selector, pod.namespace)
        if included is None:
            # The usual case: the rows counted are those with every key, their codes the layout's.
            weights = matched if has_all is None else matched[has_all]
            sums = np.bincount(layout.kept_codes[key], weights=weights, minlength=length)
        else:
            mask = included if has_all is None else has_all & included
            sums = np.bincount(codes[mask], weights=matched[mask], minlength=length)
        table: IntArray = sums.astype(np.int64)
        table[~domains] = 0
        state.tables.append(table)
        state.domains.append(domains)
    return state


def score_node(state: ScoreState, pod: PodInfo, node: NodeInfo) -> int:
    if node.name in state.ignored:
        return 0
    labels = node.labels
    score = 0.0
    for index, constraint in enumerate(state.constraints):
        value = labels.get(constraint.topology_key)
        if value is None:
            continue
        if constraint.topology_key == LABEL_HOSTNAME:
            count = count_matching(node.pods.values(), constraint.selector, pod.namespace)
        else:
            count = state.counts[index].get(value, 0)
        score += count * state.weights[index] + (constraint.max_skew - 1)
    return go_round(score)


def score_subset(state: ScoreState, pod: PodInfo, subset: NodeSubset) -> IntArray:
    """``score_node`` for every node of ``subset``; only hostname constraints look at nodes one by one."""
    size = len(subset)
    score: FloatArray = np.zeros(size, dtype=np.float64)
    infos: list[NodeInfo] | None = None
    for index, constraint in enumerate(state.constraints):
        key = constraint.topology_key
        present = subset.label_codes(key) != 0
        if key == LABEL_HOSTNAME and state.columns is subset.columns:
            counts = matching_counts(subset.columns, constraint.selector, pod.namespace)[subset.positions]
        elif key == LABEL_HOSTNAME:
            if infos is None:
                infos = list(subset)
            counts = np.fromiter(
                (
                    count_matching(info.pods.values(), constraint.selector, pod.namespace) if info.pods else 0
                    for info in infos
                ),
                dtype=np.int64,
                count=size,
            )
        elif state.tables is not None and state.columns is subset.columns:
            table = state.tables[index]
            codes = subset.label_codes(key)
            counts = table[codes]
        else:
            counts = value_lookup(subset, key, state.counts[index])
        # Same float operations in the same order as score_node, so the sums are bit-identical.
        term = counts.astype(np.float64) * state.weights[index] + float(constraint.max_skew - 1)
        score = np.where(present, score + term, score)
    # go_round for non-negative scores.
    rounded: IntArray = np.floor(score + 0.5).astype(np.int64)
    if state.ignored:
        mask = ignored_mask(state, subset if infos is None else infos)
        rounded[mask] = 0
    return rounded


def ignored_mask(state: ScoreState, nodes: Sequence[NodeInfo]) -> BoolArray:
    """Which of ``nodes`` are ignored; also kept in the state for ``normalize_array``."""
    mask: BoolArray = np.fromiter(
        (node.name in state.ignored for node in nodes), dtype=np.bool_, count=len(nodes)
    )
    state.ignored_mask = mask
    return mask


def normalize(state: ScoreState, scores: list[NodeScore]) -> None:
    """Fewest matching pods scores 100; ignored nodes score 0."""
    ignored = state.ignored
    kept = [entry.score for entry in scores if entry.name not in ignored]
    min_score = min(kept, default=0)
    max_score = max(0, *kept) if kept else 0
    for entry in scores:
        if entry.name in ignored:
            entry.score = 0
        elif max_score == 0:
            entry.score = MAX_NODE_SCORE
        else:
            entry.score = MAX_NODE_SCORE * (max_score + min_score - entry.score) // max_score


def normalize_array(state: ScoreState, scores: IntArray) -> IntArray:
    """``normalize`` over the scores of the nodes last scored (``state.ignored_mask`` names the ignored)."""
    ignored = state.ignored_mask if state.ignored else None
    if state.ignored and (ignored is None or len(ignored) != len(scores)):
        raise ValueError("PodTopologySpread: NormalizeScore without the Score of the same nodes")
    # No node ignored (the usual case): no mask to build or apply.
    kept = scores if ignored is None else scores[~ignored]
    if not len(kept):
        return np.zeros(len(scores), dtype=np.int64)
    min_score, max_score = int(kept.min()), max(0, int(kept.max()))
    if max_score == 0:
        result: IntArray = np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64)
    else:
        result = MAX_NODE_SCORE * (max_score + min_score - scores) // max_score
    if ignored is not None:
        result[ignored] = 0
    return result
