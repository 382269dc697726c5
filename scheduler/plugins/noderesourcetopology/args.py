"""``NodeResourceTopologyMatchArgs``: decoding, defaults and validation as scheduler-plugins v0.34.7
(``apis/config/v1/types.go``, ``apis/config/v1/defaults.go``, ``apis/config/validation/
validation_pluginargs.go``).

Defaults: ``scoringStrategy`` absent is ``LeastAllocated`` over cpu and memory, weight 1 each; a
strategy without ``resources`` gets those two; a weight of 0 becomes 1. Validation refuses only a
``scoringStrategy.type`` other than LeastAllocated, MostAllocated, BalancedAllocation and
LeastNUMANodes (a strategy given without ``type`` has type "" and is refused too). A weight below 1 is
not refused: scoring reads it as 1, as upstream's ``resourceToWeightMap.weight`` does. A resource
named twice keeps its last weight (upstream builds a map).

The cache (``pkg/noderesourcetopology/pluginhelpers.go`` ``initNodeTopologyInformer``):
``discardReservedNodes: true`` takes precedence; else a positive ``cacheResyncPeriodSeconds`` enables
the overreserve cache, tuned by ``cache``; else the passthrough cache. ``cache`` defaults as upstream's
``SetDefaults_NodeResourceTopologyMatchArgs``: foreignPodsDetect All, resyncMethod Autodetect,
informerMode Dedicated; resyncScope All (upstream's fallback when unset). Upstream does not validate
the ``cache`` values (an unknown one acts as some other mode); py-scheduler refuses a value outside
each field's list, naming the field, in the apimachinery "Unsupported value" form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.resources import CPU, MEMORY
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader

ARGS_KIND = "NodeResourceTopologyMatchArgs"
NAME = names.NODE_RESOURCE_TOPOLOGY_MATCH

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
BALANCED_ALLOCATION = "BalancedAllocation"
LEAST_NUMA_NODES = "LeastNUMANodes"
SCORING_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, BALANCED_ALLOCATION, LEAST_NUMA_NODES)
DEFAULT_RESOURCES: tuple[tuple[str, int], ...] = ((CPU, 1), (MEMORY, 1))

# cache field -> (its values, its default).
CACHE_FIELD_VALUES: dict[str, tuple[tuple[str, ...], str]] = {
    "foreignPodsDetect": (("None", "All", "OnlyExclusiveResources"), "All"),
    "resyncMethod": (("Autodetect", "All", "OnlyExclusiveResources"), "Autodetect"),
    "informerMode": (("Shared", "Dedicated"), "Dedicated"),
    "resyncScope": (("All", "OnlyResources"), "All"),
}
CACHE_FIELDS = tuple(CACHE_FIELD_VALUES)

PASSTHROUGH = "Passthrough"
OVERRESERVE = "OverReserve"
DISCARD_RESERVED = "DiscardReserved"


@dataclass(frozen=True, slots=True)
class CacheSettings:
    """Which cache, and how the overreserve one behaves (upstream's ``NodeResourceTopologyCache``)."""

    kind: str = PASSTHROUGH
    resync_period_seconds: int = 0
    foreign_pods_detect: str = "All"
    resync_method: str = "Autodetect"
    informer_mode: str = "Dedicated"
    resync_scope: str = "All"


@dataclass(frozen=True, slots=True)
class NodeResourceTopologyMatchArgs:
    scoring_type: str = LEAST_ALLOCATED
    # name -> weight, first-seen order (a repeated name keeps its last weight); weights as given.
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    cache: CacheSettings = CacheSettings()

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
    cache_raw = reader.mapping(args.get("cache"), "cache", fields=CACHE_FIELDS)
    cache_values: dict[str, str] = {}
    for field, (allowed, default) in CACHE_FIELD_VALUES.items():
        value = default
        if cache_raw.get(field) is not None:
            value = reader.string(cache_raw[field], f"cache.{field}")
            if value not in allowed:
                supported = ", ".join(f'"{v}"' for v in allowed)
                raise reader.error(
                    f"cache.{field}", f'Unsupported value: "{value}": supported values: {supported}'
                )
        cache_values[field] = value
    kind = DISCARD_RESERVED if discard else OVERRESERVE if period > 0 else PASSTHROUGH
    cache = CacheSettings(
        kind,
        period,
        cache_values["foreignPodsDetect"],
        cache_values["resyncMethod"],
        cache_values["informerMode"],
        cache_values["resyncScope"],
    )

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

    if not specs:
        return NodeResourceTopologyMatchArgs(scoring_type, DEFAULT_RESOURCES, cache)
    weights: dict[str, int] = {}
    for name, weight in specs:
        weights[name] = weight
    return NodeResourceTopologyMatchArgs(scoring_type, tuple(weights.items()), cache)
