"""The side-by-side workloads: nodes, pods, churn and the pods expected to stay pending.

Everything here is deterministic (fixed seeds), so kube-scheduler and py-scheduler get byte-for-byte
the same pods apart from ``spec.schedulerName``, and their pending sets can be compared by name.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.schedulers import KUBE, SCHED_PLUGINS
from devcluster.nodes import make_node

REPO = Path(__file__).resolve().parents[1]

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

BASIC = "basic"
LARGE = "large"
# scheduler_perf's largest size (15,000 nodes, 30,000 pods), with memory and startup probes (bench.scale).
HUGE = "huge"
MIXED = "mixed"
# scheduler_perf's pod-relationship cases (test/integration/scheduler_perf/{affinity,topology_spreading}).
TOPOLOGY_SPREADING = "TopologySpreading"
PREFERRED_TOPOLOGY_SPREADING = "PreferredTopologySpreading"
POD_ANTI_AFFINITY = "PodAntiAffinity"
POD_AFFINITY = "PodAffinity"
PREFERRED_AFFINITY = "PreferredAffinity"
CONSTRAINT_WORKLOADS = (
    TOPOLOGY_SPREADING,
    PREFERRED_TOPOLOGY_SPREADING,
    POD_ANTI_AFFINITY,
    POD_AFFINITY,
    PREFERRED_AFFINITY,
)
# scheduler_perf's PreemptionBasic (misc/performance-config.yaml).
PREEMPTION = "preemption"
# scheduler_perf's volume and DRA cases, and a basic workload through one extender.
VOLUMES = "volumes"
DRA = "dra"
EXTENDER = "extender"
# scheduler_perf's SteadyStateClusterResourceClaimTemplate: claims from a template, created and deleted.
DRA_STEADY = "SteadyStateClusterResourceClaimTemplate"
EXTRA_WORKLOADS = (VOLUMES, DRA, EXTENDER, DRA_STEADY)
# More of scheduler_perf's shapes (bench/README.md describes each).
MIXED_CHURN = "SchedulingWithMixedChurn"
UNSCHEDULABLE = "Unschedulable"
GATED = "SchedulingWhileGated"
NODE_AFFINITY = "NodeAffinity"
DEFAULT_SPREADING = "DefaultTopologySpreading"
SHAPE_WORKLOADS = (MIXED_CHURN, UNSCHEDULABLE, GATED, NODE_AFFINITY, DEFAULT_SPREADING)
# Coscheduling gangs, against the scheduler-plugins scheduler instead of kube-scheduler.
GANG = "gang"
ALL_WORKLOADS = (
    BASIC, LARGE, MIXED, *CONSTRAINT_WORKLOADS, PREEMPTION, *EXTRA_WORKLOADS, *SHAPE_WORKLOADS, GANG, HUGE
)  # fmt: skip
# Upstream creates its init pods in sched-0 and measures sched-1; the terms name both namespaces.
INIT_NAMESPACE = "bench-init"
MEASURED_NAMESPACE = "bench"
# SchedulingWithMixedChurn's recreated objects live here, out of the measured namespace.
CHURN_NAMESPACE = "bench-churn"
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True)
class Churn:
    """Delete ``pod`` once ``after_created`` pods of the workload have been created."""

    after_created: int
    pod: str


@dataclass(frozen=True)
class ApiObject:
    """An object the harness creates before the scheduler starts (after the nodes).

    ``path`` is the collection to POST to. ``status``, if given, is then written through the
    ``/status`` subresource (create resets a PV's or PVC's status)."""

    path: str
    body: dict[str, Any]
    status: dict[str, Any] | None = None


@dataclass(frozen=True)
class ExtenderSpec:
    """examples/extender run as a process for the run; both schedulers get the same extenders entry."""

    label: str  # key=value a node must carry to pass the filter verb
    annotation: str  # node annotation holding the prioritize score (0..10)


@dataclass
class Workload:
    name: str
    description: str
    nodes: list[dict[str, Any]]
    # Pod templates without spec.schedulerName; pod names are unique within the workload.
    pods: list[dict[str, Any]]
    churn: list[Churn] = field(default_factory=list)
    # Pods no node can take, whatever the placement of the others.
    expect_unschedulable: frozenset[str] = frozenset()
    # Created and bound before the clock starts (upstream's initPods), in INIT_NAMESPACE.
    init_pods: list[dict[str, Any]] = field(default_factory=list)
    # Created, in order, before the scheduler starts (PVs, PVCs, CSINodes, ResourceSlices...).
    objects: list[ApiObject] = field(default_factory=list)
    extender: ExtenderSpec | None = None
    # PriorityClasses (name -> value) created before any pod: the Priority admission plugin refuses a
    # bare spec.priority, so pods name a class.
    priority_classes: dict[str, int] = field(default_factory=dict)
    # scheduler_perf's churn op in recreate mode: while the pods are created and scheduled, every
    # ``background_interval_s`` the previous copies of these objects are deleted and new ones (names
    # suffixed with the round) created. Pods among them get the contestant's schedulerName.
    background: list[ApiObject] = field(default_factory=list)
    background_interval_s: float = 1.0
    # Report how the bound pods spread over zones and nodes (bench.prereqs.spread_note).
    report_spread: bool = False
    # scheduler_perf's steady state: this many pods in flight; each one bound is deleted and the next
    # created (bench.loadgen.create_pods_steadily). 0: every pod created as fast as possible.
    steady_in_flight: int = 0
    # kube-controller-manager controllers the workload needs, started with the control plane.
    controllers: tuple[str, ...] = ()
    # Watch every ResourceClaim through the run (bench.claim_watch): no device twice at any time.
    watch_claims: bool = False
    # The scheduler py-scheduler is compared with (bench.schedulers.PEERS), and the profile (plugins,
    # pluginConfig) both run instead of the default one; CRDs installed before any object.
    peer: str = KUBE
    # Run the peer's own controller beside it (scheduler-plugins' PodGroup/ElasticQuota controller on
    # gang, where py-scheduler keeps PodGroup status in process); its CPU counts as the peer's.
    peer_controller: bool = False
    profile: dict[str, Any] | None = None
    crds: tuple[Path, ...] = ()

    @property
    def pod_names(self) -> list[str]:
        return [p["metadata"]["name"] for p in self.pods]

    def deleted(self) -> frozenset[str]:
        return frozenset(c.pod for c in self.churn)

    def expect_bound(self) -> frozenset[str]:
        return frozenset(self.pod_names) - self.expect_unschedulable - self.deleted()

    def bodies(self, scheduler_name: str, *, init: bool = False) -> list[tuple[str, bytes]]:
        """(name, JSON body) per pod, serialised up front so the clock never pays for it."""
        out = []
        for pod in self.init_pods if init else self.pods:
            spec = dict(pod["spec"])
            spec["schedulerName"] = scheduler_name
            out.append((pod["metadata"]["name"], orjson.dumps({**pod, "spec": spec})))
        return out


def pod(
    name: str,
    cpu: str = "100m",
    memory: str = "128Mi",
    *,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "pause", "image": PAUSE_IMAGE,
             "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        ],
        "terminationGracePeriodSeconds": 0,
    }  # fmt: skip
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = dict(affinity)
    if tolerations:
        spec["tolerations"] = tolerations
    meta: dict[str, Any] = {"name": name, "labels": {"app": "bench", **(labels or {})}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def basic(nodes: int = 1000, pods: int = 5000, name: str = BASIC) -> Workload:
    """scheduler_perf's SchedulingBasic: identical nodes, identical small pods."""
    return Workload(
        name=name,
        description=f"{nodes} nodes (4 CPU, 16 GiB, 110 pods), {pods} pods (100m CPU, 128 MiB)",
        nodes=[make_node(f"node-{i:05d}", cpu="4", memory="16Gi", pods=110) for i in range(nodes)],
        pods=[pod(f"pod-{i:05d}") for i in range(pods)],
    )


