"""int_max, the largest value of an integer array found by argmax, equals max() on any array."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.framework.columns import int_max


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), min_size=1, max_size=600))
def test_int_max_equals_max(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    assert int_max(array) == max(values)
    assert type(int_max(array)) is int


def test_int_max_of_unsigned_views_reads_wrapped_negatives_as_large() -> None:
    # _out_of_range's trick: below-range scores wrap to huge unsigned values.
    array = np.array([3, -1, 7], dtype=np.int64).view(np.uint64)
    assert int_max(array) == 2**64 - 1  # type: ignore[arg-type]
