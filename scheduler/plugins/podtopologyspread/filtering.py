"""PreFilter/Filter for ``whenUnsatisfiable: DoNotSchedule`` (upstream ``podtopologyspread/filtering.go``).

PreFilter counts, once per cycle, the matching pods of every topology domain (every value of a
constraint's topology key on an eligible node), so Filter judges a node with a few dict lookups per
constraint:

    pods matching in the node's domain + (1 if the pod matches itself) - global minimum <= maxSkew

The global minimum is the smallest domain count, or 0 while there are fewer domains than minDomains.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.framework import BoolArray, IntArray, MaskedStatuses, NodeSubset, all_pass
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.helper.taints import pod_tolerations
from scheduler.plugins.nodeaffinity import pod_required_affinity
from scheduler.plugins.podtopologyspread.common import (
    NO_DOMAIN_MIN,
    SpreadConstraint,
    count_matching,
    labels_of,
    node_has_all_keys,
    selector_identity,
)

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"


@dataclass(slots=True)
class FilterState:
    """Upstream's preFilterState, reduced to what Filter reads."""

    constraints: tuple[SpreadConstraint, ...]
    # Per constraint: topology value -> matching pods in that domain (eligible domains only).
    counts: list[dict[str, int]]
    # Per constraint: the global minimum, minDomains already applied.
    min_counts: list[int]
    # Per constraint: 1 if the incoming pod matches the constraint's selector, else 0.
    self_match: list[int]

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
    pod: PodInfo, constraints: tuple[SpreadConstraint, ...], nodes: Sequence[NodeInfo]
) -> FilterState:
    counts = domain_counts(pod, constraints, nodes)
    pod_labels = labels_of(pod.pod)
    min_counts: list[int] = []
    for constraint, domains in zip(constraints, counts, strict=True):
        if len(domains) < constraint.min_domains:
            # Too few eligible domains: the missing ones count as empty.
            min_counts.append(0)
        else:
            min_counts.append(min(domains.values()) if domains else NO_DOMAIN_MIN)
    return FilterState(
        constraints=constraints,
        counts=counts,
        min_counts=min_counts,
        self_match=[int(c.selector.matches(pod_labels)) for c in constraints],
    )


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
    verdict = np.zeros(size, dtype=np.int8)
    for index, constraint in enumerate(state.constraints):
        key = constraint.topology_key
        missing: BoolArray = subset.label_codes(key) == 0
        matched = value_lookup(subset, key, state.counts[index])
        too_skewed = matched + (state.self_match[index] - state.min_counts[index]) > constraint.max_skew
        undecided = verdict == 0
        verdict[undecided & missing] = 1
        verdict[undecided & ~missing & too_skewed] = 2
    if not verdict.any():
        return all_pass(size)
    missing_label = Status(Code.UnschedulableAndUnresolvable, [ERR_REASON_NODE_LABEL_NOT_MATCH])
    skewed = Status(Code.Unschedulable, [ERR_REASON_CONSTRAINTS_NOT_MATCH])
    return MaskedStatuses(verdict == 0, lambda i: missing_label if verdict[i] == 1 else skewed)
