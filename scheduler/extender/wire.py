"""The extender wire protocol: ``k8s.io/kube-scheduler/extender/v1`` types as JSON.

Those Go structs carry no JSON tags, so the keys are the Go field names ("Pod", "NodeNames",
"FailedAndUnresolvableNodes"...) and nil pointers, slices and maps encode as ``null``. Decoding follows
``encoding/json``: keys match field names case-insensitively (an extender may answer ``nodenames`` or
``failedNodes``), unknown keys are ignored, and a value of the wrong type is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.extender import Victims
from scheduler.framework.objects import object_meta

# Upstream MinExtenderPriority / MaxExtenderPriority: extender scores are 0..10 and are scaled to the
# framework's 0..MaxNodeScore range.
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10


class WireError(ValueError):
    """A response that does not decode into the expected type (Go's ``json: cannot unmarshal ...``)."""


# --- requests ---------------------------------------------------------------------------------------
def extender_args(
    pod: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]] | None,
    node_names: Sequence[str] | None,
) -> dict[str, Any]:
    """``ExtenderArgs``: the full NodeList, or only the names for a nodeCacheCapable extender."""
    # v1.NodeList: kind/apiVersion are omitempty, ListMeta is a struct and so always present.
    node_list = None if nodes is None else {"metadata": {}, "items": list(nodes)}
    return {"Pod": pod, "Nodes": node_list, "NodeNames": None if node_names is None else list(node_names)}


def binding_args(pod_name: str, pod_namespace: str, pod_uid: str, node: str) -> dict[str, Any]:
    """``ExtenderBindingArgs``."""
    return {"PodName": pod_name, "PodNamespace": pod_namespace, "PodUID": pod_uid, "Node": node}


@dataclass(slots=True)
class MetaVictims:
    """``MetaVictims``: victims by UID, what a nodeCacheCapable extender gets and every extender returns."""

    uids: list[str] = field(default_factory=list)
    num_pdb_violations: int = 0


def to_meta_victims(victims: Mapping[str, Victims]) -> dict[str, MetaVictims]:
    """Upstream ``convertToMetaVictims``."""
    return {
        node: MetaVictims([str(object_meta(p).get("uid") or "") for p in v.pods], v.num_pdb_violations)
        for node, v in victims.items()
    }


def preemption_args(
    pod: Mapping[str, Any],
    victims: Mapping[str, Victims] | None,
    meta_victims: Mapping[str, MetaVictims] | None,
) -> dict[str, Any]:
    """``ExtenderPreemptionArgs``: one of the two maps is null, as upstream sends it."""
    return {
        "Pod": pod,
        "NodeNameToVictims": None
        if victims is None
        else {
            n: {"Pods": list(v.pods), "NumPDBViolations": v.num_pdb_violations} for n, v in victims.items()
        },
        "NodeNameToMetaVictims": None if meta_victims is None else _meta_victims_json(meta_victims),
    }


def _meta_victims_json(meta: Mapping[str, MetaVictims]) -> dict[str, Any]:
    return {
        n: {"Pods": [{"UID": uid} for uid in v.uids], "NumPDBViolations": v.num_pdb_violations}
        for n, v in meta.items()
    }


# --- responses --------------------------------------------------------------------------------------
@dataclass(slots=True)
class FilterResult:
    """``ExtenderFilterResult``. ``nodes`` holds the names of the returned NodeList's items."""

    nodes: list[str] | None = None
    node_names: list[str] | None = None
    failed_nodes: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable_nodes: dict[str, str] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True, slots=True)
class HostPriority:
    host: str
    score: int


def _get(obj: Mapping[str, Any], name: str) -> Any:
    """``encoding/json`` field matching: every key equal to the field name ignoring case sets the field,
    so the last such key wins."""
    if name in obj and len(obj) == 1:
        return obj[name]
    value = None
    lowered = name.lower()
    for key, item in obj.items():
        if key.lower() == lowered:
            value = item
    return value


def _object(value: Any, what: str) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise WireError(f"json: cannot unmarshal {_json_kind(value)} into Go value of type {what}")
    return value