ZONES = ("zone-a", "zone-b", "zone-c")
DEDICATED_TAINT = "dedicated=batch:NoSchedule"


def _mixed_node(i: int) -> dict[str, Any]:
    highmem = i % 5 == 0
    labels = {
        REGION_LABEL: "region-1",
        ZONE_LABEL: ZONES[i % 3],
        "disktype": "ssd" if i % 2 == 0 else "hdd",
        "node-pool": "highmem" if highmem else "general",
    }
    # i % 10 == 3 never overlaps the highmem pool (i % 5 == 0), so highmem pods keep all their nodes.
    taints = [DEDICATED_TAINT] if i % 10 == 3 else None
    return make_node(
        f"node-{i:05d}",
        cpu="8" if highmem else "4",
        memory="32Gi" if highmem else "16Gi",
        pods=110,
        labels=labels,
        taints=taints,
    )


def _required_zones(zones: list[str]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": zones}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _preferred_ssd() -> dict[str, Any]:
    pref = {"key": "disktype", "operator": "In", "values": ["ssd"]}
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "preference": {"matchExpressions": [pref]}}
            ]
        }
    }


_BATCH_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}

# (kind, share of pods): shares add up to 1.
MIXED_KINDS: tuple[tuple[str, float], ...] = (
    ("small", 0.40),
    ("zonal", 0.20),
    ("ssd-preferred", 0.15),
    ("batch", 0.10),
    ("highmem", 0.10),
    ("unschedulable", 0.05),
)


def _mixed_pod(name: str, kind: str, index: int) -> dict[str, Any]:
    labels = {"kind": kind}
    if kind == "small":
        return pod(name, labels=labels)
    if kind == "zonal":
        return pod(name, "500m", "512Mi", labels=labels, affinity=_required_zones(["zone-a", "zone-b"]))
    if kind == "ssd-preferred":
        return pod(name, "250m", "256Mi", labels=labels, affinity=_preferred_ssd())
    if kind == "batch":
        return pod(name, "1", "2Gi", labels=labels, tolerations=[_BATCH_TOLERATION])
    if kind == "highmem":
        return pod(name, "2", "8Gi", labels=labels, node_selector={"node-pool": "highmem"})
    # Unschedulable two ways: a label no node has, and a request larger than any node.
    if index % 2 == 0:
        return pod(name, labels=labels, node_selector={"disktype": "nvme"})
    return pod(name, "64", "1Gi", labels=labels)


def mixed(nodes: int = 1000, pods: int = 3000, churn_every: int = 10, churn_lag: int = 300) -> Workload:
    """Zones, labels, taints; affinity, tolerations, mixed sizes, some unschedulable, plus deletes.

    Churn deletes every ``churn_every``-th schedulable pod once ``churn_lag`` more pods have been
    created: some are bound by then, some still queued.
    """
    rng = random.Random(7)
    kinds: list[str] = []
    for kind, share in MIXED_KINDS:
        kinds += [kind] * round(pods * share)
    kinds = (kinds + ["small"] * pods)[:pods]
    rng.shuffle(kinds)
    pod_list: list[dict[str, Any]] = []
    unschedulable: set[str] = set()
    churn: list[Churn] = []
    for i, kind in enumerate(kinds):
        name = f"pod-{i:05d}"
        pod_list.append(_mixed_pod(name, kind, i))
        if kind == "unschedulable":
            unschedulable.add(name)
        elif i % churn_every == churn_every // 2:
            churn.append(Churn(min(i + 1 + churn_lag, pods), name))
    return Workload(
        name=MIXED,
        description=(
            f"{nodes} nodes in 3 zones (1/5 highmem 8 CPU 32 GiB, 1/10 tainted dedicated=batch, "
            f"disktype ssd/hdd); {pods} pods: "
            + ", ".join(f"{int(share * 100)}% {kind}" for kind, share in MIXED_KINDS)
            + f"; {len(churn)} deleted while scheduling"
        ),
        nodes=[_mixed_node(i) for i in range(nodes)],
        pods=pod_list,
        churn=churn,
        expect_unschedulable=frozenset(unschedulable),
    )


