"""Which API resource an informer watches, and the URL paths for it."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A listable, watchable API resource, e.g. ``ResourceSpec("", "v1", "pods", namespaced=True)``."""

    group: str
    version: str
    plural: str
    namespaced: bool
    kind: str = ""

    @property
    def name(self) -> str:
        """``plural`` or ``plural.group``: the ``resource`` label on metrics."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None) -> str:
        """The collection path; across all namespaces when ``namespace`` is None or not applicable."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            return f"{prefix}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{prefix}/{self.plural}"


PODS = ResourceSpec(group="", version="v1", plural="pods", namespaced=True, kind="Pod")
NODES = ResourceSpec(group="", version="v1", plural="nodes", namespaced=False, kind="Node")
NAMESPACES = ResourceSpec(group="", version="v1", plural="namespaces", namespaced=False, kind="Namespace")
SERVICES = ResourceSpec(group="", version="v1", plural="services", namespaced=True, kind="Service")
PERSISTENT_VOLUMES = ResourceSpec(
    group="", version="v1", plural="persistentvolumes", namespaced=False, kind="PersistentVolume"
)
PERSISTENT_VOLUME_CLAIMS = ResourceSpec(
    group="", version="v1", plural="persistentvolumeclaims", namespaced=True, kind="PersistentVolumeClaim"
)
CSI_NODES = ResourceSpec(
    group="storage.k8s.io", version="v1", plural="csinodes", namespaced=False, kind="CSINode"
)
STORAGE_CLASSES = ResourceSpec(
    group="storage.k8s.io", version="v1", plural="storageclasses", namespaced=False, kind="StorageClass"
)
REPLICA_SETS = ResourceSpec(
    group="apps", version="v1", plural="replicasets", namespaced=True, kind="ReplicaSet"
)
STATEFUL_SETS = ResourceSpec(
    group="apps", version="v1", plural="statefulsets", namespaced=True, kind="StatefulSet"
)
POD_DISRUPTION_BUDGETS = ResourceSpec(
    group="policy", version="v1", plural="poddisruptionbudgets", namespaced=True, kind="PodDisruptionBudget"
)
REPLICATION_CONTROLLERS = ResourceSpec(
    group="", version="v1", plural="replicationcontrollers", namespaced=True, kind="ReplicationController"
)
CSI_DRIVERS = ResourceSpec(
    group="storage.k8s.io", version="v1", plural="csidrivers", namespaced=False, kind="CSIDriver"
)
# Read by NodeVolumeLimits (volumes attached to a node count against its CSI limits).
VOLUME_ATTACHMENTS = ResourceSpec(
    group="storage.k8s.io",
    version="v1",
    plural="volumeattachments",
    namespaced=False,
    kind="VolumeAttachment",
)
CSI_STORAGE_CAPACITIES = ResourceSpec(
    group="storage.k8s.io",
    version="v1",
    plural="csistoragecapacities",
    namespaced=True,
    kind="CSIStorageCapacity",
)
RESOURCE_CLAIMS = ResourceSpec(
    group="resource.k8s.io", version="v1", plural="resourceclaims", namespaced=True, kind="ResourceClaim"
)
RESOURCE_CLAIM_TEMPLATES = ResourceSpec(
    group="resource.k8s.io",
    version="v1",
    plural="resourceclaimtemplates",
    namespaced=True,
    kind="ResourceClaimTemplate",
)
RESOURCE_SLICES = ResourceSpec(
    group="resource.k8s.io", version="v1", plural="resourceslices", namespaced=False, kind="ResourceSlice"
)
DEVICE_CLASSES = ResourceSpec(
    group="resource.k8s.io", version="v1", plural="deviceclasses", namespaced=False, kind="DeviceClass"
)
# GA in v1.37 (DRADeviceTaintRules, on): taints the scheduler adds to matching devices of ResourceSlices.
DEVICE_TAINT_RULES = ResourceSpec(
    group="resource.k8s.io", version="v1", plural="devicetaintrules", namespaced=False, kind="DeviceTaintRule"
)
RESOURCE_QUOTAS = ResourceSpec(
    group="", version="v1", plural="resourcequotas", namespaced=True, kind="ResourceQuota"
)
PRIORITY_CLASSES = ResourceSpec(
    group="scheduling.k8s.io", version="v1", plural="priorityclasses", namespaced=False, kind="PriorityClass"
)
# scheduler-plugins' PodGroup (Coscheduling), an optional CRD: watched only when Coscheduling is enabled.
PODGROUPS = ResourceSpec(
    group="scheduling.x-k8s.io", version="v1alpha1", plural="podgroups", namespaced=True, kind="PodGroup"
)
# scheduler-plugins' ElasticQuota (CapacityScheduling), an optional CRD: watched only when CapacityScheduling
# is enabled.
ELASTIC_QUOTAS = ResourceSpec(
    group="scheduling.x-k8s.io",
    version="v1alpha1",
    plural="elasticquotas",
    namespaced=True,
    kind="ElasticQuota",
)
# The NodeResourceTopology CRD (NodeResourceTopologyMatch), cluster-scoped, one object per node: watched only
# when NodeResourceTopologyMatch is enabled.
NODE_RESOURCE_TOPOLOGIES = ResourceSpec(
    group="topology.node.k8s.io",
    version="v1alpha2",
    plural="noderesourcetopologies",
    namespaced=False,
    kind="NodeResourceTopology",
)
# Upstream's own gang API (beta and off in v1.37, feature gate GenericWorkload): served only when the API
# server runs with --runtime-config=scheduling.k8s.io/v1beta1=true; watched only when GenericWorkload is on.
WORKLOAD_PODGROUPS = ResourceSpec(
    group="scheduling.k8s.io", version="v1beta1", plural="podgroups", namespaced=True, kind="PodGroup"
)
