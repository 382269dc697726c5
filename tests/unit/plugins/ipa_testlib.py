"""Builders for the InterPodAffinity tests, after upstream's ``st.MakePod().PodAffinityIn(...)``."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.cache.cache import new_snapshot
from scheduler.cache.snapshot import Snapshot
from scheduler.framework import NodeSubset
from scheduler.framework.listers import NAMESPACES
from scheduler.plugins.interpodaffinity import InterPodAffinity
from tests.unit.plugins.plugin_testlib import FakeHandle, node, pod

REQ, PREF, BOTH = "required", "preferred", "both"
_names = itertools.count(1)

NS_LABEL_T1 = {"team": "team1"}
NS_LABEL_T2 = {"team": "team2"}
# Upstream's ``namespaces`` objects of scoring_test.go, shared by its filtering tests.
NAMESPACE_OBJECTS: list[dict[str, Any]] = [
    {"metadata": {"name": "subteam1.team1", "labels": NS_LABEL_T1}},
    {"metadata": {"name": "subteam2.team1", "labels": NS_LABEL_T1}},
    {"metadata": {"name": "subteam1.team2", "labels": NS_LABEL_T2}},
    {"metadata": {"name": "subteam2.team2", "labels": NS_LABEL_T2}},
]


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def term(
    topology_key: str,
    *expressions: dict[str, Any],
    namespaces: Sequence[str] | None = None,
    namespace_selector: Mapping[str, Any] | None = None,
    match_labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    selector: dict[str, Any] = {"matchExpressions": list(expressions)}
    if match_labels is not None:
        selector["matchLabels"] = dict(match_labels)
    out: dict[str, Any] = {"labelSelector": selector, "topologyKey": topology_key}
    if namespaces is not None:
        out["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        out["namespaceSelector"] = dict(namespace_selector)
    return out


class P:
    """A fluent pod builder; ``obj()`` gives the raw dict."""

    def __init__(self, name: str | None = None) -> None:
        self._name = name or f"pod-{next(_names)}"
        self._namespace = ""
        self._labels: dict[str, str] = {}
        self._node = ""
        self._uid: str | None = None
        self._affinity: dict[str, Any] = {}
        self._status: dict[str, Any] | None = None

    def name(self, name: str) -> P:
        self._name = name
        return self

    def uid(self, uid: str) -> P:
        self._uid = uid
        return self

    def namespace(self, namespace: str) -> P:
        self._namespace = namespace
        return self

    def labels(self, labels: Mapping[str, str]) -> P:
        self._labels = dict(labels)
        return self

    def label(self, key: str, value: str) -> P:
        self._labels[key] = value
        return self

    def node(self, name: str) -> P:
        self._node = name
        return self

    def nominated(self, name: str) -> P:
        self._status = {"nominatedNodeName": name}
        return self

    def _add(self, section: str, raw_term: dict[str, Any], kind: str, weight: int = 1) -> P:
        part = self._affinity.setdefault(section, {})
        if kind in (REQ, BOTH):
            part.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(raw_term)
        if kind in (PREF, BOTH):
            part.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": raw_term}
            )
        return self

    def affinity_term(self, raw_term: dict[str, Any], kind: str = REQ, weight: int = 1) -> P:
        return self._add("podAffinity", raw_term, kind, weight)

    def anti_affinity_term(self, raw_term: dict[str, Any], kind: str = REQ, weight: int = 1) -> P:
        return self._add("podAntiAffinity", raw_term, kind, weight)

    def affinity_in(self, key: str, topology_key: str, values: Sequence[str], kind: str) -> P:
        return self.affinity_term(term(topology_key, expr(key, "In", *values)), kind)

    def affinity_not_in(self, key: str, topology_key: str, values: Sequence[str], kind: str) -> P:
        return self.affinity_term(term(topology_key, expr(key, "NotIn", *values)), kind)

    def affinity_exists(self, key: str, topology_key: str, kind: str) -> P:
        return self.affinity_term(term(topology_key, expr(key, "Exists")), kind)

    def affinity_not_exists(self, key: str, topology_key: str, kind: str) -> P:
        return self.affinity_term(term(topology_key, expr(key, "DoesNotExist")), kind)

    def anti_in(self, key: str, topology_key: str, values: Sequence[str], kind: str) -> P:
        return self.anti_affinity_term(term(topology_key, expr(key, "In", *values)), kind)

    def anti_not_in(self, key: str, topology_key: str, values: Sequence[str], kind: str) -> P:
        return self.anti_affinity_term(term(topology_key, expr(key, "NotIn", *values)), kind)

    def anti_exists(self, key: str, topology_key: str, kind: str) -> P:
        return self.anti_affinity_term(term(topology_key, expr(key, "Exists")), kind)

    def anti_not_exists(self, key: str, topology_key: str, kind: str) -> P:
        return self.anti_affinity_term(term(topology_key, expr(key, "DoesNotExist")), kind)

    def raw_affinity(self, affinity: dict[str, Any]) -> P:
        self._affinity = affinity
        return self

    def obj(self) -> dict[str, Any]:
        out = pod(
            self._name,
            namespace=self._namespace,
            uid=self._uid,
            node_name=self._node,
            affinity=self._affinity or None,
            status=self._status,
        )
        out["metadata"]["labels"] = dict(self._labels)
        return out


def n(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return node(name, labels=labels)


class SnapshotHandle(FakeHandle):
    """A FakeHandle whose snapshot is a real cache Snapshot (with the pods-with-affinity lists)."""

    def __init__(self, snapshot: Snapshot, namespaces: Sequence[Mapping[str, Any]]) -> None:
        super().__init__(list(snapshot.node_infos()), objects={NAMESPACES: namespaces})
        self.real_snapshot = snapshot

    @property
    def snapshot(self) -> Snapshot:  # type: ignore[override]
        return self.real_snapshot


def setup(
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]] = (),
    *,
    args: Mapping[str, Any] | None = None,
    namespaces: Sequence[Mapping[str, Any]] = NAMESPACE_OBJECTS,
) -> tuple[InterPodAffinity, Snapshot]:
    snapshot = new_snapshot(nodes, pods)
    plugin = InterPodAffinity(dict(args or {}), SnapshotHandle(snapshot, namespaces))
    return plugin, snapshot


def everything(snapshot: Snapshot) -> NodeSubset:
    columns = snapshot.columns()
    return NodeSubset(columns, np.arange(len(columns), dtype=np.int64))
