"""``DefaultNormalizeScore`` (``pkg/scheduler/framework/plugins/helper/normalize_score.go``)."""

from __future__ import annotations

import numpy as np

from scheduler.framework.columns import IntArray, int_max
from scheduler.framework.types import NodeScore


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """Scales scores to [0, max_priority] by the highest one; ``reverse`` flips them (fewest is best)."""
    max_count = 0
    for entry in scores:
        max_count = max(max_count, entry.score)
    if max_count == 0:
        if reverse:
            for entry in scores:
                entry.score = max_priority
        return
    for entry in scores:
        # Scores are non-negative here, so floor division equals Go's truncation.
        score = max_priority * entry.score // max_count
        entry.score = max_priority - score if reverse else score


def default_normalize_score_array(max_priority: int, reverse: bool, scores: IntArray) -> IntArray:
    """``default_normalize_score`` over an array of scores; returns the normalised array."""
    max_count = max(0, int_max(scores)) if len(scores) else 0
    if max_count == 0:
        if reverse:
            return np.full(len(scores), max_priority, dtype=np.int64)
        return scores
    normalised: IntArray = max_priority * scores // max_count
    if reverse:
        normalised = max_priority - normalised
    return normalised
