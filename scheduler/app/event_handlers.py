"""Informer events -> scheduling queue and cache (``pkg/scheduler/eventhandlers.go``).

Unassigned pods of our profiles go to the queue. Assigned pods of any scheduler and nodes go to the
cache, and then wake the pods whose rejecting plugins care about that kind of change.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from informers import DeletedFinalStateUnknown, ResourceSpec, SharedInformer
from scheduler import metrics
from scheduler.cache import SchedulerCache
from scheduler.framework.objects import (
    NodeStatus,
    namespaced_name,
    node_spec,
    node_status,
    nominated_node_name,
    object_meta,
    pod_spec,
    scheduler_name_of,
)
from scheduling_queue import EVENT_ASSIGNED_POD_DELETE, EVENT_UNSCHEDULED_POD_ADD, SchedulingQueue
from scheduling_queue.pod_order import pod_priority
from scheduling_queue.types import ActionType, ClusterEvent, Resource

log = logging.getLogger(__name__)

NODE_ADD = ClusterEvent(Resource.Node, ActionType.Add, "NodeAdd")

Obj = Mapping[str, Any]


def _assigned(pod: Obj) -> bool:
    return bool(pod_spec(pod).get("nodeName"))


def _lower_or_equal_priority(pod: Obj) -> Callable[[Obj], bool]:
    """Upstream's getLEPriorityPreCheck: only pods a nominated ``pod`` could have held back (a nominated
    pod counts on its node for pods of lower or equal priority)."""
    priority = pod_priority(pod)
    return lambda other: pod_priority(other) <= priority


def _deletion_started(old: Obj, new: Obj) -> bool:
    return bool(object_meta(new).get("deletionTimestamp")) and not object_meta(old).get("deletionTimestamp")


def node_update_actions(old: Obj, new: Obj) -> ActionType:
    """Which scheduling-relevant properties changed (upstream's nodeSchedulingPropertiesChange)."""
    actions = ActionType(0)
    old_status, new_status = node_status(old), node_status(new)
    old_spec, new_spec = node_spec(old), node_spec(new)
    old_meta, new_meta = object_meta(old), object_meta(new)
    if old_status.get("allocatable") != new_status.get("allocatable"):
        actions |= ActionType.UpdateNodeAllocatable
    if old_meta.get("labels") != new_meta.get("labels"):
        actions |= ActionType.UpdateNodeLabel
    if old_spec.get("taints") != new_spec.get("taints") or bool(old_spec.get("unschedulable")) != bool(
        new_spec.get("unschedulable")
    ):
        actions |= ActionType.UpdateNodeTaint
    if _conditions(old_status) != _conditions(new_status):
        actions |= ActionType.UpdateNodeCondition
    if old_meta.get("annotations") != new_meta.get("annotations"):
        actions |= ActionType.UpdateNodeAnnotation
    if (old_status.get("declaredFeatures") or []) != (new_status.get("declaredFeatures") or []):
        actions |= ActionType.UpdateNodeDeclaredFeature
    return actions


def _conditions(status: NodeStatus) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in status.get("conditions") or ()}


