"""ImageLocality (``pkg/scheduler/framework/plugins/imagelocality/image_locality.go``, v1.37.2)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple

from scheduler.framework import MAX_NODE_SCORE, CycleState, Handle, NodeInfo, PodInfo, Status
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader

MB = 1024 * 1024
# Bounds of the image score range: 90% of images on Docker Hub fall between them.
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

PRE_SCORE_STATE_KEY = "PreScore" + names.IMAGE_LOCALITY
_IMAGES_KEY = "ImageLocality.images"


def normalized_image_name(name: str) -> str:
    """The CRI name of an image: ``:latest`` is added when the reference has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        name += ":latest"
    return name


class PodImages(NamedTuple):
    # Init containers, containers and image volumes, in that order; repeats count repeatedly.
    images: tuple[str, ...]
    image_count: int


def _pod_images(pod: PodInfo) -> PodImages:
    spec = pod.spec
    init_containers = spec.get("initContainers") or ()
    containers = spec.get("containers") or ()
    images = [normalized_image_name(str(c.get("image") or "")) for c in (*init_containers, *containers)]
    for volume in spec.get("volumes") or ():
        image = volume.get("image")
        if image is not None:
            images.append(normalized_image_name(str(image.get("reference") or "")))
    # Since v1.37 the image volumes count towards the threshold too (sumImageScores' imageCount).
    return PodImages(tuple(images), len(images))


def pod_images(pod: PodInfo) -> PodImages:
    return pod.derived(_IMAGES_KEY, _pod_images)


def scaled_size(size: int, holders: int, total_nodes: int) -> int:
    """``scaledImageScore``: an image's size times the fraction of all nodes holding it."""
    return int(float(size) * (holders / total_nodes))


def calculate_priority(sum_scores: int, image_count: int) -> int:
    """Scales the summed image score linearly between the thresholds (per image of the pod:
    containers, init containers and image volumes) to [0, 100]."""
    max_threshold = MAX_CONTAINER_THRESHOLD * image_count
    sum_scores = min(max(sum_scores, MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


class _State(NamedTuple):
    images: tuple[str, ...]
    image_count: int
    # Per image, its cluster-wide size times the fraction of all nodes holding it: an image on every
    # node earns nothing extra anywhere, which keeps pods from piling onto the first nodes that pulled
    # it. The size is the cache's one per image (see SnapshotLister.image_size), not the node's own.
    scaled: Mapping[str, int]


class ImageLocality:
    """Score: favours nodes that already hold the pod's images, weighted by size and spread.

    Upstream: ``pkg/scheduler/framework/plugins/imagelocality/image_locality.go`` (v1.37.2).
    """

    name = names.IMAGE_LOCALITY

    # PreScore's state is the image counts and sizes the signature carries.
    pre_state_from_signature = True

    # sign is sign_with(sign_spec): the pod's images are read from the spec alone, so the framework
    # keeps them per spec and pods of one template skip pod_images.
    sign_splits_spec = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        """The images with how many nodes hold each and their cluster-wide size: both scale every
        node's score."""
        return self.sign_with(pod, self.sign_spec(pod))

    def sign_spec(self, pod: PodInfo) -> tuple[str, ...]:
        return tuple(pod_images(pod).images)

    def sign_with(self, pod: PodInfo, images: Hashable) -> Hashable | None:
        assert isinstance(images, tuple)
        snapshot = self._handle.snapshot
        return (
            images,
            snapshot.num_nodes(),
            tuple((snapshot.image_num_nodes(image), snapshot.image_size(image)) for image in images),
        )

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())
        if handle is None:
            raise ValueError(f"{self.name} needs a framework handle")
        self._handle = handle

    def _state(self, pod: PodInfo) -> _State:
        images = pod_images(pod)
        snapshot = self._handle.snapshot
        total = snapshot.num_nodes()
        scaled = (
            {
                image: scaled_size(snapshot.image_size(image), snapshot.image_num_nodes(image), total)
                for image in set(images.images)
            }
            if total
            else {}
        )
        return _State(images.images, images.image_count, scaled)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        computed = self._state(pod)
        if computed.image_count == 0 or not any(computed.scaled.values()):
            # No node holds any of the images: every node would score 0.
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, computed)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        computed: _State | None = state.get(PRE_SCORE_STATE_KEY)
        if computed is None:
            computed = self._state(pod)
        sizes = node.image_sizes
        if not sizes or computed.image_count == 0:
            return 0, None
        total = 0
        frozen = node.image_states
        if frozen is None:
            scaled = computed.scaled
            for image in computed.images:
                if image in sizes:
                    total += scaled.get(image, 0)
        else:
            # The spread and size this node's snapshot copy froze (upstream's ImageStateSummary
            # copy); the node count is the snapshot's own.
            counts, cluster_sizes = frozen
            nodes = self._handle.snapshot.num_nodes()
            for image in computed.images:
                if image in sizes and nodes:
                    total += scaled_size(cluster_sizes.get(image, 0), counts.get(image, 0), nodes)
        return calculate_priority(total, computed.image_count), None
