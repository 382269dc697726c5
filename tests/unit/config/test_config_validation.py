"""Every validation rule reports the field by its full path; all problems are reported together."""

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
    ResolvedProfile,
    parse_config,
    parse_config_with_plugins,
    resolve_profile,
)
from scheduler.framework.interface import PluginFactory

HEADER = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"


def _factory(args: Mapping[str, Any], handle: Any) -> Any:
    raise AssertionError("validation must not build plugins")


REGISTRY: dict[str, PluginFactory] = {
    name: _factory
    for name in (
        "PrioritySort",
        "NodeName",
        "NodeAffinity",
        "NodeResourcesFit",
        "ImageLocality",
        "DefaultBinder",
        "OtherSort",
    )
}


# The extension points of the fake plugins above and a default multiPoint list over them, enough to
# resolve a profile and read the score weights the framework would get.
POINTS: dict[str, set[str]] = {
    "PrioritySort": {"queueSort"},
    "NodeName": {"filter"},
    "NodeAffinity": {"preFilter", "filter", "preScore", "score"},
    "NodeResourcesFit": {"preFilter", "filter", "preScore", "score"},
    "ImageLocality": {"score"},
    "DefaultBinder": {"bind"},
    "OtherSort": {"queueSort"},
}
DEFAULT_MULTIPOINT: list[tuple[str, int | None]] = [
    ("PrioritySort", None),
    ("NodeName", None),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
]


def resolved(body: str) -> ResolvedProfile:
    """The first profile of a config that must be valid, resolved against the fake plugins."""
    cfg, registry = parse_config_with_plugins(HEADER + textwrap.dedent(body), registry=REGISTRY)
    return resolve_profile(cfg.profiles[0], registry, DEFAULT_MULTIPOINT, POINTS.__getitem__)


def errors_of(body: str, registry: Mapping[str, PluginFactory] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(HEADER + textwrap.dedent(body), registry=registry)
    assert str(info.value)  # the message is what the operator sees
    return list(info.value.errors)


def one_error(body: str, registry: Mapping[str, PluginFactory] | None = None) -> str:
    errs = errors_of(body, registry)
    assert len(errs) == 1, errs
    return errs[0]


# --- type meta and strict decoding ---------------------------------------------------------------


def test_wrong_api_version() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(f"apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: {KIND}\n")
    assert info.value.errors == (
        'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3": '
        f'supported values: "{API_VERSION}"',
    )


def test_missing_api_version_and_wrong_kind() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("kind: KubeProxyConfiguration\n")
    assert info.value.errors[0].startswith("apiVersion: Required value")
    assert info.value.errors[1].startswith('kind: Unsupported value: "KubeProxyConfiguration"')


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("parallelizm: 3\n", "parallelizm"),
        ("profiles:\n- schedulerName: a\n  pluginz: {}\n", "profiles[0].pluginz"),
        ("leaderElection: {leaseDurationX: 1s}\n", "leaderElection.leaseDurationX"),
        ("clientConnection: {QPS: 3}\n", "clientConnection.QPS"),
        (
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - {name: ImageLocality, wieght: 2}\n",
            "profiles[0].plugins.score.enabled[0].wieght",
        ),
        ("profiles:\n- plugins: {scores: {}}\n", "profiles[0].plugins.scores"),
        ("profiles:\n- pluginConfig:\n  - {name: X, arg: {}}\n", "profiles[0].pluginConfig[0].arg"),
    ],
)
def test_unknown_fields_are_named(body: str, field: str) -> None:
    assert f'unknown field "{field}"' in one_error(body)


def test_v1beta_bind_addresses_are_rejected_like_upstream_v1() -> None:
    errs = errors_of("healthzBindAddress: 0.0.0.0:10251\nmetricsBindAddress: 0.0.0.0:10251\n")
    assert errs[0].startswith('unknown field "healthzBindAddress" (removed in')
    assert errs[1].startswith('unknown field "metricsBindAddress"')