class EventHandlers:
    def __init__(
        self,
        *,
        queue: SchedulingQueue,
        cache: SchedulerCache,
        profiles: Collection[str],
        reject_deleted_waiting_pod: Callable[[str, str], bool] | None = None,
        wakes_on_add: Callable[[Obj], bool] | None = None,
        on_pod_bound: Callable[[Obj], None] | None = None,
        on_pod_deleted: Callable[[Obj], None] | None = None,
        on_node_deleted: Callable[[Obj], None] | None = None,
    ) -> None:
        # A node deleted: bindings to it not yet sent are not sent (``Scheduler.node_deleted``).
        self.on_node_deleted = on_node_deleted
        # A pod seen bound (added assigned, or newly assigned) and any pod deleted: they settle a
        # Binding whose outcome was unknown (``Scheduler.pod_bound``, ``Scheduler.pod_deleted``).
        self.on_pod_bound = on_pod_bound
        self.on_pod_deleted = on_pod_deleted
        # (key, uid) of an assumed pod whose deletion started: rejects it if it waits at Permit and
        # says whether it did (upstream's RejectWaitingPod; ``Scheduler.reject_deleted_waiting_pod``).
        self.reject_deleted_waiting_pod = reject_deleted_waiting_pod
        # New pending pods whose add is a cluster event for the others (UnscheduledPod/Add): a gang's
        # last member releases the members PreEnqueue holds. Others' adds stay O(1), as upstream's.
        self.wakes_on_add = wakes_on_add
        self.queue = queue
        self.cache = cache
        self.profiles = frozenset(profiles)

    def responsible_for(self, pod: Obj) -> bool:
        return scheduler_name_of(pod) in self.profiles

    # --- pods ---------------------------------------------------------------------------------
    def on_pod_add(self, pod: Obj, is_initial_list: bool = False) -> None:
        start = time.perf_counter()
        if _assigned(pod):
            self.cache.add_pod(pod)
            self.queue.assigned_pod_added(pod)
            if self.on_pod_bound is not None:
                self.on_pod_bound(pod)
            metrics.observe_event_handling("AssignedPodAdd", time.perf_counter() - start)
        elif self.responsible_for(pod):
            self.queue.add(pod)
            if self.wakes_on_add is not None and self.wakes_on_add(pod):
                self.queue.move_all_to_active_or_backoff(EVENT_UNSCHEDULED_POD_ADD, None, pod)
            metrics.observe_event_handling("UnscheduledPodAdd", time.perf_counter() - start)

    def on_pod_update(self, old: Obj, new: Obj) -> None:
        start = time.perf_counter()
        if _assigned(new):
            if not _assigned(old):
                # Bound, by us or by someone else: it leaves the queue and counts on its node.
                if self.responsible_for(old):
                    self.queue.delete(old)
                self.cache.add_pod(new)
                self.queue.assigned_pod_added(new)
                if self.on_pod_bound is not None:
                    self.on_pod_bound(new)
            else:
                self.cache.update_pod(old, new)
                self.queue.assigned_pod_updated(old, new)
            metrics.observe_event_handling("AssignedPodUpdate", time.perf_counter() - start)
        elif self.responsible_for(new):
            assumed = self._assumed_same_pod(new)
            key = namespaced_name(new)
            if not assumed or self.queue.is_in_flight(key):
                # Upstream ignores every update of an assumed pod. Here an update during the attempt
                # still reaches the queue: the in-flight record keeps the newest version, which a
                # requeue after a failed bind takes (a deleting one is then skipped, as upstream's
                # requeue of its lister's version is). After the attempt it is ignored: queueing it
                # would add the pod to activeQ as unknown, for a cycle that only finds it assumed.
                self.queue.update(old, new)
            if self.cache.is_assumed(key):
                # The pod counts on its node already, so a nominatedNodeName it carries (ours,
                # published while it binds) must not count twice.
                self.queue.nominator.delete_nominated_pod_if_exists(new)
            if assumed and _deletion_started(old, new):
                self._assumed_pod_deleted(key, object_meta(new).get("uid", ""))
            elif not assumed and nominated_node_name(old) not in ("", nominated_node_name(new)):
                # Upstream's updatePodInSchedulingQueue: the pod no longer holds room on the node it was
                # nominated to, which pods of lower or equal priority saw as taken.
                self.queue.move_all_to_active_or_backoff(
                    EVENT_ASSIGNED_POD_DELETE, old, None, _lower_or_equal_priority(old)
                )
            metrics.observe_event_handling("UnscheduledPodUpdate", time.perf_counter() - start)
        elif self.responsible_for(old):
            # schedulerName changed away from us (rare, but the queue must not keep it).
            self.queue.delete(old)

    def _assumed_same_pod(self, pod: Obj) -> bool:
        """Whether ``pod`` is the pod this scheduler assumed under its name (not a namesake)."""
        key = namespaced_name(pod)
        if not self.cache.is_assumed(key):
            return False
        cached = self.cache.get_pod(key)
        return cached is not None and cached.uid == object_meta(pod).get("uid")

    def _assumed_pod_deleted(self, key: str, uid: str) -> None:
        """An assumed pod's deletion started, or it is gone (upstream's handleAssumedPodDeletion). Its
        room is freed now, not when its binding cycle ends: waiting at Permit, it is rejected and the
        binding cycle releases it (Unreserve, forget); binding (PreBind, Bind), it leaves the cache
        here, and the binding cycle, which goes on and will most likely fail, finds nothing to forget.
        Pods rejected for want of that room get the AssignedPodDelete event. This handler does not
        queue the pod itself; a Permit rejection's failure path requeues it, as upstream's does."""
        cached = self.cache.get_pod(key)
        if cached is None:
            return
        rejected = self.reject_deleted_waiting_pod is not None and self.reject_deleted_waiting_pod(key, uid)
        if not rejected:
            self.cache.forget_pod(key, uid)
        self.queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, cached.pod, None)

    def on_pod_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        start = time.perf_counter()
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if self.on_pod_deleted is not None:
            self.on_pod_deleted(pod)
        if _assigned(pod):
            self.cache.remove_pod(pod)
            self.queue.assigned_pod_deleted(pod)
            metrics.observe_event_handling("AssignedPodDelete", time.perf_counter() - start)
        elif self.responsible_for(pod):
            self.queue.delete(pod)
            if self._assumed_same_pod(pod):
                self._assumed_pod_deleted(namespaced_name(pod), object_meta(pod).get("uid", ""))
            elif nominated_node_name(pod):
                # Upstream's deletePodFromSchedulingQueue: a deleted nominated pod frees the room pods of
                # lower or equal priority saw as taken on its node.
                self.queue.move_all_to_active_or_backoff(
                    EVENT_ASSIGNED_POD_DELETE, pod, None, _lower_or_equal_priority(pod)
                )
            metrics.observe_event_handling("UnscheduledPodDelete", time.perf_counter() - start)

    # --- nodes --------------------------------------------------------------------------------
    def on_node_add(self, node: Obj, is_initial_list: bool = False) -> None:
        start = time.perf_counter()
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff(NODE_ADD, None, node)
        metrics.observe_event_handling("NodeAdd", time.perf_counter() - start)

    def on_node_update(self, old: Obj, new: Obj) -> None:
        start = time.perf_counter()
        self.cache.update_node(old, new)
        actions = node_update_actions(old, new)
        if actions:
            label = "NodeUpdate" if bin(int(actions)).count("1") > 1 else f"Node{ActionType(actions).name}"
            self.queue.move_all_to_active_or_backoff(ClusterEvent(Resource.Node, actions, label), old, new)
        metrics.observe_event_handling("NodeUpdate", time.perf_counter() - start)

    def on_node_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.cache.remove_node(node)
        if self.on_node_deleted is not None:
            self.on_node_deleted(node)

    # --- kinds plugins list -------------------------------------------------------------------
    def watch_other_kind(self, spec: ResourceSpec, informer: SharedInformer) -> None:
        """Changes of a kind a plugin lists wake the pods whose rejecting plugins registered for it.

        Kinds with no upstream event resource (Namespace, Service, ReplicaSet...) only feed listers:
        upstream's plugins register no events for them either.
        """
        if spec.kind == "DeviceTaintRule":
            self._watch_taint_rules(informer)
            return
        resource = _EVENT_RESOURCES_BY_NAME.get(spec.name) or _EVENT_RESOURCES.get(spec.kind)
        if resource is None:
            return
        add = ClusterEvent(resource, ActionType.Add)
        update = ClusterEvent(resource, ActionType.Update)
        delete = ClusterEvent(resource, ActionType.Delete)

        def on_add(obj: Obj, is_initial_list: bool = False) -> None:
            self.queue.move_all_to_active_or_backoff(add, None, obj)

        def on_update(old: Obj, new: Obj) -> None:
            self.queue.move_all_to_active_or_backoff(update, old, new)

        def on_delete(obj: Obj | DeletedFinalStateUnknown) -> None:
            gone = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            self.queue.move_all_to_active_or_backoff(delete, gone, None)

        informer.add_event_handler(on_add=on_add, on_update=on_update, on_delete=on_delete)

    def _watch_taint_rules(self, informer: SharedInformer) -> None:
        """Upstream's ResourceSlice tracker turns a DeviceTaintRule's change into updates of the slices
        it patches: here any rule change is a ResourceSlice update."""
        slice_update = ClusterEvent(Resource.ResourceSlice, ActionType.Update)

        def on_add(obj: Obj, is_initial_list: bool = False) -> None:
            self.queue.move_all_to_active_or_backoff(slice_update, None, None)

        def on_update(old: Obj, new: Obj) -> None:
            self.queue.move_all_to_active_or_backoff(slice_update, None, None)

        def on_delete(obj: Obj | DeletedFinalStateUnknown) -> None:
            self.queue.move_all_to_active_or_backoff(slice_update, None, None)

        informer.add_event_handler(on_add=on_add, on_update=on_update, on_delete=on_delete)


