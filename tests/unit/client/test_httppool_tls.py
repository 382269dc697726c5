"""The write pool's TLS connections: a new connection resumes the session of an earlier one (no second
full handshake with the server's certificate), and still verifies the server; requests and answers of
any size and pace cross a kept-alive connection whole, within each request's own timeout."""

from __future__ import annotations

import contextlib
import http.server
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s

from scheduler.client.httppool import ConnectionFailed, ConnectionPool
from scheduler.serving.tls import generate_self_signed


class _Ok(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the API server

    def do_PATCH(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    pair = generate_self_signed("127.0.0.1")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", cert
    finally:
        server.shutdown()
        server.server_close()


def _configuration(host: str, ca: Path) -> k8s.Configuration:
    cfg = k8s.Configuration(host=host)
    cfg.ssl_ca_cert = str(ca)
    return cfg


def test_new_connections_resume_the_first_ones_session(tls_server: tuple[str, Path]) -> None:
    host, ca = tls_server
    pool = ConnectionPool(_configuration(host, ca))
    for _ in range(4):
        status, body = pool.request("PATCH", "/x", b"{}", {}, timeout=5)
        assert (status, body) == (200, b"{}")
        pool.clear()  # the next request opens a new connection
    assert (pool.handshakes, pool.resumed) == (1, 3)


def test_a_connection_that_is_reused_is_not_counted_again(tls_server: tuple[str, Path]) -> None:
    host, ca = tls_server
    pool = ConnectionPool(_configuration(host, ca))
    for _ in range(3):
        pool.request("PATCH", "/x", b"{}", {}, timeout=5)
    assert (pool.handshakes, pool.resumed) == (1, 0)


def test_resumption_never_skips_verifying_the_server(tls_server: tuple[str, Path], tmp_path: Path) -> None:
    host, _ = tls_server
    other = tmp_path / "other-ca.crt"
    other.write_bytes(generate_self_signed("127.0.0.1").cert_pem)
    with pytest.raises(ConnectionFailed, match="CERTIFICATE_VERIFY_FAILED"):
        ConnectionPool(_configuration(host, other)).request("PATCH", "/x", b"{}", {}, timeout=5)


class _RawTLSServer:
    """A TLS server that hands each accepted connection to ``serve`` in a thread of its own."""

    def __init__(self, tmp_path: Path, serve: Callable[[ssl.SSLSocket], None]) -> None:
        pair = generate_self_signed("127.0.0.1")
        self.ca = tmp_path / "raw.crt"
        key = tmp_path / "raw.key"
        self.ca.write_bytes(pair.cert_pem)
        key.write_bytes(pair.key_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.ca, key)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.host = f"https://127.0.0.1:{self._listener.getsockname()[1]}"
        self._context = context
        self._serve = serve
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(raw,), daemon=True).start()

    def _handle(self, raw: socket.socket) -> None:
        with contextlib.suppress(OSError), self._context.wrap_socket(raw, server_side=True) as conn:
            self._serve(conn)

    def close(self) -> None:
        self._listener.close()


def _read_request(conn: ssl.SSLSocket) -> bytes:
    """One request: its head, then Content-Length bytes of body; b"" when the client has gone."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


def test_an_answer_in_pieces_with_pauses_is_read_whole(tmp_path: Path) -> None:
    """Each piece arrives after the pool has started waiting for it (a TLS record at a time)."""
    body = b'{"kind":"Status","status":"Success","padding":"' + b"x" * 40000 + b'"}'
    answer = b"HTTP/1.1 201 Created\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body

    def serve(conn: ssl.SSLSocket) -> None:
        while _read_request(conn):
            for start in range(0, len(answer), 9000):
                threading.Event().wait(0.05)
                conn.sendall(answer[start : start + 9000])

    server = _RawTLSServer(tmp_path, serve)
    pool = ConnectionPool(_configuration(server.host, server.ca))
    try:
        for _ in range(2):  # the second on the kept-alive connection
            assert pool.request("POST", "/x", b"{}", {}, timeout=5) == (201, body)
        assert (pool.handshakes, pool.resumed) == (1, 0)
    finally:
        pool.clear()
        server.close()


def test_a_body_larger_than_the_socket_buffers_is_sent_whole(tmp_path: Path) -> None:
    """The server reads slowly, so the send must wait for room (non-blocking TLS writes)."""
    sent = b"y" * (8 << 20)
    received: list[int] = []

    def serve(conn: ssl.SSLSocket) -> None:
        threading.Event().wait(0.3)  # let the client fill every buffer first
        request = _read_request(conn)
        received.append(len(request.partition(b"\r\n\r\n")[2]))
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    server = _RawTLSServer(tmp_path, serve)
    pool = ConnectionPool(_configuration(server.host, server.ca))
    try:
        assert pool.request("PUT", "/x", sent, {}, timeout=5) == (200, b"{}")
    finally:
        pool.clear()
        server.close()
    assert received == [len(sent)]


def test_each_wait_on_a_tls_connection_is_bounded_by_the_requests_timeout(tmp_path: Path) -> None:
    """A kept-alive TLS connection: a short timeout cuts a slow answer short, a long one on the same
    connection is not (the timeouts are the pool's own waits, not the socket's)."""
    delays = iter([0.0, 0.6, 0.6])

    def serve(conn: ssl.SSLSocket) -> None:
        while _read_request(conn):
            threading.Event().wait(next(delays))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    server = _RawTLSServer(tmp_path, serve)
    pool = ConnectionPool(_configuration(server.host, server.ca))
    try:
        assert pool.request("GET", "/a", None, {}, timeout=5) == (200, b"{}")
        assert pool.request("GET", "/b", None, {}, timeout=5) == (200, b"{}")  # waits 0.6 s
        with pytest.raises(ConnectionFailed, match="timed out"):
            pool.request("GET", "/c", None, {}, timeout=0.2)
    finally:
        pool.clear()
        server.close()
    assert (pool.handshakes, pool.resumed) == (1, 0)  # /b reused /a's connection
