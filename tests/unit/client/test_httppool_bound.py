"""The write pool's bound on requests in flight: a burst from many threads opens no more connections
than ``max_open``, and a thread that finds none free within its timeout gets ConnectionFailed."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client as k8s

from scheduler.client.httppool import ConnectionFailed, ConnectionPool


class _Slow(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the API server
    delay = 0.1
    peers: set[int] = set()
    lock = threading.Lock()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.lock:
            self.peers.add(self.client_address[1])
        time.sleep(self.delay)
        self.send_response(201)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Slow.peers = set()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_burst_from_many_threads_shares_max_open_connections(server: str) -> None:
    pool = ConnectionPool(k8s.Configuration(host=server), maxsize=32, max_open=3)
    with ThreadPoolExecutor(12) as threads:
        results = list(threads.map(lambda _: pool.request("POST", "/x", b"{}", {}, timeout=10), range(24)))
    assert results == [(201, b"{}")] * 24
    assert len(_Slow.peers) <= 3


def test_without_a_bound_the_same_burst_opens_a_connection_per_thread(server: str) -> None:
    pool = ConnectionPool(k8s.Configuration(host=server), maxsize=32)
    with ThreadPoolExecutor(12) as threads:
        list(threads.map(lambda _: pool.request("POST", "/x", b"{}", {}, timeout=10), range(24)))
    assert len(_Slow.peers) > 3


def test_no_connection_free_within_the_timeout_is_a_connection_failure(server: str) -> None:
    pool = ConnectionPool(k8s.Configuration(host=server), max_open=1)
    _Slow.delay = 1.0
    try:
        with ThreadPoolExecutor(1) as thread:
            holding = thread.submit(pool.request, "POST", "/slow", b"{}", {}, 10)
            time.sleep(0.2)
            with pytest.raises(ConnectionFailed, match=r"no connection free within 0\.1s"):
                pool.request("POST", "/x", b"{}", {}, timeout=0.1)
            assert holding.result() == (201, b"{}")
    finally:
        _Slow.delay = 0.1
    assert pool.request("POST", "/x", b"{}", {}, timeout=5) == (201, b"{}")


def test_max_open_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_open"):
        ConnectionPool(k8s.Configuration(host="http://127.0.0.1:1"), max_open=0)
