"""DynamicResources (``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``, v1.37.2).

PreEnqueue holds a pod until its ResourceClaims exist (claims from templates are created by
kube-controller-manager's resourceclaim controller and named in ``status.resourceClaimStatuses``).
PreFilter reads the claims: allocated ones constrain nodes through their node selector, unallocated ones
are allocated per node at Filter by the structured allocator. Score prefers nodes where earlier
``firstAvailable`` alternatives fit. Reserve records the chosen allocation in memory (in-flight, so no
other pod gets those devices), Unreserve forgets it, and PreBind (binding thread) writes each claim:
the delete-protection finalizer, then ``status.allocation`` and ``status.reservedFor`` through the status
subresource, retrying on conflicts as upstream does.

Reasons (UnschedulableAndUnresolvable, as upstream's statusUnschedulable) and errors carry upstream's
wording: "cannot allocate all claims", "resourceclaim not available on the node", "resourceclaim in use",
"resource claim ns/name is in the process of being allocated", "request r: device class c does not exist".

DeviceTaintRules (resource.k8s.io/v1, GA and on since v1.37) taint the devices they select (driver, pool,
device name) as if the driver had published the taint; their changes requeue pods as slice updates.

Guarded (the pod is refused with a reason naming the feature, never placed as if it were absent):
DRA-backed extended resources (DRAExtendedResource) and claims of a PodGroup (DRAWorkloadResourceClaims).

PostFilter (before DefaultPreemption) deallocates one allocated claim of an unschedulable pod that ruled
out a node at Filter (upstream's unavailableClaims: its node selector does not match the node, or its
device binding failed or its binding conditions timed out, DRADeviceBindingConditions) and that no other
pod has reserved: "deallocation of ResourceClaim completed", so the next attempt may allocate it where the
pod fits. The status write runs in a worker thread while the cycle awaits it (``post_filter_call``,
``BlockingPostFilterPlugin``); an API error is the PostFilter's error status and the pod backs off.
Not mirrored: PreBind does not wait for pending binding conditions of an allocated claim (upstream polls
them for up to ``bindingTimeout``); the allocator never selects devices with binding conditions.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import numpy as np
import orjson

from scheduler.config.duration import parse_duration
from scheduler.framework import (
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    MaskedStatuses,
    NodeInfo,
    NodeScore,
    PodInfo,
    PostFilterCall,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    as_subset,
)
from scheduler.framework.listers import WatchedLister
from scheduler.framework.objects import (
    name_of,
    namespace_of,
    namespaced_name,
    object_meta,
    resources_of,
    uid_of,
)
from scheduler.framework.objects_resource import (
    allocation_results,
    claim_requests,
    claim_reserved_for,
    claim_status,
    device_class_spec,
)
from scheduler.plugins import names
from scheduler.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationMemo,
    AllocationTimeout,
    Allocator,
    DeviceMatchCache,
    FailedOnNode,
    NodeView,
    PoolCache,
    TaintedSlices,
)
from scheduler.plugins.dynamicresources.cel import CelCache
from scheduler.plugins.dynamicresources.claims import (
    FINALIZER,
    AllocatedDevicesMemo,
    AllocatedDevicesTracker,
    ClaimError,
    InFlightClaims,
    all_allocated_devices,
    allocation_of,
    can_be_reserved,
    is_reserved_for_pod,
    pod_claims,
    unusable_for_binding,
)
from scheduler.plugins.dynamicresources.fastpath import Demand, DeviceTable, FastFilter, compile_demand
from scheduler.plugins.helper.args import ArgsReader
from scheduler.plugins.helper.normalize import default_normalize_score, default_normalize_score_array
from scheduler.util.nodeselector import NodeSelector, SelectorError, parse_node_selector
from scheduler.util.resource_names import IMPLICIT_EXTENDED_PREFIX

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
STATE_KEY = "PreFilter" + names.DYNAMIC_RESOURCES
# resourceapi.FirstAvailableDeviceRequestMaxSize
FIRST_AVAILABLE_MAX_SIZE = 8
DEFAULT_FILTER_TIMEOUT = 10.0
DEFAULT_BINDING_TIMEOUT = 600.0
CONFLICT_RETRIES = 5  # retry.DefaultRetry's steps
CLAIMS_PATH = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}"


def unschedulable(reason: str) -> Status:
    """Upstream's statusUnschedulable: always UnschedulableAndUnresolvable; events requeue the pod."""
    return Status.unschedulable(reason, resolvable=False)


