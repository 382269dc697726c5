"""The plugin API is declared and versioned: its surface may change only with a new
``PLUGIN_API_VERSION`` and a changelog entry (docs/plugin-api-changelog.md)."""

from __future__ import annotations

import importlib

import pytest

from scheduler.framework import PLUGIN_API_VERSION
from tests.unit.framework import plugin_api_surface as api

REGENERATE = "python -m tests.unit.framework.plugin_api_surface --write"


def test_surface_matches_the_snapshot_of_this_version() -> None:
    recorded = api.load_snapshot()
    change = api.diff(recorded["surface"], api.surface())
    if change:
        if recorded["version"] == PLUGIN_API_VERSION:
            pytest.fail(
                f"the plugin API changed without a new version ({change.text()}): bump PLUGIN_API_VERSION "
                f"in scheduler/framework/api_version.py, add its entry to docs/plugin-api-changelog.md, "
                f"then run {REGENERATE}"
            )
        pytest.fail(f"PLUGIN_API_VERSION is {PLUGIN_API_VERSION} but the snapshot is not: run {REGENERATE}")
    assert recorded["version"] == PLUGIN_API_VERSION, f"version bumped without a snapshot: run {REGENERATE}"


def test_the_current_version_has_a_changelog_entry() -> None:
    api.parse_version(PLUGIN_API_VERSION)
    assert PLUGIN_API_VERSION in api.changelog_versions(api.CHANGELOG.read_text())


@pytest.mark.parametrize("module_name", api.MODULES)
def test_every_exported_name_exists(module_name: str) -> None:
    # ``from scheduler.framework import *`` must work: every name of __all__ resolves.
    module = importlib.import_module(module_name)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


def test_the_surface_has_what_plugin_authors_need() -> None:
    surface = api.surface()
    score = surface["scheduler.framework:ScorePlugin"]
    assert score["kind"] == "protocol"
    signature = score["methods"]["score"]
    assert signature.startswith("(self, state: 'CycleState', pod: 'PodInfo', node: 'NodeInfo')")
    assert surface["scheduler.framework:ExtenderPostFilterPlugin"]["methods"][
        "post_filter_with_extenders"
    ].startswith("async ")
    needed = "Status Code CycleState PodInfo NodeInfo Handle ClusterEventWithHint QueueingHint NodeColumn"
    for name in (*needed.split(), "InternedColumn", "NodeSubset", "Pod", "Node", "SignPlugin"):
        assert f"scheduler.framework:{name}" in surface, name
    assert surface["scheduler.framework:Code"]["members"][0] == "Success"


def _fake_change(old: dict[str, object], new: dict[str, object]) -> api.Diff:
    return api.diff(old, new)


PROTO = {"kind": "protocol", "methods": {"score": "(self, state, pod, node)"}}


def _column(extra: str) -> dict[str, object]:
    """A dataclass of one field ``name``, and one more when ``extra`` declares a parameter."""
    members = {"__init__": f"(self, name: 'str'{extra}) -> None", "name": "attribute"}
    fields = ["name"]
    if extra:
        members["extra"] = "attribute"
        fields.append("extra")
    return {"kind": "class", "members": members, "fields": fields}


COLUMN = _column("")


@pytest.mark.parametrize(
    ("old", "new", "before", "after", "problem"),
    [
        # Adding a name: a minor release is enough, a patch is not.
        ({}, {"x": {"kind": "function", "signature": "()"}}, "1.0.0", "1.1.0", ""),
        ({}, {"x": {"kind": "function", "signature": "()"}}, "1.0.0", "1.0.1", "at least a minor"),
        # A protocol gaining a method is an addition.
        (
            {"P": PROTO},
            {"P": {"kind": "protocol", "methods": {**PROTO["methods"], "extra": "(self)"}}},  # type: ignore[dict-item]
            "1.0.0",
            "1.1.0",
            "",
        ),
        # Removing a name or changing a signature breaks plugins: a major release.
        ({"x": {"kind": "function", "signature": "()"}}, {}, "1.0.0", "1.1.0", "major version: 2.0.0"),
        (
            {"P": PROTO},
            {"P": {"kind": "protocol", "methods": {"score": "(self, state, pod)"}}},
            "1.3.2",
            "1.4.0",
            "needs a major version: 2.0.0",
        ),
        ({"P": PROTO}, {"P": {"kind": "protocol", "methods": {"score": "(self)"}}}, "1.3.2", "2.0.0", ""),
        # A class whose constructor gained a parameter with a default (a dataclass: a trailing field) is
        # an addition; one without a default, or a changed one, breaks callers.
        ({"C": COLUMN}, {"C": _column(", *, extra: 'bool | None' = None")}, "1.0.0", "1.1.0", ""),
        ({"C": COLUMN}, {"C": _column(", extra: 'int' = 0")}, "1.0.0", "1.1.0", ""),
        ({"C": COLUMN}, {"C": _column(", *, extra: 'bool'")}, "1.0.0", "1.1.0", "major version: 2.0.0"),
        ({"C": COLUMN}, {"C": _column(", extra: 'int'")}, "1.0.0", "1.1.0", "major version: 2.0.0"),
        (
            {"C": COLUMN},
            {
                "C": {
                    **_column(""),
                    "members": {"__init__": "(self, name: 'int') -> None", "name": "attribute"},
                }
            },
            "1.0.0",
            "1.1.0",
            "major version: 2.0.0",
        ),
        # Going backwards is never right; 0.x may break in a minor release (semver).
        ({}, {}, "1.2.0", "1.1.0", "must be greater"),
        ({"x": {"kind": "alias"}}, {}, "0.3.0", "0.4.0", ""),
    ],
)
def test_version_bump_rules(
    old: dict[str, object], new: dict[str, object], before: str, after: str, problem: str
) -> None:
    found = api.bump_problem(before, after, _fake_change(old, new))
    assert (problem in found) if problem else found == ""


def test_a_bad_version_string_is_named() -> None:
    with pytest.raises(ValueError, match=r"'1\.0' is not a semantic version"):
        api.parse_version("1.0")


def test_write_refuses_a_change_without_a_bump(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    # Pretend the recorded surface lacked a name: writing under the same version is refused.
    recorded = api.load_snapshot()
    trimmed = dict(recorded["surface"])
    trimmed.pop("scheduler.framework:SignPlugin")
    monkeypatch.setattr(api, "load_snapshot", lambda: {"version": recorded["version"], "surface": trimmed})
    written: list[str] = []
    monkeypatch.setattr(type(api.SNAPSHOT), "write_text", lambda self, text: written.append(text))
    problem = api.write_snapshot(recorded["version"])
    assert "must be greater" in problem
    assert written == []
    # A minor bump without a changelog entry is refused too.
    major, minor, _ = api.parse_version(recorded["version"])
    next_minor = f"{major}.{minor + 1}.0"
    problem = api.write_snapshot(next_minor)
    assert f"has no '## {next_minor}' entry" in problem
    assert written == []
