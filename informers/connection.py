"""Load a kubeconfig (or the in-cluster config) into a client ``Configuration`` plus the process's
:class:`~informers.credentials.Credentials`.

The kubernetes client's loader keeps its job for the server, CA, TLS options and kubeconfig client
certificates. The user's ``exec`` plugin and ``tokenFile`` are taken out before it runs (it would run
the plugin once and never again, and read the token file once) and become the credential source.
"""

from __future__ import annotations

import copy
import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from informers.credentials import (
    IN_CLUSTER_TOKEN,
    CredentialError,
    Credentials,
    ExecSource,
    LibrarySource,
    Source,
    TLSContexts,
    TokenFileSource,
)


@dataclass
class Connection:
    configuration: Any
    credentials: Credentials
    tls: TLSContexts


# Every client built on one Configuration shares its Connection: one credential cache, one refresh.
_connections: weakref.WeakKeyDictionary[Any, Connection] = weakref.WeakKeyDictionary()
_connections_lock = threading.Lock()


def connection_for(configuration: Any) -> Connection:
    """The Connection :func:`load` made for ``configuration``; for one made elsewhere (tests, the
    client's own loaders), a shared one reading whatever auth the Configuration holds."""
    with _connections_lock:
        conn = _connections.get(configuration)
        if conn is None:
            conn = Connection(
                configuration, Credentials(LibrarySource(configuration)), TLSContexts(configuration)
            )
            _connections[configuration] = conn
        return conn


def load(
    path: str | None = None,
    *,
    context: str | None = None,
    clock: Callable[[], float] = time.time,
) -> Connection:
    """From ``path``; None means in-cluster, else ``$KUBECONFIG``/``~/.kube/config``.

    Fetches the credential once, so a failing exec plugin or unreadable token file stops start-up.
    Raises :class:`CredentialError` or the kubernetes client's own loading errors.
    """
    from kubernetes import client as k8s_client  # noqa: PLC0415  (0.3 s to import; only here)
    from kubernetes import config as k8s_config_module  # noqa: PLC0415

    k8s_config: Any = k8s_config_module
    cfg = k8s_client.Configuration()
    source: Source
    if path is None:
        try:
            k8s_config.load_incluster_config(client_configuration=cfg)
            source = TokenFileSource(IN_CLUSTER_TOKEN, clock=clock)
        except k8s_config.ConfigException:
            path = os.path.expanduser(k8s_config.KUBE_CONFIG_DEFAULT_LOCATION)
    if path is not None:
        if os.pathsep in path:  # a KUBECONFIG list: the client merges it; its own auth handling
            k8s_config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
            source = LibrarySource(cfg, clock=clock)
        else:
            source = _load_file(path, context, cfg, clock, k8s_config)
    credentials = Credentials(source, clock=clock)
    credentials.current()
    conn = Connection(cfg, credentials, TLSContexts(cfg))
    with _connections_lock:
        _connections[cfg] = conn
    return conn


def _named(doc: dict[str, Any], section: str, name: Any, key: str) -> dict[str, Any]:
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name and isinstance(entry.get(key), dict):
            found: dict[str, Any] = entry[key]
            return found
    return {}


def _absolute(entry: dict[str, Any], keys: tuple[str, ...], base: str) -> None:
    for key in keys:
        value = entry.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            entry[key] = os.path.join(base, os.path.expanduser(value))


def _load_file(
    path: str, context: str | None, cfg: Any, clock: Callable[[], float], k8s_config: Any
) -> Source:
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    if doc is None:
        raise CredentialError("file is empty")
    if not isinstance(doc, dict):
        raise CredentialError("not a kubeconfig (expected a mapping)")
    doc = copy.deepcopy(doc)
    base = os.path.dirname(os.path.abspath(path))
    ctx = _named(doc, "contexts", context or doc.get("current-context"), "context")
    user = _named(doc, "users", ctx.get("user"), "user")
    cluster = _named(doc, "clusters", ctx.get("cluster"), "cluster")
    # Relative paths are relative to the kubeconfig (clientcmd ResolvePaths); the dict loader would
    # take them relative to the working directory.
    _absolute(user, ("client-certificate", "client-key", "tokenFile"), base)
    _absolute(cluster, ("certificate-authority",), base)
    exec_spec = user.pop("exec", None)
    token_file = user.pop("tokenFile", None)
    k8s_config.load_kube_config_from_dict(
        doc, context=context, client_configuration=cfg, persist_config=False
    )
    # A token written into the kubeconfig wins over a plugin (client-go's exec round tripper).
    if isinstance(exec_spec, dict) and not user.get("token"):
        return ExecSource(exec_spec, base_dir=base, cluster=cluster, clock=clock)
    if isinstance(token_file, str) and token_file:
        return TokenFileSource(token_file, clock=clock)
    return LibrarySource(cfg, clock=clock)
