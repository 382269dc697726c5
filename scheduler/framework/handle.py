"""What a plugin may use of the scheduler: the snapshot of the current cycle, the API and the clock."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from scheduler.framework.listers import Lister, ResourceSpec
from scheduler.framework.types import NodeInfo, PodInfo


class SnapshotLister(Protocol):
    """Read-only view of the cluster for the current scheduling cycle."""

    def node_infos(self) -> Sequence[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo | None: ...

    def num_nodes(self) -> int: ...

    def image_num_nodes(self, image: str) -> int:
        """How many nodes have ``image``; ImageLocality scales scores by it."""
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

    def lister(self, resource: ResourceSpec) -> Lister:
        """An informer-backed lister of ``resource`` (e.g. ``NAMESPACES``). Ask for it in the plugin's
        factory: the scheduler starts that informer because a plugin asked, and waits for it to sync
        before the first cycle."""
        ...
