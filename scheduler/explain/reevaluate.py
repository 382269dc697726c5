"""``explain`` without the scheduler's records: the pod judged now, on a read-only snapshot.

When the record cannot be had (no Service, no permission, the scheduler restarted), ``explain`` runs the
pod through the same frameworks ``simulate`` builds (:class:`Simulation`), with the scheduler's
configuration from the first source that answers: ``--config``, the ConfigMap ``deploy/`` mounts, the
scheduler's ``/configz``, else the built-in defaults. The answer is a re-evaluation, labelled as such:
the cluster may have changed since the scheduler's attempt, and PostFilter (preemption), Reserve, Permit
and binding are not run. Nothing is written to the cluster.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from scheduler.config import ConfigError, load_config_with_plugins
from scheduler.config.loader import LoadedConfig, parse_config_with_plugins
from scheduler.explain.render import render_attempt
from scheduler.explain.simulate import Simulation
from scheduler.framework.interface import PluginFactory
from scheduler.framework.objects import namespaced_name, pod_spec

# The ConfigMap deploy/ (and the chart) mount as the scheduler's --config, and its key.
CONFIG_MAP = "py-scheduler-config"
CONFIG_MAP_KEY = "config.yaml"
LABEL = "RE-EVALUATION NOW (not the scheduler's recorded decision)"

# GET path -> (HTTP status, body); status 0 for no answer at all.
Getter = Callable[[str], tuple[int, bytes]]


@dataclass
class ConfigSource:
    """The configuration used, where it came from, and the sources tried before it."""

    loaded: LoadedConfig
    source: str
    tried: list[str] = field(default_factory=list)


def find_config(
    *,
    config_path: str | None,
    api_get: Getter,
    config_map_namespace: str,
    configz_get: Getter | None,
    registry: Mapping[str, PluginFactory],
) -> ConfigSource:
    """--config, else the ConfigMap, else /configz, else the defaults; each failure is remembered."""
    if config_path:
        return ConfigSource(
            load_config_with_plugins(config_path, registry=registry), f"--config {config_path}"
        )
    tried: list[str] = []
    where = f"ConfigMap {config_map_namespace}/{CONFIG_MAP}"
    status, body = api_get(f"/api/v1/namespaces/{config_map_namespace}/configmaps/{CONFIG_MAP}")
    if status == 200:
        text = (orjson.loads(body).get("data") or {}).get(CONFIG_MAP_KEY)
        if text:
            try:
                loaded = parse_config_with_plugins(text, registry=registry, source_name=where)
                return ConfigSource(loaded, f"{where} (key {CONFIG_MAP_KEY})", tried)
            except ConfigError as err:
                tried.append(f"{where}: {err}")
        else:
            tried.append(f"{where}: no key {CONFIG_MAP_KEY}")
    else:
        tried.append(f"{where}: {_status_text(status, body)}")
    if configz_get is not None:
        status, body = configz_get("/configz")
        if status == 200:
            try:
                component = orjson.loads(body).get("componentconfig") or {}
                loaded = parse_config_with_plugins(component, registry=registry, source_name="/configz")
                return ConfigSource(loaded, "the scheduler's /configz", tried)
            except (ConfigError, orjson.JSONDecodeError, AttributeError) as err:
                tried.append(f"/configz: {err}")
        else:
            tried.append(f"/configz: {_status_text(status, body)}")
    defaults = load_config_with_plugins(None, registry=registry)
    return ConfigSource(defaults, "the built-in defaults (pass --config to use the scheduler's)", tried)


def _status_text(status: int, body: bytes) -> str:
    if status == 0:
        return f"no answer ({body.decode(errors='replace')[:200]})"
    message = ""
    try:
        doc = orjson.loads(body)
        if isinstance(doc, dict):
            message = str(doc.get("message") or doc.get("error") or "")
    except orjson.JSONDecodeError:
        message = body.decode(errors="replace").strip()[:200]
    return f"HTTP {status}" + (f" ({message})" if message else "")


@dataclass
class Reevaluation:
    pod: str
    config: ConfigSource
    record: dict[str, Any] | None
    note: str
    nodes: int
    pods: int
    taken_at: float
    # The kinds the configuration's plugins read that could not be listed, with the API server's answer.
    not_read: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "reevaluation": True,
            "label": LABEL,
            "configSource": self.config.source,
            "configTried": self.config.tried,
            "snapshot": {
                "nodes": self.nodes,
                "pods": self.pods,
                "takenAt": self.taken_at,
                "notRead": dict(self.not_read),
            },
            "note": self.note,
            "attempts": [self.record] if self.record else [],
        }

    def render(self) -> str:
        when = datetime.datetime.fromtimestamp(self.taken_at, tz=datetime.UTC)
        lines = [
            f"Pod {self.pod}: {LABEL}",
            f"  Judged at {when:%Y-%m-%dT%H:%M:%SZ} against a read-only snapshot of the cluster "
            f"({self.nodes} nodes, {self.pods} pods), with the configuration from {self.config.source}.",
        ]
        lines += [f"  Configuration not read from {tried}" for tried in self.config.tried]
        if self.not_read:
            lines.append(
                "  Not in the snapshot though the configuration reads them (the verdict may differ): "
                + unlisted_text(self.not_read)
            )
        lines.append(
            "  The scheduler's own attempt may have seen another cluster; PostFilter (preemption), Reserve, "
            "Permit and binding are not run."
        )
        if self.note:
            lines.append(f"  {self.note}")
        if self.record is not None:
            lines.append("")
            lines.extend(render_attempt(self.record))
        return "\n".join(lines) + "\n"


def reevaluate(
    key: str,
    objects: Mapping[str, Sequence[Mapping[str, Any]]],
    config: ConfigSource,
    *,
    now: float,
    unlisted: Mapping[str, str] | None = None,
) -> Reevaluation | None:
    """The pod ``key`` of ``objects`` through one cycle with ``config``; None when it is not listed.
    ``unlisted``: the kinds that could not be listed (resource name -> the API server's answer); those
    the configuration's plugins read are named in the answer."""
    pods = list(objects.get("pods") or ())
    found = next((p for p in pods if namespaced_name(p) == key), None)
    if found is None:
        return None
    pod: dict[str, Any] = copy.deepcopy(dict(found))
    note = ""
    node = pod_spec(pod).get("nodeName")
    others = dict(objects)
    if node:
        # Judged as if it were pending again: the cluster without it.
        note = f"The pod is bound to {node}; judged as if it were pending again (the cluster without it)."
        others["pods"] = [p for p in pods if namespaced_name(p) != key]
        pod["spec"].pop("nodeName", None)
    simulation = Simulation(config.loaded.config, config.loaded.registry, others, clock=lambda: now)
    placement = simulation.place(pod)
    record = placement.record.to_json() if placement.record is not None else None
    if record is None:
        note = (note + " " if note else "") + f"Not evaluated: {placement.reason}"
    nodes = len(objects.get("nodes") or ())
    not_read = {name: answer for name, answer in (unlisted or {}).items() if name in simulation.read_kinds}
    return Reevaluation(key, config, record, note, nodes, len(pods), now, not_read)


def unlisted_text(unlisted: Mapping[str, str]) -> str:
    """``HTTP 403: a, b; HTTP 500: c``: kinds not read, grouped by the API server's answer."""
    by_answer: dict[str, list[str]] = {}
    for name, answer in unlisted.items():
        by_answer.setdefault(answer, []).append(name)
    return "; ".join(f"{answer}: {', '.join(names)}" for answer, names in by_answer.items())
