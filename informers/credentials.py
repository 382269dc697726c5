"""The process's one source of API credentials: bearer token or client certificate, kept fresh.

Every client of the process (the informers' aiohttp transport, the write pool, the lease client)
asks one :class:`Credentials` for the current :class:`Credential` before each request and calls
:meth:`Credentials.unauthorized` after a 401, as client-go's exec round tripper does. Sources:

* ``exec`` plugins (client.authentication.k8s.io/v1 and v1beta1): run with the kubeconfig's env and
  args and ``KUBERNETES_EXEC_INFO``; cached until shortly before ``status.expirationTimestamp``;
* ``tokenFile`` (kubeconfig) and the in-cluster projected service-account token: re-read every
  minute (client-go's cachingTokenSource period), keeping the last good token if a read fails;
* anything else the kubernetes client loaded (static token, basic auth, legacy auth-provider).

Client certificates named in the kubeconfig stay in the client ``Configuration`` (cert_file,
key_file); only exec plugins hand out certificates here, written to private temporary files.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import logging
import os
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import orjson

logger = logging.getLogger(__name__)

# client-go re-reads a token file every minute: half the time before the kubelet's 80%-of-lifetime
# rotation of a one-hour projected token would leave a stale one (transport/token_source.go).
TOKEN_FILE_PERIOD = 60.0
# Credentials that do not expire but may be rotated inside the client library (auth-provider hooks)
# are read again this often: reading runs the loader's refresh hook, too slow to do per request.
LIBRARY_PERIOD = 10.0
# An exec credential is fetched again this long before it expires (at most a fifth of its life),
# so requests never carry one that expires in flight; client-go waits for expiry and a 401.
EXPIRY_MARGIN = 10.0
EXEC_TIMEOUT = 60.0
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


class CredentialError(Exception):
    """Credentials could not be obtained; the message is one line."""


@dataclass(frozen=True, eq=False)
class Credential:
    """What a request carries: an Authorization header and/or a client certificate (cert, key files)."""

    authorization: str | None = None
    cert: tuple[str, str] | None = None
    # Wall-clock second after which the credential must be fetched again; None: never.
    refresh_at: float | None = None


def same(a: Credential, b: Credential) -> bool:
    """Whether two credentials would authenticate the same way (retrying with ``b`` is pointless)."""
    return a.authorization == b.authorization and a.cert == b.cert


class Source(Protocol):
    def fetch(self) -> Credential:
        """A fresh credential. Raises :class:`CredentialError`."""
        ...


class Credentials:
    """A cached credential from ``source``, fetched again when due or after a 401. Thread-safe."""

    def __init__(self, source: Source, *, clock: Callable[[], float] = time.time) -> None:
        self.source = source
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: Credential | None = None

    def _fresh(self, cred: Credential | None) -> bool:
        return cred is not None and (cred.refresh_at is None or self._clock() < cred.refresh_at)

    def peek(self) -> Credential | None:
        """The cached credential if still good, else None (never blocks: for event loops)."""
        cached = self._cached
        return cached if self._fresh(cached) else None

    def current(self) -> Credential:
        """The credential to use now, fetching it (once, for all threads) when due."""
        cached = self._cached
        if self._fresh(cached):
            assert cached is not None
            return cached
        with self._lock:
            if self._fresh(self._cached):
                assert self._cached is not None
                return self._cached
            self._cached = self.source.fetch()
            return self._cached

    def unauthorized(self, used: Credential) -> None:
        """The server refused ``used``: the next :meth:`current` fetches again, unless another
        thread already replaced it (client-go's maybeRefreshCreds)."""
        with self._lock:
            if self._cached is used:
                self._cached = None


# --- sources ------------------------------------------------------------------------------------


@dataclass
class StaticSource:
    credential: Credential

    def fetch(self) -> Credential:
        return self.credential


@dataclass
class LibrarySource:
    """Whatever the kubernetes client ``Configuration`` holds (token, basic auth, its refresh hooks)."""

    configuration: Any
    clock: Callable[[], float] = time.time

    def fetch(self) -> Credential:
        cfg = self.configuration
        token = cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
        if not token and (cfg.username or cfg.password):
            token = cfg.get_basic_auth_token()
        return Credential(authorization=token or None, refresh_at=self.clock() + LIBRARY_PERIOD)


@dataclass
class TokenFileSource:
    """A bearer token read from ``path`` every ``period`` seconds; the last good one if a read fails."""

    path: str
    period: float = TOKEN_FILE_PERIOD
    clock: Callable[[], float] = time.time
    _last: str | None = field(default=None, init=False)

    def fetch(self) -> Credential:
        try:
            with open(self.path, encoding="utf-8") as f:
                token = f.read().strip()
            if not token:
                raise CredentialError(f"token file {self.path} is empty")
        except (OSError, UnicodeDecodeError, CredentialError) as err:
            if self._last is None:
                raise CredentialError(f"token file {self.path}: {_line(err)}") from None
            logger.error(
                "reading token file %s failed, keeping the previous token: %s", self.path, _line(err)
            )
            token = self._last
        self._last = token
        return Credential(authorization=f"Bearer {token}", refresh_at=self.clock() + self.period)


class ExecSource:
    """An exec credential plugin, run as client-go runs it (non-interactive)."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        base_dir: str = "",
        cluster: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
        timeout: float = EXEC_TIMEOUT,
    ) -> None:
        command = str(spec.get("command") or "")
        if not command:
            raise CredentialError("exec plugin: no command")
        # clientcmd resolves a command containing a path separator against the kubeconfig's directory.
        if os.sep in command and not os.path.isabs(command) and base_dir:
            command = os.path.normpath(os.path.join(base_dir, command))
        self.api_version = str(spec.get("apiVersion") or "")
        if self.api_version not in EXEC_API_VERSIONS:
            raise CredentialError(f"exec plugin {command}: unsupported apiVersion {self.api_version!r}")
        if spec.get("interactiveMode") == "Always":
            raise CredentialError(f"exec plugin {command}: interactiveMode Always needs a terminal")
        self.argv = [command, *(str(a) for a in spec.get("args") or [])]
        self.env = {str(e["name"]): str(e.get("value", "")) for e in spec.get("env") or []}
        info: dict[str, Any] = {"apiVersion": self.api_version, "kind": "ExecCredential"}
        info["spec"] = {"interactive": False}
        if spec.get("provideClusterInfo") and cluster is not None:
            info["spec"]["cluster"] = _exec_cluster(cluster)
        self.exec_info = orjson.dumps(info).decode()
        self._clock = clock
        self._timeout = timeout
        self._cert_dir: str | None = None

    def _run(self) -> bytes:
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": self.exec_info}
        name = self.argv[0]
        try:
            done = subprocess.run(
                self.argv,
                check=False,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=self._timeout,
            )
        except subprocess.TimeoutExpired:
            raise CredentialError(f"exec plugin {name}: no answer in {self._timeout:g} s") from None
        except OSError as err:
            raise CredentialError(f"exec plugin {name}: {_line(err)}") from None
        if done.returncode != 0:
            stderr = _line(done.stderr.decode(errors="replace")) if done.stderr.strip() else "no output"
            raise CredentialError(f"exec plugin {name} exited with {done.returncode}: {stderr}")
        return done.stdout

    def fetch(self) -> Credential:
        name = self.argv[0]
        started = self._clock()
        status = parse_exec_credential(self._run(), self.api_version, name)
        refresh_at = None
        if status.expires is not None:
            life = max(0.0, status.expires - started)
            refresh_at = status.expires - min(EXPIRY_MARGIN, life / 5)
        cert = self._write_cert(status.cert_pem, status.key_pem) if status.cert_pem else None
        token = f"Bearer {status.token}" if status.token else None
        return Credential(authorization=token, cert=cert, refresh_at=refresh_at)

    def _write_cert(self, cert_pem: str, key_pem: str | None) -> tuple[str, str]:
        if self._cert_dir is None:
            self._cert_dir = tempfile.mkdtemp(prefix="py-scheduler-exec-")
            atexit.register(_remove_dir, self._cert_dir)
        # New names each time: a TLS context being built from the previous pair must not see half of it.
        fd, cert_path = tempfile.mkstemp(dir=self._cert_dir, suffix=".crt")
        with os.fdopen(fd, "w") as f:
            f.write(cert_pem)
        fd, key_path = tempfile.mkstemp(dir=self._cert_dir, suffix=".key")
        with os.fdopen(fd, "w") as f:
            f.write(key_pem or "")
        try:
            ssl.create_default_context().load_cert_chain(cert_path, key_path)
        except (ssl.SSLError, OSError) as err:
            raise CredentialError(
                f"exec plugin {self.argv[0]}: bad client certificate: {_line(err)}"
            ) from None
        return cert_path, key_path


@dataclass(frozen=True)
class ExecStatus:
    token: str | None
    cert_pem: str | None
    key_pem: str | None
    expires: float | None


def parse_exec_credential(output: bytes, api_version: str, name: str = "exec plugin") -> ExecStatus:
    """The status of an ExecCredential printed by a plugin, checked as client-go checks it."""
    try:
        obj = orjson.loads(output)
    except orjson.JSONDecodeError as err:
        raise CredentialError(f"exec plugin {name}: output is not JSON: {err}") from None
    if not isinstance(obj, dict) or obj.get("kind") != "ExecCredential":
        raise CredentialError(f"exec plugin {name}: output is not an ExecCredential")
    if obj.get("apiVersion") != api_version:
        raise CredentialError(
            f"exec plugin {name}: configured for {api_version}, returned {obj.get('apiVersion')!r}"
        )
    status = obj.get("status")
    if not isinstance(status, dict):
        raise CredentialError(f"exec plugin {name}: no status in its ExecCredential")
    token = status.get("token") or None
    cert = status.get("clientCertificateData") or None
    key = status.get("clientKeyData") or None
    if not token and not cert and not key:
        raise CredentialError(f"exec plugin {name}: returned no token or certificate/key pair")
    if bool(cert) != bool(key):
        raise CredentialError(f"exec plugin {name}: returned only one of certificate and key")
    expires = None
    stamp = status.get("expirationTimestamp")
    if stamp:
        try:
            expires = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise CredentialError(f"exec plugin {name}: bad expirationTimestamp {stamp!r}") from None
    return ExecStatus(token=token, cert_pem=cert, key_pem=key, expires=expires)


def _exec_cluster(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """The Cluster that client-go puts into KUBERNETES_EXEC_INFO when provideClusterInfo is set."""
    out: dict[str, Any] = {"server": cluster.get("server", "")}
    if cluster.get("tls-server-name"):
        out["tls-server-name"] = cluster["tls-server-name"]
    if cluster.get("insecure-skip-tls-verify"):
        out["insecure-skip-tls-verify"] = True
    ca = cluster.get("certificate-authority-data")
    if not ca and cluster.get("certificate-authority"):
        with contextlib.suppress(OSError), open(cluster["certificate-authority"], "rb") as f:
            ca = base64.b64encode(f.read()).decode()
    if ca:
        out["certificate-authority-data"] = ca
    if cluster.get("proxy-url"):
        out["proxy-url"] = cluster["proxy-url"]
    for ext in cluster.get("extensions") or []:
        if ext.get("name") == "client.authentication.k8s.io/exec":
            out["config"] = ext.get("extension")
    return out


def _remove_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        for name in os.listdir(path):
            os.unlink(os.path.join(path, name))
        os.rmdir(path)


def _line(err: BaseException | str, limit: int = 300) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- TLS with a rotating client certificate ---------------------------------------------------------


class TLSContexts:
    """SSL contexts for a ``Configuration``, one per client certificate an exec plugin handed out."""

    def __init__(self, configuration: Any) -> None:
        self._configuration = configuration
        self._lock = threading.Lock()
        self._contexts: dict[tuple[str, str] | None, ssl.SSLContext] = {}

    def get(self, cert: tuple[str, str] | None) -> ssl.SSLContext:
        ctx = self._contexts.get(cert)
        if ctx is not None:
            return ctx
        with self._lock:
            ctx = self._contexts.get(cert)
            if ctx is None:
                ctx = build_ssl_context(self._configuration, cert)
                if cert is not None:  # keep only the newest exec pair besides the static context
                    self._contexts = {k: v for k, v in self._contexts.items() if k is None}
                self._contexts[cert] = ctx
            return ctx


def build_ssl_context(cfg: Any, cert: tuple[str, str] | None = None) -> ssl.SSLContext:
    """CA, verification and client certificate of a kubernetes ``Configuration``; ``cert`` (an exec
    plugin's pair) replaces the configuration's own certificate."""
    ctx = ssl.create_default_context(
        cafile=cfg.ssl_ca_cert or None, cadata=getattr(cfg, "ca_cert_data", None)
    )
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif getattr(cfg, "assert_hostname", None) is False:
        ctx.check_hostname = False
    pair = cert or ((cfg.cert_file, cfg.key_file or None) if cfg.cert_file else None)
    if pair is not None:
        ctx.load_cert_chain(pair[0], pair[1] or None)
    return ctx
