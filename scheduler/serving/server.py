"""Health and metrics HTTP(S) server on its own threads, so a busy asyncio loop never starves a probe.

Secure serving (scheduler/serving/tls.py) and the request guard (scheduler/serving/delegating.py) sit
in front of every path, as kube-scheduler's handler chain: authenticate, authorise the non-resource
URL and verb, then serve. Review calls to the API server run here, on the request's thread, never on
the scheduler's event loop.

Endpoints follow kube-scheduler's (k8s.io/apiserver healthz): ``/healthz`` and ``/livez`` run the
liveness checks, ``/readyz`` the liveness and readiness checks. Each answers ``ok`` (200) or lists the
checks with the failing ones' reasons (503). ``?verbose`` lists every check, ``?exclude=NAME`` skips
one, and ``/readyz/NAME`` runs a single check. ``/metrics`` is prometheus_client's default REGISTRY in
the text format (OpenMetrics when asked for), gzip-compressed when the scraper accepts it.
"""

from __future__ import annotations

import gzip
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import choose_encoder

from scheduler.serving.authn import FORWARDED_AUTHORIZATION
from scheduler.serving.delegating import RequestGuard
from scheduler.serving.tls import ServerTLS, TLSConfigError, serving_cert

logger = logging.getLogger(__name__)

Check = Callable[[], tuple[bool, str]]
# /debug/pods/<namespace>/<name>: (HTTP status, JSON body) for a pod key; see scheduler/explain/debug.py.
DebugPods = Callable[[str], tuple[int, bytes]]
# /configz: the effective configuration as JSON (kube-scheduler's {"componentconfig": {...}}).
Configz = Callable[[], bytes]
Checks = Check | Mapping[str, Check]

# A client that opens a connection and sends nothing holds one handler thread for at most this long.
REQUEST_TIMEOUT_SECONDS: Final = 10.0


def _ping() -> tuple[bool, str]:
    return True, "ok"


def _named(checks: Checks, default_name: str) -> dict[str, Check]:
    if callable(checks):
        return {default_name: checks}
    return dict(checks)


