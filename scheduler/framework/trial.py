"""A preemption dry run's node judged by arithmetic (``AmountsTrial``).

Upstream's SelectVictimsOnNode copies the node, takes every lower-priority pod off it, runs Filter (with
the nominated pods of higher or equal priority added, then without them), and gives the victims back
one by one with a Filter run each. When no PreFilter extension is active for the pod and every Filter
plugin of the cycle either ignores the pods on the node (its verdict is fixed per node) or sees them
only through their number and summed requests (``AmountsFilterPlugin``: NodeResourcesFit), those runs
come down to sums: the node-only plugins are asked once, the amounts plugins per step with the sums.

Same verdict, same Status as the runs on a copy:

* the plugins are visited in their order and the first failure is returned, as ``run_filters`` does;
* with nominated pods the first run counts them; when it passes, the second run (without them) passes
  too, since an amounts plugin never fails a node with fewer or smaller pods where it passed one with
  more, and the node-only verdicts do not change.

``Framework.amounts_trial`` decides when this applies and returns None otherwise (the caller then uses
a copy of the node).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import AmountsFilter, AmountsFilterPlugin, FilterPlugin
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo

_perf = time.perf_counter

# The cycle's Filter plugins, each with itself as an amounts plugin, or None when it ignores the pods.
FilterChecks = tuple[tuple[FilterPlugin, AmountsFilterPlugin | None], ...]


class AmountsTrial:
    """One node of a dry run: ``remove``/``add`` a pod, then ``filter`` gives what
    RunFilterPluginsWithNominatedPods would give on a copy of the node changed the same way.

    ``timings`` (the cycle's ``plugin_seconds``, in a cycle that records plugin metrics): each
    ``filter`` adds to it under the keys a Filter run on a copy would add, (plugin, "Filter", code) for
    each plugin in order up to the first failure, the time the arithmetic took (a node-only plugin's
    one call counted at the first ``filter``), so a sampled cycle reports the same series."""

    __slots__ = ("_amounts", "_fixed", "_node", "_num_pods", "_requested", "_steps", "_timings")

    def __init__(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        checks: FilterChecks,
        nominated: Sequence[PodInfo],
        timings: dict[tuple[str, str, str], float] | None = None,
    ) -> None:
        self._node = node
        # The sums as the first Filter run sees them: the node's pods plus the counted nominated pods
        # (the second run, without them, cannot fail where the first passed).
        requested = node.requested.copy()
        for other in nominated:
            requested.add(other.requests)
        self._requested = requested
        self._num_pods = len(node.pods) + len(nominated)
        # The amounts plugins before the first node-only plugin that fails (those after it are never
        # reached), and that failure.
        amounts: list[tuple[str, AmountsFilter]] = []
        # With timings: every plugin up to that failure, in order, as (name, verdict of an amounts
        # plugin, else the node-only verdict and the seconds its call took).
        steps: list[list[Any]] = []
        fixed: Status | None = None
        for plugin, by_amounts in checks:
            if by_amounts is not None:
                verdict = by_amounts.amounts_filter(state, pod)
                amounts.append((plugin.name, verdict))
                steps.append([plugin.name, verdict, None, 0.0])
                continue
            began = _perf()
            status = plugin.filter(state, pod, node)
            failed = status is not None and status.code is not Code.Success
            steps.append([plugin.name, None, status if failed else None, _perf() - began])
            if failed:
                assert status is not None
                fixed = status.with_plugin(plugin.name)
                break
        self._amounts = tuple(amounts)
        self._fixed = fixed
        self._timings = timings
        self._steps = steps

    def remove(self, pod: PodInfo) -> None:
        """``pod`` (one of the node's) taken off the node."""
        self._requested.subtract(pod.requests)
        self._num_pods -= 1

    def add(self, pod: PodInfo) -> None:
        """``pod`` (one taken off before) given back."""
        self._requested.add(pod.requests)
        self._num_pods += 1

    def filter(self) -> Status | None:
        if self._timings is not None:
            return self._timed_filter(self._timings)
        for name, verdict in self._amounts:
            status = verdict(self._node, self._requested, self._num_pods)
            if status is not None and status.code is not Code.Success:
                return status.with_plugin(name)
        return self._fixed

    def _timed_filter(self, timings: dict[tuple[str, str, str], float]) -> Status | None:
        for step in self._steps:
            name, verdict, status, seconds = step
            if verdict is not None:
                began = _perf()
                status = verdict(self._node, self._requested, self._num_pods)
                seconds = _perf() - began
            else:
                step[3] = 0.0
            label = "Success" if status is None else status.code.name
            key = (name, "Filter", label)
            timings[key] = timings.get(key, 0.0) + seconds
            if status is not None and status.code is not Code.Success:
                failed: Status = status.with_plugin(name)
                return failed
        return None
