"""Queueing hints: which plugins hear an event, and whether a rejected pod is worth requeuing.

Mirrors ``isEventOfInterest`` and ``isPodWorthRequeuing`` in upstream's ``scheduling_queue.go``.
The per-event plugin table is computed once per distinct event and cached, so an event no plugin
registered costs one dict lookup.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from scheduling_queue.events import event_label, event_matches, is_wildcard
from scheduling_queue.types import (
    ClusterEvent,
    ClusterEventWithHint,
    QueuedPodInfo,
    QueueingHint,
    QueueingHintFn,
)

log = logging.getLogger(__name__)

# Queueing strategies, ordered by strength (upstream's queueSkip / queueAfterBackoff / queueImmediately).
SKIP: Final = 0
AFTER_BACKOFF: Final = 1
IMMEDIATELY: Final = 2

# plugin name -> its hint functions registered for events that match; None means "always Queue".
Matching = dict[str, tuple[QueueingHintFn | None, ...]]


def _same_pod(qpi: QueuedPodInfo, obj: Any) -> bool:
    if not isinstance(obj, Mapping):
        return False
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return False
    uid = meta.get("uid")
    own_uid = (qpi.pod.get("metadata") or {}).get("uid")
    if uid and own_uid:
        return bool(uid == own_uid)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}" == qpi.key


class HintRegistry:
    """The plugins' event registrations for one queue, with per-event lookups cached."""

    __slots__ = ("_cache", "_registrations", "plugin_events")

    def __init__(self, hints: Mapping[str, Sequence[ClusterEventWithHint]]) -> None:
        self._registrations: list[tuple[str, ClusterEventWithHint]] = [
            (plugin, reg) for plugin, regs in hints.items() for reg in regs
        ]
        self.plugin_events: dict[str, list[ClusterEvent]] = {
            plugin: [reg.event for reg in regs] for plugin, regs in hints.items()
        }
        self._cache: dict[ClusterEvent, Matching] = {}

    def matching(self, event: ClusterEvent) -> Matching:
        """Plugins with a registration matching ``event``, each with its hint functions."""
        found = self._cache.get(event)
        if found is None:
            table: dict[str, list[QueueingHintFn | None]] = {}
            for plugin, reg in self._registrations:
                if event_matches(reg.event, event):
                    table.setdefault(plugin, []).append(reg.hint)
            found = {plugin: tuple(fns) for plugin, fns in table.items()}
            if len(self._cache) < 4096:
                self._cache[event] = found
        return found

    def interesting(self, event: ClusterEvent) -> bool:
        """Upstream's ``isEventOfInterest``: a wildcard event, or one some plugin registered."""
        return is_wildcard(event) or bool(self.matching(event))

    def strategy(
        self,
        qpi: QueuedPodInfo,
        event: ClusterEvent,
        old: Any,
        new: Any,
        *,
        matching: Matching | None = None,
        wildcard: bool | None = None,
    ) -> int:
        """Upstream's ``isPodWorthRequeuing``: ask only the hints of the plugins that rejected ``qpi``.

        A Queue from a Pending plugin means IMMEDIATELY (skip backoff); from an Unschedulable plugin
        AFTER_BACKOFF. A pod with no rejector plugins (it failed with an error) is always worth
        requeuing. A hint that raises counts as Queue so that a buggy hint can't strand a pod.
        Callers looping over many pods for one event pass ``matching`` and ``wildcard`` precomputed.
        """
        unschedulable, pending = qpi.unschedulable_plugins, qpi.pending_plugins
        if not unschedulable and not pending:
            return AFTER_BACKOFF
        if wildcard is None:
            wildcard = is_wildcard(event)
        if wildcard:
            # A wildcard carrying a pod (ForceActivate) is aimed at that pod only.
            if new is not None and not _same_pod(qpi, new):
                return SKIP
            return AFTER_BACKOFF
        if matching is None:
            matching = self.matching(event)
        if not matching:
            return SKIP
        rejectors = unschedulable | pending if pending else unschedulable
        result = SKIP
        pod = qpi.pod
        for plugin in rejectors:
            fns = matching.get(plugin)
            if not fns:
                continue
            for fn in fns:
                if fn is not None:
                    try:
                        hint = fn(pod, old, new)
                    except Exception:
                        log.exception(
                            "queueing hint of plugin %s failed for pod %s on event %s; treating as Queue",
                            plugin,
                            qpi.key,
                            event_label(event),
                        )
                        hint = QueueingHint.Queue
                    if hint is QueueingHint.Skip:
                        continue
                if plugin in pending:
                    return IMMEDIATELY
                if not pending:
                    return AFTER_BACKOFF
                result = AFTER_BACKOFF
        return result
