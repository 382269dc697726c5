"""ImageLocality: the cases of upstream's image_locality_test.go (v1.36)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

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
        [12, 0],
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
