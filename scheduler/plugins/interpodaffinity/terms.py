"""Pod (anti-)affinity terms, parsed once per pod version (upstream's ``fwk.AffinityTerm`` and the term
fields of ``framework.PodInfo``: ``k8s.io/kube-scheduler/framework/types.go``,
``pkg/scheduler/framework/types.go`` ``PodInfo.Update``).

A term matches a pod when the pod's namespace is in the term's namespaces, or the namespace's labels
match the term's namespaceSelector, and the pod's labels match the labelSelector. A term with neither
``namespaces`` nor ``namespaceSelector`` means the namespace of the pod that owns the term.

``matchLabelKeys`` / ``mismatchLabelKeys`` are not read here: in v1.36 the API server merges them into
``labelSelector`` when the pod is created (``MatchLabelKeysInPodAffinity``, GA), and upstream's scheduler
reads only ``labelSelector``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.objects import object_meta
from scheduler.framework.types import PodInfo
from scheduler.plugins.helper.parse_memo import ParseMemo
from scheduler.util.labelselector import LabelSelector, parse_label_selector
from scheduler.util.nodeselector import SelectorError

_TERMS_KEY = "InterPodAffinity.terms"
_MATCH_KEY = "InterPodAffinity.matchKey"
_NO_LABELS: Mapping[str, str] = {}


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    namespace_selector: LabelSelector

    def matches(self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str] | None) -> bool:
        """Upstream's ``AffinityTerm.Matches``; ``ns_labels`` are the labels of ``namespace`` (None:
        unknown, read as no labels, as Go reads a nil ``labels.Set``)."""
        if namespace in self.namespaces or self.namespace_selector.matches(ns_labels or _NO_LABELS):
            return self.selector.matches(labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """A pod's parsed terms. A category that failed to parse is empty and ``error`` says why, as
    upstream's ``PodInfo.Update`` keeps the categories that parsed and aggregates the errors."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    error: str | None = None


NO_TERMS = PodAffinityTerms()


def pod_labels(pod: PodInfo) -> Mapping[str, str]:
    labels = object_meta(pod.pod).get("labels")
    return labels if isinstance(labels, Mapping) else _NO_LABELS


MatchKey = tuple[str, frozenset[tuple[str, str]]]


def match_key(pod: PodInfo) -> MatchKey:
    """What a term can see of a pod (namespace and labels), hashable and kept per pod version: pods of
    one workload share it, so a cycle judges a term once per workload instead of once per pod."""
    key: MatchKey | None = pod.memo.get(_MATCH_KEY)
    if key is None:
        key = pod.memo[_MATCH_KEY] = (pod.namespace, frozenset(pod_labels(pod).items()))
    return key


def _term(raw: Any, owner_namespace: str, path: str) -> AffinityTerm:
    if not isinstance(raw, Mapping):
        raise SelectorError(f"{path}: Invalid value: must be an object")
    selector = parse_label_selector(raw.get("labelSelector"), f"{path}.labelSelector")
    raw_namespaces = raw.get("namespaces") or []
    if not isinstance(raw_namespaces, list) or not all(isinstance(n, str) for n in raw_namespaces):
        raise SelectorError(f"{path}.namespaces: Invalid value: must be a list of strings")
    raw_ns_selector = raw.get("namespaceSelector")
    ns_selector = parse_label_selector(raw_ns_selector, f"{path}.namespaceSelector")
    if not raw_namespaces and raw_ns_selector is None:
        namespaces = frozenset((owner_namespace,))
    else:
        namespaces = frozenset(raw_namespaces)
    topology_key = raw.get("topologyKey") or ""
    if not isinstance(topology_key, str):
        raise SelectorError(f"{path}.topologyKey: Invalid value: must be a string")
    return AffinityTerm(namespaces, selector, topology_key, ns_selector)


