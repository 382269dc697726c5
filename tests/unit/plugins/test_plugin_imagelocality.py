"""ImageLocality: the cases of upstream's image_locality_test.go (v1.36)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pytest

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.framework.status import Code
from scheduler.plugins.imagelocality import ImageLocality, normalized_image_name
from tests.unit.plugins.plugin_testlib import FakeHandle, node, node_info, pod, pre_score_code, run_score

MB = 1024 * 1024

NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_600_40_900 = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900 = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30 = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40 = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: list[tuple[list[str], int]] = []

CASES: list[tuple[str, dict[str, Any], list[Sequence[tuple[list[str], int]]], list[int]]] = [
    (
        "two images spread on two nodes, prefer the larger image one",
        pod(images=["gcr.io/40", "gcr.io/250"]),
        [NODE_40_300_2000, NODE_250_10],
        [0, 5],
    ),
    (
        "two images on one node, prefer this node",
        pod(images=["gcr.io/40", "gcr.io/300"]),
        [NODE_40_300_2000, NODE_250_10],
        [7, 0],
    ),
    (
        "if exceed limit, use limit",
        pod(images=["gcr.io/10", "gcr.io/4000"]),
        [NODE_4000_30, NODE_250_10],
        [100, 0],
    ),
    (
        "if exceed limit, use limit (with node which has no images present)",
        pod(images=["gcr.io/10", "gcr.io/4000"]),
        [NODE_4000_30, NODE_250_10, NO_IMAGES],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        pod(images=["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
        [NODE_600_40_900, NODE_300_600_900, NO_IMAGES],
        [32, 36, 0],
    ),
    (
        "pod with multiple small images",
        pod(images=["gcr.io/30", "gcr.io/40"]),
        [NODE_20_30_40, NODE_4000_30],
        [1, 0],
    ),
    (
        "pod with ImageVolume",
        pod(
            images=["gcr.io/30"],
            extra_spec={"volumes": [{"name": "v", "image": {"reference": "gcr.io/300"}}]},
        ),
        [NODE_300_600_900, NODE_4000_30],
        # v1.37: the image volume counts towards the threshold as a container image would.
        [6, 0],
    ),
    (
        "same images as ImageVolume pod but as regular container images",
        pod(images=["gcr.io/30", "gcr.io/300"]),
        [NODE_300_600_900, NODE_4000_30],
        [6, 0],
    ),
    (
        "include InitContainers",
        pod(images=["gcr.io/30"], init_images=["gcr.io/300"]),
        [NODE_40_300_2000, NODE_20_30_40],
        [6, 0],
    ),
]


@pytest.mark.parametrize(
    ("pod_dict", "node_images", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize("pre_score", [True, False], ids=["with-prescore", "without-prescore"])
def test_score(
    pod_dict: dict[str, Any], node_images: list[Any], expected: list[int], pre_score: bool
) -> None:
    infos = [node_info(node(f"node{i + 1}", images=images)) for i, images in enumerate(node_images)]
    plugin = ImageLocality({}, FakeHandle(infos))
    assert run_score(plugin, pod_dict, infos, pre_score=pre_score) == expected


def test_pre_score_skips_when_no_node_has_the_images() -> None:
    infos = [node_info(node("node1", images=NODE_250_10))]
    plugin = ImageLocality({}, FakeHandle(infos))
    assert pre_score_code(plugin, pod(images=["gcr.io/nothere"]), infos) is Code.Skip
    assert pre_score_code(plugin, pod(images=["gcr.io/250"]), infos) is Code.Success


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.25", "nginx:1.25"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        ("localhost:5000/app:v1", "localhost:5000/app:v1"),
        ("repo/app@sha256:abcd", "repo/app@sha256:abcd"),
    ],
)
def test_normalized_image_name(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


class _SnapshotHandle:
    """Just what ImageLocality reads of a handle: the cycle's snapshot."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot


def _scores_from_cache(cache: SchedulerCache, pod_dict: dict[str, Any]) -> dict[str, int]:
    snapshot = cache.snapshot()
    plugin = ImageLocality({}, cast(Any, _SnapshotHandle(snapshot)))
    infos = list(snapshot.node_infos())
    return dict(zip([i.name for i in infos], run_score(plugin, pod_dict, infos), strict=True))


