"""Builders with the method names of upstream's ``pkg/scheduler/testing/wrappers.go`` (st.MakePod...).

They exist so tables ported from upstream's Go tests read the same as the originals and can be
traced case by case. They build raw JSON dicts, as the scheduler sees objects from the watch.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

FAKE_DELETION_TIMESTAMP = "2024-01-01T00:00:00Z"


class MakeLabelSelector:
    def __init__(self) -> None:
        self._selector: dict[str, Any] = {}

    def Label(self, key: str, value: str) -> MakeLabelSelector:
        self._selector.setdefault("matchLabels", {})[key] = value
        return self

    def _expression(self, key: str, operator: str, values: Sequence[str] | None = None) -> MakeLabelSelector:
        expression: dict[str, Any] = {"key": key, "operator": operator}
        if values is not None:
            expression["values"] = list(values)
        self._selector.setdefault("matchExpressions", []).append(expression)
        return self

    def In(self, key: str, values: Sequence[str]) -> MakeLabelSelector:
        return self._expression(key, "In", values)

    def NotIn(self, key: str, values: Sequence[str]) -> MakeLabelSelector:
        return self._expression(key, "NotIn", values)

    def Exists(self, key: str) -> MakeLabelSelector:
        return self._expression(key, "Exists")

    def NotExist(self, key: str) -> MakeLabelSelector:
        return self._expression(key, "DoesNotExist")

    def Obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._selector)


class MakePod:
    def __init__(self) -> None:
        self._pod: dict[str, Any] = {
            "metadata": {},
            "spec": {"containers": [{"name": "c", "image": "pause"}]},
        }

    @property
    def _meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = self._pod["metadata"]
        return meta

    @property
    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._pod["spec"]
        return spec

    def Name(self, name: str) -> MakePod:
        self._meta["name"] = name
        return self

    def Namespace(self, namespace: str) -> MakePod:
        self._meta["namespace"] = namespace
        return self

    def UID(self, uid: str) -> MakePod:
        self._meta["uid"] = uid
        return self

    def Label(self, key: str, value: str) -> MakePod:
        self._meta.setdefault("labels", {})[key] = value
        return self

    def Labels(self, labels: Mapping[str, str]) -> MakePod:
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def Terminating(self) -> MakePod:
        self._meta["deletionTimestamp"] = FAKE_DELETION_TIMESTAMP
        return self

    def OwnerReference(self, name: str, gvk: tuple[str, str]) -> MakePod:
        api_version, kind = gvk
        self._meta["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": name, "controller": True}
        ]
        return self

    def Node(self, name: str) -> MakePod:
        self._spec["nodeName"] = name
        return self

    def NominatedNodeName(self, name: str) -> MakePod:
        self._pod.setdefault("status", {})["nominatedNodeName"] = name
        return self

    def NodeSelector(self, selector: Mapping[str, str]) -> MakePod:
        self._spec["nodeSelector"] = dict(selector)
        return self

    def _required_affinity(self, expression: dict[str, Any]) -> MakePod:
        self._spec.setdefault("affinity", {})["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expression]}]
            }
        }
        return self

    def NodeAffinityIn(self, key: str, values: Sequence[str], _type: Any = None) -> MakePod:
        return self._required_affinity({"key": key, "operator": "In", "values": list(values)})

    def NodeAffinityNotIn(self, key: str, values: Sequence[str]) -> MakePod:
        return self._required_affinity({"key": key, "operator": "NotIn", "values": list(values)})

    def Toleration(self, key: str) -> MakePod:
        self._spec.setdefault("tolerations", []).append({"key": key, "operator": "Exists"})
        return self

    def SpreadConstraint(
        self,
        max_skew: int,
        topology_key: str,
        action: str,
        selector: Mapping[str, Any] | None,
        min_domains: int | None,
        node_affinity_policy: str | None,
        node_taints_policy: str | None,
        match_label_keys: Sequence[str] | None,
    ) -> MakePod:
        constraint: dict[str, Any] = {
            "maxSkew": max_skew,
            "topologyKey": topology_key,
            "whenUnsatisfiable": action,
        }
        optional = {
            "labelSelector": copy.deepcopy(selector),
            "minDomains": min_domains,
            "nodeAffinityPolicy": node_affinity_policy,
            "nodeTaintsPolicy": node_taints_policy,
            "matchLabelKeys": list(match_label_keys) if match_label_keys is not None else None,
        }
        constraint.update({k: v for k, v in optional.items() if v is not None})
        self._spec.setdefault("topologySpreadConstraints", []).append(constraint)
        return self

    def Obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._pod)


class MakeNode:
    def __init__(self) -> None:
        self._node: dict[str, Any] = {
            "metadata": {},
            "spec": {},
            "status": {"allocatable": {"pods": "110"}, "capacity": {"pods": "110"}},
        }

    def Name(self, name: str) -> MakeNode:
        self._node["metadata"]["name"] = name
        return self

    def Label(self, key: str, value: str) -> MakeNode:
        self._node["metadata"].setdefault("labels", {})[key] = value
        return self

    def Taints(self, taints: Sequence[Mapping[str, Any]]) -> MakeNode:
        self._node["spec"]["taints"] = [dict(t) for t in taints]
        return self

    def Obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._node)


_GO_FIELD = {"ObjectMeta": "metadata", "Spec": "spec", "Status": "status"}


def GoStruct(type_name: str, **fields: Any) -> dict[str, Any]:
    """A Go struct literal of the ported tables as JSON: ``ObjectMeta`` becomes ``metadata`` and other
    field names lose their capital, as ``encoding/json`` tags spell them."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        key = _GO_FIELD.get(name) or name[:1].lower() + name[1:]
        out[key] = value
    out["\x00type"] = type_name
    return out


def kind_of(obj: Mapping[str, Any]) -> str:
    return str(obj.get("\x00type", "")).rsplit(".", 1)[-1]