def _upstream_pod(name: str, labels: Mapping[str, str], spec_extra: Mapping[str, Any]) -> dict[str, Any]:
    """scheduler_perf's pod-default.yaml shape (100m CPU, 500 MiB) with one port, plus ``spec_extra``."""
    body = pod(name, "100m", "500Mi", labels=labels)
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    body["spec"].update(spec_extra)
    return body


def _term(labels: Mapping[str, str], topology_key: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": dict(labels)},
        "topologyKey": topology_key,
        "namespaces": [MEASURED_NAMESPACE, INIT_NAMESPACE],
    }


def _spread(labels: Mapping[str, str], when: str) -> dict[str, Any]:
    constraint = {
        "maxSkew": 5,
        "topologyKey": ZONE_LABEL,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": dict(labels)},
    }
    return {"topologySpreadConstraints": [constraint]}


def constraint_workload(name: str, nodes: int, init: int, measure: int) -> Workload:
    """One of scheduler_perf's affinity / spreading cases at this machine's size.

    Nodes are node-default.yaml (4 CPU, 32 GiB, 110 pods); init pods are bound before the clock
    starts and count for every constraint, as upstream's initPods do.
    """
    zones: tuple[str, ...] = ()
    template: dict[str, Any] = {}
    init_template: dict[str, Any] | None = None
    labels: dict[str, str] = {}
    if name in (TOPOLOGY_SPREADING, PREFERRED_TOPOLOGY_SPREADING):
        zones = ("moon-1", "moon-2", "moon-3")
        labels = {"color": "blue"}
        when = "DoNotSchedule" if name == TOPOLOGY_SPREADING else "ScheduleAnyway"
        template, init_template = _spread(labels, when), {}
    elif name == POD_ANTI_AFFINITY:
        labels = {"color": "green"}
        term = _term(labels, HOSTNAME_LABEL)
        template = {
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        }
    elif name == POD_AFFINITY:
        zones = ("zone1",)
        labels = {"color": "blue"}
        term = _term(labels, ZONE_LABEL)
        template = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    elif name == PREFERRED_AFFINITY:
        labels = {"color": "red"}
        weighted = {"weight": 1, "podAffinityTerm": _term(labels, HOSTNAME_LABEL)}
        template = {
            "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}}
        }
    else:
        raise ValueError(f"unknown constraint workload {name!r}")
    node_list = [
        make_node(
            f"node-{i:05d}",
            cpu="4",
            memory="32Gi",
            pods=110,
            labels={ZONE_LABEL: zones[i % len(zones)]} if zones else None,
        )
        for i in range(nodes)
    ]
    init_spec = template if init_template is None else init_template
    init_labels = labels if init_template is None else {}
    what = {
        TOPOLOGY_SPREADING: "maxSkew 5 over 3 zones, DoNotSchedule",
        PREFERRED_TOPOLOGY_SPREADING: "maxSkew 5 over 3 zones, ScheduleAnyway",
        POD_ANTI_AFFINITY: "required anti-affinity on hostname to each other",
        POD_AFFINITY: "required affinity on zone to each other (one zone)",
        PREFERRED_AFFINITY: "preferred affinity on hostname to each other",
    }[name]
    return Workload(
        name=name,
        description=(
            f"scheduler_perf's {name} shape: {nodes} nodes (4 CPU, 32 GiB, 110 pods), {init} init pods "
            f"bound before the clock, then {measure} measured pods (100m CPU, 500 MiB) with {what}"
        ),
        nodes=node_list,
        pods=[_upstream_pod(f"pod-{i:05d}", labels, template) for i in range(measure)],
        init_pods=[_upstream_pod(f"init-{i:05d}", init_labels, init_spec) for i in range(init)],
    )


def preemption(nodes: int, init: int, measure: int) -> Workload:
    """scheduler_perf's PreemptionBasic: low-priority init pods (900m CPU, 500 MiB; four fill a 4-CPU
    node) bound before the clock, then high-priority pods (3 CPU, 500 MiB) that each fit only by
    preempting three of them. Upstream's templates set spec.priority 0 and 10; here PriorityClasses."""
    low = _upstream_pod_sized("init-{:05d}", "900m", "bench-low")
    high = _upstream_pod_sized("pod-{:05d}", "3", "bench-high")
    return Workload(
        name=PREEMPTION,
        description=(
            f"scheduler_perf's PreemptionBasic shape: {nodes} nodes (4 CPU, 32 GiB, 110 pods), {init} "
            f"low-priority init pods (900m CPU) bound before the clock, then {measure} high-priority pods "
            "(3 CPU) that each preempt three"
        ),
        nodes=[make_node(f"node-{i:05d}", cpu="4", memory="32Gi", pods=110) for i in range(nodes)],
        pods=[high(i) for i in range(measure)],
        init_pods=[low(i) for i in range(init)],
        priority_classes={"bench-low": 0, "bench-high": 10},
    )


