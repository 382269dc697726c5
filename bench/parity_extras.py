"""What the parity fuzzer draws beyond its original stream: owners and Services for PodTopologySpread's
system default constraints, and the pod and node fields drawn later (host IPs and SCTP host ports,
generic ephemeral volumes, NodeDeclaredFeatures).

Every draw here comes from a random stream of its own per seed (``extras_rng``), so a seed's original
pods and nodes stay exactly as they were: these fields are added on top of them.

System default spreading (upstream ``pkg/scheduler/framework/plugins/helper/spread.go`` DefaultSelector
and ``podtopologyspread/common.go`` buildDefaultConstraints): a pod without constraints of its own is
spread over hostnames and zones among the pods that the Services selecting it, and the
ReplicationController, ReplicaSet or StatefulSet that controls it, select. The seed creates overlapping
Services (and Services without a selector, which select nothing) in every namespace, and controllers of
each kind (matchLabels and matchExpressions selectors, a ReplicationController whose absent selector the
API server defaults from its template's labels); pods get a controller ownerReference to one of them, to
one that does not exist, of a kind or apiVersion DefaultSelector does not know, or only a non-controller
ownerReference (which must not count).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Labels only pods drawn here carry: the new Services select them, plain (signable) pods drop them.
ROLE = "role"
ROLES = ("api", "worker")
# Host IPs of host ports: 0.0.0.0 conflicts with every IP of the same port and protocol.
HOST_IPS = ("0.0.0.0", "127.0.0.1", "10.1.2.3")
# NodeDeclaredFeatures: the one feature a pod the API server accepts can need (a container
# restartPolicyRules entry with action RestartAllContainers), and others nodes may declare.
RESTART_ALL = "RestartAllContainersOnContainerExits"
OTHER_FEATURES = ("InPlacePodVerticalScalingInitContainers", "ExtendWebSocketsToKubelet", "NotAFeature")
EPHEMERAL_VOLUME = "scratch"

_SUPPORTED = {
    "ReplicaSet": ("apps/v1", "replicasets"),
    "StatefulSet": ("apps/v1", "statefulsets"),
    "ReplicationController": ("v1", "replicationcontrollers"),
}


def extras_rng(seed: int) -> random.Random:
    return random.Random(f"parity-extras-{seed}")


@dataclass(frozen=True)
class Owner:
    """A controller the seed created (``uid`` from the API server) and the labels its template has."""

    namespace: str
    api_version: str
    kind: str
    name: str
    uid: str
    template_labels: Mapping[str, str]

    def reference(self, *, controller: bool | None) -> dict[str, Any]:
        ref: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
        }
        if controller is not None:
            ref["controller"] = controller
        return ref


def _service(name: str, selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> dict[str, Any]:
    # Headless (no cluster IP): a long run would exhaust the control plane's Service IP range; only the
    # selector matters to scheduling.
    spec: dict[str, Any] = {"ports": [{"port": 80}], "clusterIP": "None"}
    if selector is not None:
        spec["selector"] = dict(selector)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": spec,
    }


# Per namespace index: Services (name, selector; None: no selector, selects nothing). They overlap
# (with each other and with the Service "web" of the first two namespaces): a pod labelled app=web,
# tier=fe, role=api in the first namespace is selected by three. None selects a plain pod (app=cache,
# no role label), so the batching mode's plain pods stay signable.
_SERVICES: tuple[tuple[tuple[str, Mapping[str, str] | None], ...], ...] = (
    (("api", {ROLE: "api"}), ("web-fe", {"app": "web", "tier": "fe"}), ("no-selector", None)),
    (
        ("api-be", {ROLE: "api", "tier": "be"}),
        ("be-workers", {ROLE: "worker", "tier": "be"}),
        ("api", {ROLE: "api"}),
    ),
    (("worker", {ROLE: "worker"}), ("db", {"app": "db"}), ("web", {"app": "web"})),
)

# Controllers: (kind, name, spec.selector as sent (None: absent), template labels).
_CONTROLLERS: tuple[tuple[str, str, Any, Mapping[str, str]], ...] = (
    ("ReplicaSet", "rs-web", {"matchLabels": {"app": "web"}}, {"app": "web"}),
    (
        "ReplicaSet",
        "rs-expr",
        {
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["fe"]},
                {"key": ROLE, "operator": "Exists"},
            ]
        },
        {"tier": "fe", ROLE: "api"},
    ),
    ("StatefulSet", "ss-db", {"matchLabels": {"app": "db"}}, {"app": "db"}),
    (
        "StatefulSet",
        "ss-notin",
        {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["fe"]}]},
        {"tier": "be"},
    ),
    ("ReplicationController", "rc-cache", {"app": "cache"}, {"app": "cache"}),
    # No selector: the API server defaults it to the template's labels.
    ("ReplicationController", "rc-defaulted", None, {ROLE: "worker", "tier": "be"}),
)


def owner_objects(
    rng: random.Random, seed_labels: Mapping[str, str], namespaces: Sequence[str]
) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, body) of the seed's Services and controllers: a random subset of each
    namespace's Services and of the controllers, in every namespace."""
    out: list[tuple[str, dict[str, Any]]] = []
    for ns, services in zip(namespaces, _SERVICES, strict=False):
        for name, selector in services:
            if rng.random() < 0.75:
                out.append((f"/api/v1/namespaces/{ns}/services", _service(name, selector, seed_labels)))
    for ns in namespaces:
        for kind, name, selector, template_labels in _CONTROLLERS:
            if rng.random() < 0.5:
                continue
            api_version, plural = _SUPPORTED[kind]
            spec: dict[str, Any] = {
                "replicas": 0,  # no controller manager runs: nothing would create them anyway
                "template": {
                    "metadata": {"labels": dict(template_labels)},
                    "spec": {"containers": [{"name": "main", "image": "img-a:1"}]},
                },
            }
            if selector is not None:
                spec["selector"] = copy.deepcopy(selector)
            if kind == "StatefulSet":
                spec["serviceName"] = "none"
            prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            body = {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": name, "labels": dict(seed_labels)},
                "spec": spec,
            }
            out.append((f"{prefix}/namespaces/{ns}/{plural}", body))
    return out


