"""Typed views of the group and disruption objects: upstream's PodGroup and Workload
(``scheduling.k8s.io/v1beta1`` since v1.37, GenericWorkload), scheduler-plugins' PodGroup
(``scheduling.x-k8s.io/v1alpha1``, Coscheduling), PodDisruptionBudget (``policy/v1``, preemption) and
the scheduler's own Lease (``coordination.k8s.io/v1``, leader election).

Same rules as ``scheduler.framework.objects``: ``TypedDict`` shapes over the raw JSON dicts, all fields
optional, read-only, and accessors that read a missing field and an explicit null alike as empty. The
two PodGroup kinds share a name upstream and nothing else: ``PodGroup`` here is upstream's,
``CoschedulingPodGroup`` the scheduler-plugins one.
"""

from collections.abc import Mapping
from typing import Any, TypedDict

from scheduler.framework.objects import ObjectMeta

__all__ = [
    "CoschedulingPodGroup",
    "CoschedulingPodGroupSpec",
    "CoschedulingPodGroupStatus",
    "DisruptionMode",
    "GangSchedulingPolicy",
    "Lease",
    "LeaseSpec",
    "PodDisruptionBudget",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
    "PodGroup",
    "PodGroupSchedulingConstraints",
    "PodGroupSchedulingPolicy",
    "PodGroupSpec",
    "PodGroupStatus",
    "PodGroupTemplate",
    "PodGroupTemplateReference",
    "Workload",
    "WorkloadReference",
    "WorkloadSpec",
    "coscheduling_pod_group_spec",
    "coscheduling_pod_group_status",
    "lease_spec",
    "pdb_spec",
    "pdb_status",
    "pod_group_disruption_mode",
    "pod_group_scheduling_policy",
    "pod_group_spec",
    "pod_group_status",
    "workload_spec",
]


# --- scheduling.k8s.io/v1beta1 --------------------------------------------------------------------


class GangSchedulingPolicy(TypedDict, total=False):
    minCount: int


class PodGroupSchedulingPolicy(TypedDict, total=False):
    # A union: exactly one of basic (an empty object) and gang is set.
    basic: dict[str, Any]
    gang: GangSchedulingPolicy


class PodGroupSchedulingConstraints(TypedDict, total=False):
    topology: list[dict[str, Any]]


class PodGroupTemplateReference(TypedDict, total=False):
    """v1alpha2's ``podGroupTemplateRef`` (API servers up to v1.36)."""

    workloadName: str
    podGroupTemplateName: str


class WorkloadReference(TypedDict, total=False):
    """v1beta1's ``workloadRef`` (v1.37)."""

    workloadName: str
    templateName: str


class DisruptionMode(TypedDict, total=False):
    """v1beta1's ``disruptionMode``: a union, exactly one of ``single`` and ``all`` (empty objects)."""

    single: dict[str, Any]
    all: dict[str, Any]


class PodGroupSpec(TypedDict, total=False):
    # v1alpha2 (API servers up to v1.36).
    podGroupTemplateRef: PodGroupTemplateReference
    # v1beta1 (v1.37).
    workloadRef: WorkloadReference
    schedulingPolicy: PodGroupSchedulingPolicy
    # Fields py-scheduler does not implement (GangScheduling refuses a group using them).
    schedulingConstraints: PodGroupSchedulingConstraints
    resourceClaims: list[dict[str, Any]]
    # v1alpha2's string ("Pod" or "PodGroup"); v1beta1 sends a DisruptionMode object instead: read it
    # with ``pod_group_disruption_mode``.
    disruptionMode: str
    # v1.37: set by the API server's Priority admission plugin on every PodGroup.
    priorityClassName: str
    priority: int
    # v1beta1 fields py-scheduler does not implement (refused by name).
    parentCompositePodGroupName: str
    preemptionPolicy: str


class PodGroupStatus(TypedDict, total=False):
    conditions: list[dict[str, Any]]


