# ruff: noqa: E501  (one case a line)
"""``--feature-gates``: upstream's (v1.37.2) parsing, locks and dependency checks, and refusal of gates
not implemented."""

from __future__ import annotations

import re

import pytest

from scheduler.app.cli import build_parser
from scheduler.features import (
    ALWAYS_DEFAULT,
    KNOWN_GATES,
    NOT_IMPLEMENTED,
    FeatureGateError,
    parse_feature_gates,
)


def test_defaults_are_upstreams_v1_37_defaults() -> None:
    gates = parse_feature_gates("")
    # GenericWorkload is beta but off; GangScheduling follows it.
    assert not gates.generic_workload and not gates.gang_scheduling
    # Beta and on since v1.37.
    assert gates.storage_capacity_scoring and gates.volume_limit_scaling
    # GA and locked on since v1.37.
    assert gates.enabled("NodeDeclaredFeatures")
    # Beta and on since v1.35.
    assert gates.nominated_node_name_for_expectation and gates.opportunistic_batching
    # Beta: on since v1.33 (async preemption, popping from backoffQ), off (async API calls).
    assert gates.enabled("SchedulerAsyncPreemption") and gates.enabled("SchedulerPopFromBackoffQ")
    assert not gates.enabled("SchedulerAsyncAPICalls")
    # Everything py-scheduler refuses is off by default, so the defaults always start.
    assert not any(KNOWN_GATES[name].default for name in NOT_IMPLEMENTED)


def test_generic_workload_alone_turns_gang_scheduling_on() -> None:
    """v1.37 absorbed GangScheduling into GenericWorkload (applyGangScheduling under GenericWorkload)."""
    gates = parse_feature_gates("GenericWorkload=TRUE")
    assert gates.generic_workload and gates.gang_scheduling


def test_beta_gates_turn_off() -> None:
    gates = parse_feature_gates(
        "StorageCapacityScoring=false,VolumeLimitScaling=false,NominatedNodeNameForExpectation=false,"
        "OpportunisticBatching=false"
    )
    assert not gates.storage_capacity_scoring and not gates.volume_limit_scaling
    assert not gates.nominated_node_name_for_expectation and not gates.opportunistic_batching
    assert parse_feature_gates("OpportunisticBatching=true").opportunistic_batching


def test_gates_py_scheduler_always_behaves_as_accept_their_default() -> None:
    """A user who spells out upstream's default of these gates gets what they asked for."""
    text = "SchedulerAsyncPreemption=true,SchedulerPopFromBackoffQ=true,SchedulerAsyncAPICalls=false"
    gates = parse_feature_gates(text)
    assert {name: gates.enabled(name) for name in ALWAYS_DEFAULT} == {
        name: KNOWN_GATES[name].default for name in ALWAYS_DEFAULT
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("GangScheduling=true", "unrecognized feature gate: GangScheduling (absorbed by GenericWorkload in v1.37)"),
        ("WorkloadAwarePreemption=true", "unrecognized feature gate: WorkloadAwarePreemption (absorbed by GenericWorkload"),
        ("Nope=true", "unrecognized feature gate: Nope"),
        ("GenericWorkload", "missing bool value for GenericWorkload"),
        ("GenericWorkload=yes", "invalid value of GenericWorkload=yes"),
        ("NodeDeclaredFeatures=false", "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true"),
        ("TopologyAwareWorkloadScheduling=true", "TopologyAwareWorkloadScheduling is enabled, but depends on features "
         "that are disabled: [GenericWorkload]"),
        ("GenericWorkload=true,CompositePodGroup=true", "CompositePodGroup is enabled, but depends on features that "
         "are disabled: [TopologyAwareWorkloadScheduling]"),
        ("GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
         "feature gate TopologyAwareWorkloadScheduling is not supported by py-scheduler"),
        ("GenericWorkload=true,PodGroupPreemptionPolicy=true",
         "feature gate PodGroupPreemptionPolicy is not supported by py-scheduler"),
        ("InterPodAffinityHostnameFastPath=true",
         "feature gate InterPodAffinityHostnameFastPath is not supported by py-scheduler"),
        ("InPlacePodVerticalScalingSchedulerPreemption=true",
         "feature gate InPlacePodVerticalScalingSchedulerPreemption is not supported by py-scheduler"),
        ("SchedulerPreQueueingHints=true", "feature gate SchedulerPreQueueingHints is not supported by py-scheduler"),
        ("DRADeviceCompatibilityGroups=true",
         "feature gate DRADeviceCompatibilityGroups is not supported by py-scheduler"),
        ("SchedulerAsyncPreemption=false",
         "feature gate SchedulerAsyncPreemption=false is not supported: py-scheduler always behaves as SchedulerAsyncPreemption=true"),
        ("SchedulerPopFromBackoffQ=false",
         "feature gate SchedulerPopFromBackoffQ=false is not supported: py-scheduler always behaves as SchedulerPopFromBackoffQ=true"),
        ("SchedulerAsyncAPICalls=true",
         "feature gate SchedulerAsyncAPICalls=true is not supported: py-scheduler always behaves as SchedulerAsyncAPICalls=false"),
    ],
)  # fmt: skip
def test_bad_gates_stop_start_up_with_upstreams_words(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError, match="^" + re.escape(message)):
        parse_feature_gates(text)


def test_locked_gate_may_be_set_to_its_default() -> None:
    assert parse_feature_gates("NodeDeclaredFeatures=true").enabled("NodeDeclaredFeatures")


def test_the_flag_parses_and_exits_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["--feature-gates=GenericWorkload=true"])
    assert args.feature_gates.gang_scheduling
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--feature-gates=GangScheduling=true"])
    assert exc.value.code == 1
    assert "unrecognized feature gate: GangScheduling" in capsys.readouterr().err


@pytest.mark.parametrize(
    "gate",
    ["SchedulerAsyncPreemption=false", "SchedulerPopFromBackoffQ=false", "SchedulerAsyncAPICalls=true"],
)
def test_a_value_py_scheduler_cannot_honour_stops_start_up_with_one_line(
    capsys: pytest.CaptureFixture[str], gate: str
) -> None:
    name, _, value = gate.partition("=")
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([f"--feature-gates={gate}"])
    assert exc.value.code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert f"feature gate {gate} is not supported" in lines[0]
    assert f"always behaves as {name}={str(value == 'false').lower()}" in lines[0]
