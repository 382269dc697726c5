"""Seeded parity fuzzer: py-scheduler's framework against the real kube-scheduler, one pod at a time.

For each seed: a random cluster (nodes with varied capacity, labels, taints, extended resources,
images; some cordoned) and a random pod sequence (requests with init containers, sidecars and pod
overhead; nodeSelector, node affinity with every operator, tolerations, host ports, topology spread,
pod (anti-)affinity with namespaceSelector, priorities; and, from bench.parity_extras, ownerReferences to
the seed's ReplicaSets, StatefulSets and ReplicationControllers under overlapping Services, host IPs,
ephemeral volumes and declared node features). Each pod is created for the real
kube-scheduler; py-scheduler's own frameworks (built from the default configuration, in-process, over
static listers of the same cluster state) judge it first:

* ``feasibility``: kube bound the pod but py finds no feasible node, or the reverse;
* ``node``: kube's node is not among py's best-scoring nodes (ties allowed: both pick at random);
* ``score``: for a pod kube binds at its first attempt, some node's total score differs from the one
  kube-scheduler logged (``KUBE_SCORE_LOGGING``), with the plugins that differ;
* ``message``: the pod stays pending and py's FailedScheduling message (PostFilter part included)
  differs from kube's PodScheduled condition message;
* ``preemption``: kube nominated a node py's preemption would not (or py would nominate and kube did
  not), or kube's nominated node is not among py's equally good candidates.

The cluster then continues as kube left it: pending pods are deleted after their first verdict (so
kube never retries them behind our back), a preemptor is awaited until kube binds it.

``--batching`` draws pods in runs of one shape (a template and 1-5 replicas of it: same requests,
tolerations, selectors, labels) and judges each pod a third time, as the scheduler does with
opportunistic batching: one SchedulingAlgorithm whose batch cache lives for the whole seed, over its own
incremental cache that sees each bound pod on its node before the next pod. That judge must agree with
the one-by-one judge exactly (``batching``: feasible nodes, scores, best nodes, message) and with kube
as the one-by-one judge must (``batching <kind>``).

    python -m bench.parity_fuzz --seeds 1-20 [--nodes 10-40] [--pods 40-80] [--batching] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from kubernetes.client.exceptions import ApiException

from bench.parity_extras import (
    Owner,
    add_csi_volumes,
    add_owner,
    add_pod_fields,
    csi_objects,
    declared_features,
    ephemeral_claim_name,
    extras_rng,
    owner_objects,
    owner_of,
    template_labels_of,
    vary_terms,
    without_owner_spreading,
)
from devcluster.nodes import _request, create_nodes, delete_nodes, make_node
from scheduler.config import load_config_with_plugins
from scheduler.cycle.algorithm import SchedulingAlgorithm
from scheduler.cycle.batching import BatchStats
from scheduler.explain.simulate import Simulation
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.handle import SnapshotLister
from scheduler.framework.listers import StaticLister
from scheduler.framework.resources import comparable_amounts
from scheduler.framework.runtime import SCORE_BREAKDOWN_KEY, PausedPostFilter
from scheduler.framework.types import PodInfo
from scheduler.plugins.dynamicresources.plugin import STATE_KEY as DRA_STATE_KEY
from scheduler.plugins.podtopologyspread.common import SCHEDULE_ANYWAY, has_own_constraints
from scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from scheduler.plugins.registry import IN_TREE_REGISTRY
from scheduler.preemption.evaluator import Candidate, Evaluator

SEED_LABEL = "parity.py-scheduler.test/seed"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"
GPU = "example.com/gpu"
RUNTIME_CLASS = "parity-overhead"
WFFC_CLASS = "parity-wffc"
DEVICE_CLASS = "parity-gpu"
DRIVER = "gpu.example.com"
IMMEDIATE_CLASS = "parity-immediate"
PRIORITY_CLASSES = {"parity-low": 0, "parity-mid": 500, "parity-high": 1000}
NO_PREEMPT_CLASS = "parity-high-never"
IMAGES = {"img-a:1": 300 * 1024**2, "img-b:1": 900 * 1024**2, "img-c:1": 40 * 1024**2}
APPS = ("web", "db", "cache")
TIERS = ("fe", "be")
TEAMS = ("a", "b", "c")
TAINT_KEYS = ("dedicated", "gpu", "maint")
DECISION_TIMEOUT = 15.0
# Set to a directory to save the cluster state and pod of each mismatch (replay with py_verdict).
DUMP_DIR = os.environ.get("PARITY_DUMP_DIR", "")
PREEMPTION_TIMEOUT = 20.0
# Batching mode: the share of drawn pods that become the template of a run of replicas.
REPEAT_SHARE = 0.6
# Of those templates, the share made plain (plain_pod): signable unless the cluster forbids it.
PLAIN_SHARE = 0.5
GATED_WAIT = 2.0  # how long a pod py's PreEnqueue holds back must see no attempt from kube


# --- random cluster -------------------------------------------------------------------------------


def gen_nodes(rng: random.Random, seed: int, count: int) -> list[dict[str, Any]]:
    nodes = []
    zones = [f"z{i}" for i in range(rng.randint(2, 4))]
    for i in range(count):
        name = f"s{seed}-n{i:02d}"
        labels: dict[str, str] = {SEED_LABEL: str(seed)}
        if rng.random() < 0.9:  # a few nodes sit in no zone (topology spread must skip them)
            zone = rng.choice(zones)
            labels[ZONE] = zone
            labels[REGION] = "r1" if zone in zones[:2] else "r2"
        if rng.random() < 0.6:
            labels["disk"] = rng.choice(("ssd", "hdd"))
        if rng.random() < 0.7:
            labels["gen"] = str(rng.randint(1, 6))
        if rng.random() < 0.5:
            labels["team"] = rng.choice(TEAMS)
        taints: list[dict[str, str]] = []
        if rng.random() < 0.3:
            for _ in range(rng.randint(1, 2)):
                key = rng.choice(TAINT_KEYS)
                effect = rng.choice(("NoSchedule", "PreferNoSchedule", "NoExecute"))
                if any(t["key"] == key and t["effect"] == effect for t in taints):
                    continue
                taint = {"key": key, "effect": effect}
                if rng.random() < 0.6:
                    taint["value"] = rng.choice(("x", "y"))
                taints.append(taint)
        extra = {GPU: str(rng.randint(1, 4))} if rng.random() < 0.25 else {}
        if rng.random() < 0.3:
            extra["hugepages-2Mi"] = rng.choice(("256Mi", "1Gi"))
        images = {img: size for img, size in IMAGES.items() if rng.random() < 0.4}
        nodes.append(
            make_node(
                name,
                cpu=rng.choice(("1", "2", "2500m", "4", "8")),
                memory=rng.choice(("2Gi", "4Gi", "8Gi", "16Gi", "6000Mi")),
                pods=rng.choice((4, 8, 16, 110)),
                labels=labels,
                taints=taints,
                extra_allocatable=extra,
                images=images or None,
                unschedulable=rng.random() < 0.08,
                ephemeral_storage=rng.choice(("10Gi", "50Gi", "100Gi")),
            )
        )
    for node in nodes:
        r = rng.random()
        if r < 0.04:
            del node["metadata"]["labels"][HOSTNAME]  # hostname-keyed spreading must skip it
        elif r < 0.08:
            node["metadata"]["labels"][HOSTNAME] = f"s{seed}-shared-host"  # two nodes, one domain
    return nodes


def gen_volumes(
    rng: random.Random, seed: int, namespaces: Sequence[str], nodes: Sequence[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Pre-bound PV/PVC pairs (the PV pinned to a zone or a node, some PVs zone-labelled, one claim
    ReadWriteOncePod), a WaitForFirstConsumer claim no PV can satisfy and an unbound Immediate claim.
    No PV is ever left available: kube-scheduler would bind it and wait for a PV controller there is
    not."""
    pvs: list[dict[str, Any]] = []
    pvcs: list[dict[str, Any]] = []
    zones = sorted({n["metadata"]["labels"][ZONE] for n in nodes if ZONE in n["metadata"]["labels"]})
    for i in range(rng.randint(2, 5)):
        ns = rng.choice(list(namespaces))
        pv_name, pvc_name = f"s{seed}-pv{i}", f"data{i}"
        mode = "ReadWriteOncePod" if i == 0 else "ReadWriteOnce"
        pv_labels = {SEED_LABEL: str(seed)}
        if rng.random() < 0.5 and zones:
            key, value = ZONE, rng.choice(zones)
            if rng.random() < 0.5:
                pv_labels[ZONE] = value  # VolumeZone reads the label
        else:
            key, value = HOSTNAME, rng.choice([n["metadata"]["name"] for n in nodes])
        pv: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "labels": pv_labels},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": [mode],
                "storageClassName": WFFC_CLASS,
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": f"/tmp/{pv_name}"},
                "claimRef": {"namespace": ns, "name": pvc_name},
            },
        }
        if rng.random() < 0.8:
            pv["spec"]["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
                    ]
                }
            }
        pvs.append(pv)
        pvcs.append(_pvc(seed, ns, pvc_name, WFFC_CLASS, mode, volume=pv_name))
    for ns in namespaces:
        pvcs.append(_pvc(seed, ns, "wffc-none", WFFC_CLASS, "ReadWriteOnce"))
        pvcs.append(_pvc(seed, ns, "immediate-unbound", IMMEDIATE_CLASS, "ReadWriteOnce"))
    return pvs, pvcs


