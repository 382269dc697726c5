"""metav1.LabelSelector semantics (apimachinery's LabelSelectorAsSelector)."""

from __future__ import annotations

import pytest

from scheduler.util.labelselector import parse_label_selector
from scheduler.util.nodeselector import SelectorError


def test_missing_selector_matches_nothing_and_empty_matches_everything() -> None:
    assert not parse_label_selector(None).matches({})
    assert not parse_label_selector(None).matches({"a": "b"})
    assert parse_label_selector({}).matches({})
    assert parse_label_selector({}).empty


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({"matchLabels": {"app": "web"}}, {"app": "web"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
        ({"matchLabels": {"app": "web"}}, {}, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]}, {"app": "b"}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"app": ""}, True),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {"app": "x"}, False),
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            {"app": "web"},
            False,
        ),
    ],
)
def test_requirements_are_anded(selector: dict[str, object], labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(selector).matches(labels) is expected


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchLabels": {"bad key!": "x"}},
        {"matchLabels": {"a": "bad value!"}},
    ],
)
def test_invalid_selectors_are_refused_naming_the_field(selector: dict[str, object]) -> None:
    with pytest.raises(SelectorError, match=r"labelSelector\.match"):
        parse_label_selector(selector)
