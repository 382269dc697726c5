"""Out-of-tree plugins by import path and by the ``py_scheduler.plugins`` entry-point group."""

from __future__ import annotations

import importlib.metadata
import textwrap
from collections.abc import Mapping
from typing import Any, cast

import pytest

from scheduler.config import (
    API_VERSION,
    ENTRY_POINT_GROUP,
    KIND,
    ConfigError,
    factory_for,
    load_out_of_tree,
    merge_registries,
    parse_config,
    parse_config_with_plugins,
    resolve_profile,
)
from scheduler.framework.handle import Handle
from scheduler.framework.interface import PluginFactory

HEADER = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"
HANDLE = cast(Handle, object())
HERE = __name__  # however pytest imported this module, import paths below resolve to it


class TinyPlugin:
    """The few lines an out-of-tree plugin takes."""

    name = "Tiny"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.args = args
        self.handle = handle

    def filter(self, state: Any, pod: Any, node: Any) -> None:
        return None


class ArgsOnly:
    name = "ArgsOnly"

    def __init__(self, args: Mapping[str, Any]) -> None:
        self.args = args


class NoArgs:
    name = "NoArgs"


class WithNew:
    name = "WithNew"

    def __init__(self, label: str) -> None:
        self.label = label

    @classmethod
    def new(cls, args: Mapping[str, Any], handle: Handle) -> WithNew:
        return cls(str(args.get("label", "none")))


class Nameless:
    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        pass


class Outer:
    class Inner:
        name = "Inner"


def tiny_factory(args: Mapping[str, Any], handle: Handle) -> TinyPlugin:
    return TinyPlugin(args, handle)


NOT_A_PLUGIN = 42


@pytest.fixture
def no_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [])


def set_entry_points(monkeypatch: pytest.MonkeyPatch, *pairs: tuple[str, str]) -> None:
    eps = [importlib.metadata.EntryPoint(name, value, ENTRY_POINT_GROUP) for name, value in pairs]

    def fake(**kw: Any) -> list[importlib.metadata.EntryPoint]:
        assert kw == {"group": ENTRY_POINT_GROUP}
        return eps

    monkeypatch.setattr(importlib.metadata, "entry_points", fake)


@pytest.mark.usefixtures("no_entry_points")
@pytest.mark.parametrize("path", [f"{HERE}:TinyPlugin", f"{HERE}.TinyPlugin"])
def test_load_by_import_path(path: str) -> None:
    factories = load_out_of_tree([path, "NodeName"], registry={"NodeName": cast(PluginFactory, None)})
    assert list(factories) == [path]
    plugin = factories[path]({"x": 1}, HANDLE)
    assert isinstance(plugin, TinyPlugin)
    assert (plugin.args, plugin.handle, plugin.name) == ({"x": 1}, HANDLE, "Tiny")


@pytest.mark.usefixtures("no_entry_points")
def test_constructor_shapes() -> None:
    args = {"label": "fast"}
    args_only: Any = factory_for(ArgsOnly, "a")(args, HANDLE)
    assert args_only.args == args
    assert isinstance(factory_for(NoArgs, "n")(args, HANDLE), NoArgs)
    with_new: Any = factory_for(WithNew, "w")(args, HANDLE)
    assert with_new.label == "fast"
    assert isinstance(factory_for(tiny_factory, "f")(args, HANDLE), TinyPlugin)
    inner = load_out_of_tree([f"{HERE}:Outer.Inner"])[f"{HERE}:Outer.Inner"]
    assert inner.__class__.__name__ == "ClassFactory"