def gen_slices(rng: random.Random, seed: int, nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """ResourceSlices of a DRA driver on some nodes: 1-4 devices each, with a model and a memory size."""
    slices = []
    for node in nodes:
        if rng.random() > 0.4:
            continue
        name = node["metadata"]["name"]
        devices = [
            {
                "name": f"gpu-{i}",
                "attributes": {
                    "model": {"string": rng.choice(("a100", "h100"))},
                    "memGi": {"int": rng.choice((16, 40, 80))},
                },
            }
            for i in range(rng.randint(1, 4))
        ]
        slices.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus", "labels": {SEED_LABEL: str(seed)}},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    return slices


def gen_claim(rng: random.Random, seed: int, ns: str, name: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": DEVICE_CLASS, "count": rng.choice((1, 1, 2))}
    r = rng.random()
    if r < 0.25:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "h100"'}}]
    elif r < 0.4:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].memGi >= 40'}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns, "labels": {SEED_LABEL: str(seed)}},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def _pvc(seed: int, ns: str, name: str, cls: str, mode: str, volume: str = "") -> dict[str, Any]:
    pvc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns, "labels": {SEED_LABEL: str(seed)}},
        "spec": {
            "accessModes": [mode],
            "storageClassName": cls,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    if volume:
        pvc["spec"]["volumeName"] = volume
        # What the PV controller writes when it completes a binding; the scheduler's binder then
        # treats the claim as bound (isPVCFullyBound).
        pvc["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return pvc


def mutate_node(rng: random.Random, client: Any, nodes: Sequence[Mapping[str, Any]]) -> str:
    """One random change to one node, as a cluster sees them between pods: a label, a taint, cordoning,
    allocatable. Returns a description."""
    node = rng.choice(list(nodes))
    name = node["metadata"]["name"]
    r = rng.random()
    if r < 0.35:
        key = rng.choice(("disk", "team", "gen"))
        value = None if rng.random() < 0.3 else _values(rng, key)[0]
        _request(
            client,
            "PATCH",
            f"/api/v1/nodes/{name}",
            {"metadata": {"labels": {key: value}}},
            "application/merge-patch+json",
        )
        return f"{name}: label {key}={value}"
    if r < 0.65:
        taints = [t for t in node["spec"].get("taints") or () if rng.random() < 0.5]
        if rng.random() < 0.6:
            key = rng.choice(TAINT_KEYS)
            effect = rng.choice(("NoSchedule", "PreferNoSchedule", "NoExecute"))
            if not any(t["key"] == key and t["effect"] == effect for t in taints):
                taints.append({"key": key, "value": "x", "effect": effect})
        _request(
            client,
            "PATCH",
            f"/api/v1/nodes/{name}",
            {"spec": {"taints": taints}},
            "application/merge-patch+json",
        )
        return f"{name}: taints {taints}"
    if r < 0.8:
        cordon = not node["spec"].get("unschedulable", False)
        taints = [
            t for t in node["spec"].get("taints") or () if t["key"] != "node.kubernetes.io/unschedulable"
        ]
        if cordon:
            taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
        _request(
            client,
            "PATCH",
            f"/api/v1/nodes/{name}",
            {"spec": {"unschedulable": cordon or None, "taints": taints}},
            "application/merge-patch+json",
        )
        return f"{name}: unschedulable={cordon}"
    cpu = rng.choice(("1", "2", "4", "8"))
    _request(
        client,
        "PATCH",
        f"/api/v1/nodes/{name}/status",
        {"status": {"allocatable": {"cpu": cpu}, "capacity": {"cpu": cpu}}},
        "application/merge-patch+json",
    )
    return f"{name}: cpu {cpu}"


# --- random pods ----------------------------------------------------------------------------------


def _values(rng: random.Random, key: str) -> list[str]:
    pools = {
        "disk": ["ssd", "hdd", "nvme"],
        "team": list(TEAMS),
        ZONE: ["z0", "z1", "z2", "z3"],
        REGION: ["r1", "r2"],
        "gen": [str(i) for i in range(1, 7)],
    }
    pool = pools[key]
    return sorted(rng.sample(pool, rng.randint(1, min(2, len(pool)))))


def _node_requirement(rng: random.Random) -> dict[str, Any]:
    key = rng.choice(("disk", "team", ZONE, REGION, "gen"))
    ops = ["In", "NotIn", "Exists", "DoesNotExist"] + (["Gt", "Lt"] if key == "gen" else [])
    op = rng.choice(ops)
    req: dict[str, Any] = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        req["values"] = _values(rng, key)
    elif op in ("Gt", "Lt"):
        req["values"] = [str(rng.randint(1, 6))]
    return req


def _node_term(rng: random.Random, node_names: Sequence[str]) -> dict[str, Any]:
    term: dict[str, Any] = {}
    if rng.random() < 0.9:
        term["matchExpressions"] = [_node_requirement(rng) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.15 or not term:
        term["matchFields"] = [
            {
                "key": "metadata.name",
                "operator": rng.choice(("In", "NotIn")),
                "values": [rng.choice(node_names)],
            }
        ]
    return term


def _label_selector(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.7:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    op = rng.choice(("In", "NotIn", "Exists"))
    expr: dict[str, Any] = {"key": "app", "operator": op}
    if op != "Exists":
        expr["values"] = sorted(rng.sample(APPS, rng.randint(1, 2)))
    return {"matchExpressions": [expr]}


def _pod_term(rng: random.Random, seed: int, namespaces: Sequence[str]) -> dict[str, Any]:
    term: dict[str, Any] = {
        "labelSelector": _label_selector(rng),
        "topologyKey": rng.choice((HOSTNAME, ZONE, ZONE, REGION)),
    }
    r = rng.random()
    if r < 0.2:
        term["namespaces"] = sorted(rng.sample(list(namespaces), rng.randint(1, 2)))
    elif r < 0.4:
        term["namespaceSelector"] = {"matchLabels": {"team": rng.choice(TEAMS), SEED_LABEL: str(seed)}}
    elif r < 0.45:
        term["namespaceSelector"] = {}  # every namespace
    if rng.random() < 0.1:
        term["matchLabelKeys"] = ["tier"]
    return term


def _resources(rng: random.Random, gpu: bool = False) -> dict[str, Any]:
    if rng.random() < 0.15:
        return {}  # best effort: the scorers count non-zero defaults
    requests: dict[str, str] = {}
    if rng.random() < 0.9:
        requests["cpu"] = rng.choice(("50m", "100m", "250m", "500m", "1", "1500m", "3"))
    if rng.random() < 0.85:
        requests["memory"] = rng.choice(("64Mi", "256Mi", "512Mi", "1Gi", "2Gi", "5Gi"))
    if rng.random() < 0.15:
        requests["ephemeral-storage"] = rng.choice(("1Gi", "4Gi", "8Gi"))
    out: dict[str, Any] = {"requests": requests}
    if rng.random() < 0.08:
        # Limits only: API defaulting copies them into requests.
        return {"limits": requests} if requests else {}
    if rng.random() < 0.05 and "memory" in requests:
        out["requests"]["hugepages-2Mi"] = out.setdefault("limits", {})["hugepages-2Mi"] = "256Mi"
    if gpu:
        n = str(rng.randint(1, 2))
        out["requests"][GPU] = n
        out.setdefault("limits", {})[GPU] = n
    return out


def gen_pod(
    rng: random.Random,
    seed: int,
    index: int,
    namespaces: Sequence[str],
    node_names: Sequence[str],
    claims: Sequence[Mapping[str, Any]] = (),
    pod_affinity: bool = True,
) -> dict[str, Any]:
    """A random pod; ``pod_affinity=False``: without pod (anti-)affinity terms."""
    app = rng.choice(APPS)
    labels = {"app": app, "tier": rng.choice(TIERS), SEED_LABEL: str(seed)}
    container: dict[str, Any] = {
        "name": "main",
        "image": rng.choice([*IMAGES, "registry.k8s.io/pause:3.10"]),
        "resources": _resources(rng, gpu=rng.random() < 0.1),
    }
    if rng.random() < 0.12:
        container["ports"] = [
            {
                "containerPort": 80,
                "hostPort": rng.choice((8080, 9090)),
                "protocol": rng.choice(("TCP", "TCP", "UDP")),
            }
        ]
    spec: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 0,
        "containers": [container],
    }
    if rng.random() < 0.2:
        spec["containers"].append({"name": "second", "image": "img-c:1", "resources": _resources(rng)})
    if rng.random() < 0.2:
        inits = []
        for j in range(rng.randint(1, 2)):
            init: dict[str, Any] = {"name": f"init{j}", "image": "img-c:1", "resources": _resources(rng)}
            if rng.random() < 0.4:
                init["restartPolicy"] = "Always"  # a sidecar
            inits.append(init)
        spec["initContainers"] = inits
    if rng.random() < 0.08:
        # Pod-level resources (PodLevelResources, beta and on in v1.36): they replace the containers'
        # sum for scheduling.
        for each in spec["containers"] + spec.get("initContainers", []):
            each["resources"] = {}
        spec["resources"] = {
            "requests": {
                "cpu": rng.choice(("200m", "1", "2500m")),
                "memory": rng.choice(("256Mi", "1Gi", "3Gi")),
            }
        }
    if rng.random() < 0.1:
        spec["runtimeClassName"] = RUNTIME_CLASS  # admission adds the class's overhead
    if rng.random() < 0.5:
        r = rng.random()
        spec["priorityClassName"] = NO_PREEMPT_CLASS if r < 0.1 else rng.choice(sorted(PRIORITY_CLASSES))
    if rng.random() < 0.15:
        key = rng.choice(("disk", "team", ZONE))
        spec["nodeSelector"] = {key: _values(rng, key)[0]}
    affinity: dict[str, Any] = {}
    node_affinity: dict[str, Any] = {}
    if rng.random() < 0.2:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_node_term(rng, node_names) for _ in range(rng.randint(1, 2))]
        }
    if rng.random() < 0.25:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [_node_requirement(rng)]}}
            for _ in range(rng.randint(1, 2))
        ]
    if node_affinity:
        affinity["nodeAffinity"] = node_affinity
    for kind, p_req, p_pref in (("podAffinity", 0.1, 0.15), ("podAntiAffinity", 0.12, 0.15)):
        if not pod_affinity:
            break
        section: dict[str, Any] = {}
        if rng.random() < p_req:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = [
                _pod_term(rng, seed, namespaces) for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < p_pref:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _pod_term(rng, seed, namespaces)}
                for _ in range(rng.randint(1, 2))
            ]
        if section:
            affinity[kind] = section
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.35:
        tolerations = []
        for _ in range(rng.randint(1, 3)):
            tol: dict[str, Any] = {}
            r = rng.random()
            if r < 0.05:
                tol["operator"] = "Exists"  # tolerates everything
            else:
                tol["key"] = rng.choice((*TAINT_KEYS, "node.kubernetes.io/unschedulable"))
                if rng.random() < 0.5:
                    tol["operator"] = "Exists"
                else:
                    tol["operator"] = "Equal"
                    tol["value"] = rng.choice(("x", "y"))
            if rng.random() < 0.6:
                tol["effect"] = rng.choice(("NoSchedule", "PreferNoSchedule", "NoExecute"))
                if tol["effect"] == "NoExecute" and rng.random() < 0.3:
                    tol["tolerationSeconds"] = 60
            tolerations.append(tol)
        spec["tolerations"] = tolerations
    if rng.random() < 0.3:
        constraints = []
        used: set[tuple[str, str]] = set()
        for _ in range(rng.randint(1, 2)):
            key = rng.choice((ZONE, ZONE, HOSTNAME, REGION))
            when = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
            if (key, when) in used:
                continue
            used.add((key, when))
            c: dict[str, Any] = {
                "maxSkew": rng.randint(1, 3),
                "topologyKey": key,
                "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": {"app": app}},
            }
            if when == "DoNotSchedule" and rng.random() < 0.3:
                c["minDomains"] = rng.randint(1, 5)
            if rng.random() < 0.3:
                c["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
            if rng.random() < 0.3:
                c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
            if rng.random() < 0.25:
                c["matchLabelKeys"] = ["tier"]
            constraints.append(c)
        spec["topologySpreadConstraints"] = constraints
    namespace = rng.choice(list(namespaces))
    if rng.random() < 0.15:
        mine = [c["metadata"]["name"] for c in claims if c["metadata"]["namespace"] == namespace]
        r = rng.random()
        name = "missing" if r < 0.1 or not mine else rng.choice(mine)
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
    if rng.random() < 0.03:
        spec["schedulingGates"] = [{"name": "example.com/hold"}]  # never lifted: no attempt at all
    if rng.random() < 0.04:
        # Host network: API defaulting turns every container port into a host port.
        spec["hostNetwork"] = True
        spec["containers"][0]["ports"] = [{"containerPort": rng.choice((8080, 9100))}]
    if rng.random() < 0.12:
        # A ResourceClaim of its own (run_seed creates it first, or leaves it missing).
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"p{index:03d}-gpu"}]
        spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p{index:03d}", "namespace": namespace, "labels": labels},
        "spec": spec,
    }


