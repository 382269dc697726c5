"""Pieces of pod signatures (``SignPlugin.sign``) shared by several plugins."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from scheduler.framework.types import PodInfo

# Volume sources no scheduling plugin reads: they never depend on PVCs, PVs, storage classes or CSI
# drivers, whose objects a node generation does not track. Any other source makes the volume plugins
# decline to sign (upstream signs the rest through VolumesSigner; declining costs only batching).
_NEUTRAL_VOLUME_SOURCES = frozenset(
    {"name", "configMap", "secret", "emptyDir", "downwardAPI", "projected", "hostPath"}
)


def freeze(value: Any) -> Hashable:
    """A hashable copy of a JSON value: dicts become sorted item tuples, lists tuples."""
    if isinstance(value, Mapping):
        return tuple(sorted((key, freeze(item)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value  # type: ignore[no-any-return]


def _volumes_neutral(pod: PodInfo) -> bool:
    volumes = pod.spec.get("volumes") or ()
    return all(isinstance(v, Mapping) and _NEUTRAL_VOLUME_SOURCES.issuperset(v) for v in volumes)


def volumes_signature(pod: PodInfo) -> Hashable | None:
    """``()`` when the pod's volumes cannot matter to any volume plugin, else None (cannot sign)."""
    return () if pod.derived("signature/volumes", _volumes_neutral) else None


def spec_part(pod: PodInfo, *keys: str) -> Hashable:
    """The frozen values of ``spec[key]`` for ``keys``, computed once per pod version."""
    memo_key = "signature/spec/" + ",".join(keys)
    return pod.derived(memo_key, lambda p: tuple(freeze(p.spec.get(key)) for key in keys))


def _requests(pod: PodInfo) -> Hashable:
    plain, non_zero = pod.requests, pod.non_zero_requests
    return tuple(
        (r.milli_cpu, r.memory, r.ephemeral_storage, tuple(sorted(r.scalar.items())))
        for r in (plain, non_zero)
    )


def requests_part(pod: PodInfo) -> Hashable:
    """The pod's requests, plain and non-zero (what the resource plugins read)."""
    return pod.derived("signature/requests", _requests)
