"""Run pods through a profile with your plugin: the real frameworks, cache and queue, no API server.

``SchedulerHarness`` is simulate's Simulation (``scheduler/explain/simulate.py``: the frameworks built
from a configuration exactly as the scheduler builds them, its SchedulerCache, the real
SchedulingAlgorithm, decision records) fed by the real SchedulingQueue: pods go in through
PreEnqueue and QueueSort, are popped in queue order, and a rejected pod goes back to the queue with
the plugins that rejected it, to be woken by a cluster event their hints accept (a node added, a pod
bound) as in the scheduler. Nothing binds: a placed pod is assumed on its node, as the scheduler does
before its binding cycle, so the next pod sees it. PostFilter (preemption), Reserve, Permit and the
binding plugins do not run.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scheduler.app.event_handlers import NODE_ADD
from scheduler.config import SchedulerConfig, parse_config_with_plugins
from scheduler.config.out_of_tree import ENTRY_POINT_GROUP, factory_for
from scheduler.cycle.profiles import queue_hints
from scheduler.explain.manifests import dump_from_objects, expand_pods, load_dump, resource_of_kind
from scheduler.explain.record import AttemptRecord
from scheduler.explain.render import render_attempt
from scheduler.explain.simulate import Placement, Simulation
from scheduler.framework.interface import PluginFactory
from scheduler.framework.objects import namespaced_name, pod_spec, scheduler_name_of
from scheduler.framework.types import PodInfo, PodSpecError
from scheduler.plugins.registry import IN_TREE_REGISTRY
from scheduling_queue import SchedulingQueue

API_VERSION = "kubescheduler.config.k8s.io/v1"
KubeObject = Mapping[str, Any]


class _Clock:
    def __init__(self, start: float) -> None:
        self.time = start

    def now(self) -> float:
        return self.time

    def __call__(self) -> float:
        return self.time


@dataclass
class Result:
    """One pod's attempt: where it went (``node``), or why not (``reason``, ``gated_by``), and the
    decision record explain would show."""

    pod: str
    node: str | None
    reason: str = ""
    record: AttemptRecord | None = None
    rejected_by: frozenset[str] = frozenset()
    gated_by: str = ""

    @property
    def placed(self) -> bool:
        return self.node is not None

    def explain(self) -> str:
        """The record as ``py-scheduler explain`` prints it."""
        if self.record is None:
            return f"{self.pod}: no attempt ({self.reason or 'gated by ' + self.gated_by})"
        return "\n".join(render_attempt(self.record.to_json()))

    def explain_json(self) -> dict[str, Any]:
        return {} if self.record is None else self.record.to_json()

    def scores(self) -> dict[str, int]:
        """Weighted score per Score plugin for the chosen node (empty without scoring)."""
        if self.record is None:
            return {}
        for row in self.record.scores:
            if row.node == self.node:
                return {name: weighted for name, (_, _, weighted) in row.plugins.items()}
        return {}

    # --- assertions, with messages that say what happened instead -----------------------------------
    def assert_on(self, *nodes: str) -> Result:
        assert self.node in nodes, f"{self.pod}: expected on {' or '.join(nodes)}, got {self._what()}"
        return self

    def assert_not_on(self, *nodes: str) -> Result:
        assert self.node is not None, f"{self.pod}: expected placed, got {self._what()}"
        assert self.node not in nodes, f"{self.pod}: expected not on {', '.join(nodes)}, got {self.node}"
        return self

    def assert_pending(self, reason: str | None = None) -> Result:
        """Unschedulable; ``reason`` is a regex searched in upstream's message and the nearest misses."""
        assert self.node is None, f"{self.pod}: expected pending, but it was placed on {self.node}"
        text = self.pending_text()
        assert reason is None or re.search(reason, text), f"{self.pod}: expected {reason!r} in: {text}"
        return self

    def assert_rejected_by(self, *plugins: str) -> Result:
        assert self.node is None, f"{self.pod}: expected rejected, but it was placed on {self.node}"
        missing = set(plugins) - self.rejected_by
        assert not missing, (
            f"{self.pod}: expected rejected by {sorted(missing)}, got {sorted(self.rejected_by)}"
        )
        return self

    def pending_text(self) -> str:
        misses = self.record.nearest_misses if self.record else []
        return self.reason + ("" if not misses else " Nearest misses: " + "; ".join(m.text() for m in misses))

    def _what(self) -> str:
        return self.node or f"pending: {self.pending_text()}"