# --- py-scheduler's view --------------------------------------------------------------------------


@dataclass
class PyVerdict:
    feasible: list[str]
    scores: dict[str, int]
    best: list[str]
    message: str = ""
    nominated: str | None = None
    preemption_best: list[str] = field(default_factory=list)
    rejections: dict[str, str] = field(default_factory=dict)
    victims: dict[str, list[str]] = field(default_factory=dict)  # per preemption candidate
    # DRA: per feasible node, the devices py would allocate to each of the pod's unallocated claims
    allocations: dict[str, list[list[tuple[str, str, str, str]]]] = field(default_factory=dict)
    gated: str = ""  # a PreEnqueue plugin keeps the pod out of the active queue: no attempt at all
    # Per feasible node, each Score plugin's normalised and weighted score (when more than one fits).
    plugin_scores: dict[str, dict[str, int]] = field(default_factory=dict)


_CONFIG, _CONFIG_REGISTRY = load_config_with_plugins(None, registry=IN_TREE_REGISTRY)


def py_verdict(
    objects: Mapping[str, Sequence[Mapping[str, Any]]],
    pod: Mapping[str, Any],
    nominated: Sequence[Mapping[str, Any]] = (),
) -> PyVerdict:
    """What py-scheduler's default profile decides for ``pod`` on ``objects`` (no side effects)."""
    return sim_verdict(Simulation(_CONFIG, _CONFIG_REGISTRY, objects), pod, nominated)


class PyMirror:
    """py-scheduler's cache kept up to date incrementally, as its informers would: node and pod
    add/update/delete, the pods kube bound assumed first and confirmed by the next listing, and the
    other listers' contents replaced in place (the plugins hold them)."""

    def __init__(self, objects: Mapping[str, Sequence[Mapping[str, Any]]], *, batching: bool = False) -> None:
        self.sim = Simulation(_CONFIG, _CONFIG_REGISTRY, {})
        self.batching = batching
        if batching:
            # One algorithm for the whole seed, as the scheduler's: its batch cache carries each
            # signature's verdicts and scores from pod to pod while the cluster changes under it.
            self.sim.algorithm = SchedulingAlgorithm(rng=random.Random(0), batching=True)
        self.nodes: dict[str, Mapping[str, Any]] = {}
        self.pods: dict[str, Mapping[str, Any]] = {}
        self._assumed: set[str] = set()
        self.sync(objects)

    def sync(self, objects: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        cache = self.sim.cache
        nodes = {n["metadata"]["name"]: n for n in objects.get("nodes", ())}
        for name, gone in list(self.nodes.items()):
            if name not in nodes:
                cache.remove_node(gone)
        for name, node in nodes.items():
            prior = self.nodes.get(name)
            if prior is None:
                cache.add_node(node)
            elif prior["metadata"]["resourceVersion"] != node["metadata"]["resourceVersion"]:
                cache.update_node(prior, node)
        self.nodes = nodes
        pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in objects.get("pods", ())}
        for key, deleted in list(self.pods.items()):
            if key not in pods:
                cache.remove_pod(deleted)
        for key, pod in pods.items():
            before = self.pods.get(key)
            if before is None:
                cache.add_pod(pod)  # confirms it if assumed
            elif before["metadata"]["resourceVersion"] != pod["metadata"]["resourceVersion"]:
                cache.update_pod(before, pod)
        for key in [k for k in list(self._assumed) if k not in pods]:
            # Assumed but never seen bound (deleted meanwhile): forget it, as the scheduler's expiry.
            if cache.is_assumed(key):
                cache.forget_pod(key)
        self._assumed = set()
        self.pods = pods
        for resource, items in objects.items():
            if resource in ("nodes", "pods"):
                continue
            lister = cast(StaticLister, self.sim._lister(_spec_named(resource)))
            for obj in list(lister.list()):
                meta = obj["metadata"]
                lister.delete(meta["name"], meta.get("namespace", ""))
            for obj in items:
                lister.add(obj)

    def assume(self, pod: Mapping[str, Any], node: str) -> None:
        """kube bound ``pod`` to ``node``: the scheduler assumes it there before the watch confirms.
        A pod the cache already holds bound (a held preemptor kube bound before its victims were
        released, seen by an earlier listing) is left as it is, as the scheduler's watch would."""
        info = PodInfo(pod)
        if self.sim.cache.get_pod(info.key) is not None:
            return
        self.sim.cache.assume_pod(info, node)
        self._assumed.add(info.key)

    def verdict(self, pod: Mapping[str, Any], nominated: Sequence[Mapping[str, Any]] = ()) -> PyVerdict:
        return sim_verdict(self.sim, pod, nominated, batching=self.batching)

    def decliners(self, pod: Mapping[str, Any]) -> list[str]:
        """The default profile's plugins that decline to sign ``pod`` now (empty: it is signable)."""
        fwk = next(iter(self.sim.frameworks.values()))
        info = PodInfo(pod)
        return [plugin.name for plugin in fwk.signers or () if plugin.sign(info) is None]

    def default_spread(self, pod: Mapping[str, Any]) -> bool:
        """Whether the default profile spreads ``pod`` by PodTopologySpread's system default
        constraints (no constraints of its own; a Service or its controller selects pods)."""
        fwk = next(iter(self.sim.frameworks.values()))
        info = PodInfo(pod)
        spread = next(p for p in fwk.plugins.pre_score if isinstance(p, PodTopologySpread))
        return not has_own_constraints(info) and bool(spread.constraints(info, SCHEDULE_ANYWAY))

    def batch_stats(self) -> BatchStats | None:
        batch = self.sim.algorithm.batch
        return batch.stats if batch is not None else None


