"""Write a config back as a v1 document (what ``kube-scheduler --write-config-to`` does).

The output is the defaulted config, so it documents every effective value; parsing it gives back an
equal ``SchedulerConfig``. Profile ``plugins`` are written as given, not merged with the defaults.
"""

from __future__ import annotations

from typing import Any

import yaml

from scheduler.config.duration import format_duration
from scheduler.config.extenders import extenders_to_dict
from scheduler.config.types import (
    API_VERSION,
    KIND,
    PLUGIN_SET_NAMES,
    PluginRef,
    PluginSet,
    SchedulerConfig,
    SchedulerProfile,
)


def config_to_dict(cfg: SchedulerConfig) -> dict[str, Any]:
    le = cfg.leader_election
    cc = cfg.client_connection
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "parallelism": cfg.parallelism,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_duration(le.lease_duration),
            "renewDeadline": format_duration(le.renew_deadline),
            "retryPeriod": format_duration(le.retry_period),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "clientConnection": {
            "kubeconfig": cc.kubeconfig,
            "acceptContentTypes": cc.accept_content_types,
            "contentType": cc.content_type,
            "qps": cc.qps,
            "burst": cc.burst,
        },
        "enableProfiling": cfg.enable_profiling,
        "enableContentionProfiling": cfg.enable_contention_profiling,
        "percentageOfNodesToScore": cfg.percentage_of_nodes_to_score,
        "podInitialBackoffSeconds": cfg.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": cfg.pod_max_backoff_seconds,
        "profiles": [_profile_to_dict(p) for p in cfg.profiles],
        "delayCacheUntilActive": cfg.delay_cache_until_active,
        **({"extenders": extenders_to_dict(cfg.extenders)} if cfg.extenders else {}),
    }


def _profile_to_dict(profile: SchedulerProfile) -> dict[str, Any]:
    out: dict[str, Any] = {"schedulerName": profile.scheduler_name}
    if profile.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    plugins = {
        name: _plugin_set_to_dict(profile.plugins[name])
        for name in PLUGIN_SET_NAMES
        if name in profile.plugins.sets
    }
    if plugins:
        out["plugins"] = plugins
    if profile.plugin_config:
        out["pluginConfig"] = [{"name": pc.name, "args": dict(pc.args)} for pc in profile.plugin_config]
    return out


def _plugin_set_to_dict(ps: PluginSet) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if ps.enabled:
        out["enabled"] = [_ref_to_dict(r) for r in ps.enabled]
    if ps.disabled:
        out["disabled"] = [{"name": n} for n in ps.disabled]
    return out


def _ref_to_dict(ref: PluginRef) -> dict[str, Any]:
    return {"name": ref.name} if ref.weight is None else {"name": ref.name, "weight": ref.weight}


def dump_config(cfg: SchedulerConfig) -> str:
    """The config as a YAML document."""
    text: str = yaml.safe_dump(config_to_dict(cfg), sort_keys=False, allow_unicode=True)
    return text
