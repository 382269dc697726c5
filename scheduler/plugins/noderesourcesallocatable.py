"""NodeResourcesAllocatable: score nodes by their allocatable resources, least or most (scheduler-plugins
v0.34.7 ``pkg/noderesources/allocatable.go`` and ``resource_allocation.go``; args and defaults from
``apis/config/v1/defaults.go``, validation from ``apis/config/validation/validation_pluginargs.go``).

Score: for each configured resource (``name``, ``weight``) the node's allocatable amount (cpu in
millicores, memory and ephemeral-storage in bytes, a scalar resource in units; any other name counts
0), negated in mode ``Least``; the node's score is the weighted sum divided by the sum of the weights,
with Go's int64 arithmetic (truncating division). NormalizeScore maps the lowest score to 0 and the
highest to 100 linearly (all 0 when they are equal). The pod's own requests do not enter the score:
upstream computes them and then ignores them, so the raw score is a fact of the node alone.

Args (``NodeResourcesAllocatableArgs``): ``mode`` (``Least``, the default, or ``Most``) and
``resources`` (default ``cpu`` weight 1<<20 and ``memory`` weight 1: one millicore weighs as one MiB);
every weight must be positive. Repeated names keep the last weight, as upstream's map does.

Vectorised: the raw score of a node is one node column (recomputed when the node changes), so scoring
a window of nodes is a gather; ``score`` is the per-node reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    ColumnSpec,
    CycleState,
    Handle,
    IntArray,
    NodeColumn,
    NodeInfo,
    NodeScore,
    PodInfo,
    Status,
    as_subset,
)
from scheduler.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.util.resource_names import is_scalar_resource_name

ARGS_KIND = "NodeResourcesAllocatableArgs"
LEAST = "Least"
MOST = "Most"
MODES = (LEAST, MOST)
DEFAULT_MODE = LEAST
DEFAULT_RESOURCES: tuple[tuple[str, int], ...] = ((CPU, 1 << 20), (MEMORY, 1))

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def wrap_int64(value: int) -> int:
    """Go's int64 overflow: wraps around."""
    return (value - _INT64_MIN) % 2**64 + _INT64_MIN


def go_div64(a: int, b: int) -> int:
    """Go's int64 ``a / b``: truncates toward zero."""
    q = abs(a) // abs(b)
    return wrap_int64(q if (a >= 0) == (b > 0) else -q)


@dataclass(frozen=True, slots=True)
class NodeResourcesAllocatableArgs:
    mode: str = DEFAULT_MODE
    # name -> weight, in first-seen order (a repeated name keeps its last weight).
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES


