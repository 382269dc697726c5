"""Connection settings and a lean synchronous REST client for the scheduler's few writes.

``informers.connection`` loads the kubeconfig (or in-cluster config): the kubernetes client's loader
for the server and TLS, ``informers.credentials`` for tokens that expire or rotate (exec plugins,
token files, the in-cluster token), shared by every client built on the same Configuration. Requests
go straight through a small http.client connection pool (``scheduler.client.httppool``) with raw JSON
bodies, because the generated API methods build model objects we never use and, for bindings, raise
after a successful POST (kubernetes-client/python issue #547).
"""

from __future__ import annotations

import os
import re
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import orjson
from kubernetes import config as k8s_config

from informers.connection import connection_for, load
from informers.credentials import CredentialError, same
from informers.errors import RETRY_AFTER_MAX_RETRIES, retry_after_seconds
from scheduler.client.httppool import ConnectionPool


class KubeconfigError(ValueError):
    """The API server connection cannot be configured; the message is one line naming the file."""


def load_configuration(kubeconfig: str | None) -> Any:
    """A kubernetes ``Configuration`` from ``kubeconfig``, else in-cluster, else the default kubeconfig.

    Its credentials (``informers.connection.connection_for``) are fetched once here, so a failing exec
    plugin or an unreadable token file stops start-up. Any failure (missing, empty or malformed file,
    missing context or certificate, credential plugin error) is a one-line ``KubeconfigError``.
    """
    if kubeconfig and not os.path.isfile(kubeconfig):
        problem = "not a regular file" if os.path.exists(kubeconfig) else "no such file"
        raise KubeconfigError(f"kubeconfig {kubeconfig}: {problem}")
    path = kubeconfig or None
    if path is None and not _in_cluster():
        path = os.path.expanduser(k8s_config.KUBE_CONFIG_DEFAULT_LOCATION)
        if os.pathsep not in path and not os.path.isfile(path):
            raise KubeconfigError(
                f"no kubeconfig: not running in a cluster, --kubeconfig not given and {path} missing"
            )
    where = f"kubeconfig {path}" if path else "in-cluster config"
    try:
        connection = load(path)
    except CredentialError as err:
        raise KubeconfigError(f"{where}: {err}") from None
    except Exception as err:  # ConfigException, YAMLError, OSError, TypeError on a wrong-shaped file
        raise KubeconfigError(f"{where}: {one_line(err)}") from None
    problem = _connection_problem(connection)
    if problem:
        raise KubeconfigError(f"{where}: {problem}")
    return connection.configuration


# What no host name or IP literal holds.
_BAD_HOST = re.compile(r"[\s/?#@]")


def _connection_problem(connection: Any) -> str:
    """What makes every request fail for good, found before start-up goes on (client-go refuses to
    build such a client, so kube-scheduler stops): a server URL that is no http(s) URL, and a CA or
    client certificate TLS cannot load. Empty when the connection can be tried."""
    cfg = connection.configuration
    server = str(cfg.host or "")
    try:
        url = urlsplit(server)
        if server and (not url.scheme or not url.netloc):
            # client-go's DefaultServerURL: a bare host:port gets https when TLS is configured (a CA,
            # a client certificate, or insecure-skip-tls-verify), else http.
            tls = bool(cfg.ssl_ca_cert or cfg.cert_file or not cfg.verify_ssl)
            cfg.host = server = ("https://" if tls else "http://") + server
            url = urlsplit(server)
        url.port  # noqa: B018 -- raises ValueError when out of range
    except ValueError as err:
        return f"server {server!r}: {one_line(err)}"
    if url.scheme not in ("http", "https") or not url.hostname or _BAD_HOST.search(url.hostname):
        return f"server {server!r}: not an http(s) URL with a host"
    if url.scheme == "https":
        try:
            connection.tls.get(None)
        except (ssl.SSLError, OSError, ValueError) as err:
            fields = "client-certificate/client-key" if cfg.cert_file else "certificate-authority"
            return f"TLS ({fields}): {one_line(err)}"
    return ""


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.isfile(
        k8s_config.incluster_config.SERVICE_TOKEN_FILENAME
    )


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
        sleep: Callable[[float], None] = time.sleep,
    ):
        self._configuration = configuration
        self._clock = clock
        self._sleep = sleep
        # Asked right before a Retry-After resend: the app says no once leadership is lost or
        # shutdown began, so no Binding goes out after that however long the server asked to wait.
        self.may_retry: Callable[[], bool] = lambda: True
        connection = connection_for(configuration)
        self.credentials = connection.credentials
        self.host: str = configuration.host.rstrip("/")
        self.limiter = RateLimiter(qps, burst, clock=clock)
        self._pool = ConnectionPool(configuration, maxsize=pool_size, tls=connection.tls)

    @staticmethod
    def _headers(content_type: str, authorization: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": content_type, "User-Agent": USER_AGENT}
        if authorization:
            headers["Authorization"] = authorization
        return headers

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        timeout: float = 30.0,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        """One request; returns (status, body bytes). Network errors raise a urllib3 ``HTTPError``.
        ``headers`` are sent besides the client's own (explain's identity for the scheduler).

        A 401 makes the credentials fetch again and the request is sent once more with the new ones;
        a second 401 is returned. A credential that cannot be fetched raises ``CredentialError``.

        A 429 or 5xx with an integer Retry-After is sent again after that many seconds, up to
        ``RETRY_AFTER_MAX_RETRIES`` times, as client-go does (API Priority and Fairness answers an overloaded
        server's requests so), but only while the wait still leaves time inside ``timeout``: that
        bounds the whole call (a lease renewal's deadline); otherwise the answer is returned.
        """
        payload = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        deadline = self._clock() + timeout
        retries = 0
        while True:
            self.limiter.wait()
            status, data, retry_after = self._send(method, path, payload, content_type, timeout, headers)
            wait = retry_after_seconds(status, retry_after)
            if wait is None or retries >= RETRY_AFTER_MAX_RETRIES:
                return status, data
            left = deadline - self._clock() - wait
            if left <= 0:
                return status, data
            retries += 1
            if wait:
                self._sleep(wait)
            if not self.may_retry():
                return status, data
            timeout = left

    def _send(
        self,
        method: str,
        path: str,
        payload: bytes | None,
        content_type: str,
        timeout: float,
        extra: dict[str, str] | None = None,
    ) -> tuple[int, bytes, str | None]:
        cred = self.credentials.current()
        headers = {**self._headers(content_type, cred.authorization), **(extra or {})}
        pool = self._pool
        status, data, retry_after = pool.request_with_retry_after(
            method, path, payload, headers, timeout, cert=cred.cert
        )
        if status != 401:
            return status, data, retry_after
        self.credentials.unauthorized(cred)
        fresh = self.credentials.current()
        if same(fresh, cred):  # nothing new to retry with (a static token, an unchanged file)
            return status, data, retry_after
        headers = {**self._headers(content_type, fresh.authorization), **(extra or {})}
        return pool.request_with_retry_after(method, path, payload, headers, timeout, cert=fresh.cert)

    def close(self) -> None:
        self._pool.clear()