@dataclass(slots=True)
class _State:
    claims: list[Obj]
    # Per claim: the node selector of an allocated claim.
    available_on: list[NodeSelector | None]
    allocator: Allocator | None = None
    # node name -> allocation results, one per claim to allocate (in claim order).
    node_allocations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # claim index -> allocation chosen at Reserve.
    allocations: dict[int, Obj] = field(default_factory=dict)
    # The claims Filter allocates (unallocated at PreFilter), read per node.
    unallocated: list[Obj] = field(default_factory=list)
    # Whether some request lists alternatives: only those score above 0.
    first_available: bool = False
    # Indices of allocated claims whose node selector ruled out some node Filter reached, or that are
    # unusable for binding on any node Filter reached (upstream's unavailableClaims): the claims
    # PostFilter may deallocate.
    unavailable: set[int] = field(default_factory=set)
    # Indices of allocated claims whose device binding failed or timed out (DRADeviceBindingConditions),
    # judged once at PreFilter: the fact does not depend on the node.
    unusable: list[int] = field(default_factory=list)
    # The counting Filter for a window of nodes (fastpath.py), when the claims' shape allows it.
    fast: FastFilter | None = None

    def allocations_on(self, node_name: str) -> list[dict[str, Any]] | None:
        """The allocation results Filter found on the node; after the counting Filter, which keeps
        none, the allocator's (the same search Filter would have run, on the same state)."""
        found = self.node_allocations.get(node_name)
        if found is None and self.fast is not None and self.allocator is not None:
            # The counting Filter only runs with node-local slices: the node's labels play no part.
            found = self.allocator.allocate(NodeView(node_name, {}), self.unallocated)
            if found is not None:
                self.node_allocations[node_name] = found
        return found

    def to_allocate(self) -> list[tuple[int, Obj]]:
        return [(i, c) for i, c in enumerate(self.claims) if allocation_of(c) is None]


