"""CycleState: per-attempt scratch space shared by the plugins of one scheduling cycle."""

from __future__ import annotations

from typing import Any


class CycleState:
    """Upstream's framework.CycleState. Owned by one attempt; the binding thread gets it afterwards.

    It is handed from the loop to one binding thread and never used by both at once, so it has no lock.
    """

    __slots__ = (
        "_data",
        "plugin_seconds",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_score_plugins",
    )

    def __init__(self, *, record_plugin_metrics: bool = False) -> None:
        self._data: dict[str, Any] = {}
        # Upstream's recordPluginMetrics: decided once per cycle (10% of cycles), so every plugin call
        # of the cycle is timed or none is; what-if clones inherit it.
        self.record_plugin_metrics = record_plugin_metrics
        # Seconds per (plugin, extension point, status) of the calls made once per node (Filter, Score,
        # AddPod/RemovePod), summed over the cycle and observed once when it ends (Framework.
        # flush_plugin_metrics): one observation per node would cost more than the plugins themselves.
        self.plugin_seconds: dict[tuple[str, str, str], float] = {}
        # Plugins whose PreFilter/PreScore returned Skip: their Filter/Score are not run this cycle.
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        """Raises KeyError when the key was never written (a PreFilter that did not run)."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def clone(self) -> CycleState:
        """A copy for a what-if run (preemption, nominated pods): upstream's ``CycleState.Clone``.

        Values with a ``clone()`` method (the states PreFilter extensions mutate) are cloned; the rest
        are read-only after PreFilter and are shared.
        """
        other = CycleState(record_plugin_metrics=self.record_plugin_metrics)
        # Shared, not copied: a what-if run's plugin calls belong to this cycle's timings.
        other.plugin_seconds = self.plugin_seconds
        other._data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self._data.items()}
        other.skip_filter_plugins = set(self.skip_filter_plugins)
        other.skip_score_plugins = set(self.skip_score_plugins)
        return other
