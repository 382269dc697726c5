"""Which version of each API kind to watch, from what the API server serves (one build for API
servers v1.35 to v1.37).

Plugins ask for a kind by its canonical spec (``informers.resource``); at start-up discovery tells which
of the versions py-scheduler can read is served, and the informer lists and watches that one. A kind that
a configured feature needs and that the server does not serve at any readable version stops start-up with
one line naming the API and the server's version. A kind whose absence means there are no such objects
(DeviceTaintRules on a server that has no version of them) is read as empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from informers.resource import (
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    ELASTIC_QUOTAS,
    NODE_RESOURCE_TOPOLOGIES,
    PODGROUPS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    WORKLOAD_PODGROUPS,
    ResourceSpec,
)
from scheduler.client.discovery import ServedApis

# Versions py-scheduler reads, preferred first; a kind not listed is read at its spec's version only.
# resource.k8s.io/v1beta2 has v1's schema (v1beta1's differs: not read). Workload/PodGroup are read at
# v1beta1 only: v1.35's v1alpha1 and v1.36's v1alpha2 have other shapes (docs/compatibility.md).
_DRA = ("v1", "v1beta2")
READABLE_VERSIONS: Mapping[ResourceSpec, tuple[str, ...]] = {
    RESOURCE_CLAIMS: _DRA,
    RESOURCE_CLAIM_TEMPLATES: _DRA,
    RESOURCE_SLICES: _DRA,
    DEVICE_CLASSES: _DRA,
    DEVICE_TAINT_RULES: _DRA,
}
# Read as empty when no version at all is served (the API is off, so no such object exists).
EMPTY_WHEN_UNSERVED = frozenset({DEVICE_TAINT_RULES})
# CRDs, probed apart (scheduler.app.api_probes): one can be installed after start-up.
PROBED_APART = frozenset({PODGROUPS, ELASTIC_QUOTAS, NODE_RESOURCE_TOPOLOGIES})
# What needs a kind, for the start-up line; other kinds are needed by the scheduler itself.
NEEDED_BY: Mapping[ResourceSpec, str] = {
    WORKLOAD_PODGROUPS: "the GenericWorkload feature gate (GangScheduling)",
    RESOURCE_CLAIMS: "DynamicResources",
    RESOURCE_CLAIM_TEMPLATES: "DynamicResources",
    RESOURCE_SLICES: "DynamicResources",
    DEVICE_CLASSES: "DynamicResources",
    DEVICE_TAINT_RULES: "DynamicResources (DRADeviceTaintRules)",
}
_HINTS: Mapping[ResourceSpec, str] = {
    WORKLOAD_PODGROUPS: "start kube-apiserver (v1.37 or later) with "
    "--runtime-config=scheduling.k8s.io/v1beta1=true --feature-gates=GenericWorkload=true",
}


def groups_of(kinds: Iterable[ResourceSpec]) -> set[str]:
    return {spec.group for spec in kinds}


@dataclass
class Resolution:
    """``served``: spec -> the spec at the version to watch (only where it differs); ``unserved``: kinds
    read as empty; ``refusal``: the start-up line when a needed kind is not served."""

    served: dict[ResourceSpec, ResourceSpec] = field(default_factory=dict)
    unserved: set[ResourceSpec] = field(default_factory=set)
    refusal: str | None = None


def with_version(spec: ResourceSpec, version: str) -> ResourceSpec:
    return ResourceSpec(spec.group, version, spec.plural, spec.namespaced, spec.kind)


def missing_message(spec: ResourceSpec, apis: ServedApis) -> str:
    others = apis.versions_of(spec.group, spec.plural)
    where = f" (it serves {spec.plural} only at {', '.join(others)})" if others else ""
    line = (
        f"{NEEDED_BY.get(spec, 'py-scheduler')} needs {spec.api_version} {spec.plural}, which the API server "
        f"({apis.server_version}) does not serve{where}"
    )
    hint = _HINTS.get(spec)
    return f"{line}: {hint}" if hint else line


def resolve(kinds: Iterable[ResourceSpec], apis: ServedApis) -> Resolution:
    out = Resolution()
    for spec in kinds:
        if spec in PROBED_APART:
            continue
        readable = READABLE_VERSIONS.get(spec, (spec.version,))
        version = next((v for v in readable if apis.serves(spec.group, v, spec.plural)), None)
        if version is not None:
            if version != spec.version:
                out.served[spec] = with_version(spec, version)
            continue
        if spec in EMPTY_WHEN_UNSERVED and not apis.versions_of(spec.group, spec.plural):
            out.unserved.add(spec)
            continue
        if out.refusal is None:
            out.refusal = missing_message(spec, apis)
    return out