def _spec_named(name: str) -> Any:
    from informers import resource as resources

    for value in vars(resources).values():
        if isinstance(value, resources.ResourceSpec) and value.name == name:
            return value
    raise KeyError(name)


def _devices(allocation: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """A claim allocation's device results, as (request, driver, pool, device)."""
    return [
        (r.get("request", ""), r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
        for r in (allocation.get("devices") or {}).get("results") or ()
    ]


class StaticNominator:
    """Pending pods nominated to nodes by an earlier preemption (their status.nominatedNodeName), as
    the scheduler's queue would hold them."""

    def __init__(self, pods: Sequence[Mapping[str, Any]]) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        for p in pods:
            self._by_node.setdefault(p["status"]["nominatedNodeName"], []).append(PodInfo(p))

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self._by_node.get(node_name, [])

    def nominated_node_names(self) -> Sequence[str]:
        return list(self._by_node)


def sim_verdict(
    sim: Simulation,
    pod: Mapping[str, Any],
    nominated_pods: Sequence[Mapping[str, Any]] = (),
    *,
    batching: bool = False,
) -> PyVerdict:
    """What ``sim``'s default profile decides for ``pod`` (no side effects on the cluster).
    ``batching``: judge as the scheduler's schedule_pod does, through ``sim.algorithm``'s batch cache
    (it must have one), which reads and fills it."""
    fwk = next(iter(sim.frameworks.values()))
    fwk.nominator = StaticNominator(nominated_pods)
    info = PodInfo(pod)
    gate = fwk.run_pre_enqueue(info)
    if gate is not None:
        return PyVerdict([], {}, [], gated=f"{gate.plugin}: {gate.message()}")
    sim.cache.update_snapshot(sim.snapshot)
    algorithm = sim.algorithm
    state = CycleState()
    all_nodes = sim.snapshot.node_infos()
    feasible, diagnosis = algorithm._find_nodes_that_fit(
        fwk, state, info, all_nodes, sim.snapshot, batching=batching
    )
    if feasible:
        names = [n.name for n in feasible]
        if len(feasible) == 1:
            verdict = PyVerdict(names, {names[0]: 0}, names)
        else:
            batched = algorithm._batched if batching else None
            breakdown: list[tuple[str, Any, Any, int]] = []
            state.write(SCORE_BREAKDOWN_KEY, breakdown)
            raw = algorithm._prioritize(fwk, state, info, feasible, batched=batched)
            scores = {name: int(s) for name, s in zip(names, raw, strict=True)}
            top = max(scores.values())
            verdict = PyVerdict(names, scores, sorted(n for n, s in scores.items() if s == top))
            for plugin, _, normalized, weight in breakdown:
                for name, value in zip(names, normalized, strict=True):
                    verdict.plugin_scores.setdefault(name, {})[plugin] = int(value) * weight
        dra = state.get(DRA_STATE_KEY)
        if dra is not None and dra.allocator is not None:
            # What Reserve would write on each feasible node (Filter keeps none when it counted).
            for node_name in names:
                allocations = dra.allocations_on(node_name)
                if allocations is not None:
                    verdict.allocations[node_name] = [_devices(a) for a in allocations]
        return verdict
    err = FitError(info, len(all_nodes), diagnosis)
    outcome = fwk.run_post_filter(state, info, diagnosis.node_to_status)
    if isinstance(outcome, PausedPostFilter):
        # DynamicResources wants to deallocate a claim (an API write, in a worker thread in the
        # scheduler): finish the run here; the write goes through this harness's handle.
        outcome = asyncio.run(fwk.resume_post_filter(outcome))
    nominated, post = outcome
    if post is not None and post.reasons:
        diagnosis.post_filter_msg = post.message()
    verdict = PyVerdict([], {}, [], message=err.message(), nominated=nominated or None)
    verdict.rejections = {
        name: f"{status.plugin}: {status.message()}" for name, status in diagnosis.node_to_status.items()
    }
    if nominated:
        evaluator = cast(
            Evaluator, next(p.evaluator for p in fwk.plugins.post_filter if hasattr(p, "evaluator"))
        )
        found = evaluator.candidates(state, info, diagnosis.node_to_status)
        if isinstance(found, list):
            verdict.preemption_best = best_preemption_candidates(found)
            verdict.victims = {c.name: sorted(v.key for v in c.victims) for c in found}
        else:
            verdict.preemption_best = [f"(no candidates on a second look: {found})"]
    return verdict


_NOMINEE_IN_MESSAGE = re.compile(r"(found a potential placement for pod on node )\S+(, preempting)")


def without_nominee(message: str) -> str:
    """The message with the node of v1.37's "found a potential placement for pod on node N, preempting
    K victims" blanked: which of equally good candidates is nominated is random (checked apart, as
    ``preemption``), the rest of the text must agree."""
    return _NOMINEE_IN_MESSAGE.sub(r"\1<nominee>\2", message)


_VICTIM_COUNT_IN_MESSAGE = re.compile(r"(preempting )\d+( victims)")


def without_victim_count(message: str) -> str:
    """The message with the K of "preempting K victims" blanked."""
    return _VICTIM_COUNT_IN_MESSAGE.sub(r"\1<k>\2", message)


def _essence(v: PyVerdict) -> tuple[Any, ...]:
    """What must not depend on how the cache was built. Not the nominee, nor how many victims (also not
    where the message says them): among equally good candidates the nominee is random, and the victims
    depend on the order of a node's pods (of one priority, unstarted, the first on the node is reprieved
    first), which a cache built from one listing cannot know (kube's follows its informer's event
    order). What the node holds does not depend on it: ``snapshot_drift`` compares that."""
    return (
        sorted(v.feasible),
        sorted(v.scores.items()),
        without_victim_count(without_nominee(v.message)),
        bool(v.nominated),
        v.gated,
    )


def snapshot_drift(incremental: SnapshotLister, fresh: SnapshotLister) -> list[str]:
    """Where two snapshots of the same objects disagree on what a node holds, whatever the order of its
    pods: the node list, each node's pods (as a set), what they request, its allocatable and host ports.
    Empty when they agree."""

    def contents(snapshot: SnapshotLister) -> dict[str, tuple[Any, ...]]:
        return {
            info.name: (
                sorted(info.pods),
                comparable_amounts(info.requested),
                comparable_amounts(info.non_zero_requested),
                comparable_amounts(info.allocatable),
                sorted(info.used_ports.items()),
            )
            for info in snapshot.node_infos()
        }

    mine, theirs = contents(incremental), contents(fresh)
    drift = [f"node {name}: only in the {side} snapshot" for name, side in _only_in(mine, theirs)]
    for name in sorted(mine.keys() & theirs.keys()):
        if mine[name] != theirs[name]:
            drift.append(f"node {name}: incremental {mine[name]} vs fresh {theirs[name]}")
    return drift


def _only_in(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[tuple[str, str]]:
    return sorted(
        [(name, "incremental") for name in mine.keys() - theirs.keys()]
        + [(name, "fresh") for name in theirs.keys() - mine.keys()]
    )


def best_preemption_candidates(candidates: Sequence[Candidate]) -> list[str]:
    """The candidates upstream's pickOneNodeForPreemption may return. Its criteria 1-4 (PDB violations,
    highest victim priority, priority sum, victim count) are deterministic. Criterion 5, the latest start
    of the most important victims, is not here: no kubelet sets status.startTime, so upstream's
    GetPodStartTime returns time.Now() for each victim, evaluated in Go map order; which of equal
    candidates wins is then a matter of nanoseconds and map iteration order, i.e. random. So every
    candidate tied on criteria 1-4 counts as a valid nominee (asserted: no victim has a startTime)."""

    def key(c: Candidate) -> tuple[int, int, int, int]:
        return (
            -c.num_pdb_violations,
            -c.victims[0].priority,
            -sum(v.priority + 2**31 for v in c.victims),
            -len(c.victims),
        )

    if any(v.pod.get("status", {}).get("startTime") for c in candidates for v in c.victims):
        raise AssertionError("a victim has a startTime: criterion 5 would be deterministic")
    best = max(map(key, candidates), default=None)
    return sorted(c.name for c in candidates if key(c) == best)


# --- kube-scheduler's view ------------------------------------------------------------------------


@dataclass
class KubeOutcome:
    node: str = ""
    message: str = ""
    reason: str = ""
    nominated: str = ""
    final_node: str = ""  # a preemptor's node once bound
    held: bool = False  # a preemptor left nominated while its victims hang on in Terminating


def _scheduled_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in pod.get("status", {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled":
            found: Mapping[str, Any] = cond
            return found
    return None


def _get_pod(client: Any, ns: str, name: str) -> dict[str, Any] | None:
    try:
        pod: dict[str, Any] = _request(client, "GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        return pod
    except ApiException as err:
        if err.status == 404:
            return None
        raise


def _watch_pod(
    client: Any, ns: str, name: str, resource_version: str, timeout: float
) -> Iterator[dict[str, Any]]:
    """Every version of one pod after ``resource_version``, in order (a watch: polling would miss the
    short-lived Unschedulable status of a pod kube binds right after preempting for it)."""
    path = (
        f"/api/v1/namespaces/{ns}/pods?watch=1&fieldSelector=metadata.name%3D{name}"
        f"&resourceVersion={resource_version}&timeoutSeconds={int(timeout)}"
    )
    method, url, headers, _, _ = client.param_serialize(
        method="GET",
        resource_path=path,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = client.rest_client.pool_manager.request(
        method, url, headers=headers, preload_content=False, timeout=timeout + 5
    )
    try:
        buffer = b""
        for chunk in response.stream(4096):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.strip():
                    event = json.loads(line)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        yield event["object"]
                    elif event.get("type") == "DELETED":
                        return
    finally:
        response.close()  # an unfinished watch must not go back to the pool
        response.release_conn()


def wait_kube(
    client: Any,
    created: Mapping[str, Any],
    timeout: float = DECISION_TIMEOUT,
    victims_held: Callable[[], bool] = lambda: False,
) -> KubeOutcome | None:
    """kube-scheduler's first verdict on ``created``; for a preemptor, also where it ends up. None when
    kube made no attempt within ``timeout`` (the watch ends then: a pod kube never tries gets no
    event to wake us)."""
    meta = created["metadata"]
    ns, name = meta["namespace"], meta["name"]
    out: KubeOutcome | None = None
    version = meta["resourceVersion"]
    for pod in _watch_pod(client, ns, name, version, timeout):
        version = pod["metadata"]["resourceVersion"]
        if pod["spec"].get("nodeName"):
            return KubeOutcome(node=pod["spec"]["nodeName"])
        cond = _scheduled_condition(pod)
        if cond is not None and cond.get("status") == "False":
            out = KubeOutcome(message=cond.get("message", ""), reason=cond.get("reason", ""))
            out.nominated = pod.get("status", {}).get("nominatedNodeName") or ""
            break
    if out is None or not out.nominated:
        return out
    for wait in (1.5, PREEMPTION_TIMEOUT):
        for pod in _watch_pod(client, ns, name, version, wait):
            version = pod["metadata"]["resourceVersion"]
            if pod["spec"].get("nodeName"):
                out.final_node = pod["spec"]["nodeName"]
                return out
        if victims_held():
            out.held = True  # its victims are terminating behind a finalizer: it stays nominated
            return out
    return out  # final_node is empty for a preemptor not bound in time


# kube-scheduler at ``--vmodule=schedule_one=10`` logs each Score plugin's weighted score and the total
# per node, for every pod it scores (upstream schedule_one.go prioritizeNodes).
KUBE_SCORE_LOGGING = "--vmodule=schedule_one=10"
_PLUGIN_SCORE = re.compile(
    r'"Plugin scored node for pod" pod="([^"]+)" plugin="([^"]+)" node="([^"]+)" score=(-?\d+)'
)
_FINAL_SCORE = re.compile(
    r'"Calculated node\'s final score for pod" pod="([^"]+)" node="([^"]+)" score=(-?\d+)'
)


class KubeScores:
    """The scores kube-scheduler logged, read incrementally from its log file. Only a pod's first
    attempt is comparable with py's verdict (on the state before the pod): ``take`` is asked once kube
    bound the pod at its first attempt, so every line about the pod so far belongs to that attempt."""

    def __init__(self, log_path: str) -> None:
        self._path = log_path
        with open(log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            self._offset = f.tell()
        self._totals: dict[str, dict[str, int]] = {}
        self._plugins: dict[str, dict[str, dict[str, int]]] = {}

    def _read(self) -> None:
        with open(self._path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        self._offset += end
        for line in data[:end].decode(errors="replace").splitlines():
            if (m := _FINAL_SCORE.search(line)) is not None:
                self._totals.setdefault(m[1], {})[m[2]] = int(m[3])
            elif (m := _PLUGIN_SCORE.search(line)) is not None:
                self._plugins.setdefault(m[1], {}).setdefault(m[3], {})[m[2]] = int(m[4])

    def take(self, key: str) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
        """The total and per-plugin scores per node kube logged for ``key`` (empty: none, as when a
        single node fits), forgotten afterwards."""
        self._read()
        return self._totals.pop(key, {}), self._plugins.pop(key, {})


def compare_scores(
    seed: int, key: str, py: PyVerdict, totals: Mapping[str, int], plugins: Mapping[str, Mapping[str, int]]
) -> list[Mismatch]:
    """Each node's total score must be the same in both; the detail names the plugins that differ."""
    if not totals or len(py.feasible) < 2:
        return []
    differ = sorted(n for n in totals.keys() | py.scores.keys() if totals.get(n) != py.scores.get(n))
    if not differ:
        return []
    parts = []
    for node in differ[:4]:
        kube_plugins, py_plugins = plugins.get(node, {}), py.plugin_scores.get(node, {})
        by_plugin = sorted(
            f"{p} kube {kube_plugins.get(p)} py {py_plugins.get(p)}"
            for p in kube_plugins.keys() | py_plugins.keys()
            if kube_plugins.get(p) != py_plugins.get(p)
        )
        parts.append(f"{node}: kube {totals.get(node)} py {py.scores.get(node)} ({'; '.join(by_plugin)})")
    more = f" (+{len(differ) - 4} nodes)" if len(differ) > 4 else ""
    return [Mismatch(seed, key, "score", " | ".join(parts) + more)]


# --- one seed -------------------------------------------------------------------------------------


@dataclass
class Mismatch:
    seed: int
    pod: str
    kind: str
    detail: str


def setup_objects(client: Any) -> None:
    """Cluster-wide objects every seed uses (idempotent)."""
    objs: list[tuple[str, dict[str, Any]]] = [
        (
            "/apis/node.k8s.io/v1/runtimeclasses",
            {
                "apiVersion": "node.k8s.io/v1",
                "kind": "RuntimeClass",
                "metadata": {"name": RUNTIME_CLASS},
                "handler": "runc",
                "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
            },
        )
    ]
    for name, value in PRIORITY_CLASSES.items():
        objs.append(
            (
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                },
            )
        )
    objs.append(
        (
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": NO_PREEMPT_CLASS},
                "value": 1000,
                "preemptionPolicy": "Never",
            },
        )
    )
    objs.append(
        (
            "/apis/resource.k8s.io/v1/deviceclasses",
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": DEVICE_CLASS},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            },
        )
    )
    for name, mode in ((WFFC_CLASS, "WaitForFirstConsumer"), (IMMEDIATE_CLASS, "Immediate")):
        objs.append(
            (
                "/apis/storage.k8s.io/v1/storageclasses",
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "StorageClass",
                    "metadata": {"name": name},
                    "provisioner": "kubernetes.io/no-provisioner",
                    "volumeBindingMode": mode,
                },
            )
        )
    for path, body in objs:
        with contextlib.suppress(ApiException):
            _request(client, "POST", path, body)


def _create_owners(client: Any, namespaces: Sequence[str]) -> None:
    """A Service selecting app=web and a ReplicaSet selecting app=db: pods they select and that have no
    topology spread constraints of their own get PodTopologySpread's system default constraints."""
    seed_labels = {SEED_LABEL: namespaces[0].split("-")[1][1:]}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "labels": seed_labels},
        # Headless: a long run would exhaust the control plane's Service IP range.
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], "clusterIP": "None"},
    }
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "db", "labels": seed_labels},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "img-a:1"}]},
            },
        },
    }
    # Without a disruption controller its status stays empty (0 disruptions allowed): every cache pod
    # in the namespace is a PDB-violating victim for preemption.
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "cache", "labels": seed_labels},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "cache"}}},
    }
    for ns in namespaces[:2]:
        with contextlib.suppress(ApiException):
            _request(client, "POST", f"/api/v1/namespaces/{ns}/services", service)
    with contextlib.suppress(ApiException):
        _request(client, "POST", f"/apis/policy/v1/namespaces/{namespaces[0]}/poddisruptionbudgets", pdb)
    with contextlib.suppress(ApiException):
        _request(client, "POST", f"/apis/apps/v1/namespaces/{namespaces[1]}/replicasets", replica_set)


