"""``NominatedPodInfos.nominated_pods_for_node`` (asked for every node a dry run or a Filter loop
looks at) gives what reading the Nominator afresh gives, whatever happened to the node: never
nominated to, nominations added, moved, cleared, withdrawn, the pod gone. And its answer for a node
stays the same object until that node's nominations change (what kept verdicts compare)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.cache import PodInfoCache
from scheduler.preemption.nominated import NominatedPodInfos
from scheduling_queue import Nominator

NODES = [f"n{i}" for i in range(8)]


def _pod(i: int, version: int, node: str = "") -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"p{i}",
            "namespace": "default",
            "uid": f"u{i}",
            "resourceVersion": str(version),
        },
        "spec": {"containers": [{"name": "c"}], "priority": i % 3},
        "status": {"nominatedNodeName": node} if node else {},
    }


@pytest.mark.parametrize("seed", range(40))
def test_answers_equal_a_fresh_read_of_the_nominator(seed: int) -> None:
    rng = random.Random(seed)
    nominator = Nominator()
    infos = NominatedPodInfos(nominator, PodInfoCache())
    current: dict[int, dict[str, Any]] = {}
    version = 1
    answered: dict[str, tuple[int, object]] = {}
    for _ in range(200):
        i = rng.randrange(12)
        version += 1
        action = rng.random()
        if action < 0.4:
            pod = _pod(i, version, rng.choice(NODES))
            nominator.add_nominated_pod(pod)
            current[i] = pod
        elif action < 0.55 and i in current:
            nominator.add_nominated_pod(current[i], "")  # cleared in memory (a lower preemptor's)
        elif action < 0.7 and i in current:
            new = _pod(i, version, rng.choice(["", *NODES]))
            nominator.update_nominated_pod(current[i], new)
            current[i] = new
        elif action < 0.8 and i in current:
            nominator.withdraw(current[i], rng.choice(NODES))
        elif action < 0.9 and i in current:
            nominator.forget(current.pop(i))
        for node in rng.sample(NODES, 4):
            got = infos.nominated_pods_for_node(node)
            plain = [p["metadata"]["uid"] for p in nominator.nominated_pods_for_node(node)]
            assert [p.uid for p in got] == plain
            # The same object while the node's nominations stay.
            node_version = nominator.node_version(node)
            before = answered.get(node)
            if before is not None and before[0] == node_version and got:
                assert got is before[1]
            answered[node] = (node_version, got)
    assert nominator.node_version("never") == 0
    assert infos.nominated_pods_for_node("never") == ()
