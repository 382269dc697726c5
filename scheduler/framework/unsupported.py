"""Fail closed: refuse pods that use a spec feature no plugin of this build implements.

kube-scheduler honours these fields through plugins py-scheduler may not have yet. Placing such a pod as
if the field were absent is the worst thing a scheduler can do (a claim never provisioned, a device never
allocated, a gang split up), so the framework rejects it before PreFilter, UnschedulableAndUnresolvable,
naming the field and the missing plugin. The pod shows a FailedScheduling Event and ``PodScheduled=False``
and is retried when its spec changes.

The guard is about this build, not about a user's configuration: a field is guarded only while the plugin
that implements it is absent from the registry (in-tree plus out-of-tree), or is held off by a feature
gate that is off (GangScheduling). A user who disables a plugin that exists gets upstream's behaviour,
the constraint not enforced.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.status import Status
from scheduler.framework.types import PodInfo

# The pseudo plugin named in the status: its only queueing hint is an update of the pod itself.
UNSUPPORTED_FIELDS_PLUGIN = "UnsupportedPodFields"

Spec = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class GuardedField:
    """``field`` (as users know it) is honoured only by ``plugin``. A pod uses it when one of its volumes
    has a source in ``volume_sources`` (a volume's source is its key, e.g. ``persistentVolumeClaim``),
    or, for a field outside ``spec.volumes``, when ``spec_uses(spec)`` says so."""

    field: str
    plugin: str
    volume_sources: frozenset[str] = frozenset()
    spec_uses: Callable[[Spec], bool] | None = None
    # Set when the plugin exists but is off until a feature gate is: what the user must turn on.
    needs: str = ""


def _volumes(*sources: str) -> frozenset[str]:
    return frozenset(sources)


# Inline in-tree cloud disks count against CSI attach limits only through csi-translation-lib, which is
# not ported: NodeVolumeLimits would under-count them, so they stay refused (no plugin has this name).
IN_TREE_TRANSLATION = "NodeVolumeLimits in-tree to CSI translation"

# No plugin has this name: v1.35's Workload API is not ported.
V1ALPHA1_GANG = "GangScheduling on scheduling.k8s.io/v1alpha1"

GUARDED_FIELDS: tuple[GuardedField, ...] = (
    GuardedField("persistentVolumeClaim volumes", "VolumeBinding", _volumes("persistentVolumeClaim")),
    GuardedField("ephemeral volumes", "VolumeBinding", _volumes("ephemeral")),
    GuardedField(
        "gcePersistentDisk, awsElasticBlockStore, rbd or iscsi volumes",
        "VolumeRestrictions",
        _volumes("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi"),
    ),
    GuardedField(
        "gcePersistentDisk, awsElasticBlockStore, azureDisk, azureFile, cinder, vsphereVolume or "
        "portworxVolume volumes",
        IN_TREE_TRANSLATION,
        _volumes(
            "gcePersistentDisk",
            "awsElasticBlockStore",
            "azureDisk",
            "azureFile",
            "cinder",
            "vsphereVolume",
            "portworxVolume",
        ),
    ),
    GuardedField(
        "resourceClaims", "DynamicResources", spec_uses=lambda spec: bool(spec.get("resourceClaims"))
    ),
    # Upstream's API server drops the field while GenericWorkload is off; with it on, a py-scheduler
    # whose gates are off would split the gang, so it refuses the pod instead.
    GuardedField(
        "schedulingGroup",
        "GangScheduling",
        spec_uses=lambda spec: bool(spec.get("schedulingGroup")),
        needs="--feature-gates=GenericWorkload=true",
    ),
    # Kubernetes v1.35's gang field (scheduling.k8s.io/v1alpha1 Workload), dropped in v1.36: a v1.35 API
    # server with GenericWorkload on carries it; py-scheduler reads only the v1beta1 gang API, so the pod
    # is refused rather than scheduled as if it were alone (docs/compatibility.md).
    GuardedField(
        "workloadRef (the scheduling.k8s.io/v1alpha1 gang API of Kubernetes v1.35)",
        V1ALPHA1_GANG,
        spec_uses=lambda spec: bool(spec.get("workloadRef")),
    ),
)


def unsupported_message(field: str, plugin: str, needs: str = "") -> str:
    if needs:
        return f"pod uses {field}, which py-scheduler honours only with {needs} ({plugin})"
    return f"pod uses {field}, which py-scheduler does not support yet ({plugin})"


class UnsupportedFieldGuard:
    """Checks a pod against the fields whose plugins are missing from ``available_plugins``."""

    __slots__ = ("_guarded", "_guarded_sources", "_spec_guarded")

    def __init__(
        self, available_plugins: Collection[str], guarded: tuple[GuardedField, ...] = GUARDED_FIELDS
    ) -> None:
        self._guarded = tuple(g for g in guarded if g.plugin not in available_plugins)
        # Every volume source some guarded field names, so a pod's volumes are read once per check.
        self._guarded_sources = frozenset().union(*(g.volume_sources for g in self._guarded))
        # In declaration order: what is left to test when no volume of the pod has a guarded source.
        self._spec_guarded = tuple(g for g in self._guarded if g.spec_uses is not None)

    @property
    def guarded(self) -> tuple[GuardedField, ...]:
        return self._guarded

    def check(self, pod: PodInfo) -> Status | None:
        """UnschedulableAndUnresolvable naming the first unsupported field the pod uses, else None."""
        if not self._guarded:
            return None
        message = pod.derived("unsupported-fields", self._first_unsupported)
        if message is None:
            return None
        return Status.unschedulable(message, resolvable=False).with_plugin(UNSUPPORTED_FIELDS_PLUGIN)

    def _first_unsupported(self, pod: PodInfo) -> str | None:
        spec = pod.spec
        guarded_sources = self._guarded_sources
        # The guarded sources among the pod's volumes (a volume's keys are its name and its source).
        # Most pods have none: one isdisjoint per volume, in C, and no set is built.
        used: frozenset[str] = frozenset()
        for volume in spec.get("volumes") or ():
            if not guarded_sources.isdisjoint(volume):
                used = used.union(guarded_sources.intersection(volume))
        # The first field in declaration order that the pod uses is the one named, whichever matched.
        for guarded in self._guarded if used else self._spec_guarded:
            if not guarded.volume_sources.isdisjoint(used) or (
                guarded.spec_uses is not None and guarded.spec_uses(spec)
            ):
                return unsupported_message(guarded.field, guarded.plugin, guarded.needs)
        return None
