"""Node selectors and node affinity terms, parsed once and matched against node labels.

Mirrors ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go`` and the label
requirement semantics of ``k8s.io/apimachinery/pkg/labels/selector.go``:

* a term ANDs its ``matchExpressions`` and ``matchFields``; terms are ORed; empty terms are dropped,
  so a selector whose terms are all empty matches nothing;
* ``NotIn`` and ``DoesNotExist`` match a node without the label; ``Gt``/``Lt`` compare the label as a
  base-10 int64 and never match a label that is missing or not a number;
* ``matchFields`` supports only ``metadata.name`` meaningfully, with ``In``/``NotIn`` and one value.

Parse errors follow upstream's two modes. A pod's *required* terms are lazy
(``NewLazyErrorNodeSelector``): a term that cannot be parsed (a ``Gt`` value like ``"1_0"``, a bad
label value...) matches no node, the other terms still count, and the error is only reported when no
term matched (``NodeSelector.match``). The API server accepts such pods, so rejecting them whole would
strand pods kube-scheduler places. Everything else is strict (``NewNodeSelector``,
``NewPreferredSchedulingTerms``): any term error raises ``SelectorError`` naming the field.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.util.validation import label_value_error, parse_int64, qualified_name_error

OBJECT_NAME_FIELD = "metadata.name"
LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS = ("In", "NotIn")


class SelectorError(ValueError):
    """A node selector that cannot be parsed; the message starts with the field path."""


def _not_supported(path: str, value: Any, supported: Sequence[str]) -> SelectorError:
    choices = ", ".join(f'"{s}"' for s in supported)
    return SelectorError(f'{path}: Unsupported value: "{value}": supported values: {choices}')


class _Op(enum.IntEnum):
    IN = 0
    NOT_IN = 1
    EXISTS = 2
    DOES_NOT_EXIST = 3
    GT = 4
    LT = 5


_OPS = {name: _Op(i) for i, name in enumerate(LABEL_OPERATORS)}


class LabelRequirement:
    __slots__ = ("key", "number", "op", "values")

    def __init__(self, key: str, op: _Op, values: frozenset[str], number: int) -> None:
        self.key = key
        self.op = op
        self.values = values
        self.number = number

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        value = labels.get(self.key)
        if op is _Op.IN:
            return value is not None and value in self.values
        if op is _Op.NOT_IN:
            return value is None or value not in self.values
        if op is _Op.EXISTS:
            return value is not None
        if op is _Op.DOES_NOT_EXIST:
            return value is None
        if value is None:
            return False
        number = parse_int64(value)
        if number is None:
            return False
        return number > self.number if op is _Op.GT else number < self.number


def _values(raw: Any, path: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise SelectorError(f"{path}: Invalid value: must be a list of strings")
    return raw


def parse_label_requirement(raw: Any, path: str) -> LabelRequirement:
    if not isinstance(raw, Mapping):
        raise SelectorError(f"{path}: Invalid value: must be an object")
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise SelectorError(f"{path}.key: Required value")
    problem = qualified_name_error(key)
    if problem:
        raise SelectorError(f'{path}.key: Invalid value: "{key}": {problem}')
    operator = raw.get("operator")
    op = _OPS.get(operator) if isinstance(operator, str) else None
    if op is None:
        raise _not_supported(f"{path}.operator", operator, LABEL_OPERATORS)
    values = _values(raw.get("values"), f"{path}.values")
    number = 0
    if op in (_Op.IN, _Op.NOT_IN) and not values:
        raise SelectorError(
            f"{path}.values: Required value: for 'in', 'notin' operators, values set can't be empty"
        )
    if op in (_Op.EXISTS, _Op.DOES_NOT_EXIST) and values:
        raise SelectorError(
            f"{path}.values: Forbidden: values set must be empty for exists and does not exist"
        )
    if op in (_Op.GT, _Op.LT):
        if len(values) != 1:
            raise SelectorError(
                f"{path}.values: Required value: for 'Gt', 'Lt' operators, exactly one value is required"
            )
        parsed = parse_int64(values[0])
        if parsed is None:
            raise SelectorError(
                f"{path}.values[0]: Invalid value: \"{values[0]}\": for 'Gt', 'Lt' operators, "
                "the value must be an integer"
            )
        number = parsed
    for i, value in enumerate(values):
        problem = label_value_error(value)
        if problem:
            raise SelectorError(f'{path}.values[{i}]: Invalid value: "{value}": {problem}')
    return LabelRequirement(key, op, frozenset(values), number)


class FieldRequirement:
    __slots__ = ("equal", "key", "value")

    def __init__(self, key: str, equal: bool, value: str) -> None:
        self.key = key
        self.equal = equal
        self.value = value

    def matches(self, node_name: str) -> bool:
        # A field set holds only metadata.name; any other field reads as "".
        actual = node_name if self.key == OBJECT_NAME_FIELD else ""
        return (actual == self.value) is self.equal


def parse_field_requirement(raw: Any, path: str) -> FieldRequirement:
    if not isinstance(raw, Mapping):
        raise SelectorError(f"{path}: Invalid value: must be an object")
    operator = raw.get("operator")
    if operator not in FIELD_OPERATORS:
        raise _not_supported(f"{path}.operator", operator, FIELD_OPERATORS)
    values = _values(raw.get("values"), f"{path}.values")
    if len(values) != 1:
        raise SelectorError(f"{path}.values: Invalid value: {values}: must have one element")
    return FieldRequirement(str(raw.get("key") or ""), operator == "In", values[0])


class NodeSelectorTerm:
    """One term: all label requirements and all field requirements must match.

    A term with a parse ``error`` matches nothing (upstream's ``nodeSelectorTerm.parseErrs``).
    """

    __slots__ = ("error", "fields", "labels")

    def __init__(
        self,
        labels: tuple[LabelRequirement, ...] | None,
        fields: tuple[FieldRequirement, ...] | None,
        error: str | None = None,
    ) -> None:
        self.labels = labels
        self.fields = fields
        self.error = error

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.error is not None:
            return False
        if self.labels is not None:
            for requirement in self.labels:
                if not requirement.matches(labels):
                    return False
        # Upstream skips field requirements for a node without a name (it has no fields at all).
        if self.fields is not None and node_name:
            for field_requirement in self.fields:
                if not field_requirement.matches(node_name):
                    return False
        return True


def parse_term(raw: Any, path: str) -> NodeSelectorTerm | None:
    """A parsed term, or None for an empty one (upstream drops those)."""
    if not isinstance(raw, Mapping):
        raise SelectorError(f"{path}: Invalid value: must be an object")
    expressions = raw.get("matchExpressions") or []
    fields = raw.get("matchFields") or []
    if not isinstance(expressions, list) or not isinstance(fields, list):
        raise SelectorError(f"{path}: Invalid value: matchExpressions and matchFields must be lists")
    if not expressions and not fields:
        return None
    label_reqs = (
        tuple(parse_label_requirement(e, f"{path}.matchExpressions[{i}]") for i, e in enumerate(expressions))
        if expressions
        else None
    )
    field_reqs = (
        tuple(parse_field_requirement(f, f"{path}.matchFields[{i}]") for i, f in enumerate(fields))
        if fields
        else None
    )
    return NodeSelectorTerm(label_reqs, field_reqs)


def _parse_term_lazy(raw: Any, path: str) -> NodeSelectorTerm | None:
    """As ``parse_term``, but a parse error is kept on the term instead of raised."""
    try:
        return parse_term(raw, path)
    except SelectorError as err:
        return NodeSelectorTerm(None, None, str(err))


class NodeSelector:
    """Terms ORed together (``v1.NodeSelector``); terms with parse errors match nothing."""

    __slots__ = ("errors", "terms")

    def __init__(self, terms: tuple[NodeSelectorTerm, ...]) -> None:
        self.terms = terms
        self.errors = tuple(term.error for term in terms if term.error is not None)

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(term.matches(labels, node_name) for term in self.terms)

    def match(self, labels: Mapping[str, str], node_name: str) -> tuple[bool, str | None]:
        """Upstream's ``LazyErrorNodeSelector.Match``: the parse errors only when no term matched."""
        if self.matches(labels, node_name):
            return True, None
        return False, "; ".join(self.errors) if self.errors else None


def parse_node_selector(raw: Any, path: str, *, lazy: bool = False) -> NodeSelector:
    """The selector; ``lazy`` keeps term parse errors on the terms (see the module docstring)."""
    if not isinstance(raw, Mapping):
        raise SelectorError(f"{path}: Invalid value: must be an object")
    terms_raw = raw.get("nodeSelectorTerms") or []
    if not isinstance(terms_raw, list):
        raise SelectorError(f"{path}.nodeSelectorTerms: Invalid value: must be a list")
    parse = _parse_term_lazy if lazy else parse_term
    terms = []
    for i, term_raw in enumerate(terms_raw):
        term = parse(term_raw, f"{path}.nodeSelectorTerms[{i}]")
        if term is not None:
            terms.append(term)
    return NodeSelector(tuple(terms))


class PreferredTerms:
    """Weighted terms (``[]v1.PreferredSchedulingTerm``); a node scores the sum of matching weights."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple[tuple[NodeSelectorTerm, int], ...]) -> None:
        self.terms = terms

    def score(self, labels: Mapping[str, str], node_name: str) -> int:
        total = 0
        for term, weight in self.terms:
            if term.matches(labels, node_name):
                total += weight
        return total


def parse_preferred_terms(raw: Any, path: str) -> PreferredTerms:
    if not isinstance(raw, list):
        raise SelectorError(f"{path}: Invalid value: must be a list")
    terms: list[tuple[NodeSelectorTerm, int]] = []
    for i, item in enumerate(raw):
        item_path = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise SelectorError(f"{item_path}: Invalid value: must be an object")
        weight = item.get("weight") or 0
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise SelectorError(f"{item_path}.weight: Invalid value: {weight!r}: must be an integer")
        # Upstream skips zero-weight terms before parsing them: their errors are never reported.
        if weight == 0:
            continue
        term = parse_term(item.get("preference") or {}, f"{item_path}.preference")
        if term is not None:
            terms.append((term, weight))
    return PreferredTerms(tuple(terms))


class RequiredNodeAffinity:
    """``spec.nodeSelector`` AND ``requiredDuringSchedulingIgnoredDuringExecution``."""

    __slots__ = ("affinity", "node_selector")

    def __init__(
        self, node_selector: tuple[tuple[str, str], ...] | None, affinity: NodeSelector | None
    ) -> None:
        self.node_selector = node_selector
        self.affinity = affinity

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.node_selector is not None:
            for key, value in self.node_selector:
                if labels.get(key) != value:
                    return False
        if self.affinity is not None:
            return self.affinity.matches(labels, node_name)
        return True

    def match(self, labels: Mapping[str, str], node_name: str) -> tuple[bool, str | None]:
        """Upstream's ``RequiredNodeAffinity.Match``: (matched, lazy parse error if none matched)."""
        if self.node_selector is not None:
            for key, value in self.node_selector:
                if labels.get(key) != value:
                    return False, None
        if self.affinity is not None:
            return self.affinity.match(labels, node_name)
        return True, None


def required_node_affinity(spec: Mapping[str, Any]) -> RequiredNodeAffinity:
    """The pod's required node affinity, term errors lazy (upstream ``GetRequiredNodeAffinity``).

    Raises SelectorError (``spec.``-rooted path) only for shapes the API server never lets through.
    """
    selector_raw = spec.get("nodeSelector")
    node_selector: tuple[tuple[str, str], ...] | None = None
    if selector_raw:
        if not isinstance(selector_raw, Mapping):
            raise SelectorError("spec.nodeSelector: Invalid value: must be a map of strings")
        node_selector = tuple((str(k), str(v)) for k, v in selector_raw.items())
    required = _node_affinity(spec).get("requiredDuringSchedulingIgnoredDuringExecution")
    affinity = (
        parse_node_selector(
            required, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution", lazy=True
        )
        if required is not None
        else None
    )
    return RequiredNodeAffinity(node_selector, affinity)


def _node_affinity(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    affinity = spec.get("affinity") or {}
    return (affinity.get("nodeAffinity") or {}) if isinstance(affinity, Mapping) else {}


def required_terms_raw(spec: Mapping[str, Any]) -> list[Any] | None:
    """The raw required terms, or None when the pod has no required node affinity."""
    required = _node_affinity(spec).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    return terms if isinstance(terms, list) else []


def preferred_terms(spec: Mapping[str, Any]) -> PreferredTerms | None:
    """The pod's preferred terms, or None when it has none. Raises SelectorError."""
    raw = _node_affinity(spec).get("preferredDuringSchedulingIgnoredDuringExecution")
    if raw is None:
        return None
    return parse_preferred_terms(
        raw, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    )
