"""Extender metrics. kube-scheduler v1.36.3 has none for extenders (only the ``prioritizing_extender``
label of ``scheduler_goroutines``), so these are py-scheduler's own, named like the framework's:

- ``scheduler_extender_duration_seconds{extender,verb,status}``: one HTTP call; ``status`` is
  ``Success`` or ``Error`` (as ``scheduler_plugin_execution_duration_seconds`` spells codes).
- ``scheduler_extender_errors_total{extender,verb,reason}``: failed calls by ``reason``: ``timeout``,
  ``connection``, ``http_status``, ``decode`` or ``extender`` (the extender answered with an Error).

``extender`` is the urlPrefix (upstream's ``Name()``); ``verb`` is the role (filter, prioritize,
preempt, bind), not the configured path, so dashboards work whatever the verbs are called.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Histogram

from scheduler.metrics import exponential_buckets

SUCCESS: Final = "Success"
ERROR: Final = "Error"

EXTENDER_DURATION = Histogram(
    "scheduler_extender_duration_seconds",
    "Duration of one scheduler extender HTTP call, by extender, verb and status.",
    ["extender", "verb", "status"],
    buckets=exponential_buckets(0.0005, 2, 16),
)
EXTENDER_ERRORS = Counter(
    "scheduler_extender_errors",
    "Number of failed scheduler extender calls, by extender, verb and reason.",
    ["extender", "verb", "reason"],
)


def observe_call(extender: str, verb: str, status: str, seconds: float) -> None:
    EXTENDER_DURATION.labels(extender, verb, status).observe(seconds)


def count_error(extender: str, verb: str, reason: str) -> None:
    EXTENDER_ERRORS.labels(extender, verb, reason).inc()
