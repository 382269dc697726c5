"""The plugin API's surface as plain JSON, and the rules for changing it.

``python -m tests.unit.framework.plugin_api_surface --write`` regenerates
``plugin_api_surface.json`` beside this file, and refuses unless ``PLUGIN_API_VERSION`` was bumped
as the change requires and ``docs/plugin-api-changelog.md`` has an entry for the new version.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
import json
import re
import sys
import typing
from pathlib import Path
from typing import Any, is_typeddict

REPO = Path(__file__).resolve().parents[3]
SNAPSHOT = Path(__file__).with_name("plugin_api_surface.json")
CHANGELOG = REPO / "docs" / "plugin-api-changelog.md"

# The public modules: the package itself, and the typed views it documents as submodules.
MODULES = (
    "scheduler.framework",
    "scheduler.framework.objects_storage",
    "scheduler.framework.objects_resource",
    "scheduler.framework.objects_scheduling",
)


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _members(cls: type, *, protocol: bool = False) -> dict[str, str]:
    """Public methods, properties and attributes a class defines (or inherits from the framework)."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or klass.__module__ in ("typing", "builtins", "abc", "enum"):
            continue
        if klass.__module__.startswith("typing") or klass is typing.Protocol:
            continue
        for name in getattr(klass, "__annotations__", {}):
            if not name.startswith("_"):
                out[name] = "attribute"
        for name, raw in vars(klass).items():
            if name.startswith("_") and (name != "__init__" or protocol):
                continue
            if inspect.ismemberdescriptor(raw):
                out[name] = "attribute"
            elif isinstance(raw, property):
                out[name] = "property"
            elif isinstance(raw, staticmethod | classmethod):
                kind = "staticmethod" if isinstance(raw, staticmethod) else "classmethod"
                out[name] = f"{kind} {_signature(raw.__func__)}"
            elif inspect.iscoroutinefunction(raw):
                out[name] = f"async {_signature(raw)}"
            elif inspect.isfunction(raw):
                out[name] = _signature(raw)
    return dict(sorted(out.items()))


def describe(obj: Any) -> dict[str, Any]:
    if inspect.isclass(obj):
        if is_typeddict(obj):
            required = sorted(getattr(obj, "__required_keys__", ()))
            return {"kind": "typeddict", "fields": sorted(obj.__annotations__), "required": required}
        if issubclass(obj, enum.Enum):
            return {"kind": "enum", "members": [m.name for m in obj]}
        if getattr(obj, "_is_protocol", False):
            return {"kind": "protocol", "methods": _members(obj, protocol=True)}
        entry: dict[str, Any] = {"kind": "class", "members": _members(obj)}
        if dataclasses.is_dataclass(obj):
            entry["fields"] = [f.name for f in dataclasses.fields(obj)]
        return entry
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return {"kind": "function", "signature": _signature(obj)}
    if isinstance(obj, bool | int | float | str):
        return {"kind": "constant", "value": obj}
    if typing.get_origin(obj) is not None or isinstance(obj, typing.TypeVar):
        return {"kind": "alias"}
    if dataclasses.is_dataclass(obj):
        return {"kind": "constant", "type": type(obj).__name__, "value": repr(obj)}
    return {"kind": "constant", "type": type(obj).__name__}


def surface() -> dict[str, dict[str, Any]]:
    """Every public name of ``MODULES`` (their ``__all__``), described."""
    out: dict[str, dict[str, Any]] = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in sorted(module.__all__):
            out[f"{module_name}:{name}"] = describe(getattr(module, name))
    return out


@dataclasses.dataclass
class Diff:
    added: list[str]
    removed: list[str]
    changed: list[str]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def text(self) -> str:
        parts = [f"added {', '.join(self.added)}" if self.added else "",
                 f"removed {', '.join(self.removed)}" if self.removed else "",
                 f"changed {', '.join(self.changed)}" if self.changed else ""]  # fmt: skip
        return "; ".join(p for p in parts if p)


# The version constant names the surface; its value changes with every bump and is no change of its own.
VERSION_NAME = "scheduler.framework:PLUGIN_API_VERSION"


def diff(old: dict[str, Any], new: dict[str, Any]) -> Diff:
    changed = []
    for name in sorted(set(old) & set(new)):
        if name == VERSION_NAME:
            continue
        if old[name] != new[name]:
            a, b = old[name], new[name]
            # A protocol or class that only gained members is an addition, not a change.
            grown = (
                a.get("kind") == b.get("kind")
                and isinstance(a.get("members", a.get("methods")), dict)
                and all(
                    b.get("members", b.get("methods", {})).get(m) == s
                    for m, s in a.get("members", a.get("methods", {})).items()
                )
                and {k: v for k, v in a.items() if k not in ("members", "methods")}
                == {k: v for k, v in b.items() if k not in ("members", "methods")}
            )
            # A typed view that only gained optional fields is an addition too: its readers keep working.
            grown = grown or (
                a.get("kind") == b.get("kind") == "typeddict"
                and set(a["fields"]) <= set(b["fields"])
                and a["required"] == b["required"]
            )
            # So is a class whose constructor only gained parameters with defaults (and its dataclass fields
            # those parameters): every existing call still builds the same object.
            grown = grown or _only_gained_optional_parameters(a, b)
            # So is an enum that only gained members (a new kind of cluster event a plugin may register for).
            grown = grown or (
                a.get("kind") == b.get("kind") == "enum" and set(a["members"]) <= set(b["members"])
            )
            changed.append(f"{name} (+members)" if grown else name)
    return Diff(sorted(set(new) - set(old)), sorted(set(old) - set(new)), changed)


