"""Read a KubeSchedulerConfiguration from YAML or JSON, default it and validate it."""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Mapping
from typing import Any, NamedTuple

import yaml

from scheduler.config.decode import decode_config
from scheduler.config.errors import ConfigError, ErrorList
from scheduler.config.out_of_tree import collect_out_of_tree
from scheduler.config.types import API_VERSION, KIND, SchedulerConfig
from scheduler.config.validation import validate_config
from scheduler.framework.interface import PluginFactory

# Bounds on what a config file may cost to read. Real configs are a few KiB, a dozen levels deep and
# rarely use anchors; an alias "bomb" (nested anchors, each used many times) is a few hundred bytes
# that expand to billions of nodes for anything that walks the result. kube-scheduler's YAML library
# refuses excessive aliasing the same way.
MAX_CONFIG_BYTES = 1 << 20
MAX_DEPTH = 100
MAX_ALIASES = 1000
MAX_EXPANDED_NODES = 200_000


class _DuplicateKeyError(Exception):
    pass


class _LimitError(Exception):
    pass


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, which upstream's strict decoder also rejects, and
    documents past the bounds above (before any of it is constructed)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _LimitError(f"more than {MAX_ALIASES} YAML aliases")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _LimitError(f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_document(self, node: yaml.Node) -> Any:
        _check_expanded_size(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise _DuplicateKeyError(f'duplicate field "{key}" (line {key_node.start_mark.line + 1})')
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _check_expanded_size(root: yaml.Node) -> None:
    """Refuse a document whose aliases expand past MAX_EXPANDED_NODES, or refer to themselves."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in in_progress:
            raise _LimitError("a YAML alias refers to the node that contains it")
        in_progress.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        in_progress.discard(key)
        if total > MAX_EXPANDED_NODES:
            raise _LimitError(f"YAML aliases expand to more than {MAX_EXPANDED_NODES} nodes")
        sizes[key] = total
        return total

    size(root)


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(f'duplicate field "{key}"')
        out[key] = value
    return out


def _check_depth(value: Any) -> None:
    """JSON has no aliases, but may nest as deep as the parser's recursion allows."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _LimitError(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def _parse_text(text: str, source: str | None) -> Any:
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError([f"the config is larger than {MAX_CONFIG_BYTES} bytes"], source)
    try:
        if text.lstrip().startswith("{"):
            parsed = json.loads(text, object_pairs_hook=_json_pairs)
            _check_depth(parsed)
            return parsed
        docs = [d for d in yaml.load_all(text, Loader=_StrictLoader) if d is not None]
    except (_DuplicateKeyError, _LimitError) as exc:
        raise ConfigError([str(exc)], source) from None
    except RecursionError:
        raise ConfigError([f"nested deeper than {MAX_DEPTH} levels"], source) from None
    except json.JSONDecodeError as exc:
        raise ConfigError([f"invalid JSON: {exc}"], source) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"invalid YAML: {' '.join(str(exc).split())}"], source) from None
    if not docs:
        raise ConfigError(["the config is empty"], source)
    if len(docs) > 1:
        raise ConfigError([f"expected one {KIND} document, found {len(docs)}"], source)
    return docs[0]


class LoadedConfig(NamedTuple):
    """A config and the plugin registry it was validated against: the in-tree registry given plus the
    out-of-tree plugins the config named (loaded by dotted path or entry point). The config is pure
    data; the registry is what builds its plugins."""

    config: SchedulerConfig
    registry: dict[str, PluginFactory]


def parse_config_with_plugins(
    source: str | bytes | Mapping[str, Any],
    *,
    registry: Mapping[str, PluginFactory] | None = None,
    source_name: str | None = None,
) -> LoadedConfig:
    """Decode, default and validate a config given as YAML/JSON text or as an already-parsed dict.

    With ``registry`` (the in-tree plugins), out-of-tree plugins the config names are loaded, entry
    points are added, every enabled and configured plugin name is checked, and the full registry is
    returned with the config (empty without ``registry``). Raises ConfigError listing every problem.
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
    return LoadedConfig(cfg, full_registry)


def parse_config(
    source: str | bytes | Mapping[str, Any],
    *,
    registry: Mapping[str, PluginFactory] | None = None,
    source_name: str | None = None,
) -> SchedulerConfig:
    """``parse_config_with_plugins`` without the registry."""
    return parse_config_with_plugins(source, registry=registry, source_name=source_name).config


def load_config_with_plugins(
    path: str | os.PathLike[str] | None, *, registry: Mapping[str, PluginFactory] | None = None
) -> LoadedConfig:
    """The config in file ``path`` and its plugin registry; with no path, the defaults (one profile
    named py-scheduler)."""
    if path is None:
        return parse_config_with_plugins({"apiVersion": API_VERSION, "kind": KIND}, registry=registry)
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as f:
            # One byte past the cap is enough to refuse it, without reading a huge file into memory.
            text = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError([f"cannot read config file: {exc.strerror or exc}"], name) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"the config is not UTF-8 text: {exc.reason}"], name) from None
    return parse_config_with_plugins(text, registry=registry, source_name=name)


def load_config(
    path: str | os.PathLike[str] | None, *, registry: Mapping[str, PluginFactory] | None = None
) -> SchedulerConfig:
    """``load_config_with_plugins`` without the registry."""
    return load_config_with_plugins(path, registry=registry).config
