"""Spread constraints as the scheduler reads them (upstream ``podtopologyspread/common.go``).

A pod's own ``topologySpreadConstraints`` are parsed once per pod version and per action
(DoNotSchedule for Filter, ScheduleAnyway for Score). Defaulted constraints depend on the Services and
controllers that exist right now, so they are built again whenever they are asked for, as upstream does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.objects import labels_of, object_meta
from scheduler.framework.types import NodeInfo, PodInfo, PodSpecError
from scheduler.plugins.helper.parse_memo import ParseMemo
from scheduler.plugins.helper.taints import Toleration, find_untolerated_taint
from scheduler.util.labelselector import LabelSelector, parse_label_selector
from scheduler.util.nodeselector import (
    LabelRequirement,
    RequiredNodeAffinity,
    SelectorError,
    parse_label_requirement,
)

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

# Upstream's criticalPaths start at MaxInt32: with no domain at all and minDomains <= 0 the global
# minimum stays that large and every node passes.
NO_DOMAIN_MIN = 2**31 - 1


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One constraint with its selector parsed (upstream's ``topologySpreadConstraint``)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    # nodeAffinityPolicy Honor (the default): only nodes matching the pod's node affinity/selector count.
    honor_node_affinity: bool = True
    # nodeTaintsPolicy Honor (default Ignore): nodes with taints the pod does not tolerate don't count.
    honor_node_taints: bool = False

    def includes_node(
        self, node: NodeInfo, affinity: RequiredNodeAffinity, tolerations: Sequence[Toleration]
    ) -> bool:
        """Whether ``node`` is a domain of this constraint under its inclusion policies."""
        if self.honor_node_affinity and not affinity.matches(node.labels, node.name):
            return False
        return not (
            self.honor_node_taints
            and node.taints
            and find_untolerated_taint(node.taints, tolerations) is not None
        )


def _selector_with_match_label_keys(
    selector: LabelSelector, keys: Iterable[str], pod_labels: Mapping[str, str], path: str
) -> LabelSelector:
    """``mergeLabelSetWithSelector``: ``key In (pod's value)`` for each key the pod has, ANDed with the
    selector. A missing selector stays "nothing"; keys the pod lacks are ignored.

    The API server (MatchLabelKeysInPodTopologySpreadSelectorMerge, beta and on in v1.36) already merges
    these into ``labelSelector`` at creation; kube-scheduler v1.36 still merges them again, which is
    harmless (the same requirement twice) and covers pods created while the gate was off.
    """
    if selector.matches_nothing:
        return selector
    added: list[LabelRequirement] = []
    for key in keys:
        value = pod_labels.get(key)
        if value is not None:
            added.append(parse_label_requirement({"key": key, "operator": "In", "values": [value]}, path))
    if not added:
        return selector
    return LabelSelector((*added, *selector.requirements))


def _policy(raw: Any, default: bool, path: str) -> bool:
    """True for Honor. Unset takes the default."""
    if raw is None:
        return default
    if raw not in (HONOR, IGNORE):
        raise SelectorError(f'{path}: Unsupported value: "{raw}": supported values: "{HONOR}", "{IGNORE}"')
    return bool(raw == HONOR)


def parse_constraints(
    raw: Any, pod_labels: Mapping[str, str], action: str, path: str
) -> tuple[SpreadConstraint, ...]:
    """The constraints of ``raw`` whose whenUnsatisfiable is ``action`` (``filterTopologySpreadConstraints``).

    Raises SelectorError naming the field on anything the API server would have refused.
    """
    if not isinstance(raw, list):
        raise SelectorError(f"{path}: Invalid value: must be a list")
    out: list[SpreadConstraint] = []
    for i, item in enumerate(raw):
        item_path = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise SelectorError(f"{item_path}: Invalid value: must be an object")
        if item.get("whenUnsatisfiable") != action:
            continue
        max_skew = item.get("maxSkew")
        if isinstance(max_skew, bool) or not isinstance(max_skew, int):
            raise SelectorError(f"{item_path}.maxSkew: Invalid value: {max_skew!r}: must be an integer")
        key = item.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise SelectorError(f"{item_path}.topologyKey: Required value: can not be empty")
        min_domains = item.get("minDomains")
        if min_domains is None:
            min_domains = 1
        elif isinstance(min_domains, bool) or not isinstance(min_domains, int):
            raise SelectorError(f"{item_path}.minDomains: Invalid value: {min_domains!r}: must be an integer")
        selector = parse_label_selector(item.get("labelSelector"), f"{item_path}.labelSelector")
        match_label_keys = item.get("matchLabelKeys") or []
        if not isinstance(match_label_keys, list) or not all(isinstance(k, str) for k in match_label_keys):
            raise SelectorError(f"{item_path}.matchLabelKeys: Invalid value: must be a list of strings")
        selector = _selector_with_match_label_keys(
            selector, match_label_keys, pod_labels, f"{item_path}.matchLabelKeys"
        )
        out.append(
            SpreadConstraint(
                max_skew=max_skew,
                topology_key=key,
                selector=selector,
                min_domains=min_domains,
                honor_node_affinity=_policy(
                    item.get("nodeAffinityPolicy"), True, f"{item_path}.nodeAffinityPolicy"
                ),
                honor_node_taints=_policy(
                    item.get("nodeTaintsPolicy"), False, f"{item_path}.nodeTaintsPolicy"
                ),
            )
        )
    return tuple(out)


# Pods of one workload carry equal constraints; with matchLabelKeys their labels count too.
_PARSED: ParseMemo[tuple[SpreadConstraint, ...]] = ParseMemo()


def _build_own(pod: PodInfo, action: str) -> tuple[SpreadConstraint, ...]:
    raw = pod.spec.get("topologySpreadConstraints")
    labels = labels_of(pod.pod)

    def build() -> tuple[SpreadConstraint, ...]:
        return parse_constraints(raw, labels, action, "spec.topologySpreadConstraints")

    try:
        return _PARSED.get((action, frozenset(labels.items())), raw, build)
    except SelectorError as err:
        raise PodSpecError(f"pod {pod.key}: {err}") from None


def _own_hard(pod: PodInfo) -> tuple[SpreadConstraint, ...]:
    return _build_own(pod, DO_NOT_SCHEDULE)


def _own_soft(pod: PodInfo) -> tuple[SpreadConstraint, ...]:
    return _build_own(pod, SCHEDULE_ANYWAY)


def own_constraints(pod: PodInfo, action: str) -> tuple[SpreadConstraint, ...]:
    """The pod's own constraints for ``action``, parsed once per pod version. Raises PodSpecError."""
    if action == DO_NOT_SCHEDULE:
        return pod.derived("PodTopologySpread.hard", _own_hard)
    return pod.derived("PodTopologySpread.soft", _own_soft)


def has_own_constraints(pod: PodInfo) -> bool:
    return bool(pod.spec.get("topologySpreadConstraints"))


def node_has_all_keys(labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``: the node has every constraint's topology key."""
    return all(c.topology_key in labels for c in constraints)


def count_matching(pods: Iterable[PodInfo], selector: LabelSelector, namespace: str) -> int:
    """``countPodsMatchSelector``: pods of ``namespace``, not terminating, matching ``selector``.

    An empty selector counts nothing (upstream's ``selector.Empty()`` short cut), although it matches
    the incoming pod itself.
    """
    if selector.empty or selector.matches_nothing:
        return 0
    requirements = selector.requirements
    count = 0
    for pod in pods:
        if pod.namespace != namespace:
            continue
        meta = object_meta(pod.pod)
        # Terminating pods are about to leave their domain (kubernetes#87621).
        if meta.get("deletionTimestamp") is not None:
            continue
        labels = labels_of(pod.pod)
        for requirement in requirements:
            if not requirement.matches(labels):
                break
        else:
            count += 1
    return count


def any_selector_matches(constraints: Sequence[SpreadConstraint], labels: Mapping[str, str]) -> bool:
    """``podLabelsMatchSpreadConstraints``."""
    return any(c.selector.matches(labels) for c in constraints)
