"""``PodTopologySpreadArgs``: decoding, defaulting (``SetDefaults_PodTopologySpreadArgs``) and validation
(``ValidatePodTopologySpreadArgs`` in ``pkg/scheduler/apis/config/validation/validation_pluginargs.go``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY
from scheduler.util.validation import qualified_name_error

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

_CONSTRAINT_FIELDS = (
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
)


@dataclass(frozen=True, slots=True)
class PodTopologySpreadArgs:
    defaulting_type: str
    default_constraints: tuple[Mapping[str, Any], ...]


def _go_value(value: Any) -> str:
    """A value as ``field.Error`` prints it: strings quoted, numbers bare."""
    return json.dumps(value) if isinstance(value, str) else str(value)


def parse_args(raw: Mapping[str, Any] | None) -> PodTopologySpreadArgs:
    """Defaulted, validated args; raises PluginArgsError listing every problem, as upstream aggregates."""
    reader = ArgsReader(names.POD_TOPOLOGY_SPREAD)
    top = reader.top(raw, "PodTopologySpreadArgs", ("defaultConstraints", "defaultingType"))
    defaulting = top.get("defaultingType") or SYSTEM_DEFAULTING
    defaulting = reader.string(defaulting, "defaultingType")
    constraints = [
        dict(reader.mapping(item, f"defaultConstraints[{i}]", fields=_CONSTRAINT_FIELDS))
        for i, item in enumerate(reader.items(top.get("defaultConstraints"), "defaultConstraints"))
    ]
    errors: list[str] = []
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errors.append(
            f"defaultingType: Unsupported value: {_go_value(defaulting)}: supported values: "
            f'"{SYSTEM_DEFAULTING}", "{LIST_DEFAULTING}"'
        )
    elif defaulting == SYSTEM_DEFAULTING and constraints:
        errors.append(
            f"defaultingType: Invalid value: {_go_value(defaulting)}: when .defaultConstraints are not empty"
        )
    seen: set[tuple[Any, Any]] = set()
    for i, constraint in enumerate(constraints):
        path = f"defaultConstraints[{i}]"
        errors += _constraint_errors(constraint, path)
        identity = (constraint.get("topologyKey"), constraint.get("whenUnsatisfiable"))
        if identity in seen:
            errors.append(f'{path}: Duplicate value: "{{{identity[0]}, {identity[1]}}}"')
        seen.add(identity)
    if errors:
        message = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise reader.error("", message)
    return PodTopologySpreadArgs(defaulting, tuple(constraints))


def _constraint_errors(constraint: Mapping[str, Any], path: str) -> list[str]:
    errors: list[str] = []
    max_skew = constraint.get("maxSkew", 0)
    if isinstance(max_skew, bool) or not isinstance(max_skew, int):
        errors.append(f"{path}.maxSkew: Invalid value: {max_skew!r}: must be an integer")
    elif max_skew <= 0:
        errors.append(f"{path}.maxSkew: Invalid value: {max_skew}: not in valid range (0, inf)")
    key = constraint.get("topologyKey") or ""
    if not isinstance(key, str):
        errors.append(f"{path}.topologyKey: Invalid value: {key!r}: must be a string")
    elif not key:
        errors.append(f"{path}.topologyKey: Required value: can not be empty")
    else:
        problem = qualified_name_error(key)
        if problem:
            errors.append(f"{path}.topologyKey: Invalid value: {_go_value(key)}: {problem}")
    action = constraint.get("whenUnsatisfiable") or ""
    if not action:
        errors.append(f"{path}.whenUnsatisfiable: Required value: can not be empty")
    elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        errors.append(
            f"{path}.whenUnsatisfiable: Unsupported value: {_go_value(action)}: supported values: "
            f'"{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"'
        )
    if constraint.get("labelSelector") is not None:
        errors.append(
            f"{path}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for "
            "each pod"
        )
    return errors
