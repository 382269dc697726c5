"""unschedulablePods: pods a plugin rejected, waiting for an event that may help (``unschedulable_pods.go``).

Upstream scans every unschedulable pod on every cluster event and asks each pod's rejector plugins.
Here the pods are also indexed by rejector plugin, so an event visits only the pods that a plugin
registered for it rejected: with thousands of unschedulable pods and a stream of node and pod events,
that is the difference between O(pods) and O(candidates) per event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scheduling_queue.types import QueuedPodInfo

# Index slot for pods no plugin rejected (an error, or a pod requeued by a hint-less path): every
# event is a candidate for them, as upstream's isPodWorthRequeuing queues a pod without rejectors.
NO_REJECTOR = ""
DEFAULT_SCHEDULER_NAME = "default-scheduler"


class UnschedulablePods:
    """Pods by key, indexed by the plugins that rejected them (and the Pending ones)."""

    __slots__ = ("_by_plugin", "_plugins_of", "_pods", "pods")

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        # A read-only view of the same dict, never rebound: membership tests on hot paths need no call.
        self.pods: Mapping[str, QueuedPodInfo] = self._pods
        self._by_plugin: dict[str, dict[str, QueuedPodInfo]] = {}
        # The index slots each pod was filed under, as they were when it arrived: the plugin sets on
        # the QueuedPodInfo may change before it leaves, and removal must undo exactly what add did.
        self._plugins_of: dict[str, tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def add(self, qpi: QueuedPodInfo) -> bool:
        """File the pod under its rejector plugins; True when it was not here (replacing is no entry)."""
        key = qpi.key
        new = key not in self._pods
        if not new:
            self.remove(key)
        self._pods[key] = qpi
        rejectors = tuple(qpi.unschedulable_plugins | qpi.pending_plugins) or (NO_REJECTOR,)
        self._plugins_of[key] = rejectors
        by_plugin = self._by_plugin
        for plugin in rejectors:
            pods = by_plugin.get(plugin)
            if pods is None:
                by_plugin[plugin] = {key: qpi}
            else:
                pods[key] = qpi
        return new

    def remove(self, key: str) -> QueuedPodInfo | None:
        """Take the pod out of the map and the index; None when it is not here."""
        qpi = self._pods.pop(key, None)
        if qpi is None:
            return None
        by_plugin = self._by_plugin
        for plugin in self._plugins_of.pop(key):
            pods = by_plugin[plugin]
            del pods[key]
            # Empty slots are dropped so that the index's size follows the pods, not plugin history.
            if not pods:
                del by_plugin[plugin]
        return qpi

    def all(self) -> list[QueuedPodInfo]:
        return list(self._pods.values())

    def rejected_by(self, plugins: Iterable[str]) -> list[QueuedPodInfo]:
        """Pods any of ``plugins`` rejected, plus those no plugin rejected, each once.

        The order is deterministic (by plugin as given, then as filed), which upstream's scan of a Go
        map is not; nothing may rely on it beyond reproducible tests.
        """
        candidates: dict[str, QueuedPodInfo] = {}
        by_plugin = self._by_plugin
        for plugin in plugins:
            pods = by_plugin.get(plugin)
            if pods:
                candidates.update(pods)
        no_rejector = by_plugin.get(NO_REJECTOR)
        if no_rejector:
            candidates.update(no_rejector)
        return list(candidates.values())

    def older_than(self, now: float, limit: float) -> list[QueuedPodInfo]:
        """Pods here for longer than ``limit`` seconds (``podMaxInUnschedulablePodsDuration``)."""
        return [q for q in self._pods.values() if now - q.timestamp > limit]

    def counts(self) -> dict[tuple[str, str], int]:
        """Pods per (rejecting plugin, schedulerName); a pod counts once for each of its rejectors, and
        pods with no rejector are not counted (``scheduler_unschedulable_pods``)."""
        counts: dict[tuple[str, str], int] = {}
        for plugin, pods in self._by_plugin.items():
            if plugin == NO_REJECTOR:
                continue
            for qpi in pods.values():
                key = (plugin, scheduler_name(qpi))
                counts[key] = counts.get(key, 0) + 1
        return counts


def scheduler_name(qpi: QueuedPodInfo) -> str:
    """The pod's schedulerName (scheduler.framework.objects.scheduler_name_of, inlined: scheduling_queue
    must not import scheduler)."""
    return str(qpi.pod.get("spec", {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME)


def count_rejectors(counts: dict[tuple[str, str], int], qpi: QueuedPodInfo) -> None:
    """Add one for each plugin that rejected (or gates) ``qpi``, under its schedulerName."""
    plugins = (
        qpi.unschedulable_plugins | qpi.pending_plugins if qpi.pending_plugins else qpi.unschedulable_plugins
    )
    if not plugins:
        return
    name = scheduler_name(qpi)
    for plugin in plugins:
        key = (plugin, name)
        counts[key] = counts.get(key, 0) + 1