def test_duplicate_keys_are_rejected() -> None:
    assert 'duplicate field "parallelism" (line 4)' in one_error("parallelism: 1\nparallelism: 2\n")
    with pytest.raises(ConfigError, match='duplicate field "kind"'):
        parse_config(f'{{"apiVersion": "{API_VERSION}", "kind": "{KIND}", "kind": "x"}}')


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('parallelism: "x"\n', 'parallelism: Invalid value: "x": must be an integer'),
        ("parallelism: true\n", "parallelism: Invalid value: true: must be an integer"),
        ("enableProfiling: 1\n", "enableProfiling: Invalid value: 1: must be a boolean"),
        ("clientConnection: {qps: fast}\n", 'clientConnection.qps: Invalid value: "fast": must be a number'),
        (
            "clientConnection: {kubeconfig: 3}\n",
            "clientConnection.kubeconfig: Invalid value: 3: must be a string",
        ),
        (
            "leaderElection: {leaseDuration: 15}\n",
            "leaderElection.leaseDuration: Invalid value: 15: must be a duration",
        ),
        (
            "leaderElection: {leaseDuration: 15x}\n",
            'leaderElection.leaseDuration: Invalid value: "15x": time: unknown unit "x" in duration "15x"',
        ),
        ("profiles: {a: 1}\n", 'profiles: Invalid value: {"a":1}: must be a list'),
        ("leaderElection: []\n", "leaderElection: Invalid value: []: must be an object"),
        (
            "profiles:\n- pluginConfig:\n  - {name: X, args: [1]}\n",
            "profiles[0].pluginConfig[0].args: Invalid value",
        ),
    ],
)
def test_type_errors_name_the_field(body: str, message: str) -> None:
    assert one_error(body).startswith(message)


# --- top-level values -----------------------------------------------------------------------------


def test_parallelism_must_be_positive() -> None:
    assert one_error("parallelism: 0\n") == (
        "parallelism: Invalid value: 0: should be an integer value greater than zero"
    )


@pytest.mark.parametrize("value", [-1, 101])
def test_percentage_of_nodes_to_score_range(value: int) -> None:
    assert one_error(f"percentageOfNodesToScore: {value}\n") == (
        f"percentageOfNodesToScore: Invalid value: {value}: not in valid range [0-100]"
    )
    assert one_error(f"profiles:\n- percentageOfNodesToScore: {value}\n") == (
        f"profiles[0].percentageOfNodesToScore: Invalid value: {value}: not in valid range [0-100]"
    )


def test_backoff_rules() -> None:
    assert one_error("podInitialBackoffSeconds: 0\npodMaxBackoffSeconds: 1\n") == (
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"
    )
    assert one_error("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 3\n") == (
        "podMaxBackoffSeconds: Invalid value: 3: must be greater than or equal to PodInitialBackoffSeconds"
    )
    parse_config(HEADER + "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 5\n")


def test_burst_must_be_non_negative_and_negative_qps_means_unlimited() -> None:
    assert one_error("clientConnection: {burst: -1}\n") == (
        "clientConnection.burst: Invalid value: -1: must be non-negative"
    )
    assert parse_config(HEADER + "clientConnection: {qps: -1}\n").client_connection.qps == -1.0


def test_placement_fields_accepted_only_when_empty() -> None:
    parse_config(HEADER + "profiles:\n- plugins: {placementScore: {}}\n")
    err = one_error("profiles:\n- plugins:\n    placementScore: {enabled: [{name: X}]}\n")
    assert err.startswith("profiles[0].plugins.placementScore: Forbidden")
    assert one_error("percentageOfPlacementsToScore: 5\n").startswith(
        "percentageOfPlacementsToScore: Forbidden"
    )


# --- leader election ------------------------------------------------------------------------------


def test_lease_duration_must_exceed_renew_deadline() -> None:
    err = one_error("leaderElection: {leaseDuration: 10s, renewDeadline: 10s}\n")
    assert err.startswith(
        'leaderElection.leaseDuration: Invalid value: "10s": must be greater than `renewDeadline`'
    )


def test_renew_deadline_must_exceed_jittered_retry_period() -> None:
    err = one_error("leaderElection: {renewDeadline: 2400ms, retryPeriod: 2s}\n")
    assert err.startswith(
        'leaderElection.renewDeadline: Invalid value: "2.4s": must be greater than retryPeriod*1.2'
    )
    parse_config(HEADER + "leaderElection: {renewDeadline: 2500ms, retryPeriod: 2s}\n")


def test_negative_durations() -> None:
    errs = errors_of("leaderElection: {leaseDuration: -1s, renewDeadline: -2s, retryPeriod: -3s}\n")
    assert 'leaderElection.leaseDuration: Invalid value: "-1s": must be greater than zero' in errs
    assert 'leaderElection.renewDeadline: Invalid value: "-2s": must be greater than zero' in errs
    assert 'leaderElection.retryPeriod: Invalid value: "-3s": must be greater than zero' in errs


def test_resource_lock_must_be_leases() -> None:
    assert one_error("leaderElection: {resourceLock: endpointsleases}\n") == (
        'leaderElection.resourceLock: Invalid value: "endpointsleases": resourceLock value must be "leases"'
    )


def test_leader_election_rules_skipped_when_disabled() -> None:
    cfg = parse_config(
        HEADER
        + "leaderElection: {leaderElect: false, leaseDuration: 1s, renewDeadline: 5s, resourceLock: x}\n"
    )
    assert cfg.leader_election.leader_elect is False


