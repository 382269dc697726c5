"""Builders for PVs, PVCs, StorageClasses and pods with volumes (upstream's volumebinding/test_utils.go)."""

from __future__ import annotations

import itertools
from typing import Any

from scheduler.framework import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    NodeInfo,
    PodInfo,
)
from tests.unit.plugins.plugin_testlib import FakeHandle, node, pod

HOSTNAME = "kubernetes.io/hostname"
# Parsed PV node affinity is cached by (uid, resourceVersion): every built PV gets a fresh version.
_VERSIONS = itertools.count(1000)
NAMESPACE = "default"


def storage_class(
    name: str, mode: str = "WaitForFirstConsumer", provisioner: str = "", **extra: Any
) -> dict[str, Any]:
    return {"metadata": {"name": name}, "volumeBindingMode": mode, "provisioner": provisioner, **extra}


WAIT_SC = storage_class("wait-sc")
IMMEDIATE_SC = storage_class("immediate-sc", "Immediate")


def pvc(
    name: str,
    class_name: str = "wait-sc",
    *,
    volume_name: str = "",
    bound: bool | None = None,
    storage: str | None = None,
    phase: str | None = None,
    access_modes: tuple[str, ...] = (),
    annotations: dict[str, str] | None = None,
    rv: str = "1",
    owner_uid: str | None = None,
) -> dict[str, Any]:
    """``makePVC(...).withBoundPV(pv)``: a claim bound to ``volume_name`` carries bind-completed."""
    anns = dict(annotations or {})
    if volume_name and bound is not False:
        anns["pv.kubernetes.io/bind-completed"] = "true"
    spec: dict[str, Any] = {"storageClassName": class_name, "accessModes": list(access_modes)}
    if volume_name:
        spec["volumeName"] = volume_name
    if storage:
        spec["resources"] = {"requests": {"storage": storage}}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": f"uid-{name}",
        "resourceVersion": rv,
        "annotations": anns,
    }
    if owner_uid:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}]
    obj: dict[str, Any] = {"metadata": meta, "spec": spec}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def pv(
    name: str,
    class_name: str = "wait-sc",
    *,
    phase: str = "Available",
    capacity: str = "1Gi",
    affinity: dict[str, list[str]] | None = None,
    claim: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    access_modes: tuple[str, ...] = (),
    csi: tuple[str, str] | None = None,
    rv: str = "",
) -> dict[str, Any]:
    rv = rv or str(next(_VERSIONS))
    spec: dict[str, Any] = {
        "storageClassName": class_name,
        "capacity": {"storage": capacity},
        "accessModes": list(access_modes),
    }
    if affinity:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": k, "operator": "In", "values": v} for k, v in affinity.items()
                        ]
                    }
                ]
            }
        }
    if claim is not None:
        spec["claimRef"] = {
            "name": claim["metadata"]["name"],
            "namespace": claim["metadata"]["namespace"],
            "uid": claim["metadata"]["uid"],
        }
    if csi:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    return {
        "metadata": {"name": name, "resourceVersion": rv, "uid": f"uid-{name}", "labels": dict(labels or {})},
        "spec": spec,
        "status": {"phase": phase},
    }


def pod_with_claims(name: str, *claims: str, ephemeral: tuple[str, ...] = (), uid: str = "") -> PodInfo:
    volumes: list[dict[str, Any]] = [
        {"name": f"v-{c}", "persistentVolumeClaim": {"claimName": c}} for c in claims
    ]
    volumes += [{"name": v, "ephemeral": {"volumeClaimTemplate": {}}} for v in ephemeral]
    raw = pod(name, extra_spec={"volumes": volumes})
    raw["metadata"]["namespace"] = NAMESPACE
    if uid:
        raw["metadata"]["uid"] = uid
    return PodInfo(raw)


def labelled_node(name: str, **labels: str) -> NodeInfo:
    """``makeNode(name)``: the hostname label is the node's name."""
    return NodeInfo(node(name, labels={HOSTNAME: name, **labels}))


def handle(
    *,
    nodes: tuple[NodeInfo, ...] = (),
    pvcs: tuple[dict[str, Any], ...] = (),
    pvs: tuple[dict[str, Any], ...] = (),
    classes: tuple[dict[str, Any], ...] = (WAIT_SC, IMMEDIATE_SC),
    csi_nodes: tuple[dict[str, Any], ...] = (),
    drivers: tuple[dict[str, Any], ...] = (),
    capacities: tuple[dict[str, Any], ...] = (),
    attachments: tuple[dict[str, Any], ...] = (),
) -> FakeHandle:
    return FakeHandle(
        nodes,
        objects={
            PERSISTENT_VOLUME_CLAIMS: pvcs,
            PERSISTENT_VOLUMES: pvs,
            STORAGE_CLASSES: classes,
            CSI_NODES: csi_nodes,
            CSI_DRIVERS: drivers,
            CSI_STORAGE_CAPACITIES: capacities,
            VOLUME_ATTACHMENTS: attachments,
        },
    )


def volume_attachment(name: str, node_name: str, pv_name: str | None, attacher: str = "") -> dict[str, Any]:
    """A VolumeAttachment of PV ``pv_name`` (none: an inline volume's) to ``node_name``."""
    source: dict[str, Any] = {} if pv_name is None else {"persistentVolumeName": pv_name}
    return {
        "metadata": {"name": name},
        "spec": {"attacher": attacher, "nodeName": node_name, "source": source},
    }