def test_every_holder_scores_the_size_the_first_holder_reported() -> None:
    """The live kube-scheduler keeps one ImageStateSummary per image name, sized by the node that
    brought the name into its cache (backend/cache/cache.go, addNodeImageStates); the snapshot copies
    that size to every holder. Found side by side: img/a:1 reported as 300 MB by one node and 50 MB by
    another, 3 holders of 5 nodes; kube-scheduler scored the 50 MB holder 16 (300 MB x 3/5), not 0."""
    cache = SchedulerCache()
    cache.add_node(node("first", images=[(["img/a:1"], 300 * MB)]))
    cache.add_node(node("also", images=[(["img/a:1"], 300 * MB)]))
    cache.add_node(node("small", images=[(["img/a:1"], 50 * MB)]))
    cache.add_node(node("bare-1"))
    cache.add_node(node("bare-2"))
    scores = _scores_from_cache(cache, pod(images=["img/a:1"]))
    assert scores == {"first": 16, "also": 16, "small": 16, "bare-1": 0, "bare-2": 0}


def test_the_image_size_follows_upstream_cache_updates() -> None:
    cache = SchedulerCache()
    cache.add_node(node("n1", images=[(["img"], 500 * MB)]))
    cache.add_node(node("n2", images=[(["img"], 100 * MB)]))
    assert cache.image_size("img:latest") == 0 and cache.image_size("img") == 500 * MB
    # Another node still holds it: the size stays when its first holder goes.
    cache.remove_node(node("n1"))
    assert cache.image_size("img") == 500 * MB
    # Upstream removes an updated node's images and adds them again: the sole holder's size wins.
    cache.update_node(None, node("n2", images=[(["img"], 100 * MB)]))
    assert cache.image_size("img") == 100 * MB
    cache.add_node(node("n3", images=[(["img"], 700 * MB)]))
    cache.update_node(None, node("n3", images=[(["img"], 700 * MB)]))
    assert cache.image_size("img") == 100 * MB
    # The name leaves the cache with its last holder; the next node to report it sizes it again.
    cache.remove_node(node("n2"))
    cache.remove_node(node("n3"))
    assert cache.image_size("img") == 0
    cache.add_node(node("n4", images=[(["img"], 40 * MB), (["img"], 900 * MB)]))
    assert cache.image_size("img") == 40 * MB  # a node's first entry naming it


def test_an_unchanged_node_keeps_the_image_spread_of_its_last_snapshot_copy() -> None:
    """Upstream's UpdateSnapshot copies only changed nodes, and each copy freezes its images'
    ImageStateSummary (NumNodes = holders at copy time; framework/types.go SnapshotConcrete). A node
    that has not changed since another holder joined still scores with the old spread; the node count
    is the snapshot's own."""
    cache = SchedulerCache()
    cache.add_node(node("old", images=[(["img:1"], 500 * MB)]))
    snapshot = cache.snapshot()  # a cycle ran: "old" was copied with 1 holder of img:1
    cache.add_node(node("new", images=[(["img:1"], 500 * MB)]))
    cache.update_snapshot(snapshot)
    plugin = ImageLocality({}, cast(Any, _SnapshotHandle(snapshot)))
    infos = list(snapshot.node_infos())
    scores = dict(zip([i.name for i in infos], run_score(plugin, pod(images=["img:1"]), infos), strict=True))
    # old: 500 MB x 1/2 -> (250-23)*100/977 = 23; new: 500 MB x 2/2 -> 48
    assert scores == {"old": 23, "new": 48}
    # Once "old" changes (here a pod lands on it), its copy is made again with today's spread.
    cache.add_pod(pod("p", node_name="old"))
    cache.update_snapshot(snapshot)
    infos = list(snapshot.node_infos())
    scores = dict(zip([i.name for i in infos], run_score(plugin, pod(images=["img:1"]), infos), strict=True))
    assert scores == {"old": 48, "new": 48}
