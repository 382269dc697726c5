"""CoschedulingArgs, as scheduler-plugins defines and defaults them (``apis/config/v1``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.plugins.helper.args import ArgsReader

NAME = "Coscheduling"

DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0
DEFAULT_POD_GROUP_REJECT_PERCENTAGE = 10


@dataclass(frozen=True, slots=True)
class CoschedulingArgs:
    # How long the members of a group wait at Permit for the rest (a PodGroup's
    # scheduleTimeoutSeconds overrides it).
    permit_waiting_time_seconds: int = DEFAULT_PERMIT_WAITING_TIME_SECONDS
    # After a group fails with all its members present, none of it is tried for this long (0: off).
    pod_group_backoff_seconds: int = DEFAULT_POD_GROUP_BACKOFF_SECONDS
    # PostFilter releases the group only when more than this share of minMember is still unassigned.
    pod_group_reject_percentage: int = DEFAULT_POD_GROUP_REJECT_PERCENTAGE


def parse_args(raw: Mapping[str, Any] | None) -> CoschedulingArgs:
    reader = ArgsReader(NAME)
    args = reader.top(
        raw,
        "CoschedulingArgs",
        ("permitWaitingTimeSeconds", "podGroupBackoffSeconds", "podGroupRejectPercentage"),
    )
    permit = reader.integer(
        args.get("permitWaitingTimeSeconds"), "permitWaitingTimeSeconds", DEFAULT_PERMIT_WAITING_TIME_SECONDS
    )
    backoff = reader.integer(
        args.get("podGroupBackoffSeconds"), "podGroupBackoffSeconds", DEFAULT_POD_GROUP_BACKOFF_SECONDS
    )
    reject = reader.integer(
        args.get("podGroupRejectPercentage"), "podGroupRejectPercentage", DEFAULT_POD_GROUP_REJECT_PERCENTAGE
    )
    # scheduler-plugins' ValidateCoschedulingArgs.
    if permit < 0:
        raise reader.error(
            "permitWaitingTimeSeconds", f"Invalid value: {permit}: must be greater than or equal to 0"
        )
    if backoff < 0:
        raise reader.error(
            "podGroupBackoffSeconds", f"Invalid value: {backoff}: must be greater than or equal to 0"
        )
    if not 0 <= reject <= 100:
        raise reader.error("podGroupRejectPercentage", f"Invalid value: {reject}: must be between 0 and 100")
    return CoschedulingArgs(permit, backoff, reject)
