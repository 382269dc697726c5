"""The beta distribution LowRiskOverCommitment fits to a node's measured load (scheduler-plugins v0.34.7
``pkg/trimaran/lowriskovercommitment/beta.go``): moments matched to the measured mean and deviation, and
the probability that the load stays at or below a threshold.

The regularized incomplete beta function I_x(a, b) is evaluated by its continued fraction (modified
Lentz), on the side of the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where it converges fast; upstream
calls gonum's ``mathext.RegIncBeta``. Both agree to about 1e-14, far below what a score rounded to an
integer out of 100 can show.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

MAX_VARIANCE_ALLOWANCE = 0.99
_EPS = 1e-16
_TINY = 1e-300
_MAX_ITERATIONS = 10_000


def _continued_fraction(x: float, a: float, b: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = _TINY if abs(d) < _TINY else d
    d = 1.0 / d
    h = d
    for m in range(1, _MAX_ITERATIONS + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = _TINY if abs(d) < _TINY else d
        c = 1.0 + aa / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = _TINY if abs(d) < _TINY else d
        c = 1.0 + aa / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h


def regularized_incomplete(x: float, a: float, b: float) -> float:
    """I_x(a, b) for a, b > 0 and x in [0, 1]; NaN outside (upstream's ``RegularizedIncomplete``)."""
    if not (a > 0 and b > 0 and 0 <= x <= 1) or math.isinf(a) or math.isinf(b):
        return math.nan
    if x == 0:
        return 0.0
    if x == 1:
        return 1.0
    try:
        log_front = (
            math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
        )
    except (ValueError, OverflowError):
        return math.nan
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _continued_fraction(x, a, b) / a
    return 1.0 - front * _continued_fraction(1.0 - x, b, a) / b


@dataclass(slots=True)
class BetaDistribution:
    alpha: float
    beta: float

    def cdf(self, x: float) -> float:
        """P(X <= x); 0 where the function is undefined (upstream's ``DistributionFunction``)."""
        p = regularized_incomplete(x, self.alpha, self.beta)
        if math.isnan(p) or p < 0 or p > 1:
            return 0.0
        return p


def match_moments(m1: float, m2: float) -> BetaDistribution | None:
    """The beta distribution with first moment ``m1`` and second ``m2``, or None when none has them."""
    variance = m2 - m1 * m1
    if m1 < 0 or m1 > 1 or variance < 0 or variance >= m1 * (1 - m1):
        return None
    ratio = m1 * (1 - m1) / variance if variance > 0 else math.inf
    temp = max(ratio - 1, sys.float_info.min * sys.float_info.epsilon)
    return BetaDistribution(m1 * temp, (1 - m1) * temp)


def max_variance(m1: float) -> float:
    """The largest variance a beta distribution of mean ``m1`` can have (``GetMaxVariance``)."""
    return m1 * (1 - m1) if 0 < m1 < 1 else 0.0


def probability_at_most(mu: float, sigma: float, threshold: float) -> tuple[float, BetaDistribution | None]:
    """P(load <= threshold) for a beta distribution of mean ``mu`` and deviation ``sigma``, and that
    distribution when one was fitted (``ComputeProbability``)."""
    if mu == 0 or (sigma == 0 and mu <= threshold):
        return 1.0, None
    if sigma == 0 and mu > threshold:
        return 0.0, None
    dist = match_moments(mu, sigma * sigma + mu * mu)
    if dist is None:
        return 0.0, None
    return dist.cdf(threshold), dist
