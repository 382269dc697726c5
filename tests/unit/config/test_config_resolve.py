"""multiPoint expansion, enabled/disabled merging and score weights (upstream mergePlugins +
expandMultiPointPlugins + getScoreWeights), with fake plugins."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.config import (
    API_VERSION,
    KIND,
    ConfigError,
    PluginRef,
    PluginSet,
    ResolvedProfile,
    merge_plugin_set,
    parse_config,
    parse_config_with_plugins,
    resolve_profile,
    resolve_profiles,
)
from scheduler.framework.interface import PluginFactory

HEADER = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"

POINTS: dict[str, set[str]] = {
    "SchedulingGates": {"preEnqueue"},
    "PrioritySort": {"queueSort"},
    "NodeUnschedulable": {"filter"},
    "NodeName": {"filter"},
    "TaintToleration": {"filter", "preScore", "score"},
    "NodeAffinity": {"preFilter", "filter", "preScore", "score"},
    "NodePorts": {"preFilter", "filter"},
    "NodeResourcesFit": {"preFilter", "filter", "preScore", "score"},
    "DefaultPreemption": {"postFilter"},
    "NodeResourcesBalancedAllocation": {"preScore", "score"},
    "ImageLocality": {"score"},
    "DefaultBinder": {"bind"},
    # Not defaults:
    "OtherSort": {"queueSort"},
    "MyPlugin": {"preFilter", "filter", "score", "reserve", "permit"},
    "Gate": {"preEnqueue", "permit"},
}
DEFAULT_MULTIPOINT: list[tuple[str, int | None]] = [
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
]


def _factory(args: Mapping[str, Any], handle: Any) -> Any:
    raise AssertionError("resolution must not build plugins itself")


REGISTRY: dict[str, PluginFactory] = dict.fromkeys(POINTS, _factory)


def implements(name: str) -> set[str]:
    return POINTS[name]


def resolve(body: str = "", index: int = 0) -> ResolvedProfile:
    cfg, registry = parse_config_with_plugins(HEADER + textwrap.dedent(body), registry=REGISTRY)
    return resolve_profile(cfg.profiles[index], registry, DEFAULT_MULTIPOINT, implements)


def test_defaults_expand_like_upstream() -> None:
    rp = resolve()
    assert rp.scheduler_name == "py-scheduler"
    assert rp.percentage_of_nodes_to_score is None
    assert rp.plugins == {
        "preEnqueue": ["SchedulingGates"],
        "queueSort": ["PrioritySort"],
        "preFilter": ["NodeAffinity", "NodePorts", "NodeResourcesFit"],
        "filter": [
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
        ],
        "postFilter": ["DefaultPreemption"],
        "preScore": [
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "NodeResourcesBalancedAllocation",
        ],
        "score": [
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "NodeResourcesBalancedAllocation",
            "ImageLocality",
        ],
        "reserve": [],
        "permit": [],
        "preBind": [],
        "bind": ["DefaultBinder"],
        "postBind": [],
    }
    assert rp.score_weights == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert rp.queue_sort == "PrioritySort"
    assert set(rp.plugin_names) == {n for n, _ in DEFAULT_MULTIPOINT}
    assert all(args == {} for args in rp.plugin_args.values())


def test_multipoint_weight_override_keeps_default_position() -> None:
    rp = resolve("profiles:\n- plugins: {multiPoint: {enabled: [{name: NodeAffinity, weight: 5}]}}\n")
    assert rp.plugins["score"][1] == "NodeAffinity"
    assert rp.score_weights["NodeAffinity"] == 5


def test_multipoint_weight_zero_means_default_one() -> None:
    # Upstream getScoreWeights: a 0 weight (what kube-scheduler's own dumps contain) becomes 1.
    rp = resolve("profiles:\n- plugins: {multiPoint: {enabled: [{name: TaintToleration, weight: 0}]}}\n")
    assert rp.score_weights["TaintToleration"] == 1


def test_explicit_score_entry_wins_over_multipoint_and_runs_first() -> None:
    rp = resolve("profiles:\n- plugins: {score: {enabled: [{name: ImageLocality, weight: 7}]}}\n")
    assert rp.plugins["score"][0] == "ImageLocality"
    assert rp.plugins["score"].count("ImageLocality") == 1
    assert rp.score_weights["ImageLocality"] == 7


def test_explicit_score_entry_without_weight_gets_one_not_the_multipoint_weight() -> None:
    # getScoreWeights visits score.enabled before multiPoint; an unset weight becomes 1 right there.
    rp = resolve("profiles:\n- plugins: {score: {enabled: [{name: TaintToleration}]}}\n")
    assert rp.score_weights["TaintToleration"] == 1


def test_disable_all_at_one_point_keeps_only_explicit_plugins() -> None:
    rp = resolve(
        """
        profiles:
        - plugins:
            score:
              disabled: [{name: "*"}]
              enabled: [{name: ImageLocality, weight: 4}, {name: MyPlugin}]
        """
    )
    assert rp.plugins["score"] == ["ImageLocality", "MyPlugin"]
    assert rp.score_weights == {"ImageLocality": 4, "MyPlugin": 1}
    # Other points still get the defaults.
    assert "NodeAffinity" in rp.plugins["preScore"]
    assert rp.plugins["filter"][0] == "NodeUnschedulable"


def test_disable_one_plugin_at_one_point() -> None:
    rp = resolve("profiles:\n- plugins: {filter: {disabled: [{name: NodeName}]}}\n")
    assert "NodeName" not in rp.plugins["filter"]
    assert "NodeName" in rp.plugin_args  # still needed (it is a multiPoint plugin), as upstream


def test_disable_in_multipoint_removes_default_everywhere() -> None:
    rp = resolve("profiles:\n- plugins: {multiPoint: {disabled: [{name: NodeAffinity}]}}\n")
    assert all("NodeAffinity" not in names for names in rp.plugins.values())
    assert "NodeAffinity" not in rp.score_weights
    assert "NodeAffinity" not in rp.plugin_names


def test_multipoint_disable_all_then_enable_own_set() -> None:
    rp = resolve(
        """
        profiles:
        - plugins:
            multiPoint:
              disabled: [{name: "*"}]
              enabled: [{name: OtherSort}, {name: MyPlugin, weight: 3}, {name: DefaultBinder}]
        """
    )
    assert rp.plugins["queueSort"] == ["OtherSort"]
    assert rp.plugins["filter"] == ["MyPlugin"]
    assert rp.plugins["reserve"] == ["MyPlugin"]
    assert rp.plugins["permit"] == ["MyPlugin"]
    assert rp.plugins["bind"] == ["DefaultBinder"]
    assert rp.plugins["preEnqueue"] == []
    assert rp.score_weights == {"MyPlugin": 3}


def test_enabled_wins_over_disabled_in_multipoint() -> None:
    rp = resolve(
        "profiles:\n- plugins: {multiPoint: {enabled: [{name: MyPlugin}], disabled: [{name: MyPlugin}]}}\n"
    )
    assert "MyPlugin" in rp.plugins["filter"]


def test_multipoint_plugin_disabled_for_one_point() -> None:
    rp = resolve(
        """
        profiles:
        - plugins:
            multiPoint: {enabled: [{name: MyPlugin}]}
            permit: {disabled: [{name: MyPlugin}]}
        """
    )
    assert "MyPlugin" in rp.plugins["reserve"]
    assert "MyPlugin" not in rp.plugins["permit"]


def test_upstream_documentation_example() -> None:
    """The multiPoint example of the kube-scheduler configuration docs, with our fake names."""
    rp = resolve(
        """
        profiles:
        - plugins:
            multiPoint:
              enabled:
              - {name: OtherSort}
              - {name: MyPlugin, weight: 3}
              disabled:
              - {name: PrioritySort}
            filter:
              disabled: [{name: NodeName}]
            score:
              enabled: [{name: NodeResourcesFit}]
        """
    )
    assert rp.plugins["queueSort"] == ["OtherSort"]
    # Explicit override first, then multiPoint in merged order (defaults, then custom).
    assert rp.plugins["score"] == [
        "NodeResourcesFit",
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "MyPlugin",
    ]
    assert rp.score_weights["MyPlugin"] == 3
    assert rp.plugins["filter"] == [
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "MyPlugin",
    ]


def test_explicit_point_order_override_then_multipoint_then_rest() -> None:
    rp = resolve("profiles:\n- plugins: {permit: {enabled: [{name: Gate}, {name: MyPlugin}]}}\n")
    assert rp.plugins["permit"] == ["Gate", "MyPlugin"]
    rp = resolve(
        """
        profiles:
        - plugins:
            multiPoint: {enabled: [{name: MyPlugin}]}
            permit: {enabled: [{name: Gate}, {name: MyPlugin}]}
        """
    )
    # MyPlugin overrides its multiPoint entry and moves to the front; Gate is "other explicit".
    assert rp.plugins["permit"] == ["MyPlugin", "Gate"]


def test_plugin_args_from_plugin_config() -> None:
    rp = resolve(
        """
        profiles:
        - pluginConfig:
          - {name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated}}}
        """
    )
    assert rp.plugin_args["NodeResourcesFit"] == {"scoringStrategy": {"type": "MostAllocated"}}
    assert rp.plugin_args["ImageLocality"] == {}


def test_two_queue_sorts_is_an_error() -> None:
    # Enabling a queue sort without disabling the default one gives two (upstream behaviour).
    with pytest.raises(ConfigError) as info:
        resolve("profiles:\n- plugins: {queueSort: {enabled: [{name: OtherSort}]}}\n")
    assert info.value.errors == (
        'profiles[py-scheduler].plugins.queueSort: Invalid value: ["PrioritySort","OtherSort"]: '
        "exactly one queue sort plugin is required, got 2",
    )


def test_missing_bind_and_queue_sort() -> None:
    with pytest.raises(ConfigError) as info:
        resolve('profiles:\n- plugins: {multiPoint: {disabled: [{name: "*"}]}}\n')
    assert "profiles[py-scheduler].plugins.queueSort: Invalid value: []" in info.value.errors[0]
    assert info.value.errors[1] == (
        "profiles[py-scheduler].plugins.bind: Required value: at least one bind plugin is needed"
    )


def test_plugin_not_implementing_the_point() -> None:
    with pytest.raises(ConfigError) as info:
        resolve("profiles:\n- plugins: {filter: {enabled: [{name: ImageLocality}]}}\n")
    assert info.value.errors == (
        'profiles[py-scheduler].plugins.filter.enabled[0]: Invalid value: "ImageLocality": '
        "plugin does not implement the filter extension point",
    )


def test_unknown_plugin_and_unknown_default() -> None:
    cfg = parse_config(HEADER + "profiles:\n- plugins: {multiPoint: {enabled: [{name: Ghost}]}}\n")
    with pytest.raises(ConfigError) as info:
        resolve_profile(
            cfg.profiles[0],
            REGISTRY,
            [*DEFAULT_MULTIPOINT, ("Missing", None)],
            implements,
            path="profiles[0]",
        )
    assert info.value.errors == (
        'profiles[0].plugins.multiPoint: Invalid value: "Missing": default plugin does not exist',
        'profiles[0].plugins.multiPoint.enabled[0]: Invalid value: "Ghost": plugin does not exist',
    )


def test_failing_implements_is_reported_once_per_plugin() -> None:
    calls: list[str] = []

    def broken(name: str) -> set[str]:
        calls.append(name)
        if name == "NodeAffinity":
            raise ValueError("bad args")
        return POINTS[name]

    cfg = parse_config(HEADER)
    with pytest.raises(ConfigError) as info:
        resolve_profile(cfg.profiles[0], REGISTRY, DEFAULT_MULTIPOINT, broken)
    assert info.value.errors == (
        'profiles[py-scheduler]: initializing plugin "NodeAffinity": ValueError: bad args',
    )
    assert calls.count("NodeAffinity") == 1
    assert calls.count("NodeResourcesFit") == 1  # memoised across points


def test_merge_plugin_set_matches_upstream() -> None:
    default = PluginSet(enabled=(PluginRef("A"), PluginRef("B", 2), PluginRef("C")), disabled=("Z",))
    custom = PluginSet(enabled=(PluginRef("D"), PluginRef("B", 9)), disabled=("C",))
    merged = merge_plugin_set(default, custom)
    assert merged.enabled == (PluginRef("A"), PluginRef("B", 9), PluginRef("D"))
    assert merged.disabled == ("C", "Z")
    star = merge_plugin_set(default, PluginSet(enabled=(PluginRef("B"),), disabled=("*",)))
    assert star.enabled == (PluginRef("B"),)


def test_resolve_profiles_all_profiles_and_shared_queue_sort() -> None:
    cfg, registry = parse_config_with_plugins(
        HEADER
        + textwrap.dedent(
            """
            profiles:
            - schedulerName: a
            - schedulerName: b
              percentageOfNodesToScore: 20
              plugins: {score: {disabled: [{name: "*"}], enabled: [{name: NodeResourcesFit}]}}
            """
        ),
        registry=REGISTRY,
    )
    a, b = resolve_profiles(cfg, DEFAULT_MULTIPOINT, implements, registry)
    assert (a.scheduler_name, b.scheduler_name) == ("a", "b")
    assert b.percentage_of_nodes_to_score == 20
    assert b.plugins["score"] == ["NodeResourcesFit"]
    assert len(a.plugins["score"]) == 5


def test_resolve_profiles_rejects_different_effective_queue_sorts() -> None:
    # queueSort sets are equal (empty), so file validation passes; multiPoint differs.
    cfg, registry = parse_config_with_plugins(
        HEADER
        + textwrap.dedent(
            """
            profiles:
            - schedulerName: a
            - schedulerName: b
              plugins:
                multiPoint:
                  enabled: [{name: OtherSort}]
                  disabled: [{name: PrioritySort}]
            """
        ),
        registry=REGISTRY,
    )
    with pytest.raises(ConfigError) as info:
        resolve_profiles(cfg, DEFAULT_MULTIPOINT, implements, registry)
    assert info.value.errors[0].startswith('profiles[1].plugins.queueSort: Invalid value: "OtherSort"')


def test_resolve_profiles_collects_errors_of_every_profile() -> None:
    cfg, registry = parse_config_with_plugins(
        HEADER
        + textwrap.dedent(
            """
            profiles:
            - schedulerName: a
              plugins: {filter: {enabled: [{name: ImageLocality}]}}
            - schedulerName: b
              plugins: {bind: {disabled: [{name: DefaultBinder}]}}
            """
        ),
        registry=REGISTRY,
    )
    with pytest.raises(ConfigError) as info:
        resolve_profiles(cfg, DEFAULT_MULTIPOINT, implements, registry)
    assert info.value.errors[0].startswith("profiles[0].plugins.filter.enabled[0]")
    assert info.value.errors[1].startswith("profiles[1].plugins.bind: Required value")
