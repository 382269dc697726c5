"""Strict reading of a plugin's ``pluginConfig`` args, as written by the user.

kube-scheduler decodes its configuration strictly: an unknown field or a wrong type stops startup
with an error naming the field. These helpers do the same and raise PluginArgsError.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.plugins.errors import PluginArgsError

ARGS_API_VERSIONS = ("kubescheduler.config.k8s.io/v1",)


class ArgsReader:
    """Validates the shape of one plugin's args and builds errors that name the plugin and field."""

    __slots__ = ("plugin",)

    def __init__(self, plugin: str) -> None:
        self.plugin = plugin

    def error(self, path: str, message: str) -> PluginArgsError:
        return PluginArgsError(self.plugin, path, message)

    def top(
        self, raw: Mapping[str, Any] | None, kind: str | None, fields: Iterable[str]
    ) -> Mapping[str, Any]:
        """The args object without ``apiVersion``/``kind``; rejects unknown fields and other kinds.

        ``kind`` None means the plugin takes no args: any field is an error.
        """
        if raw is None:
            return {}
        args = self.mapping(raw, "", fields=(*fields, "apiVersion", "kind"))
        if "kind" in args and (kind is None or args["kind"] != kind):
            expected = f'"{kind}"' if kind else "none (this plugin takes no args)"
            raise self.error("kind", f'Invalid value: "{args["kind"]}": expected {expected}')
        if "apiVersion" in args and args["apiVersion"] not in ARGS_API_VERSIONS:
            raise self.error("apiVersion", f'Invalid value: "{args["apiVersion"]}"')
        return {k: v for k, v in args.items() if k not in ("apiVersion", "kind")}

    def mapping(self, value: Any, path: str, *, fields: Iterable[str] | None = None) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(path, f"Invalid value: {value!r}: must be an object")
        if fields is not None:
            allowed = set(fields)
            for key in value:
                if key not in allowed:
                    where = f"{path}.{key}" if path else str(key)
                    raise self.error(where, "unknown field")
        return value

    def items(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(path, f"Invalid value: {value!r}: must be a list")
        return value

    def string(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise self.error(path, f"Invalid value: {value!r}: must be a string")
        return value

    def integer(self, value: Any, path: str, default: int = 0) -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"Invalid value: {value!r}: must be an integer")
        return value

    def strings(self, value: Any, path: str) -> list[str]:
        return [self.string(item, f"{path}[{i}]") for i, item in enumerate(self.items(value, path))]
