"""``BuildBrokenLinearFunction`` (``pkg/scheduler/framework/plugins/helper/shape_score.go``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduler.plugins.helper.gomath import go_div


def broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """A piecewise-linear function through ``(utilization, score)`` points sorted by utilization.

    Below the first point it is the first score, above the last the last score; in between it
    interpolates with Go's truncating integer division (a decreasing shape makes it negative).
    """
    points = tuple(shape)

    def evaluate(p: int) -> int:
        for i, (utilization, score) in enumerate(points):
            if p <= utilization:
                if i == 0:
                    return score
                prev_utilization, prev_score = points[i - 1]
                return prev_score + go_div(
                    (score - prev_score) * (p - prev_utilization), utilization - prev_utilization
                )
        return points[-1][1]

    return evaluate
