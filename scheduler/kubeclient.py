"""Connection settings and a lean synchronous REST client for the scheduler's few writes.

The kubernetes client loads the kubeconfig (or in-cluster config) for us: auth plugins, certificates
and token refresh stay its job. Requests go straight through a small http.client connection pool
(``scheduler.httppool``) with raw JSON bodies, because the generated API methods build model objects we
never use and, for bindings, raise after a successful POST (kubernetes-client/python issue #547).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from scheduler.httppool import ConnectionPool


class KubeconfigError(ValueError):
    """The API server connection cannot be configured; the message is one line naming the file."""


def load_configuration(kubeconfig: str | None) -> Any:
    """A kubernetes ``Configuration`` from ``kubeconfig``, else in-cluster, else the default kubeconfig.

    Any failure (missing, empty or malformed file, missing context or certificate) is a
    ``KubeconfigError``: the client's own exceptions are several types with multi-line messages.
    """
    configuration = k8s_client.Configuration()
    if kubeconfig:
        if not os.path.isfile(kubeconfig):
            raise KubeconfigError(f"kubeconfig {kubeconfig}: no such file")
        _load_kube_config(kubeconfig, configuration)
        return configuration
    try:
        k8s_config.load_incluster_config(client_configuration=configuration)
    except k8s_config.ConfigException:
        default = os.path.expanduser(k8s_config.KUBE_CONFIG_DEFAULT_LOCATION)
        if not os.path.isfile(default):
            raise KubeconfigError(
                f"no kubeconfig: not running in a cluster, --kubeconfig not given and {default} missing"
            ) from None
        _load_kube_config(default, configuration)
    return configuration


def _load_kube_config(path: str, configuration: Any) -> None:
    try:
        k8s_config.load_kube_config(config_file=path, client_configuration=configuration)
    except Exception as err:  # ConfigException, YAMLError, OSError, TypeError on a wrong-shaped file
        raise KubeconfigError(f"kubeconfig {path}: {one_line(err)}") from None


def one_line(err: BaseException, limit: int = 300) -> str:
    """An exception as a single bounded line: the first line of its text, or its type."""
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


class RateLimiter:
    """A thread-safe token bucket: ``qps`` tokens a second, up to ``burst`` saved (client-go's flowcontrol).

    A qps of 0 or less disables limiting, as in client-go.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._qps = qps
        self._burst = max(1, burst)
        self._tokens = float(self._burst)
        self._clock = clock
        self._sleep = sleep
        self._last = clock()
        self._lock = threading.Lock()

    def wait(self) -> float:
        """Take one token, sleeping until one is available. Returns the seconds waited."""
        if self._qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            self._tokens -= 1.0
            delay = 0.0 if self._tokens >= 0 else -self._tokens / self._qps
        if delay > 0:
            self._sleep(delay)
        return delay


# How long a bearer token read from the configuration is reused. Reading it runs the kubeconfig
# loader's refresh hook, which re-applies the whole config and re-reads the proxy environment: tens of
# microseconds per request, for a token that exec plugins and projected tokens renew in minutes.
TOKEN_REFRESH_SECONDS = 10.0
USER_AGENT = "py-scheduler"


class RestClient:
    """Blocking JSON requests against the API server, safe to share between threads."""

    def __init__(
        self,
        configuration: Any,
        *,
        qps: float = 50.0,
        burst: int = 100,
        pool_size: int = 16,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._configuration = configuration
        self._clock = clock
        # (Authorization header or None, monotonic time it was read); replaced whole, so threads may
        # race to refresh it without a lock.
        self._token: tuple[str | None, float] | None = None
        self.host: str = configuration.host.rstrip("/")
        self.limiter = RateLimiter(qps, burst)
        self._pool = ConnectionPool(configuration, maxsize=pool_size)

    def _authorization(self) -> str | None:
        now = self._clock()
        cached = self._token
        if cached is not None and now - cached[1] < TOKEN_REFRESH_SECONDS:
            return cached[0]
        token = self._configuration.get_api_key_with_prefix("BearerToken", alias="authorization")
        self._token = (token or None, now)
        return token or None

    def _headers(self, content_type: str) -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": content_type, "User-Agent": USER_AGENT}
        token = self._authorization()
        if token:
            headers["Authorization"] = token
        return headers

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> tuple[int, bytes]:
        """One request; returns (status, body bytes). Network errors raise a urllib3 ``HTTPError``."""
        self.limiter.wait()
        payload = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        return self._pool.request(method, path, payload, self._headers(content_type), timeout)

    def close(self) -> None:
        self._pool.clear()
