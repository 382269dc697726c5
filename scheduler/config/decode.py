"""Strict decoding of a KubeSchedulerConfiguration document into defaulted ``types`` objects.

Mirrors upstream's strict decoder (unknown fields are errors) and ``SetDefaults_KubeSchedulerConfiguration``
(``pkg/scheduler/apis/config/v1/defaults.go``): a missing or null field takes its default; for the
leader-election durations, content type, qps and burst a zero value counts as unset, as upstream.
Type errors are collected with the field path; the object is still built (with defaults) so semantic
validation can report the remaining problems in the same pass.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from scheduler.config.decoder import Decoder
from scheduler.config.errors import ErrorList, FieldPath
from scheduler.config.extenders import decode_extenders
from scheduler.config.types import (
    API_VERSION,
    DEFAULT_BURST,
    DEFAULT_CONTENT_TYPE,
    DEFAULT_LEASE_DURATION,
    DEFAULT_LEASE_NAME,
    DEFAULT_LEASE_NAMESPACE,
    DEFAULT_PARALLELISM,
    DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE,
    DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_BACKOFF_SECONDS,
    DEFAULT_QPS,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    DEFAULT_SCHEDULER_NAME,
    JSON_CONTENT_TYPE,
    KIND,
    LEASES_RESOURCE_LOCK,
    PLUGIN_SET_NAMES,
    PROTOBUF_CONTENT_TYPE,
    ClientConnectionConfig,
    LeaderElectionConfig,
    PluginConfig,
    PluginRef,
    Plugins,
    PluginSet,
    SchedulerConfig,
    SchedulerProfile,
)

log = logging.getLogger(__name__)

_TOP_FIELDS = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
)
# Fields that v1beta1/v1beta2 had and v1 dropped: upstream's strict decoder rejects them as unknown.
_LEADER_ELECTION_FIELDS = (
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
)
_CLIENT_CONNECTION_FIELDS = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")
_PROFILE_FIELDS = (
    "schedulerName",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "plugins",
    "pluginConfig",
)
# Workload-scheduling points of v1.37.2's Plugins (feature-gated). Accepted when empty so configs dumped by
# kube-scheduler still load. Placements are not implemented; the pod group part of a PostFilter plugin
# (DefaultPreemption's PodGroupPostFilter) runs with the profile's PostFilter plugins instead.
_UNSUPPORTED_PLUGIN_SETS = ("placementGenerate", "placementScore", "podGroupPostFilter")
_PLUGIN_SET_FIELDS = ("enabled", "disabled")
_PLUGIN_FIELDS = ("name", "weight")
_PLUGIN_CONFIG_FIELDS = ("name", "args")


def decode_config(raw: Any, errs: ErrorList) -> SchedulerConfig:
    """Decode and default one document. Problems go to ``errs``; the result is always built."""
    dec = Decoder(errs)
    root = FieldPath()
    if not isinstance(raw, Mapping):
        errs.other(f"config must be a {KIND} object, got {type(raw).__name__}")
        return SchedulerConfig()
    top = dec.mapping(raw, root, _TOP_FIELDS)

    api_version = top.get("apiVersion")
    if api_version is None or api_version == "":
        errs.required(root.child("apiVersion"), f'must be "{API_VERSION}"')
    elif api_version != API_VERSION:
        errs.not_supported(root.child("apiVersion"), api_version, [API_VERSION])
    kind = top.get("kind")
    if kind is None or kind == "":
        errs.required(root.child("kind"), f'must be "{KIND}"')
    elif kind != KIND:
        errs.not_supported(root.child("kind"), kind, [KIND])

    _reject_placements(top, root, errs)

    enable_profiling = dec.boolean(top, "enableProfiling", root, True)
    return SchedulerConfig(
        parallelism=_int(dec.integer(top, "parallelism", root, DEFAULT_PARALLELISM)),
        leader_election=_decode_leader_election(dec, top.get("leaderElection"), root.child("leaderElection")),
        client_connection=_decode_client_connection(
            dec, top.get("clientConnection"), root.child("clientConnection")
        ),
        enable_profiling=enable_profiling,
        # Upstream: contention profiling defaults on only when profiling is on.
        enable_contention_profiling=dec.boolean(top, "enableContentionProfiling", root, enable_profiling),
        percentage_of_nodes_to_score=_int(
            dec.integer(top, "percentageOfNodesToScore", root, DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE)
        ),
        pod_initial_backoff_seconds=_int(
            dec.integer(top, "podInitialBackoffSeconds", root, DEFAULT_POD_INITIAL_BACKOFF_SECONDS, bits=64)
        ),
        pod_max_backoff_seconds=_int(
            dec.integer(top, "podMaxBackoffSeconds", root, DEFAULT_POD_MAX_BACKOFF_SECONDS, bits=64)
        ),
        profiles=_decode_profiles(dec, top.get("profiles"), root.child("profiles")),
        delay_cache_until_active=dec.boolean(top, "delayCacheUntilActive", root, False),
        extenders=decode_extenders(dec, top.get("extenders"), root.child("extenders")),
    )


def _int(value: int | None) -> int:
    assert value is not None  # every caller passes a non-None default
    return value


def _reject_placements(d: Mapping[str, Any], path: FieldPath, errs: ErrorList) -> None:
    value = d.get("percentageOfPlacementsToScore")
    if value not in (None, 0):
        errs.forbidden(
            path.child("percentageOfPlacementsToScore"),
            "workload (pod group) scheduling is not supported by py-scheduler",
        )


def _decode_leader_election(dec: Decoder, raw: Any, path: FieldPath) -> LeaderElectionConfig:
    d = dec.mapping(raw, path, _LEADER_ELECTION_FIELDS)
    return LeaderElectionConfig(
        leader_elect=dec.boolean(d, "leaderElect", path, True),
        lease_duration=dec.duration(d, "leaseDuration", path, DEFAULT_LEASE_DURATION),
        renew_deadline=dec.duration(d, "renewDeadline", path, DEFAULT_RENEW_DEADLINE),
        retry_period=dec.duration(d, "retryPeriod", path, DEFAULT_RETRY_PERIOD),
        resource_lock=dec.string(d, "resourceLock", path, "") or LEASES_RESOURCE_LOCK,
        resource_name=dec.string(d, "resourceName", path, "") or DEFAULT_LEASE_NAME,
        resource_namespace=dec.string(d, "resourceNamespace", path, "") or DEFAULT_LEASE_NAMESPACE,
    )


def _decode_client_connection(dec: Decoder, raw: Any, path: FieldPath) -> ClientConnectionConfig:
    d = dec.mapping(raw, path, _CLIENT_CONNECTION_FIELDS)
    content_type = dec.string(d, "contentType", path, "") or DEFAULT_CONTENT_TYPE
    if content_type not in (PROTOBUF_CONTENT_TYPE, JSON_CONTENT_TYPE):
        log.warning(
            "%s: %s is accepted but py-scheduler writes JSON with it", path.child("contentType"), content_type
        )
    return ClientConnectionConfig(
        kubeconfig=dec.string(d, "kubeconfig", path, ""),
        accept_content_types=dec.string(d, "acceptContentTypes", path, ""),
        content_type=content_type,
        qps=dec.number(d, "qps", path, DEFAULT_QPS) or DEFAULT_QPS,
        burst=_int(dec.integer(d, "burst", path, DEFAULT_BURST)) or DEFAULT_BURST,
    )


def _decode_profiles(dec: Decoder, raw: Any, path: FieldPath) -> tuple[SchedulerProfile, ...]:
    items = dec.sequence(raw, path)
    if not items:
        return (SchedulerProfile(),)
    profiles = []
    for i, item in enumerate(items):
        profile_path = path.index(i)
        d = dec.mapping(item, profile_path, _PROFILE_FIELDS)
        # Upstream names the profile only when there is exactly one; several need explicit names.
        default_name = DEFAULT_SCHEDULER_NAME if len(items) == 1 else ""
        _reject_placements(d, profile_path, dec.errs)
        profiles.append(
            SchedulerProfile(
                scheduler_name=dec.string(d, "schedulerName", profile_path, default_name),
                percentage_of_nodes_to_score=dec.integer(d, "percentageOfNodesToScore", profile_path, None),
                plugins=_decode_plugins(dec, d.get("plugins"), profile_path.child("plugins")),
                plugin_config=_decode_plugin_configs(
                    dec, d.get("pluginConfig"), profile_path.child("pluginConfig")
                ),
            )
        )
    return tuple(profiles)


def _decode_plugins(dec: Decoder, raw: Any, path: FieldPath) -> Plugins:
    d = dec.mapping(raw, path, (*PLUGIN_SET_NAMES, *_UNSUPPORTED_PLUGIN_SETS))
    sets: dict[str, PluginSet] = {}
    for name in PLUGIN_SET_NAMES:
        if name in d:
            sets[name] = _decode_plugin_set(dec, d[name], path.child(name))
    for name in _UNSUPPORTED_PLUGIN_SETS:
        if name in d and _decode_plugin_set(dec, d[name], path.child(name)) != PluginSet():
            dec.errs.forbidden(path.child(name), "this extension point is not supported by py-scheduler")
    return Plugins(sets)


def _decode_plugin_set(dec: Decoder, raw: Any, path: FieldPath) -> PluginSet:
    d = dec.mapping(raw, path, _PLUGIN_SET_FIELDS)
    enabled = []
    for j, item in enumerate(dec.sequence(d.get("enabled"), path.child("enabled"))):
        entry_path = path.child("enabled").index(j)
        e = dec.mapping(item, entry_path, _PLUGIN_FIELDS)
        enabled.append(
            PluginRef(
                name=dec.string(e, "name", entry_path, ""),
                weight=dec.integer(e, "weight", entry_path, None),
            )
        )
    disabled = []
    for j, item in enumerate(dec.sequence(d.get("disabled"), path.child("disabled"))):
        entry_path = path.child("disabled").index(j)
        e = dec.mapping(item, entry_path, _PLUGIN_FIELDS)
        # ``weight`` is part of upstream's Plugin type, so it decodes here too, and means nothing.
        dec.integer(e, "weight", entry_path, None)
        disabled.append(dec.string(e, "name", entry_path, ""))
    return PluginSet(enabled=tuple(enabled), disabled=tuple(disabled))


def _decode_plugin_configs(dec: Decoder, raw: Any, path: FieldPath) -> tuple[PluginConfig, ...]:
    out = []
    for j, item in enumerate(dec.sequence(raw, path)):
        entry_path = path.index(j)
        e = dec.mapping(item, entry_path, _PLUGIN_CONFIG_FIELDS)
        name = dec.string(e, "name", entry_path, "")
        out.append(
            PluginConfig(name=name, args=_decode_args(dec, e.get("args"), entry_path.child("args"), name))
        )
    return tuple(out)


def _decode_args(dec: Decoder, raw: Any, path: FieldPath, plugin: str) -> dict[str, Any]:
    """Plugin args stay free-form (the plugin validates them) except for the typed-object header."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        dec.errs.invalid(path, raw, "must be an object")
        return {}
    args = copy.deepcopy(dict(raw))
    api_version = args.pop("apiVersion", None)
    kind = args.pop("kind", None)
    if api_version is not None and api_version != API_VERSION:
        dec.errs.not_supported(path.child("apiVersion"), api_version, [API_VERSION])
    if kind is not None and plugin and kind != f"{plugin}Args":
        dec.errs.invalid(path.child("kind"), kind, f'has to match plugin args: expected "{plugin}Args"')
    return args
