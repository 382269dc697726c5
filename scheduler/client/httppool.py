"""A small keep-alive pool of ``http.client`` connections to one API server, shared by threads.

The scheduler's writes (a Binding and an Event per pod) are small requests to one host; urllib3's
PoolManager spent about twice the CPU of plain ``http.client`` on each (URL parsing, pool keys,
timeout and retry objects, its response wrapper), and binding threads share two cores with the API
server. Failures raise :class:`ConnectionFailed`, a urllib3 ``HTTPError``, so callers treat them as
they treated urllib3's own.
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import urllib3
from urllib3.util.wait import wait_for_read, wait_for_write

from informers.credentials import TLSContexts
from scheduler import metrics
from scheduler.client.http_response import read_response


class ConnectionFailed(urllib3.exceptions.ProtocolError):
    """The request did not get an HTTP answer (connect, TLS, reset, timeout...)."""


# What http.client refuses in a request target and in header fields (request smuggling).
_DISALLOWED_IN_TARGET = re.compile("[\x00-\x20\x7f]")
_DISALLOWED_IN_HEADER = re.compile("[\r\n\x00]")
# http.client sends Content-Length: 0 for these when there is no body.
_METHODS_EXPECTING_BODY = frozenset({"PATCH", "POST", "PUT"})
# A connection back in the pool for less than this is reused without the dead-connection check. The
# check (a poll) exists for connections the server closed while they sat idle, which it does only after
# its idle timeout (the API server's is 90 s, Go's http.Server IdleTimeout; proxies' keep-alive
# timeouts are seconds): a connection answered a moment ago cannot have reached it. Under load nearly
# every request finds such a connection (a binding thread's Event write usually takes back the very
# connection its Binding just used), and the poll is a system call that releases the GIL, so the
# thread then waits for the busy loop thread to hand it back. A close for any other reason (the server
# shutting down) can land between the check and the send as well, so skipping it opens no new case.
RECENTLY_USED_SECONDS = 1.0


class _HTTPSConnection(http.client.HTTPSConnection):
    """Verifies and sends SNI for ``server_hostname`` when set (kubeconfig's tls-server-name), and offers
    ``session`` (a TLS session of an earlier connection with the same context) for resumption."""

    def __init__(
        self,
        host: str,
        port: int | None,
        *,
        server_hostname: str | None,
        session: ssl.SSLSession | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(host, port, **kwargs)
        self._server_hostname = server_hostname
        self._session = session

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        context: ssl.SSLContext = self._context  # type: ignore[attr-defined]
        self.sock = context.wrap_socket(
            self.sock, server_hostname=self._server_hostname or self.host, session=self._session
        )


class _TLSExchange:
    """One request's I/O on a pooled TLS socket kept in non-blocking mode, each wait bounded by
    ``timeout`` as a socket timeout bounds it.

    With a socket timeout, the ssl module polls before every ``SSL_write`` and tries every
    ``SSL_read`` before polling, so a request cost six system calls: the write's poll, the write, a
    read that meets EAGAIN (the answer is almost never there right after the send: 99% of the binding
    threads' first reads on the basic benchmark), the poll, the read, plus the pool's dead-connection
    poll. Each releases the GIL, and a binding thread must then wait for the busy loop thread to hand it
    back. Here the write is tried at once (a request fits the socket's buffer), and the first read
    waits for the answer before trying: the write, one poll, one read."""

    __slots__ = ("_sock", "_started", "_timeout")

    def __init__(self, sock: ssl.SSLSocket, timeout: float) -> None:
        self._sock = sock
        self._timeout = timeout
        self._started = False

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                # Without partial writes, SSL_write takes all of it or, wanting to wait, none (a retry
                # must offer the same bytes, which it does).
                view = view[self._sock.send(view) :]
            except ssl.SSLWantWriteError:
                self._wait(writing=True)
            except ssl.SSLWantReadError:
                self._wait(writing=False)

    def recv(self, size: int) -> bytes:
        if not self._started:
            self._started = True
            if not self._sock.pending():
                self._wait(writing=False)
        while True:
            try:
                return self._sock.recv(size)
            except ssl.SSLWantReadError:
                self._wait(writing=False)
            except ssl.SSLWantWriteError:
                self._wait(writing=True)

    def _wait(self, *, writing: bool) -> None:
        ready = (wait_for_write if writing else wait_for_read)(self._sock, timeout=self._timeout)
        if not ready:
            raise TimeoutError("timed out")


class ConnectionPool:
    """Up to ``maxsize`` idle connections kept for reuse; more are opened when all are busy and
    closed after use (urllib3's ``block=False``)."""

    def __init__(
        self,
        configuration: Any,
        *,
        maxsize: int = 16,
        connect_timeout: float = 10.0,
        tls: TLSContexts | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        url = urlsplit(str(configuration.host))
        self.scheme = url.scheme or "https"
        self.host = url.hostname or "localhost"
        self.port = url.port
        # A server URL may carry a path prefix (a proxy in front of the API server).
        self.prefix = url.path.rstrip("/")
        self._connect_timeout = connect_timeout
        self._https = self.scheme == "https"
        self._tls = tls or TLSContexts(configuration)
        # The client certificate idle connections were opened with (an exec plugin's pair, or None).
        self._cert: tuple[str, str] | None = None
        self._server_hostname: str | None = getattr(configuration, "tls_server_name", None) or None
        self._maxsize = maxsize
        # What http.client puts in Host: the name (IPv6 in brackets) and any non-default port.
        netloc = f"[{self.host}]" if ":" in self.host else self.host
        default_port = 443 if self._https else 80
        self._host_header = netloc if self.port in (None, default_port) else f"{netloc}:{self.port}"
        # Idle connections, each with the time it came back (the newest last: reused first).
        self._idle: list[tuple[http.client.HTTPConnection, float]] = []
        self._clock = clock
        self._lock = threading.Lock()
        # The newest TLS session the server gave us, and the context it belongs to. Binding and writer
        # threads each hold a connection, so a burst opens dozens: resuming skips the server's
        # certificate signature and our chain verification on each (a full handshake with the API
        # server's RSA key costs both sides more CPU than the request it carries). Go's client
        # multiplexes everything over one HTTP/2 connection and never pays it more than once.
        self._session: tuple[ssl.SSLContext, ssl.SSLSession] | None = None
        self.handshakes = 0  # connections opened with a full handshake
        self.resumed = 0  # connections opened by resuming a session

    def _new(self, cert: tuple[str, str] | None) -> http.client.HTTPConnection:
        if not self._https:
            return http.client.HTTPConnection(self.host, self.port, timeout=self._connect_timeout)
        context = self._tls.get(cert)
        known = self._session
        return _HTTPSConnection(
            self.host,
            self.port,
            server_hostname=self._server_hostname,
            # A session is tied to its context (a new exec certificate has a context of its own).
            session=known[1] if known is not None and known[0] is context else None,
            context=context,
            timeout=self._connect_timeout,
        )

    def _learn_session(self, sock: Any) -> None:
        """After the first response on a new connection (TLS 1.3 sends session tickets after the
        handshake, so only now is there one): count how it was opened, and after a full handshake keep
        its session for the next connections. A resumed one leaves the kept session as it is: the API
        server takes a ticket many times over, and reading a session out costs about a quarter of a
        resumed connect."""
        resumed = bool(sock.session_reused)
        session = None if resumed else sock.session
        with self._lock:
            if resumed:
                self.resumed += 1
            else:
                self.handshakes += 1
            if session is not None:
                self._session = (sock.context, session)
        metrics.observe_connection_opened(resumed)

    def _get(self, cert: tuple[str, str] | None) -> http.client.HTTPConnection:
        stale: list[tuple[http.client.HTTPConnection, float]] = []
        with self._lock:
            if cert != self._cert:  # a new client certificate: connections with the old one go
                stale, self._idle, self._cert = self._idle, [], cert
        for old, _ in stale:
            old.close()
        while True:
            with self._lock:
                conn, returned = self._idle.pop() if self._idle else (None, 0.0)
            if conn is None:
                return self._new(cert)
            sock = conn.sock
            if sock is None:
                conn.close()
                continue
            if self._clock() - returned < RECENTLY_USED_SECONDS:
                return conn
            # Readable while idle means the server closed it (or sent junk): never reuse that.
            if not wait_for_read(sock, timeout=0.0):
                return conn
            conn.close()

    def _put(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._maxsize:
                self._idle.append((conn, self._clock()))
                return
        conn.close()

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str],
        timeout: float,
        *,
        cert: tuple[str, str] | None = None,
    ) -> tuple[int, bytes]:
        """One request on a pooled connection; returns (status, body). ``cert``: an exec plugin's
        client certificate pair, else the configuration's own."""
        status, data, _ = self.request_with_retry_after(method, path, body, headers, timeout, cert=cert)
        return status, data

    def request_with_retry_after(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str],
        timeout: float,
        *,
        cert: tuple[str, str] | None = None,
    ) -> tuple[int, bytes, str | None]:
        """``request``, with the response's Retry-After header (None when absent)."""
        conn = self._get(cert)
        fresh = conn.sock is None
        try:
            if fresh:
                # A caller's deadline (a lease renewal) bounds the connect too, not only the reads.
                conn.timeout = min(self._connect_timeout, timeout)
                conn.connect()
            sock = conn.sock
            assert sock is not None
            request = self._request_bytes(method, path, body, headers)
            if isinstance(sock, ssl.SSLSocket):
                if sock.gettimeout() != 0.0:
                    sock.settimeout(0.0)  # once per connection, after its handshake
                exchange = _TLSExchange(sock, timeout)
                exchange.sendall(request)
                response = read_response(exchange, method)
            else:
                if sock.gettimeout() != timeout:
                    # settimeout is a system call (ioctl FIONBIO) that releases the GIL: skip it when
                    # nothing changes (a pooled connection keeps the timeout of its last request).
                    sock.settimeout(timeout)
                sock.sendall(request)
                response = read_response(sock, method)
            data = response.body
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            reason = "timed out" if isinstance(err, socket.timeout | TimeoutError) else repr(err)
            raise ConnectionFailed(f"{method} {path}: {reason}") from err
        if fresh and self._https:
            self._learn_session(sock)
        if response.will_close or cert != self._cert:
            conn.close()
        else:
            self._put(conn)
        return response.status, data, response.getheader("Retry-After")

    def _request_bytes(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        """The request line, headers and body in one buffer: one send (one TLS record) per request,
        where ``HTTPConnection.request`` sends the headers and the body apart and validates each
        header with regular expressions. The same headers it would send: Host, Accept-Encoding
        identity and Content-Length unless given, then the caller's headers, in http.client's order."""
        target = self.prefix + path
        if _DISALLOWED_IN_TARGET.search(target):
            raise ValueError(f"request target {target!r} contains control characters or spaces")
        lines = [f"{method} {target} HTTP/1.1"]
        given = {name.lower() for name in headers}
        if "host" not in given:
            lines.append(f"Host: {self._host_header}")
        if "accept-encoding" not in given:
            lines.append("Accept-Encoding: identity")
        if "content-length" not in given:
            if body is not None:
                lines.append(f"Content-Length: {len(body)}")
            elif method in _METHODS_EXPECTING_BODY:
                lines.append("Content-Length: 0")
        for name, value in headers.items():
            if _DISALLOWED_IN_HEADER.search(name) or _DISALLOWED_IN_HEADER.search(value):
                raise ValueError(f"header {name!r} contains a line break")
            lines.append(f"{name}: {value}")
        lines.append("\r\n")
        head = "\r\n".join(lines).encode("iso-8859-1")
        return head + body if body else head

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()
