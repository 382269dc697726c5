"""The write pool's TLS connections: a new connection resumes the session of an earlier one (no second
full handshake with the server's certificate), and still verifies the server."""

from __future__ import annotations

import http.server
import ssl
import threading
from collections.abc import Iterator
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
