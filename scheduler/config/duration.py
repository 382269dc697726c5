"""Go ``time.Duration`` strings, as ``metav1.Duration`` reads and writes them ("15s", "1m30s", "100ms")."""

from __future__ import annotations

import re

_UNITS_NS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign, what Go prints
    "\u03bcs": 1_000,  # Greek mu, also accepted by Go
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_TERM = re.compile(r"(\d*)(?:\.(\d*))?([a-zA-Z\u00b5\u03bc]+)")
_NS_PER_S = 1_000_000_000
# Go's Duration is int64 nanoseconds (about 292 years); ParseDuration refuses anything longer.
_MAX_NS = (1 << 63) - 1


def parse_duration(text: str) -> float:
    """Seconds in ``text`` (Go ``time.ParseDuration`` syntax). Raises ValueError with Go's wording."""
    original = text
    sign = 1
    if text and text[0] in "+-":
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise ValueError(f'time: invalid duration "{original}"')
    total_ns = 0
    pos = 0
    while pos < len(text):
        match = _TERM.match(text, pos)
        if match is None or (not match.group(1) and not match.group(2)):
            if match is None and text[pos:].strip("0123456789.") == "":
                raise ValueError(f'time: missing unit in duration "{original}"')
            raise ValueError(f'time: invalid duration "{original}"')
        whole, frac, unit = match.group(1), match.group(2) or "", match.group(3)
        scale = _UNITS_NS.get(unit)
        if scale is None:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{original}"')
        total_ns += int(whole or "0") * scale
        if frac:
            total_ns += int(frac) * scale // 10 ** len(frac)
        pos = match.end()
        if total_ns > _MAX_NS + (sign < 0):
            raise ValueError(f'time: invalid duration "{original}"')
    return sign * total_ns / _NS_PER_S


def _with_fraction(value: int, unit: int) -> str:
    whole, rest = divmod(value, unit)
    if rest == 0:
        return str(whole)
    digits = str(rest).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def format_duration(seconds: float) -> str:
    """Go's ``Duration.String()``: "0s", "100ms", "15s", "1m30s", "1h0m0s"."""
    ns = round(seconds * _NS_PER_S)
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns == 0:
        return "0s"
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_with_fraction(ns, 1_000)}\u00b5s"
    if ns < _NS_PER_S:
        return f"{sign}{_with_fraction(ns, 1_000_000)}ms"
    hours, rest = divmod(ns, 3600 * _NS_PER_S)
    minutes, rest = divmod(rest, 60 * _NS_PER_S)
    out = f"{_with_fraction(rest, _NS_PER_S)}s"
    if hours or minutes:
        out = f"{minutes}m{out}"
    if hours:
        out = f"{hours}h{out}"
    return sign + out