def _upstream_pod_sized(name: str, cpu: str, priority_class: str) -> Any:
    def make(i: int) -> dict[str, Any]:
        body = pod(name.format(i), cpu, "500Mi")
        body["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
        body["spec"]["priorityClassName"] = priority_class
        return body

    return make


# (nodes, init pods, measured pods) for the preemption workload, full and quick (upstream: 1000 nodes,
# 4000 init pods, 1000 measured pods).
PREEMPTION_SIZES = ((500, 2000, 500), (100, 400, 100))


# (nodes, init pods, measured pods) per constraint workload, full and quick. Sized for two cores:
# upstream's 5,000-node cases scaled to 1,000 nodes, anti-affinity kept below one pod per node.
CONSTRAINT_SIZES: dict[str, tuple[tuple[int, int, int], tuple[int, int, int]]] = {
    TOPOLOGY_SPREADING: ((1000, 1000, 1000), (300, 300, 300)),
    PREFERRED_TOPOLOGY_SPREADING: ((1000, 1000, 1000), (300, 300, 300)),
    POD_ANTI_AFFINITY: ((1000, 200, 500), (300, 50, 200)),
    POD_AFFINITY: ((1000, 500, 1000), (300, 100, 300)),
    PREFERRED_AFFINITY: ((1000, 500, 1000), (300, 100, 300)),
}


# ---- volumes: scheduler_perf's SchedulingCSIPVs (scheduler_perf/volumes) ----

CSI_DRIVER = "ebs.csi.aws.com"
CSI_ATTACH_LIMIT = 39
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


def _bound_pv_pair(namespace: str, i: int) -> tuple[str, list[ApiObject]]:
    """templates/pv-csi.yaml + pvc.yaml bound to each other as upstream's CreatePodWithPersistentVolume
    does: PVC with volumeName and the bind-completed annotation, PV with claimRef, both phase Bound
    through the status subresource. No PV controller needed."""
    pvc_name = f"pvc-{i}"
    pv_name = f"{namespace}-pv-{i}"
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": pvc_name, "annotations": {BIND_COMPLETED: "true"}},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": pv_name,
        },
    }
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "capacity": {"storage": "1Gi"},
            "csi": {"driver": CSI_DRIVER, "volumeHandle": pv_name},
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": namespace, "name": pvc_name
            },
        },
    }  # fmt: skip
    return pvc_name, [
        ApiObject(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", pvc, {"phase": "Bound"}),
        ApiObject("/api/v1/persistentvolumes", pv, {"phase": "Bound"}),
    ]


def _pvc_volume(claim: str) -> dict[str, Any]:
    return {"volumes": [{"name": "vol", "persistentVolumeClaim": {"claimName": claim}}]}


def volumes(nodes: int, init: int, measure: int) -> Workload:
    """scheduler_perf's SchedulingCSIPVs: node-default.yaml nodes with a CSINode allowing 39 attachments
    of ebs.csi.aws.com, every pod with its own pre-bound CSI PV + PVC (init pods too)."""
    node_list = [
        make_node(
            f"node-{i:05d}", cpu="4", memory="32Gi", pods=110,
            extra_allocatable={f"attachable-volumes-csi-{CSI_DRIVER}": str(CSI_ATTACH_LIMIT)},
        )
        for i in range(nodes)
    ]  # fmt: skip
    objects = [
        ApiObject(
            "/apis/storage.k8s.io/v1/csinodes",
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": node["metadata"]["name"]},
                "spec": {
                    "drivers": [
                        {
                            "name": CSI_DRIVER,
                            "nodeID": node["metadata"]["name"],
                            "allocatable": {"count": CSI_ATTACH_LIMIT},
                        }
                    ]
                },
            },
        )
        for node in node_list
    ]
    pods: dict[str, list[dict[str, Any]]] = {INIT_NAMESPACE: [], MEASURED_NAMESPACE: []}
    for namespace, count, prefix in ((INIT_NAMESPACE, init, "init"), (MEASURED_NAMESPACE, measure, "pod")):
        for i in range(count):
            claim, pair = _bound_pv_pair(namespace, i)
            objects += pair
            pods[namespace].append(_upstream_pod(f"{prefix}-{i:05d}", {}, _pvc_volume(claim)))
    return Workload(
        name=VOLUMES,
        description=(
            f"scheduler_perf's SchedulingCSIPVs shape: {nodes} nodes (4 CPU, 32 GiB, 110 pods) with CSINodes "
            f"({CSI_DRIVER} attach limit {CSI_ATTACH_LIMIT}), {init} init pods bound before the clock, then "
            f"{measure} measured pods (100m CPU, 500 MiB), each with its own CSI PV + PVC created "
            "pre-bound before the clock"
        ),
        nodes=node_list,
        pods=pods[MEASURED_NAMESPACE],
        init_pods=pods[INIT_NAMESPACE],
        objects=objects,
    )


# ---- DRA: scheduler_perf's SchedulingWithResourceClaim(Template) (scheduler_perf/dra) ----

DRA_DRIVER = "test-driver.cdi.k8s.io"
DEVICE_CLASS = "test-class"


def _resource_slice(node: str, devices: int) -> dict[str, Any]:
    """dra.go's resourceSlice(): one pool per node, ``devices`` GPUs with upstream's attributes."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{i}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": i},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for i in range(devices)
            ],
        },
    }


def _claim_pod(name: str, claim: str) -> dict[str, Any]:
    """templates/pod-with-claim-template.yaml with the claim pre-created (resourceClaimName)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "containers": [
                {"name": "pause", "image": PAUSE_IMAGE, "resources": {"claims": [{"name": "resource"}]}}
            ],
            "resourceClaims": [{"name": "resource", "resourceClaimName": claim}],
            "terminationGracePeriodSeconds": 0,
        },
    }


