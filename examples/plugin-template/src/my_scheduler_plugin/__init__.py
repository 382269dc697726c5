"""TeamNodes: pods labelled ``team=<name>`` run only on nodes of their team or on shared nodes, and
prefer their team's own nodes."""

from my_scheduler_plugin.plugin import TeamNodes

__all__ = ["TeamNodes"]
