"""``NodeResourcesFitArgs`` and ``NodeResourcesBalancedAllocationArgs``: defaults and validation.

Defaults follow ``pkg/scheduler/apis/config/v1/defaults.go`` and checks follow
``pkg/scheduler/apis/config/validation/validation_pluginargs.go`` (v1.36).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    ResourceSpec,
)
from scheduler.util.validation import qualified_name_error

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
MAX_RESOURCE_WEIGHT = 100


@dataclass(frozen=True, slots=True)
class FitArgs:
    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    strategy: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    # (utilization, score) points; only for RequestedToCapacityRatio.
    shape: tuple[tuple[int, int], ...] = ()


def _resources(reader: ArgsReader, raw: Any, path: str) -> tuple[ResourceSpec, ...]:
    items = reader.items(raw, path)
    if not items:
        return DEFAULT_RESOURCES
    out = []
    for i, item in enumerate(items):
        item_path = f"{path}[{i}]"
        spec = reader.mapping(item, item_path, fields=("name", "weight"))
        name = reader.string(spec.get("name"), f"{item_path}.name")
        if not name:
            raise reader.error(f"{item_path}.name", "Required value")
        # An unset or zero weight defaults to 1.
        weight = reader.integer(spec.get("weight"), f"{item_path}.weight") or 1
        out.append(ResourceSpec(name, weight))
    return tuple(out)


def _label_names(reader: ArgsReader, raw: Any, path: str, *, groups: bool) -> frozenset[str]:
    names = reader.strings(raw, path)
    for i, name in enumerate(names):
        if groups and "/" in name:
            raise reader.error(
                f"{path}[{i}]", f"Invalid value: \"{name}\": resource group name can't contain '/'"
            )
        problem = qualified_name_error(name)
        if problem:
            raise reader.error(f"{path}[{i}]", f'Invalid value: "{name}": {problem}')
    return frozenset(names)


def _shape(reader: ArgsReader, raw: Any, path: str) -> tuple[tuple[int, int], ...]:
    points = reader.items(raw, path)
    if not points:
        raise reader.error(path, "Required value: at least one point must be specified")
    shape = []
    for i, point in enumerate(points):
        item = reader.mapping(point, f"{path}[{i}]", fields=("utilization", "score"))
        shape.append(
            (
                reader.integer(item.get("utilization"), f"{path}[{i}].utilization"),
                reader.integer(item.get("score"), f"{path}[{i}].score"),
            )
        )
    for i in range(1, len(shape)):
        if shape[i - 1][0] >= shape[i][0]:
            raise reader.error(
                f"{path}[{i}].utilization",
                f"Invalid value: {shape[i][0]}: values must be sorted in increasing order",
            )
    for i, (utilization, score) in enumerate(shape):
        if not 0 <= utilization <= MAX_UTILIZATION:
            raise reader.error(
                f"{path}[{i}].utilization",
                f"Invalid value: {utilization}: not in valid range [0, {MAX_UTILIZATION}]",
            )
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise reader.error(
                f"{path}[{i}].score",
                f"Invalid value: {score}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
            )
    return tuple(shape)


def parse_fit_args(reader: ArgsReader, raw: Mapping[str, Any] | None) -> FitArgs:
    args = reader.top(
        raw, "NodeResourcesFitArgs", ("ignoredResources", "ignoredResourceGroups", "scoringStrategy")
    )
    ignored = _label_names(reader, args.get("ignoredResources"), "ignoredResources", groups=False)
    groups = _label_names(reader, args.get("ignoredResourceGroups"), "ignoredResourceGroups", groups=True)
    if args.get("scoringStrategy") is None:
        return FitArgs(ignored, groups)
    strategy = reader.mapping(
        args["scoringStrategy"], "scoringStrategy", fields=("type", "resources", "requestedToCapacityRatio")
    )
    kind = strategy.get("type")
    if kind not in SCORING_STRATEGY_TYPES:
        supported = ", ".join(f'"{t}"' for t in SCORING_STRATEGY_TYPES)
        raise reader.error(
            "scoringStrategy.type", f'Unsupported value: "{kind or ""}": supported values: {supported}'
        )
    resources = _resources(reader, strategy.get("resources"), "scoringStrategy.resources")
    for i, spec in enumerate(resources):
        if not 0 < spec.weight <= MAX_RESOURCE_WEIGHT:
            raise reader.error(
                f"scoringStrategy.resources[{i}].weight",
                f"Invalid value: {spec.weight}: resource weight of {spec.name} not in valid range "
                f"(0, {MAX_RESOURCE_WEIGHT}]",
            )
    ratio = strategy.get("requestedToCapacityRatio")
    shape: tuple[tuple[int, int], ...] = ()
    if kind == REQUESTED_TO_CAPACITY_RATIO:
        if ratio is None:
            raise reader.error(
                "scoringStrategy.requestedToCapacityRatio",
                "Required value: must be specified when type is RequestedToCapacityRatio",
            )
        ratio_args = reader.mapping(ratio, "scoringStrategy.requestedToCapacityRatio", fields=("shape",))
        shape = _shape(reader, ratio_args.get("shape"), "scoringStrategy.requestedToCapacityRatio.shape")
    elif ratio is not None:
        raise reader.error(
            "scoringStrategy.requestedToCapacityRatio",
            "Forbidden: must be nil when type is not RequestedToCapacityRatio",
        )
    return FitArgs(ignored, groups, kind, resources, shape)


def parse_balanced_allocation_args(
    reader: ArgsReader, raw: Mapping[str, Any] | None
) -> tuple[ResourceSpec, ...]:
    args = reader.top(raw, "NodeResourcesBalancedAllocationArgs", ("resources",))
    resources = _resources(reader, args.get("resources"), "resources")
    seen: set[str] = set()
    for i, spec in enumerate(resources):
        if spec.name in seen:
            raise reader.error(f"resources[{i}].name", f'Duplicate value: "{spec.name}"')
        seen.add(spec.name)
        if spec.weight != 1:
            raise reader.error(f"resources[{i}].weight", f"Invalid value: {spec.weight}: must be 1")
    return resources
