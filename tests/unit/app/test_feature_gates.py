"""``--feature-gates``: upstream's parsing and dependency checks, and refusal of gates not implemented."""

from __future__ import annotations

import pytest

from scheduler.app.cli import build_parser
from scheduler.features import FeatureGateError, parse_feature_gates


def test_defaults_are_upstream_alpha_defaults_off() -> None:
    gates = parse_feature_gates("")
    assert not gates.generic_workload and not gates.gang_scheduling


def test_gang_scheduling_with_generic_workload() -> None:
    gates = parse_feature_gates("GenericWorkload=true, GangScheduling=TRUE")
    assert gates.generic_workload and gates.gang_scheduling


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("GangScheduling=true", "GangScheduling is enabled, but depends on features that are disabled: "
         "[GenericWorkload]"),
        ("Nope=true", "unrecognized feature gate: Nope"),
        ("GenericWorkload", "missing bool value for GenericWorkload"),
        ("GenericWorkload=yes", "invalid value of GenericWorkload=yes"),
        ("GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
         "feature gate TopologyAwareWorkloadScheduling is not supported by py-scheduler"),
        ("GenericWorkload=true,GangScheduling=true,WorkloadAwarePreemption=true",
         "feature gate WorkloadAwarePreemption is not supported by py-scheduler"),
    ],
)  # fmt: skip
def test_bad_gates_stop_start_up_with_upstreams_words(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        parse_feature_gates(text)


def test_the_flag_parses_and_exits_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["--feature-gates=GenericWorkload=true,GangScheduling=true"])
    assert args.feature_gates.gang_scheduling
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--feature-gates=GangScheduling=true"])
    assert exc.value.code == 1
    assert "depends on features that are disabled" in capsys.readouterr().err
