"""Builds one Framework per profile from the resolved configuration and the plugin registry."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from typing import Any

from scheduler import metrics
from scheduler.cache import Snapshot
from scheduler.client.api import SchedulerApi
from scheduler.config import SchedulerConfig, resolve_profile
from scheduler.cycle.schedule_one import POD_SPEC_PLUGIN
from scheduler.features import DEFAULT_FEATURE_GATES, FeatureGates
from scheduler.framework.conformance import PluginCheckError, plugin_problems
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.handle import (
    NodeTrial,
    PreemptionExecutorHandle,
    SnapshotLister,
    WaitingPodHandle,
)
from scheduler.framework.interface import Plugin, PluginFactory
from scheduler.framework.listers import KubeObject, Lister, ResourceSpec, StaticLister
from scheduler.framework.load_metrics import LoadMetricsSource, NoLoadMetrics, TrimaranSpec
from scheduler.framework.runtime import (
    PLUGIN_METRICS_SAMPLE_PERCENT,
    Framework,
    PluginSet,
    implemented_points,
)
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.framework.unsupported import UNSUPPORTED_FIELDS_PLUGIN, UnsupportedFieldGuard
from scheduler.plugins.registry import default_multipoint, gated_off
from scheduling_queue.types import ActionType, ClusterEvent, ClusterEventWithHint, Resource

# config point name -> PluginSet attribute
POINT_ATTRS: dict[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "queue_sort",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}


class FrameworkHandle:
    """The Handle plugins get: the live snapshot of the current cycle, the clock and the binder."""

    def __init__(
        self,
        profile_name: str,
        snapshot: Callable[[], Snapshot],
        api: SchedulerApi | None,
        clock: Callable[[], float],
        waiting_pods: Callable[[], Mapping[str, WaitingPodHandle]] = dict,
        listers: Callable[[ResourceSpec], Lister] | None = None,
        load_metrics: Callable[[TrimaranSpec], LoadMetricsSource] | None = None,
    ) -> None:
        self._listers = listers
        self._load_metrics = load_metrics
        self._waiting_pods = waiting_pods
        self._profile_name = profile_name
        self._snapshot = snapshot
        self._api = api
        self._clock = clock
        self._framework: Framework | None = None

    def attach(self, framework: Framework) -> None:
        """The profile's framework, once built: the what-if runs below delegate to it."""
        self._framework = framework

    @property
    def framework(self) -> Framework:
        if self._framework is None:
            raise RuntimeError(f"profile {self._profile_name}: the framework is not built yet")
        return self._framework

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self.framework.nominated_pods_for_node(node_name)

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self.framework.run_filters_with_nominated_pods(state, pod, node)

    def pre_filter_extensions_active(self, state: CycleState) -> bool:
        return self.framework.pre_filter_extensions_active(state)

    def sign_pod(self, pod: PodInfo) -> Hashable | None:
        return self.framework.sign_pod(pod)

    def amounts_trial(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> NodeTrial | None:
        return self.framework.amounts_trial(state, pod, node)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self.framework.run_pre_filter_extension_add_pod(state, pod, to_add, node)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self.framework.run_pre_filter_extension_remove_pod(state, pod, to_remove, node)

    @property
    def preemption_executor(self) -> PreemptionExecutorHandle | None:
        return None if self._framework is None else self._framework.preemption_executor

    @property
    def snapshot(self) -> SnapshotLister:
        return self._snapshot()

    @property
    def profile_name(self) -> str:
        return self._profile_name

    def now(self) -> float:
        return self._clock()

    def bind_pod(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        if self._api is None:
            raise RuntimeError("this handle has no API connection")
        self._api.bind(namespace, name, uid, node_name)

    def get_waiting_pod(self, key: str) -> WaitingPodHandle | None:
        return self._waiting_pods().get(key)

    def waiting_pods(self) -> Sequence[WaitingPodHandle]:
        return list(self._waiting_pods().values())

    def api_request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> Mapping[str, Any]:
        if self._api is None:
            raise RuntimeError("this handle has no API connection")
        return self._api.request_json(method, path, body, content_type=content_type)

    def update_object(self, resource: ResourceSpec, obj: KubeObject) -> KubeObject:
        if self._api is None:
            raise RuntimeError("this handle has no API connection")
        return self._api.update_object(resource, obj)

    def lister(self, resource: ResourceSpec) -> Lister:
        if self._listers is None:
            # A handle without informers (tests, simulate without a cluster) lists nothing.
            return StaticLister()
        return self._listers(resource)

    def load_metrics(self, spec: TrimaranSpec) -> LoadMetricsSource:
        if self._load_metrics is None:
            # Simulate and tests without a scheduler: no sample, so load-aware plugins fall back.
            return NoLoadMetrics()
        return self._load_metrics(spec)


class PluginInstances:
    """Each plugin of one profile, built once with its real args (upstream's NewFramework).

    Resolving a profile needs a plugin's extension points, which are read from the instance itself;
    the framework then uses those very instances. Building a throwaway instance with ``{}`` args just
    to learn its points would fail for a plugin whose factory requires args, and would run every
    factory's side effects (listers, threads) twice.
    """

    def __init__(
        self,
        registry: Mapping[str, PluginFactory],
        args_for: Callable[[str], Mapping[str, Any] | None],
        handle: FrameworkHandle,
    ) -> None:
        self._registry = registry
        self._args_for = args_for
        self._handle = handle
        self._instances: dict[str, Plugin] = {}

    @property
    def handle(self) -> FrameworkHandle:
        return self._handle

    def get(self, name: str) -> Plugin:
        plugin = self._instances.get(name)
        if plugin is None:
            plugin = self._registry[name](self._args_for(name) or {}, self._handle)
            # Whatever built it (a class, a factory function, an in-tree plugin), the instance the
            # framework will call must match the protocols: one line naming plugin and method.
            problems = plugin_problems(plugin)
            if problems:
                own = getattr(plugin, "name", "")
                label = f'plugin "{name}"' + (f' (name "{own}")' if own and own != name else "")
                raise PluginCheckError(f"{label}: {'; '.join(problems)}")
            self._instances[name] = plugin
        return plugin

    def implements(self, name: str) -> set[str]:
        """The extension points of the plugin: the ``implements`` callback of ``resolve_profile``."""
        return implemented_points(self.get(name))


def build_framework(
    profile_name: str,
    points: Mapping[str, Sequence[str]],
    *,
    registry: Mapping[str, PluginFactory],
    plugins: PluginInstances,
    score_weights: Mapping[str, int],
    percentage_of_nodes_to_score: int | None,
    gated_off: Collection[str] = (),
) -> Framework:
    # One instance per plugin name, shared by every extension point it is enabled at.
    instances = {name: plugins.get(name) for names in points.values() for name in names}
    plugin_set = PluginSet()
    for point, names in points.items():
        attr = POINT_ATTRS[point]
        target: list[Any] = getattr(plugin_set, attr)
        for name in names:
            plugin = instances[name]
            if point not in implemented_points(plugin):
                raise ValueError(f"plugin {name!r} does not implement extension point {point!r}")
            target.append(plugin)

    # Weights are configured by config name; the runtime and metrics know plugins by their own name.
    weights = {instances[name].name: weight for name, weight in score_weights.items() if name in instances}

    return Framework(
        profile_name,
        plugin_set,
        score_weights=weights,
        percentage_of_nodes_to_score=percentage_of_nodes_to_score,
        observe_point=metrics.extension_point_observer(profile_name),
        observe_plugin=metrics.observe_plugin,
        guard=UnsupportedFieldGuard(set(registry) - set(gated_off)),
        plugin_metrics_sample_percent=_plugin_metrics_sample_percent(),
    )


# Tests only: upstream samples 10% of cycles and has no knob; an integration test that counts the
# samples sets 100 so its assertions are exact rather than probabilistic.
SAMPLE_PERCENT_ENV = "PY_SCHEDULER_PLUGIN_METRICS_SAMPLE_PERCENT"


def _plugin_metrics_sample_percent() -> int:
    value = os.environ.get(SAMPLE_PERCENT_ENV, "")
    try:
        return min(max(int(value), 0), 100) if value else PLUGIN_METRICS_SAMPLE_PERCENT
    except ValueError:
        raise ValueError(f"{SAMPLE_PERCENT_ENV}={value!r}: want an integer percentage") from None


def build_frameworks(
    config: SchedulerConfig,
    registry: Mapping[str, PluginFactory],
    handle_for: Callable[[str], FrameworkHandle],
    features: FeatureGates = DEFAULT_FEATURE_GATES,
) -> dict[str, Framework]:
    """One Framework per configured profile, keyed by schedulerName; ``features`` decide the default
    profile's gated plugins."""
    frameworks: dict[str, Framework] = {}
    defaults = default_multipoint(features)
    for profile in config.profiles:
        plugins = PluginInstances(registry, profile.args_for, handle_for(profile.scheduler_name))
        resolved = resolve_profile(profile, registry, defaults, plugins.implements)
        percentage = resolved.percentage_of_nodes_to_score
        if percentage is None:
            percentage = config.percentage_of_nodes_to_score
        fwk = frameworks[resolved.scheduler_name] = build_framework(
            resolved.scheduler_name,
            resolved.plugins,
            registry=registry,
            plugins=plugins,
            score_weights=resolved.score_weights,
            percentage_of_nodes_to_score=percentage,
            gated_off=gated_off(features),
        )
        plugins.handle.attach(fwk)
    return frameworks


def queue_hints(frameworks: Mapping[str, Framework]) -> dict[str, list[ClusterEventWithHint]]:
    """The queue's hint registrations: every profile's plugins, plus the pod-spec pseudo plugin."""
    merged: dict[str, list[ClusterEventWithHint]] = {}
    for fwk in frameworks.values():
        for plugin, events in fwk.events_to_register().items():
            merged.setdefault(plugin, events)
    # A pod whose spec could not be read, or that uses a field this build cannot honour, is retried
    # when the pod itself is updated (its own update is a TargetPod event).
    pod_updated = ClusterEventWithHint(ClusterEvent(Resource.TargetPod, ActionType.Update))
    merged[POD_SPEC_PLUGIN] = [pod_updated]
    merged[UNSUPPORTED_FIELDS_PLUGIN] = [pod_updated]
    return merged
