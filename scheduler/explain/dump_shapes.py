"""The shape a dumped object of each kind must have before a simulation replays it.

Objects listed from an API server are valid; a dump file is not (edited by hand, truncated, written by
another tool). Plugins read these fields without checking their types, so a malformed one would surface
as a traceback deep inside a cycle, or worse as a silently different verdict. Each kind's fields that
plugins read are checked here, and the first one that is wrong is named in one line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from informers.resource import ResourceSpec

# Field types: what a JSON value of the field may be.
_TYPES: dict[str, tuple[type, ...]] = {
    "a string": (str,),
    "a boolean": (bool,),
    "an integer": (int,),
    "an object": (dict,),
    "a list": (list,),
    "a quantity": (str, int, float),
}
_STR, _BOOL, _INT, _MAP, _LIST, _QUANTITY = _TYPES

# (dotted path, type, required). ``name[]`` walks every element of the list ``name``; a field that is
# absent or null passes unless required.
Shape = tuple[tuple[str, str, bool], ...]
_SELECTOR: Shape = (("spec.selector", _MAP, False),)
_SHAPES: dict[tuple[str, str], Shape] = {
    ("", "Node"): (("spec", _MAP, False), ("spec.taints", _LIST, False), ("spec.taints[]", _MAP, False),
                   ("status", _MAP, False), ("status.allocatable", _MAP, False)),
    ("", "Pod"): (("spec", _MAP, False), ("status", _MAP, False)),
    ("", "Service"): _SELECTOR,
    ("", "ReplicationController"): _SELECTOR,
    ("apps", "ReplicaSet"): _SELECTOR,
    ("apps", "StatefulSet"): _SELECTOR,
    ("policy", "PodDisruptionBudget"): (*_SELECTOR, ("status", _MAP, False),
                                        ("status.disruptionsAllowed", _INT, False)),
    ("", "ResourceQuota"): (("spec", _MAP, False), ("spec.hard", _MAP, False)),
    ("", "PersistentVolume"): (
        ("spec", _MAP, False), ("spec.capacity", _MAP, False), ("spec.accessModes", _LIST, False),
        ("spec.storageClassName", _STR, False), ("spec.claimRef", _MAP, False),
        ("spec.nodeAffinity", _MAP, False), ("spec.csi", _MAP, False), ("spec.csi.driver", _STR, True),
        ("spec.csi.volumeHandle", _STR, True), ("status", _MAP, False), ("status.phase", _STR, False)),
    ("", "PersistentVolumeClaim"): (
        ("spec", _MAP, False), ("spec.volumeName", _STR, False), ("spec.storageClassName", _STR, False),
        ("spec.accessModes", _LIST, False), ("spec.resources", _MAP, False), ("status", _MAP, False),
        ("status.phase", _STR, False)),
    ("storage.k8s.io", "StorageClass"): (
        ("provisioner", _STR, True), ("volumeBindingMode", _STR, False),
        ("allowedTopologies", _LIST, False), ("allowedTopologies[]", _MAP, False)),
    ("storage.k8s.io", "CSINode"): (
        ("spec", _MAP, True), ("spec.drivers", _LIST, False), ("spec.drivers[]", _MAP, False),
        ("spec.drivers[].name", _STR, True), ("spec.drivers[].allocatable", _MAP, False),
        ("spec.drivers[].allocatable.count", _INT, False), ("spec.drivers[].topologyKeys", _LIST, False)),
    ("storage.k8s.io", "CSIDriver"): (
        ("spec", _MAP, True), ("spec.attachRequired", _BOOL, False),
        ("spec.preventPodSchedulingIfMissing", _BOOL, False), ("spec.storageCapacity", _BOOL, False),
        ("spec.podInfoOnMount", _BOOL, False), ("spec.requiresRepublish", _BOOL, False)),
    ("storage.k8s.io", "VolumeAttachment"): (
        ("spec", _MAP, True), ("spec.attacher", _STR, True), ("spec.nodeName", _STR, True),
        ("spec.source", _MAP, True), ("spec.source.persistentVolumeName", _STR, False),
        ("status", _MAP, False), ("status.attached", _BOOL, False)),
    ("storage.k8s.io", "CSIStorageCapacity"): (
        ("storageClassName", _STR, True), ("capacity", _QUANTITY, False),
        ("maximumVolumeSize", _QUANTITY, False), ("nodeTopology", _MAP, False)),
    ("resource.k8s.io", "ResourceSlice"): (
        ("spec", _MAP, True), ("spec.driver", _STR, True), ("spec.pool", _MAP, True),
        ("spec.pool.name", _STR, True), ("spec.nodeName", _STR, False), ("spec.allNodes", _BOOL, False),
        ("spec.nodeSelector", _MAP, False), ("spec.devices", _LIST, False), ("spec.devices[]", _MAP, False),
        ("spec.devices[].name", _STR, True)),
    ("resource.k8s.io", "DeviceClass"): (
        ("spec", _MAP, False), ("spec.selectors", _LIST, False), ("spec.selectors[]", _MAP, False)),
    ("resource.k8s.io", "ResourceClaim"): (
        ("spec", _MAP, True), ("spec.devices", _MAP, False), ("spec.devices.requests", _LIST, False),
        ("spec.devices.requests[]", _MAP, False), ("status", _MAP, False),
        ("status.allocation", _MAP, False), ("status.reservedFor", _LIST, False)),
    ("resource.k8s.io", "ResourceClaimTemplate"): (("spec", _MAP, True), ("spec.spec", _MAP, True)),
    ("resource.k8s.io", "DeviceTaintRule"): (
        ("spec", _MAP, True), ("spec.taint", _MAP, True), ("spec.deviceSelector", _MAP, False)),
    ("scheduling.k8s.io", "PriorityClass"): (("value", _INT, True),),
    ("scheduling.k8s.io", "PodGroup"): (("spec", _MAP, False),),
    ("scheduling.x-k8s.io", "PodGroup"): (
        ("spec", _MAP, False), ("spec.minMember", _INT, False), ("spec.minResources", _MAP, False),
        ("spec.scheduleTimeoutSeconds", _INT, False), ("status", _MAP, False)),
    ("scheduling.x-k8s.io", "ElasticQuota"): (
        ("spec", _MAP, False), ("spec.min", _MAP, False), ("spec.max", _MAP, False)),
    ("topology.node.k8s.io", "NodeResourceTopology"): (
        ("zones", _LIST, False), ("zones[]", _MAP, False), ("zones[].name", _STR, True),
        ("zones[].resources", _LIST, False)),
}  # fmt: skip


def display_name(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` or ``name`` of a (possibly malformed) object, for an error line."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return "(no metadata)"
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name:
        return "(no name)"
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name


def malformed(obj: Mapping[str, Any], spec: ResourceSpec) -> str | None:
    """What is wrong with ``obj`` (one of ``spec``'s kind), or None: its metadata, then the fields of
    its kind that plugins read, in order."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return f"metadata must be an object, got {_shown(meta)}"
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return f"metadata.name must be a non-empty string, got {_shown(name)}"
    for key in ("namespace", "resourceVersion", "uid"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            return f"metadata.{key} must be a string, got {_shown(meta[key])}"
    for key in ("labels", "annotations"):
        if meta.get(key) is not None and not isinstance(meta[key], Mapping):
            return f"metadata.{key} must be an object, got {_shown(meta[key])}"
    for path, type_name, required in _SHAPES.get((spec.group, spec.kind), ()):
        for where, value in _values(obj, path):
            if value is None:
                if required:
                    return f"{where} is missing"
                continue
            wanted = _TYPES[type_name]
            if (isinstance(value, bool) and bool not in wanted) or not isinstance(value, wanted):
                return f"{where} must be {type_name}, got {_shown(value)}"
    return None


def _values(obj: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(the field's path with list indexes, its value or None) for every place ``path`` names. A parent
    that is absent yields nothing (its own check reports it when it is required); a parent of the wrong
    type was reported by its own, earlier check."""
    head, _, rest = path.partition(".")
    is_list = head.endswith("[]")
    key = head[:-2] if is_list else head
    if not isinstance(obj, Mapping):
        return
    value = obj.get(key)
    if not is_list:
        if not rest:
            yield key, value
        elif value is not None:
            for where, found in _values(value, rest):
                yield f"{key}.{where}", found
        return
    if not isinstance(value, list):
        return
    for index, item in enumerate(value):
        if not rest:
            yield f"{key}[{index}]", item
        else:
            for where, found in _values(item, rest):
                yield f"{key}[{index}].{where}", found


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
