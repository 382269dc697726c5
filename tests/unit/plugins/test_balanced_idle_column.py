"""The idle-balance column of the default resources (cpu, memory) is computed without node_vectors'
lists: it must give balanced_resource_score's value for every node, zero and exceeded capacities too."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from scheduler.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balanced_resource_score,
)


def _amounts(cpu: int, memory: int) -> SimpleNamespace:
    return SimpleNamespace(milli_cpu=cpu, memory=memory, ephemeral_storage=0, scalar={})


def test_default_pair_column_is_balanced_resource_score() -> None:
    plugin = NodeResourcesBalancedAllocation()
    column = plugin._idle
    assert column is not None
    scorer = plugin.scorer
    assert [spec.name for spec in scorer.resources] == ["cpu", "memory"]
    generic = 0
    rng = random.Random(4)
    for _ in range(5000):
        capacity = (rng.choice([0, 1, 500, 4000, 16000, 10**20]), rng.choice([0, 1, 2**30, 64 * 2**30]))
        used = tuple(rng.choice([0, 1, c // 3, c // 2, c, c + 7, 3 * c + 1]) for c in capacity)
        info: Any = SimpleNamespace(
            requested=_amounts(*used),
            non_zero_requested=_amounts(0, 0),
            allocatable=_amounts(*capacity),
        )
        want = balanced_resource_score(*scorer.node_vectors(info))
        assert column.compute(info) == want
        generic += want not in (0, 100)
    assert generic
