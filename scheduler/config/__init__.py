"""``kubescheduler.config.k8s.io/v1`` KubeSchedulerConfiguration: load, default, validate, resolve.

Typical start-up::

    cfg, registry = load_config_with_plugins(path, registry=IN_TREE_REGISTRY)  # + out-of-tree plugins
    profiles = resolve_profiles(cfg, DEFAULT_MULTIPOINT, implements, registry)
"""

from scheduler.config.duration import format_duration, parse_duration
from scheduler.config.encode import config_to_dict, dump_config
from scheduler.config.errors import ConfigError
from scheduler.config.loader import (
    LoadedConfig,
    load_config,
    load_config_with_plugins,
    parse_config,
    parse_config_with_plugins,
)
from scheduler.config.out_of_tree import (
    ENTRY_POINT_GROUP,
    factory_for,
    load_out_of_tree,
    merge_registries,
)
from scheduler.config.resolve import (
    DEFAULT_SCORE_WEIGHT,
    ResolvedProfile,
    merge_plugin_set,
    resolve_profile,
    resolve_profiles,
)
from scheduler.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    KIND,
    ClientConnectionConfig,
    LeaderElectionConfig,
    PluginConfig,
    PluginRef,
    Plugins,
    PluginSet,
    SchedulerConfig,
    SchedulerProfile,
)
from scheduler.config.validation import MAX_SCORE_WEIGHT, MIN_SCORE_WEIGHT

__all__ = [
    "API_VERSION",
    "DEFAULT_SCHEDULER_NAME",
    "DEFAULT_SCORE_WEIGHT",
    "ENTRY_POINT_GROUP",
    "EXTENSION_POINTS",
    "KIND",
    "MAX_SCORE_WEIGHT",
    "MIN_SCORE_WEIGHT",
    "ClientConnectionConfig",
    "ConfigError",
    "LeaderElectionConfig",
    "LoadedConfig",
    "PluginConfig",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "ResolvedProfile",
    "SchedulerConfig",
    "SchedulerProfile",
    "config_to_dict",
    "dump_config",
    "factory_for",
    "format_duration",
    "load_config",
    "load_config_with_plugins",
    "load_out_of_tree",
    "merge_plugin_set",
    "merge_registries",
    "parse_config",
    "parse_config_with_plugins",
    "parse_duration",
    "resolve_profile",
    "resolve_profiles",
]