class SchedulerHarness:
    """A scheduler without an API server, for plugin tests::

        h = SchedulerHarness([PreferLabel], args={"PreferLabel": {"label": "fast"}})
        h.add(node("a"), node("b", labels={"fast": "yes"}))
        h.schedule(pod("p", cpu="1"))[0].assert_on("b")

    ``plugins``: classes or factories (registered under their ``name``) enabled at every extension point
    they implement (multiPoint) in a profile named ``profile`` with the default plugins, unless
    ``config`` (a path, YAML text or a dict) says otherwise; out-of-tree plugins it names by dotted path
    or entry point load as in the scheduler. ``objects``: API objects of any kind (nodes, bound pods,
    PVCs, claims, quotas...); ``cluster``: a ``py-scheduler snapshot`` file or manifests.
    """

    def __init__(
        self,
        plugins: Sequence[Any] | Mapping[str, Any] = (),
        *,
        config: str | Path | Mapping[str, Any] | None = None,
        args: Mapping[str, Mapping[str, Any]] | None = None,
        weights: Mapping[str, int] | None = None,
        profile: str = "py-scheduler",
        objects: Iterable[KubeObject] = (),
        cluster: str | Path | None = None,
        seed: int = 1,
        start_time: float = 1_700_000_000.0,
    ) -> None:
        named = list(plugins.items() if isinstance(plugins, Mapping) else ((_name_of(p), p) for p in plugins))
        installed = _installed_entry_points()
        user: dict[str, PluginFactory] = {
            # An installed package's own plugin is already registered by its entry point.
            name: factory_for(obj, name)
            for name, obj in named
            if installed.get(name) is not obj
        }
        self.config = self._config(config, [n for n, _ in named], user, args or {}, weights or {}, profile)
        self.clock = _Clock(start_time)
        dump: dict[str, list[Any]] = load_dump(cluster) if cluster is not None else {}
        self.sim = Simulation(self.config, self.registry, dump, seed=seed, clock=self.clock)
        self.frameworks = self.sim.frameworks
        self.profile = profile
        first = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(
            clock=self.clock,
            less=first.queue_sort_less(),
            pre_enqueue=self._pre_enqueue,
            hints=queue_hints(self.frameworks),
        )
        self.results: dict[str, Result] = {}
        self.add(*objects)

    def _config(
        self,
        config: str | Path | Mapping[str, Any] | None,
        names: Sequence[str],
        user: Mapping[str, PluginFactory],
        args: Mapping[str, Mapping[str, Any]],
        weights: Mapping[str, int],
        profile: str,
    ) -> SchedulerConfig:
        raw: Any
        if config is None:
            enabled = [{"name": n, **({"weight": weights[n]} if n in weights else {})} for n in names]
            raw = {
                "apiVersion": API_VERSION,
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {
                        "schedulerName": profile,
                        "plugins": {"multiPoint": {"enabled": enabled}},
                        "pluginConfig": [{"name": n, "args": dict(a)} for n, a in args.items()],
                    }
                ],
            }
        elif isinstance(config, Mapping):
            raw = config
        elif isinstance(config, Path) or "\n" not in config:
            raw = yaml.safe_load(Path(config).read_text())
        else:
            raw = yaml.safe_load(config)
        loaded = parse_config_with_plugins(raw, registry={**IN_TREE_REGISTRY, **user})
        self.registry = loaded.registry
        return loaded.config

    def _pre_enqueue(self, pod: KubeObject, gating_plugin: str = "") -> str:
        fwk = self.frameworks.get(scheduler_name_of(pod)) or self.sim.framework_for(pod)
        if not fwk.plugins.pre_enqueue:
            return ""
        try:
            status = fwk.run_pre_enqueue(PodInfo(pod), gating_plugin)
        except PodSpecError:
            return ""
        return (status.plugin or "PreEnqueue") if status is not None else ""

    # --- the cluster ----------------------------------------------------------------------------
    def add(self, *objects: KubeObject) -> SchedulerHarness:
        """Nodes, bound pods and any other objects. New nodes and bound pods are cluster events: pods
        waiting in the queue whose rejecting plugins' hints accept them are moved to be retried."""
        by_resource = dump_from_objects(objects)
        unknown = [
            str(o.get("kind"))
            for o in objects
            if resource_of_kind(str(o.get("kind")), str(o.get("apiVersion") or "")) is None
        ]
        if unknown:
            raise ValueError(f"cannot add {', '.join(unknown)}: not a kind the scheduler reads")
        self.sim.add_objects(by_resource)
        for node in by_resource.get("nodes", ()):
            self.queue.move_all_to_active_or_backoff(NODE_ADD, None, node)
        for bound in by_resource.get("pods", ()):
            if pod_spec(bound).get("nodeName"):
                self.queue.assigned_pod_added(bound)
        return self

    def remove_node(self, name: str) -> None:
        self.sim.remove_node(name)

    def remove_pod(self, key: str) -> None:
        self.sim.remove_pod(key)

    def advance(self, seconds: float) -> None:
        """Move the clock (backoffs expire, plugins reading ``handle.now()`` see it)."""
        self.clock.time += seconds

    # --- scheduling -----------------------------------------------------------------------------
    def schedule(self, *pods: KubeObject) -> list[Result]:
        """Queue ``pods`` (Pods, or Deployments/StatefulSets/ReplicaSets/Jobs as their pods), then run
        cycles until the active queue is empty; the results of ``pods``, in the order given."""
        expanded = expand_pods(pods)
        for p in expanded:
            self.queue.add(p)
        self.run()
        keys = [namespaced_name(p) for p in expanded]
        for key in keys:
            if key not in self.results:
                where = self.queue.where(key) or "?"
                self.results[key] = Result(key, None, f"not attempted: in {where}", gated_by=where)
        return [self.results[k] for k in keys]

    def schedule_one(self, pod: KubeObject) -> Result:
        (result,) = self.schedule(pod)
        return result

    def run(self, max_cycles: int = 10_000) -> list[Result]:
        """Cycles until nothing is ready to pop (pods woken by ``add`` included); their results."""
        done: list[Result] = []
        attempted: set[str] = set()
        for _ in range(max_cycles):
            qpi = self.queue.pop_nowait()
            if qpi is None:
                break
            if qpi.key in attempted:
                # popped early from backoffQ in this very run: leave it for the next one
                self.queue.add_unschedulable_if_not_present(qpi)
                break
            attempted.add(qpi.key)
            placement = self.sim.place(qpi.pod)
            if placement.node is not None:
                self.queue.done(qpi)
            else:
                qpi.unschedulable_plugins = set(placement.rejected_by)
                self.queue.add_unschedulable_if_not_present(qpi)
            done.append(self._result(placement))
        return done

    def _result(self, placement: Placement) -> Result:
        result = Result(
            placement.pod, placement.node, placement.reason, placement.record, placement.rejected_by
        )
        self.results[placement.pod] = result
        return result

    def pending(self) -> list[str]:
        """Keys of the pods still in the queue (active, backoff, unschedulable or gated)."""
        return sorted(namespaced_name(p) for pods in self.queue.pending_pods().values() for p in pods)

    def placements(self) -> dict[str, str | None]:
        return {key: r.node for key, r in self.results.items()}

    def node_labels(self, name: str) -> Mapping[str, str]:
        return self.sim.node_labels(name)


def _installed_entry_points() -> dict[str, Any]:
    """The objects of the ``py_scheduler.plugins`` entry points that load."""
    found: dict[str, Any] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            found[ep.name] = ep.load()
        except Exception:  # reported by the config loader when the config uses it
            continue
    return found


def _name_of(obj: Any) -> str:
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"{obj!r}: a plugin needs a `name` (a non-empty str); pass a mapping name -> factory"
        )
    return name
