"""A few fixed seeds of bench.parity_fuzz: py-scheduler's frameworks judge each pod of a random cluster
before the real kube-scheduler does; feasibility, the chosen node (up to score ties), every node's
score (kube-scheduler logs its own), the FailedScheduling message and the preemption nominee must
agree. The batching seeds judge each pod a second way too, with opportunistic batching's cache carried
from pod to pod."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from bench.parity_fuzz import KUBE_SCORE_LOGGING, run_seed, setup_objects
from devcluster import ControlPlane
from tests.integration.workload import sole_kube_scheduler

SEEDS = (1, 2, 3)
# A seed whose pods reach PodTopologySpread's system default constraints through each kind of owner
# (bench.parity_extras: ReplicaSet, StatefulSet and ReplicationController controllers, missing or
# unknown ones, non-controller references) under overlapping Services; every seed draws them too.
OWNER_SEEDS = (204,)
# Seeds of the batching mode: pods in runs of one shape, also judged through one batch cache kept
# across the seed, which must agree with the one-by-one judge and with kube-scheduler.
BATCHING_SEEDS = (5, 7, 11)


@pytest.fixture(scope="module")
def kube_client() -> Iterator[tuple[Any, str]]:
    """A control plane of its own (a few seconds to start): py's judge reads only the seed's objects,
    while kube-scheduler sees the whole cluster. On the session's shared one, nodes other tests left
    change ImageLocality's node count, and its kube-controller-manager's ReplicaSet controller adopts
    and deletes the harness's pods (both seen in CI). kube-scheduler logs its scores: each node's score
    of a pod bound at its first attempt is compared too."""
    with (
        ControlPlane() as plane,
        sole_kube_scheduler(plane, extra_args=[KUBE_SCORE_LOGGING]) as kube,
        plane.api_client() as client,
    ):
        setup_objects(client)
        yield client, str(kube.log_path)


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_with_kube_scheduler(kube_client: tuple[Any, str], seed: int) -> None:
    client, kube_log = kube_client
    mismatches, stats = run_seed(client, seed, (10, 16), (25, 35), kube_log=kube_log)
    assert stats["bound"] > 0
    assert stats["scores compared"] > 0
    assert not mismatches, (
        "\n".join(f"{m.pod} {m.kind}: {m.detail}" for m in mismatches) + f"\n{Counter(stats)}"
    )


@pytest.mark.parametrize("seed", BATCHING_SEEDS)
def test_batching_parity_with_kube_scheduler(kube_client: tuple[Any, str], seed: int) -> None:
    client, kube_log = kube_client
    mismatches, stats = run_seed(client, seed, (10, 16), (25, 35), batching=True, kube_log=kube_log)
    assert stats["bound"] > 0
    # The cache answered: repeated shapes reuse verdicts (else this compares nothing batching does).
    assert stats["batch hits"] > 0, Counter(stats)
    assert not mismatches, (
        "\n".join(f"{m.pod} {m.kind}: {m.detail}" for m in mismatches) + f"\n{Counter(stats)}"
    )


@pytest.mark.parametrize("seed", OWNER_SEEDS)
def test_owner_spreading_parity_with_kube_scheduler(kube_client: tuple[Any, str], seed: int) -> None:
    client, kube_log = kube_client
    mismatches, stats = run_seed(client, seed, (10, 16), (25, 35), kube_log=kube_log)
    # What the seed is for: defaulted spreading judged on scored pods, through controllers of each
    # kind and through references that must not count.
    assert stats["default spread"] > 0 and stats["scores compared"] > 0, Counter(stats)
    for kind in ("ReplicaSet", "StatefulSet", "ReplicationController"):
        assert stats[f"controller {kind}"] > 0, Counter(stats)
    assert stats["owner, no controller"] > 0, Counter(stats)
    assert not mismatches, (
        "\n".join(f"{m.pod} {m.kind}: {m.detail}" for m in mismatches) + f"\n{Counter(stats)}"
    )
