"""The volume plugins' batch Filter (``filter_nodes``) gives the per-node ``filter`` answers.

Random clusters: nodes with and without zone labels and CSINodes with random attach limits, PVs with
and without node affinity, claims bound to existing or missing volumes, pods already placed with their
claims. Random pods are judged both ways over every node, and Reserve on a feasible node then finds the
same volumes to bind.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.framework import CycleState, NodeInfo, PodInfo, Status
from scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.plugins.volumebinding.plugin import STATE_KEY
from tests.unit.plugins.plugin_testlib import node
from tests.unit.plugins.volume_testlib import handle, pod_with_claims, pv, pvc

DRIVER = "ebs.csi.aws.com"


def _key(status: Status | None) -> tuple[Any, ...] | None:
    return None if status is None else (status.code, tuple(status.reasons))


def _cluster(seed: int) -> tuple[random.Random, list[NodeInfo], Any, list[str]]:
    rng = random.Random(seed)
    pvs, pvcs, claims = [], [], []
    for i in range(rng.randint(2, 12)):
        name = f"c{i}"
        claim = pvc(name, "", volume_name=f"pv{i}", phase="Bound")
        pvcs.append(claim)
        claims.append(name)
        if rng.random() < 0.85:
            affinity = {"zone": [rng.choice(["a", "b"])]} if rng.random() < 0.3 else None
            driver = rng.choice([DRIVER, DRIVER, "other.csi"])
            pvs.append(pv(f"pv{i}", "", phase="Bound", csi=(driver, f"h{rng.randint(0, 6)}"),
                          affinity=affinity, claim=claim))  # fmt: skip
    nodes, csi_nodes = [], []
    for n in range(rng.randint(1, 8)):
        labels = {"zone": rng.choice(["a", "b"])} if rng.random() < 0.8 else {}
        info = NodeInfo(node(f"n{n}", labels=labels))
        for p in range(rng.randint(0, 3)):
            raw = pod_with_claims(f"e{n}-{p}", *rng.sample(claims, rng.randint(0, 2)), uid=f"e{n}-{p}").pod
            raw["spec"]["nodeName"] = info.name
            info.add_pod(PodInfo(raw))
        nodes.append(info)
        if rng.random() < 0.8:
            limit = {"name": DRIVER, "nodeID": info.name, "allocatable": {"count": rng.randint(0, 4)}}
            csi_nodes.append({"metadata": {"name": info.name}, "spec": {"drivers": [limit]}})
    fh = handle(nodes=tuple(nodes), pvs=tuple(pvs), pvcs=tuple(pvcs), csi_nodes=tuple(csi_nodes))
    return rng, nodes, fh, claims


@pytest.mark.parametrize("seed", range(40))
def test_volume_filters_batch_equals_per_node(seed: int) -> None:
    rng, nodes, fh, claims = _cluster(seed)
    binding, limits = VolumeBinding({}, fh), NodeVolumeLimits({}, fh)
    for attempt in range(4):
        pod = pod_with_claims(f"p{attempt}", *rng.sample(claims, rng.randint(1, min(3, len(claims)))))
        for plugin in (binding, limits):
            batch_state, node_state = CycleState(), CycleState()
            _, status = plugin.pre_filter(batch_state, pod, nodes)
            _, again = plugin.pre_filter(node_state, pod, nodes)
            assert _key(status) == _key(again)
            if status is not None:
                continue
            batch = [_key(s) for s in plugin.filter_nodes(batch_state, pod, nodes)]
            per_node = [_key(plugin.filter(node_state, pod, info)) for info in nodes]
            assert batch == per_node
            if plugin is not binding:
                continue
            for index, info in enumerate(nodes):
                if batch[index] is not None:
                    continue
                assert binding.reserve(batch_state, pod, info.name) is None
                assert binding.reserve(node_state, pod, info.name) is None
                assert batch_state.get(STATE_KEY).all_bound == node_state.get(STATE_KEY).all_bound
                binding.unreserve(batch_state, pod, info.name)
                binding.unreserve(node_state, pod, info.name)
