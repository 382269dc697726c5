"""sign_pod's shortcuts sign pods equal exactly when the plugins' own ``sign`` answers are equal.

ImageLocality's images are kept per spec (``sign_splits_spec``), PodTopologySpread asks its default
constraints once for both actions (``DefaultConstraints.any_for_pod``), InterPodAffinity asks the
snapshot's lists directly. Checked against each signer's ``sign`` called afresh, and against a framework
that never saw the specs, while the cluster changes under kept specs: nodes pulling images, Services
selecting pods, pods with required anti-affinity arriving.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from typing import Any

from scheduler.cache import SchedulerCache
from scheduler.framework.listers import SERVICES, Lister, StaticLister
from scheduler.framework.runtime import Framework
from scheduler.framework.types import PodInfo
from scheduler.plugins.imagelocality import ImageLocality
from scheduler.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, SpreadConstraint
from scheduler.plugins.podtopologyspread.defaults import (
    SYSTEM_DEFAULT_CONSTRAINTS,
    ControllerListers,
    DefaultConstraints,
)
from tests.unit.fakes import PROFILE, build_frameworks, make_node

_IMAGES = ["img-a:1", "img-b:1", "img-c"]
_ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "b"}}}
        ]
    }
}


def _node(rng: random.Random, i: int) -> dict[str, Any]:
    node = make_node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": "z"})
    held = rng.sample(_IMAGES, rng.randrange(len(_IMAGES) + 1))
    node["status"]["images"] = [{"names": [image], "sizeBytes": 300 * 1024 * 1024} for image in held]
    return node


def _pod(rng: random.Random, name: str, node_name: str = "") -> dict[str, Any]:
    images = rng.sample(_IMAGES, rng.randrange(1, 3))
    spec: dict[str, Any] = {
        "schedulerName": PROFILE,
        "containers": [
            {"name": f"c{k}", "image": image, "resources": {"requests": {"cpu": "100m"}}}
            for k, image in enumerate(images)
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    if rng.random() < 0.15:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": rng.choice([DO_NOT_SCHEDULE, SCHEDULE_ANYWAY]),
                "labelSelector": {"matchLabels": {"app": "a"}},
            }
        ]
    if rng.random() < 0.1:
        spec["affinity"] = _ANTI
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": {"app": rng.choice(["a", "b"])},
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def _reference(fwk: Framework, info: PodInfo) -> tuple[Hashable, ...] | None:
    """Every signer's ``sign`` afresh, as sign_pod asked them before its shortcuts."""
    parts: list[Hashable] = [info.scheduler_name]
    for plugin in fwk.signers or ():
        part = plugin.sign(info)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)


def test_signatures_are_equal_exactly_when_the_signers_answers_are() -> None:
    rng = random.Random(5)
    cache = SchedulerCache()
    for i in range(6):
        cache.add_node(_node(rng, i))
    snapshot = cache.snapshot()
    listers: dict[Any, Lister] = {}

    def lister(resource: Any) -> Lister:
        return listers.setdefault(resource, StaticLister())

    def framework() -> Framework:
        return build_frameworks(lambda: snapshot, None, lambda: 0.0, listers=lister)[PROFILE]

    warm = framework()
    templates = [_pod(rng, f"t{k}") for k in range(8)]
    splits = 0
    for step in range(12):
        if step == 3:
            # Nodes pulling images: the kept images of a spec meet new counts.
            cache.add_node(_node(rng, 10))
            cache.add_node(_node(rng, 11))
        if step == 5:
            services = lister(SERVICES)
            assert isinstance(services, StaticLister)
            services.add(
                {"metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": {"app": "a"}}}
            )
        if step == 8:
            anti = _pod(rng, "anti", node_name="n1")
            anti["spec"]["affinity"] = _ANTI
            cache.add_pod(anti)
        if step == 10:
            cache.remove_pod(anti)
        cache.update_snapshot(snapshot)
        fresh = framework()
        pods = []
        for k in range(10):
            pod = _pod(rng, f"p{step}-{k}")
            # Same spec as a template, another pod: the kept parts are reused.
            pod["spec"] = dict(rng.choice(templates)["spec"])
            pods.append(PodInfo(pod))
        signed = [warm.sign_pod(info) for info in pods]
        reference = [_reference(warm, info) for info in pods]
        assert signed == [fresh.sign_pod(info) for info in pods]
        # An existing pod with required anti-affinity: InterPodAffinity signs no pod.
        assert (8 <= step < 10) == all(signature is None for signature in signed)
        for a in range(len(pods)):
            assert (signed[a] is None) == (reference[a] is None)
            for b in range(len(pods)):
                assert (signed[a] == signed[b]) == (reference[a] == reference[b])
                splits += signed[a] is not None and signed[b] is not None and signed[a] != signed[b]
    # Not vacuous: signable pods with different signatures were compared.
    assert splits


