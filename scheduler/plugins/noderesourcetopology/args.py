"""``NodeResourceTopologyMatchArgs``: decoding, defaults and validation as scheduler-plugins v0.34.7
(``apis/config/v1/types.go``, ``apis/config/v1/defaults.go``, ``apis/config/validation/
validation_pluginargs.go``).

Defaults: ``scoringStrategy`` absent is ``LeastAllocated`` over cpu and memory, weight 1 each; a
strategy without ``resources`` gets those two; a weight of 0 becomes 1. Validation refuses only a
``scoringStrategy.type`` other than LeastAllocated, MostAllocated, BalancedAllocation and
LeastNUMANodes (a strategy given without ``type`` has type "" and is refused too). A weight below 1 is
not refused: scoring reads it as 1, as upstream's ``resourceToWeightMap.weight`` does. A resource
named twice keeps its last weight (upstream builds a map).

The cache: py-scheduler implements the passthrough mode, the default (``cacheResyncPeriodSeconds``
absent or not positive, ``discardReservedNodes`` false): each cycle reads the node's last published
NodeResourceTopology. The reserve-side caches (the overreserve cache enabled by a positive
``cacheResyncPeriodSeconds``, and ``discardReservedNodes``) are not implemented, and neither are the
``cache`` fields that tune them; a config setting any of them is refused at start-up naming the field,
never run as if they were not there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.resources import CPU, MEMORY
from scheduler.plugins import names
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.helper.args import ArgsReader

ARGS_KIND = "NodeResourceTopologyMatchArgs"
NAME = names.NODE_RESOURCE_TOPOLOGY_MATCH

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
BALANCED_ALLOCATION = "BalancedAllocation"
LEAST_NUMA_NODES = "LeastNUMANodes"
SCORING_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, BALANCED_ALLOCATION, LEAST_NUMA_NODES)
DEFAULT_RESOURCES: tuple[tuple[str, int], ...] = ((CPU, 1), (MEMORY, 1))

CACHE_FIELDS = ("foreignPodsDetect", "resyncMethod", "informerMode", "resyncScope")
NOT_IMPLEMENTED = (
    "not supported: py-scheduler implements the passthrough NodeResourceTopology cache only "
    "(cacheResyncPeriodSeconds unset or 0, discardReservedNodes false, no cache settings)"
)


@dataclass(frozen=True, slots=True)
class NodeResourceTopologyMatchArgs:
    scoring_type: str = LEAST_ALLOCATED
    # name -> weight, first-seen order (a repeated name keeps its last weight); weights as given.
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES

    def weight(self, resource: str) -> int:
        """Upstream's ``resourceToWeightMap.weight``: 1 for a resource not listed or weighted below 1."""
        for name, weight in self.resources:
            if name == resource:
                return weight if weight >= 1 else 1
        return 1


def parse_args(raw: Mapping[str, Any] | None) -> NodeResourceTopologyMatchArgs:
    """Decode, default and validate; raises PluginArgsError naming the field."""
    reader = ArgsReader(NAME)
    args = reader.top(
        raw, ARGS_KIND, ("scoringStrategy", "cacheResyncPeriodSeconds", "discardReservedNodes", "cache")
    )
    period = reader.integer(args.get("cacheResyncPeriodSeconds"), "cacheResyncPeriodSeconds")
    discard = args.get("discardReservedNodes")
    if discard is not None and not isinstance(discard, bool):
        raise reader.error("discardReservedNodes", f"Invalid value: {discard!r}: must be a boolean")
    cache = reader.mapping(args.get("cache"), "cache", fields=CACHE_FIELDS)
    for field in CACHE_FIELDS:
        if cache.get(field) is not None:
            reader.string(cache[field], f"cache.{field}")

    strategy_raw = args.get("scoringStrategy")
    if strategy_raw is None:
        scoring_type = LEAST_ALLOCATED
        specs: list[tuple[str, int]] = []
    else:
        strategy = reader.mapping(strategy_raw, "scoringStrategy", fields=("type", "resources"))
        scoring_type = reader.string(strategy.get("type", ""), "scoringStrategy.type")
        specs = []
        for i, item in enumerate(reader.items(strategy.get("resources"), "scoringStrategy.resources")):
            path = f"scoringStrategy.resources[{i}]"
            spec = reader.mapping(item, path, fields=("name", "weight"))
            name = reader.string(spec.get("name", ""), f"{path}.name")
            weight = reader.integer(spec.get("weight"), f"{path}.weight")
            specs.append((name, weight or 1))
    if scoring_type not in SCORING_STRATEGIES:
        raise reader.error(
            "scoringStrategy.type", f'Invalid value: "{scoring_type}": invalid ScoringStrategyType'
        )

    # Upstream's choices that py-scheduler does not implement: refused, naming the field.
    if discard:
        raise _not_implemented("discardReservedNodes")
    if period > 0:
        raise _not_implemented("cacheResyncPeriodSeconds")
    for field in CACHE_FIELDS:
        if cache.get(field) is not None:
            raise _not_implemented(f"cache.{field}")

    if not specs:
        return NodeResourceTopologyMatchArgs(scoring_type, DEFAULT_RESOURCES)
    weights: dict[str, int] = {}
    for name, weight in specs:
        weights[name] = weight
    return NodeResourceTopologyMatchArgs(scoring_type, tuple(weights.items()))


def _not_implemented(field: str) -> PluginArgsError:
    return PluginArgsError(NAME, field, NOT_IMPLEMENTED)
