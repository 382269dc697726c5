"""``pick_one_node_for_preemption`` picks what upstream's pickOneNodeForPreemption, written out criterion
by criterion (``_plain``), picks: random candidates that tie often on each criterion (victims all
started: an unstarted one reads "now", which no two runs share)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import pytest

from scheduler.framework.types import PodInfo
from scheduler.preemption.evaluator import Candidate, pick_one_node_for_preemption
from scheduler.preemption.pods import earliest_start_time
from scheduler.util.timestamps import rfc3339_seconds
from tests.unit.preemption.test_preemption import mk

_SHIFT = 2**31


def _plain(candidates: Sequence[Candidate]) -> Candidate | None:
    if not candidates:
        return None

    def latest_start(c: Candidate) -> float:
        earliest = earliest_start_time(c.victims)
        return -math.inf if earliest is None else earliest

    score_funcs: list[Callable[[Candidate], float]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(v.priority + _SHIFT for v in c.victims),
        lambda c: -len(c.victims),
        latest_start,
    ]
    remaining = list(candidates)
    for score in score_funcs:
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            return remaining[0]
    return remaining[0]


def _victim(rng: random.Random, name: str) -> PodInfo:
    return PodInfo(
        mk(name, rng.choice([-5, 0, 1, 3]), {"cpu": "100m"}, node_name="n", start=rng.choice([0, 10, 20]))
    )


@pytest.mark.parametrize("seed", range(300))
def test_the_same_candidate_as_the_criteria_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    candidates = []
    for i in range(rng.randint(1, 30)):
        victims = sorted(
            (_victim(rng, f"v{i}-{j}") for j in range(rng.randint(1, 4))), key=lambda v: -v.priority
        )
        candidates.append(Candidate(f"node{i}", tuple(victims), rng.choice([0, 0, 0, 1, 2])))
    assert pick_one_node_for_preemption(candidates) is _plain(candidates)


def test_no_candidate() -> None:
    assert pick_one_node_for_preemption([]) is None


def _plain_earliest(victims: Sequence[PodInfo]) -> float | None:
    """Upstream's GetEarliestPodStartTime, step by step."""
    if not victims:
        return None
    max_priority = victims[0].priority
    earliest = rfc3339_seconds(victims[0].pod["status"]["startTime"])
    for pod in victims:
        started = rfc3339_seconds(pod.pod["status"]["startTime"])
        assert earliest is not None and started is not None
        if pod.priority == max_priority:
            earliest = min(earliest, started)
        elif pod.priority > max_priority:
            max_priority = pod.priority
            earliest = started
    return earliest


@pytest.mark.parametrize("seed", range(200))
def test_earliest_start_time_as_upstream_reads_it(seed: int) -> None:
    """Victims in any order (not only most important first), priorities and start times that tie."""
    rng = random.Random(seed)
    victims = [_victim(rng, f"v{j}") for j in range(rng.randint(0, 6))]
    assert earliest_start_time(victims) == _plain_earliest(victims)
