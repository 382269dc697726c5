"""Pods held at Permit, kept on the event loop (upstream's ``runtime/waiting_pods_map.go``).

A waiting pod is a map entry plus one timer per plugin that asked it to wait; no thread blocks on it.
It is decided exactly once: allowed when every waiting plugin has called ``allow(plugin)``, rejected by
the first ``reject`` or the first timer to fire. The decision leaves the map at once (so plugins that
iterate the waiting pods never see a decided pod again) and is delivered to ``on_decided`` with
``loop.call_soon``: a plugin that rejects a whole group from inside Unreserve or PostFilter would
otherwise re-enter the scheduler while it iterates.

Plugins call allow/reject on the loop. A call from another thread (a PreBind plugin, say) is passed to
the loop, so the core state is still only touched there.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Protocol

from scheduler.framework.status import Status
from scheduler.framework.types import PodInfo


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


# call_later(delay_seconds, callback) -> a cancellable handle; loop.call_later in production.
CallLater = Callable[[float, Callable[[], None]], TimerHandle]
# on_decided(waiting_pod, None when allowed or the rejection).
OnDecided = Callable[["WaitingPod", Status | None], None]


class WaitingPod:
    """One pod at Permit. ``pending_plugins`` are the plugins that have not allowed it yet."""

    __slots__ = ("_loop", "_map", "_status", "_timers", "decided", "node_name", "pending_plugins", "pod")

    def __init__(
        self, pod: PodInfo, node_name: str, timeouts: Mapping[str, float], owner: WaitingPods
    ) -> None:
        self.pod = pod
        self.node_name = node_name
        self.pending_plugins: set[str] = set(timeouts)
        self.decided = False
        self._map = owner
        self._loop = owner.loop
        self._status: Status | None = None
        # Upstream arms a timer per waiting plugin when Permit returns; the first to fire rejects.
        self._timers = [
            owner.call_later(seconds, self._timer_for(plugin, seconds))
            for plugin, seconds in timeouts.items()
        ]

    @property
    def key(self) -> str:
        return self.pod.key

    def _timer_for(self, plugin: str, seconds: float) -> Callable[[], None]:
        def fire() -> None:
            self._decide(
                Status.unschedulable(
                    f"rejected due to timeout after waiting {seconds:g}s at plugin {plugin}"
                ).with_plugin(plugin)
            )

        return fire

    def allow(self, plugin: str = "") -> None:
        """``plugin`` allows the pod; it goes on once no waiting plugin is left. An empty name allows it
        for every waiting plugin (the single-plugin shorthand of earlier versions)."""
        if not self._on_loop():
            self._loop.call_soon_threadsafe(self.allow, plugin)
            return
        if self.decided:
            return
        if plugin:
            self.pending_plugins.discard(plugin)
        else:
            self.pending_plugins.clear()
        if not self.pending_plugins:
            self._decide(None)

    def reject(self, plugin: str, message: str) -> None:
        if not self._on_loop():
            self._loop.call_soon_threadsafe(self.reject, plugin, message)
            return
        self._decide(Status.unschedulable(message).with_plugin(plugin))

    def get_pending_plugins(self) -> list[str]:
        return sorted(self.pending_plugins)

    def _on_loop(self) -> bool:
        return threading.get_ident() == self._map.loop_thread

    def _decide(self, status: Status | None) -> None:
        if self.decided:
            return
        self.decided = True
        self._status = status
        for timer in self._timers:
            timer.cancel()
        self._timers = []
        self._map.decided(self, status)


class WaitingPods(Mapping[str, WaitingPod]):
    """The pods waiting at Permit by ``namespace/name``. Lives on the loop; thousands cost only memory."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        on_decided: OnDecided,
        *,
        call_later: CallLater | None = None,
    ) -> None:
        self.loop = loop
        self.loop_thread = threading.get_ident()
        self.call_later: CallLater = call_later or loop.call_later
        self._on_decided = on_decided
        self._pods: dict[str, WaitingPod] = {}

    def add(self, pod: PodInfo, node_name: str, timeouts: Mapping[str, float]) -> WaitingPod:
        """Holds ``pod`` (assumed on ``node_name``) until every plugin in ``timeouts`` allows it."""
        waiting = WaitingPod(pod, node_name, timeouts, self)
        self._pods[pod.key] = waiting
        return waiting

    def decided(self, waiting: WaitingPod, status: Status | None) -> None:
        if self._pods.get(waiting.key) is waiting:
            del self._pods[waiting.key]
        self.loop.call_soon(self._on_decided, waiting, status)

    def reject_all(self, message: str, plugin: str = "") -> None:
        for waiting in list(self._pods.values()):
            waiting.reject(plugin, message)

    def iterate(self, keys: Iterable[str] | None = None) -> list[WaitingPod]:
        if keys is None:
            return list(self._pods.values())
        return [w for k in keys if (w := self._pods.get(k)) is not None]

    def __getitem__(self, key: str) -> WaitingPod:
        return self._pods[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._pods)

    def __len__(self) -> int:
        return len(self._pods)
