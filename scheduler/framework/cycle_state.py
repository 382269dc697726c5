"""CycleState: per-attempt scratch space shared by the plugins of one scheduling cycle."""

from __future__ import annotations

from typing import Any


class CycleState:
    """Upstream's framework.CycleState. Owned by one attempt; the binding thread gets it afterwards.

    It is handed from the loop to one binding thread and never used by both at once, so it has no lock.
    """

    __slots__ = (
        "_data",
        "_filter_plugins",
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
        # The Filter plugins of this cycle as the framework picked them (skips applied), kept by the
        # framework for the what-if runs, which ask again per node: opaque here, shared by copies.
        self._filter_plugins: Any = None

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
        # Built without __init__ (every slot is set here): what-if runs clone a state per node.
        other = CycleState.__new__(CycleState)
        other.record_plugin_metrics = self.record_plugin_metrics
        # Shared, not copied: a what-if run's plugin calls belong to this cycle's timings.
        other.plugin_seconds = self.plugin_seconds
        data = self._data.copy()
        for key, value in data.items():
            if hasattr(value, "clone"):
                data[key] = value.clone()
        other._data = data
        other.skip_filter_plugins = self.skip_filter_plugins.copy()
        other.skip_score_plugins = self.skip_score_plugins.copy()
        other._filter_plugins = self._filter_plugins
        return other

    def written(self) -> dict[str, Any]:
        """A copy of what this state holds, key to value (values not cloned): to tell what a phase
        wrote by comparing with a copy taken before it (opportunistic batching)."""
        return self._data.copy()

    def _lookup(self, key: str) -> Any:
        """The value stored under ``key`` as it is (not cloned), or ``_MISSING``."""
        return self._data.get(key, _MISSING)

    def _keys(self) -> list[str]:
        return list(self._data)


_MISSING: Any = object()


def scratch_copy(state: CycleState) -> CycleState:
    """What ``state.clone()`` returns, copied lazily: for a what-if run that ends before ``state`` is
    used again (a preemption dry run on one node, a Filter run with nominated pods). A value is cloned
    when the copy first reads it and a write lands in the copy only, so the copy behaves as a clone
    for as long as ``state`` does not change; most runs read two or three keys of a state that holds
    ten."""
    return _ScratchCycleState(state)


def origin_of(state: CycleState) -> CycleState:
    """The state a scratch copy reads through to (``state`` itself when it is not one): the cycle's own
    state, for what must not outlive one scheduling cycle."""
    while isinstance(state, _ScratchCycleState):
        state = state._base
    return state


class _ScratchCycleState(CycleState):
    """``scratch_copy``: its own values (written, or cloned on first read) in ``_data``,
    the keys deleted from it in ``_deleted``, everything else read through from ``_base``."""

    __slots__ = ("_base", "_deleted")

    def __init__(self, base: CycleState) -> None:
        self._base = base
        self._data = {}
        self._deleted: set[str] = set()
        self.record_plugin_metrics = base.record_plugin_metrics
        self.plugin_seconds = base.plugin_seconds
        # Shared, not copied as clone() does: only PreFilter and PreScore add to them, and a what-if run
        # comes after PreFilter and runs neither.
        self.skip_filter_plugins = base.skip_filter_plugins
        self.skip_score_plugins = base.skip_score_plugins
        self._filter_plugins = base._filter_plugins

    def _lookup(self, key: str) -> Any:
        value = self._data.get(key, _MISSING)
        if value is _MISSING and key not in self._deleted:
            value = self._base._lookup(key)
        return value

    def _own(self, key: str) -> Any:
        value = self._data.get(key, _MISSING)
        if value is not _MISSING or key in self._deleted:
            return value
        value = self._base._lookup(key)
        if value is not _MISSING and hasattr(value, "clone"):
            value = self._data[key] = value.clone()
        return value

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value
        self._deleted.discard(key)

    def read(self, key: str) -> Any:
        value = self._own(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        value = self._own(key)
        return default if value is _MISSING else value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)
        self._deleted.add(key)

    def __contains__(self, key: str) -> bool:
        return self._lookup(key) is not _MISSING

    def clone(self) -> CycleState:
        other = CycleState(record_plugin_metrics=self.record_plugin_metrics)
        other.plugin_seconds = self.plugin_seconds
        other._data = {
            key: (value.clone() if hasattr(value, "clone") else value)
            for key in self._keys()
            if (value := self._own(key)) is not _MISSING
        }
        other.skip_filter_plugins = self.skip_filter_plugins.copy()
        other.skip_score_plugins = self.skip_score_plugins.copy()
        other._filter_plugins = self._filter_plugins
        return other

    def written(self) -> dict[str, Any]:
        return {key: value for key in self._keys() if (value := self._lookup(key)) is not _MISSING}

    def _keys(self) -> list[str]:
        seen = dict.fromkeys(self._base._keys())
        seen.update(dict.fromkeys(self._data))
        return [key for key in seen if key not in self._deleted or key in self._data]