@pytest.mark.usefixtures("no_entry_points")
@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_such_pkg_xyz.mod:Plugin", "cannot import"),
        (f"{HERE}:Missing", f'module "{HERE}" has no attribute "Missing"'),
        (f"{HERE}:Nameless", "must declare a class attribute `name`"),
        (f"{HERE}:NOT_A_PLUGIN", "is a int, not a plugin class or factory"),
        ("pkg.:X", "not an import path"),
    ],
)
def test_import_failures_name_the_plugin(path: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_out_of_tree([path])
    assert info.value.errors[0].startswith(f'plugin "{path}": ')
    assert message in info.value.errors[0]


@pytest.mark.usefixtures("no_entry_points")
def test_names_without_dot_or_colon_are_not_imported() -> None:
    assert load_out_of_tree(["SomePlugin"]) == {}


def test_entry_points_are_registered_under_their_name(monkeypatch: pytest.MonkeyPatch) -> None:
    set_entry_points(monkeypatch, ("tiny", f"{HERE}:TinyPlugin"), ("argsonly", f"{HERE}:ArgsOnly"))
    factories = load_out_of_tree([])
    assert sorted(factories) == ["argsonly", "tiny"]
    assert isinstance(factories["tiny"]({}, HANDLE), TinyPlugin)


def test_broken_entry_point_only_fails_when_used(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    set_entry_points(monkeypatch, ("tiny", f"{HERE}:TinyPlugin"), ("broken", "no_such_pkg_xyz:Plugin"))
    assert list(load_out_of_tree(["tiny"])) == ["tiny"]
    assert 'entry point "broken"' in caplog.text
    with pytest.raises(ConfigError) as info:
        load_out_of_tree(["broken"])
    assert info.value.errors[0].startswith('plugin "broken": entry point "broken" (no_such_pkg_xyz:Plugin)')


def test_entry_point_may_not_shadow_a_registered_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    set_entry_points(monkeypatch, ("NodeName", f"{HERE}:TinyPlugin"))
    with pytest.raises(ConfigError, match='a plugin named "NodeName" already exists'):
        load_out_of_tree([], registry={"NodeName": tiny_factory})


def test_entry_point_defined_twice_differently(monkeypatch: pytest.MonkeyPatch) -> None:
    set_entry_points(
        monkeypatch,
        ("tiny", f"{HERE}:TinyPlugin"),
        ("tiny", f"{HERE}:TinyPlugin"),  # same distribution seen twice: fine
        ("x", f"{HERE}:TinyPlugin"),
        ("x", f"{HERE}:ArgsOnly"),
    )
    with pytest.raises(ConfigError, match='entry point "x" is defined twice'):
        load_out_of_tree(["x"])
    assert list(load_out_of_tree(["tiny"])) == ["tiny"]


def test_merge_registries_rejects_duplicates() -> None:
    merged = merge_registries({"a": tiny_factory}, {"b": tiny_factory})
    assert sorted(merged) == ["a", "b"]
    with pytest.raises(ConfigError, match='a plugin named "a" already exists'):
        merge_registries({"a": tiny_factory}, {"a": factory_for(NoArgs, "n")})


def test_config_with_out_of_tree_plugins_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    set_entry_points(monkeypatch, ("with-new", f"{HERE}:WithNew"))
    path = f"{HERE}:TinyPlugin"
    in_tree: dict[str, PluginFactory] = {"PrioritySort": tiny_factory, "DefaultBinder": tiny_factory}
    cfg, registry = parse_config_with_plugins(
        HEADER
        + textwrap.dedent(
            f"""
            profiles:
            - plugins:
                multiPoint: {{enabled: [{{name: "{path}"}}]}}
                permit: {{enabled: [{{name: with-new}}]}}
              pluginConfig:
              - {{name: "{path}", args: {{threshold: 3}}}}
            """
        ),
        registry=in_tree,
    )
    assert set(registry) == {"PrioritySort", "DefaultBinder", path, "with-new"}
    points = {
        "PrioritySort": {"queueSort"},
        "DefaultBinder": {"bind"},
        path: {"filter"},
        "with-new": {"permit"},
    }
    rp = resolve_profile(
        cfg.profiles[0],
        registry,
        [("PrioritySort", None), ("DefaultBinder", None)],
        lambda name: points[name],
    )
    assert rp.plugins["filter"] == [path]
    assert rp.plugins["permit"] == ["with-new"]
    assert rp.plugin_args[path] == {"threshold": 3}
    plugin: Any = registry[path](rp.plugin_args[path], HANDLE)
    assert plugin.args == {"threshold": 3}


def test_config_reports_import_errors_at_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    set_entry_points(monkeypatch)
    with pytest.raises(ConfigError) as info:
        parse_config(
            HEADER + "profiles:\n- plugins: {filter: {enabled: [{name: 'no_such_pkg_xyz.mod:Plugin'}]}}\n",
            registry={},
        )
    assert info.value.errors[0].startswith(
        "profiles[0].plugins.filter.enabled[0].name: "
        'Invalid value: "no_such_pkg_xyz.mod:Plugin": cannot import'
    )
