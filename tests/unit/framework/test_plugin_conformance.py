"""Loading a plugin checks its extension-point methods against the protocols (issue 28)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.config import ConfigError, factory_for, parse_config_with_plugins
from scheduler.config.out_of_tree import PluginLoadError, load_out_of_tree
from scheduler.cycle.profiles import FrameworkHandle, build_frameworks
from scheduler.framework import CycleState, NodeInfo, PodInfo, Status
from scheduler.framework.conformance import PROTOCOL_METHODS, check_plugin, plugin_problems
from scheduler.plugins.registry import IN_TREE_REGISTRY

BAD = "tests.unit.framework.oot_bad_plugins"
HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


class Good:
    name = "Good"

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, *extra: Any) -> tuple[int, None]:
        return 0, None

    @staticmethod
    def less(a: Any, b: Any) -> bool:
        return False

    def scores_for_report(self) -> list[int]:  # a public helper nowhere near a protocol name
        return []

    def _scroe(self) -> None:  # private helpers are never checked
        pass


def problems_of(**methods: Any) -> list[str]:
    return plugin_problems(type("P", (), {"name": "P", **methods}))


def test_a_well_formed_plugin_class_and_instance_pass() -> None:
    assert plugin_problems(Good) == []
    assert plugin_problems(Good({}, None)) == []


@pytest.mark.parametrize(
    ("methods", "expected"),
    [
        (
            {"scroe": lambda self, s, p, n: (0, None)},
            "method scroe is not an extension point; did you mean score?",
        ),
        ({"pre_filer": lambda self, s, p, n: (None, None)}, "did you mean pre_filter?"),
        ({"normalise_score": lambda self, s, p, sc: None}, "did you mean normalize_score?"),
        ({"events_to_registr": lambda self: []}, "did you mean events_to_register?"),
        (
            {"score": lambda self, state, pod: (0, None)},
            "method score(self, state, pod) takes 2 argument(s) but ScorePlugin.score is called with 3 "
            "(state, pod, node)",
        ),
        ({"filter": lambda self, s, p, n, extra: None}, "method filter(self, s, p, n, extra) takes 4"),
        (
            {"events_to_register": lambda self, which: []},
            "EnqueueExtensions.events_to_register is called with 0",
        ),
        ({"filter": lambda self, s, p, n, *, strict: None}, "method filter"),
        ({"score": 5}, "score is not a method"),
    ],
)
def test_wrong_names_and_arities_are_named(methods: dict[str, Any], expected: str) -> None:
    found = problems_of(**methods)
    assert len(found) == 1 and expected in found[0], found


def test_a_coroutine_where_the_loop_calls_synchronously_is_refused() -> None:
    async def filter(self: Any, state: Any, pod: Any, node: Any) -> None:
        return None

    async def post_filter_with_extenders(self: Any, state: Any, pod: Any, statuses: Any, ext: Any) -> Any:
        return None, None

    (problem,) = problems_of(filter=filter)
    assert problem.startswith("method filter is a coroutine (async def)")
    assert "make it a plain def" in problem
    # The one documented coroutine hook must be one.
    assert problems_of(post_filter_with_extenders=post_filter_with_extenders) == []
    (problem,) = problems_of(post_filter_with_extenders=lambda self, s, p, st, e: (None, None))
    assert "must be a coroutine" in problem


def test_a_near_miss_of_a_method_the_plugin_has_is_not_a_typo() -> None:
    ok = lambda self, s, p, n: None  # noqa: E731
    assert problems_of(filter=ok, filters=lambda self: []) == []
    assert problems_of(scores_for_report=lambda self: []) == []


def test_every_in_tree_plugin_matches_the_protocols() -> None:
    frameworks = build_frameworks(
        parse_config_with_plugins(HEADER, registry=IN_TREE_REGISTRY).config,
        IN_TREE_REGISTRY,
        lambda name: FrameworkHandle(name, lambda: None, None, lambda: 0.0),  # type: ignore[arg-type,return-value]
    )
    assert frameworks  # built: every plugin passed the check
    for name, factory in IN_TREE_REGISTRY.items():
        cls = getattr(factory, "cls", factory)
        assert plugin_problems(cls) == [], name


def test_the_table_covers_every_extension_point() -> None:
    for method in ("pre_enqueue", "less", "pre_filter", "filter", "post_filter", "pre_score", "score",
                   "normalize_score", "reserve", "unreserve", "permit", "pre_bind", "bind", "post_bind",
                   "filter_nodes", "score_nodes", "sign", "events_to_register", "node_columns"):  # fmt: skip
        assert method in PROTOCOL_METHODS, method
    assert PROTOCOL_METHODS["score"].params == ("state", "pod", "node")


@pytest.mark.parametrize(
    ("attr", "words"),
    [
        ("Misspelt", ("oot_bad_plugins.Misspelt", "method scroe", "did you mean score?")),
        ("WrongArity", ("oot_bad_plugins.WrongArity", "score(self, state, pod) takes 2")),
        ("AsyncFilter", ("oot_bad_plugins.AsyncFilter", "method filter is a coroutine")),
    ],
)
def test_loading_by_dotted_path_refuses_a_bad_class(attr: str, words: Sequence[str]) -> None:
    with pytest.raises(ConfigError) as err:
        load_out_of_tree([f"{BAD}:{attr}"])
    (line,) = err.value.errors
    assert line.startswith(f'plugin "{BAD}:{attr}": ')
    for word in words:
        assert word in line


def test_factory_for_checks_a_class_at_load() -> None:
    from tests.unit.framework.oot_bad_plugins import Misspelt

    with pytest.raises(PluginLoadError, match="did you mean score"):
        factory_for(Misspelt, "m")


def test_a_factory_function_is_checked_on_the_instance_it_builds() -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "x",
                "plugins": {"multiPoint": {"enabled": [{"name": f"{BAD}:async_filter_factory"}]}},
            }
        ],
    }
    loaded = parse_config_with_plugins(config, registry=IN_TREE_REGISTRY)
    with pytest.raises(ConfigError) as err:
        build_frameworks(
            loaded.config,
            loaded.registry,
            lambda name: FrameworkHandle(name, lambda: None, None, lambda: 0.0),  # type: ignore[arg-type,return-value]
        )
    (line,) = err.value.errors
    assert line == (
        f'profiles[x]: plugin "{BAD}:async_filter_factory" (name "AsyncFilter"): method filter is a '
        "coroutine (async def), but FilterPlugin.filter is called synchronously on the scheduler's event "
        "loop; make it a plain def"
    )


def test_check_plugin_raises_one_line_with_every_problem() -> None:
    bad = type("Two", (), {"name": "Two", "scroe": lambda self: 0, "filter": lambda self: None})
    with pytest.raises(ValueError) as err:
        check_plugin(bad, "my.mod:Two")
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith('plugin "my.mod:Two": ')
    assert "method filter(self) takes 0" in text and "method scroe" in text
