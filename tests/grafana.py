"""The Grafana dashboard of deploy/components/grafana-dashboard, and the metric selectors its PromQL uses.

A small PromQL reader, enough for dashboard queries: it finds every series selector (``name{matchers}``)
and the metric of each ``label_values(metric, label)`` variable query. Functions, aggregation keywords,
grouping labels (``by (le)``), ranges (``[5m]``), numbers, strings and ``$variables`` are not metrics.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DASHBOARD = REPO / "deploy" / "components" / "grafana-dashboard" / "py-scheduler.json"

# Words that are PromQL syntax, not metric names (when not followed by "(" they still are not metrics).
KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
)
_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
# A number or a duration (offset 5m, 1h30m).
_NUMBER = re.compile(r"\.?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?:(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*)?")
_LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_AGGREGATION_CLAUSE = re.compile(r"(by|without)\s*\(")
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')


@dataclass(frozen=True)
class Selector:
    metric: str
    # (label, op, value) for each matcher inside {...}
    matchers: tuple[tuple[str, str, str], ...] = ()


def load_dashboard(path: Path = DASHBOARD) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])  # collapsed rows hold their panels


def expressions(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL text in the dashboard: panel targets and query variables."""
    exprs = [t["expr"] for p in panels(dashboard) for t in p.get("targets", [])]
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable["query"]
            exprs.append(query["query"] if isinstance(query, dict) else query)
    return exprs


def selectors(expr: str) -> list[Selector]:
    """The series selectors of one PromQL expression (or ``label_values(...)`` variable query)."""
    found: list[Selector] = []
    i = 0
    grouping = False  # inside by (...) / without (...): label names, not metrics
    while i < len(expr):
        char = expr[i]
        if char in {'"', "'"}:
            end = i + 1
            while end < len(expr) and expr[end] != char:
                end += 2 if expr[end] == "\\" else 1
            i = end + 1
        elif char == "$":  # Grafana variable: $x, ${x}, $__rate_interval
            match = re.compile(r"\$(\{[^}]*\}|[a-zA-Z0-9_]+)").match(expr, i)
            i = match.end() if match else i + 1
        elif char == "[":  # range or subquery duration
            i = expr.index("]", i) + 1
        elif char == "{":  # matchers with no metric name before them
            end = _closing_brace(expr, i)
            found.append(Selector("", _matchers(expr[i + 1 : end])))
            i = end + 1
        elif char == ")":
            grouping = False
            i += 1
        elif char.isdigit() or (char == "." and i + 1 < len(expr) and expr[i + 1].isdigit()):
            match = _NUMBER.match(expr, i)
            i = match.end() if match else i + 1
        elif _IDENT.match(expr, i):
            match = _IDENT.match(expr, i)
            assert match is not None
            word, i = match.group(), match.end()
            rest = expr[i:].lstrip()
            if word in _LABEL_LISTS and rest.startswith("("):
                grouping = True
            elif word == "label_values" and rest.startswith("("):
                inner = rest[1 : rest.index(")")]
                parts = [part.strip() for part in inner.split(",")]
                if len(parts) == 2:  # label_values(metric, label); one argument is only a label
                    found.extend(selectors(parts[0]))
                i = len(expr) - len(rest) + rest.index(")") + 1
            elif grouping or word in KEYWORDS or rest.startswith("(") or _AGGREGATION_CLAUSE.match(rest):
                pass  # a grouping label, a keyword, a function or an aggregation (sum by (x) (...))
            elif rest.startswith("{"):
                start = len(expr) - len(rest)
                end = _closing_brace(expr, start)
                found.append(Selector(word, _matchers(expr[start + 1 : end])))
                i = end + 1
            else:
                found.append(Selector(word))
        else:
            i += 1
    return found


def _closing_brace(expr: str, start: int) -> int:
    """Index of the ``}`` closing the ``{`` at ``start``, skipping quoted values (which may hold ``}``)."""
    i = start + 1
    while i < len(expr):
        if expr[i] == '"':
            i += 1
            while expr[i] != '"':
                i += 2 if expr[i] == "\\" else 1
        elif expr[i] == "}":
            return i
        i += 1
    raise ValueError(f"unclosed {{ in {expr!r}")


def _matchers(text: str) -> tuple[tuple[str, str, str], ...]:
    matchers: list[tuple[str, str, str]] = []
    pos = 0
    while pos < len(text) and text[pos:].strip():
        match = _MATCHER.match(text, pos)
        if match is None:
            raise ValueError(f"cannot read matchers {text!r} at {pos}")
        matchers.append((match.group(1), match.group(2), match.group(3)))
        pos = match.end()
    return tuple(matchers)


def dashboard_selectors(dashboard: dict[str, Any]) -> list[Selector]:
    return [selector for expr in expressions(dashboard) for selector in selectors(expr)]
