"""``BatchCache.window_scores``: a cycle that replayed its signature's PreScore state takes its totals
from kept weighted sums and kept normalised windows, and must give the totals, the score breakdown
and the placements of the usual path (raw scores per plugin, then ``Framework.run_score_array``).

The basic workload's shape (identical nodes, identical pods, each placed pod in the cache before the
next), with a node gaining and losing a PreferNoSchedule taint: TaintToleration's raw score is the same
on every node (its normalised window is kept), then differs on one (normalised afresh), then is the
same again only once that node is scored anew.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from scheduler.cache import SchedulerCache
from scheduler.cycle import batching
from scheduler.cycle.batching import BatchCache
from tests.unit.cycle.test_opportunistic_batching import _Side
from tests.unit.fakes import make_node, make_pod

NODES = 40


def _node(index: int, *, tainted: bool = False) -> dict[str, Any]:
    taints = [{"key": "slow", "effect": "PreferNoSchedule"}] if tainted else []
    node = make_node(f"n{index:03d}", cpu="8", memory="32Gi", taints=taints)
    node["metadata"].update(uid=f"n{index}", resourceVersion="1")
    return node


def _sides() -> tuple[list[SchedulerCache], list[_Side]]:
    caches = [SchedulerCache(), SchedulerCache()]
    for cache in caches:
        for index in range(NODES):
            cache.add_node(_node(index))
    return caches, [_Side(caches[0], False, None), _Side(caches[1], True, None)]


def test_window_scores_give_the_usual_totals_breakdown_and_placements(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answered: list[bool] = []
    window_scores = BatchCache.window_scores

    def spy(self: BatchCache, *args: Any) -> Any:
        totals = window_scores(self, *args)
        answered.append(totals is not None)
        return totals

    monkeypatch.setattr(BatchCache, "window_scores", spy)
    caches, sides = _sides()
    for step in range(120):
        if step in (30, 70):
            # The taint comes (step 30) and goes (step 70) on one node; its resourceVersion moves on.
            fresh = _node(5, tainted=step == 30)
            fresh["metadata"]["resourceVersion"] = str(step)
            for cache in caches:
                cache.update_node(None, copy.deepcopy(fresh))
        pod = make_pod(f"p{step}", cpu="100m", memory="128Mi", uid=f"u{step}")
        pod["metadata"]["resourceVersion"] = "1"
        answers = [side.schedule(copy.deepcopy(pod)) for side in sides]
        assert answers[0] == answers[1], (step, answers)
        for cache in caches:
            cache.add_pod(copy.deepcopy(pod | {"spec": {**pod["spec"], "nodeName": answers[0][0]}}))
    # Every hit after the first replay scored through the window (the test cannot pass by the
    # usual path alone), and the tainted node kept out of the memo while it differed.
    assert len(answered) >= 110
    assert all(answered)
    batch = sides[1].algorithm.batch
    assert batch is not None and batch.stats.hits == 119


def test_kept_normalised_windows_are_read_only_and_reused() -> None:
    _, sides = _sides()
    side = sides[1]
    for step in range(6):
        pod = make_pod(f"p{step}", cpu="100m", memory="128Mi", uid=f"u{step}")
        pod["metadata"]["resourceVersion"] = "1"
        side.schedule(pod)
        side.cache.add_pod(copy.deepcopy(pod))
    pre = side.algorithm._pre_state
    assert pre is not None and pre.normalized
    for raw, normalized, weighted in pre.normalized.values():
        for array in (raw, normalized, weighted):
            assert not array.flags.writeable
        # One raw score on every node of the window.
        assert len(np.unique(raw)) == 1


def test_the_memo_of_normalised_windows_stays_bounded_as_windows_shrink() -> None:
    # Each pod fills a node, so every cycle's window is one node shorter: a new memo key each time.
    _, sides = _sides()
    side = sides[1]
    sizes: set[int] = set()
    for step in range(NODES - 1):
        pod = make_pod(f"p{step}", cpu="8", memory="1Gi", uid=f"u{step}")
        pod["metadata"]["resourceVersion"] = "1"
        node, *_ = side.schedule(pod)
        side.cache.add_pod(copy.deepcopy(pod | {"spec": {**pod["spec"], "nodeName": node}}))
        pre = side.algorithm._pre_state
        if pre is not None:
            sizes.update(size for _, size, _ in pre.normalized)
            assert len(pre.normalized) <= batching._NORMALIZED_KEPT
    # The memo did see more window lengths than it may keep.
    assert len(sizes) > batching._NORMALIZED_KEPT
