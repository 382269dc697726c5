"""InterPodAffinity PreScore/Score/NormalizeScore (upstream ``interpodaffinity/scoring.go``).

PreScore sums term weights per topology pair, once per cycle:

* the incoming pod's preferred affinity (+weight) and anti-affinity (-weight) terms, for each existing
  pod matching them, at the pair of that pod's node;
* existing pods' required affinity terms matching the incoming pod (+hardPodAffinityWeight);
* existing pods' preferred affinity (+weight) and anti-affinity (-weight) terms matching it.

A node's score is the sum over topology keys of the value at its own label; NormalizeScore maps the
scores min-max onto 0..100.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from scheduler.framework import BoolArray, IntArray, NodeSubset
from scheduler.framework.columns import ColumnStore
from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.interpodaffinity import columnar
from scheduler.plugins.interpodaffinity.columnar import KeyTables
from scheduler.plugins.interpodaffinity.terms import (
    MatchKey,
    WeightedAffinityTerm,
    match_key,
    pod_affinity_terms,
    pod_labels,
)

# topology key -> topology value -> summed weight
TopologyScore = dict[str, dict[str, int]]


class PreScoreState:
    """The summed weights per topology pair. Built from the snapshot's columns they live in per-key
    tables by label code until ``topology_score`` is first read."""

    __slots__ = ("_topology_score", "columns", "tables", "touched")

    def __init__(self, topology_score: TopologyScore | None = None) -> None:
        self._topology_score = topology_score if topology_score is not None else {}
        self.tables: KeyTables | None = None
        self.touched: Mapping[str, BoolArray] = {}
        self.columns: ColumnStore | None = None

    @classmethod
    def from_tables(
        cls, columns: ColumnStore, tables: KeyTables, touched: Mapping[str, BoolArray]
    ) -> PreScoreState:
        state = cls()
        state.columns, state.tables, state.touched = columns, tables, touched
        return state

    @property
    def topology_score(self) -> TopologyScore:
        if self.tables is not None:
            assert self.columns is not None
            self._topology_score = columnar.topology_score(self.columns, self.tables, self.touched)
            self.tables = None
        return self._topology_score

    def empty(self) -> bool:
        return not self.touched if self.tables is not None else not self._topology_score


class TopologyScorer:
    """Accumulates the weights of one cycle (upstream's processExistingPod)."""

    __slots__ = (
        "_incoming",
        "hard_weight",
        "labels",
        "namespace",
        "namespace_labels",
        "preferred_affinity",
        "preferred_anti_affinity",
        "scores",
    )

    def __init__(
        self,
        pod: PodInfo,
        preferred_affinity: tuple[WeightedAffinityTerm, ...],
        preferred_anti_affinity: tuple[WeightedAffinityTerm, ...],
        namespace_labels: Mapping[str, str] | None,
        hard_weight: int,
    ) -> None:
        self.namespace = pod.namespace
        self.labels = pod_labels(pod)
        self.preferred_affinity = preferred_affinity
        self.preferred_anti_affinity = preferred_anti_affinity
        self.namespace_labels = namespace_labels
        self.hard_weight = hard_weight
        self.scores: TopologyScore = {}
        # (topology key, signed weight) of the incoming pod's preferred terms an existing pod matches,
        # per namespace and label set: one workload's pods are judged once.
        self._incoming: dict[MatchKey, tuple[tuple[str, int], ...]] = {}

    def _add(self, key: str, node_labels: Mapping[str, str], weight: int) -> None:
        value = node_labels.get(key)
        if value is None:
            return
        per_value = self.scores.get(key)
        if per_value is None:
            per_value = self.scores[key] = {}
        per_value[value] = per_value.get(value, 0) + weight

    def _incoming_contributions(self, existing: PodInfo) -> tuple[tuple[str, int], ...]:
        # The incoming pod's terms have their namespace selectors unrolled: no namespace labels needed.
        namespace, labels = existing.namespace, pod_labels(existing)
        out = [
            (w.term.topology_key, w.weight)
            for w in self.preferred_affinity
            if w.term.matches(namespace, labels, None)
        ]
        out += [
            (w.term.topology_key, -w.weight)
            for w in self.preferred_anti_affinity
            if w.term.matches(namespace, labels, None)
        ]
        return tuple(out)

    def add_existing(self, existing: PodInfo, node_labels: Mapping[str, str]) -> None:
        if not node_labels:
            return
        if self.preferred_affinity or self.preferred_anti_affinity:
            key = match_key(existing)
            contributions = self._incoming.get(key)
            if contributions is None:
                contributions = self._incoming[key] = self._incoming_contributions(existing)
            for topology_key, weight in contributions:
                self._add(topology_key, node_labels, weight)
        if not existing.has_pod_affinity:
            return
        terms = pod_affinity_terms(existing)
        me, my_labels, my_ns_labels = self.namespace, self.labels, self.namespace_labels
        if self.hard_weight > 0:
            for term in terms.required_affinity:
                if term.matches(me, my_labels, my_ns_labels):
                    self._add(term.topology_key, node_labels, self.hard_weight)
        for weighted in terms.preferred_affinity:
            if weighted.term.matches(me, my_labels, my_ns_labels):
                self._add(weighted.term.topology_key, node_labels, weighted.weight)
        for weighted in terms.preferred_anti_affinity:
            if weighted.term.matches(me, my_labels, my_ns_labels):
                self._add(weighted.term.topology_key, node_labels, -weighted.weight)

    def add_nodes(self, nodes: Iterable[NodeInfo], all_pods: bool) -> None:
        for node in nodes:
            pods = node.pods if all_pods else node.pods_with_affinity
            node_labels = node.labels
            for existing in pods.values():
                self.add_existing(existing, node_labels)


def node_score(topology_score: TopologyScore, node_labels: Mapping[str, str]) -> int:
    total = 0
    for key, per_value in topology_score.items():
        value = node_labels.get(key)
        if value is not None:
            total += per_value.get(value, 0)
    return total


def batch_scores(topology_score: TopologyScore, subset: NodeSubset) -> IntArray:
    """``node_score`` for every node of ``subset``, by label codes."""
    total: IntArray = np.zeros(len(subset), dtype=np.int64)
    for key, per_value in topology_score.items():
        codes = subset.label_codes(key)
        if not len(codes):
            continue
        lookup: IntArray = np.zeros(int(codes.max()) + 1, dtype=np.int64)
        for value, weight in per_value.items():
            code = subset.columns.label_code(key, value)
            if 0 < code < len(lookup):
                lookup[code] += weight
        total += lookup[codes]
    return total


def table_scores(tables: KeyTables, subset: NodeSubset) -> IntArray:
    """``node_score`` for every node of ``subset`` from per-key tables by label code."""
    total: IntArray = np.zeros(len(subset), dtype=np.int64)
    for key, table in tables.items():
        total += table[subset.label_codes(key)]
    return total


def normalize(scores: list[int]) -> list[int]:
    """Min-max onto 0..MAX_NODE_SCORE with Go's float64 arithmetic; all equal gives all 0."""
    if not scores:
        return scores
    low, high = min(scores), max(scores)
    spread = high - low
    if spread <= 0:
        return [0] * len(scores)
    return [int(float(MAX_NODE_SCORE) * ((score - low) / spread)) for score in scores]


def normalize_array(scores: IntArray) -> IntArray:
    if not len(scores):
        return scores
    low, high = int(scores.min()), int(scores.max())
    spread = high - low
    if spread <= 0:
        return np.zeros(len(scores), dtype=np.int64)
    result: IntArray = (float(MAX_NODE_SCORE) * ((scores - low) / spread)).astype(np.int64)
    return result
