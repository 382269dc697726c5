"""``scheduler.cycle.profiles``: each plugin of a profile is built once, with its real args, and the framework
uses the instance whose extension points the resolver read (upstream's NewFramework)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.cache import Snapshot
from scheduler.config import ConfigError, LoadedConfig, parse_config_with_plugins
from scheduler.cycle.profiles import FrameworkHandle, build_frameworks
from scheduler.plugins.registry import IN_TREE_REGISTRY
from tests.unit.cycle.oot_needs_args import NeedsThreshold

PLUGIN_PATH = "tests.unit.cycle.oot_needs_args:NeedsThreshold"


def _config(with_args: bool) -> LoadedConfig:
    profile: dict[str, Any] = {
        "schedulerName": "py-scheduler",
        "plugins": {"filter": {"enabled": [{"name": PLUGIN_PATH}]}},
    }
    if with_args:
        profile["pluginConfig"] = [{"name": PLUGIN_PATH, "args": {"threshold": 3}}]
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }
    return parse_config_with_plugins(doc, registry=IN_TREE_REGISTRY)


def _handle(name: str) -> FrameworkHandle:
    return FrameworkHandle(name, Snapshot, None, lambda: 0.0)


def test_plugin_whose_factory_requires_args_is_built_once_with_them() -> None:
    NeedsThreshold.built.clear()
    cfg, full_registry = _config(with_args=True)
    frameworks = build_frameworks(cfg, full_registry, _handle)
    (plugin,) = [p for p in frameworks["py-scheduler"].plugins.filter if p.name == "NeedsThreshold"]
    assert isinstance(plugin, NeedsThreshold)
    assert plugin.threshold == 3
    # Built exactly once, and never with empty args just to learn its extension points.
    assert NeedsThreshold.built == [{"threshold": 3}]


def test_every_plugin_is_built_once_per_profile() -> None:
    calls: list[str] = []
    cfg, full_registry = _config(with_args=True)
    registry = dict(full_registry)
    for name, factory in full_registry.items():

        def counting(args: Any, handle: Any, name: str = name, factory: Any = factory) -> Any:
            calls.append(name)
            return factory(args, handle)

        registry[name] = counting
    build_frameworks(cfg, registry, _handle)
    assert PLUGIN_PATH in calls
    assert len(calls) == len(set(calls))


def test_missing_required_args_is_a_config_error_naming_the_plugin() -> None:
    cfg, full_registry = _config(with_args=False)
    with pytest.raises(
        ConfigError, match=r"initializing plugin .*NeedsThreshold.*args.threshold is required"
    ):
        build_frameworks(cfg, full_registry, _handle)