def owner_of(created: Mapping[str, Any], template_labels: Mapping[str, str]) -> Owner | None:
    """The Owner a created controller is, or None for a Service."""
    kind = created.get("kind", "")
    if kind not in _SUPPORTED:
        return None
    meta = created["metadata"]
    return Owner(meta["namespace"], created["apiVersion"], kind, meta["name"], meta["uid"], template_labels)


def template_labels_of(body: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = body.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})
    return labels


def add_owner(rng: random.Random, pod: dict[str, Any], owners: Sequence[Owner]) -> None:
    """Maybe give ``pod`` a role label and ownerReferences (a controller one of any kind, a
    non-controller one, or both); some owned pods take their owner's template labels."""
    meta = pod["metadata"]
    if rng.random() < 0.3:
        meta["labels"][ROLE] = rng.choice(ROLES)
    if rng.random() >= 0.45:
        return
    mine = [o for o in owners if o.namespace == meta["namespace"]]
    ghost = Owner(
        meta["namespace"], "apps/v1", "ReplicaSet", "gone", "00000000-0000-0000-0000-000000000001", {}
    )
    owner = rng.choice(mine) if mine else ghost
    refs: list[dict[str, Any]] = []
    r = rng.random()
    if r < 0.55:
        refs.append(owner.reference(controller=True))
        if rng.random() < 0.5:
            meta["labels"].update(owner.template_labels)  # the pod its controller would create
    elif r < 0.65:
        # A controller that does not exist (deleted meanwhile): its selector is not read.
        kind = rng.choice(sorted(_SUPPORTED))
        refs.append({**ghost.reference(controller=True), "kind": kind, "apiVersion": _SUPPORTED[kind][0]})
    elif r < 0.75:
        # A controller of a kind DefaultSelector does not know.
        kind, api_version = rng.choice(
            (("Deployment", "apps/v1"), ("Job", "batch/v1"), ("DaemonSet", "apps/v1"))
        )
        refs.append({**owner.reference(controller=True), "kind": kind, "apiVersion": api_version})
    elif r < 0.85:
        # A known kind at another apiVersion: not the group/version DefaultSelector compares.
        api_version = "extensions/v1beta1" if owner.kind != "ReplicationController" else "core/v1"
        refs.append({**owner.reference(controller=True), "apiVersion": api_version})
    else:
        # Not the controller: must not count, whatever its selector.
        refs.append(owner.reference(controller=rng.choice((False, None))))
        meta["labels"].update(owner.template_labels)
    if rng.random() < 0.2 and mine:
        other = rng.choice(mine)
        refs.insert(rng.randint(0, len(refs)), other.reference(controller=False))
    meta["ownerReferences"] = refs


