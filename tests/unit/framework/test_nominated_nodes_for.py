"""``Framework.nodes_with_nominated_pods_for`` keeps its answer per priority while the nominator's
version stays: every answer must be the nodes holding a nominated pod of the pod's priority or higher
other than the pod itself (upstream addGENominatedPods), while nominations come and go and pods of
several priorities, some nominated themselves, ask in turn."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from scheduler.cache import Snapshot
from scheduler.framework.runtime import Framework
from scheduler.framework.types import PodInfo
from tests.unit.fakes import PROFILE, build_frameworks


class _VersionedNominator:
    def __init__(self) -> None:
        self.by_node: dict[str, dict[str, PodInfo]] = {}
        self.version = 0

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return tuple(self.by_node.get(node_name, {}).values())

    def nominated_node_names(self) -> Sequence[str]:
        return list(self.by_node)

    def nominate(self, pod: PodInfo, node_name: str) -> None:
        for name, pods in list(self.by_node.items()):
            if pods.pop(pod.uid, None) is not None and not pods:
                del self.by_node[name]
        if node_name:
            self.by_node.setdefault(node_name, {})[pod.uid] = pod
        self.version += 1


def _pod(name: str, priority: int) -> PodInfo:
    return PodInfo(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "1"},
            "spec": {"schedulerName": PROFILE, "priority": priority, "containers": [{"name": "c"}]},
        }
    )


def _plain(nominator: _VersionedNominator, pod: PodInfo) -> set[str]:
    return {
        name
        for name in nominator.nominated_node_names()
        if any(
            other.priority >= pod.priority and other.uid != pod.uid
            for other in nominator.nominated_pods_for_node(name)
        )
    }


def _framework() -> Framework:
    snapshot = Snapshot()
    return build_frameworks(lambda: snapshot, None, lambda: 0.0)[PROFILE]


def test_kept_answers_equal_the_plain_ones_while_nominations_change() -> None:
    fwk = _framework()
    for seed in range(40):
        rng = random.Random(seed)
        nominator = _VersionedNominator()
        fwk.nominator = nominator
        pods = [_pod(f"s{seed}p{i}", rng.choice([0, 10, 10, 100])) for i in range(12)]
        nodes = [f"n{i}" for i in range(6)]
        for _ in range(60):
            if rng.random() < 0.4:
                nominator.nominate(rng.choice(pods), rng.choice([*nodes, ""]))
            pod = rng.choice(pods)
            assert set(fwk.nodes_with_nominated_pods_for(pod)) == _plain(nominator, pod), seed
    fwk.nominator = None


def test_without_a_version_every_answer_is_computed() -> None:
    fwk = _framework()
    nominator = _VersionedNominator()
    fwk.nominator = nominator
    first, second = _pod("a", 10), _pod("b", 10)
    nominator.nominate(first, "n1")
    assert set(fwk.nodes_with_nominated_pods_for(second)) == {"n1"}
    assert set(fwk.nodes_with_nominated_pods_for(first)) == set()
    # Changed behind the version's back: a nominator with a version must bump it, one without is
    # asked every time.
    del nominator.version
    nominator.by_node["n2"] = {second.uid: second}
    assert set(fwk.nodes_with_nominated_pods_for(first)) == {"n2"}
    fwk.nominator = None


def _raw(pod: PodInfo, node_name: str) -> dict[str, object]:
    raw = dict(pod.pod)
    raw["status"] = {"nominatedNodeName": node_name}
    return raw


def test_answers_read_from_the_changed_nodes_equal_the_plain_ones() -> None:
    """With the scheduler's nominator (``NominatedPodInfos`` over a ``Nominator``, which says which nodes
    changed since a version), an answer after a change reads only the changed nodes again: it must still
    be the plain one, while pods of several priorities nominate, move, leave, and ask in turn (some
    nominated themselves, alone on their node or not)."""
    from scheduler.cache import PodInfoCache
    from scheduler.preemption.nominated import NominatedPodInfos
    from scheduling_queue import Nominator

    fwk = _framework()
    read_again: list[int] = []
    for seed in range(40):
        rng = random.Random(seed)
        queue_nominator = Nominator()
        infos = NominatedPodInfos(queue_nominator, PodInfoCache())
        changed_since = infos.changed_since

        def counting(version: int, changed_since: Any = changed_since) -> list[str]:
            changed = changed_since(version)
            read_again.append(len(changed))
            return changed  # type: ignore[no-any-return]

        infos.changed_since = counting  # type: ignore[method-assign]
        fwk.nominator = infos
        pods = [_pod(f"s{seed}q{i}", rng.choice([0, 10, 10, 100])) for i in range(14)]
        nodes = [f"n{i}" for i in range(8)]
        for _ in range(80):
            if rng.random() < 0.5:
                pod = rng.choice(pods)
                node = rng.choice([*nodes, ""])
                if node:
                    queue_nominator.add_nominated_pod(_raw(pod, node), node)
                else:
                    queue_nominator.delete_nominated_pod_if_exists(pod.pod)
            pod = rng.choice(pods)
            want = {
                name
                for name in infos.nominated_node_names()
                if any(
                    other.priority >= pod.priority and other.uid != pod.uid
                    for other in infos.nominated_pods_for_node(name)
                )
            }
            assert set(fwk.nodes_with_nominated_pods_for(pod)) == want, seed
    fwk.nominator = None
    # The incremental reading was taken, and read fewer nodes than there are.
    assert read_again and min(read_again) < 8
