"""Kubernetes resource quantities (``k8s.io/apimachinery/pkg/api/resource/quantity.go``) as integers.

Only what scheduling needs: the exact value, rounded up as upstream's ``Value()``/``MilliValue()`` do.
Results are memoised by string because a cluster repeats the same few dozen quantities endlessly.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exponent>[eE][+-]?\d+)|(?P<decimal>[numkMGTPE]?))$"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}


class QuantityError(ValueError):
    """A quantity string that Kubernetes would not accept."""


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


# typed: True == 1 == 1.0 as cache keys, and a boolean must be refused even after the number was read.
@lru_cache(maxsize=4096, typed=True)
def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity. Raises QuantityError naming the bad input."""
    if isinstance(text, bool):
        raise QuantityError(f"quantity {text!r} is not a number")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    match = _QUANTITY.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}"
        )
    number = Fraction(match["number"])
    if match["binary"]:
        return number * _BINARY[match["binary"]]
    if match["exponent"]:
        return number * Fraction(10) ** int(match["exponent"][1:])
    return number * _DECIMAL[match["decimal"] or ""]


def milli_value(text: str | int | float) -> int:
    """Like upstream ``MilliValue()``: thousandths, rounded up (``100m`` -> 100, ``0.5`` -> 500)."""
    return _ceil(parse_quantity(text) * 1000)


def value(text: str | int | float) -> int:
    """Like upstream ``Value()``: whole units, rounded up (``1Gi`` -> 1073741824)."""
    return _ceil(parse_quantity(text))