def _run_check(check: Check) -> tuple[bool, str]:
    try:
        return check()
    except Exception as err:  # a crashing check is a failing check, not a crashing server
        return False, f"check raised {err!r}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # stop() must not wait for a client that holds a connection open without sending anything.
    block_on_close = False
    allow_reuse_address = True
    health: HealthServer
    tls: ServerTLS | None = None

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = self.socket.accept()
        if self.tls is None:
            return conn, address
        try:
            return self.tls.wrap(conn), address
        except OSError:
            conn.close()
            raise

    def handle_error(self, request: object, client_address: object) -> None:
        # Failed TLS handshakes and dropped connections from scanners are not worth a traceback.
        logger.debug("request from %s failed", client_address, exc_info=True)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = REQUEST_TIMEOUT_SECONDS
    server_version = "py-scheduler"
    sys_version = ""

    def do_GET(self) -> None:
        self._dispatch(head=False)

    def do_HEAD(self) -> None:
        self._dispatch(head=True)

    def log_message(self, format: str, *args: object) -> None:
        logger.debug("%s %s", self.address_string(), format % args)

    def _peer_cert(self) -> dict[str, object] | None:
        if not isinstance(self.connection, ssl.SSLSocket):
            return None
        # Only a certificate that chained to the client CA gets here (the handshake verified it).
        return self.connection.getpeercert() or None  # type: ignore[return-value]

    def _dispatch(self, *, head: bool) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        # The decoded path (Go's URL.Path) is what gets authorised and what is served: one string.
        path = unquote(url.path).rstrip("/") or "/"
        health = self.server.health
        if health.guard is not None:
            authorization = self.headers.get("Authorization") or self.headers.get(FORWARDED_AUTHORIZATION)
            _, refusal = health.guard.check(self.command, path, authorization, self._peer_cert())
            if refusal is not None:
                self._reply(HTTPStatus(refusal.status), refusal.body, refusal.content_type, head)
                return
        if path == "/metrics":
            self._metrics(health.registry, head=head)
            return
        if path == "/configz" and health.configz is not None:
            # Authorised above like /metrics: a SubjectAccessReview for get on /configz.
            self._reply(HTTPStatus.OK, health.configz(), "application/json", head)
            return
        if path.startswith("/debug/pods/") and health.debug_pods is not None:
            # Authorised above like any path: a SubjectAccessReview for get on this very path.
            code, payload = health.debug_pods(path.removeprefix("/debug/pods/"))
            self._reply(HTTPStatus(code), payload, "application/json", head)
            return
        endpoint, _, single = path[1:].partition("/")
        checks = health.checks_for(endpoint)
        if checks is None:
            self._reply(HTTPStatus.NOT_FOUND, b"404 page not found\n", "text/plain; charset=utf-8", head)
            return
        if single:
            if single not in checks:
                self._reply(HTTPStatus.NOT_FOUND, b"404 page not found\n", "text/plain; charset=utf-8", head)
                return
            ok, reason = _run_check(checks[single])
            body = "ok" if ok else f"internal server error: {reason}"
            status = HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE
            self._reply(status, body.encode(), "text/plain; charset=utf-8", head)
            return
        excluded = {name for value in query.get("exclude", []) for name in value.split(",")}
        status, body = _evaluate(endpoint, checks, excluded, verbose="verbose" in query)
        self._reply(status, body.encode(), "text/plain; charset=utf-8", head)

    def _metrics(self, registry: CollectorRegistry, *, head: bool) -> None:
        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        try:
            body = encoder(registry)
        except Exception as err:
            logger.exception("collecting metrics failed")
            self._reply(HTTPStatus.INTERNAL_SERVER_ERROR, f"{err}\n".encode(), "text/plain", head)
            return
        gzipped = "gzip" in self.headers.get("Accept-Encoding", "")
        if gzipped:
            body = gzip.compress(body, compresslevel=1)
        self._reply(HTTPStatus.OK, body, content_type, head, encoding="gzip" if gzipped else None)

    def _reply(
        self,
        status: HTTPStatus,
        body: bytes,
        content_type: str,
        head: bool,
        encoding: str | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        if not head:
            self.wfile.write(body)


def _evaluate(
    endpoint: str, checks: Mapping[str, Check], excluded: set[str], *, verbose: bool
) -> tuple[HTTPStatus, str]:
    lines: list[str] = []
    failed = False
    for name, check in checks.items():
        if name in excluded:
            lines.append(f"[+]{name} excluded: ok")
            continue
        ok, reason = _run_check(check)
        if ok:
            lines.append(f"[+]{name} ok")
        else:
            failed = True
            lines.append(f"[-]{name} failed: {reason}")
    for name in sorted(excluded - checks.keys()):
        lines.append(f"warn: some health checks cannot be excluded: no matches for {name!r}")
    if failed:
        lines.append(f"{endpoint} check failed")
        return HTTPStatus.SERVICE_UNAVAILABLE, "\n".join(lines) + "\n"
    if verbose:
        lines.append(f"{endpoint} check passed")
        return HTTPStatus.OK, "\n".join(lines) + "\n"
    return HTTPStatus.OK, "ok"


class HealthServer:
    """Serves /metrics, /healthz, /livez and /readyz until stop().

    ``liveness`` and ``readiness`` are a check ``() -> (ok, reason)`` or a mapping of named checks;
    they are called on the server's request threads, so they must be thread-safe and quick.
    """

    def __init__(
        self,
        bind_address: str,
        port: int,
        *,
        tls_cert_file: str | None = None,
        tls_key_file: str | None = None,
        tls: ServerTLS | None = None,
        guard: RequestGuard | None = None,
        readiness: Checks,
        liveness: Checks,
        registry: CollectorRegistry = REGISTRY,
        poll_interval: float = 0.5,
        debug_pods: DebugPods | None = None,
        configz: Configz | None = None,
    ) -> None:
        """``poll_interval`` bounds how long stop() waits for the accept loop to notice.

        ``tls`` (or the ``tls_cert_file`` pair) serves HTTPS; ``guard`` authenticates and authorises
        every request. Without either this is plain HTTP open to anyone: the explicit insecure mode."""
        if (tls_cert_file is None) != (tls_key_file is None):
            raise ValueError("--tls-cert-file and --tls-private-key-file must be given together")
        if tls is None and tls_cert_file is not None:
            try:
                tls = ServerTLS(serving_cert(tls_cert_file, tls_key_file, None, bind_address))
            except TLSConfigError as err:
                raise ssl.SSLError(str(err)) from None
        self.registry = registry
        self.guard = guard
        self.debug_pods = debug_pods
        self.configz = configz
        live = {"ping": _ping, **_named(liveness, "liveness")}
        self._checks: dict[str, dict[str, Check]] = {
            "healthz": live,
            "livez": live,
            "readyz": {**live, **_named(readiness, "readiness")},
        }
        server_class = _Server6 if ":" in bind_address else _Server
        self._server = server_class((bind_address, port), _Handler, bind_and_activate=True)
        self._server.health = self
        self.tls = tls is not None
        self.server_tls = tls
        self._server.tls = tls
        self._poll_interval = poll_interval
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (the real one when 0 was requested)."""
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = str(self._server.server_address[0])
        if ":" in host:
            host = f"[{host}]"
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    def checks_for(self, endpoint: str) -> dict[str, Check] | None:
        return self._checks.get(endpoint)

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("HealthServer already started")
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": self._poll_interval},
            name="health-server",
            daemon=True,
        )
        self._thread.start()
        logger.info("serving /metrics, /healthz, /livez, /readyz on %s", self.url)

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()
