"""PreFilter/Filter for ``whenUnsatisfiable: DoNotSchedule`` (upstream ``podtopologyspread/filtering.go``).

PreFilter counts, once per cycle, the matching pods of every topology domain (every value of a
constraint's topology key on an eligible node), so Filter judges a node with a few dict lookups per
constraint:

    pods matching in the node's domain + (1 if the pod matches itself) - global minimum <= maxSkew

The global minimum is the smallest domain count, or 0 while there are fewer domains than minDomains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from scheduler.framework import BoolArray, IntArray, MaskedStatuses, NodeSubset, all_pass
from scheduler.framework.columns import ColumnStore
from scheduler.framework.objects import labels_of
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.helper.nodeselector_batch import required_mask
from scheduler.plugins.helper.taints import find_untolerated_taint, pod_tolerations
from scheduler.plugins.nodeaffinity import pod_required_affinity
from scheduler.plugins.podtopologyspread.common import (
    NO_DOMAIN_MIN,
    SpreadConstraint,
    count_matching,
    node_has_all_keys,
)
from scheduler.util.labelselector import LabelSelector, selector_identity

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

_A = TypeVar("_A", bound=npt.NDArray[Any])


class FilterState:
    """Upstream's preFilterState, reduced to what Filter reads.

    Built from the snapshot's columns, the domain counts live in ``tables`` (per constraint, matching
    pods by label code of its topology key) and ``counts`` is derived from them when first read;
    reading ``counts`` drops the tables, so whoever changes the counts (PreFilterExtensions) is
    followed by Filter.
    """

    __slots__ = ("_counts", "columns", "constraints", "domains", "min_counts", "self_match", "tables")

    def __init__(
        self,
        constraints: tuple[SpreadConstraint, ...],
        counts: list[dict[str, int]] | None,
        min_counts: list[int],
        self_match: list[int],
        *,
        tables: list[IntArray] | None = None,
        domains: list[BoolArray] | None = None,
        columns: ColumnStore | None = None,
    ) -> None:
        self.constraints = constraints
        self._counts = counts
        # Per constraint: the global minimum, minDomains already applied.
        self.min_counts = min_counts
        # Per constraint: 1 if the incoming pod matches the constraint's selector, else 0.
        self.self_match = self_match
        self.tables = tables
        self.domains = domains
        self.columns = columns

    @property
    def counts(self) -> list[dict[str, int]]:
        """Per constraint: topology value -> matching pods in that domain (eligible domains only)."""
        if self._counts is None:
            assert self.tables is not None and self.domains is not None and self.columns is not None
            self._counts = [
                domain_dict(self.columns, c.topology_key, table, present)
                for c, table, present in zip(self.constraints, self.tables, self.domains, strict=True)
            ]
        self.tables = self.domains = None
        return self._counts

    def clone(self) -> FilterState:
        """Constraints and self-match are shared; counts change under AddPod/RemovePod."""
        return FilterState(
            self.constraints, [dict(c) for c in self.counts], list(self.min_counts), self.self_match
        )

    def update_with_pod(self, updated: PodInfo, preemptor: PodInfo, node: NodeInfo, delta: int) -> None:
        """Upstream's ``updateWithPod``: count ``updated`` in (1) or out (-1) of ``node``'s domains,
        for the constraints whose selector it matches and whose inclusion policies admit the node.

        Upstream keeps two "critical paths" as an approximation of the global minimum; the minimum is
        recomputed exactly here, which agrees with it whenever the critical paths are exact.
        """
        if updated.namespace != preemptor.namespace or not node_has_all_keys(node.labels, self.constraints):
            return
        affinity = pod_required_affinity(preemptor)
        tolerations = pod_tolerations(preemptor)
        labels = labels_of(updated.pod)
        for index, constraint in enumerate(self.constraints):
            if not constraint.selector.matches(labels):
                continue
            if not constraint.includes_node(node, affinity, tolerations):
                continue
            domains = self.counts[index]
            value = node.labels[constraint.topology_key]
            domains[value] = domains.get(value, 0) + delta
            if len(domains) >= constraint.min_domains:
                self.min_counts[index] = min(domains.values())
            else:
                self.min_counts[index] = 0


def domain_dict(columns: ColumnStore, key: str, table: IntArray, present: BoolArray) -> dict[str, int]:
    """``{value: table[code]}`` for the codes of ``key`` flagged in ``present`` (code 0, no label: "")."""
    values = columns.label_values(key)
    codes = np.flatnonzero(present).tolist()
    return {values[code] or "": number for code, number in zip(codes, table[codes].tolist(), strict=True)}


def matching_counts(columns: ColumnStore, selector: LabelSelector, namespace: str) -> IntArray:
    """Per snapshot row, ``count_matching`` of the node's pods: kept by the columns and recounted only
    for the nodes changed since the last cycle that asked."""
    if selector.empty or selector.matches_nothing:
        return np.zeros(len(columns), dtype=np.int64)

    def count(info: NodeInfo) -> int:
        return count_matching(info.pods.values(), selector, namespace) if info.pods else 0

    return columns.row_counts(("PodTopologySpread/matching", namespace, selector_identity(selector)), count)


def inclusion_mask(pod: PodInfo, constraint: SpreadConstraint, columns: ColumnStore) -> BoolArray | None:
    """Per snapshot row, ``constraint.includes_node`` (None: every node is included)."""
    mask: BoolArray | None = None
    affinity = pod_required_affinity(pod)
    if constraint.honor_node_affinity and (
        affinity.node_selector is not None or affinity.affinity is not None
    ):
        mask = required_mask(affinity, NodeSubset(columns, np.arange(len(columns), dtype=np.int64)))
        if mask is None:
            return _per_node_inclusion(pod, constraint, columns)
    if constraint.honor_node_taints:
        tolerations = pod_tolerations(pod)
        taints_ok: BoolArray = np.fromiter(
            (
                not info.taints or find_untolerated_taint(info.taints, tolerations) is None
                for info in columns.infos
            ),
            dtype=np.bool_,
            count=len(columns),
        )
        mask = taints_ok if mask is None else mask & taints_ok
    return mask


def _per_node_inclusion(pod: PodInfo, constraint: SpreadConstraint, columns: ColumnStore) -> BoolArray:
    affinity = pod_required_affinity(pod)
    tolerations = pod_tolerations(pod)
    result: BoolArray = np.fromiter(
        (constraint.includes_node(info, affinity, tolerations) for info in columns.infos),
        dtype=np.bool_,
        count=len(columns),
    )
    return result


class _Layout:
    """What PreFilter's counting reads of the nodes' labels alone, for one tuple of topology keys:
    which rows have every key (None: all of them) and, per key, those rows' codes and which codes are
    domains. Kept by the columns until a label code changes (``ColumnStore.label_memo``)."""

    __slots__ = ("codes", "eligible", "lengths", "present")

    def __init__(self, columns: ColumnStore, keys: tuple[str, ...]) -> None:
        eligible: BoolArray = np.ones(len(columns), dtype=np.bool_)
        for key in keys:
            eligible &= columns.label_codes(key) > 0
        self.eligible: BoolArray | None = None if eligible.all() else read_only(eligible)
        self.codes: dict[str, IntArray] = {}
        self.present: dict[str, BoolArray] = {}
        self.lengths: dict[str, int] = {}
        for key in keys:
            codes = columns.label_codes(key)
            length = len(columns.label_values(key))
            eligible_codes = codes.copy() if self.eligible is None else codes[self.eligible]
            self.codes[key] = read_only(eligible_codes)
            self.present[key] = read_only(np.bincount(eligible_codes, minlength=length) > 0)
            self.lengths[key] = length


def read_only(array: _A) -> _A:
    """``array``, flagged read-only: kept across cycles, it must not change under its holders."""
    array.flags.writeable = False
    return array


def _layout(columns: ColumnStore, constraints: Sequence[SpreadConstraint]) -> _Layout:
    keys = tuple(c.topology_key for c in constraints)
    return columns.label_memo(("PodTopologySpread/layout", keys), lambda: _Layout(columns, keys))


def domain_tables(
    pod: PodInfo, constraints: Sequence[SpreadConstraint], columns: ColumnStore
) -> tuple[list[IntArray], list[BoolArray]]:
    """``domain_counts`` over every node of the snapshot, by label code: per constraint, matching pods
    per code of its topology key, and which codes are domains (some eligible node has them)."""
    layout = _layout(columns, constraints)
    tables: list[IntArray] = []
    domains: list[BoolArray] = []
    by_selector: dict[tuple[Any, ...], IntArray] = {}
    for constraint in constraints:
        key = constraint.topology_key
        length = layout.lengths[key]
        included = (
            inclusion_mask(pod, constraint, columns)
            if constraint.honor_node_affinity or constraint.honor_node_taints
            else None
        )
        mask: BoolArray | None = layout.eligible
        if included is None:
            # The usual case: the domains and codes of the eligible rows are the layout's.
            domain_codes = layout.codes[key]
            domains.append(layout.present[key])
        else:
            mask = included if mask is None else mask & included
            domain_codes = columns.label_codes(key)[mask]
            domains.append(np.bincount(domain_codes, minlength=length) > 0)
        identity = selector_identity(constraint.selector)
        matched = by_selector.get(identity)
        if matched is None:
            matched = by_selector[identity] = matching_counts(columns, constraint.selector, pod.namespace)
        if matched.any():
            weights = matched if mask is None else matched[mask]
            sums = np.bincount(domain_codes, weights=weights, minlength=length)
            tables.append(sums.astype(np.int64))
        else:
            tables.append(np.zeros(length, dtype=np.int64))
    return tables, domains


def domain_counts(
    pod: PodInfo, constraints: Sequence[SpreadConstraint], nodes: Sequence[NodeInfo]
) -> list[dict[str, int]]:
    """Matching pods per domain and constraint over ``nodes`` (``calPreFilterState``'s counting).

    A node is a domain only if it has every topology key; each constraint then counts it only if its
    nodeAffinityPolicy/nodeTaintsPolicy let the node in.
    """
    counts: list[dict[str, int]] = [{} for _ in constraints]
    needs_policies = any(c.honor_node_affinity or c.honor_node_taints for c in constraints)
    affinity = pod_required_affinity(pod) if needs_policies else None
    tolerations = pod_tolerations(pod) if needs_policies else ()
    namespace = pod.namespace
    # Constraints often have equal selectors (a zone and a hostname constraint on the same app): count
    # each distinct selector once per node.
    identities = [selector_identity(c.selector) for c in constraints]
    for node in nodes:
        labels = node.labels
        if not node_has_all_keys(labels, constraints):
            continue
        by_selector: dict[tuple[Any, ...], int] = {}
        for index, constraint in enumerate(constraints):
            if affinity is not None and not constraint.includes_node(node, affinity, tolerations):
                continue
            key = identities[index]
            matched = by_selector.get(key)
            if matched is None:
                matched = by_selector[key] = (
                    count_matching(node.pods.values(), constraint.selector, namespace) if node.pods else 0
                )
            domain = labels[constraint.topology_key]
            domains = counts[index]
            domains[domain] = domains.get(domain, 0) + matched
    return counts


def build_filter_state(
    pod: PodInfo,
    constraints: tuple[SpreadConstraint, ...],
    nodes: Sequence[NodeInfo],
    columns: ColumnStore | None = None,
) -> FilterState:
    """``columns``, when given, are the snapshot's and ``nodes`` all its nodes: counted by code."""
    pod_labels = labels_of(pod.pod)
    self_match = [int(c.selector.matches(pod_labels)) for c in constraints]
    if columns is not None:
        tables, present_codes = domain_tables(pod, constraints, columns)
        minimums: list[int] = []
        for constraint, table, present in zip(constraints, tables, present_codes, strict=True):
            how_many = int(np.count_nonzero(present))
            if how_many < constraint.min_domains:
                minimums.append(0)
            else:
                minimums.append(int(table[present].min()) if how_many else NO_DOMAIN_MIN)
        return FilterState(
            constraints, None, minimums, self_match, tables=tables, domains=present_codes, columns=columns
        )
    counts = domain_counts(pod, constraints, nodes)
    min_counts: list[int] = []
    for constraint, domains in zip(constraints, counts, strict=True):
        if len(domains) < constraint.min_domains:
            # Too few eligible domains: the missing ones count as empty.
            min_counts.append(0)
        else:
            min_counts.append(min(domains.values()) if domains else NO_DOMAIN_MIN)
    return FilterState(constraints, counts, min_counts, self_match)


def filter_node(state: FilterState, node: NodeInfo) -> Status | None:
    """The verdict of the first constraint the node breaks, or None."""
    labels = node.labels
    for index, constraint in enumerate(state.constraints):
        value = labels.get(constraint.topology_key)
        if value is None:
            return Status.unschedulable(ERR_REASON_NODE_LABEL_NOT_MATCH, resolvable=False)
        skew = state.counts[index].get(value, 0) + state.self_match[index] - state.min_counts[index]
        if skew > constraint.max_skew:
            return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
    return None


def value_lookup(subset: NodeSubset, key: str, per_value: dict[str, int]) -> IntArray:
    """``per_value[value of key]`` for each node of ``subset`` (0 for values not in ``per_value`` and for
    nodes without the label), through the snapshot's label codes: no per-node Python."""
    codes = subset.label_codes(key)
    columns = subset.columns
    value_codes = {columns.label_code(key, value): number for value, number in per_value.items()}
    value_codes.pop(-1, None)
    size = max(int(codes.max()) if len(codes) else 0, max(value_codes, default=0)) + 1
    table = np.zeros(size, dtype=np.int64)
    for code, number in value_codes.items():
        table[code] = number
    result: IntArray = table[codes]
    return result


def filter_subset(state: FilterState, subset: NodeSubset) -> MaskedStatuses:
    """``filter_node`` for every node of ``subset`` at once: same verdicts, same order of checks."""
    size = len(subset)
    # Per node: 0 passes, 1 missing label, 2 skew too large; the first failing constraint decides.
    verdict: npt.NDArray[np.int8] | None = None
    tables = state.tables if state.columns is subset.columns else None
    for index, constraint in enumerate(state.constraints):
        key = constraint.topology_key
        codes = subset.label_codes(key)
        offset = state.self_match[index] - state.min_counts[index]
        if tables is not None:
            # Judged once per label code, then looked up per node.
            by_code = np.where(tables[index] + offset > constraint.max_skew, 2, 0).astype(np.int8)
            by_code[0] = 1
            judged = by_code[codes]
        else:
            matched = value_lookup(subset, key, state.counts[index])
            judged = np.where(codes == 0, 1, np.where(matched + offset > constraint.max_skew, 2, 0))
            judged = judged.astype(np.int8)
        verdict = judged if verdict is None else np.where(verdict == 0, judged, verdict)
    if verdict is None or not verdict.any():
        return all_pass(size)
    missing_label = Status(Code.UnschedulableAndUnresolvable, [ERR_REASON_NODE_LABEL_NOT_MATCH])
    skewed = Status(Code.Unschedulable, [ERR_REASON_CONSTRAINTS_NOT_MATCH])
    verdicts = verdict.tolist()  # read once per rejected node: list indexing is cheaper than numpy's
    return MaskedStatuses(verdict == 0, lambda i: missing_label if verdicts[i] == 1 else skewed)
