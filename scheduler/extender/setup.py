"""What configured extenders change outside the cycle: NodeResourcesFit's ignored resources and the
queue's hints (upstream ``buildExtenders`` and the ``ExtenderName`` enqueue extension)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from scheduler.config.extenders import ignored_resources
from scheduler.config.types import PluginConfig, SchedulerConfig
from scheduler.extender.runner import EXTENDER_NAME, Extenders
from scheduler.framework.runtime import ALL_EVENTS
from scheduling_queue.types import ClusterEventWithHint

NODE_RESOURCES_FIT = "NodeResourcesFit"


def with_ignored_resources(config: SchedulerConfig) -> SchedulerConfig:
    """Managed resources marked ``ignoredByScheduler`` become NodeResourcesFit's ``ignoredResources``
    in every profile, replacing any written there (upstream: "the extender ignored resources take
    precedence")."""
    names = ignored_resources(config.extenders)
    if not names:
        return config
    profiles = []
    for profile in config.profiles:
        args = dict(profile.args_for(NODE_RESOURCES_FIT) or {})
        args["ignoredResources"] = list(names)
        others = tuple(pc for pc in profile.plugin_config if pc.name != NODE_RESOURCES_FIT)
        profiles.append(replace(profile, plugin_config=(*others, PluginConfig(NODE_RESOURCES_FIT, args))))
    return replace(config, profiles=tuple(profiles))


def with_extender_hints(
    hints: Mapping[str, Sequence[ClusterEventWithHint]], extenders: Extenders
) -> dict[str, list[ClusterEventWithHint]]:
    """A pod some extender filtered out is retried on any cluster event (extenders have no hints)."""
    out = {name: list(events) for name, events in hints.items()}
    if extenders:
        out[EXTENDER_NAME] = [ALL_EVENTS]
    return out