# --- profiles -------------------------------------------------------------------------------------


def test_duplicate_scheduler_names() -> None:
    assert one_error("profiles:\n- schedulerName: a\n- schedulerName: b\n- schedulerName: a\n") == (
        'profiles[2].schedulerName: Duplicate value: "a"'
    )


def test_scheduler_name_required() -> None:
    assert one_error('profiles:\n- schedulerName: ""\n') == "profiles[0].schedulerName: Required value"
    # With several profiles none is named by default.
    assert one_error("profiles:\n- schedulerName: a\n- percentageOfNodesToScore: 1\n") == (
        "profiles[1].schedulerName: Required value"
    )


def test_queue_sort_must_match_across_profiles() -> None:
    body = """
    profiles:
    - schedulerName: a
    - schedulerName: b
      plugins:
        queueSort:
          enabled: [{name: OtherSort}]
          disabled: [{name: "*"}]
    """
    err = one_error(body)
    assert err.startswith("profiles[1].plugins.queueSort: Invalid value: ")
    assert err.endswith("must be the same for all profiles")


def test_only_one_queue_sort() -> None:
    body = """
    profiles:
    - plugins:
        queueSort: {enabled: [{name: PrioritySort}, {name: OtherSort}]}
    """
    assert one_error(body) == (
        "profiles[0].plugins.queueSort.enabled: Invalid value: 2: only one queue sort plugin can be enabled"
    )


def test_queue_sort_args_must_match_across_profiles() -> None:
    body = """
    profiles:
    - schedulerName: a
      plugins: {queueSort: {enabled: [{name: OtherSort}]}}
      pluginConfig: [{name: OtherSort, args: {x: 1}}]
    - schedulerName: b
      plugins: {queueSort: {enabled: [{name: OtherSort}]}}
      pluginConfig: [{name: OtherSort, args: {x: 2}}]
    """
    err = one_error(body)
    assert err.startswith('profiles[1].pluginConfig[0].args: Invalid value: {"x":2}')
    assert err.endswith("queueSort must be the same for all profiles")


@pytest.mark.parametrize("set_name", ["score", "multiPoint"])
def test_negative_score_weight_is_refused(set_name: str) -> None:
    body = f"""
    profiles:
    - plugins:
        {set_name}:
          enabled:
          - {{name: ImageLocality, weight: 2}}
          - {{name: NodeAffinity, weight: -1}}
    """
    assert one_error(body) == (
        f"profiles[0].plugins.{set_name}.enabled[1].weight: Invalid value: -1: "
        "must not be negative (kube-scheduler: total score of Score plugins could overflow)"
    )


@pytest.mark.parametrize("set_name", ["score", "multiPoint"])
@pytest.mark.parametrize("weight", [0, 1, 101, 2**31 - 1])
def test_score_weights_kube_scheduler_accepts_are_accepted(set_name: str, weight: int) -> None:
    """Issue 11: weight 0 was refused; upstream's framework treats it as 1 and bounds weights only by
    int32 decoding (and the int64 total, which int32 weights cannot overflow)."""
    body = f"profiles:\n- plugins: {{{set_name}: {{enabled: [{{name: NodeAffinity, weight: {weight}}}]}}}}\n"
    rp = resolved(body)
    # 0 is upstream's "unset" and becomes 1; any other accepted weight is used as written.
    assert rp.score_weights["NodeAffinity"] == (weight or 1)
    assert rp.score_weights["ImageLocality"] == 1  # the other score plugins keep their defaults


def test_score_weight_past_int32_is_refused_as_upstream_decoding_does() -> None:
    body = "profiles:\n- plugins: {score: {enabled: [{name: NodeAffinity, weight: 2147483648}]}}\n"
    assert one_error(body) == (
        "profiles[0].plugins.score.enabled[0].weight: Invalid value: 2147483648: "
        "must fit in int32 [-2147483648, 2147483647]"
    )


def test_multipoint_weight_zero_means_unset_as_in_upstream_dumps() -> None:
    """kube-scheduler's config dumps write ``weight: 0`` on every multiPoint entry, score plugin or not."""
    cfg = parse_config(
        HEADER + "profiles:\n- plugins: {multiPoint: {enabled: [{name: PrioritySort, weight: 0}]}}\n"
    )
    assert cfg.profiles[0].plugins["multiPoint"].enabled == (PluginRef("PrioritySort", 0),)  # as written
    rp = resolved(
        """
        profiles:
        - plugins:
            multiPoint:
              enabled: [{name: PrioritySort, weight: 0}, {name: NodeAffinity, weight: 0}]
        """
    )
    assert rp.queue_sort == "PrioritySort"
    assert "PrioritySort" not in rp.score_weights  # not a score plugin: its 0 gives it no weight
    assert rp.score_weights["NodeAffinity"] == 1  # unset: 1, not the default multiPoint weight 2


