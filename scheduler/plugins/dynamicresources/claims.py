"""Which claims a pod uses, and which devices are taken (``dynamic-resource-allocation/resourceclaim``,
``pkg/scheduler/framework/plugins/dynamicresources/allocateddevices.go`` and ``dra_manager.go``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from informers.objects import revision
from scheduler.framework import Lister, PodInfo, object_meta, pod_status
from scheduler.framework.objects import uid_of
from scheduler.framework.objects_resource import (
    AllocationResult,
    DeviceRequestAllocationResult,
    allocation_results,
    claim_allocation,
    claim_reserved_for,
    claim_status,
)
from scheduler.plugins.dynamicresources.allocator import DeviceID
from scheduler.util.timestamps import rfc3339_seconds

Obj = Mapping[str, Any]

# resourceapi.ResourceClaimReservedForMaxSize
RESERVED_FOR_MAX_SIZE = 256
# resourceapi.Finalizer
FINALIZER = "resource.kubernetes.io/delete-protection"


class ClaimError(Exception):
    """The pod cannot be scheduled until its claims exist and belong to it (upstream's message)."""


def claim_names(pod: PodInfo) -> list[tuple[str, str | None, bool]]:
    """(pod claim name, ResourceClaim name or None, must check owner) per ``spec.resourceClaims`` entry
    (``resourceclaim.Name``). None: the template generated no claim, nothing to allocate."""
    statuses = {s.get("name"): s for s in pod_status(pod.pod).get("resourceClaimStatuses") or ()}
    result: list[tuple[str, str | None, bool]] = []
    for entry in pod.spec.get("resourceClaims") or ():
        name = entry.get("name", "")
        if entry.get("resourceClaimName"):
            result.append((name, entry["resourceClaimName"], False))
        elif entry.get("resourceClaimTemplateName"):
            status = statuses.get(name)
            if status is None:
                raise ClaimError(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
            result.append((name, status.get("resourceClaimName"), True))
        else:
            raise ClaimError(
                f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{name}": '
                "none of the supported fields are set"
            )
    return result


def pod_claims(pod: PodInfo, claims: Lister) -> list[Obj]:
    """The pod's ResourceClaims in spec order (``foreachPodResourceClaim``); raises ClaimError."""
    result: list[Obj] = []
    for _, name, check_owner in claim_names(pod):
        if name is None:
            continue
        claim = claims.get(name, pod.namespace)
        if claim is None:
            raise ClaimError(f'resourceclaim.resource.k8s.io "{name}" not found')
        meta = object_meta(claim)
        if meta.get("deletionTimestamp"):
            raise ClaimError(f'resourceclaim "{name}" is being deleted')
        if check_owner and not _controlled_by(meta, pod.uid):
            raise ClaimError(
                f"ResourceClaim {pod.namespace}/{name} was not created for Pod {pod.namespace}/{pod.name} "
                "(Pod is not owner)"
            )
        result.append(claim)
    return result


def _controlled_by(meta: Obj, uid: str) -> bool:
    return any(ref.get("controller") and ref.get("uid") == uid for ref in meta.get("ownerReferences") or ())


# The claim's allocation, or None when not allocated (a name the plugin and its tests use).
allocation_of = claim_allocation


def is_reserved_for_pod(pod: PodInfo, claim: Obj) -> bool:
    return any(
        ref.get("uid") == pod.uid and ref.get("resource") == "pods" for ref in claim_reserved_for(claim)
    )


def can_be_reserved(claim: Obj) -> bool:
    return len(claim_reserved_for(claim)) < RESERVED_FOR_MAX_SIZE


class BindingFailed(Exception):
    """A binding failure condition of an allocated device is true (upstream's ErrDeviceBindingFailed)."""


def _device_status(claim: Obj, result: DeviceRequestAllocationResult) -> Mapping[str, Any] | None:
    """``getAllocatedDeviceStatus``: the ``status.devices`` entry of the result's device."""
    key = (result.get("device"), result.get("driver"), result.get("pool"))
    for device in claim_status(claim).get("devices") or ():
        if (device.get("device"), device.get("driver"), device.get("pool")) == key:
            return device
    return None


def _condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or ():
        if condition.get("type") == type_:
            return condition  # type: ignore[no-any-return]
    return None


def is_claim_ready_for_binding(claim: Obj) -> bool:
    """``isClaimReadyForBinding`` (DRADeviceBindingConditions, beta and on in v1.36): True when every
    result with binding conditions has them all true; False while one is pending (a result whose device
    has no status yet, or a binding condition not true), checked result by result and stopping at the
    first pending one, as upstream. Raises BindingFailed when, before that, a binding failure condition
    of a device is true. An unallocated claim is not ready."""
    allocation = allocation_of(claim)
    if allocation is None:
        return False
    for result in allocation_results(allocation):
        if not result.get("bindingConditions"):
            continue
        status = _device_status(claim, result)
        if status is None:
            return False
        for type_ in result.get("bindingFailureConditions") or ():
            failed = _condition(status, type_)
            if failed is not None and failed.get("status") == "True":
                raise BindingFailed(
                    f"claim={object_meta(claim).get('name', '')}, reason={failed.get('reason', '')}, "
                    f'message="{failed.get("message", "")}"'
                )
        for type_ in result.get("bindingConditions") or ():
            condition = _condition(status, type_)
            if condition is None or condition.get("status") != "True":
                return False
    return True


def is_claim_binding_timed_out(claim: Obj, binding_timeout: float, now: float) -> bool:
    """``isClaimTimeout``: the claim was allocated (``allocationTimestamp``) more than
    ``binding_timeout`` seconds before ``now`` and some result carries binding conditions."""
    allocation = allocation_of(claim)
    stamp = allocation.get("allocationTimestamp") if allocation is not None else None
    if allocation is None or not stamp:
        return False
    if not any(r.get("bindingConditions") is not None for r in allocation_results(allocation)):
        return False
    allocated = rfc3339_seconds(stamp)
    if allocated is None:
        return False
    return allocated + binding_timeout < now


def unusable_for_binding(claim: Obj, binding_timeout: float, now: float) -> str | None:
    """Why an allocated claim cannot be used for binding the pod, or None: its device binding failed,
    or its binding conditions are still pending after ``binding_timeout`` (upstream's Filter marks such
    a claim unavailable on the node, so PostFilter may deallocate it)."""
    if allocation_of(claim) is None:
        return None
    try:
        ready = is_claim_ready_for_binding(claim)
    except BindingFailed as err:
        return f"device binding failed: {err}"
    if not ready and is_claim_binding_timed_out(claim, binding_timeout, now):
        return "timed out waiting for binding conditions"
    return None


def allocated_devices(allocation: Obj | AllocationResult) -> list[DeviceID]:
    """Devices an allocation takes exclusively; admin-access results do not (``foreachAllocatedDevice``)."""
    return [
        (r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
        for r in allocation_results(allocation)
        if not r.get("adminAccess")
    ]


class InFlightClaims:
    """Allocations decided at Reserve and not yet visible in the informer (upstream's in-flight claims
    plus the assume cache): so two pods never get the same device.

    Written on the loop (Reserve/Unreserve) and read by binding threads at PreBind, hence the lock. An
    entry stays after PreBind wrote the claim until the informer has caught up with that write (or the
    claim is gone), which closes the window where the informer lags the write. Caught up means the
    informer holds the written resourceVersion or a later one, as upstream's assume cache decides: the
    informer may never show the allocation itself, when the claim is deallocated again before the
    watch delivers it, and an entry kept then would hold the freed device forever.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # claim uid -> (claim, allocation, resourceVersion PreBind wrote or None before the write,
        # the devices the allocation takes)
        self._pending: dict[str, tuple[Obj, Obj, int | None, tuple[DeviceID, ...]]] = {}
        # How many entries take each device: read per pod, so kept rather than derived.
        self._held: dict[DeviceID, int] = {}
        # With a tracker: the entries whose claim may have caught up since the last prune (written,
        # or an event of the tracker named them); the others need no look.
        self._check: set[str] = set()

    def add(self, claim: Obj, allocation: Obj) -> None:
        devices = tuple(allocated_devices(allocation))
        with self._lock:
            self._drop(uid_of(claim))
            self._pending[uid_of(claim)] = (claim, allocation, None, devices)
            for device in devices:
                self._held[device] = self._held.get(device, 0) + 1

    def _drop(self, uid: str) -> bool:
        """Removes the entry (the lock held)."""
        entry = self._pending.pop(uid, None)
        if entry is None:
            return False
        for device in entry[3]:
            left = self._held[device] - 1
            if left:
                self._held[device] = left
            else:
                del self._held[device]
        return True

    def written(self, uid: str, written: Obj) -> None:
        """PreBind stored the allocation: the entry lasts until the informer reaches ``written``."""
        version = revision(written)
        with self._lock:
            entry = self._pending.get(uid)
            if entry is not None:
                self._pending[uid] = (entry[0], entry[1], version, entry[3])
                self._check.add(uid)

    def pending(self, uid: str) -> bool:
        """Whether an allocation of the claim is in flight (a dict read: no lock needed)."""
        return uid in self._pending

    def get(self, uid: str) -> Obj | None:
        with self._lock:
            found = self._pending.get(uid)
        return None if found is None else found[1]

    def remove(self, uid: str) -> bool:
        with self._lock:
            return self._drop(uid)

    def prune(self, claims: Lister, tracker: AllocatedDevicesTracker | None = None) -> None:
        """Drops entries the claims' state caught up with (allocated there, or at the written version or
        later) or whose claim is gone. With ``tracker``, its view decides, so an entry leaves only once
        the devices it holds are counted there (the tracker hears the informer's events after its store
        has changed), and only entries that were written or whose claim the tracker heard of since the
        last prune are looked at; a claim the tracker does not know is judged gone by the store."""
        with self._lock:
            if tracker is None:
                items = list(self._pending.items())
            else:
                self._check |= tracker.drain_touched() & self._pending.keys()
                items = [(uid, self._pending[uid]) for uid in self._check if uid in self._pending]
                self._check.clear()
        for uid, (claim, _, version, _) in items:
            known = tracker.seen(uid) if tracker is not None else None
            if known is not None:
                allocated, seen_version = known
                drop = allocated or (
                    version is not None and seen_version is not None and seen_version >= version
                )
            else:
                meta = object_meta(claim)
                current = claims.get(meta.get("name", ""), meta.get("namespace", ""))
                drop = current is None or uid_of(current) != uid
                if current is not None and not drop and tracker is None:
                    drop = allocation_of(current) is not None or _reached(current, version)
            if drop:
                with self._lock:
                    if self._pending.get(uid, (None,))[0] is claim:
                        self._drop(uid)

    def devices(self) -> list[DeviceID]:
        """The devices the entries take."""
        with self._lock:
            return list(self._held)

    def __len__(self) -> int:
        return len(self._pending)


def _reached(current: Obj, version: int | None) -> bool:
    if version is None:
        return False
    seen = revision(current)
    return seen is not None and seen >= version


def all_allocated_devices(
    claims: Sequence[Obj] | AllocatedDevicesTracker,
    in_flight: InFlightClaims,
    memo: AllocatedDevicesMemo | None = None,
) -> set[DeviceID]:
    """Every device in use cluster-wide (``ListAllAllocatedDevices``): allocated claims plus in-flight.
    ``claims``: the listed claims, or a tracker that follows them."""
    if isinstance(claims, AllocatedDevicesTracker):
        taken = claims.devices()
    elif memo is not None:
        taken = memo.devices(claims)
    else:
        taken = set()
        for claim in claims:
            allocation = allocation_of(claim)
            if allocation is not None:
                taken.update(allocated_devices(allocation))
    taken.update(in_flight.devices())
    return taken


class AllocatedDevicesMemo:
    """The devices held by the listed claims, kept up to date from the claims that changed.

    Every pod with claims to allocate needs the devices of all claims; between two pods only a few
    claims change (the informer replaces a changed claim by a new object). The memo remembers each
    listed claim object by identity, with the devices it holds, and a count per device: a call reads
    the new objects and forgets the ones no longer listed. It holds the objects it remembers, so an
    identity is never reused for another claim while remembered.
    """

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Obj, tuple[DeviceID, ...]]] = {}
        self._holders: dict[DeviceID, int] = {}

    def devices(self, claims: Sequence[Obj]) -> set[DeviceID]:
        """Every device an allocation of a listed claim takes exclusively (a new set)."""
        by_id, holders = self._by_id, self._holders
        listed = set(map(id, claims))
        for gone in by_id.keys() - listed:
            for device in by_id.pop(gone)[1]:
                left = holders[device] - 1
                if left:
                    holders[device] = left
                else:
                    del holders[device]
        if len(listed) != len(by_id):
            for claim in claims:
                if id(claim) in by_id:
                    continue
                allocation = allocation_of(claim)
                devices = tuple(allocated_devices(allocation)) if allocation is not None else ()
                by_id[id(claim)] = (claim, devices)
                for device in devices:
                    holders[device] = holders.get(device, 0) + 1
        return set(holders)


class AllocatedDevicesTracker:
    """The devices held by allocated claims, followed from the claim informer's events (upstream's
    allocatedDevices tracker, fed by the claims' assume cache): a pod reads them without walking every
    claim. Handlers run on the event loop after the informer's store has changed, so this view may lag
    the store; ``InFlightClaims.prune`` asks it (``seen``) so that an allocation leaves the in-flight
    set only once it is counted here."""

    LOG_MAX = 65536

    def __init__(self, interest: Callable[[str], bool] | None = None) -> None:
        # Which claims ``drain_touched`` reports (the in-flight ones); None: every claim.
        self._interest = interest
        # claim uid -> (allocated, resourceVersion seen, devices its allocation holds exclusively)
        self._claims: dict[str, tuple[bool, int | None, tuple[DeviceID, ...]]] = {}
        self._holders: dict[DeviceID, int] = {}
        self._held: set[DeviceID] = set()
        # Every change of ``_held`` in order (device, held now), for readers that follow it
        # incrementally (``changes``); cut when long, which ``epoch`` counts.
        self._log: list[tuple[DeviceID, bool]] = []
        self.epoch = 0
        # The claims an event named since the last ``drain_touched``.
        self._touched: set[str] = set()

    def on_add(self, obj: Obj) -> None:
        self._set(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if uid_of(old) != uid_of(new):
            self._drop(uid_of(old))
        self._set(new)

    def on_delete(self, obj: Obj) -> None:
        self._drop(uid_of(obj))

    def drain_touched(self) -> set[str]:
        """The uids of the claims an event named since the last call."""
        touched, self._touched = self._touched, set()
        return touched

    def _set(self, claim: Obj) -> None:
        uid = uid_of(claim)
        self._drop(uid)
        allocation = allocation_of(claim)
        devices = tuple(allocated_devices(allocation)) if allocation is not None else ()
        self._claims[uid] = (allocation is not None, revision(claim), devices)
        holders = self._holders
        for device in devices:
            count = holders.get(device, 0)
            holders[device] = count + 1
            if not count:
                self._held.add(device)
                self._note(device, True)

    def _drop(self, uid: str) -> None:
        if self._interest is None or self._interest(uid):
            self._touched.add(uid)
        entry = self._claims.pop(uid, None)
        if entry is None:
            return
        holders = self._holders
        for device in entry[2]:
            left = holders[device] - 1
            if left:
                holders[device] = left
            else:
                del holders[device]
                self._held.discard(device)
                self._note(device, False)

    def _note(self, device: DeviceID, held: bool) -> None:
        if len(self._log) >= self.LOG_MAX:
            self._log.clear()
            self.epoch += 1
        self._log.append((device, held))

    def changes(self, epoch: int, cursor: int) -> tuple[Sequence[tuple[DeviceID, bool]], int] | None:
        """The changes since ``cursor`` of ``epoch`` and the cursor to pass next; None when the log was
        cut since (read ``held`` whole, then follow from ``cursor()``)."""
        if epoch != self.epoch:
            return None
        return self._log[cursor:], len(self._log)

    def cursor(self) -> tuple[int, int]:
        return self.epoch, len(self._log)

    @property
    def held(self) -> set[DeviceID]:
        """The devices held now (read-only: the tracker's own set)."""
        return self._held

    def seen(self, uid: str) -> tuple[bool, int | None] | None:
        """Whether the claim is allocated here and the resourceVersion seen; None: not known (never
        seen, or deleted)."""
        entry = self._claims.get(uid)
        if entry is None:
            return None
        return entry[0], entry[1]

    def devices(self) -> set[DeviceID]:
        """Every device an allocated claim takes exclusively (a new set)."""
        return set(self._held)