def _create_more_owners(client: Any, rng: random.Random, seed: int, namespaces: Sequence[str]) -> list[Owner]:
    """The seed's overlapping Services and its ReplicaSets, StatefulSets and ReplicationControllers
    (bench.parity_extras); returns the controllers, with the uids their pods' ownerReferences need."""
    owners: list[Owner] = []
    for path, body in owner_objects(rng, {SEED_LABEL: str(seed)}, namespaces):
        try:
            created = _request(client, "POST", path, body)
        except ApiException as err:
            if err.status != 409:
                raise
            created = _request(client, "GET", f"{path}/{body['metadata']['name']}")  # a seed run again
        created.setdefault("kind", body["kind"])
        created.setdefault("apiVersion", body["apiVersion"])
        owner = owner_of(created, template_labels_of(body))
        if owner is not None:
            owners.append(owner)
    return owners


def _list(client: Any, path: str, selector: str = "") -> list[dict[str, Any]]:
    query = f"?labelSelector={selector}" if selector else ""
    items: list[dict[str, Any]] = _request(client, "GET", path + query)["items"]
    return items


HOLD_FINALIZER = "parity.py-scheduler.test/hold"


def _release(client: Any, pod: Mapping[str, Any]) -> None:
    meta = pod["metadata"]
    if meta.get("finalizers"):
        with contextlib.suppress(ApiException):
            _request(
                client,
                "PATCH",
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                {"metadata": {"finalizers": None}},
                "application/merge-patch+json",
            )