def add_pod_fields(rng: random.Random, pod: dict[str, Any]) -> None:
    """Host IPs and SCTP on host ports, a second host port, a generic ephemeral volume, an inline
    iSCSI or RBD disk, and a container restart rule that needs a node declaring
    RestartAllContainersOnContainerExits."""
    spec = pod["spec"]
    main = spec["containers"][0]
    ports = [p for p in main.get("ports") or () if p.get("hostPort")]
    if ports and not spec.get("hostNetwork"):
        for port in ports:
            if rng.random() < 0.6:
                port["hostIP"] = rng.choice(HOST_IPS)
            if rng.random() < 0.2:
                port["protocol"] = "SCTP"
    if not spec.get("hostNetwork") and rng.random() < 0.06:
        ports_list = main.setdefault("ports", [])
        if all(p.get("containerPort") != 81 for p in ports_list):
            port = {
                "containerPort": 81,
                "hostPort": rng.choice((8080, 9090)),
                "protocol": rng.choice(("TCP", "UDP")),
            }
            if rng.random() < 0.6:
                port["hostIP"] = rng.choice(HOST_IPS)
            ports_list.append(port)
    if rng.random() < 0.05:
        template = {
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "parity-wffc",
                "resources": {"requests": {"storage": "1Gi"}},
            }
        }
        spec.setdefault("volumes", []).append(
            {"name": EPHEMERAL_VOLUME, "ephemeral": {"volumeClaimTemplate": template}}
        )
    if rng.random() < 0.06:
        # Inline iSCSI or RBD disks: VolumeRestrictions keeps two pods that use one disk, unless both
        # read-only, off the same node (an RBD disk is one when the image and pool match and a monitor
        # is shared).
        source: dict[str, Any]
        if rng.random() < 0.5:
            source = {
                "iscsi": {
                    "targetPortal": "10.0.0.1:3260",
                    "iqn": rng.choice(("iqn.2026-11.test:a", "iqn.2026-11.test:b")),
                    "lun": 0,
                    "readOnly": rng.random() < 0.5,
                }
            }
        else:
            source = {
                "rbd": {
                    "monitors": sorted(rng.sample(["10.0.1.1:6789", "10.0.1.2:6789", "10.0.1.3:6789"], 2)),
                    "image": rng.choice(("img0", "img1")),
                    "pool": rng.choice(("rbd", "fast")),
                    "readOnly": rng.random() < 0.5,
                }
            }
        spec.setdefault("volumes", []).append({"name": "disk", **source})
    if rng.random() < 0.06:
        spec["restartPolicy"] = "Never"
        main["restartPolicy"] = "Never"
        main["restartPolicyRules"] = [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
        ]


def declared_features(rng: random.Random) -> list[str] | None:
    """A node's status.declaredFeatures (None: the node declares nothing)."""
    if rng.random() < 0.3:
        return None
    features = [f for f in (RESTART_ALL, *OTHER_FEATURES) if rng.random() < 0.5]
    return sorted(features)


def ephemeral_claim_name(pod: Mapping[str, Any]) -> str | None:
    """The PVC name of ``pod``'s generic ephemeral volume (``<pod>-<volume>``), if it has one."""
    for volume in pod["spec"].get("volumes") or ():
        if "ephemeral" in volume:
            return f"{pod['metadata']['name']}-{volume['name']}"
    return None


def without_owner_spreading(pod: dict[str, Any]) -> None:
    """For plain (signable) pods: no role label and no controller ownerReference of a kind
    DefaultSelector reads, so nothing gives the pod default spread constraints; non-controller
    references stay (they must not count)."""
    meta = pod["metadata"]
    meta["labels"].pop(ROLE, None)
    refs = [
        r
        for r in meta.get("ownerReferences") or ()
        if not (r.get("controller") and r.get("kind") in _SUPPORTED)
    ]
    if refs:
        meta["ownerReferences"] = refs
    else:
        meta.pop("ownerReferences", None)


# --- CSI volumes and their attach limits (NodeVolumeLimits) -----------------------------------------


def csi_driver_name(seed: int) -> str:
    return f"csi-s{seed}.example.com"


