"""InterPodAffinity PreFilter/Filter (``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``).

PreFilter walks the cluster once and counts, per topology pair (label key, value):

* ``existing_anti``: existing pods whose required anti-affinity terms match the incoming pod;
* ``affinity``: existing pods matching *all* the incoming pod's required affinity terms;
* ``anti``: existing pods matching each of the incoming pod's required anti-affinity terms.

Filter then judges a node with dict lookups on its labels (or, over a NodeSubset, a few array
operations on label codes), never by scanning pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from scheduler.framework import BoolArray, NodeSubset
from scheduler.framework.columns import ColumnStore
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.interpodaffinity.columnar import KeyTables, pair_counts
from scheduler.plugins.interpodaffinity.terms import (
    AffinityTerm,
    MatchKey,
    match_key,
    matches_all,
    pod_affinity_terms,
    pod_labels,
)

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

TopologyPair = tuple[str, str]
TopologyCounts = dict[TopologyPair, int]


class PreFilterState:
    """Upstream's preFilterState. ``required_affinity``/``required_anti_affinity`` are the incoming
    pod's terms with namespace selectors unrolled into namespaces.

    Built from the snapshot's columns, the three counts live in per-key tables by label code
    (``tables``: existing anti, affinity, anti) until a count map is first read; reading one turns all
    three into maps and drops the tables, so changes through the maps (PreFilterExtensions) are seen.
    """

    __slots__ = (
        "_counts",
        "columns",
        "labels",
        "namespace",
        "namespace_labels",
        "required_affinity",
        "required_anti_affinity",
        "tables",
    )

    def __init__(
        self,
        namespace: str,
        labels: Mapping[str, str],
        required_affinity: tuple[AffinityTerm, ...],
        required_anti_affinity: tuple[AffinityTerm, ...],
        namespace_labels: Mapping[str, str] | None,
        existing_anti_affinity_counts: TopologyCounts | None = None,
        affinity_counts: TopologyCounts | None = None,
        anti_affinity_counts: TopologyCounts | None = None,
    ) -> None:
        self.namespace = namespace
        self.labels = labels
        self.required_affinity = required_affinity
        self.required_anti_affinity = required_anti_affinity
        self.namespace_labels = namespace_labels
        self._counts: list[TopologyCounts] | None = [
            existing_anti_affinity_counts or {},
            affinity_counts or {},
            anti_affinity_counts or {},
        ]
        self.tables: tuple[KeyTables, KeyTables, KeyTables] | None = None
        self.columns: ColumnStore | None = None

    def use_tables(self, columns: ColumnStore, tables: tuple[KeyTables, KeyTables, KeyTables]) -> None:
        self.columns, self.tables, self._counts = columns, tables, None

    def _maps(self) -> list[TopologyCounts]:
        if self._counts is None:
            assert self.tables is not None and self.columns is not None
            columns = self.columns
            self._counts = [pair_counts(columns, tables) for tables in self.tables]
        self.tables = None
        return self._counts

    @property
    def existing_anti_affinity_counts(self) -> TopologyCounts:
        return self._maps()[0]

    @existing_anti_affinity_counts.setter
    def existing_anti_affinity_counts(self, counts: TopologyCounts) -> None:
        self._maps()[0] = counts

    @property
    def affinity_counts(self) -> TopologyCounts:
        return self._maps()[1]

    @affinity_counts.setter
    def affinity_counts(self, counts: TopologyCounts) -> None:
        self._maps()[1] = counts

    @property
    def anti_affinity_counts(self) -> TopologyCounts:
        return self._maps()[2]

    @anti_affinity_counts.setter
    def anti_affinity_counts(self, counts: TopologyCounts) -> None:
        self._maps()[2] = counts

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PreFilterState):
            return NotImplemented
        return (
            self.namespace == other.namespace
            and self.labels == other.labels
            and self.required_affinity == other.required_affinity
            and self.required_anti_affinity == other.required_anti_affinity
            and self.namespace_labels == other.namespace_labels
            and self._maps() == other._maps()
        )

    __hash__ = None  # type: ignore[assignment]

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.namespace,
            self.labels,
            self.required_affinity,
            self.required_anti_affinity,
            self.namespace_labels,
            dict(self.existing_anti_affinity_counts),
            dict(self.affinity_counts),
            dict(self.anti_affinity_counts),
        )

    def update_with_pod(self, existing: PodInfo, node_labels: Mapping[str, str], multiplier: int) -> None:
        """Counts ``existing`` on a node with ``node_labels`` in (multiplier 1) or out (-1): upstream's
        PreFilterExtensions AddPod/RemovePod, for preemption and nominated pods."""
        existing_anti = pod_affinity_terms(existing).required_anti_affinity
        _update(
            self.existing_anti_affinity_counts,
            (t for t in existing_anti if t.matches(self.namespace, self.labels, self.namespace_labels)),
            node_labels,
            multiplier,
        )
        existing_labels = pod_labels(existing)
        if matches_all(self.required_affinity, existing.namespace, existing_labels):
            _update(self.affinity_counts, self.required_affinity, node_labels, multiplier)
        _update(
            self.anti_affinity_counts,
            (t for t in self.required_anti_affinity if t.matches(existing.namespace, existing_labels, None)),
            node_labels,
            multiplier,
        )


def _update(
    counts: TopologyCounts, terms: Iterable[AffinityTerm], node_labels: Mapping[str, str], value: int
) -> None:
    for term in terms:
        topology_value = node_labels.get(term.topology_key)
        if topology_value is None:
            continue
        pair = (term.topology_key, topology_value)
        left = counts.get(pair, 0) + value
        if left:
            counts[pair] = left
        else:
            # Removals may bring a pair down to zero; a present pair always means "some pod".
            counts.pop(pair, None)


def existing_anti_affinity_counts(
    namespace: str,
    labels: Mapping[str, str],
    namespace_labels: Mapping[str, str] | None,
    nodes_with_required_anti_affinity: Iterable[NodeInfo],
) -> TopologyCounts:
    """Per topology pair, the existing pods whose required anti-affinity terms match the incoming pod
    (one count per matching term)."""
    counts: TopologyCounts = {}
    for node in nodes_with_required_anti_affinity:
        node_labels = node.labels
        for existing in node.pods_with_required_anti_affinity.values():
            for term in pod_affinity_terms(existing).required_anti_affinity:
                topology_value = node_labels.get(term.topology_key)
                if topology_value is not None and term.matches(namespace, labels, namespace_labels):
                    pair = (term.topology_key, topology_value)
                    counts[pair] = counts.get(pair, 0) + 1
    return counts


def incoming_affinity_counts(
    affinity_terms: Sequence[AffinityTerm], anti_terms: Sequence[AffinityTerm], nodes: Iterable[NodeInfo]
) -> tuple[TopologyCounts, TopologyCounts]:
    """Per topology pair, the existing pods matching all the incoming pod's affinity terms, and those
    matching each of its anti-affinity terms."""
    affinity: TopologyCounts = {}
    anti: TopologyCounts = {}
    if not affinity_terms and not anti_terms:
        return affinity, anti
    # (matches all affinity terms, anti-affinity terms matched) per namespace and label set: one
    # workload's pods are judged once.
    verdicts: dict[MatchKey, tuple[bool, tuple[AffinityTerm, ...]]] = {}
    nothing: tuple[bool, tuple[AffinityTerm, ...]] = (False, ())
    for node in nodes:
        if not node.pods:
            continue
        node_labels = node.labels
        for existing in node.pods.values():
            key = match_key(existing)
            verdict = verdicts.get(key)
            if verdict is None:
                namespace, labels = existing.namespace, pod_labels(existing)
                matched_anti = tuple(t for t in anti_terms if t.matches(namespace, labels, None))
                verdict = (matches_all(affinity_terms, namespace, labels), matched_anti)
                verdicts[key] = verdict = nothing if verdict == nothing else verdict
            if verdict is nothing:
                continue
            if verdict[0]:
                _add(affinity, affinity_terms, node_labels)
            _add(anti, verdict[1], node_labels)
    return affinity, anti


def _add(counts: TopologyCounts, terms: Iterable[AffinityTerm], node_labels: Mapping[str, str]) -> None:
    for term in terms:
        topology_value = node_labels.get(term.topology_key)
        if topology_value is not None:
            pair = (term.topology_key, topology_value)
            counts[pair] = counts.get(pair, 0) + 1


# --- per node ---------------------------------------------------------------------------------------


def first_of_group(state: PreFilterState) -> bool:
    """No pod anywhere matches the affinity terms, but the pod matches its own: it may go first."""
    return not state.affinity_counts and matches_all(state.required_affinity, state.namespace, state.labels)


def satisfies_pod_affinity(state: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for term in state.required_affinity:
        topology_value = node_labels.get(term.topology_key)
        if topology_value is None:
            # Every topology label must exist on the node, first pod or not.
            return False
        if state.affinity_counts.get((term.topology_key, topology_value), 0) <= 0:
            pods_exist = False
    return pods_exist or first_of_group(state)


def satisfies_pod_anti_affinity(state: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    counts = state.anti_affinity_counts
    if not counts:
        return True
    for term in state.required_anti_affinity:
        topology_value = node_labels.get(term.topology_key)
        if topology_value is not None and counts.get((term.topology_key, topology_value), 0) > 0:
            return False
    return True


def satisfies_existing_pods_anti_affinity(state: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    counts = state.existing_anti_affinity_counts
    if not counts:
        return True
    # Walk whichever is shorter: the node's labels or the counted pairs.
    if len(node_labels) <= len(counts):
        return not any(counts.get(pair, 0) > 0 for pair in node_labels.items())
    return not any(count > 0 and node_labels.get(key) == value for (key, value), count in counts.items())


# --- over a NodeSubset ------------------------------------------------------------------------------


def _has_pair(subset: NodeSubset, key: str, values: Iterable[str]) -> BoolArray:
    """Per node of ``subset``: whether its label ``key`` has one of ``values``."""
    codes = subset.label_codes(key)
    wanted = [code for value in values if (code := subset.columns.label_code(key, value)) > 0]
    if not wanted:
        return np.zeros(len(subset), dtype=np.bool_)
    result: BoolArray = np.isin(codes, wanted)
    return result


def _values_by_key(counts: TopologyCounts) -> dict[str, list[str]]:
    by_key: dict[str, list[str]] = {}
    for (key, value), count in counts.items():
        if count > 0:
            by_key.setdefault(key, []).append(value)
    return by_key


def _has_count(subset: NodeSubset, tables: KeyTables, key: str) -> BoolArray:
    """Per node of ``subset``: whether ``tables`` count something at its value of label ``key``."""
    table = tables.get(key)
    if table is None:
        return np.zeros(len(subset), dtype=np.bool_)
    result: BoolArray = table[subset.label_codes(key)] > 0
    return result


def _table_verdicts(
    state: PreFilterState, tables: tuple[KeyTables, KeyTables, KeyTables], subset: NodeSubset
) -> tuple[BoolArray, BoolArray, BoolArray]:
    existing_tables, affinity_tables, anti_tables = tables
    size = len(subset)
    affinity_ok = np.ones(size, dtype=np.bool_)
    if state.required_affinity:
        has_keys = np.ones(size, dtype=np.bool_)
        pods_exist = np.ones(size, dtype=np.bool_)
        for term in state.required_affinity:
            has_keys &= subset.label_codes(term.topology_key) > 0
            pods_exist &= _has_count(subset, affinity_tables, term.topology_key)
        first = not affinity_tables and matches_all(state.required_affinity, state.namespace, state.labels)
        affinity_ok = has_keys if first else has_keys & pods_exist
    anti_ok = np.ones(size, dtype=np.bool_)
    if anti_tables:
        for key in {term.topology_key for term in state.required_anti_affinity}:
            anti_ok &= ~_has_count(subset, anti_tables, key)
    existing_ok = np.ones(size, dtype=np.bool_)
    for key in existing_tables:
        existing_ok &= ~_has_count(subset, existing_tables, key)
    return affinity_ok, anti_ok, existing_ok


def batch_verdicts(state: PreFilterState, subset: NodeSubset) -> tuple[BoolArray, BoolArray, BoolArray]:
    """Per node of ``subset``: (affinity ok, anti-affinity ok, existing pods' anti-affinity ok), the
    same answers as the three ``satisfies_*`` functions."""
    if state.tables is not None and state.columns is subset.columns:
        return _table_verdicts(state, state.tables, subset)
    size = len(subset)
    affinity_ok = np.ones(size, dtype=np.bool_)
    if state.required_affinity:
        has_keys = np.ones(size, dtype=np.bool_)
        pods_exist = np.ones(size, dtype=np.bool_)
        affinity_values = _values_by_key(state.affinity_counts)
        for term in state.required_affinity:
            has_keys &= subset.label_codes(term.topology_key) > 0
            pods_exist &= _has_pair(subset, term.topology_key, affinity_values.get(term.topology_key, ()))
        affinity_ok = has_keys if first_of_group(state) else has_keys & pods_exist
    anti_ok = np.ones(size, dtype=np.bool_)
    if state.anti_affinity_counts:
        anti_values = _values_by_key(state.anti_affinity_counts)
        for key in {term.topology_key for term in state.required_anti_affinity}:
            anti_ok &= ~_has_pair(subset, key, anti_values.get(key, ()))
    existing_ok = np.ones(size, dtype=np.bool_)
    for key, values in _values_by_key(state.existing_anti_affinity_counts).items():
        existing_ok &= ~_has_pair(subset, key, values)
    return affinity_ok, anti_ok, existing_ok