def _raw_terms(section: Any, field: str, path: str) -> list[Any]:
    if section is None:
        return []
    if not isinstance(section, Mapping):
        raise SelectorError(f"{path}: Invalid value: must be an object")
    terms = section.get(field)
    if terms is None:
        return []
    if not isinstance(terms, list):
        raise SelectorError(f"{path}.{field}: Invalid value: must be a list")
    return terms


def _required(section: Any, namespace: str, path: str) -> tuple[AffinityTerm, ...]:
    field = "requiredDuringSchedulingIgnoredDuringExecution"
    raw = _raw_terms(section, field, path)
    return tuple(_term(t, namespace, f"{path}.{field}[{i}]") for i, t in enumerate(raw))


def _preferred(section: Any, namespace: str, path: str) -> tuple[WeightedAffinityTerm, ...]:
    field = "preferredDuringSchedulingIgnoredDuringExecution"
    out: list[WeightedAffinityTerm] = []
    for i, raw in enumerate(_raw_terms(section, field, path)):
        item = f"{path}.{field}[{i}]"
        if not isinstance(raw, Mapping):
            raise SelectorError(f"{item}: Invalid value: must be an object")
        weight = raw.get("weight") or 0
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise SelectorError(f"{item}.weight: Invalid value: must be an integer")
        out.append(
            WeightedAffinityTerm(
                _term(raw.get("podAffinityTerm"), namespace, f"{item}.podAffinityTerm"), weight
            )
        )
    return tuple(out)


def parse_pod_affinity_terms(spec: Mapping[str, Any], namespace: str) -> PodAffinityTerms:
    affinity = spec.get("affinity")
    if not isinstance(affinity, Mapping):
        return NO_TERMS
    affinity_section = affinity.get("podAffinity")
    anti_section = affinity.get("podAntiAffinity")
    if affinity_section is None and anti_section is None:
        return NO_TERMS
    errors: list[str] = []
    parts: list[Any] = []
    # Upstream's names for the four categories, which its "parsing pod" message carries.
    for name, parse, section, path in (
        ("requiredAffinityTerms", _required, affinity_section, "podAffinity"),
        ("requiredAntiAffinityTerms", _required, anti_section, "podAntiAffinity"),
        ("preferredAffinityTerms", _preferred, affinity_section, "podAffinity"),
        ("preferredAntiAffinityTerms", _preferred, anti_section, "podAntiAffinity"),
    ):
        try:
            parts.append(parse(section, namespace, f"spec.affinity.{path}"))
        except SelectorError as err:
            errors.append(f"{name}: {err}")
            parts.append(())
    error = None
    if errors:
        error = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return PodAffinityTerms(parts[0], parts[1], parts[2], parts[3], error)


# Pods of one workload carry equal terms (a term without namespaces means its pod's namespace).
_PARSED: ParseMemo[PodAffinityTerms] = ParseMemo()


def _parse_shared(pod: PodInfo) -> PodAffinityTerms:
    affinity = pod.spec.get("affinity")
    return _PARSED.get(pod.namespace, affinity, lambda: parse_pod_affinity_terms(pod.spec, pod.namespace))


def pod_affinity_terms(pod: PodInfo) -> PodAffinityTerms:
    """The pod's terms, parsed once per pod version (kept in ``PodInfo.memo``)."""
    if not pod.has_pod_affinity:
        return NO_TERMS
    return pod.derived(_TERMS_KEY, _parse_shared)


def matches_all(terms: Sequence[AffinityTerm], namespace: str, labels: Mapping[str, str]) -> bool:
    """Upstream's ``podMatchesAllAffinityTerms``: false for no terms. Namespace selectors are read
    against no labels: the incoming pod's selectors were already unrolled into namespaces."""
    if not terms:
        return False
    return all(term.matches(namespace, labels, None) for term in terms)


def matches_any(terms: Sequence[AffinityTerm], namespace: str, labels: Mapping[str, str]) -> bool:
    """Upstream's ``podMatchesAnyAffinityTerms`` (v1.37, the anti-affinity queueing hints): false for
    no terms; namespace selectors read against no labels, as ``matches_all``."""
    return any(term.matches(namespace, labels, None) for term in terms)
