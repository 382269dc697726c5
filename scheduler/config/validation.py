"""Semantic validation (``pkg/scheduler/apis/config/validation/validation.go`` and component-base).

Runs on the decoded, defaulted config. With a registry it also checks plugin names, which upstream
only finds when it builds the framework; finding them here reports every bad name in one pass.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from scheduler.config.duration import format_duration
from scheduler.config.errors import ErrorList, FieldPath
from scheduler.config.extenders import validate_extenders
from scheduler.config.types import (
    API_VERSION,
    DISABLE_ALL,
    LEASES_RESOURCE_LOCK,
    MULTI_POINT,
    PLUGIN_SET_NAMES,
    LeaderElectionConfig,
    PluginSet,
    SchedulerConfig,
    SchedulerProfile,
)
from scheduler.framework.interface import PluginFactory

log = logging.getLogger(__name__)

# client-go's leaderelection.JitterFactor: a retry may come up to 20% late, and the renew deadline
# must still leave room for it. Upstream only finds this when it builds the leader elector.
LEADER_ELECTION_JITTER_FACTOR = 1.2

# Upstream (framework ``getValidScoreWeights``) treats a weight of 0 as 1 and otherwise only guards the
# int64 sum of weight * MaxNodeScore; weights are int32, so the decoder already bounds them. A negative
# weight makes that guard fail ("total score of Score plugins could overflow"), so it is refused here.
MIN_SCORE_WEIGHT = 0
MAX_SCORE_WEIGHT = 2**31 - 1
_WEIGHTED_SETS = frozenset({"score", MULTI_POINT})

# Plugins removed from v1 (upstream ``invalidPluginsByVersion``).
REMOVED_PLUGINS = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})


def validate_config(
    cfg: SchedulerConfig,
    errs: ErrorList,
    registry: Mapping[str, PluginFactory] | None = None,
    load_errors: Mapping[str, str] | None = None,
) -> None:
    """Append every problem of ``cfg`` to ``errs``. ``load_errors``: why an out-of-tree name failed."""
    load_errors = load_errors or {}
    root = FieldPath()
    if cfg.client_connection.burst < 0:
        errs.invalid(
            root.child("clientConnection", "burst"), cfg.client_connection.burst, "must be non-negative"
        )
    _validate_leader_election(cfg.leader_election, root.child("leaderElection"), errs)
    if cfg.parallelism <= 0:
        errs.invalid(
            root.child("parallelism"), cfg.parallelism, "should be an integer value greater than zero"
        )

    profiles_path = root.child("profiles")
    seen_names: dict[str, int] = {}
    for i, profile in enumerate(cfg.profiles):
        path = profiles_path.index(i)
        _validate_profile(profile, path, errs, registry, load_errors)
        if profile.scheduler_name in seen_names and profile.scheduler_name:
            errs.duplicate(path.child("schedulerName"), profile.scheduler_name)
        seen_names.setdefault(profile.scheduler_name, i)
    _validate_common_queue_sort(cfg.profiles, profiles_path, errs)

    _validate_percentage(cfg.percentage_of_nodes_to_score, root.child("percentageOfNodesToScore"), errs)
    validate_extenders(cfg.extenders, root.child("extenders"), errs)
    if cfg.pod_initial_backoff_seconds <= 0:
        errs.invalid(
            root.child("podInitialBackoffSeconds"), cfg.pod_initial_backoff_seconds, "must be greater than 0"
        )
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        errs.invalid(
            root.child("podMaxBackoffSeconds"),
            cfg.pod_max_backoff_seconds,
            "must be greater than or equal to PodInitialBackoffSeconds",
        )


def _validate_leader_election(le: LeaderElectionConfig, path: FieldPath, errs: ErrorList) -> None:
    if not le.leader_elect:
        return
    durations = (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    )
    for name, seconds in durations:
        if seconds <= 0:
            errs.invalid(path.child(name), format_duration(seconds), "must be greater than zero")
    if le.lease_duration <= le.renew_deadline:
        errs.invalid(
            path.child("leaseDuration"),
            format_duration(le.lease_duration),
            f"must be greater than `renewDeadline` ({format_duration(le.renew_deadline)})",
        )
    if le.retry_period > 0 and le.renew_deadline <= LEADER_ELECTION_JITTER_FACTOR * le.retry_period:
        errs.invalid(
            path.child("renewDeadline"),
            format_duration(le.renew_deadline),
            f"must be greater than retryPeriod*{LEADER_ELECTION_JITTER_FACTOR} "
            f"({format_duration(le.retry_period * LEADER_ELECTION_JITTER_FACTOR)})",
        )
    if le.resource_lock != LEASES_RESOURCE_LOCK:
        errs.invalid(
            path.child("resourceLock"),
            le.resource_lock,
            f'resourceLock value must be "{LEASES_RESOURCE_LOCK}"',
        )


def _validate_percentage(value: int | None, path: FieldPath, errs: ErrorList) -> None:
    if value is not None and not 0 <= value <= 100:
        errs.invalid(path, value, "not in valid range [0-100]")


def _validate_profile(
    profile: SchedulerProfile,
    path: FieldPath,
    errs: ErrorList,
    registry: Mapping[str, PluginFactory] | None,
    load_errors: Mapping[str, str],
) -> None:
    if not profile.scheduler_name:
        errs.required(path.child("schedulerName"))
    _validate_percentage(profile.percentage_of_nodes_to_score, path.child("percentageOfNodesToScore"), errs)
    for set_name in PLUGIN_SET_NAMES:
        _validate_plugin_set(
            profile.plugins[set_name],
            set_name,
            path.child("plugins", set_name),
            errs=errs,
            registry=registry,
            load_errors=load_errors,
        )

    seen: set[str] = set()
    for j, pc in enumerate(profile.plugin_config):
        entry_path = path.child("pluginConfig").index(j)
        if not pc.name:
            errs.required(entry_path.child("name"))
            continue
        if pc.name in seen:
            errs.duplicate(entry_path, pc.name)
        seen.add(pc.name)
        if pc.name in REMOVED_PLUGINS:
            errs.invalid(entry_path, pc.name, _removed_detail())
        elif registry is not None and pc.name not in registry:
            # kube-scheduler ignores args of a plugin it does not have; an enabled one is still an error.
            log.warning(
                "%s: args for plugin %r ignored: %s",
                entry_path.child("name"),
                pc.name,
                _unknown_detail(pc.name, load_errors),
            )


def _validate_plugin_set(
    ps: PluginSet,
    set_name: str,
    path: FieldPath,
    *,
    errs: ErrorList,
    registry: Mapping[str, PluginFactory] | None,
    load_errors: Mapping[str, str],
) -> None:
    seen: set[str] = set()
    for j, ref in enumerate(ps.enabled):
        entry_path = path.child("enabled").index(j)
        if not ref.name:
            errs.required(entry_path.child("name"))
            continue
        if ref.name in seen:
            # Upstream appends both and the framework then fails with "already registered".
            errs.duplicate(entry_path.child("name"), ref.name)
        seen.add(ref.name)
        if ref.name in REMOVED_PLUGINS:
            errs.invalid(entry_path, ref.name, _removed_detail())
        elif registry is not None and ref.name not in registry:
            errs.invalid(entry_path.child("name"), ref.name, _unknown_detail(ref.name, load_errors))
        if set_name in _WEIGHTED_SETS and ref.weight is not None and ref.weight < MIN_SCORE_WEIGHT:
            errs.invalid(
                entry_path.child("weight"),
                ref.weight,
                "must not be negative (kube-scheduler: total score of Score plugins could overflow)",
            )
    for j, name in enumerate(ps.disabled):
        entry_path = path.child("disabled").index(j)
        if not name:
            errs.required(entry_path.child("name"))
        elif name != DISABLE_ALL and registry is not None and name not in registry:
            # Upstream ignores these; disabling a plugin this scheduler lacks is harmless.
            log.warning("%s: disabled plugin %r is not registered; ignoring", entry_path, name)


def _removed_detail() -> str:
    return f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration is version "{API_VERSION}")'


def _unknown_detail(name: str, load_errors: Mapping[str, str]) -> str:
    if name in load_errors:
        return load_errors[name]
    return (
        'no plugin is registered under this name (out-of-tree plugins: "package.module:ClassName" '
        'or the "py_scheduler.plugins" entry-point group)'
    )


def _validate_common_queue_sort(
    profiles: tuple[SchedulerProfile, ...], path: FieldPath, errs: ErrorList
) -> None:
    """All profiles share one queue, so they must configure one queue sort (upstream rule)."""
    if not profiles:
        return
    canon = profiles[0].plugins["queueSort"]
    queue_sort_name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        errs.invalid(
            path.index(0).child("plugins", "queueSort", "enabled"),
            len(canon.enabled),
            "only one queue sort plugin can be enabled",
        )
    canon_args = profiles[0].args_for(queue_sort_name) if queue_sort_name else None
    for i in range(1, len(profiles)):
        current = profiles[i].plugins["queueSort"]
        if current != canon:
            errs.invalid(
                path.index(i).child("plugins", "queueSort"),
                _plugin_set_value(current),
                "must be the same for all profiles",
            )
        for j, pc in enumerate(profiles[i].plugin_config):
            if queue_sort_name and pc.name == queue_sort_name and dict(pc.args) != dict(canon_args or {}):
                errs.invalid(
                    path.index(i).child("pluginConfig").index(j).child("args"),
                    dict(pc.args),
                    "queueSort must be the same for all profiles",
                )


def _plugin_set_value(ps: PluginSet) -> dict[str, list[str]]:
    return {"enabled": [r.name for r in ps.enabled], "disabled": list(ps.disabled)}
