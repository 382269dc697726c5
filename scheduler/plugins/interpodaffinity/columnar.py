"""InterPodAffinity's PreFilter and PreScore sums from the snapshot's columns.

The per-node references (``filtering.py``, ``scoring.py``) walk every existing pod each cycle. Here:

* what the incoming pod's terms match is counted per node by ``row_counts`` (kept by the snapshot and
  recounted only on the nodes changed since), keyed by what the terms can see, so equal terms of
  successive pods of one workload share the counts;
* the terms of existing pods are a ``row_tally`` of distinct terms per node, with totals: each
  distinct term is judged once per cycle against the incoming pod, however many pods carry it;
* counts per topology pair are ``np.bincount`` over the label codes of the term's topology key, giving
  one table per key indexed by code (code 0, no such label, never counts).

The results are the same numbers as the references', keyed by code rather than by (key, value).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.framework.columns import BoolArray, ColumnStore, IntArray
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.interpodaffinity.terms import (
    AffinityTerm,
    MatchKey,
    WeightedAffinityTerm,
    match_key,
    pod_affinity_terms,
    pod_labels,
)
from scheduler.util.labelselector import selector_identity

# Verdicts kept per counted column before starting over (pods with unique labels would grow it).
_MAX_VERDICTS = 4096

# Label key -> summed count (or weight) per label code of that key.
KeyTables = dict[str, IntArray]


def term_identity(term: AffinityTerm) -> tuple[Any, ...]:
    """Equal for terms that match the same pods in the same topology."""
    return (
        term.namespaces,
        selector_identity(term.selector),
        selector_identity(term.namespace_selector),
        term.topology_key,
    )


class TermFact:
    """A distinct term in a tally: hashed by identity, carrying one of its equal terms to judge."""

    __slots__ = ("_hash", "identity", "term", "weight")

    def __init__(self, term: AffinityTerm, weight: int = 0, kind: str = "") -> None:
        self.term = term
        self.weight = weight
        self.identity = (kind, weight, term_identity(term))
        self._hash = hash(self.identity)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TermFact) and self.identity == other.identity


def _count(facts: Iterable[TermFact], out: dict[Hashable, int]) -> None:
    for fact in facts:
        out[fact] = out.get(fact, 0) + 1


# --- existing pods' terms ----------------------------------------------------------------------------


def _anti_facts(pod: PodInfo) -> tuple[TermFact, ...]:
    return tuple(TermFact(t) for t in pod_affinity_terms(pod).required_anti_affinity)


def _required_anti_tally(info: NodeInfo) -> Mapping[Hashable, int]:
    out: dict[Hashable, int] = {}
    for pod in info.pods_with_required_anti_affinity.values():
        _count(pod.derived("InterPodAffinity.antiFacts", _anti_facts), out)
    return out


REQUIRED, PREFERRED, PREFERRED_ANTI = "required", "preferred", "preferredAnti"


def _scoring_facts(pod: PodInfo) -> tuple[TermFact, ...]:
    terms = pod_affinity_terms(pod)
    facts = [TermFact(t, 0, REQUIRED) for t in terms.required_affinity]
    facts += [TermFact(w.term, w.weight, PREFERRED) for w in terms.preferred_affinity]
    facts += [TermFact(w.term, w.weight, PREFERRED_ANTI) for w in terms.preferred_anti_affinity]
    return tuple(facts)


def _scoring_tally(info: NodeInfo) -> Mapping[Hashable, int]:
    out: dict[Hashable, int] = {}
    for pod in info.pods_with_affinity.values():
        _count(pod.derived("InterPodAffinity.scoringFacts", _scoring_facts), out)
    return out


# --- per-key tables ----------------------------------------------------------------------------------


def _add_table(
    tables: KeyTables, columns: ColumnStore, key: str, per_row: IntArray, weight: int = 1
) -> BoolArray | None:
    """Adds ``weight`` x ``per_row`` (counts, never negative) summed per code of ``key``. Returns which
    codes of nodes with the key had any, or None when none had."""
    codes = columns.label_codes(key)
    length = len(columns.label_values(key))
    sums = np.bincount(codes, weights=per_row, minlength=length)
    sums[0] = 0
    hits: BoolArray = sums > 0
    if not hits.any():
        return None
    table = tables.get(key)
    if table is None:
        table = tables[key] = np.zeros(length, dtype=np.int64)
    table += sums.astype(np.int64) * weight
    return hits


def _matching(columns: ColumnStore, terms: Sequence[AffinityTerm]) -> IntArray:
    """Per row, the node's pods matching every one of ``terms`` (incoming terms: namespace selectors
    already unrolled, read against no labels)."""
    identity = ("InterPodAffinity/matching", tuple(term_identity(t)[:3] for t in terms))

    # Kept with the column (row_counts keeps the first ``count``): one verdict per workload's pods.
    verdicts: dict[MatchKey, bool] = {}

    def count(info: NodeInfo) -> int:
        number = 0
        for pod in info.pods.values():
            key = match_key(pod)
            verdict = verdicts.get(key)
            if verdict is None:
                if len(verdicts) > _MAX_VERDICTS:
                    verdicts.clear()
                namespace, labels = pod.namespace, pod_labels(pod)
                verdict = verdicts[key] = all(t.matches(namespace, labels, None) for t in terms)
            number += verdict
        return number

    return columns.row_counts(identity, count)


def existing_anti_tables(
    columns: ColumnStore,
    namespace: str,
    labels: Mapping[str, str],
    namespace_labels: Mapping[str, str] | None,
) -> KeyTables:
    """``existing_anti_affinity_counts`` by code."""
    tables: KeyTables = {}
    tally = columns.row_tally("InterPodAffinity/requiredAnti", _required_anti_tally)
    for fact in list(tally.totals):
        assert isinstance(fact, TermFact)
        if fact.term.matches(namespace, labels, namespace_labels):
            _add_table(tables, columns, fact.term.topology_key, tally.column(fact))
    return tables


def incoming_tables(
    columns: ColumnStore, affinity_terms: Sequence[AffinityTerm], anti_terms: Sequence[AffinityTerm]
) -> tuple[KeyTables, KeyTables]:
    """``incoming_affinity_counts`` by code."""
    affinity: KeyTables = {}
    anti: KeyTables = {}
    if affinity_terms:
        matched = _matching(columns, affinity_terms)
        if matched.any():
            for term in affinity_terms:
                _add_table(affinity, columns, term.topology_key, matched)
    for term in anti_terms:
        matched = _matching(columns, (term,))
        if matched.any():
            _add_table(anti, columns, term.topology_key, matched)
    return affinity, anti


def score_tables(
    columns: ColumnStore,
    pod: PodInfo,
    preferred_affinity: Sequence[WeightedAffinityTerm],
    preferred_anti_affinity: Sequence[WeightedAffinityTerm],
    namespace_labels: Mapping[str, str] | None,
    hard_weight: int,
) -> tuple[KeyTables, dict[str, BoolArray]]:
    """``TopologyScorer`` over every node, by code: the summed weights per key, and per key which codes
    received any weight (the pairs the reference's map would hold)."""
    tables: KeyTables = {}
    touched: dict[str, BoolArray] = {}

    def add(key: str, per_row: IntArray, weight: int) -> None:
        hits = _add_table(tables, columns, key, per_row, weight)
        if hits is not None:
            known = touched.get(key)
            touched[key] = hits if known is None else known | hits

    for sign, weighted_terms in ((1, preferred_affinity), (-1, preferred_anti_affinity)):
        for weighted in weighted_terms:
            matched = _matching(columns, (weighted.term,))
            if matched.any():
                add(weighted.term.topology_key, matched, sign * weighted.weight)
    tally = columns.row_tally("InterPodAffinity/scoring", _scoring_tally)
    if tally.totals:
        me, my_labels = pod.namespace, pod_labels(pod)
        for fact in list(tally.totals):
            assert isinstance(fact, TermFact)
            kind = fact.identity[0]
            if kind == REQUIRED:
                if hard_weight <= 0:
                    continue
                weight = hard_weight
            else:
                weight = fact.weight if kind == PREFERRED else -fact.weight
            if fact.term.matches(me, my_labels, namespace_labels):
                add(fact.term.topology_key, tally.column(fact), weight)
    return tables, touched


def pair_counts(columns: ColumnStore, tables: KeyTables) -> dict[tuple[str, str], int]:
    """The reference's ``{(key, value): count}`` from per-key tables (non-zero entries)."""
    out: dict[tuple[str, str], int] = {}
    for key, table in tables.items():
        values = columns.label_values(key)
        for code in np.flatnonzero(table).tolist():
            out[(key, str(values[code]))] = int(table[code])
    return out


def topology_score(
    columns: ColumnStore, tables: KeyTables, touched: Mapping[str, BoolArray]
) -> dict[str, dict[str, int]]:
    """The reference's ``{key: {value: weight}}`` from per-key tables (every touched entry)."""
    out: dict[str, dict[str, int]] = {}
    for key, table in tables.items():
        values = columns.label_values(key)
        hits = np.flatnonzero(touched[key]).tolist()
        if hits:
            out[key] = {str(values[code]): int(table[code]) for code in hits}
    return out
