"""Serving options (kube-scheduler's secure-serving, authentication and authorization flags) and the
listeners they make: HTTPS with delegated authentication and authorization on ``--secure-port``
(10259 by default), and plain, unauthenticated HTTP only on an explicit ``--port``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler.serving.delegating import ClientCAWatcher, DelegationOptions, build_delegation
from scheduler.serving.server import Checks, Configz, DebugPods, HealthServer
from scheduler.serving.tls import ServerTLS, serving_cert

log = logging.getLogger(__name__)

DEFAULT_SECURE_PORT = 10259


@dataclass(frozen=True)
class ServingOptions:
    bind_address: str = "0.0.0.0"
    # HTTPS with authentication and authorization; 0 turns it off (kube-scheduler's --secure-port).
    secure_port: int = DEFAULT_SECURE_PORT
    # Plain HTTP, no authentication: only when asked for (--port); 0 turns it off.
    insecure_port: int = 0
    cert_dir: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    delegation: DelegationOptions = field(default_factory=DelegationOptions)


class Servers:
    """The running listeners (at most one secure, one insecure) and the client CA watcher."""

    def __init__(self, servers: list[HealthServer], watcher: ClientCAWatcher | None) -> None:
        self.servers = servers
        self._watcher = watcher

    @property
    def secure(self) -> HealthServer | None:
        return next((s for s in self.servers if s.tls), None)

    @property
    def port(self) -> int:
        return self.servers[0].port

    def start(self) -> None:
        for server in self.servers:
            server.start()
        if self._watcher is not None:
            self._watcher.start()

    def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        for server in self.servers:
            server.stop()


def build_servers(
    options: ServingOptions,
    *,
    readiness: Checks,
    liveness: Checks,
    debug_pods: DebugPods | None,
    configz: Configz | None = None,
    warn: Callable[[str], None] = log.warning,
) -> Servers:
    """Bind the listeners. Raises OSError (a port in use, a bad address), TLSConfigError or
    DelegationError, each one line, before anything is served."""
    servers: list[HealthServer] = []
    watcher: ClientCAWatcher | None = None
    try:
        # Bind first: a port in use or a bad address is the one line start-up prints, before the
        # delegation's warnings about missing kubeconfigs.
        if options.secure_port > 0:
            cert = serving_cert(
                options.tls_cert_file, options.tls_key_file, options.cert_dir, options.bind_address
            )
            tls = ServerTLS(cert)
            secure = HealthServer(
                options.bind_address,
                options.secure_port,
                tls=tls,
                readiness=readiness,
                liveness=liveness,
                debug_pods=debug_pods,
                configz=configz,
            )
            servers.append(secure)
        if options.insecure_port > 0:
            servers.append(
                HealthServer(
                    options.bind_address,
                    options.insecure_port,
                    readiness=readiness,
                    liveness=liveness,
                    debug_pods=debug_pods,
                    configz=configz,
                )
            )
        if options.secure_port > 0:
            # Nothing is served before start(), so the guard and the client CA are in place in time.
            delegation = build_delegation(options.delegation)
            secure.guard = delegation.guard
            if delegation.client_ca is not None:
                tls.set_client_ca(delegation.client_ca)
            if delegation.watcher_factory is not None:
                watcher = delegation.watcher_factory(tls)
            log.info("serving certificate: %s", cert.source)
        if options.insecure_port > 0:
            warn(
                f"serving plain HTTP on {options.bind_address}:{servers[-1].port} (--port) with no "
                "authentication or authorization: anyone who reaches it reads /metrics and /debug/pods"
            )
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return Servers(servers, watcher)
