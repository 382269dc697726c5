"""What a plugin may use of the scheduler: the snapshot of the current cycle, the API and the clock."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import KubeObject, Lister, ResourceSpec
from scheduler.framework.load_metrics import LoadMetricsSource, TrimaranSpec
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo


class SnapshotLister(Protocol):
    """Read-only view of the cluster for the current scheduling cycle."""

    def node_infos(self) -> Sequence[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo | None: ...

    def num_nodes(self) -> int: ...

    def image_num_nodes(self, image: str) -> int:
        """How many nodes have ``image``; ImageLocality scales scores by it."""
        ...

    def image_size(self, image: str) -> int:
        """The size ImageLocality counts for ``image`` on every node holding it: the size reported by
        the node that brought it into the cache (upstream's cluster-wide ImageStateSummary)."""
        ...


class WaitingPodHandle(Protocol):
    """A pod held at Permit (upstream's framework.WaitingPod)."""

    @property
    def pod(self) -> PodInfo: ...

    def allow(self, plugin: str = "") -> None:
        """``plugin`` allows the pod; it proceeds once every plugin that asked it to wait has allowed it."""
        ...

    def reject(self, plugin: str, message: str) -> None: ...


class Handle(Protocol):
    """Given to plugin factories. Binding-time plugins may call ``bind_pod`` (blocking, thread-safe)."""

    @property
    def snapshot(self) -> SnapshotLister: ...

    @property
    def profile_name(self) -> str: ...

    def now(self) -> float: ...

    def bind_pod(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        """POST pods/{name}/binding. Raises BindingConflict or ApiError on failure."""
        ...

    def get_waiting_pod(self, key: str) -> WaitingPodHandle | None:
        """The pod ``namespace/name`` if it waits at Permit; a Permit plugin allows or rejects it here."""
        ...

    def waiting_pods(self) -> Sequence[WaitingPodHandle]: ...

    def api_request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> Mapping[str, Any]:
        """One API call from a binding thread (blocking), e.g. a claim's status update; the decoded JSON.
        Raises ``scheduler.framework.api_error.ApiError`` on failure."""
        ...

    def lister(self, resource: ResourceSpec) -> Lister:
        """An informer-backed lister of ``resource`` (e.g. ``NAMESPACES``). Ask for it in the plugin's
        factory: the scheduler starts that informer because a plugin asked, and waits for it to sync
        before the first cycle."""
        ...

    def update_object(self, resource: ResourceSpec, obj: KubeObject) -> KubeObject:
        """PUT ``obj`` (its resourceVersion is the precondition) and return what the API stored.

        Blocking: for PreBind and other binding-thread code (VolumeBinding writes PVs and PVCs).
        Raises ``scheduler.framework.api_error.ApiError`` on failure (409 when someone else changed
        the object)."""


@runtime_checkable
class LoadMetricsHandle(Protocol):
    """What the scheduler's Handle offers load-aware plugins beyond Handle (a separate protocol, so a
    plugin's own test fake of Handle needs nothing new)."""

    def load_metrics(self, spec: TrimaranSpec) -> LoadMetricsSource:
        """The measured node load of ``spec``'s source (a metric provider or a load-watcher service).
        Ask for it in the plugin's factory: the scheduler fetches it off the event loop on a timer
        (plugins asking for the same spec share one source) and takes a first sample before the first
        cycle; a plugin reads ``latest()`` in its cycle and never waits for the network."""
        ...


class PreemptionExecutorHandle(Protocol):
    """The scheduler's preemption Executor as a PostFilter plugin sees it (``preemption.Executor``)."""

    def actuate(
        self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo], plugin: str
    ) -> Status | None:
        """Evicts ``victims`` from ``node_name`` off the event loop; returns at once."""
        ...

    async def preempt_now(
        self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo], plugin: str
    ) -> Status | None:
        """Evicts ``victims`` and returns once the informer shows it (synchronous preemption)."""
        ...

    def is_pod_running_preemption(self, pod: Mapping[str, Any]) -> bool: ...


class NodeTrial(Protocol):
    """The what-if node of a preemption dry run: pods taken off and given back, Filter asked between."""

    def remove(self, pod: PodInfo) -> Status | None:
        """Takes ``pod`` off the node; a status is a PreFilter extension's error."""
        ...

    def add(self, pod: PodInfo) -> Status | None:
        """Gives ``pod`` back to the node; a status is a PreFilter extension's error."""
        ...

    def filter(self) -> Status | None:
        """RunFilterPluginsWithNominatedPods on the node as it now stands."""
        ...


class PreemptionHandle(Handle, Protocol):
    """What preemption needs beyond Handle. Upstream's Handle is the framework itself; here the
    scheduler's Handle delegates these to the profile's Framework once it is built."""

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def pre_filter_extensions_active(self, state: CycleState) -> bool:
        """Whether the AddPod/RemovePod calls below do anything for this cycle's pod (a PreFilter
        extension its PreFilter did not skip): without one, a what-if run may leave them out."""
        ...

    def sign_pod(self, pod: PodInfo) -> Hashable | None:
        """The pod's scheduling signature (``Framework.sign_pod``), or None."""
        ...

    def amounts_trial(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> NodeTrial | None:
        """A dry run's what-if on ``node`` by arithmetic where that is exact (``Framework.amounts_trial``),
        else None: then the caller works on a copy of the node."""
        ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...

    @property
    def preemption_executor(self) -> PreemptionExecutorHandle | None:
        """None until the scheduler runs (and in tests or simulate: decide, don't act)."""
        ...