def _dra_cluster(
    nodes: int, devices_per_node: int, init: int
) -> tuple[list[dict[str, Any]], list[ApiObject], list[dict[str, Any]]]:
    """The DRA nodes, their ResourceSlices, the DeviceClass, and ``init`` pods with a claim each
    (the claims among the objects, created before the clock)."""
    node_list = [
        make_node(
            f"scheduler-perf-dra-{i:05d}", cpu="4", memory="32Gi", pods=110, labels={"node-with-dra": "true"}
        )
        for i in range(nodes)
    ]
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]},
    }
    objects = [ApiObject("/apis/resource.k8s.io/v1/deviceclasses", device_class)]
    objects += [
        ApiObject(
            "/apis/resource.k8s.io/v1/resourceslices",
            _resource_slice(n["metadata"]["name"], devices_per_node),
        )
        for n in node_list
    ]
    init_pods = []
    for i in range(init):
        claim = f"init-{i:05d}-resource"
        objects.append(_claim_object(INIT_NAMESPACE, claim))
        init_pods.append(_claim_pod(f"init-{i:05d}", claim))
    return node_list, objects, init_pods


DRA_CLAIM_SPEC = {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": DEVICE_CLASS}}]}}


def _claim_object(namespace: str, name: str) -> ApiObject:
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name}}
    body["spec"] = DRA_CLAIM_SPEC
    return ApiObject(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims", body)


def dra(nodes: int, devices_per_node: int, init: int, measure: int) -> Workload:
    """scheduler_perf's SchedulingWithResourceClaimTemplate allocation pattern (one claim, one device
    per pod, the cluster filled up completely), with each pod's ResourceClaim created before the
    clock from resourceclaimtemplate.yaml's spec, so no kube-controller-manager is needed (the
    upstream SchedulingWithResourceClaim case pre-creates its claims the same way)."""
    node_list, objects, init_pods = _dra_cluster(nodes, devices_per_node, init)
    pods = []
    for i in range(measure):
        claim = f"pod-{i:05d}-resource"
        objects.append(_claim_object(MEASURED_NAMESPACE, claim))
        pods.append(_claim_pod(f"pod-{i:05d}", claim))
    return Workload(
        name=DRA,
        description=(
            f"scheduler_perf's SchedulingWithResourceClaimTemplate shape: {nodes} nodes (4 CPU, 32 GiB), "
            f"a ResourceSlice per node with {devices_per_node} devices of {DRA_DRIVER}, a DeviceClass with a "
            f"CEL selector; {init} init pods bound before the clock, then {measure} measured pods, each "
            "with its own ResourceClaim for one device (claims created before the clock, no controller); "
            f"{init + measure} claims for {nodes * devices_per_node} devices"
        ),
        nodes=node_list,
        pods=pods,
        init_pods=init_pods,
        objects=objects,
    )


CLAIM_TEMPLATE = "test-claim-template"


def dra_steady(nodes: int, devices_per_node: int, init: int, measure: int, in_flight: int) -> Workload:
    """scheduler_perf's SteadyStateClusterResourceClaimTemplate: ``init`` devices taken by init pods
    (upstream's initClaims, allocated before the clock), then pods whose claim comes from a
    ResourceClaimTemplate (kube-controller-manager's resourceclaim controller creates it, and deletes
    it once its pod is gone), ``in_flight`` at a time: each pod seen bound is deleted and the next one
    created (upstream's steadyState createPods, measurePods 10). The cluster stays near its starting
    fill; every pod's claim is created, allocated, reserved, released and deleted during the run."""
    node_list, objects, init_pods = _dra_cluster(nodes, devices_per_node, init)
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": CLAIM_TEMPLATE},
        "spec": {"spec": DRA_CLAIM_SPEC},
    }
    objects.append(
        ApiObject(
            f"/apis/resource.k8s.io/v1/namespaces/{MEASURED_NAMESPACE}/resourceclaimtemplates", template
        )
    )
    pods = []
    for i in range(measure):
        body = _claim_pod(f"pod-{i:05d}", "")
        body["spec"]["resourceClaims"] = [{"name": "resource", "resourceClaimTemplateName": CLAIM_TEMPLATE}]
        pods.append(body)
    return Workload(
        name=DRA_STEADY,
        description=(
            f"scheduler_perf's SteadyStateClusterResourceClaimTemplate shape: {nodes} nodes, a "
            f"ResourceSlice per node with {devices_per_node} devices, {init} of the "
            f"{nodes * devices_per_node} devices taken by init pods before the clock; then {measure} pods "
            f"with a claim from a ResourceClaimTemplate, {in_flight} in flight: each bound pod is deleted "
            "and the next created, kube-controller-manager's resourceclaim controller creating and "
            "deleting the claims; a watch on every claim checks that no device is ever allocated twice"
        ),
        nodes=node_list,
        pods=pods,
        init_pods=init_pods,
        objects=objects,
        steady_in_flight=in_flight,
        controllers=("resourceclaim-controller",),
        watch_claims=True,
    )


# ---- extender: basic pods through one filter+prioritize extender (examples/extender) ----

EXTENDER_LABEL = "bench.example.com/extender"
EXTENDER_ANNOTATION = "bench.example.com/extender-score"


