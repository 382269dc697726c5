"""Feature gates: ``--feature-gates=GenericWorkload=true,GangScheduling=true``, as kube-scheduler's flag.

py-scheduler knows only the gates that change what it does; the others kube-scheduler v1.36.3 has are
not accepted, so that a gate a user believes is on is never silently without effect. Defaults, stages
and dependencies are upstream's (``pkg/features/kube_features.go``):

* ``GenericWorkload`` (alpha, off): pods' ``spec.schedulingGroup`` is honoured; a pod of a group is
  scheduled in a pod group cycle (all its queued siblings on one snapshot, see
  ``scheduler/cycle/schedule_one_podgroup.py``). The API server must serve ``scheduling.k8s.io/v1alpha2``.
* ``GangScheduling`` (alpha, off, needs GenericWorkload): the GangScheduling plugin joins the default
  profile (all-or-nothing for PodGroups with a ``gang`` policy).
* ``TopologyAwareWorkloadScheduling``, ``WorkloadAwarePreemption``, ``DRAWorkloadResourceClaims``
  (alpha, off): not implemented. Asking for them is a start-up error, and PodGroups that use their
  fields are refused by name (GangScheduling's PreFilter), never placed as if the field were absent.
* ``NodeDeclaredFeatures`` (beta, on): the NodeDeclaredFeatures plugin joins the default profile (pods
  that need a node feature fit only nodes declaring it in ``status.declaredFeatures``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"
DRA_WORKLOAD_RESOURCE_CLAIMS = "DRAWorkloadResourceClaims"
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"

# gate -> (default, the gates it needs), upstream's defaults and dependencies.
KNOWN_GATES: Mapping[str, tuple[bool, tuple[str, ...]]] = {
    GENERIC_WORKLOAD: (False, ()),
    GANG_SCHEDULING: (False, (GENERIC_WORKLOAD,)),
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: (False, (GENERIC_WORKLOAD,)),
    WORKLOAD_AWARE_PREEMPTION: (False, (GANG_SCHEDULING,)),
    DRA_WORKLOAD_RESOURCE_CLAIMS: (False, (GENERIC_WORKLOAD,)),
    # Beta, on by default since v1.36.
    NODE_DECLARED_FEATURES: (True, ()),
}
# Recognised (so the message can say why), but py-scheduler cannot honour them when on.
NOT_IMPLEMENTED = frozenset(
    {TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, WORKLOAD_AWARE_PREEMPTION, DRA_WORKLOAD_RESOURCE_CLAIMS}
)


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value py-scheduler cannot run with; ``str()`` is the one line to print."""


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The gates explicitly set; the rest take upstream's default."""

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, gate: str) -> bool:
        if gate not in KNOWN_GATES:
            raise KeyError(gate)
        return self.overrides.get(gate, KNOWN_GATES[gate][0])

    @property
    def generic_workload(self) -> bool:
        return self.enabled(GENERIC_WORKLOAD)

    @property
    def gang_scheduling(self) -> bool:
        return self.enabled(GANG_SCHEDULING)


DEFAULT_FEATURE_GATES = FeatureGates()


def parse_feature_gates(text: str) -> FeatureGates:
    """``A=true,B=false`` -> FeatureGates, with upstream's checks (unknown gate, bad value, a gate on
    whose dependency is off) plus py-scheduler's own: a recognised gate it does not implement."""
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
            known = ", ".join(sorted(KNOWN_GATES))
            raise FeatureGateError(f"unrecognized feature gate: {name} (py-scheduler knows {known})")
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise FeatureGateError(f"invalid value of {name}={value}, err: want true or false")
        overrides[name] = lowered == "true"
    gates = FeatureGates(overrides)
    for name in KNOWN_GATES:
        if not gates.enabled(name):
            continue
        if name in NOT_IMPLEMENTED:
            raise FeatureGateError(f"feature gate {name} is not supported by py-scheduler")
        missing = [dep for dep in KNOWN_GATES[name][1] if not gates.enabled(dep)]
        if missing:
            raise FeatureGateError(
                f"{name} is enabled, but depends on features that are disabled: [{' '.join(missing)}]"
            )
    return gates