def _string(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise WireError(
            f"json: cannot unmarshal {_json_kind(value)} into Go struct field {what} of type string"
        )
    return value


def _int(value: Any, what: str) -> int:
    if value is None:
        return 0
    # Go refuses 5.0 and "5" for an int64 as well.
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(
            f"json: cannot unmarshal {_json_kind(value)} into Go struct field {what} of type int64"
        )
    return value


def _strings(value: Any, what: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise WireError(
            f"json: cannot unmarshal {_json_kind(value)} into Go struct field {what} of type []string"
        )
    return [_string(item, what) for item in value]


def _string_map(value: Any, what: str) -> dict[str, str]:
    obj = _object(value, f"map[string]string ({what})")
    return {} if obj is None else {str(k): _string(v, what) for k, v in obj.items()}


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return "null"


def decode_filter_result(body: Any) -> FilterResult:
    obj = _object(body, "v1.ExtenderFilterResult") or {}
    nodes: list[str] | None = None
    node_list = _object(_get(obj, "Nodes"), "v1.NodeList")
    if node_list is not None:
        items = _get(node_list, "items")
        if items is not None and not isinstance(items, list):
            raise WireError(
                "json: cannot unmarshal items into Go struct field NodeList.items of type []v1.Node"
            )
        nodes = [
            _string((_object(item, "v1.Node") or {}).get("metadata", {}).get("name"), "ObjectMeta.name")
            for item in items or []
        ]
    return FilterResult(
        nodes=nodes,
        node_names=_strings(_get(obj, "NodeNames"), "ExtenderFilterResult.NodeNames"),
        failed_nodes=_string_map(_get(obj, "FailedNodes"), "ExtenderFilterResult.FailedNodes"),
        failed_and_unresolvable_nodes=_string_map(
            _get(obj, "FailedAndUnresolvableNodes"), "ExtenderFilterResult.FailedAndUnresolvableNodes"
        ),
        error=_string(_get(obj, "Error"), "ExtenderFilterResult.Error"),
    )


def decode_host_priority_list(body: Any) -> list[HostPriority]:
    if body is None:
        return []
    if not isinstance(body, list):
        raise WireError(
            f"json: cannot unmarshal {_json_kind(body)} into Go value of type v1.HostPriorityList"
        )
    out = []
    for item in body:
        obj = _object(item, "v1.HostPriority") or {}
        out.append(
            HostPriority(
                _string(_get(obj, "Host"), "HostPriority.Host"),
                _int(_get(obj, "Score"), "HostPriority.Score"),
            )
        )
    return out


def decode_binding_result(body: Any) -> str:
    """``ExtenderBindingResult``: its ``Error`` ("" on success)."""
    obj = _object(body, "v1.ExtenderBindingResult") or {}
    return _string(_get(obj, "Error"), "ExtenderBindingResult.Error")


def decode_preemption_result(body: Any) -> dict[str, MetaVictims]:
    """``ExtenderPreemptionResult``: NodeNameToMetaVictims (null -> no candidates)."""
    obj = _object(body, "v1.ExtenderPreemptionResult") or {}
    meta = _object(_get(obj, "NodeNameToMetaVictims"), "map[string]*v1.MetaVictims") or {}
    out: dict[str, MetaVictims] = {}
    for node, raw in meta.items():
        victims = _object(raw, "v1.MetaVictims")
        if victims is None:
            # A null entry is a nil *MetaVictims; upstream would crash on it. Treat it as "no victims".
            out[str(node)] = MetaVictims()
            continue
        pods = _get(victims, "Pods")
        if pods is not None and not isinstance(pods, list):
            raise WireError(
                "json: cannot unmarshal into Go struct field MetaVictims.Pods of type []*v1.MetaPod"
            )
        uids = [_string(_get(_object(p, "v1.MetaPod") or {}, "UID"), "MetaPod.UID") for p in pods or []]
        out[str(node)] = MetaVictims(
            uids, _int(_get(victims, "NumPDBViolations"), "MetaVictims.NumPDBViolations")
        )
    return out