def test_image_locality_sign_is_its_two_steps() -> None:
    rng = random.Random(2)
    cache = SchedulerCache()
    for i in range(4):
        cache.add_node(_node(rng, i))
    snapshot = cache.snapshot()
    fwk = build_frameworks(lambda: snapshot, None, lambda: 0.0)[PROFILE]
    plugin = next(p for p in fwk.signers or () if isinstance(p, ImageLocality))
    for k in range(20):
        info = PodInfo(_pod(rng, f"p{k}"))
        assert plugin.sign(info) == plugin.sign_with(info, plugin.sign_spec(info))
        images = plugin.sign_spec(info)
        written = [c["image"] for c in info.spec["containers"]]
        assert images == tuple(image if ":" in image else image + ":latest" for image in written)


class _Unversioned:
    """A lister that keeps no version: answers are not remembered."""

    def __init__(self, inner: StaticLister) -> None:
        self._inner = inner

    def list(self, namespace: str | None = None) -> Any:
        return self._inner.list(namespace)

    def get(self, name: str, namespace: str = "") -> Any:
        return self._inner.get(name, namespace)


def _plain(constraints: tuple[SpreadConstraint, ...]) -> list[tuple[Any, ...]]:
    """Comparable: selectors and requirements compare by identity."""
    return [
        (
            c.max_skew,
            c.topology_key,
            [(r.key, r.op, r.values, r.number) for r in c.selector.requirements],
            c.min_domains,
            c.honor_node_affinity,
        )
        for c in constraints
    ]


def test_any_for_pod_is_for_pod_of_either_action() -> None:
    rng = random.Random(9)
    services, replica_sets = StaticLister(), StaticLister()
    list_constraints = (
        {"topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": DO_NOT_SCHEDULE, "maxSkew": 1},
    )
    for raw in (SYSTEM_DEFAULT_CONSTRAINTS, list_constraints):
        for versioned in (True, False):
            listers: Any = (services, StaticLister(), replica_sets, StaticLister())
            if not versioned:
                listers = tuple(_Unversioned(lister) for lister in listers)
            kept = DefaultConstraints(raw, ControllerListers(*listers))
            answers = set()
            for step in range(30):
                if step % 7 == 3:
                    services.add(
                        {
                            "metadata": {"name": f"s{step}", "namespace": "default"},
                            "spec": {"selector": {"app": rng.choice(["a", "b"])}},
                        }
                    )
                if step % 11 == 5:
                    replica_sets.add(
                        {
                            "metadata": {"name": "rs", "namespace": "default"},
                            "spec": {"selector": {"matchLabels": {"app": "c"}}},
                        }
                    )
                pod = _pod(rng, f"p{step}")
                pod["metadata"]["labels"] = {"app": rng.choice(["a", "b", "c"])}
                if rng.random() < 0.5:
                    pod["metadata"]["ownerReferences"] = [
                        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}
                    ]
                info = PodInfo(pod)
                fresh = DefaultConstraints(raw, ControllerListers(*listers))
                want = bool(fresh.for_pod(info, DO_NOT_SCHEDULE) or fresh.for_pod(info, SCHEDULE_ANYWAY))
                got = kept.any_for_pod(info, (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY))
                assert got == want
                # The per-action answers it kept are for_pod's.
                for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                    assert _plain(kept.for_pod(info, action)) == _plain(fresh.for_pod(info, action))
                answers.add(got)
            services, replica_sets = StaticLister(), StaticLister()
            # Both answers met for each configuration.
            assert answers == {True, False}
