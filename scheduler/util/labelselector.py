"""``metav1.LabelSelector`` (matchLabels + matchExpressions) parsed once and matched against labels.

Mirrors ``LabelSelectorAsSelector`` in ``k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go``: a missing
(None) selector matches nothing, an empty one matches everything, ``matchLabels`` entries are ``In``
requirements with one value, and only In, NotIn, Exists and DoesNotExist are valid operators. Requirement
semantics are those of node selectors (``nodeselector.LabelRequirement``), shared rather than repeated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.util.nodeselector import LabelRequirement, SelectorError, parse_label_requirement
from scheduler.util.validation import label_value_error, qualified_name_error

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class LabelSelector:
    """Matches when every requirement does; ``matches_nothing`` for a missing selector."""

    __slots__ = ("matches_nothing", "requirements")

    def __init__(self, requirements: tuple[LabelRequirement, ...], *, matches_nothing: bool = False) -> None:
        self.requirements = requirements
        self.matches_nothing = matches_nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.matches_nothing:
            return False
        return all(requirement.matches(labels) for requirement in self.requirements)

    @property
    def empty(self) -> bool:
        """Matches everything (upstream's ``labels.Everything()``)."""
        return not self.matches_nothing and not self.requirements


def selector_identity(selector: LabelSelector) -> tuple[Any, ...]:
    """Equal for selectors that match the same labels by construction, so what they match can be
    computed once and shared (hashable, unlike the selector)."""
    return (
        selector.matches_nothing,
        tuple((r.key, int(r.op), tuple(sorted(r.values)), r.number) for r in selector.requirements),
    )


NOTHING = LabelSelector((), matches_nothing=True)
EVERYTHING = LabelSelector(())


def parse_label_selector(raw: Any, path: str = "labelSelector") -> LabelSelector:
    """A selector from its JSON form; raises SelectorError naming the field on anything invalid."""
    if raw is None:
        return NOTHING
    if not isinstance(raw, Mapping):
        raise SelectorError(f"{path}: Invalid value: must be an object")
    requirements: list[LabelRequirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError(f"{path}.matchLabels: Invalid value: must be a map of strings")
    for key, value in match_labels.items():
        if not isinstance(value, str):
            raise SelectorError(f"{path}.matchLabels[{key}]: Invalid value: must be a string")
        problem = qualified_name_error(str(key)) or label_value_error(value)
        if problem:
            raise SelectorError(f'{path}.matchLabels: Invalid value: "{key}={value}": {problem}')
        requirements.append(
            parse_label_requirement({"key": key, "operator": "In", "values": [value]}, f"{path}.matchLabels")
        )
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SelectorError(f"{path}.matchExpressions: Invalid value: must be a list")
    for i, expression in enumerate(expressions):
        item_path = f"{path}.matchExpressions[{i}]"
        operator = expression.get("operator") if isinstance(expression, Mapping) else None
        if isinstance(expression, Mapping) and operator not in SELECTOR_OPERATORS:
            choices = ", ".join(f'"{s}"' for s in SELECTOR_OPERATORS)
            raise SelectorError(
                f'{item_path}.operator: Unsupported value: "{operator}": supported values: {choices}'
            )
        requirements.append(parse_label_requirement(expression, item_path))
    return LabelSelector(tuple(requirements))
