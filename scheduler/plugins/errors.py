"""Errors raised while building plugins from a profile's configuration."""

from __future__ import annotations


class PluginArgsError(ValueError):
    """A plugin's ``pluginConfig`` args are invalid; the message names the plugin and the field.

    Example: ``NodeResourcesFit: scoringStrategy.type: Unsupported value: "Foo": ...``.
    Startup stops on it, as kube-scheduler stops on an invalid KubeSchedulerConfiguration.
    """

    def __init__(self, plugin: str, field: str, message: str) -> None:
        self.plugin = plugin
        self.field = field
        super().__init__(f"{plugin}: {field}: {message}" if field else f"{plugin}: {message}")
