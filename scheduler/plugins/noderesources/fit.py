"""NodeResourcesFit (``pkg/scheduler/framework/plugins/noderesources/fit.go``, v1.37.2)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    ColumnSpec,
    CycleState,
    IntArray,
    MaskedStatuses,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Resource,
    ResourceVector,
    Status,
    as_subset,
)
from scheduler.framework.interface import AmountsFilter
from scheduler.framework.masked import all_pass
from scheduler.framework.objects import name_of, pod_spec
from scheduler.framework.objects_resource import device_class_spec
from scheduler.framework.resources import pod_requests
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.hints import is_assigned_or_nominated, node_info, pod_info, safe_hint
from scheduler.plugins.helper.signature import requests_part
from scheduler.plugins.noderesources import columns
from scheduler.plugins.noderesources.args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    FitArgs,
    parse_fit_args,
)
from scheduler.plugins.noderesources.resource_allocation import (
    ArrayScorer,
    ResourceAllocationScorer,
    Scorer,
    least_resource_array_scorer,
    least_resource_scorer,
    most_resource_array_scorer,
    most_resource_scorer,
    requested_to_capacity_ratio_scorer,
)
from scheduler.util.resource_names import (
    IMPLICIT_EXTENDED_PREFIX,
    is_extended_resource_name,
    is_scalar_resource_name,
)

if TYPE_CHECKING:
    from scheduler.framework.handle import Handle

PRE_FILTER_STATE_KEY = "PreFilter" + names.NODE_RESOURCES_FIT
PRE_SCORE_STATE_KEY = "PreScore" + names.NODE_RESOURCES_FIT
REASON_TOO_MANY_PODS = "Too many pods"

# Bits of the vectorised check, in the order insufficient_resources() lists the reasons.
_REASON_BITS = (
    (1, REASON_TOO_MANY_PODS),
    (2, "Insufficient cpu"),
    (4, "Insufficient memory"),
    (8, "Insufficient ephemeral-storage"),
)


# What insufficient_resources_batch reads.
FILTER_COLUMNS: tuple[ColumnSpec, ...] = (
    columns.NUM_PODS,
    columns.ALLOCATABLE_PODS,
    columns.ALLOCATABLE_CPU,
    columns.REQUESTED_CPU,
    columns.ALLOCATABLE_MEMORY,
    columns.REQUESTED_MEMORY,
    columns.ALLOCATABLE_EPHEMERAL,
    columns.REQUESTED_EPHEMERAL,
    columns.FREE_PODS,
    columns.FREE_CPU,
    columns.FREE_MEMORY,
    columns.FREE_EPHEMERAL,
)


class FitRequest:
    """What the pod asks of a node, ready for the per-node check (``preFilterState``)."""

    __slots__ = ("empty", "ephemeral_storage", "memory", "milli_cpu", "scalars")
    # Built once per PreFilter and only read after: a batching replay shares it (shallow_copy).
    replay_shared = True

    def __init__(
        self,
        requests: ResourceVector,
        ignored: frozenset[str] = frozenset(),
        ignored_groups: frozenset[str] = frozenset(),
    ) -> None:
        self.milli_cpu = requests.milli_cpu
        self.memory = requests.memory
        self.ephemeral_storage = requests.ephemeral_storage
        self.empty = requests.is_zero() and not requests.scalar
        scalars = []
        for name, quantity in requests.scalar.items():
            if quantity == 0:
                continue
            if is_extended_resource_name(name) and (
                name in ignored or (ignored_groups and name.split("/", 1)[0] in ignored_groups)
            ):
                continue
            scalars.append((name, quantity))
        self.scalars = tuple(scalars)


def insufficient_resources(request: FitRequest, node: NodeInfo) -> tuple[list[str], bool]:
    """The failure reasons (``fitsRequest``) and whether no preemption could ever fix them."""
    return insufficient_amounts(request, node.allocatable, node.requested, len(node.pods))


def insufficient_amounts(
    request: FitRequest, allocatable: ResourceVector, requested: ResourceVector, num_pods: int
) -> tuple[list[str], bool]:
    """``insufficient_resources`` on a node whose pods number ``num_pods`` and request ``requested``."""
    reasons: list[str] = []
    if num_pods >= allocatable.allowed_pod_number:
        reasons.append(REASON_TOO_MANY_PODS)
    if request.empty:
        return reasons, False
    unresolvable = False
    cpu = request.milli_cpu
    if cpu > 0 and cpu > allocatable.milli_cpu - requested.milli_cpu:
        reasons.append("Insufficient cpu")
        unresolvable = cpu > allocatable.milli_cpu
    memory = request.memory
    if memory > 0 and memory > allocatable.memory - requested.memory:
        reasons.append("Insufficient memory")
        unresolvable = unresolvable or memory > allocatable.memory
    storage = request.ephemeral_storage
    if storage > 0 and storage > allocatable.ephemeral_storage - requested.ephemeral_storage:
        reasons.append("Insufficient ephemeral-storage")
        unresolvable = unresolvable or storage > allocatable.ephemeral_storage
    for name, quantity in request.scalars:
        capacity = allocatable.scalar.get(name, 0)
        if quantity > capacity - requested.scalar.get(name, 0):
            reasons.append(f"Insufficient {name}")
            unresolvable = unresolvable or quantity > capacity
    return reasons, unresolvable


def all_fit_batch(request: FitRequest, nodes: Sequence[NodeInfo]) -> bool:
    """Whether every node of a NodeSubset has room for the request and one more pod: one comparison
    per requested resource over the room-left columns. False when some node lacks room, and when only
    the per-node or the full batch path can tell (no columns, scalar resources)."""
    subset = as_subset(nodes)
    if subset is None or request.scalars or not len(subset):
        return False
    if not (subset.gather(columns.FREE_PODS) > 0).all():
        return False
    for wanted, free in (
        (request.milli_cpu, columns.FREE_CPU),
        (request.memory, columns.FREE_MEMORY),
        (request.ephemeral_storage, columns.FREE_EPHEMERAL),
    ):
        # insufficient_resources checks only what the pod asks for.
        if wanted > 0 and not (subset.gather(free) >= wanted).all():
            return False
    return True


def insufficient_resources_batch(
    request: FitRequest, nodes: Sequence[NodeInfo]
) -> tuple[IntArray, IntArray] | None:
    """``insufficient_resources`` for a NodeSubset at once: (reason bits, unresolvable) per node.

    None when ``nodes`` carries no columns or the pod asks for scalar resources (per-node path).
    """
    subset = as_subset(nodes)
    if subset is None or request.scalars:
        return None
    bits: IntArray = (subset.gather(columns.NUM_PODS) >= subset.gather(columns.ALLOCATABLE_PODS)).astype(
        np.int64
    )
    unresolvable: IntArray = np.zeros(len(subset), dtype=np.int64)
    if request.empty:
        return bits, unresolvable
    for bit, wanted, allocatable, requested in (
        (2, request.milli_cpu, columns.ALLOCATABLE_CPU, columns.REQUESTED_CPU),
        (4, request.memory, columns.ALLOCATABLE_MEMORY, columns.REQUESTED_MEMORY),
        (8, request.ephemeral_storage, columns.ALLOCATABLE_EPHEMERAL, columns.REQUESTED_EPHEMERAL),
    ):
        if wanted <= 0:
            continue
        capacity = subset.gather(allocatable)
        short = wanted > capacity - subset.gather(requested)
        bits |= short * bit
        unresolvable |= short & (wanted > capacity)
    return bits, unresolvable


def _status_from_bits(bits: int, unresolvable: int) -> Status:
    reasons = [reason for bit, reason in _REASON_BITS if bits & bit]
    return Status(Code.UnschedulableAndUnresolvable if unresolvable else Code.Unschedulable, reasons)


def _build_scorer(args: FitArgs) -> Scorer:
    if args.strategy == LEAST_ALLOCATED:
        return least_resource_scorer(args.resources)
    if args.strategy == MOST_ALLOCATED:
        return most_resource_scorer(args.resources)
    return requested_to_capacity_ratio_scorer(args.resources, args.shape)


def _build_array_scorer(args: FitArgs) -> ArrayScorer | None:
    if args.strategy == LEAST_ALLOCATED:
        return least_resource_array_scorer(args.resources)
    if args.strategy == MOST_ALLOCATED:
        return most_resource_array_scorer(args.resources)
    return None


def _requests_increased(request: FitRequest, old: NodeInfo, new: NodeInfo) -> bool:
    """``haveAnyRequestedResourcesIncreased``: more pods allowed or more of something the pod wants."""
    before, after = old.allocatable, new.allocatable
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if request.empty:
        return False
    if (
        (request.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (request.memory > 0 and after.memory > before.memory)
        or (request.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    return any(after.scalar.get(name, 0) > before.scalar.get(name, 0) for name, _ in request.scalars)


def _scaled_down(target: ResourceVector, before: ResourceVector, after: ResourceVector) -> bool:
    """Did a resource the target pod requests shrink (``isSchedulableAfterPodScaleDown``)?"""
    if target.milli_cpu and before.milli_cpu > after.milli_cpu:
        return True
    if target.memory and before.memory > after.memory:
        return True
    if target.ephemeral_storage and before.ephemeral_storage > after.ephemeral_storage:
        return True
    return any(
        quantity and is_scalar_resource_name(name) and before.scalar.get(name, 0) > after.scalar.get(name, 0)
        for name, quantity in target.scalar.items()
    )


class NodeResourcesFit:
    """Filter: the node must have room for the pod's requests and one more pod.

    A node too small for the request even when empty fails with UnschedulableAndUnresolvable, so
    preemption does not try it. Score: the configured strategy (LeastAllocated by default) over
    ``scoringStrategy.resources`` (cpu and memory, weight 1), counting non-zero cpu/memory requests.

    Upstream: ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (v1.37.2).
    """

    name = names.NODE_RESOURCES_FIT

    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        """Filter and Score read only the pod's requests (and this plugin's args)."""
        return requests_part(pod)

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        self.args = parse_fit_args(ArgsReader(self.name), args)
        self.scorer = ResourceAllocationScorer(
            self.args.resources,
            _build_scorer(self.args),
            use_requested=False,
            array_scorer=_build_array_scorer(self.args),
        )

    def node_columns(self) -> Sequence[ColumnSpec]:
        return (*FILTER_COLUMNS, *self.scorer.node_columns())

    # --- Filter -----------------------------------------------------------------------------------

    def _fit_request(self, pod: PodInfo) -> FitRequest:
        return FitRequest(pod.requests, self.args.ignored_resources, self.args.ignored_resource_groups)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_STATE_KEY, self._fit_request(pod))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        request: FitRequest | None = state.get(PRE_FILTER_STATE_KEY)
        if request is None:
            request = self._fit_request(pod)
        reasons, unresolvable = insufficient_resources(request, node)
        if not reasons:
            return None
        return Status(Code.UnschedulableAndUnresolvable if unresolvable else Code.Unschedulable, reasons)

    def amounts_filter(self, state: CycleState, pod: PodInfo) -> AmountsFilter:
        """``filter`` with the node's pods given as their count and summed requests, all it reads of
        them (a preemption dry run's arithmetic, ``AmountsFilterPlugin``)."""
        request: FitRequest | None = state.get(PRE_FILTER_STATE_KEY)
        if request is None:
            request = self._fit_request(pod)

        def verdict(node: NodeInfo, requested: ResourceVector, num_pods: int) -> Status | None:
            reasons, unresolvable = insufficient_amounts(request, node.allocatable, requested, num_pods)
            if not reasons:
                return None
            code = Code.UnschedulableAndUnresolvable if unresolvable else Code.Unschedulable
            return Status(code, reasons)

        return verdict

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        request: FitRequest | None = state.get(PRE_FILTER_STATE_KEY)
        if request is None:
            request = self._fit_request(pod)
        if all_fit_batch(request, nodes):
            # The common case while the cluster has room: no reasons to work out.
            return all_pass(len(nodes))
        batch = insufficient_resources_batch(request, nodes)
        if batch is None:
            return [self.filter(state, pod, node) for node in nodes]
        bits, unresolvable = batch
        made: dict[tuple[int, int], Status] = {}

        def status_of(index: int) -> Status:
            key = (int(bits[index]), int(unresolvable[index]))
            status = made.get(key)
            if status is None:
                # Nodes failing the same way share one Status, as they share the message.
                status = made[key] = _status_from_bits(*key)
            return status

        return MaskedStatuses(bits == 0, status_of)

    # --- Score ------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, self.scorer.entries(self.scorer.pod_requests(pod)))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        entries = state.get(PRE_SCORE_STATE_KEY)
        if entries is None:
            entries = self.scorer.entries(self.scorer.pod_requests(pod))
        return self.scorer.score(node, entries), None

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[int] | IntArray:
        entries = state.get(PRE_SCORE_STATE_KEY)
        if entries is None:
            entries = self.scorer.entries(self.scorer.pod_requests(pod))
        scores = self.scorer.score_nodes(nodes, entries)
        if scores is None:
            return [self.scorer.score(node, entries) for node in nodes]
        return scores

    # --- Queueing hints ---------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.AssignedPod, ActionType.Delete),
                self.is_schedulable_after_assigned_pod_delete,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.Node, ActionType.Add | ActionType.UpdateNodeAllocatable),
                self.is_schedulable_after_node_change,
            ),
            # DRAExtendedResource (GA, locked on in v1.37): a class that comes to back an extended
            # resource the pod asks for may make it fit.
            ClusterEventWithHint(
                ClusterEvent(Resource.DeviceClass, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_device_class_event,
            ),
            # InPlacePodVerticalScaling (GA): a scaled-down assigned pod may free room, and the rejected
            # pod's own scale-down may make it fit. The UpdatePodScaleUp pair upstream registers under
            # the alpha InPlacePodVerticalScalingSchedulerPreemption is not: py-scheduler refuses it.
            ClusterEventWithHint(
                ClusterEvent(Resource.AssignedPod, ActionType.UpdatePodScaleDown),
                self.is_schedulable_after_assigned_pod_scale_down,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.TargetPod, ActionType.UpdatePodScaleDown),
                self.is_schedulable_after_target_pod_scale_down,
            ),
        ]

    @safe_hint
    def is_schedulable_after_assigned_pod_delete(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # A deleted pod frees room only if it held (or was about to take: a deleted nominated pod is
        # reported as an AssignedPod delete) some.
        return QueueingHint.Queue if is_assigned_or_nominated(old_obj) else QueueingHint.Skip

    def is_schedulable_after_target_pod_scale_down(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # v1.37.2 answers Queue without comparing uids (v1.36's Pod hint checked the scaled pod was the
        # rejected one); a replayed in-flight TargetPod event of another pod gets Queue too.
        return QueueingHint.Queue

    @safe_hint
    def is_schedulable_after_assigned_pod_scale_down(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        if not isinstance(old_obj, Mapping) or not isinstance(new_obj, Mapping):
            return QueueingHint.Queue  # upstream: objects that are not pods queue the pod
        # Upstream's haveEnoughRelevantResourcesDecreased: a resource the rejected pod requests shrank.
        if not pod_spec(new_obj).get("nodeName"):
            return QueueingHint.Skip
        target = pod_info(pod).requests
        if _scaled_down(target, pod_requests(old_obj), pod_requests(new_obj)):
            return QueueingHint.Queue
        return QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_device_class_event(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        """Upstream's isSchedulableAfterDeviceClassEvent: queue when the class now backs a resource the
        pod requests, by its implicit name (on add: a class's name never changes) or its declared
        ``extendedResourceName`` (when that changed)."""
        requested = pod_info(pod).requests.scalar
        declared = device_class_spec(new_obj).get("extendedResourceName")
        if old_obj is not None:
            if device_class_spec(old_obj).get("extendedResourceName") == declared:
                return QueueingHint.Skip
        elif IMPLICIT_EXTENDED_PREFIX + name_of(new_obj) in requested:
            return QueueingHint.Queue
        if declared and declared in requested:
            return QueueingHint.Queue
        return QueueingHint.Skip

    @safe_hint
    def is_schedulable_after_node_change(
        self, pod: Mapping[str, Any], old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        # Upstream's isFit ignores ignoredResources here; so do we.
        request = FitRequest(pod_info(pod).requests)
        modified = node_info(new_obj)
        if insufficient_resources(request, modified)[0]:
            return QueueingHint.Skip
        if old_obj is None:
            return QueueingHint.Queue
        if _requests_increased(request, node_info(old_obj), modified):
            return QueueingHint.Queue
        return QueueingHint.Skip
