"""``PreemptionExecutor.is_pod_running_preemption`` (asked by DefaultPreemption's PreEnqueue for every
held preemptor on every victim's deletion) answers as the plain rule does, and forgets a settled run
as it does.

Oracle: the rule written out step by step (``_plain``): the run of the pod's uid (or namespace/name)
holds while its last victim is not chosen yet or the cache still shows it running (not deleted, or
being removed with grace 0 and no finalizers, same uid); a finished run that is settling holds while
any acknowledged deletion is still shown so, and is forgotten on the first ask that finds none.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.framework.types import PodInfo
from scheduler.preemption.executor import PreemptionExecutor, _Run


def _pod(name: str, uid: str, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": uid, **meta},
        "spec": {"containers": [{"name": "c"}]},
    }


def _victim_state(rng: random.Random, name: str, uid: str) -> dict[str, Any] | None:
    """What the cache may show of a victim: gone, running, terminating, removed at grace 0 (with or
    without finalizers), or a namesake with another uid."""
    shape = rng.randrange(6)
    if shape == 0:
        return None
    if shape == 1:
        return _pod(name, uid)
    if shape == 2:
        return _pod(name, uid, deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=30)
    if shape == 3:
        return _pod(name, uid, deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=0)
    if shape == 4:
        return _pod(
            name,
            uid,
            deletionTimestamp="2026-01-01T00:00:00Z",
            deletionGracePeriodSeconds=0,
            finalizers=["x"],
        )
    return _pod(name, uid + "-namesake")


def _plain_remains(cache: Mapping[str, PodInfo], key: str, uid: str) -> bool:
    victim = cache.get(key)
    if victim is None:
        return False
    meta = victim.pod.get("metadata") or {}
    if uid and meta.get("uid") != uid:
        return False
    if not meta.get("deletionTimestamp"):
        return True
    return meta.get("deletionGracePeriodSeconds") == 0 and not meta.get("finalizers")


def _plain(
    runs: dict[str, _Run], settling: dict[str, _Run], cache: Mapping[str, PodInfo], pod: Mapping[str, Any]
) -> bool:
    meta = pod.get("metadata") or {}
    key = meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    run = runs.get(key)
    if run is not None:
        return not run.last_victim or _plain_remains(cache, run.last_victim, run.last_uid)
    run = settling.get(key)
    if run is None:
        return False
    if any(_plain_remains(cache, k, u) for k, u in run.deleted):
        return True
    del settling[key]
    return False


@pytest.mark.parametrize("seed", range(40))
def test_held_preemptors_are_answered_as_the_plain_rule_does(seed: int) -> None:
    rng = random.Random(seed)
    cache: dict[str, PodInfo] = {}
    executor = PreemptionExecutor(
        api=None,
        recorder=None,  # type: ignore[arg-type]
        nominations=None,  # type: ignore[arg-type]
        assigned_pod=cache.get,
        waiting_pods=dict,
    )
    try:
        preemptors = []
        for i in range(12):
            # Some preemptors without a uid: their runs are keyed by namespace/name.
            uid = f"pre-{i}" if rng.random() < 0.8 else ""
            preemptors.append(_pod(f"pre{i}", uid))
        runs: dict[str, _Run] = {}
        settling: dict[str, _Run] = {}
        victims = [(f"default/v{j}", f"v-{j}" if rng.random() < 0.9 else "") for j in range(20)]
        asked = 0
        for _ in range(30):
            # A new state of the world: runs started, finishing or settling, and the cache's victims.
            runs.clear()
            settling.clear()
            for pod in preemptors:
                info = PodInfo(pod)
                key = info.uid or info.key
                run = _Run(info, "n0", 0.0)
                if rng.random() < 0.5:
                    run.last_victim, run.last_uid = rng.choice(victims)
                run.deleted.extend(rng.sample(victims, rng.randint(0, 3)))
                where = rng.random()
                if where < 0.4:
                    runs[key] = run
                elif where < 0.8:
                    settling[key] = run
            cache.clear()
            for key, uid in victims:
                shown = _victim_state(rng, key.split("/", 1)[1], uid or "other")
                if shown is not None:
                    cache[key] = PodInfo(shown)
            executor._runs = dict(runs)
            executor._settling = dict(settling)
            expected_settling = dict(settling)
            for pod in rng.sample(preemptors, len(preemptors)):
                expected = _plain(runs, expected_settling, cache, pod)
                assert executor.is_pod_running_preemption(pod) == expected
                assert executor._settling == expected_settling
                asked += 1
        assert asked
    finally:
        executor.shutdown()
