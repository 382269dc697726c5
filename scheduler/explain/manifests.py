"""Reading what simulate works on: pod manifests (workloads expand to their pods) and cluster dumps."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
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
from scheduler.framework.objects import labels_of, object_meta, pod_spec, pod_template_of, spec_of

KubeObject = dict[str, Any]

# The kinds a snapshot holds: nodes and pods, and what in-tree plugins read through listers.
SNAPSHOT_KINDS: tuple[ResourceSpec, ...] = (
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
)
_BY_KIND = {spec.kind: spec.name for spec in SNAPSHOT_KINDS}

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


def dump_from_objects(objects: Iterable[Mapping[str, Any]]) -> dict[str, list[KubeObject]]:
    """Objects by resource name (``nodes``, ``pods``, ...), from a dump file's items or any manifests."""
    out: dict[str, list[KubeObject]] = {}
    for obj in objects:
        resource = _BY_KIND.get(obj.get("kind", ""))
        if resource is None:
            continue
        out.setdefault(resource, []).append(dict(obj))
    return out


def load_dump(path: str | Path) -> dict[str, list[KubeObject]]:
    return dump_from_objects(load_documents(path))