def parse_args(raw: Mapping[str, Any] | None) -> NodeResourcesAllocatableArgs:
    """``SetDefaults_NodeResourcesAllocatableArgs`` then ``ValidateNodeResourcesAllocatableArgs``."""
    reader = ArgsReader(names.NODE_RESOURCES_ALLOCATABLE)
    args = reader.top(raw, ARGS_KIND, ("resources", "mode"))
    mode = args.get("mode")
    mode = DEFAULT_MODE if mode is None or mode == "" else reader.string(mode, "mode")
    specs: list[tuple[str, int]] = []
    for i, item in enumerate(reader.items(args.get("resources"), "resources")):
        spec = reader.mapping(item, f"resources[{i}]", fields=("name", "weight"))
        name = reader.string(spec.get("name", ""), f"resources[{i}].name")
        weight = reader.integer(spec.get("weight"), f"resources[{i}].weight")
        specs.append((name, weight))
    errors: list[str] = []
    for i, (name, weight) in enumerate(specs):
        if weight <= 0:
            errors.append(
                f"resources[{i}].weight: Invalid value: {weight}: resource weight of {name} should be a "
                f"positive value, got :{weight}"
            )
    if mode not in MODES:
        errors.append(f'mode: Invalid value: "{mode}": invalid support ModeType')
    if errors:
        raise reader.error("", errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    if not specs:
        return NodeResourcesAllocatableArgs(mode, DEFAULT_RESOURCES)
    weights: dict[str, int] = {}
    for name, weight in specs:
        weights[name] = weight
    return NodeResourcesAllocatableArgs(mode, tuple(weights.items()))


def allocatable_amount(node: NodeInfo, resource: str) -> int:
    """The node's allocatable ``resource`` as upstream's ``calculateResourceAllocatableRequest`` reads
    it: cpu in millicores, memory and ephemeral-storage in bytes, a scalar resource in units, 0 for
    any other name."""
    allocatable = node.allocatable
    if resource == CPU:
        return allocatable.milli_cpu
    if resource == MEMORY:
        return allocatable.memory
    if resource == EPHEMERAL_STORAGE:
        return allocatable.ephemeral_storage
    if is_scalar_resource_name(resource):
        return allocatable.scalar.get(resource, 0)
    return 0


def raw_score(node: NodeInfo, args: NodeResourcesAllocatableArgs) -> int:
    """The node's score before NormalizeScore (upstream's ``resourceScorer``), in int64 arithmetic."""
    sign = -1 if args.mode == LEAST else 1
    node_score = weight_sum = 0
    for resource, weight in args.resources:
        node_score = wrap_int64(node_score + wrap_int64(sign * allocatable_amount(node, resource) * weight))
        weight_sum = wrap_int64(weight_sum + weight)
    return go_div64(node_score, weight_sum)


# One column object per configuration, so profiles configuring the same args share it.
_SCORE_COLUMNS: dict[NodeResourcesAllocatableArgs, NodeColumn] = {}


def _score_column(args: NodeResourcesAllocatableArgs) -> NodeColumn:
    column = _SCORE_COLUMNS.get(args)
    if column is None:
        key = args.mode + ":" + ",".join(f"{name}={weight}" for name, weight in args.resources)
        column = _SCORE_COLUMNS[args] = NodeColumn(
            f"{names.NODE_RESOURCES_ALLOCATABLE}/score/{key}",
            np.int64,
            lambda info: raw_score(info, args),
            # The score reads the node's allocatable amounts only.
            reads_pods=False,
        )
    return column


def normalize(scores: Sequence[int]) -> list[int]:
    """Upstream's NormalizeScore: (score - lowest) * 100 / (highest - lowest), int64; 0 if all equal."""
    if not scores:
        return []
    highest, lowest = max(scores), min(scores)
    old_range = wrap_int64(highest - lowest)
    new_range = MAX_NODE_SCORE - MIN_NODE_SCORE
    if old_range == 0:
        return [MIN_NODE_SCORE] * len(scores)
    return [
        wrap_int64(go_div64(wrap_int64(wrap_int64(s - lowest) * new_range), old_range) + MIN_NODE_SCORE)
        for s in scores
    ]


class NodeResourcesAllocatable:
    name = names.NODE_RESOURCES_ALLOCATABLE

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        self.args = parse_args(args)
        self._column = _score_column(self.args)

    def node_columns(self) -> Sequence[ColumnSpec]:
        return (self._column,)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        return raw_score(node, self.args), None

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[int] | IntArray:
        subset = as_subset(nodes)
        if subset is None:
            return [raw_score(node, self.args) for node in nodes]
        scores: IntArray = subset.gather(self._column).astype(np.int64, copy=True)
        return scores

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        for entry, value in zip(scores, normalize([s.score for s in scores]), strict=True):
            entry.score = value
        return None

    def normalize_score_array(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        if len(scores) == 0:
            return np.array(scores, dtype=np.int64, copy=True)
        values = scores.astype(np.int64, copy=False)
        highest, lowest = int(values.max()), int(values.min())
        old_range = wrap_int64(highest - lowest)
        if old_range == 0:
            return np.full(len(values), MIN_NODE_SCORE, dtype=np.int64)
        if old_range > 0 and (highest - lowest) * (MAX_NODE_SCORE - MIN_NODE_SCORE) <= _INT64_MAX:
            # No overflow possible: numpy's floor division equals Go's on non-negative operands.
            out: IntArray = (values - lowest) * (MAX_NODE_SCORE - MIN_NODE_SCORE) // old_range
            out += MIN_NODE_SCORE
            return out
        return np.array(normalize([int(v) for v in values]), dtype=np.int64)
