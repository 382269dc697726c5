"""Go's integer and rounding semantics, so scores come out exactly as kube-scheduler's."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt


def go_div(a: int, b: int) -> int:
    """Go's ``a / b`` on integers: truncates toward zero (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_round(x: float) -> int:
    """Go's ``math.Round``: halves round away from zero (Python's ``round`` rounds them to even)."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def go_div_array(numerator: npt.NDArray[np.int64], denominator: int) -> npt.NDArray[np.int64]:
    """``go_div`` over an int64 array, for a positive ``denominator``."""
    quotient: npt.NDArray[np.int64] = np.abs(numerator) // denominator * np.sign(numerator)
    return quotient
