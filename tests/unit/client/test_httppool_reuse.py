"""The pool's dead-connection check: skipped for a connection that came back a moment ago, done (and a
connection the server closed while idle dropped) once it has sat in the pool longer."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from urllib3.util.wait import wait_for_read

from scheduler.client import httppool
from scheduler.client.httppool import RECENTLY_USED_SECONDS, ConnectionPool

_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Server:
    """Answers every request; with ``close_after_answer`` it then closes the connection (as a server's
    idle timeout would), without saying so in the response."""

    def __init__(self, *, close_after_answer: bool) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.accepted = 0
        self.requests = 0
        self._close = close_after_answer
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            while True:
                data = b""
                while not data.endswith(b"\r\n\r\n"):
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                self.requests += 1
                conn.sendall(_ANSWER)
                if self._close:
                    return

    def close(self) -> None:
        self._sock.close()


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Every dead-connection check the pool makes, with its answer (True: the connection is dead)."""
    made: list[bool] = []

    def counted(sock: socket.socket, timeout: float) -> bool:
        made.append(wait_for_read(sock, timeout=timeout))
        return made[-1]

    monkeypatch.setattr(httppool, "wait_for_read", counted)
    yield made


def _pool(server: _Server, clock: _Clock) -> ConnectionPool:
    class Config:
        host = f"http://127.0.0.1:{server.port}"

    return ConnectionPool(Config(), clock=clock)


def test_a_connection_back_a_moment_ago_is_reused_without_the_check(checks: list[bool]) -> None:
    server, clock = _Server(close_after_answer=False), _Clock()
    pool = _pool(server, clock)
    try:
        for _ in range(3):
            assert pool.request("GET", "/x", None, {}, timeout=5.0) == (200, b"{}")
            clock.now += RECENTLY_USED_SECONDS / 2
        assert checks == []
        clock.now += RECENTLY_USED_SECONDS
        assert pool.request("GET", "/x", None, {}, timeout=5.0) == (200, b"{}")
        assert checks == [False]  # checked, alive, reused
    finally:
        pool.clear()
        server.close()
    assert server.accepted == 1


def test_a_connection_the_server_closed_while_idle_is_not_reused(checks: list[bool]) -> None:
    server, clock = _Server(close_after_answer=True), _Clock()
    pool = _pool(server, clock)
    try:
        assert pool.request("GET", "/x", None, {}, timeout=5.0) == (200, b"{}")
        clock.now += RECENTLY_USED_SECONDS
        # The server's close reaches our side before the pool looks (it has sat idle for a second).
        threading.Event().wait(0.2)
        assert pool.request("GET", "/x", None, {}, timeout=5.0) == (200, b"{}")
    finally:
        pool.clear()
        server.close()
    assert checks == [True]
    assert server.accepted == 2 and server.requests == 2