class PodGroup(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: PodGroupSpec
    status: PodGroupStatus


class PodGroupTemplate(TypedDict, total=False):
    name: str
    schedulingPolicy: PodGroupSchedulingPolicy


class WorkloadSpec(TypedDict, total=False):
    controllerRef: dict[str, str]
    podGroupTemplates: list[PodGroupTemplate]


class Workload(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: WorkloadSpec


def pod_group_spec(pod_group: Mapping[str, Any]) -> PodGroupSpec:
    """An upstream PodGroup's ``spec``, or ``{}`` when missing or null."""
    return pod_group.get("spec") or PodGroupSpec()


def pod_group_priority(pod_group: Mapping[str, Any]) -> int:
    """Upstream's ``util.PodGroupPriority``: ``spec.priority`` (resolved by admission), else 0."""
    priority = pod_group_spec(pod_group).get("priority")
    return priority if isinstance(priority, int) else 0


def scheduling_group_name(pod: Mapping[str, Any]) -> str:
    """A pod's ``spec.schedulingGroup.podGroupName``, or "" for a pod outside any group."""
    group = (pod.get("spec") or {}).get("schedulingGroup")
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return name if isinstance(name, str) else ""


def pod_group_disruption_mode(pod_group: Mapping[str, Any]) -> DisruptionMode | None:
    """v1beta1's ``spec.disruptionMode`` object; None when missing, null or v1alpha2's string."""
    mode = (pod_group.get("spec") or {}).get("disruptionMode")
    if not isinstance(mode, Mapping):
        return None
    out = DisruptionMode()
    if isinstance(mode.get("single"), Mapping):
        out["single"] = dict(mode["single"])
    if isinstance(mode.get("all"), Mapping):
        out["all"] = dict(mode["all"])
    return out


def pod_group_status(pod_group: Mapping[str, Any]) -> PodGroupStatus:
    """An upstream PodGroup's ``status``, or ``{}`` when missing or null."""
    return pod_group.get("status") or PodGroupStatus()


def pod_group_scheduling_policy(pod_group: Mapping[str, Any]) -> PodGroupSchedulingPolicy:
    """``spec.schedulingPolicy``, or ``{}`` when it or the spec is missing or null."""
    return (pod_group.get("spec") or {}).get("schedulingPolicy") or PodGroupSchedulingPolicy()


def workload_spec(workload: Mapping[str, Any]) -> WorkloadSpec:
    """A Workload's ``spec``, or ``{}`` when missing or null."""
    return workload.get("spec") or WorkloadSpec()


# --- scheduling.x-k8s.io/v1alpha1 (scheduler-plugins) ---------------------------------------------


class CoschedulingPodGroupSpec(TypedDict, total=False):
    minMember: int
    minResources: dict[str, Any]
    scheduleTimeoutSeconds: int


class CoschedulingPodGroupStatus(TypedDict, total=False):
    phase: str
    occupiedBy: str
    running: int
    succeeded: int
    failed: int
    scheduleStartTime: str


class CoschedulingPodGroup(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: CoschedulingPodGroupSpec
    status: CoschedulingPodGroupStatus


def coscheduling_pod_group_spec(pod_group: Mapping[str, Any]) -> CoschedulingPodGroupSpec:
    """A scheduler-plugins PodGroup's ``spec``, or ``{}`` when missing or null."""
    return pod_group.get("spec") or CoschedulingPodGroupSpec()


def coscheduling_pod_group_status(pod_group: Mapping[str, Any]) -> CoschedulingPodGroupStatus:
    """A scheduler-plugins PodGroup's ``status``, or ``{}`` when missing or null."""
    return pod_group.get("status") or CoschedulingPodGroupStatus()


# --- policy/v1 ------------------------------------------------------------------------------------


class PodDisruptionBudgetSpec(TypedDict, total=False):
    selector: dict[str, Any]
    minAvailable: int | str
    maxUnavailable: int | str
    unhealthyPodEvictionPolicy: str


class PodDisruptionBudgetStatus(TypedDict, total=False):
    disruptionsAllowed: int
    # Pod name -> the time the eviction was seen: pods the controller already counts as disrupted.
    disruptedPods: dict[str, str]
    currentHealthy: int
    desiredHealthy: int
    expectedPods: int
    observedGeneration: int


class PodDisruptionBudget(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: PodDisruptionBudgetSpec
    status: PodDisruptionBudgetStatus


def pdb_spec(pdb: Mapping[str, Any]) -> PodDisruptionBudgetSpec:
    """A PodDisruptionBudget's ``spec``, or ``{}`` when missing or null."""
    return pdb.get("spec") or PodDisruptionBudgetSpec()


def pdb_status(pdb: Mapping[str, Any]) -> PodDisruptionBudgetStatus:
    """A PodDisruptionBudget's ``status``, or ``{}`` when missing or null."""
    return pdb.get("status") or PodDisruptionBudgetStatus()


# --- coordination.k8s.io/v1 -----------------------------------------------------------------------


class LeaseSpec(TypedDict, total=False):
    holderIdentity: str
    leaseDurationSeconds: int
    acquireTime: str
    renewTime: str
    leaseTransitions: int
    strategy: str
    preferredHolder: str


class Lease(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: LeaseSpec


def lease_spec(lease: Mapping[str, Any]) -> LeaseSpec:
    """A Lease's ``spec``, or ``{}`` when missing or null."""
    return lease.get("spec") or LeaseSpec()