def _parameters(signature: str) -> ast.arguments:
    function = ast.parse(f"def f{signature}: pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    return function.args


def _described(arguments: ast.arguments) -> tuple[list[tuple[str, str]], dict[str, tuple[str, str]]]:
    """(positional parameters, keyword-only ones by name), each as (parameter, default; '' for none)."""
    padded = [None] * (len(arguments.args) - len(arguments.defaults)) + list(arguments.defaults)
    positional = [
        (ast.dump(arg), ast.dump(default) if default else "")
        for arg, default in zip(arguments.args, padded, strict=True)
    ]
    keyword = {
        arg.arg: (ast.dump(arg), ast.dump(default) if default else "")
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    }
    return positional, keyword


def _only_gained_optional_parameters(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """``b`` is class ``a`` whose ``__init__`` only gained parameters with defaults (a dataclass: as
    new trailing fields), everything else equal."""
    if a.get("kind") != "class" or b.get("kind") != "class":
        return False
    a_members, b_members = a["members"], b["members"]
    if "__init__" not in a_members or "__init__" not in b_members:
        return False
    a_fields, b_fields = a.get("fields", []), b.get("fields", [])
    if b_fields[: len(a_fields)] != a_fields:
        return False
    # The new fields are attributes; every other member is as it was.
    new_fields = dict.fromkeys(b_fields[len(a_fields) :], "attribute")
    if {**a_members, **new_fields, "__init__": ""} != {**b_members, "__init__": ""}:
        return False
    try:
        old, new = _parameters(a_members["__init__"]), _parameters(b_members["__init__"])
    except SyntaxError:
        return False
    if (old.vararg, old.kwarg, new.vararg, new.kwarg) != (None, None, None, None):
        return False
    old_positional, old_keyword = _described(old)
    new_positional, new_keyword = _described(new)
    gained = [
        *new_positional[len(old_positional) :],
        *(new_keyword[n] for n in new_keyword.keys() - old_keyword.keys()),
    ]
    return (
        new_positional[: len(old_positional)] == old_positional
        and all(new_keyword.get(name) == kept for name, kept in old_keyword.items())
        and all(default for _, default in gained)
        and len(b_fields) - len(a_fields) in (0, len(gained))
    )


SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def parse_version(text: str) -> tuple[int, int, int]:
    match = SEMVER.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a semantic version MAJOR.MINOR.PATCH")
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def bump_problem(old_version: str, new_version: str, change: Diff) -> str:
    """'' when going from ``old_version`` to ``new_version`` is the bump ``change`` requires."""
    old, new = parse_version(old_version), parse_version(new_version)
    if new <= old:
        return f"PLUGIN_API_VERSION {new_version} must be greater than {old_version}"
    breaking = bool(change.removed) or any(not c.endswith("(+members)") for c in change.changed)
    if breaking and old[0] >= 1 and new[0] == old[0]:
        return (
            f"removing or changing plugin API ({change.text()}) needs a major version: "
            f"{old[0] + 1}.0.0, not {new_version}"
        )
    if change and new[:2] == old[:2]:
        return f"adding plugin API ({change.text()}) needs at least a minor version, not {new_version}"
    return ""


def changelog_versions(text: str) -> list[str]:
    return re.findall(r"^## (\d+\.\d+\.\d+)\b", text, flags=re.MULTILINE)


def load_snapshot() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SNAPSHOT.read_text())
    return loaded


def write_snapshot(version: str) -> str:
    """Writes the snapshot for ``version``; '' on success, else why not."""
    current = surface()
    if SNAPSHOT.exists():
        recorded = load_snapshot()
        change = diff(recorded["surface"], current)
        if recorded["version"] != version or change:
            problem = bump_problem(recorded["version"], version, change)
            if problem:
                return problem
    if version not in changelog_versions(CHANGELOG.read_text()):
        return f"{CHANGELOG.relative_to(REPO)} has no '## {version}' entry"
    SNAPSHOT.write_text(json.dumps({"version": version, "surface": current}, indent=1, sort_keys=True) + "\n")
    return ""


if __name__ == "__main__":
    from scheduler.framework import PLUGIN_API_VERSION

    if sys.argv[1:] != ["--write"]:
        print("usage: python -m tests.unit.framework.plugin_api_surface --write", file=sys.stderr)
        sys.exit(2)
    error = write_snapshot(PLUGIN_API_VERSION)
    if error:
        print(f"not written: {error}", file=sys.stderr)
        sys.exit(1)
    print(f"wrote {SNAPSHOT.relative_to(REPO)} for plugin API {PLUGIN_API_VERSION}")
