"""Default spread constraints: ``defaultingType`` System or List in ``PodTopologySpreadArgs``.

Upstream: ``podtopologyspread/plugin.go`` (systemDefaultConstraints, New), ``common.go``
(buildDefaultConstraints) and ``plugins/helper/spread.go`` (DefaultSelector, GetPodServices).
A pod with no constraints of its own gets the configured ones, with a selector deduced from the
Services selecting it and the ReplicationController, ReplicaSet or StatefulSet controlling it; a pod
nothing selects gets none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework.listers import Lister, lister_version
from scheduler.framework.objects import labels_of, object_meta, spec_of
from scheduler.framework.types import PodInfo
from scheduler.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    SCHEDULE_ANYWAY,
    SpreadConstraint,
    parse_constraints,
)
from scheduler.util.labelselector import LabelSelector, parse_label_selector
from scheduler.util.nodeselector import LabelRequirement, SelectorError, parse_label_requirement

SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)

# (apiVersion, kind) of the controllers whose selector spreads their pods; other versions don't count.
_RC = ("v1", "ReplicationController")
_RS = ("apps/v1", "ReplicaSet")
_SS = ("apps/v1", "StatefulSet")


class ControllerListers:
    """The four listers ``DefaultSelector`` reads."""

    __slots__ = ("replica_sets", "replication_controllers", "services", "stateful_sets")

    def __init__(
        self, services: Lister, replication_controllers: Lister, replica_sets: Lister, stateful_sets: Lister
    ) -> None:
        self.services = services
        self.replication_controllers = replication_controllers
        self.replica_sets = replica_sets
        self.stateful_sets = stateful_sets


def _equals(labels: Mapping[str, str]) -> list[LabelRequirement]:
    return [
        parse_label_requirement({"key": key, "operator": "In", "values": [value]}, "selector")
        for key, value in sorted(labels.items())
    ]


def _controller_of(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in object_meta(pod).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def _spec_selector(obj: Mapping[str, Any] | None) -> Any:
    return spec_of(obj).get("selector") if obj else None


def default_selector(pod: PodInfo, listers: ControllerListers) -> LabelSelector:
    """``helper.DefaultSelector``: the Services' selectors merged, plus the controller's selector."""
    pod_labels = labels_of(pod.pod)
    merged: dict[str, str] = {}
    for service in listers.services.list(pod.namespace):
        selector = _spec_selector(service)
        # A Service without a selector selects nothing, not everything.
        if not isinstance(selector, Mapping):
            continue
        if all(pod_labels.get(k) == v for k, v in selector.items()):
            merged.update({str(k): str(v) for k, v in selector.items()})
    requirements = _equals(merged)

    owner = _controller_of(pod.pod)
    if owner is not None:
        kind = (owner.get("apiVersion"), owner.get("kind"))
        name = str(owner.get("name") or "")
        if kind == _RC:
            rc_selector = _spec_selector(listers.replication_controllers.get(name, pod.namespace))
            if isinstance(rc_selector, Mapping):
                merged.update({str(k): str(v) for k, v in rc_selector.items()})
                requirements = _equals(merged)
        elif kind in (_RS, _SS):
            lister = listers.replica_sets if kind == _RS else listers.stateful_sets
            controller = lister.get(name, pod.namespace)
            if controller is not None:
                try:
                    selector = parse_label_selector(_spec_selector(controller))
                except SelectorError:
                    # Upstream ignores a controller selector it cannot parse.
                    selector = LabelSelector(())
                requirements += selector.requirements
    return LabelSelector(tuple(requirements))


def default_constraints(
    pod: PodInfo, raw_constraints: Sequence[Mapping[str, Any]], action: str, listers: ControllerListers
) -> tuple[SpreadConstraint, ...]:
    """``buildDefaultConstraints``: the configured constraints for ``action`` with the deduced selector,
    or none when nothing selects the pod."""
    constraints = parse_constraints(list(raw_constraints), labels_of(pod.pod), action, "defaultConstraints")
    if not constraints:
        return ()
    selector = default_selector(pod, listers)
    if selector.empty:
        return ()
    return tuple(
        SpreadConstraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            selector=selector,
            min_domains=c.min_domains,
            honor_node_affinity=c.honor_node_affinity,
            honor_node_taints=c.honor_node_taints,
        )
        for c in constraints
    )


class DefaultConstraints:
    """``default_constraints`` remembered per (action, namespace, labels, controller) of the pod.

    The answer reads nothing else of the pod, and of the cluster only the four listers; it is kept
    until one of them changes (their versions), so the pods of one ReplicaSet, or any pods nothing
    selects, cost a dictionary lookup instead of a walk over the namespace's Services. Listers that
    keep no version are read every time, as upstream does.
    """

    # Distinct (namespace, labels, owner) seen between two lister changes; beyond it, start over.
    MAX_ENTRIES = 4096

    def __init__(self, raw_constraints: Sequence[Mapping[str, Any]], listers: ControllerListers) -> None:
        self._raw = raw_constraints
        self._listers = listers
        self._versions: tuple[int | None, ...] = ()
        # (action, *pod key) -> constraints; (actions, *pod key) -> whether any of them has one.
        self._memo: dict[Any, Any] = {}

    def for_pod(self, pod: PodInfo, action: str) -> tuple[SpreadConstraint, ...]:
        if not self._current():
            return default_constraints(pod, self._raw, action, self._listers)
        return self._kept(pod, action, self._pod_key(pod))

    def any_for_pod(self, pod: PodInfo, actions: tuple[str, ...]) -> bool:
        """Whether ``for_pod`` gives any constraint for one of ``actions``: what signing a pod asks,
        per pod, with one read of the listers' versions and one key for all the actions."""
        if not self._current():
            return any(default_constraints(pod, self._raw, action, self._listers) for action in actions)
        pod_key = self._pod_key(pod)
        key = (actions, *pod_key)
        found = self._memo.get(key)
        if found is None:
            # Each action's answer is kept under its own key too, as for_pod keeps it.
            found = self._memo[key] = any([self._kept(pod, action, pod_key) for action in actions])
        return bool(found)

    def _kept(self, pod: PodInfo, action: str, pod_key: tuple[Any, ...]) -> tuple[SpreadConstraint, ...]:
        """``action``'s constraints for ``pod`` (``pod_key``: its ``_pod_key``), kept in the memo."""
        key = (action, *pod_key)
        found: tuple[SpreadConstraint, ...] | None = self._memo.get(key)
        if found is None:
            found = self._memo[key] = default_constraints(pod, self._raw, action, self._listers)
        return found

    def _current(self) -> bool:
        """Brings the memo up to date with the listers; False when one keeps no version (no memo)."""
        listers = self._listers
        versions = (
            lister_version(listers.services),
            lister_version(listers.replication_controllers),
            lister_version(listers.replica_sets),
            lister_version(listers.stateful_sets),
        )
        if None in versions:
            return False
        if versions != self._versions or len(self._memo) >= self.MAX_ENTRIES:
            self._versions = versions
            self._memo = {}
        return True

    @staticmethod
    def _pod_key(pod: PodInfo) -> tuple[Any, ...]:
        """What of the pod the answer reads: namespace, labels and controller."""
        owner = _controller_of(pod.pod)
        owner_key = None if owner is None else (owner.get("apiVersion"), owner.get("kind"), owner.get("name"))
        return (pod.namespace, frozenset(labels_of(pod.pod).items()), owner_key)