def csi_objects(
    rng: random.Random,
    seed: int,
    storage_class: str,
    seed_labels: Mapping[str, str],
    node_names: Sequence[str],
    namespaces: Sequence[str],
) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, list[str]]]:
    """(collection path, body) of a CSI driver's objects, in creation order: maybe a CSIDriver that
    keeps pods off nodes without the driver (VolumeLimitScaling), CSINodes listing it on some nodes
    (with an attach limit of 1-3 volumes, or none), and PVs of it pre-bound to claims. Also the claim
    names per namespace."""
    driver = csi_driver_name(seed)
    out: list[tuple[str, dict[str, Any]]] = []
    if rng.random() < 0.7:
        spec: dict[str, Any] = {"attachRequired": True}
        if rng.random() < 0.6:
            spec["preventPodSchedulingIfMissing"] = True
        out.append(
            (
                "/apis/storage.k8s.io/v1/csidrivers",
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSIDriver",
                    "metadata": {"name": driver, "labels": dict(seed_labels)},
                    "spec": spec,
                },
            )
        )
    for node in node_names:
        if rng.random() < 0.35:
            continue  # no CSINode: no limit, and the driver counts as missing
        entry: dict[str, Any] = {"name": driver, "nodeID": node}
        if rng.random() < 0.85:
            entry["allocatable"] = {"count": rng.randint(1, 3)}
        drivers = [entry] if rng.random() < 0.85 else []  # a CSINode without this driver
        out.append(
            (
                "/apis/storage.k8s.io/v1/csinodes",
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": node, "labels": dict(seed_labels)},
                    "spec": {"drivers": drivers},
                },
            )
        )
    claims: dict[str, list[str]] = {}
    for i in range(rng.randint(3, 8)):
        ns = rng.choice(list(namespaces))
        claim, pv = f"csi{i}", f"s{seed}-csi{i}"
        claims.setdefault(ns, []).append(claim)
        out.append(
            (
                "/api/v1/persistentvolumes",
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": pv, "labels": dict(seed_labels)},
                    "spec": {
                        "capacity": {"storage": "1Gi"},
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": storage_class,
                        "persistentVolumeReclaimPolicy": "Retain",
                        "csi": {"driver": driver, "volumeHandle": f"vol-{i}"},
                        "claimRef": {"namespace": ns, "name": claim},
                    },
                },
            )
        )
        out.append(
            (
                f"/api/v1/namespaces/{ns}/persistentvolumeclaims",
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": claim,
                        "namespace": ns,
                        "labels": dict(seed_labels),
                        # What the PV controller writes once bound: the claim counts as bound.
                        "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
                    },
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": storage_class,
                        "resources": {"requests": {"storage": "1Gi"}},
                        "volumeName": pv,
                    },
                },
            )
        )
    return out, claims


def add_csi_volumes(rng: random.Random, pod: dict[str, Any], claims: Mapping[str, Sequence[str]]) -> None:
    """Maybe 1-2 of the namespace's CSI claims (two pods may share one: it counts once per node)."""
    mine = claims.get(pod["metadata"]["namespace"], ())
    if not mine or rng.random() >= 0.15:
        return
    chosen = rng.sample(list(mine), min(len(mine), rng.randint(1, 2)))
    volumes = pod["spec"].setdefault("volumes", [])
    for j, claim in enumerate(chosen):
        volumes.append({"name": f"csi{j}", "persistentVolumeClaim": {"claimName": claim}})


# --- label-key and selector variants of pod affinity and topology spread --------------------------


def vary_terms(rng: random.Random, pod: dict[str, Any]) -> None:
    """mismatchLabelKeys on pod (anti-)affinity terms; topology spread selectors with
    matchExpressions, or none at all (a constraint that then counts no pod)."""
    spec = pod["spec"]
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(kind) or {}
        terms = list(section.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
        terms += [
            w["podAffinityTerm"] for w in section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        ]
        for term in terms:
            if rng.random() < 0.2:
                key = rng.choice(("tier", ROLE))
                if key not in (term.get("matchLabelKeys") or ()):
                    term["mismatchLabelKeys"] = [key]
    for constraint in spec.get("topologySpreadConstraints") or ():
        r = rng.random()
        if r < 0.15:
            constraint["labelSelector"] = {
                "matchExpressions": [
                    {
                        "key": "app",
                        "operator": rng.choice(("In", "NotIn")),
                        "values": sorted(rng.sample(["web", "db", "cache"], 2)),
                    }
                ]
            }
        elif r < 0.22:
            constraint["labelSelector"] = {"matchExpressions": [{"key": ROLE, "operator": "Exists"}]}
        elif r < 0.26:
            del constraint["labelSelector"]
            constraint.pop("matchLabelKeys", None)  # the API server refuses them without a selector
