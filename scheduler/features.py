"""Feature gates: ``--feature-gates=GenericWorkload=true``, as kube-scheduler's flag.

py-scheduler knows only the gates that change what it does, or that a user may spell out at their
default; the others kube-scheduler v1.37.2 has are not accepted, so that a gate a user believes is on
is never silently without effect. Defaults, stages, locks and dependencies are upstream's
(``pkg/features/kube_features.go``, v1.37.2):

* ``GenericWorkload`` (beta, off): pods' ``spec.schedulingGroup`` is honoured; a pod of a group is
  scheduled in a pod group cycle (all its queued siblings on one snapshot, see
  ``scheduler/cycle/schedule_one_podgroup.py``), and the GangScheduling plugin joins the default profile
  (all-or-nothing for PodGroups with a ``gang`` policy). In v1.37 this gate absorbed v1.36's alpha
  ``GangScheduling`` and ``WorkloadAwarePreemption``, which upstream no longer recognises.
* ``StorageCapacityScoring`` (beta, on since v1.37): VolumeBinding scores nodes by the capacity of the
  volumes it would provision or bind there, along ``VolumeBindingArgs.shape``.
* ``VolumeLimitScaling`` (beta, on since v1.37): NodeVolumeLimits rejects a node whose CSINode lacks a
  driver the pod's volumes need when that CSIDriver sets ``spec.preventPodSchedulingIfMissing``.
* ``NominatedNodeNameForExpectation`` (beta, on since v1.35): the binding cycle publishes
  ``status.nominatedNodeName`` = the chosen node when the pod waits at Permit or a PreBind plugin will
  act (after the PreBind pre-flights, which run only with it). Off: neither, as kube-scheduler v1.34.
* ``NodeDeclaredFeatures`` (GA and locked on since v1.37): the NodeDeclaredFeatures plugin is in the
  default profile; turning it off is refused with upstream's message.
* ``OpportunisticBatching`` (beta, on since v1.35): consecutive pods with the same signature reuse the
  Filter verdicts, raw Scores and PreFilter/PreScore state of the last one (``scheduler/cycle/batching.py``).
  Upstream's batching hands the next pod a node hint from the last pod's sorted nodes; py-scheduler's
  cache re-judges and re-scores only the nodes that changed, so placements equal one-by-one scheduling
  either way: the gate changes CPU, never where a pod goes. Off: every pod is scheduled afresh.
* ``SchedulerAsyncPreemption``, ``SchedulerPopFromBackoffQ`` (beta, on) and ``SchedulerAsyncAPICalls``
  (beta, off): py-scheduler always behaves as their default (DefaultPreemption evicts off the cycle in
  ``scheduler/preemption/executor.py``; the queue pops backoffQ when activeQ is empty; there is no API
  call dispatcher). Setting the default is accepted; the other value stops start-up naming the gate.
  See ``ALWAYS_DEFAULT``.
* Recognised but not implemented (alpha or off-by-default beta upstream): asking for them is a
  start-up error naming the gate, and objects that use their fields are refused by name, never placed
  as if the field were absent. See ``NOT_IMPLEMENTED``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

GENERIC_WORKLOAD = "GenericWorkload"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
DRA_WORKLOAD_RESOURCE_CLAIMS = "DRAWorkloadResourceClaims"
COMPOSITE_POD_GROUP = "CompositePodGroup"
POD_GROUP_PREEMPTION_POLICY = "PodGroupPreemptionPolicy"
INTER_POD_AFFINITY_HOSTNAME_FAST_PATH = "InterPodAffinityHostnameFastPath"
IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION = "InPlacePodVerticalScalingSchedulerPreemption"
SCHEDULER_PRE_QUEUEING_HINTS = "SchedulerPreQueueingHints"
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"
VOLUME_LIMIT_SCALING = "VolumeLimitScaling"
NOMINATED_NODE_NAME_FOR_EXPECTATION = "NominatedNodeNameForExpectation"
DRA_DERIVED_ATTRIBUTES = "DRADerivedAttributes"
DRA_DEVICE_COMPATIBILITY_GROUPS = "DRADeviceCompatibilityGroups"
DRA_OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"
DRA_PARTITIONABLE_DEVICES_TYPE = "DRAPartitionableDevicesType"
OPPORTUNISTIC_BATCHING = "OpportunisticBatching"
SCHEDULER_ASYNC_PREEMPTION = "SchedulerAsyncPreemption"
SCHEDULER_POP_FROM_BACKOFF_Q = "SchedulerPopFromBackoffQ"
SCHEDULER_ASYNC_API_CALLS = "SchedulerAsyncAPICalls"


@dataclass(frozen=True, slots=True)
class GateSpec:
    """One gate as v1.37.2 declares it: its default, stage, lock and the (known) gates it needs."""

    default: bool
    stage: str
    locked: bool = False
    needs: tuple[str, ...] = ()


KNOWN_GATES: Mapping[str, GateSpec] = {
    GENERIC_WORKLOAD: GateSpec(False, "Beta"),
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: GateSpec(False, "Alpha", needs=(GENERIC_WORKLOAD,)),
    DRA_WORKLOAD_RESOURCE_CLAIMS: GateSpec(False, "Beta", needs=(GENERIC_WORKLOAD,)),
    COMPOSITE_POD_GROUP: GateSpec(
        False, "Alpha", needs=(GENERIC_WORKLOAD, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING)
    ),
    POD_GROUP_PREEMPTION_POLICY: GateSpec(False, "Alpha", needs=(GENERIC_WORKLOAD,)),
    INTER_POD_AFFINITY_HOSTNAME_FAST_PATH: GateSpec(False, "Alpha"),
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: GateSpec(False, "Alpha"),
    SCHEDULER_PRE_QUEUEING_HINTS: GateSpec(False, "Alpha"),
    DRA_DERIVED_ATTRIBUTES: GateSpec(False, "Alpha"),
    DRA_DEVICE_COMPATIBILITY_GROUPS: GateSpec(False, "Alpha"),
    DRA_OPTIONAL_NODE_OPERATIONS: GateSpec(False, "Alpha", needs=(NODE_DECLARED_FEATURES,)),
    DRA_PARTITIONABLE_DEVICES_TYPE: GateSpec(False, "Alpha"),
    NODE_DECLARED_FEATURES: GateSpec(True, "GA", locked=True),
    STORAGE_CAPACITY_SCORING: GateSpec(True, "Beta"),
    VOLUME_LIMIT_SCALING: GateSpec(True, "Beta"),
    NOMINATED_NODE_NAME_FOR_EXPECTATION: GateSpec(True, "Beta"),
    OPPORTUNISTIC_BATCHING: GateSpec(True, "Beta"),
    SCHEDULER_ASYNC_PREEMPTION: GateSpec(True, "Beta"),
    SCHEDULER_POP_FROM_BACKOFF_Q: GateSpec(True, "Beta"),
    SCHEDULER_ASYNC_API_CALLS: GateSpec(False, "Beta"),
}
# Recognised (so the message can say why), but py-scheduler cannot honour them when on.
NOT_IMPLEMENTED = frozenset(
    {
        TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
        DRA_WORKLOAD_RESOURCE_CLAIMS,
        COMPOSITE_POD_GROUP,
        POD_GROUP_PREEMPTION_POLICY,
        INTER_POD_AFFINITY_HOSTNAME_FAST_PATH,
        IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
        SCHEDULER_PRE_QUEUEING_HINTS,
        DRA_DERIVED_ATTRIBUTES,
        DRA_DEVICE_COMPATIBILITY_GROUPS,
        DRA_OPTIONAL_NODE_OPERATIONS,
        DRA_PARTITIONABLE_DEVICES_TYPE,
    }
)
# Recognised, and py-scheduler always behaves as the gate's default: setting the default is accepted,
# the other value is refused (never accepted and ignored).
ALWAYS_DEFAULT = frozenset(
    {SCHEDULER_ASYNC_PREEMPTION, SCHEDULER_POP_FROM_BACKOFF_Q, SCHEDULER_ASYNC_API_CALLS}
)
# v1.36 gates that v1.37 removed: upstream answers "unrecognized feature gate"; we say where they went.
REMOVED_IN_1_37: Mapping[str, str] = {
    "GangScheduling": "absorbed by GenericWorkload in v1.37",
    "WorkloadAwarePreemption": "absorbed by GenericWorkload in v1.37",
}


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value py-scheduler cannot run with; ``str()`` is the one line to print."""


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The gates explicitly set; the rest take upstream's default."""

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, gate: str) -> bool:
        if gate not in KNOWN_GATES:
            raise KeyError(gate)
        return self.overrides.get(gate, KNOWN_GATES[gate].default)

    @property
    def generic_workload(self) -> bool:
        return self.enabled(GENERIC_WORKLOAD)

    @property
    def gang_scheduling(self) -> bool:
        """The GangScheduling plugin's gate: GenericWorkload since v1.37 (upstream's applyGangScheduling)."""
        return self.enabled(GENERIC_WORKLOAD)

    @property
    def storage_capacity_scoring(self) -> bool:
        return self.enabled(STORAGE_CAPACITY_SCORING)

    @property
    def volume_limit_scaling(self) -> bool:
        return self.enabled(VOLUME_LIMIT_SCALING)

    @property
    def nominated_node_name_for_expectation(self) -> bool:
        return self.enabled(NOMINATED_NODE_NAME_FOR_EXPECTATION)

    @property
    def opportunistic_batching(self) -> bool:
        return self.enabled(OPPORTUNISTIC_BATCHING)