class DynamicResources:
    """PreEnqueue, PreFilter, Filter, Score, Reserve/Unreserve and PreBind for ResourceClaims."""

    name = names.DYNAMIC_RESOURCES

    # A signed pod has no claims: PreFilter writes the empty state and skips.
    pre_state_from_signature = True
    sign_reads_spec_only = True

    def sign(self, pod: PodInfo) -> Hashable | None:
        """Claims depend on allocation state beyond the node (upstream declines them too); extended
        resources may be backed by device classes, so those pods decline as well."""
        if pod.spec.get("resourceClaims") or pod.requests.scalar:
            return None
        return ()

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        reader = ArgsReader(self.name)
        top = reader.top(args, "DynamicResourcesArgs", ("filterTimeout", "bindingTimeout"))
        self.filter_timeout = self._duration(reader, top, "filterTimeout", DEFAULT_FILTER_TIMEOUT)
        if self.filter_timeout < 0:
            raise reader.error("filterTimeout", "must be zero or positive")
        self.binding_timeout = self._duration(reader, top, "bindingTimeout", DEFAULT_BINDING_TIMEOUT)
        if self.binding_timeout < 1:
            raise reader.error("bindingTimeout", "must be greater than or equal to 1 second")
        if handle is None:
            raise ValueError("DynamicResources needs a framework handle")
        self.handle = handle
        self.claims = handle.lister(RESOURCE_CLAIMS)
        self.slices = handle.lister(RESOURCE_SLICES)
        self.classes = handle.lister(DEVICE_CLASSES)
        # DRADeviceTaintRules (GA and on since v1.37): their taints count as the devices' own.
        self.taint_rules = handle.lister(DEVICE_TAINT_RULES)
        self.tainted = TaintedSlices()
        self.in_flight = InFlightClaims()
        self.matches = DeviceMatchCache(CelCache())
        # Per-pod work that only changes when claims or slices do (see each class).
        self.allocated_memo = AllocatedDevicesMemo()
        # Followed from the claim informer's events where the lister offers them (it always does in
        # the scheduler): then a pod does not walk every claim.
        self.allocated_tracker: AllocatedDevicesTracker | None = None
        if isinstance(self.claims, WatchedLister):
            self.allocated_tracker = AllocatedDevicesTracker(interest=self.in_flight.pending)
            self.claims.add_event_handler(self.allocated_tracker)
        self.pool_cache = PoolCache()
        self.allocation_memo = AllocationMemo()
        self.device_table: DeviceTable | None = None
        self._demands: dict[Hashable, tuple[Any, Demand | None]] = {}
        self._unreserve_pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @staticmethod
    def _duration(reader: ArgsReader, top: Mapping[str, Any], key: str, default: float) -> float:
        raw = top.get(key)
        if raw is None:
            return default
        try:
            return parse_duration(reader.string(raw, key))
        except ValueError as err:
            raise reader.error(key, str(err)) from err

    # --- queueing hints ---------------------------------------------------------------------------
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        node_actions = ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeAllocatable
        return [
            ClusterEventWithHint(ClusterEvent(Resource.Node, node_actions)),
            ClusterEventWithHint(
                ClusterEvent(Resource.ResourceClaim, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_claim_change,
            ),
            # Not in upstream's list. kube-controller-manager deallocates a claim (an update) before it
            # goes, but an informer that relists after a broken watch folds that update into the delete
            # of a still-allocated claim; a pod waiting for the device would then wait for the
            # 5-minute flush.
            ClusterEventWithHint(
                ClusterEvent(Resource.ResourceClaim, ActionType.Delete),
                self.is_schedulable_after_claim_deleted,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.TargetPod, ActionType.UpdatePodGeneratedResourceClaim),
                self.is_schedulable_after_target_pod_update,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.DeviceClass, ActionType.Add | ActionType.Update)),
            ClusterEventWithHint(ClusterEvent(Resource.ResourceSlice, ActionType.Add | ActionType.Update)),
        ]

    def is_schedulable_after_claim_change(self, pod: Obj, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterClaimChange``: a claim of the pod created or its status changed, or any
        claim deallocated (its devices are free again)."""
        if not isinstance(new, Mapping):
            return QueueingHint.Queue
        try:
            info = PodInfo(pod)
            claims = pod_claims(info, self.claims)
        except (ClaimError, ValueError):
            return QueueingHint.Skip
        if isinstance(old, Mapping) and allocation_of(old) is not None and allocation_of(new) is None:
            return QueueingHint.Queue
        if not any(uid_of(c) == uid_of(new) for c in claims):
            return QueueingHint.Skip
        if old is None:
            return QueueingHint.Queue
        if claim_status(old) == claim_status(new):
            return QueueingHint.Skip
        return QueueingHint.Queue

    def is_schedulable_after_claim_deleted(self, pod: Obj, old: Any, new: Any) -> QueueingHint:
        """A deleted claim that held devices freed them."""
        if isinstance(old, Mapping) and allocation_of(old) is not None:
            return QueueingHint.Queue
        return QueueingHint.Skip

    def is_schedulable_after_target_pod_update(self, pod: Obj, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterTargetPodUpdate``: the updated pod's claims are all there now. As v1.37.2,
        the updated pod's uid is not compared with the rejected pod's (v1.36 skipped another pod)."""
        if not isinstance(new, Mapping):
            return QueueingHint.Queue  # upstream: an unexpected object queues the pod
        try:
            pod_claims(PodInfo(new), self.claims)
        except (ClaimError, ValueError):
            return QueueingHint.Skip
        return QueueingHint.Queue

    # --- PostFilter --------------------------------------------------------------------------------
    def post_filter_call(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None] | PostFilterCall:
        """Upstream's PostFilter, deciding on the loop: an allocated claim that ruled out some node at
        Filter (node selector, or device binding failed / timed out) and is reserved for no pod (or for
        this pod alone) is deallocated, so the next attempt may allocate it elsewhere. The write
        (``status`` with ``allocation``, ``reservedFor`` and ``devices`` cleared, through the status
        subresource with the informer's resourceVersion, as upstream's UpdateStatus) is returned as a
        call for a worker thread; the claim's update then arrives through the informer and requeues the
        pod (``is_schedulable_after_claim_change``).

        Runs before DefaultPreemption. Since v1.37 only a deallocation gives a reason ("deallocation of
        ResourceClaim completed"); the other outcomes are Unschedulable without one, so they add nothing
        to the FailedScheduling message.
        """
        del node_statuses
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            # An earlier PreFilter plugin rejected the pod: upstream's state read fails (ErrNotFound),
            # which ends PostFilter with that error before preemption.
            return None, Status.as_error("not found")
        if not s.claims:
            # v1.37: no reason (v1.36 said "no new claims to deallocate", which led every PostFilter
            # part of a FailedScheduling message).
            return None, Status.unschedulable()
        # Upstream ranges over a set (random order) and takes the first claim that qualifies; any
        # choice is valid, this one is the first in the pod's claim order.
        for index in sorted(s.unavailable):
            claim = s.claims[index]
            reserved = claim_reserved_for(claim)
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                return self._deallocation(claim)
        # v1.37: no reason (v1.36: "still not schedulable").
        return None, Status.unschedulable()

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None]:
        """``post_filter_call`` with its write made here and now (blocking). The scheduling cycle
        never calls this: it runs the write in a worker thread (``BlockingPostFilterPlugin``)."""
        outcome = self.post_filter_call(state, pod, node_statuses)
        return outcome if isinstance(outcome, tuple) else outcome()

    def _deallocation(self, claim: Obj) -> PostFilterCall:
        namespace, name = namespace_of(claim), name_of(claim)
        path = CLAIMS_PATH.format(ns=quote(namespace), name=quote(name))
        body: dict[str, Any] = copy.deepcopy(dict(claim))
        status: dict[str, Any] = dict(claim_status(body))
        body["status"] = status
        for key in ("reservedFor", "allocation", "devices"):
            status.pop(key, None)

        def deallocate() -> tuple[str | None, Status | None]:
            # A worker thread: the API call only, no plugin or core state.
            try:
                self.handle.api_request("PUT", path + "/status", body)
            except Exception as err:
                log.info("deallocation of resourceclaim %s/%s failed: %s", namespace, name, err)
                return None, Status(Code.Error, [_api_message(err)], error=err)
            log.info("deallocated resourceclaim %s/%s", namespace, name)
            return None, Status.unschedulable("deallocation of ResourceClaim completed")

        return deallocate

    # --- PreEnqueue / PreFilter -------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod.spec.get("resourceClaims"):
            return None
        try:
            pod_claims(pod, self.claims)
        except ClaimError as err:
            return unschedulable(str(err))
        return None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        # An empty state first, as upstream writes its stateData before anything else: PostFilter
        # tells "PreFilter saw no claims" (empty) from "PreFilter never ran" (none).
        state.write(STATE_KEY, _State(claims=[], available_on=[]))
        guard = self._guard(pod)
        if guard is not None:
            return None, guard
        if not pod.spec.get("resourceClaims"):
            return None, Status.skip()
        try:
            claims = pod_claims(pod, self.claims)
        except ClaimError as err:
            return None, unschedulable(str(err))
        if not claims:
            return None, Status.skip()
        self.in_flight.prune(self.claims, self.allocated_tracker)
        s = _State(claims=claims, available_on=[None] * len(claims))
        to_allocate = 0
        for index, claim in enumerate(claims):
            allocation = allocation_of(claim)
            if allocation is not None:
                if not can_be_reserved(claim) and not is_reserved_for_pod(pod, claim):
                    return None, unschedulable("resourceclaim in use")
                selector = allocation.get("nodeSelector")
                if selector is not None:
                    try:
                        s.available_on[index] = parse_node_selector(selector, "nodeSelector")
                    except SelectorError as err:
                        return None, Status.as_error(err)
                why = unusable_for_binding(claim, self.binding_timeout, self.handle.now())
                if why is not None:
                    log.debug(
                        "resourceclaim %s unusable for pod %s: %s", namespaced_name(claim), pod.key, why
                    )
                    s.unusable.append(index)
                continue
            to_allocate += 1
            if self.in_flight.get(uid_of(claim)) is not None:
                return None, unschedulable(
                    f"resource claim {namespaced_name(claim)} is in the process of being allocated"
                )
            status = self._validate_requests(claim)
            if status is not None:
                return None, status
        s.unallocated = [c for _, c in s.to_allocate()]
        s.first_available = any(
            request.get("firstAvailable") for claim in claims for request in claim_requests(claim)
        )
        if to_allocate:
            slices = self.tainted.patched(self.slices.list(), self.taint_rules.list())
            pools = self.pool_cache.pools_for(slices)
            s.allocator = Allocator(
                allocated=all_allocated_devices(
                    self.allocated_tracker or self.claims.list(), self.in_flight, self.allocated_memo
                ),
                classes=self.classes.get,
                slices=slices,
                matches=self.matches,
                timeout=self.filter_timeout,
                pools=pools,
            )
            if self.pool_cache.caching:
                s.allocator.memo = self.allocation_memo
                s.allocator.memo_context = self._memo_context(s.unallocated)
            if len(s.unallocated) == len(claims):
                s.fast = self._fast_filter(
                    slices, s.unallocated, s.allocator.allocated, s.allocator.memo_context
                )
        state.write(STATE_KEY, s)
        return None, None

    def _fast_filter(
        self,
        slices: Sequence[Obj],
        claims: Sequence[Obj],
        allocated: set[Any],
        context: tuple[Hashable, Any] | None,
    ) -> FastFilter | None:
        """The counting Filter for these claims (every claim of the pod is to be allocated), or None
        when the allocator must judge every node. ``context``: the claims' specs and classes (see
        ``_memo_context``), under which their demand is kept: pods of one workload share it."""
        table = self.device_table
        if table is None or table.key != tuple(map(id, slices)):
            table = self.device_table = DeviceTable(slices)
        if not table.usable:
            return None
        if context is None:
            demand = compile_demand(claims, self.classes.get, self.matches)
        else:
            kept = self._demands.get(context[0])
            if kept is None:
                if len(self._demands) >= 1024:
                    self._demands.clear()
                demand = compile_demand(claims, self.classes.get, self.matches)
                # The classes are held with the demand: the key names their identities.
                self._demands[context[0]] = (context[1], demand)
            else:
                demand = kept[1]
        if demand is None:
            return None
        if self.allocated_tracker is not None:
            # The same state as ``allocated`` (tracker plus in-flight), without reading all of it.
            free = table.free_following(self.allocated_tracker, self.in_flight.devices())
        else:
            free = table.free(allocated)
        return FastFilter(table, demand, free, self.matches)

    def _memo_context(self, claims: Sequence[Obj]) -> tuple[Hashable, Any] | None:
        """What, besides the node's pools and free devices, an allocation of ``claims`` depends on:
        their specs, and the device classes they name (by identity, held alongside)."""
        names: list[str] = []
        for claim in claims:
            for request in claim_requests(claim):
                exactly = request.get("exactly")
                names.append(str(exactly.get("deviceClassName") or "") if exactly else "")
                for sub in request.get("firstAvailable") or ():
                    names.append(str(sub.get("deviceClassName") or ""))
        classes = tuple(self.classes.get(name) for name in names)
        try:
            specs = orjson.dumps([c.get("spec") for c in claims], option=orjson.OPT_SORT_KEYS)
        except (orjson.JSONEncodeError, TypeError):
            return None
        return (specs, tuple(map(id, classes))), classes

    def _validate_requests(self, claim: Obj) -> Status | None:
        for request in claim_requests(claim):
            name = request.get("name", "")
            if request.get("exactly") is not None:
                status = self._validate_class(request["exactly"].get("deviceClassName", ""), name)
            elif request.get("firstAvailable"):
                status = None
                for sub in request["firstAvailable"]:
                    status = status or self._validate_class(
                        sub.get("deviceClassName", ""), f"{name}/{sub.get('name', '')}"
                    )
            else:
                status = unschedulable(
                    f"resource claim {namespaced_name(claim)}, request {name}: unknown request type"
                )
            if status is not None:
                return status
        return None

    def _validate_class(self, class_name: str, request_name: str) -> Status | None:
        if not class_name:
            return Status.as_error(f"request {request_name}: unsupported request type")
        if self.classes.get(class_name) is None:
            return unschedulable(f"request {request_name}: device class {class_name} does not exist")
        return None

    def _guard(self, pod: PodInfo) -> Status | None:
        """Fail closed on the DRA features this build does not implement."""
        for entry in pod.spec.get("resourceClaims") or ():
            if entry.get("podGroupResourceClaimName") or entry.get("podGroupResourceClaimTemplateName"):
                return unschedulable(
                    "pod uses PodGroup resource claims (DRAWorkloadResourceClaims), which py-scheduler "
                    "does not support yet (DynamicResources)"
                )
        backed = self._dra_extended_resources(pod)
        if backed:
            resource, class_name = backed
            return unschedulable(
                f"pod requests extended resource {resource} backed by DeviceClass {class_name} "
                "(DRAExtendedResource), which py-scheduler does not support yet (DynamicResources)"
            )
        return None

    def _dra_extended_resources(self, pod: PodInfo) -> tuple[str, str] | None:
        requested: set[str] = set()
        for key in ("containers", "initContainers"):
            for container in pod.spec.get(key) or ():
                resources = resources_of(container)
                requested.update(resources.get("requests") or ())  # a dict adds its keys
                requested.update(resources.get("limits") or ())
        requested = {r for r in requested if "/" in r and not r.startswith(("kubernetes.io/", "hugepages-"))}
        if not requested:
            return None
        for resource in sorted(requested):
            # Only a class that exists backs its implicit name (upstream's DeviceClassResolver): without
            # one, the name is a plain extended resource, which NodeResourcesFit judges.
            class_name = resource.removeprefix(IMPLICIT_EXTENDED_PREFIX)
            if class_name != resource and self.classes.get(class_name) is not None:
                return resource, class_name
        for device_class in self.classes.list():
            declared = device_class_spec(device_class).get("extendedResourceName")
            if declared and declared in requested:
                return declared, name_of(device_class)
        return None

    # --- Filter / Score ---------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return None
        # As upstream: the claims this node rules out are noted first (its node selector does not
        # match, or, where it does, the claim's device binding failed or timed out), the allocator still
        # runs (its failure is the node's reason, and then nothing is remembered), and only then does an
        # unavailable claim reject the node and become a candidate for PostFilter.
        unavailable = [
            index
            for index, selector in enumerate(s.available_on)
            if selector is not None and not selector.matches(node.labels, node.name)
        ]
        if s.unusable:
            unavailable.extend(i for i in s.unusable if i not in unavailable)
        results: list[dict[str, Any]] | None = None
        if s.allocator is not None:
            claims = s.unallocated
            try:
                results = s.allocator.allocate(NodeView(node.name, node.labels), claims)
            except AllocationTimeout:
                return Status.as_error(f"node {node.name}: timed out trying to allocate devices")
            except FailedOnNode as err:
                return unschedulable(str(err))
            except AllocationError as err:
                return Status.as_error(err)
            if results is None or len(results) != len(claims):
                return unschedulable("cannot allocate all claims")
        if unavailable:
            s.unavailable.update(unavailable)
            return unschedulable("resourceclaim not available on the node")
        if results is not None:
            s.node_allocations[node.name] = results
        return None

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]:
        """``filter`` for a window of nodes: counted (fastpath.py) where the claims' shape allows it,
        the allocator's search node by node elsewhere."""
        s: _State | None = state.get(STATE_KEY)
        if s is None or s.fast is None or as_subset(nodes) is None:
            return [self.filter(state, pod, node) for node in nodes]
        infos = list(nodes)
        fits, to_allocator = s.fast.positions([info.name for info in infos])
        statuses: dict[int, Status] = {}
        for index in np.flatnonzero(to_allocator).tolist():
            status = self.filter(state, pod, infos[index])
            fits[index] = status is None
            if status is not None:
                statuses[index] = status
        full = unschedulable("cannot allocate all claims")
        return MaskedStatuses(fits, lambda index: statuses.get(index, full))

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        """``computeScore``: FirstAvailableDeviceRequestMaxSize - i for each chosen subrequest i."""
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return 0, None
        allocations = s.node_allocations.get(node.name)
        if allocations is None:
            return 0, None
        score = 0
        pending = iter(allocations)
        for claim in s.claims:
            allocation = allocation_of(claim) or next(pending, None)
            if allocation is None:
                return 0, Status.as_error("number of allocations is smaller than number of claims")
            chosen = {
                r.get("request", "") for r in allocation_results(allocation) if "/" in r.get("request", "")
            }
            for request in claim_requests(claim):
                for i, sub in enumerate(request.get("firstAvailable") or ()):
                    if f"{request.get('name', '')}/{sub.get('name', '')}" in chosen:
                        score += FIRST_AVAILABLE_MAX_SIZE - i
        return score, None

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(100, False, scores)
        return None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> IntArray:
        """Score for many nodes. A pod without claims scores 0 everywhere: one array instead of a
        Python call per node (every pod of the basic workload used to pay ~400 of them)."""
        s: _State | None = state.get(STATE_KEY)
        if s is None or not s.first_available:
            # Without firstAvailable alternatives every node Filter passed scores 0 (``score``).
            return np.zeros(len(nodes), dtype=np.int64)
        return np.fromiter(
            (self.score(state, pod, node)[0] for node in nodes), dtype=np.int64, count=len(nodes)
        )

    def normalize_score_array(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        s: _State | None = state.get(STATE_KEY)
        if s is None or not s.claims:
            # Without claims every node scored 0 (``score``); normalising zeros gives them back.
            return scores
        return default_normalize_score_array(100, False, scores)

    # --- Reserve / Unreserve ----------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: _State | None = state.get(STATE_KEY)
        if s is None or s.allocator is None:
            return None
        try:
            allocations = s.allocations_on(node_name)
        except AllocationError as err:
            return Status.as_error(err)
        to_allocate = s.to_allocate()
        if not allocations:
            return Status.as_error("claim allocation not found for node")
        if len(allocations) != len(to_allocate):
            return Status.as_error(
                f"internal error, have {len(allocations)} allocations, {len(to_allocate)} claims to allocate"
            )
        for (index, claim), allocation in zip(to_allocate, allocations, strict=True):
            s.allocations[index] = allocation
            self.in_flight.add(claim, allocation)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return
        for claim in s.claims:
            self.in_flight.remove(uid_of(claim))
            if allocation_of(claim) is not None and is_reserved_for_pod(pod, claim):
                self._submit_unreserve(claim, pod.uid)

    def _submit_unreserve(self, claim: Obj, pod_uid: str) -> None:
        # Unreserve runs on the event loop, which must not block on the API.
        with self._pool_lock:
            if self._unreserve_pool is None:
                self._unreserve_pool = ThreadPoolExecutor(1, thread_name_prefix="dra-unreserve")
        meta = object_meta(claim)
        patch = {
            "metadata": {"uid": meta.get("uid")},
            "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]},
        }
        path = CLAIMS_PATH.format(ns=quote(meta.get("namespace", "")), name=quote(meta.get("name", "")))

        def run() -> None:
            try:
                self.handle.api_request(
                    "PATCH", path + "/status", patch, content_type="application/strategic-merge-patch+json"
                )
            except Exception:
                log.exception(
                    "unreserve of resourceclaim %s/%s failed", meta.get("namespace"), meta.get("name")
                )

        self._unreserve_pool.submit(run)

    # --- PreBind (binding thread) -----------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Upstream's PreBindPreFlight: Success when the pod has claims (PreBind writes them), else Skip."""
        s: _State | None = state.get(STATE_KEY)
        # No state: PreFilter did not run for this cycle (as pre_bind, nothing to write).
        return None if s is not None and s.claims else Status.skip()

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return None
        for index, claim in enumerate(s.claims):
            if is_reserved_for_pod(pod, claim):
                continue
            try:
                s.claims[index] = self._bind_claim(claim, s.allocations.get(index), pod)
            except Exception as err:
                self.in_flight.remove(uid_of(claim))
                return Status(Code.Error, [str(err)], error=err)
            self.in_flight.written(uid_of(claim), s.claims[index])
        return None

    def _bind_claim(self, claim: Obj, allocation: Obj | None, pod: PodInfo) -> Obj:
        """``bindClaim``: finalizer, then allocation and reservedFor via the status subresource."""
        namespace, name = namespace_of(claim), name_of(claim)
        path = CLAIMS_PATH.format(ns=quote(namespace), name=quote(name))
        binding = {"resource": "pods", "name": pod.name, "uid": pod.uid}
        current: dict[str, Any] = copy.deepcopy(dict(claim))
        for attempt in range(CONFLICT_RETRIES):
            if attempt:
                current = dict(self.handle.api_request("GET", path))
            cur_meta = object_meta(current)
            if cur_meta.get("deletionTimestamp"):
                raise RuntimeError(f"claim {namespace}/{name} got deleted in the meantime")
            status = current.setdefault("status", {})
            if allocation is not None:
                if status.get("allocation") is not None:
                    raise RuntimeError(f"claim {namespace}/{name} got allocated elsewhere in the meantime")
                if FINALIZER not in (cur_meta.get("finalizers") or ()):
                    current["metadata"] = {
                        **cur_meta,
                        "finalizers": [*(cur_meta.get("finalizers") or ()), FINALIZER],
                    }
                    try:
                        current = dict(self.handle.api_request("PUT", path, current))
                    except Exception as err:
                        if _is_conflict(err):
                            continue
                        raise RuntimeError(f"add finalizer to claim {namespace}/{name}: {err}") from err
                    status = current.setdefault("status", {})
                status["allocation"] = copy.deepcopy(dict(allocation))
            status["reservedFor"] = [*(status.get("reservedFor") or ()), binding]
            try:
                return self.handle.api_request("PUT", path + "/status", current)
            except Exception as err:
                if _is_conflict(err):
                    continue
                what = "add allocation and reservation to" if allocation is not None else "add reservation to"
                raise RuntimeError(f"{what} claim {namespace}/{name}: {err}") from err
        raise RuntimeError(f"claim {namespace}/{name}: too many conflicts updating its status")


def _api_message(err: BaseException) -> str:
    """The API's message, as upstream's err.Error() (ApiError prefixes the HTTP status)."""
    status = getattr(err, "status", None)
    return str(err).removeprefix(f"{status}: ") if status else str(err) or type(err).__name__


def _is_conflict(err: BaseException) -> bool:
    return getattr(err, "status", None) == 409