def test_weight_on_non_score_points_is_ignored_like_upstream() -> None:
    body = "profiles:\n- plugins: {filter: {enabled: [{name: NodeName, weight: 0}]}}\n"
    parse_config(HEADER + body)  # accepted without a registry too
    rp = resolved(body)
    assert "NodeName" in rp.plugins["filter"]
    assert "NodeName" not in rp.score_weights  # a weight does not make a filter plugin score
    assert rp.score_weights == resolved("").score_weights  # and changes no other weight


def test_plugin_name_required_and_duplicates() -> None:
    errs = errors_of(
        """
        profiles:
        - plugins:
            filter:
              enabled: [{name: NodeName}, {weight: 1}, {name: NodeName}]
              disabled: [{name: ""}]
        """
    )
    assert errs == [
        "profiles[0].plugins.filter.enabled[1].name: Required value",
        'profiles[0].plugins.filter.enabled[2].name: Duplicate value: "NodeName"',
        "profiles[0].plugins.filter.disabled[0].name: Required value",
    ]


def test_removed_plugins_are_invalid_in_v1() -> None:
    errs = errors_of(
        """
        profiles:
        - plugins: {filter: {enabled: [{name: EBSLimits}]}}
          pluginConfig: [{name: GCEPDLimits}]
        """
    )
    assert errs[0].startswith(
        'profiles[0].plugins.filter.enabled[0]: Invalid value: "EBSLimits": was invalid in'
    )
    assert errs[1].startswith('profiles[0].pluginConfig[0]: Invalid value: "GCEPDLimits": was invalid in')


def test_unknown_plugins_checked_against_registry() -> None:
    body = """
    profiles:
    - plugins:
        score:
          enabled: [{name: ImageLocality}, {name: NodeAfinity, weight: 2}]
          disabled: [{name: NotInstalled}]
        multiPoint: {enabled: [{name: Bogus}]}
    """
    errs = errors_of(body, REGISTRY)
    assert len(errs) == 2
    assert errs[0].startswith(
        'profiles[0].plugins.score.enabled[1].name: Invalid value: "NodeAfinity": no plugin is registered'
    )
    assert errs[1].startswith('profiles[0].plugins.multiPoint.enabled[0].name: Invalid value: "Bogus"')
    # Without a registry names are not checked (the caller validates them later).
    parse_config(HEADER + textwrap.dedent(body))


def test_plugin_config_rules() -> None:
    body = """
    profiles:
    - pluginConfig:
      - {name: NodeAffinity, args: {addedAffinity: {}}}
      - {name: NodeAffinity}
      - {name: Nope, args: {}}
      - {name: NodeResourcesFit, args: {kind: NodeAffinityArgs}}
      - {name: ImageLocality, args: {apiVersion: kubescheduler.config.k8s.io/v1beta3}}
      - {args: {}}
    """
    errs = errors_of(body, REGISTRY)
    assert errs == [
        'profiles[0].pluginConfig[3].args.kind: Invalid value: "NodeAffinityArgs": '
        'has to match plugin args: expected "NodeResourcesFitArgs"',
        "profiles[0].pluginConfig[4].args.apiVersion: "
        'Unsupported value: "kubescheduler.config.k8s.io/v1beta3": '
        f'supported values: "{API_VERSION}"',
        'profiles[0].pluginConfig[1]: Duplicate value: "NodeAffinity"',
        # pluginConfig[2] (Nope): kube-scheduler ignores args of plugins it does not have; so do we.
        "profiles[0].pluginConfig[5].name: Required value",
    ]


def test_all_errors_are_reported_together() -> None:
    body = """
    parallelism: -1
    unknownThing: 1
    podInitialBackoffSeconds: 0
    leaderElection: {resourceLock: configmaps}
    profiles:
    - schedulerName: a
      plugins: {score: {enabled: [{name: ImageLocality, weight: -1}]}}
    - schedulerName: a
    """
    with pytest.raises(ConfigError) as info:
        parse_config(HEADER + textwrap.dedent(body), registry=REGISTRY)
    errs = info.value.errors
    assert len(errs) == 6, errs
    message = str(info.value)
    assert message.startswith("invalid KubeSchedulerConfiguration (6 errors):")
    for fragment in (
        'unknown field "unknownThing"',
        "parallelism: Invalid value: -1",
        "podInitialBackoffSeconds: Invalid value: 0",
        'leaderElection.resourceLock: Invalid value: "configmaps"',
        "profiles[0].plugins.score.enabled[0].weight: Invalid value: -1",
        'profiles[1].schedulerName: Duplicate value: "a"',
    ):
        assert fragment in message