def extender(nodes: int, pods: int) -> Workload:
    """basic's nodes and pods, with examples/extender on loopback as a filter (4 nodes in 5 carry the
    label it wants) and prioritize (score 0..10 from an annotation) extender, full Node objects
    (nodeCacheCapable false), weight 1."""
    node_list = []
    for i in range(nodes):
        node = make_node(
            f"node-{i:05d}", cpu="4", memory="16Gi", pods=110,
            labels={EXTENDER_LABEL: "no" if i % 5 == 0 else "ok"},
        )  # fmt: skip
        node["metadata"]["annotations"] = {EXTENDER_ANNOTATION: str(i % 11)}
        node_list.append(node)
    return Workload(
        name=EXTENDER,
        description=(
            f"{nodes} nodes (4 CPU, 16 GiB, 110 pods; 4 in 5 labelled {EXTENDER_LABEL}=ok), {pods} pods "
            "(100m CPU, 128 MiB) through one filter+prioritize extender (examples/extender, its own process "
            "on loopback, full Node objects, weight 1), the same extenders entry for both schedulers"
        ),
        nodes=node_list,
        pods=[pod(f"pod-{i:05d}") for i in range(pods)],
        extender=ExtenderSpec(label=f"{EXTENDER_LABEL}=ok", annotation=EXTENDER_ANNOTATION),
    )


# ---- more of scheduler_perf's shapes (misc/performance-config.yaml) ----

CHURN_TAINT = "bench.example.com/churn=true:NoSchedule"
CHURN_PRIORITY_CLASS = "bench-churn-high"


def mixed_churn(nodes: int, pods: int) -> Workload:
    """SchedulingWithMixedChurn: basic's nodes and pods while, every second, a Node, a high-priority
    pod too large for any node (9 CPU: a failed cycle and a PostFilter preemption attempt each time), a
    Service, a PersistentVolume and a PersistentVolumeClaim are deleted and created again (upstream's
    churn op, recreate mode). The churn Node carries a NoSchedule taint no pod tolerates, so a measured
    pod never lands on a node that is deleted a second later (upstream's churn node takes pods)."""
    big = pod("churn-pod", "9", "1Gi", labels={"app": "churn"})
    big["spec"]["priorityClassName"] = CHURN_PRIORITY_CLASS
    service = {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "churn-svc"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "churn"}},
    }  # fmt: skip
    pv = {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "churn-pv"},
        "spec": {"accessModes": ["ReadOnlyMany"], "capacity": {"storage": "1Gi"},
                 "csi": {"driver": CSI_DRIVER, "volumeHandle": "churn-pv"}},
    }  # fmt: skip
    pvc = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "churn-pvc"},
        "spec": {"accessModes": ["ReadOnlyMany"], "resources": {"requests": {"storage": "1Gi"}}},
    }  # fmt: skip
    ns = f"/api/v1/namespaces/{CHURN_NAMESPACE}"
    return Workload(
        name=MIXED_CHURN,
        description=(
            f"scheduler_perf's SchedulingWithMixedChurn shape: {nodes} nodes (4 CPU, 16 GiB), {pods} pods "
            "(100m CPU, 128 MiB) while every second a tainted Node, a 9-CPU high-priority pod that fits "
            "nowhere, a Service, a PV and a PVC are deleted and created again"
        ),
        nodes=[make_node(f"node-{i:05d}", cpu="4", memory="16Gi", pods=110) for i in range(nodes)],
        pods=[pod(f"pod-{i:05d}") for i in range(pods)],
        priority_classes={CHURN_PRIORITY_CLASS: 10},
        background=[
            ApiObject("/api/v1/nodes", make_node("churn-node", taints=[CHURN_TAINT])),
            ApiObject(f"{ns}/pods", big),
            ApiObject(f"{ns}/services", service),
            ApiObject("/api/v1/persistentvolumes", pv),
            ApiObject(f"{ns}/persistentvolumeclaims", pvc),
        ],
    )


def unschedulable(nodes: int, stuck: int, pods: int) -> Workload:
    """Unschedulable: ``stuck`` pods that never fit (9 CPU on 4-CPU nodes) created first, then a steady
    stream of ``pods`` that do; the stuck ones must stay pending and must not hold the others up."""
    stuck_pods = [pod(f"stuck-{i:05d}", "9", "1Gi", labels={"kind": "unschedulable"}) for i in range(stuck)]
    return Workload(
        name=UNSCHEDULABLE,
        description=(
            f"scheduler_perf's Unschedulable shape: {nodes} nodes (4 CPU, 16 GiB); {stuck} pods asking 9 CPU "
            f"(fit nowhere) created first, then {pods} pods (100m CPU, 128 MiB) that fit"
        ),
        nodes=[make_node(f"node-{i:05d}", cpu="4", memory="16Gi", pods=110) for i in range(nodes)],
        pods=[*stuck_pods, *(pod(f"pod-{i:05d}") for i in range(pods))],
        expect_unschedulable=frozenset(p["metadata"]["name"] for p in stuck_pods),
    )


GATE = "bench.example.com/not-yet"


def gated(nodes: int, gated_count: int, pods: int) -> Workload:
    """SchedulingWhileGated: ``gated_count`` pods with a scheduling gate nobody removes created first,
    then ``pods`` ungated ones; the gated pods must stay pending (PreEnqueue keeps them out)."""
    gated_pods = []
    for i in range(gated_count):
        body = pod(f"gated-{i:05d}", labels={"kind": "gated"})
        body["spec"]["schedulingGates"] = [{"name": GATE}]
        gated_pods.append(body)
    return Workload(
        name=GATED,
        description=(
            f"scheduler_perf's SchedulingWhileGated shape: {nodes} nodes (4 CPU, 16 GiB); {gated_count} pods "
            f"with a scheduling gate that is never removed created first, then {pods} ungated pods "
            "(100m CPU, 128 MiB)"
        ),
        nodes=[make_node(f"node-{i:05d}", cpu="4", memory="16Gi", pods=110) for i in range(nodes)],
        pods=[*gated_pods, *(pod(f"pod-{i:05d}") for i in range(pods))],
        expect_unschedulable=frozenset(p["metadata"]["name"] for p in gated_pods),
    )


AFFINITY_ZONES = ("zone1", "zone2")


