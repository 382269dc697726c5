"""The in-tree plugin registry and the default profile (``pkg/scheduler/framework/plugins/registry.go``,
``pkg/scheduler/apis/config/v1/default_plugins.go``, v1.37.2)."""

from __future__ import annotations

from functools import partial

from scheduler.features import DEFAULT_FEATURE_GATES, GENERIC_WORKLOAD, NODE_DECLARED_FEATURES, FeatureGates
from scheduler.framework import PluginFactory
from scheduler.plugins import names
from scheduler.plugins.capacityscheduling import CapacityScheduling
from scheduler.plugins.coscheduling import Coscheduling
from scheduler.plugins.defaultbinder import DefaultBinder
from scheduler.plugins.defaultpreemption import DefaultPreemption, WorkloadAwareDefaultPreemption
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.plugins.gangscheduling import GangScheduling
from scheduler.plugins.imagelocality import ImageLocality
from scheduler.plugins.interpodaffinity import InterPodAffinity
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.noderesourcesallocatable import NodeResourcesAllocatable
from scheduler.plugins.noderesourcetopology import NodeResourceTopologyMatch
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.plugins.preemptiontoleration import PreemptionToleration
from scheduler.plugins.queuesort import PrioritySort
from scheduler.plugins.schedulinggates import SchedulingGates
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.plugins.trimaran import LoadVariationRiskBalancing, LowRiskOverCommitment, TargetLoadPacking
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.plugins.volumerestrictions import VolumeRestrictions
from scheduler.plugins.volumezone import VolumeZone

# factory(args, handle) -> plugin. ``args`` is the plugin's pluginConfig args as the user wrote them
# (possibly empty); each plugin applies upstream's defaults and raises PluginArgsError on bad args.
IN_TREE_REGISTRY: dict[str, PluginFactory] = {
    names.SCHEDULING_GATES: SchedulingGates,
    names.PRIORITY_SORT: PrioritySort,
    names.NODE_UNSCHEDULABLE: NodeUnschedulable,
    names.NODE_NAME: NodeName,
    names.TAINT_TOLERATION: TaintToleration,
    names.NODE_AFFINITY: NodeAffinity,
    names.NODE_PORTS: NodePorts,
    names.NODE_RESOURCES_FIT: NodeResourcesFit,
    names.POD_TOPOLOGY_SPREAD: PodTopologySpread,
    names.INTER_POD_AFFINITY: InterPodAffinity,
    names.DEFAULT_PREEMPTION: DefaultPreemption,
    names.NODE_RESOURCES_BALANCED_ALLOCATION: NodeResourcesBalancedAllocation,
    names.IMAGE_LOCALITY: ImageLocality,
    names.VOLUME_RESTRICTIONS: VolumeRestrictions,
    names.NODE_VOLUME_LIMITS: NodeVolumeLimits,
    names.VOLUME_BINDING: VolumeBinding,
    names.VOLUME_ZONE: VolumeZone,
    names.DEFAULT_BINDER: DefaultBinder,
    names.DYNAMIC_RESOURCES: DynamicResources,
    # GA upstream since v1.37 (feature gate NodeDeclaredFeatures, locked on): always in the default profile.
    names.NODE_DECLARED_FEATURES: NodeDeclaredFeatures,
    # Beta upstream, off (feature gate GenericWorkload since v1.37): in the default profile while it is on.
    names.GANG_SCHEDULING: GangScheduling,
    # Out of tree upstream (scheduler-plugins); registered but never in the default profile.
    names.COSCHEDULING: Coscheduling,
    names.NODE_RESOURCES_ALLOCATABLE: NodeResourcesAllocatable,
    names.CAPACITY_SCHEDULING: CapacityScheduling,
    names.PREEMPTION_TOLERATION: PreemptionToleration,
    names.NODE_RESOURCE_TOPOLOGY_MATCH: NodeResourceTopologyMatch,
    names.TARGET_LOAD_PACKING: TargetLoadPacking,
    names.LOAD_VARIATION_RISK_BALANCING: LoadVariationRiskBalancing,
    names.LOW_RISK_OVER_COMMITMENT: LowRiskOverCommitment,
}


def in_tree_registry(features: FeatureGates = DEFAULT_FEATURE_GATES) -> dict[str, PluginFactory]:
    """IN_TREE_REGISTRY under ``features``: the plugins that read a gate (upstream's feature.Features)
    get it bound; with the default gates this is IN_TREE_REGISTRY itself."""
    registry = dict(IN_TREE_REGISTRY)
    if not features.storage_capacity_scoring:
        registry[names.VOLUME_BINDING] = partial(VolumeBinding, storage_capacity_scoring=False)
    if not features.volume_limit_scaling:
        registry[names.NODE_VOLUME_LIMITS] = partial(NodeVolumeLimits, volume_limit_scaling=False)
    if features.generic_workload:
        # Upstream's DefaultPreemption with EnableGenericWorkload: PodGroupPostFilter too.
        registry[names.DEFAULT_PREEMPTION] = WorkloadAwareDefaultPreemption
    return registry


# The default profile's multiPoint plugins we implement, in upstream's order, with upstream's score
# weights. Weight 0 means upstream sets none (the plugin does not score, or takes the default 1).
DEFAULT_MULTIPOINT: list[tuple[str, int]] = [
    (names.SCHEDULING_GATES, 0),
    (names.PRIORITY_SORT, 0),
    # NodeName before NodeUnschedulable since v1.37 (a node failing both is reported by NodeName).
    (names.NODE_NAME, 0),
    (names.NODE_UNSCHEDULABLE, 0),
    (names.TAINT_TOLERATION, 3),
    (names.NODE_AFFINITY, 2),
    (names.NODE_PORTS, 0),
    (names.NODE_RESOURCES_FIT, 1),
    (names.VOLUME_RESTRICTIONS, 0),
    (names.NODE_VOLUME_LIMITS, 0),
    (names.VOLUME_BINDING, 0),
    (names.VOLUME_ZONE, 0),
    (names.POD_TOPOLOGY_SPREAD, 2),
    (names.INTER_POD_AFFINITY, 2),
    # Inserted before DefaultPreemption (applyDynamicResources): deallocating an idle claim beats evicting.
    (names.DYNAMIC_RESOURCES, 2),
    (names.DEFAULT_PREEMPTION, 0),
    (names.NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    (names.IMAGE_LOCALITY, 1),
    (names.DEFAULT_BINDER, 0),
]

# Plugins that exist only behind a feature gate: name -> gate (upstream's applyFeatureGates).
# Appended to the default profile in this order, as upstream's applyFeatureGates does (after
# DefaultBinder; DynamicResources is placed before DefaultPreemption in DEFAULT_MULTIPOINT).
FEATURE_GATED_PLUGINS: dict[str, str] = {
    names.NODE_DECLARED_FEATURES: NODE_DECLARED_FEATURES,
    names.GANG_SCHEDULING: GENERIC_WORKLOAD,
}


def default_multipoint(features: FeatureGates) -> list[tuple[str, int]]:
    """The default profile under ``features``: gated plugins are appended, as upstream's
    applyFeatureGates appends NodeDeclaredFeatures and, under GenericWorkload, applyGangScheduling
    GangScheduling (v1.37.2)."""
    gated = [(name, 0) for name, gate in FEATURE_GATED_PLUGINS.items() if features.enabled(gate)]
    return [*DEFAULT_MULTIPOINT, *gated]


def gated_off(features: FeatureGates) -> frozenset[str]:
    """Plugins of the registry that the feature gates hold off."""
    return frozenset(name for name, gate in FEATURE_GATED_PLUGINS.items() if not features.enabled(gate))
