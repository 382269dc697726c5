"""API timestamps (RFC 3339, as metav1.Time serialises) as Unix seconds."""

from __future__ import annotations

import datetime
import functools
from typing import Any


def rfc3339_seconds(value: Any) -> float | None:
    """``value`` ("2026-01-02T03:04:05Z") as Unix seconds; None when absent, not a string or malformed."""
    if not isinstance(value, str) or not value:
        return None
    return _parse(value)


@functools.lru_cache(maxsize=8192)
def _parse(value: str) -> float | None:
    # Memoised: a preemption dry run orders every node's lower-priority pods by start time and
    # Coscheduling's QueueSort reads two groups' creation stamps per comparison; pods and groups made in
    # the same second share the string, so most calls are hits.
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