def node_affinity(nodes: int, init: int, measure: int) -> Workload:
    """SchedulingNodeAffinity: pods requiring zone In [zone1, zone2] (pod-with-node-affinity.yaml). Half
    the nodes are in zone1, the other half in zone3, so the affinity filters (upstream labels every
    node zone1); bench.prereqs.verify checks each bound pod's node against its required affinity."""
    node_list = [
        make_node(f"node-{i:05d}", cpu="4", memory="32Gi", pods=110,
                  labels={ZONE_LABEL: "zone1" if i % 2 == 0 else "zone3"})
        for i in range(nodes)
    ]  # fmt: skip
    affinity = _required_zones(list(AFFINITY_ZONES))

    def make(name: str) -> dict[str, Any]:
        return _upstream_pod(name, {}, {"affinity": affinity})

    return Workload(
        name=NODE_AFFINITY,
        description=(
            f"scheduler_perf's SchedulingNodeAffinity shape: {nodes} nodes (4 CPU, 32 GiB), half in zone1, "
            f"half in zone3; {init} init pods bound before the clock, then {measure} measured pods (100m "
            "CPU, 500 MiB) requiring topology.kubernetes.io/zone In [zone1, zone2]"
        ),
        nodes=node_list,
        pods=[make(f"pod-{i:05d}") for i in range(measure)],
        init_pods=[make(f"init-{i:05d}") for i in range(init)],
    )


SPREAD_APP = "spread"
SPREAD_OWNER_UID = "6d1f4c55-31a3-4b5e-9a8e-000000000031"


def default_spreading(nodes: int, pods: int) -> Workload:
    """Deployments' system-default spread: pods without constraints, owned by a ReplicaSet (controller
    ownerReference) and selected by a Service, so PodTopologySpread's system defaults apply (hostname
    maxSkew 3, zone maxSkew 5, both ScheduleAnyway: scoring only). The ReplicaSet (0 replicas, no
    controller runs) and the Service are created before the clock. Correct: placement as always; the
    spread over zones and nodes is reported for each contestant."""
    labels = {"app": SPREAD_APP}
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "spread-rs", "uid": SPREAD_OWNER_UID,
             "controller": True, "blockOwnerDeletion": False}  # fmt: skip
    replica_set = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "spread-rs", "labels": labels},
        "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "pause", "image": PAUSE_IMAGE}]}}},
    }  # fmt: skip
    service = {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "spread-svc"},
        "spec": {"ports": [{"port": 80}], "selector": labels},
    }  # fmt: skip
    pod_list = []
    for i in range(pods):
        body = _upstream_pod(f"pod-{i:05d}", labels, {})
        body["metadata"]["ownerReferences"] = [owner]
        pod_list.append(body)
    return Workload(
        name=DEFAULT_SPREADING,
        description=(
            f"Deployments' system-default topology spread: {nodes} nodes (4 CPU, 32 GiB) in 3 zones, {pods} "
            "pods (100m CPU, 500 MiB) without constraints, owned by a ReplicaSet and selected by a Service "
            "(so the defaults apply: hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway)"
        ),
        nodes=[
            make_node(f"node-{i:05d}", cpu="4", memory="32Gi", pods=110, labels={ZONE_LABEL: ZONES[i % 3]})
            for i in range(nodes)
        ],
        pods=pod_list,
        objects=[
            ApiObject(f"/apis/apps/v1/namespaces/{MEASURED_NAMESPACE}/replicasets", replica_set),
            ApiObject(f"/api/v1/namespaces/{MEASURED_NAMESPACE}/services", service),
        ],
        report_spread=True,
    )


# Full and quick sizes of the shapes above.
MIXED_CHURN_SIZES = ((1000, 3000), (200, 500))  # nodes, pods
UNSCHEDULABLE_SIZES = ((500, 500, 2000), (100, 100, 400))  # nodes, stuck pods, pods that fit
GATED_SIZES = ((500, 5000, 1000), (100, 500, 300))  # nodes, gated pods, ungated pods
NODE_AFFINITY_SIZES = ((500, 500, 1000), (100, 100, 300))  # nodes, init pods, measured pods
DEFAULT_SPREADING_SIZES = ((1000, 2000), (300, 600))  # nodes, pods


def build_shape(name: str, *, quick: bool = False) -> Workload | None:
    """The scheduler_perf shapes above; None for any other name."""
    size = 1 if quick else 0
    if name == MIXED_CHURN:
        return mixed_churn(*MIXED_CHURN_SIZES[size])
    if name == UNSCHEDULABLE:
        return unschedulable(*UNSCHEDULABLE_SIZES[size])
    if name == GATED:
        return gated(*GATED_SIZES[size])
    if name == NODE_AFFINITY:
        return node_affinity(*NODE_AFFINITY_SIZES[size])
    if name == DEFAULT_SPREADING:
        return default_spreading(*DEFAULT_SPREADING_SIZES[size])
    return None


# Full and quick sizes. volumes: upstream's 500Nodes case; dra: upstream's 2000pods_200nodes (10 devices
# per node, filled up completely); extender has no upstream case.
VOLUMES_SIZES = ((500, 500, 1000), (100, 100, 300))  # nodes, init pods, measured pods
DRA_SIZES = ((200, 10, 1000, 1000), (50, 10, 200, 300))  # nodes, devices per node, init, measured
EXTENDER_SIZES = ((500, 1000), (100, 300))  # nodes, pods
# upstream's half_200nodes (half the devices taken), a fixed pod count instead of its 10 s; 10 in flight.
DRA_STEADY_SIZES = ((200, 10, 1000, 1000, 10), (50, 10, 250, 300, 10))
# gang_bench's sizes: nodes (4 CPU), complete gangs, pods per gang, incomplete gangs.
GANG_SIZES = ((200, 160, 8, 5), (20, 16, 8, 3))
# huge's quick size only smoke-tests its probes; --quick runs huge only when named.
HUGE_SIZES = ((15000, 30000), (1500, 3000))  # nodes, pods


