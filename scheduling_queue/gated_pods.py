"""Gated pods: pods a PreEnqueue plugin holds back from activeQ (SchedulingGates, DefaultPreemption...).

Upstream keeps them in unschedulablePods with a ``Gated`` flag. They are a map of their own here
because they are a different population: never attempted, counted as ``gated`` rather than
``unschedulable`` in ``scheduler_pending_pods``, and released by the events their *gating* plugin
registered (not the rejectors' events). Each gated pod is indexed by that one plugin.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduling_queue.types import QueuedPodInfo


class GatedPods:
    """Pods by key, each under the one PreEnqueue plugin that gates it."""

    __slots__ = ("_by_plugin", "_flushed", "_gate_of", "_pods", "pods")

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        # A read-only view of the same dict, never rebound: membership tests on hot paths need no call.
        self.pods: Mapping[str, QueuedPodInfo] = self._pods
        self._by_plugin: dict[str, dict[str, QueuedPodInfo]] = {}
        self._gate_of: dict[str, str] = {}
        # When the unschedulable-leftover flush last ran PreEnqueue on a pod that stayed gated
        # (upstream's FlushTimestamp), by key: its next flush waits a full period from then.
        self._flushed: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def add(self, qpi: QueuedPodInfo, gate: str) -> bool:
        """Hold the pod under ``gate``; True when it was not gated before (a new arrival to count).

        The gate is also recorded on the pod as one of its unschedulable plugins, as upstream's
        PreEnqueue failure does, so that hints and diagnostics name it. A pod already held by another
        gate (or another record of the same pod) is refiled under the new one.
        """
        key = qpi.key
        qpi.gating_plugin = gate
        qpi.unschedulable_plugins.add(gate)
        current = self._gate_of.get(key)
        if current == gate and self._pods.get(key) is qpi:
            return False
        if current is not None:
            # Refiled, not released: the last flush still counts.
            flushed = self._flushed.get(key)
            self.remove(key)
            if flushed is not None:
                self._flushed[key] = flushed
        self._pods[key] = qpi
        self._gate_of[key] = gate
        self._by_plugin.setdefault(gate, {})[key] = qpi
        return current is None

    def remove(self, key: str) -> QueuedPodInfo | None:
        """Release the pod; None when it is not here. ``qpi.gating_plugin`` is left to the caller,
        which needs it to tell a pod leaving the gate from one entering activeQ for the first time."""
        qpi = self._pods.pop(key, None)
        if qpi is None:
            return None
        self._flushed.pop(key, None)
        gate = self._gate_of.pop(key)
        pods = self._by_plugin[gate]
        del pods[key]
        if not pods:
            del self._by_plugin[gate]
        return qpi

    def gated_by(self, plugin: str) -> list[QueuedPodInfo]:
        """The pods ``plugin`` holds back, in the order they were gated."""
        pods = self._by_plugin.get(plugin)
        return list(pods.values()) if pods else []

    def all(self) -> list[QueuedPodInfo]:
        return list(self._pods.values())

    def older_than(self, now: float, limit: float) -> list[QueuedPodInfo]:
        """Pods gated for longer than ``limit`` seconds since they were queued or last flushed
        (upstream's flushUnschedulableEntitiesLeftover reads the later of Timestamp and FlushTimestamp)."""
        flushed = self._flushed
        return [q for key, q in self._pods.items() if now - max(q.timestamp, flushed.get(key, 0.0)) > limit]

    def mark_flushed(self, pods: list[QueuedPodInfo], now: float) -> None:
        """The flush is about to run PreEnqueue on ``pods`` (gated ones): a pod it leaves gated is not
        flushed again for a full period."""
        for qpi in pods:
            self._flushed[qpi.key] = now