def _held_victims(client: Any, selector: str) -> list[dict[str, Any]]:
    return [
        p
        for p in _list(client, "/api/v1/pods", selector)
        if p["metadata"].get("deletionTimestamp")
        and HOLD_FINALIZER in (p["metadata"].get("finalizers") or ())
    ]


def _force_delete(client: Any, pod: Mapping[str, Any]) -> None:
    meta = pod["metadata"]
    _release(client, pod)
    with contextlib.suppress(ApiException):
        _request(
            client,
            "DELETE",
            f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
            {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
        )


def _wait_gone(client: Any, pods: Sequence[Mapping[str, Any]], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    for pod in pods:
        meta = pod["metadata"]
        while time.monotonic() < deadline and _get_pod(client, meta["namespace"], meta["name"]) is not None:
            time.sleep(0.02)


def compare(seed: int, key: str, py: PyVerdict, kube: KubeOutcome) -> list[Mismatch]:
    out: list[Mismatch] = []
    if kube.node:
        if not py.feasible:
            why = py.rejections.get(kube.node, "?")
            out.append(
                Mismatch(seed, key, "feasibility", f"kube bound to {kube.node}, py: {why}; {py.message}")
            )
        elif kube.node not in py.best:
            detail = (
                f"kube chose {kube.node} (py score {py.scores.get(kube.node, 'infeasible')}); "
                f"py best {py.best} score {max(py.scores.values())}"
            )
            out.append(Mismatch(seed, key, "node", detail))
        return out
    if py.feasible:
        out.append(
            Mismatch(
                seed,
                key,
                "feasibility",
                f"kube left it pending ({kube.message}); py feasible on {py.feasible}",
            )
        )
        return out
    if without_nominee(kube.message) != without_nominee(py.message):
        out.append(Mismatch(seed, key, "message", f"\n   kube: {kube.message}\n   py:   {py.message}"))
    if bool(kube.nominated) != bool(py.nominated):
        out.append(
            Mismatch(seed, key, "preemption", f"kube nominated {kube.nominated!r}, py {py.nominated!r}")
        )
    elif kube.nominated and kube.nominated not in py.preemption_best:
        out.append(
            Mismatch(
                seed,
                key,
                "preemption",
                f"kube nominated {kube.nominated}; py candidates {py.preemption_best}",
            )
        )
    return out


def repeat_pod(template: Mapping[str, Any], index: int) -> dict[str, Any]:
    """Another pod of ``template``'s shape (a ReplicaSet's next replica): same spec, labels and
    namespace, its own name and its own ResourceClaim (claims are per pod)."""
    pod = copy.deepcopy(dict(template))
    pod["metadata"]["name"] = f"p{index:03d}"
    for ref in pod["spec"].get("resourceClaims", ()):
        ref["resourceClaimName"] = f"p{index:03d}-gpu"
    return pod


class PodStream:
    """The seed's pods. With ``repeats`` (the batching mode) a drawn pod often becomes a template for
    the next 1-5 pods, so signatures repeat as replicas of one workload do; without, every pod is drawn
    afresh (the random stream of the one-by-one seeds stays as it was)."""

    def __init__(
        self,
        rng: random.Random,
        repeats: bool,
        pod_affinity_from: int = 0,
        extra: random.Random | None = None,
        owners: Sequence[Owner] = (),
        csi_claims: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self._rng = rng
        # The fields bench.parity_extras adds (ownerReferences, host IPs, ...), from a stream of their
        # own: the original draws stay as they were.
        self._extra = extra
        self._owners = owners
        self._csi_claims = csi_claims or {}
        self._repeats = repeats
        # Pods before this index have no pod (anti-)affinity. One such pod bound anywhere makes
        # InterPodAffinity decline to sign every later pod (its terms reach across nodes), so the
        # batching mode keeps them to the seed's last part: first runs the cache answers, then runs
        # it must decline.
        self._pod_affinity_from = pod_affinity_from
        self._template: dict[str, Any] | None = None
        self._left = 0

    def next(
        self,
        seed: int,
        index: int,
        namespaces: Sequence[str],
        node_names: Sequence[str],
        claims: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]:
        if self._left > 0 and self._template is not None:
            self._left -= 1
            return repeat_pod(self._template, index)
        pod = gen_pod(
            self._rng, seed, index, namespaces, node_names, claims, index >= self._pod_affinity_from
        )
        if self._extra is not None:
            add_owner(self._extra, pod, self._owners)
            add_pod_fields(self._extra, pod)
            add_csi_volumes(self._extra, pod, self._csi_claims)
            vary_terms(self._extra, pod)
        if self._repeats and self._rng.random() < REPEAT_SHARE:
            if self._rng.random() < PLAIN_SHARE:
                pod = plain_pod(pod)
            self._template = copy.deepcopy(pod)
            self._left = self._rng.randint(1, 5)
        return pod


def plain_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """``pod`` without what makes a pod unsignable by itself (pod (anti-)affinity, topology spread,
    volumes, ResourceClaims, extended resources and hugepages): a typical ReplicaSet replica, whose
    requests, tolerations, node selector and affinity, host ports and priority stay. Its app is
    ``cache``, which no Service or ReplicaSet selects (those give the pod PodTopologySpread's system
    default constraints) but the PDB does (preemption)."""
    out = copy.deepcopy(dict(pod))
    out["metadata"]["labels"]["app"] = "cache"
    spec = out["spec"]
    affinity = spec.get("affinity", {})
    for kind in ("podAffinity", "podAntiAffinity"):
        affinity.pop(kind, None)
    if not affinity:
        spec.pop("affinity", None)
    for key in ("topologySpreadConstraints", "volumes", "resourceClaims"):
        spec.pop(key, None)
    without_owner_spreading(out)
    for container in spec["containers"] + spec.get("initContainers", []):
        resources = container.get("resources", {})
        resources.pop("claims", None)
        for amounts in (resources.get("requests"), resources.get("limits")):
            for name in [n for n in amounts or () if n == GPU or n.startswith("hugepages-")]:
                del amounts[name]
    return out


def run_seed(
    client: Any,
    seed: int,
    nodes_range: tuple[int, int],
    pods_range: tuple[int, int],
    verbose: bool = False,
    *,
    batching: bool = False,
    kube_log: str | None = None,
) -> tuple[list[Mismatch], Counter[str]]:
    """One seed. ``batching``: pods come in runs of one shape, and a third judge, the batching one
    (one SchedulingAlgorithm with its batch cache kept across the seed, over its own incremental
    cache), judges each too; it must agree with the one-by-one judge exactly and with kube as that
    one must (mismatch kinds ``batching`` and ``batching <kind>``). ``kube_log``: the log of a
    kube-scheduler started with ``KUBE_SCORE_LOGGING``; every node's score of a pod kube binds at its
    first attempt is then compared too (kind ``score``)."""
    kube_scores = KubeScores(kube_log) if kube_log else None
    rng = random.Random(seed)
    stats: Counter[str] = Counter()
    mismatches: list[Mismatch] = []
    nodes = gen_nodes(rng, seed, rng.randint(*nodes_range))
    extra = extras_rng(seed)
    for node in nodes:
        features = declared_features(extra)
        if features is not None:
            node["status"]["declaredFeatures"] = features
    node_names = [n["metadata"]["name"] for n in nodes]
    namespaces = [f"parity-s{seed}-{team}" for team in TEAMS]
    for ns, team in zip(namespaces, TEAMS, strict=True):
        with contextlib.suppress(ApiException):
            _request(
                client,
                "POST",
                "/api/v1/namespaces",
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": ns, "labels": {"team": team, SEED_LABEL: str(seed)}},
                },
            )
    _create_owners(client, namespaces)
    owners = _create_more_owners(client, extra, seed, namespaces)
    pvs, pvcs = gen_volumes(rng, seed, namespaces, nodes)
    for pv in pvs:
        _request(client, "POST", "/api/v1/persistentvolumes", pv)
    for pvc in pvcs:
        _request(
            client, "POST", f"/api/v1/namespaces/{pvc['metadata']['namespace']}/persistentvolumeclaims", pvc
        )
    create_nodes(client, nodes)
    csi, csi_claims = csi_objects(extra, seed, WFFC_CLASS, {SEED_LABEL: str(seed)}, node_names, namespaces)
    for path, body in csi:
        _request(client, "POST", path, body)
    for slice_ in gen_slices(rng, seed, nodes):
        _request(client, "POST", "/apis/resource.k8s.io/v1/resourceslices", slice_)
    selector = f"{SEED_LABEL}={seed}"
    time.sleep(0.5)  # kube-scheduler's node informer
    known_bound: set[str] = set()
    mirror: PyMirror | None = None
    batch_mirror: PyMirror | None = None
    held: list[dict[str, Any]] = []  # preemptors kube nominated whose victims are still terminating

    def release_held() -> None:
        """Let the held victims go; kube then binds each held preemptor (or it is deleted)."""
        for victim in _held_victims(client, selector):
            _release(client, victim)
        for p in held:
            meta = p["metadata"]
            deadline = time.monotonic() + 10.0
            current = _get_pod(client, meta["namespace"], meta["name"])
            while current is not None and not current["spec"].get("nodeName") and time.monotonic() < deadline:
                time.sleep(0.05)
                current = _get_pod(client, meta["namespace"], meta["name"])
            if current is not None and current["spec"].get("nodeName"):
                assert mirror is not None
                mirror.assume(current, current["spec"]["nodeName"])
                if batch_mirror is not None:
                    batch_mirror.assume(current, current["spec"]["nodeName"])
                stats["released and bound"] += 1
            elif current is not None:
                _force_delete(client, current)
                _wait_gone(client, [current])
                stats["released, never bound"] += 1
        held.clear()
        time.sleep(0.15)

    try:
        count = rng.randint(*pods_range)
        stream = PodStream(
            rng,
            repeats=batching,
            pod_affinity_from=count * 2 // 3 if batching else 0,
            extra=extra,
            owners=owners,
            csi_claims=csi_claims,
        )
        for index in range(count):
            if held and rng.random() < 0.35:
                release_held()
            pod = stream.next(seed, index, namespaces, node_names, pvcs)
            if rng.random() < 0.25:
                # Deleted (by preemption), it stays Terminating until released: its preemptor stays
                # nominated meanwhile, and the pods that come next must count it there.
                pod["metadata"]["finalizers"] = [HOLD_FINALIZER]
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            key = f"{ns}/{name}"
            for ref in pod["spec"].get("resourceClaims", ()):
                if rng.random() < 0.9:  # else: the claim is missing
                    claim = gen_claim(rng, seed, ns, ref["resourceClaimName"])
                    _request(
                        client, "POST", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims", claim
                    )
                    time.sleep(0.1)  # kube-scheduler's claim informer sees it before the pod
            ephemeral = ephemeral_claim_name(pod)
            if ephemeral is not None and extra.random() < 0.3:
                # A claim of the ephemeral volume's name that the pod does not own: VolumeBinding
                # refuses it (without one, it waits for the ephemeral volume controller).
                stray = _pvc(seed, ns, ephemeral, WFFC_CLASS, "ReadWriteOnce")
                _request(client, "POST", f"/api/v1/namespaces/{ns}/persistentvolumeclaims", stray)
                time.sleep(0.1)
            all_pods = _list(client, "/api/v1/pods", selector)
            pods_before = [p for p in all_pods if p["spec"].get("nodeName")]
            nominated_pods = [
                p
                for p in all_pods
                if not p["spec"].get("nodeName")
                and (p.get("status") or {}).get("nominatedNodeName")
                and not p["metadata"].get("deletionTimestamp")
            ]
            now_bound = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods_before}
            if verbose and (vanished := known_bound - now_bound):
                print(f"seed {seed} before {key}: gone from the cluster: {sorted(vanished)}", file=sys.stderr)
            known_bound = now_bound
            all_ns = _list(client, "/api/v1/namespaces")
            # Everything py judges on is read before the pod exists: kube may act on it at once.
            if rng.random() < 0.1:
                change = mutate_node(rng, client, _list(client, "/api/v1/nodes", selector))
                stats["node changes"] += 1
                if verbose:
                    print(f"  node change: {change}", file=sys.stderr)
                time.sleep(0.15)  # kube-scheduler's node informer
            objects = {
                "nodes": _list(client, "/api/v1/nodes", selector),
                "pods": pods_before,
                "namespaces": all_ns,
                "services": _list(client, "/api/v1/services", selector),
                "replicasets.apps": _list(client, "/apis/apps/v1/replicasets", selector),
                "statefulsets.apps": _list(client, "/apis/apps/v1/statefulsets", selector),
                "replicationcontrollers": _list(client, "/api/v1/replicationcontrollers", selector),
                "poddisruptionbudgets.policy": _list(
                    client, "/apis/policy/v1/poddisruptionbudgets", selector
                ),
                "persistentvolumes": _list(client, "/api/v1/persistentvolumes", selector),
                "persistentvolumeclaims": _list(client, "/api/v1/persistentvolumeclaims", selector),
                "storageclasses.storage.k8s.io": _list(client, "/apis/storage.k8s.io/v1/storageclasses"),
                "csinodes.storage.k8s.io": _list(client, "/apis/storage.k8s.io/v1/csinodes", selector),
                "csidrivers.storage.k8s.io": _list(client, "/apis/storage.k8s.io/v1/csidrivers", selector),
                "resourceclaims.resource.k8s.io": _list(
                    client, "/apis/resource.k8s.io/v1/resourceclaims", selector
                ),
                "resourceslices.resource.k8s.io": _list(
                    client, "/apis/resource.k8s.io/v1/resourceslices", selector
                ),
                "deviceclasses.resource.k8s.io": _list(client, "/apis/resource.k8s.io/v1/deviceclasses"),
            }
            try:
                created = _request(client, "POST", f"/api/v1/namespaces/{ns}/pods", pod)
            except ApiException as err:
                stats["invalid"] += 1
                if verbose:
                    print(f"seed {seed} {key}: rejected by the apiserver: {err.body}", file=sys.stderr)
                continue
            if mirror is None:
                mirror = PyMirror(objects)
            else:
                mirror.sync(objects)
            py = mirror.verdict(created, nominated_pods)
            if mirror.default_spread(created):
                stats["default spread"] += 1
            controller = next(
                (r for r in created["metadata"].get("ownerReferences") or () if r.get("controller")), None
            )
            if controller is not None:
                stats[f"controller {controller['kind']}"] += 1
            elif created["metadata"].get("ownerReferences"):
                stats["owner, no controller"] += 1
            volumes = created["spec"].get("volumes") or ()
            if any(v.get("name", "").startswith("csi") for v in volumes):
                stats["csi volumes"] += 1
            if any("ephemeral" in v for v in volumes):
                stats["ephemeral volumes"] += 1
            if any("iscsi" in v or "rbd" in v for v in volumes):
                stats["inline disks"] += 1
            batched: PyVerdict | None = None
            if batching:
                if batch_mirror is None:
                    batch_mirror = PyMirror(objects, batching=True)
                else:
                    batch_mirror.sync(objects)
                batched = batch_mirror.verdict(created, nominated_pods)
                stats["batching judged"] += 1
                for plugin in batch_mirror.decliners(created):
                    stats[f"unsigned by {plugin}"] += 1
                if _essence(batched) != _essence(py) or batched.best != py.best:
                    # Batching must place exactly as one-by-one scheduling: a batching bug alone.
                    detail = (
                        f"batching {_essence(batched)} best {batched.best}"
                        f" vs one-by-one {_essence(py)} best {py.best}"
                    )
                    mismatches.append(Mismatch(seed, key, "batching", detail))
                    if verbose:
                        print(f"MISMATCH seed={seed} {key} batching: {detail}", file=sys.stderr)
            fresh_sim = Simulation(_CONFIG, _CONFIG_REGISTRY, objects)
            fresh = sim_verdict(fresh_sim, created, nominated_pods)
            for sim in (mirror.sim, fresh_sim):  # a pod PreEnqueue holds back leaves them as they were
                sim.cache.update_snapshot(sim.snapshot)
            drift = snapshot_drift(mirror.sim.snapshot, fresh_sim.snapshot)
            if drift or _essence(py) != _essence(fresh):
                # The incremental cache disagrees with one built from scratch: a py-scheduler bug alone.
                detail = "; ".join(drift) or f"incremental {_essence(py)} vs fresh {_essence(fresh)}"
                mismatches.append(Mismatch(seed, key, "cache", detail))
                if verbose:
                    print(f"MISMATCH seed={seed} {key} cache: {detail}", file=sys.stderr)
            # A pod py keeps out of the queue (PreEnqueue) must see no attempt from kube either.
            decided = time.monotonic()
            kube = wait_kube(
                client,
                created,
                GATED_WAIT if py.gated else DECISION_TIMEOUT,
                victims_held=lambda: bool(_held_victims(client, selector)),
            )
            decided = time.monotonic() - decided
            if kube is None or py.gated:
                stats["gated"] += 1
                if kube is not None or not py.gated:
                    what = "no attempt" if kube is None else f"{kube.node or kube.message}"
                    found = [
                        Mismatch(seed, key, "gating", f"kube: {what}; py PreEnqueue: {py.gated or 'admits'}")
                    ]
                    mismatches.extend(found)
                    if verbose:
                        print(f"MISMATCH seed={seed} {key} gating: {found[0].detail}", file=sys.stderr)
                _force_delete(client, created)
                _wait_gone(client, [created])
                continue
            if kube.nominated:
                stats["preempted"] += 1
            stats["bound" if kube.node else "pending"] += 1
            if kube.node or kube.final_node:
                mirror.assume(created, kube.node or kube.final_node)
                if batch_mirror is not None:
                    batch_mirror.assume(created, kube.node or kube.final_node)
            if kube.node and kube.node in py.allocations:
                kube_devices = []
                for ref in created["spec"].get("resourceClaims", ()):
                    claim = _request(
                        client,
                        "GET",
                        f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{ref['resourceClaimName']}",
                    )
                    kube_devices.append(_devices((claim.get("status") or {}).get("allocation") or {}))
                if kube_devices != py.allocations[kube.node]:
                    detail = (
                        f"on {kube.node} kube allocated {kube_devices}, py would {py.allocations[kube.node]}"
                    )
                    mismatches.append(Mismatch(seed, key, "dra-allocation", detail))
                    if verbose:
                        print(f"MISMATCH seed={seed} {key} dra-allocation: {detail}", file=sys.stderr)
            if kube.nominated and kube.nominated in py.victims:
                after = {
                    f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                    for p in _list(client, "/api/v1/pods", selector)
                    if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
                }
                already_going = {
                    f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                    for p in pods_before
                    if p["metadata"].get("deletionTimestamp")
                }
                evicted = sorted(now_bound - already_going - after)
                # A victim already terminating (held by its finalizer) is chosen again but not deleted
                # again: only the new deletions show.
                py_victims = [v for v in py.victims[kube.nominated] if v not in already_going]
                if evicted != py_victims:
                    detail = f"on {kube.nominated} kube evicted {evicted}, py would {py_victims}"
                    mismatches.append(Mismatch(seed, key, "victims", detail))
                    if verbose:
                        print(f"MISMATCH seed={seed} {key} victims: {detail}", file=sys.stderr)
            if verbose:
                print(
                    f"  {key}: kube {kube.node or kube.final_node or '-'} "
                    f"nominated={kube.nominated!r} ({decided:.2f}s) {kube.message[:160]}",
                    file=sys.stderr,
                )
            found = compare(seed, key, py, kube)
            if batched is not None:
                found += [
                    Mismatch(m.seed, m.pod, f"batching {m.kind}", m.detail)
                    for m in compare(seed, key, batched, kube)
                ]
            if kube_scores is not None:
                totals, plugin_scores = kube_scores.take(key)
                if kube.node and totals:
                    stats["scores compared"] += 1
                    found += compare_scores(seed, key, py, totals, plugin_scores)
                    if batched is not None:
                        found += [
                            Mismatch(m.seed, m.pod, f"batching {m.kind}", m.detail)
                            for m in compare_scores(seed, key, batched, totals, plugin_scores)
                        ]
            if found and DUMP_DIR:
                with open(f"{DUMP_DIR}/s{seed}-{name}.json", "w") as f:
                    json.dump({"objects": objects, "pod": created}, f)
            mismatches.extend(found)
            if verbose:
                for m in found:
                    print(f"MISMATCH seed={m.seed} {m.pod} {m.kind}: {m.detail}", file=sys.stderr)
            if kube.held:
                held.append(created)
                stats["held"] += 1
            elif not kube.node and not kube.final_node:
                _force_delete(client, created)
                _wait_gone(client, [created])
            # Preemption victims: terminationGracePeriodSeconds 0 makes their deletion immediate;
            # anything else still terminating (not held on purpose) is forced.
            terminating = [
                p
                for p in _list(client, "/api/v1/pods", selector)
                if p["metadata"].get("deletionTimestamp") and not held
            ]
            for p in terminating:
                _force_delete(client, p)
            if kube.nominated or terminating or not kube.node:
                # kube-scheduler learns deletions from its watch: give it a moment before the next pod.
                time.sleep(0.15)
        if held:
            release_held()
        if batch_mirror is not None and (batch := batch_mirror.batch_stats()) is not None:
            stats["batch hits"] += batch.hits
            stats["batch misses"] += batch.misses
            stats["batch unsignable"] += batch.unsignable
            stats["batch prefilter replays"] += batch.pre_filter_replays
    finally:
        for p in _list(client, "/api/v1/pods", selector):
            _force_delete(client, p)
        delete_nodes(client, node_names)
        _request(client, "DELETE", f"/apis/resource.k8s.io/v1/resourceslices?labelSelector={selector}")
        time.sleep(0.3)
    return mismatches, stats


def _range(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, hi = _range(part)
        out.extend(range(lo, hi + 1))
    return out


@contextlib.contextmanager
def kube_cluster() -> Iterator[tuple[Any, str]]:
    """A fresh control plane with the real kube-scheduler logging its scores; yields an ApiClient and
    kube-scheduler's log file."""
    from devcluster.cluster import ControlPlane

    with ControlPlane() as plane:
        handle = plane.start_kube_scheduler(extra_args=[KUBE_SCORE_LOGGING])
        with plane.api_client() as client:
            setup_objects(client)
            yield client, str(handle.log_path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="1-5")
    parser.add_argument("--nodes", default="10-40", help="node count range per seed")
    parser.add_argument("--pods", default="40-80", help="pod count range per seed")
    parser.add_argument(
        "--batching",
        action="store_true",
        help="pods in runs of one shape, also judged with opportunistic batching (a cache kept per seed)",
    )
    parser.add_argument("--json", help="write the mismatches here")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    all_mismatches: list[Mismatch] = []
    totals: Counter[str] = Counter()
    with kube_cluster() as (client, kube_log):
        for seed in _seeds(args.seeds):
            began = time.monotonic()
            found, stats = run_seed(
                client,
                seed,
                _range(args.nodes),
                _range(args.pods),
                verbose=not args.quiet,
                batching=args.batching,
                kube_log=kube_log,
            )
            totals.update(stats)
            all_mismatches.extend(found)
            kinds = Counter(m.kind for m in found)
            print(f"seed {seed}: {dict(stats)} mismatches {dict(kinds)} ({time.monotonic() - began:.1f}s)")
    kinds = Counter(m.kind for m in all_mismatches)
    print(f"total: {dict(totals)}; mismatches: {sum(kinds.values())} {dict(kinds)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(m) for m in all_mismatches], f, indent=1)
    return 1 if all_mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