# API kind -> the event resource upstream's plugins register for (framework.EventResource).
# DeviceTaintRule is not among them: see ``_watch_taint_rules``.
_EVENT_RESOURCES: dict[str, Resource] = {
    "PersistentVolume": Resource.PersistentVolume,
    "PersistentVolumeClaim": Resource.PersistentVolumeClaim,
    "StorageClass": Resource.StorageClass,
    "CSINode": Resource.CSINode,
    "CSIDriver": Resource.CSIDriver,
    "CSIStorageCapacity": Resource.CSIStorageCapacity,
    "VolumeAttachment": Resource.VolumeAttachment,
    "ResourceClaim": Resource.ResourceClaim,
    "ResourceSlice": Resource.ResourceSlice,
    "DeviceClass": Resource.DeviceClass,
}
# Kinds whose name is not unique across groups (two PodGroups), by ``plural.group``.
_EVENT_RESOURCES_BY_NAME: dict[str, Resource] = {
    "podgroups.scheduling.x-k8s.io": Resource.PodGroup,
    "elasticquotas.scheduling.x-k8s.io": Resource.ElasticQuota,
    "noderesourcetopologies.topology.node.k8s.io": Resource.NodeResourceTopology,
    "podgroups.scheduling.k8s.io": Resource.WorkloadPodGroup,
}
