"""API timestamps (RFC 3339, as metav1.Time serialises) as Unix seconds."""

from __future__ import annotations

import datetime
from typing import Any


def rfc3339_seconds(value: Any) -> float | None:
    """``value`` ("2026-01-02T03:04:05Z") as Unix seconds; None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
