"""Reading what simulate works on: pod manifests (workloads expand to their pods) and cluster dumps."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import yaml

from informers.resource import (
    CSI_NODES,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    REPLICA_SETS,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    ResourceSpec,
)
from scheduler.explain.dump_shapes import display_name as _display_name
from scheduler.explain.dump_shapes import malformed
from scheduler.framework import listers
from scheduler.framework.objects import (
    labels_of,
    object_meta,
    pod_spec,
    pod_status,
    pod_template_of,
    scheduler_name_of,
    spec_of,
)

KubeObject = dict[str, Any]

# The kinds a snapshot holds: every kind the scheduler may watch (nodes, pods, and each kind a plugin
# can read through its Handle's listers), so a replay sees what the scheduler saw.
SNAPSHOT_KINDS: tuple[ResourceSpec, ...] = tuple(
    dict.fromkeys(
        (
            NODES,
            PODS,
            NAMESPACES,
            SERVICES,
            REPLICA_SETS,
            STATEFUL_SETS,
            PERSISTENT_VOLUMES,
            PERSISTENT_VOLUME_CLAIMS,
            STORAGE_CLASSES,
            CSI_NODES,
            POD_DISRUPTION_BUDGETS,
            *(getattr(listers, n) for n in listers.__all__ if isinstance(getattr(listers, n), ResourceSpec)),
        )
    )
)
# (API group, kind) -> the kind's spec: PodGroup is both scheduler-plugins' and upstream's, told apart
# by the group of its apiVersion.
_BY_GROUP_KIND: dict[tuple[str, str], ResourceSpec] = {
    (spec.group, spec.kind): spec for spec in SNAPSHOT_KINDS
}
# kind -> the apiVersions it is read at (two for PodGroup).
_API_VERSIONS_OF_KIND: dict[str, list[str]] = {
    kind: [spec.api_version for spec in SNAPSHOT_KINDS if spec.kind == kind]
    for kind in {spec.kind for spec in SNAPSHOT_KINDS}
}

DUMP_KIND = "PySchedulerClusterSnapshot"


class ManifestError(ValueError):
    pass


def load_documents(path: str | Path) -> list[KubeObject]:
    """Every object of a YAML (multi-document) or JSON file; ``List`` kinds are flattened."""
    text = Path(path).read_text()
    try:
        docs = (
            [orjson.loads(text)] if text.lstrip().startswith(("{", "[")) else list(yaml.safe_load_all(text))
        )
    except (orjson.JSONDecodeError, yaml.YAMLError) as err:
        raise ManifestError(f"{path}: {err}") from None
    return list(_flatten(docs))


def _flatten(docs: Iterable[Any]) -> Iterator[KubeObject]:
    for doc in docs:
        if isinstance(doc, list):
            yield from _flatten(doc)
        elif isinstance(doc, dict):
            if doc.get("kind", "").endswith("List") and "items" in doc:
                yield from _flatten(doc["items"])
            else:
                yield doc


def expand_pods(objects: Iterable[Mapping[str, Any]], default_namespace: str = "default") -> list[KubeObject]:
    """Pods, in order: a Pod as is; a Deployment, ReplicaSet or StatefulSet as ``replicas`` pods; a Job as
    ``min(parallelism, completions)`` pods. Other kinds are an error (a typo should not pass silently)."""
    out: list[KubeObject] = []
    for obj in objects:
        kind = obj.get("kind", "")
        meta = object_meta(obj)
        namespace = meta.get("namespace") or default_namespace
        name = meta.get("name") or kind.lower()
        spec = spec_of(obj)
        if kind == "Pod":
            pod = copy.deepcopy(dict(obj))
            pod.setdefault("metadata", {})["namespace"] = namespace
            out.append(_pending(pod))
        elif kind in ("Deployment", "ReplicaSet", "StatefulSet"):
            replicas = int(spec.get("replicas", 1))
            out.extend(_from_template(obj, namespace, f"{name}-{i}", kind, i) for i in range(replicas))
        elif kind == "Job":
            completions = int(spec.get("completions", 1) or 1)
            parallelism = int(spec.get("parallelism", 1) or 1)
            count = min(parallelism, completions)
            out.extend(_from_template(obj, namespace, f"{name}-{i}", kind, i) for i in range(count))
        else:
            raise ManifestError(f"cannot place a {kind or 'document without kind'} ({name}): expected Pod, "
                                "Deployment, ReplicaSet, StatefulSet or Job")  # fmt: skip
    return out


def _from_template(owner: Mapping[str, Any], namespace: str, name: str, kind: str, index: int) -> KubeObject:
    template = pod_template_of(owner)
    meta: dict[str, Any] = copy.deepcopy(dict(object_meta(template)))
    labels = dict(labels_of(template))
    if kind == "StatefulSet":
        labels["statefulset.kubernetes.io/pod-name"] = name
        labels["apps.kubernetes.io/pod-index"] = str(index)
    meta.update({"name": name, "namespace": namespace, "labels": labels, "uid": f"sim-{namespace}-{name}"})
    owner_meta = object_meta(owner)
    meta["ownerReferences"] = [
        {"apiVersion": owner.get("apiVersion", ""), "kind": kind, "name": owner_meta.get("name", ""),
         "uid": owner_meta.get("uid", f"sim-{kind}-{owner_meta.get('name', '')}"), "controller": True}
    ]  # fmt: skip
    return _pending(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": copy.deepcopy(pod_spec(template)),
        }
    )


def _pending(pod: KubeObject) -> KubeObject:
    meta = pod.setdefault("metadata", {})
    meta.setdefault("uid", f"sim-{meta.get('namespace', '')}-{meta.get('name', '')}")
    meta.setdefault("resourceVersion", "1")
    pod.setdefault("spec", {}).pop("nodeName", None)
    pod["status"] = {"phase": "Pending"}
    return pod


def spec_of_object(obj: Mapping[str, Any]) -> ResourceSpec | None:
    """The kind's spec by ``kind`` and the group of ``apiVersion`` (any version of it); None for a kind
    the scheduler does not read. Without an apiVersion, the kind alone decides where it is unambiguous.
    Raises ManifestError for an ambiguous kind without an apiVersion."""
    kind = str(obj.get("kind") or "")
    api_version = obj.get("apiVersion")
    if isinstance(api_version, str) and api_version:
        group = api_version.rpartition("/")[0]
        return _BY_GROUP_KIND.get((group, kind))
    versions = _API_VERSIONS_OF_KIND.get(kind, [])
    if len(versions) > 1:
        raise ManifestError(
            f"{kind} {_display_name(obj)}: no apiVersion, and {kind} is more than one kind "
            f"({' or '.join(versions)})"
        )
    return next((spec for spec in SNAPSHOT_KINDS if spec.kind == kind), None)


def resource_of_kind(kind: str, api_version: str = "") -> str | None:
    """The resource name (``nodes``...) a simulation keeps objects of ``kind`` under; None if it reads
    no such kind (or ``kind`` needs an apiVersion to say which)."""
    try:
        spec = spec_of_object({"kind": kind, "apiVersion": api_version})
    except ManifestError:
        return None
    return spec.name if spec is not None else None


def dump_from_objects(objects: Iterable[Mapping[str, Any]], source: str = "") -> dict[str, list[KubeObject]]:
    """Objects by resource name (``nodes``, ``pods``, ...), from a dump file's items or any manifests.
    Kinds the scheduler does not read are left out. A malformed object of a kind it reads raises
    ManifestError with one line naming the object and the field (``source`` names the file)."""
    out: dict[str, list[KubeObject]] = {}
    where = f"{source}: " if source else ""
    for index, obj in enumerate(objects):
        if not isinstance(obj, Mapping):
            raise ManifestError(f"{where}item {index}: not an object ({type(obj).__name__})")
        try:
            spec = spec_of_object(obj)
        except ManifestError as err:
            raise ManifestError(f"{where}item {index}: {err}") from None
        if spec is None:
            continue
        problem = malformed(obj, spec)
        if problem:
            raise ManifestError(f"{where}item {index} ({spec.kind} {_display_name(obj)}): {problem}")
        out.setdefault(spec.name, []).append(dict(obj))
    return out


def load_dump(path: str | Path) -> dict[str, list[KubeObject]]:
    return dump_from_objects(load_documents(path), str(path))


def node_manifest(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: int | str = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[str | Mapping[str, str]] = (),
    allocatable: Mapping[str, str] | None = None,
    unschedulable: bool = False,
) -> KubeObject:
    """A Ready Node with this allocatable (capacity the same), ``kubernetes.io/hostname`` set and
    taints given as ``key[=value]:Effect`` or as mappings. Raises ManifestError on a malformed taint."""
    alloc = {"cpu": str(cpu), "memory": str(memory), "pods": str(pods),
             **{k: str(v) for k, v in (allocatable or {}).items()}}  # fmt: skip
    spec: dict[str, Any] = {"taints": [parse_taint(t) for t in taints]}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"sim-node-{name}",
            "resourceVersion": "1",
            "labels": {"kubernetes.io/hostname": name, **{k: str(v) for k, v in (labels or {}).items()}},
        },
        "spec": spec,
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


_TAINT = re.compile(r"^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$")


def parse_taint(text: str | Mapping[str, str]) -> dict[str, str]:
    """``key[=value]:Effect`` (or a taint mapping, as is) as a taint."""
    if isinstance(text, Mapping):
        return {str(k): str(v) for k, v in text.items()}
    match = _TAINT.match(str(text))
    if match is None:
        raise ManifestError(f"taint {text!r} is not key[=value]:Effect")
    key, value, effect = match.groups()
    return {"key": key, "value": value or "", "effect": effect}


def pending_pods(
    objects: Mapping[str, Sequence[KubeObject]], scheduler_names: Iterable[str]
) -> list[KubeObject]:
    """The snapshot's pods that wait for one of ``scheduler_names``: unbound, not finished, not being
    deleted, oldest first (roughly the order a queue of equal priorities pops them)."""
    names = set(scheduler_names)
    waiting = [
        pod
        for pod in objects.get("pods", ())
        if not pod_spec(pod).get("nodeName")
        and scheduler_name_of(pod) in names
        and pod_status(pod).get("phase") not in ("Succeeded", "Failed")
        and object_meta(pod).get("deletionTimestamp") is None
    ]
    return sorted(waiting, key=lambda pod: str(object_meta(pod).get("creationTimestamp") or ""))