DEFAULT_FEATURE_GATES = FeatureGates()


def parse_feature_gates(text: str) -> FeatureGates:
    """``A=true,B=false`` -> FeatureGates, with upstream's checks (unknown gate, bad value, a locked gate
    changed, a gate on whose dependency is off) plus py-scheduler's own: a recognised gate it does not
    implement."""
    overrides: dict[str, bool] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        if name not in KNOWN_GATES:
            if name in REMOVED_IN_1_37:
                raise FeatureGateError(f"unrecognized feature gate: {name} ({REMOVED_IN_1_37[name]})")
            known = ", ".join(sorted(KNOWN_GATES))
            raise FeatureGateError(f"unrecognized feature gate: {name} (py-scheduler knows {known})")
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise FeatureGateError(f"invalid value of {name}={value}, err: want true or false")
        spec = KNOWN_GATES[name]
        wanted = lowered == "true"
        if spec.locked and wanted != spec.default:
            want, locked = str(wanted).lower(), str(spec.default).lower()
            raise FeatureGateError(f"cannot set feature gate {name} to {want}, feature is locked to {locked}")
        overrides[name] = wanted
    gates = FeatureGates(overrides)
    for name, spec in KNOWN_GATES.items():
        if not gates.enabled(name):
            continue
        missing = [dep for dep in spec.needs if not gates.enabled(dep)]
        if missing:
            raise FeatureGateError(
                f"{name} is enabled, but depends on features that are disabled: [{' '.join(missing)}]"
            )
        if name in NOT_IMPLEMENTED:
            raise FeatureGateError(f"feature gate {name} is not supported by py-scheduler")
    for name in sorted(ALWAYS_DEFAULT):
        default = KNOWN_GATES[name].default
        if gates.enabled(name) != default:
            raise FeatureGateError(
                f"feature gate {name}={str(not default).lower()} is not supported: "
                f"py-scheduler always behaves as {name}={str(default).lower()}"
            )
    return gates