def build_extra(name: str, *, quick: bool = False) -> Workload | None:
    """The volume, DRA and extender workloads; None for any other name."""
    if name == VOLUMES:
        return volumes(*VOLUMES_SIZES[1 if quick else 0])
    if name == DRA:
        return dra(*DRA_SIZES[1 if quick else 0])
    if name == EXTENDER:
        return extender(*EXTENDER_SIZES[1 if quick else 0])
    if name == DRA_STEADY:
        return dra_steady(*DRA_STEADY_SIZES[1 if quick else 0])
    return None


def build(name: str, *, quick: bool = False) -> Workload:
    extra = build_extra(name, quick=quick) or build_shape(name, quick=quick)
    if extra is not None:
        return extra
    if name in CONSTRAINT_SIZES:
        full, small = CONSTRAINT_SIZES[name]
        return constraint_workload(name, *(small if quick else full))
    if name == PREEMPTION:
        return preemption(*PREEMPTION_SIZES[1 if quick else 0])
    if name == BASIC:
        return basic(500, 1000) if quick else basic()
    if name == LARGE:
        return basic(2000, 4000, name=LARGE) if quick else basic(5000, 10000, name=LARGE)
    if name == MIXED:
        return mixed(300, 1000, churn_lag=100) if quick else mixed()
    if name == HUGE:
        return basic(*HUGE_SIZES[1 if quick else 0], name=HUGE)
    if name == GANG:
        return gang_side_by_side(*GANG_SIZES[1 if quick else 0])
    raise ValueError(f"unknown workload {name!r}; choose from {', '.join(ALL_WORKLOADS)}")


# --- gang (Coscheduling) against scheduler-plugins: side_by_side's gang workload and bench/gang_bench.py ---
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PODGROUP_CRD = REPO / "deploy/components/podgroup-crd/crd.yaml"
# scheduler-plugins' controller also reconciles ElasticQuotas: it does not start without their CRD.
ELASTICQUOTA_CRD = REPO / "deploy/components/elasticquota-crd/crd.yaml"
PERMIT_WAITING_SECONDS = 10
# scheduler-plugins' manifests/coscheduling/scheduler-config.yaml: Coscheduling multiPoint and queueSort.
COSCHEDULING_PROFILE: dict[str, Any] = {
    "plugins": {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
    },
    "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": PERMIT_WAITING_SECONDS}}],
}


@dataclass
class GangWorkload:
    workload: Workload
    # PodGroup name -> minMember.
    groups: dict[str, int]
    # Groups one of whose members fits no node: the rest reach Permit, wait, and must let go.
    incomplete: frozenset[str]

    def group_of(self, pod_name: str) -> str:
        return pod_name.rsplit("-", 1)[0]


def gang(
    nodes: int = 50, gangs: int = 40, size: int = 8, incomplete: int = 5, cpu: str = "500m"
) -> GangWorkload:
    """``gangs`` PodGroups of ``size`` pods (minMember ``size``), plus ``incomplete`` more whose last member
    selects a label no node has. Complete gangs need gangs*size*cpu of nodes*4 CPUs."""
    groups: dict[str, int] = {}
    pods: list[dict[str, Any]] = []
    broken: set[str] = set()
    for g in range(gangs + incomplete):
        name = f"gang-{g:03d}" if g < gangs else f"stuck-{g - gangs:03d}"
        groups[name] = size
        for i in range(size):
            selector = {"bench/no-such-label": "x"} if g >= gangs and i == size - 1 else None
            pods.append(pod(f"{name}-{i}", cpu=cpu, labels={POD_GROUP_LABEL: name}, node_selector=selector))
        if g >= gangs:
            broken.add(name)
    stuck_pods = frozenset(p["metadata"]["name"] for p in pods if p["metadata"]["name"].startswith("stuck-"))
    return GangWorkload(
        workload=Workload(
            name=GANG,
            description=f"{nodes} nodes (4 CPU), {gangs} gangs of {size} x {cpu} CPU, "
            f"{incomplete} more gangs of {size} whose last member fits nowhere",
            nodes=[make_node(f"node-{i:05d}", cpu="4", memory="16Gi", pods=110) for i in range(nodes)],
            pods=pods,
            expect_unschedulable=stuck_pods,
        ),
        groups=groups,
        incomplete=frozenset(broken),
    )


def gang_side_by_side(nodes: int, gangs: int, size: int, incomplete: int) -> Workload:
    """gang()'s PodGroups and pods for side_by_side: py-scheduler and the scheduler-plugins scheduler,
    both with Coscheduling (COSCHEDULING_PROFILE), the PodGroup CRD installed and the PodGroups created
    before the clock. The incomplete gangs' pods must all stay pending (all or nothing)."""
    gw = gang(nodes, gangs, size, incomplete)
    workload = gw.workload
    workload.objects = [
        ApiObject(
            f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{MEASURED_NAMESPACE}/podgroups",
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": name},
                "spec": {"minMember": min_member},
            },
        )
        for name, min_member in gw.groups.items()
    ]
    workload.description = (
        f"Coscheduling gangs against scheduler-plugins (both with its Coscheduling profile, "
        f"permitWaitingTimeSeconds {PERMIT_WAITING_SECONDS}): {workload.description}; a gang's pods bind "
        "all or none"
    )
    workload.peer = SCHED_PLUGINS
    workload.profile = COSCHEDULING_PROFILE
    workload.crds = (PODGROUP_CRD, ELASTICQUOTA_CRD)
    workload.peer_controller = True
    return workload
