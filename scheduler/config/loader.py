"""Read a KubeSchedulerConfiguration from YAML or JSON, default it and validate it."""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Mapping
from dataclasses import replace
from typing import Any

import yaml

from scheduler.config.decode import decode_config
from scheduler.config.errors import ConfigError, ErrorList
from scheduler.config.out_of_tree import collect_out_of_tree
from scheduler.config.types import API_VERSION, KIND, SchedulerConfig
from scheduler.config.validation import validate_config
from scheduler.framework.interface import PluginFactory


class _DuplicateKeyError(Exception):
    pass


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, which upstream's strict decoder also rejects."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise _DuplicateKeyError(f'duplicate field "{key}" (line {key_node.start_mark.line + 1})')
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(f'duplicate field "{key}"')
        out[key] = value
    return out


def _parse_text(text: str, source: str | None) -> Any:
    try:
        if text.lstrip().startswith("{"):
            return json.loads(text, object_pairs_hook=_json_pairs)
        docs = [d for d in yaml.load_all(text, Loader=_StrictLoader) if d is not None]
    except _DuplicateKeyError as exc:
        raise ConfigError([str(exc)], source) from None
    except json.JSONDecodeError as exc:
        raise ConfigError([f"invalid JSON: {exc}"], source) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"invalid YAML: {exc}"], source) from None
    if not docs:
        raise ConfigError(["the config is empty"], source)
    if len(docs) > 1:
        raise ConfigError([f"expected one {KIND} document, found {len(docs)}"], source)
    return docs[0]


def parse_config(
    source: str | bytes | Mapping[str, Any],
    *,
    registry: Mapping[str, PluginFactory] | None = None,
    source_name: str | None = None,
) -> SchedulerConfig:
    """Decode, default and validate a config given as YAML/JSON text or as an already-parsed dict.

    With ``registry`` (the in-tree plugins), out-of-tree plugins the config names are loaded, entry
    points are added, every enabled and configured plugin name is checked, and the result's
    ``registry`` is the full one. Raises ConfigError listing every problem found.
    """
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    raw = _parse_text(source, source_name) if isinstance(source, str) else source

    errs = ErrorList()
    cfg = decode_config(raw, errs)
    full_registry: dict[str, PluginFactory] = {}
    load_errors: dict[str, str] = {}
    if registry is not None:
        out_of_tree = collect_out_of_tree(cfg.plugin_names(), registry)
        for conflict in out_of_tree.conflicts:
            errs.other(conflict)
        full_registry = {**registry, **out_of_tree.factories}
        load_errors = out_of_tree.errors
    validate_config(cfg, errs, full_registry if registry is not None else None, load_errors)
    errs.raise_if_any(source_name)
    return replace(cfg, registry=full_registry)


def load_config(
    path: str | os.PathLike[str] | None, *, registry: Mapping[str, PluginFactory] | None = None
) -> SchedulerConfig:
    """The config in file ``path``; with no path, the defaults (one profile named py-scheduler)."""
    if path is None:
        return parse_config({"apiVersion": API_VERSION, "kind": KIND}, registry=registry)
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigError([f"cannot read config file: {exc.strerror or exc}"], name) from exc
    return parse_config(text, registry=registry, source_name=name)
