"""The decoded, defaulted ``KubeSchedulerConfiguration`` (``k8s.io/kube-scheduler/config/v1``).

Python names are snake_case; the file uses upstream's camelCase. Durations are float seconds.
Values are immutable: one config object is shared by every component at start-up.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"

# Upstream defaults the profile to "default-scheduler" and the lease to "kube-scheduler". We are a
# *secondary* scheduler: taking either name would steal kube-scheduler's pods or fight over its lease
# (two schedulers holding one lease means only one of them ever schedules). Both default to our name.
DEFAULT_SCHEDULER_NAME = "py-scheduler"
DEFAULT_LEASE_NAME = "py-scheduler"
DEFAULT_LEASE_NAMESPACE = "kube-system"
LEASES_RESOURCE_LOCK = "leases"

# clientConnection.contentType: the body format of writes, protobuf by default as upstream. py-scheduler
# sends its per-pod Binding and Event as protobuf with it (scheduler.client.k8s_protobuf); everything else
# it writes, and all it reads, stays JSON (docs/architecture.md: objects are raw JSON dicts).
JSON_CONTENT_TYPE = "application/json"
PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
DEFAULT_CONTENT_TYPE = PROTOBUF_CONTENT_TYPE

DEFAULT_PARALLELISM = 16
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0  # 0 = adaptive (5%..50% by cluster size)
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10
DEFAULT_QPS = 50.0
DEFAULT_BURST = 100
DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0

# Extension points in the order of upstream's ``Plugins`` struct; ``multiPoint`` is not a point of its own.
EXTENSION_POINTS: tuple[str, ...] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)
MULTI_POINT = "multiPoint"
PLUGIN_SET_NAMES: tuple[str, ...] = (*EXTENSION_POINTS, MULTI_POINT)
DISABLE_ALL = "*"


@dataclass(frozen=True)
class PluginRef:
    """One ``enabled`` entry: a plugin name and, for Score plugins, an optional weight."""

    name: str
    weight: int | None = None


@dataclass(frozen=True)
class PluginSet:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[str, ...] = ()

    @property
    def disables_all(self) -> bool:
        return DISABLE_ALL in self.disabled


_EMPTY_SET = PluginSet()


@dataclass(frozen=True)
class Plugins:
    """The ``plugins`` of a profile, as written (not merged with the defaults), by camelCase name."""

    sets: Mapping[str, PluginSet] = field(default_factory=dict)

    def __getitem__(self, name: str) -> PluginSet:
        if name not in PLUGIN_SET_NAMES:
            raise KeyError(name)
        return self.sets.get(name, _EMPTY_SET)

    def __iter__(self) -> Iterator[tuple[str, PluginSet]]:
        for name in PLUGIN_SET_NAMES:
            yield name, self[name]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Plugins):
            return NotImplemented
        return all(self[n] == other[n] for n in PLUGIN_SET_NAMES)

    def __hash__(self) -> int:
        return hash(tuple(self[n] for n in PLUGIN_SET_NAMES))

    def enabled_names(self) -> set[str]:
        return {ref.name for _, ps in self for ref in ps.enabled}


@dataclass(frozen=True)
class PluginConfig:
    """A ``pluginConfig`` entry. ``args`` has ``apiVersion``/``kind`` removed after they were checked."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SchedulerProfile:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = None  # None: use the global value
    plugins: Plugins = field(default_factory=Plugins)
    plugin_config: tuple[PluginConfig, ...] = ()

    def args_for(self, plugin: str) -> Mapping[str, Any] | None:
        for pc in self.plugin_config:
            if pc.name == plugin:
                return pc.args
        return None


@dataclass(frozen=True)
class LeaderElectionConfig:
    leader_elect: bool = True
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    resource_lock: str = LEASES_RESOURCE_LOCK
    resource_name: str = DEFAULT_LEASE_NAME
    resource_namespace: str = DEFAULT_LEASE_NAMESPACE


@dataclass(frozen=True)
class ClientConnectionConfig:
    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = DEFAULT_CONTENT_TYPE
    qps: float = DEFAULT_QPS  # < 0 disables client-side rate limiting, as in client-go
    burst: int = DEFAULT_BURST


@dataclass(frozen=True)
class ExtenderTLSConfig:
    """``tlsConfig`` of an extender. The ``*Data`` fields hold decoded bytes (base64 in the file)."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True)
class ExtenderManagedResource:
    name: str = ""
    ignored_by_scheduler: bool = False


@dataclass(frozen=True)
class ExtenderConfig:
    """One ``extenders[]`` entry (upstream ``Extender``). An empty verb means "not provided"."""

    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    # 0 as written (upstream's zero Duration); the client then uses DEFAULT_EXTENDER_TIMEOUT.
    http_timeout: float = 0.0
    node_cache_capable: bool = False
    managed_resources: tuple[ExtenderManagedResource, ...] = ()
    ignorable: bool = False


@dataclass(frozen=True)
class SchedulerConfig:
    parallelism: int = DEFAULT_PARALLELISM
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    client_connection: ClientConnectionConfig = field(default_factory=ClientConnectionConfig)
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    percentage_of_nodes_to_score: int = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    pod_initial_backoff_seconds: int = DEFAULT_POD_INITIAL_BACKOFF_SECONDS
    pod_max_backoff_seconds: int = DEFAULT_POD_MAX_BACKOFF_SECONDS
    profiles: tuple[SchedulerProfile, ...] = field(default_factory=lambda: (SchedulerProfile(),))
    delay_cache_until_active: bool = False
    extenders: tuple[ExtenderConfig, ...] = ()

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        return tuple(p.scheduler_name for p in self.profiles)

    def profile(self, scheduler_name: str) -> SchedulerProfile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None

    def plugin_names(self) -> set[str]:
        """Every plugin name the file mentions as enabled or in pluginConfig."""
        names: set[str] = set()
        for p in self.profiles:
            names |= p.plugins.enabled_names()
            names |= {pc.name for pc in p.plugin_config}
        return names
