"""Coscheduling (gang scheduling with scheduler-plugins' PodGroup CRD)."""

from scheduler.plugins.coscheduling.args import NAME, CoschedulingArgs, parse_args
from scheduler.plugins.coscheduling.plugin import POD_GROUP_LABEL, PODS_TO_ACTIVATE_KEY, Coscheduling

__all__ = [
    "NAME",
    "PODS_TO_ACTIVATE_KEY",
    "POD_GROUP_LABEL",
    "Coscheduling",
    "CoschedulingArgs",
    "parse_args",
]
