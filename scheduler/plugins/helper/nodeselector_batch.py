"""Node selectors matched against many nodes at once, through the snapshot's label-code columns.

Each label value of a key has an integer code (0: no such label), so ``In``/``NotIn``/``Exists``/
``DoesNotExist`` become integer comparisons over all nodes of a NodeSubset. ``Gt``/``Lt`` parse the
label as a number per node; a selector using them returns None and the caller takes the per-node
path. Same semantics as ``nodeselector.py``, which stays the reference.
"""

from __future__ import annotations

import numpy as np

from scheduler.framework import NAME_KEY, BoolArray, IntArray, NodeSubset
from scheduler.util.nodeselector import (
    OBJECT_NAME_FIELD,
    FieldRequirement,
    LabelRequirement,
    NodeSelector,
    NodeSelectorTerm,
    PreferredTerms,
    RequiredNodeAffinity,
    _Op,
)


def _equals_any(codes: IntArray, wanted: list[int]) -> BoolArray:
    if not wanted:
        return np.zeros(len(codes), dtype=np.bool_)
    matched: BoolArray = codes == wanted[0] if len(wanted) == 1 else np.isin(codes, wanted)
    return matched


def label_requirement_mask(requirement: LabelRequirement, nodes: NodeSubset) -> BoolArray | None:
    op = requirement.op
    if op in (_Op.GT, _Op.LT):
        return None
    codes = nodes.label_codes(requirement.key)
    present: BoolArray = codes != 0
    if op is _Op.EXISTS:
        return present
    if op is _Op.DOES_NOT_EXIST:
        return ~present
    wanted = [code for value in requirement.values if (code := nodes.label_code(requirement.key, value)) > 0]
    matched = _equals_any(codes, wanted)
    return matched if op is _Op.IN else ~matched


def field_requirement_mask(requirement: FieldRequirement, nodes: NodeSubset) -> BoolArray:
    if requirement.key != OBJECT_NAME_FIELD:
        # Any other field reads as "" (see FieldRequirement.matches).
        constant = (requirement.value == "") is requirement.equal
        return np.full(len(nodes), constant, dtype=np.bool_)
    code = nodes.label_code(NAME_KEY, requirement.value)
    same: BoolArray = nodes.label_codes(NAME_KEY) == code
    return same if requirement.equal else ~same


def term_mask(term: NodeSelectorTerm, nodes: NodeSubset) -> BoolArray | None:
    if term.error is not None:
        # A term that failed to parse matches nothing (see NodeSelectorTerm).
        return np.zeros(len(nodes), dtype=np.bool_)
    mask = np.ones(len(nodes), dtype=np.bool_)
    for requirement in term.labels or ():
        matched = label_requirement_mask(requirement, nodes)
        if matched is None:
            return None
        mask &= matched
    # Snapshot nodes always have a name, so field requirements always apply.
    for field_requirement in term.fields or ():
        mask &= field_requirement_mask(field_requirement, nodes)
    return mask


def selector_mask(selector: NodeSelector, nodes: NodeSubset) -> BoolArray | None:
    """Terms ORed; a selector without terms matches nothing."""
    mask = np.zeros(len(nodes), dtype=np.bool_)
    for term in selector.terms:
        matched = term_mask(term, nodes)
        if matched is None:
            return None
        mask |= matched
    return mask


def required_mask(required: RequiredNodeAffinity, nodes: NodeSubset) -> BoolArray | None:
    """``spec.nodeSelector`` AND the required node affinity, per node; None: use the per-node path."""
    mask = np.ones(len(nodes), dtype=np.bool_)
    for key, value in required.node_selector or ():
        mask &= nodes.label_codes(key) == nodes.label_code(key, value)
    if required.affinity is not None:
        matched = selector_mask(required.affinity, nodes)
        if matched is None:
            return None
        mask &= matched
    return mask


def preferred_scores(preferred: PreferredTerms, nodes: NodeSubset) -> IntArray | None:
    """The summed weights of the matching terms, per node; None: use the per-node path."""
    total: IntArray = np.zeros(len(nodes), dtype=np.int64)
    for term, weight in preferred.terms:
        matched = term_mask(term, nodes)
        if matched is None:
            return None
        total += matched * weight
    return total
