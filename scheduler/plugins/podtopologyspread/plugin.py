"""PodTopologySpread (``pkg/scheduler/framework/plugins/podtopologyspread/plugin.go``, with
``filtering.go``, ``scoring.go`` and ``common.go``; v1.37.2).

Feature gates as in v1.36 and v1.37: NodeInclusionPolicyInPodTopologySpread is GA (policies honoured),
MatchLabelKeysInPodTopologySpread is on (the scheduler merges matchLabelKeys into the selector),
SchedulerQueueingHints is GA (pods also wake on a toleration change of their own). Registrations are
v1.37.2's: AssignedPod add/relabel/delete and the rejected pod's own (TargetPod) relabel or new toleration.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scheduler.framework import IntArray, as_subset
from scheduler.framework.columns import ColumnStore
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import REPLICA_SETS, REPLICATION_CONTROLLERS, SERVICES, STATEFUL_SETS
from scheduler.framework.objects import labels_of, node_spec, object_meta, pod_spec, pod_status
from scheduler.framework.runtime import PluginError
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, NodeScore, PodInfo, PreFilterResult
from scheduler.plugins import names
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.helper.hints import pod_info, safe_hint
from scheduler.plugins.podtopologyspread.args import SYSTEM_DEFAULTING, parse_args
from scheduler.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SpreadConstraint,
    any_selector_matches,
    has_own_constraints,
    node_has_all_keys,
    own_constraints,
    parse_constraints,
)
from scheduler.plugins.podtopologyspread.defaults import (
    SYSTEM_DEFAULT_CONSTRAINTS,
    ControllerListers,
    DefaultConstraints,
)
from scheduler.plugins.podtopologyspread.filtering import (
    FilterState,
    build_filter_state,
    filter_node,
    filter_subset,
)
from scheduler.plugins.podtopologyspread.scoring import (
    ScoreState,
    build_score_state,
    ignored_mask,
    normalize,
    normalize_array,
    score_node,
    score_subset,
)
from scheduler.util.nodeselector import SelectorError
from scheduling_queue.types import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource

if TYPE_CHECKING:
    from scheduler.framework.handle import Handle

PRE_FILTER_STATE_KEY = "PreFilter" + names.POD_TOPOLOGY_SPREAD
PRE_SCORE_STATE_KEY = "PreScore" + names.POD_TOPOLOGY_SPREAD
# The two actions a signed pod must have no constraint for, in the order sign asks.
_BOTH_ACTIONS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)


class PodTopologySpread:
    """Spreads pods matching a selector evenly across topology domains (zones, hostnames...).

    Filter enforces ``DoNotSchedule`` constraints: ``maxSkew``, ``minDomains``, ``nodeAffinityPolicy``
    (default Honor), ``nodeTaintsPolicy`` (default Ignore), ``matchLabelKeys``; a node without a
    constraint's topology key is UnschedulableAndUnresolvable. Score prefers, for ``ScheduleAnyway``
    constraints, the domains with fewer matching pods.

    Args (``PodTopologySpreadArgs``): ``defaultingType`` System (default: hostname maxSkew 3 and zone
    maxSkew 5, ScheduleAnyway) or List with ``defaultConstraints``; they apply to pods without
    constraints of their own that a Service, ReplicationController, ReplicaSet or StatefulSet selects.
    """

    name = names.POD_TOPOLOGY_SPREAD

    # A signed pod has no constraint, own or defaulted: PreFilter and PreScore skip.
    pre_state_from_signature = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        """Spreading depends on where matching pods run: sign only pods without any constraint, own
        or defaulted (both Filter and Score skip those)."""
        if has_own_constraints(pod):
            if own_constraints(pod, DO_NOT_SCHEDULE) or own_constraints(pod, SCHEDULE_ANYWAY):
                return None
            return ()
        # As self.constraints for both actions, asking the defaults once.
        if self._defaults is not None and self._defaults.any_for_pod(pod, _BOTH_ACTIONS):
            return None
        return ()

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        parsed = parse_args(args)
        self.system_defaulted = parsed.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints: tuple[Mapping[str, Any], ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else parsed.default_constraints
        )
        try:
            # Catches what validation does not look at (minDomains, policies) before any pod meets it.
            parse_constraints(list(self.default_constraints), {}, DO_NOT_SCHEDULE, "defaultConstraints")
            parse_constraints(list(self.default_constraints), {}, SCHEDULE_ANYWAY, "defaultConstraints")
        except SelectorError as err:
            raise PluginArgsError(self.name, "", str(err)) from None
        self._handle = handle
        # Only a profile that defaults constraints watches Services and controllers.
        self._defaults: DefaultConstraints | None = None
        if self.default_constraints:
            if handle is None:
                raise ValueError(f"{self.name}: default constraints need a Handle for the listers")
            listers = ControllerListers(
                handle.lister(SERVICES),
                handle.lister(REPLICATION_CONTROLLERS),
                handle.lister(REPLICA_SETS),
                handle.lister(STATEFUL_SETS),
            )
            self._defaults = DefaultConstraints(self.default_constraints, listers)

    def constraints(self, pod: PodInfo, action: str) -> tuple[SpreadConstraint, ...]:
        """The pod's own constraints for ``action``, or the defaulted ones (``getConstraints``)."""
        if has_own_constraints(pod):
            return own_constraints(pod, action)
        if self._defaults is None:
            return ()
        return self._defaults.for_pod(pod, action)

    # --- Filter -----------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None, Status.skip()
        state.write(
            PRE_FILTER_STATE_KEY, build_filter_state(pod, constraints, nodes, self._columns_for(nodes))
        )
        return None, None

    def _columns_for(self, nodes: Sequence[NodeInfo]) -> ColumnStore | None:
        """The snapshot's columns when ``nodes`` are exactly the snapshot's nodes (the cycle's case);
        None (per-node counting) otherwise, e.g. for a test's plain list."""
        snapshot = self._handle.snapshot if self._handle is not None else None
        columns_of = getattr(snapshot, "columns", None)
        if snapshot is None or columns_of is None or nodes is not snapshot.node_infos():
            return None
        columns: ColumnStore = columns_of()
        return columns

    def _filter_state(self, state: CycleState) -> FilterState | Status:
        filter_state: FilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if filter_state is None:
            return Status.as_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return filter_state

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        """PreFilterExtensions.AddPod: count ``to_add`` as if it ran on ``node`` (filtering.go)."""
        filter_state = self._filter_state(state)
        if isinstance(filter_state, Status):
            return filter_state
        filter_state.update_with_pod(to_add, pod, node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        """PreFilterExtensions.RemovePod: stop counting ``to_remove`` on ``node``."""
        filter_state = self._filter_state(state)
        if isinstance(filter_state, Status):
            return filter_state
        filter_state.update_with_pod(to_remove, pod, node, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        filter_state = self._filter_state(state)
        if isinstance(filter_state, Status):
            return filter_state
        return filter_node(filter_state, node)

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        filter_state = self._filter_state(state)
        if isinstance(filter_state, Status):
            return [filter_state] * len(nodes)
        subset = as_subset(nodes)
        if subset is None:
            return [filter_node(filter_state, node) for node in nodes]
        return filter_subset(filter_state, subset)

    # --- Score ------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        all_nodes = self._handle.snapshot.node_infos() if self._handle is not None else nodes
        if not all_nodes:
            return Status.skip()
        constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return Status.skip()
        # Only the pod's own constraints, or configured List defaults, need every key on a node: with
        # the system defaults a node without a zone label still spreads by hostname.
        require_all = has_own_constraints(pod) or not self.system_defaulted
        state.write(
            PRE_SCORE_STATE_KEY,
            build_score_state(
                pod,
                constraints,
                nodes,
                all_nodes,
                require_all_topologies=require_all,
                columns=self._columns_for(all_nodes),
            ),
        )
        return None

    def _score_state(self, state: CycleState) -> ScoreState:
        score_state: ScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if score_state is None:
            status = Status.as_error(f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
            raise PluginError(status.with_plugin(self.name))
        return score_state

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        score_state: ScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if score_state is None:
            return 0, Status.as_error(f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return score_node(score_state, pod, node), None

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[int] | IntArray:
        score_state = self._score_state(state)
        subset = as_subset(nodes)
        if subset is not None:
            return score_subset(score_state, pod, subset)
        if score_state.ignored:
            ignored_mask(score_state, nodes)
        return [score_node(score_state, pod, node) for node in nodes]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        score_state: ScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if score_state is not None:
            normalize(score_state, scores)
        return None

    def normalize_score_array(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        score_state: ScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if score_state is None:
            return scores
        return normalize_array(score_state, scores)

    # --- Queueing hints ---------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # An assigned pod added, relabelled or deleted may change a domain's count.
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.AssignedPod, ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete
                ),
                self.is_schedulable_after_assigned_pod_change,
            ),
            # The rejected pod's own update: a relabel, or a new toleration under NodeTaintsPolicy Honor.
            ClusterEventWithHint(
                ClusterEvent(Resource.TargetPod, ActionType.UpdatePodToleration | ActionType.UpdatePodLabel),
                self.is_schedulable_after_target_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.Node,
                    ActionType.Add
                    | ActionType.Delete
                    | ActionType.UpdateNodeLabel
                    | ActionType.UpdateNodeTaint,
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    @safe_hint
    def is_schedulable_after_target_pod_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # As v1.37.2, the updated pod's uid is not compared with the rejected pod's: the constraints are
        # the rejected pod's, the tolerations and labels the updated pod's.
        constraints = self.constraints(pod_info(pod), DO_NOT_SCHEDULE)
        if _tolerations(new_obj) != _tolerations(old_obj) and any(c.honor_node_taints for c in constraints):
            # A new toleration may let a tainted node count as a domain again.
            return QueueingHint.Queue
        return _label_change_hint(constraints, old_obj, new_obj)

    @safe_hint
    def is_schedulable_after_assigned_pod_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if (new_obj is not None and not _involved(new_obj, pod)) or (
            old_obj is not None and not _involved(old_obj, pod)
        ):
            return QueueingHint.Skip
        constraints = self.constraints(pod_info(pod), DO_NOT_SCHEDULE)
        if new_obj is not None and old_obj is not None:
            return _label_change_hint(constraints, old_obj, new_obj)
        changed_pod = new_obj if new_obj is not None else old_obj
        matches = any_selector_matches(constraints, labels_of(changed_pod))
        return QueueingHint.Queue if matches else QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_node_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        constraints = self.constraints(pod_info(pod), DO_NOT_SCHEDULE)
        old_matching = old_obj is not None and node_has_all_keys(_node_labels(old_obj), constraints)
        new_matching = new_obj is not None and node_has_all_keys(_node_labels(new_obj), constraints)
        if old_obj is not None and new_obj is not None:
            if old_matching != new_matching:
                return QueueingHint.Queue
            if new_matching:
                old_labels, new_labels = _node_labels(old_obj), _node_labels(new_obj)
                key_changed = any(
                    old_labels.get(c.topology_key, "") != new_labels.get(c.topology_key, "")
                    for c in constraints
                )
                if key_changed or _taints(old_obj) != _taints(new_obj):
                    return QueueingHint.Queue
            return QueueingHint.Skip
        if new_obj is not None:
            return QueueingHint.Queue if new_matching else QueueingHint.Skip
        return QueueingHint.Queue if old_matching else QueueingHint.Skip


def _label_change_hint(
    constraints: Sequence[Any], old_obj: Mapping[str, Any], new_obj: Mapping[str, Any]
) -> QueueingHint:
    """``isSchedulableAfterPodLabelChange``: Queue when the update makes the pod match, or stop
    matching, some constraint's selector."""
    old_labels, new_labels = labels_of(old_obj), labels_of(new_obj)
    if old_labels == new_labels:
        return QueueingHint.Skip
    changed = any(c.selector.matches(old_labels) != c.selector.matches(new_labels) for c in constraints)
    return QueueingHint.Queue if changed else QueueingHint.Skip


def _involved(incoming: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """``involvedInTopologySpreading``: a placed (or nominated) pod of the pod's namespace (v1.37.2 no
    longer counts the pod itself: its own update is a TargetPod event, judged apart)."""
    spec = pod_spec(incoming)
    status = pod_status(incoming)
    if not spec.get("nodeName") and not status.get("nominatedNodeName"):
        return False
    namespace = object_meta(incoming).get("namespace", "")
    return bool(namespace == object_meta(pod).get("namespace", ""))


def _tolerations(pod: Mapping[str, Any]) -> list[Any]:
    # Semantic equality: a missing list equals an empty one.
    return list(pod_spec(pod).get("tolerations") or [])


# A node's labels; the framework's accessor under the name the hints above read best with.
_node_labels = labels_of


def _taints(node: Mapping[str, Any]) -> list[Any]:
    return list(node_spec(node).get("taints") or [])


def describe_skew(state: CycleState, node: NodeInfo) -> str:
    """Why ``node`` failed this cycle's spread constraints, in words (explain's nearest misses): the
    first constraint whose skew the pod would push past maxSkew, with the counts that decide it."""
    spread: FilterState | None = state.get(PRE_FILTER_STATE_KEY)
    if spread is None:
        return ""
    labels = node.labels
    for index, constraint in enumerate(spread.constraints):
        key = constraint.topology_key
        value = labels.get(key)
        if value is None:
            return f"node has no {key} label (topology spread)"
        counts = spread.counts[index]
        here = counts.get(value, 0)
        skew = here + spread.self_match[index] - spread.min_counts[index]
        if skew <= constraint.max_skew:
            continue
        smallest = min(counts, key=lambda domain: (counts[domain], domain), default="")
        lowest = f"{smallest} has {spread.min_counts[index]}" if smallest else "an empty domain has 0"
        return f"{key}={value} would exceed maxSkew {constraint.max_skew} ({lowest}, {value} {here})"
    return ""
