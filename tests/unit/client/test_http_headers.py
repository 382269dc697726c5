"""The write pool's response reader (``scheduler.client.http_response``) gives what ``http.client`` gives.

Checked against the stdlib on random responses (status, repeated and folded headers, bodies framed by
Content-Length, chunked coding with extensions and trailers, or the end of the connection), delivered
in random pieces, and on a real HTTP exchange over a socket; and the requests are the bytes
``http.client`` would send.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import socket
import threading
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scheduler.client.http_response import read_response
from scheduler.client.httppool import ConnectionFailed, ConnectionPool

_NAME = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz-ABCXYZ0123456789"), min_size=1, max_size=10)
_VALUE = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=16)


class _Pieces:
    """A socket whose recv hands out ``data`` in the given piece sizes, then b"" (closed)."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self.data = data
        self.sizes = sizes

    def recv(self, size: int) -> bytes:
        take = min(size, self.sizes.pop(0) if self.sizes else len(self.data)) or len(self.data)
        out, self.data = self.data[:take], self.data[take:]
        return out

    def makefile(self, mode: str) -> io.BytesIO:
        return io.BytesIO(self.data)


@st.composite
def responses(draw: Any) -> tuple[bytes, str]:
    status = draw(st.sampled_from([200, 201, 204, 304, 404, 409, 429, 500]))
    method = draw(st.sampled_from(["GET", "POST", "HEAD"]))
    lines = [f"HTTP/1.1 {status} {draw(st.sampled_from(['OK', 'Created', 'Some Reason', '']))}".rstrip()]
    if draw(st.booleans()):
        # An interim response first: its empty header block ends with the blank line the join adds.
        lines.insert(0, "HTTP/1.1 100 Continue\r\n")
    names = draw(st.lists(_NAME, max_size=6))
    for name in names:
        lines.append(f"{name}:{draw(st.sampled_from(['', ' ', '  ']))}{draw(_VALUE)}")
        if draw(st.integers(0, 9)) == 0:
            lines.append(f" {draw(_VALUE)}")  # a folded continuation line
    body = draw(st.binary(max_size=300))
    framing = draw(st.sampled_from(["length", "chunked", "eof"]))
    if method == "HEAD" or status in (204, 304):
        # No body by definition (RFC 9110 6.4.1); a server sending one anyway is out of step.
        body, framing = b"", draw(st.sampled_from(["length", "none"]))
    if framing == "length":
        lines.append(f"Content-Length: {len(body)}")
        wire_body = body
    elif framing == "chunked":
        lines.append("Transfer-Encoding: chunked")
        wire_body = b""
        rest = body
        while rest:
            size = draw(st.integers(1, max(1, len(rest))))
            ext = draw(st.sampled_from([b"", b";name=value"]))
            wire_body += f"{size:x}".encode() + ext + b"\r\n" + rest[:size] + b"\r\n"
            rest = rest[size:]
        wire_body += b"0\r\n" + draw(st.sampled_from([b"", b"Trailer-Field: x\r\n"])) + b"\r\n"
    elif framing == "eof":
        lines.append("Connection: close")
        wire_body = body
    else:
        wire_body = b""
    head = "\r\n".join(lines).encode("iso-8859-1") + b"\r\n\r\n"
    return head + wire_body, method


def _items(value: str) -> list[str]:
    """A field value's comma-separated items, each with its whitespace (folds included) collapsed."""
    return [" ".join(item.split()) for item in value.split(",")]


@settings(max_examples=500, deadline=None)
@given(responses(), st.lists(st.integers(1, 64), max_size=40))
# Found by hypothesis in CI-like runs: empty folded fields repeated, then a value that is a comma.
@example((b"HTTP/1.1 200 OK\r\n0:\r\n \r\n0:\r\n \r\n0:\r\n \r\n0:,\r\nContent-Length: 0\r\n\r\n", "GET"), [])
@example((b"HTTP/1.1 200 OK\r\n0:0\r\n \r\n0:\r\n \r\nContent-Length: 0\r\n\r\n", "GET"), [])
def test_responses_read_as_the_stdlib_reads_them(case: tuple[bytes, str], sizes: list[int]) -> None:
    wire, method = case
    theirs = http.client.HTTPResponse(_Pieces(wire, []), method=method)  # type: ignore[arg-type]
    theirs.begin()
    their_body = theirs.read()
    ours = read_response(_Pieces(wire, list(sizes)), method)
    assert ours.status == theirs.status
    assert ours.body == their_body
    for name in {key.lower() for key in theirs.headers}:
        values = theirs.headers.get_all(name) or []
        # The stdlib keeps each field raw (a folded line's CRLF included); ours unfolds them and joins
        # repeated fields with ", " (RFC 9110 5.3). Same comma-separated items, whitespace aside.
        expected = ", ".join(values)
        assert _items(ours.getheader(name) or "") == _items(expected)
    if theirs.will_close:
        assert ours.will_close


def test_truncated_responses_raise_what_http_client_raises() -> None:
    with pytest.raises(http.client.RemoteDisconnected):
        read_response(_Pieces(b"", []), "GET")
    with pytest.raises(http.client.IncompleteRead):
        read_response(_Pieces(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", []), "GET")
    with pytest.raises(http.client.IncompleteRead):
        read_response(_Pieces(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", []), "GET")
    with pytest.raises(http.client.BadStatusLine):
        read_response(_Pieces(b"SSH-2.0-OpenSSH\r\n\r\n", []), "GET")
    with pytest.raises(http.client.LineTooLong):
        read_response(_Pieces(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000, []), "GET")


def test_bytes_past_the_response_keep_the_connection_from_being_reused() -> None:
    wire = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"
    response = read_response(_Pieces(wire, []), "GET")
    assert response.body == b"ok" and response.will_close
    clean = read_response(_Pieces(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", []), "GET")
    assert not clean.will_close
    legacy = read_response(_Pieces(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", []), "GET")
    assert legacy.will_close


def test_a_response_over_a_socket_reads_status_headers_and_body() -> None:
    body = b'{"kind":"Status","status":"Success"}'
    head = (
        b"HTTP/1.1 201 Created\r\nAudit-Id: 42\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    requests: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            for _ in range(2):  # two requests on one kept-alive connection
                data = b""
                while not data.endswith(b"\r\n\r\n"):
                    data += conn.recv(4096)
                requests.append(data)
                conn.sendall(head + body)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    class Config:
        host = f"http://127.0.0.1:{port}"

    pool = ConnectionPool(Config())
    try:
        for _ in range(2):
            assert pool.request("GET", "/x", None, {}, timeout=5.0) == (201, body)
    finally:
        pool.clear()
        server.close()
    thread.join(timeout=5)
    assert len(requests) == 2  # the connection was reused: the response left it open


def test_a_reused_connection_takes_each_requests_own_timeout() -> None:
    """The pool sets a socket's timeout only when it changes; a shorter one on a kept-alive connection
    still bounds that request, and the next request with the long one is not cut short."""
    body = b"{}"
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" + body
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    delays = [0.0, 0.0, 1.0]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            for delay in delays:
                data = b""
                while not data.endswith(b"\r\n\r\n"):
                    data += conn.recv(4096)
                threading.Event().wait(delay)
                with contextlib.suppress(OSError):
                    conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    class Config:
        host = f"http://127.0.0.1:{port}"

    pool = ConnectionPool(Config())
    try:
        assert pool.request("GET", "/a", None, {}, timeout=5.0) == (200, body)
        assert pool.request("GET", "/b", None, {}, timeout=5.0) == (200, body)  # same connection
        with pytest.raises(ConnectionFailed, match="timed out"):
            pool.request("GET", "/c", None, {}, timeout=0.2)
    finally:
        pool.clear()
        server.close()
    thread.join(timeout=5)


class _Capture:
    """A socket that records what ``HTTPConnection.request`` sends."""

    def __init__(self) -> None:
        self.sent = b""

    def sendall(self, data: bytes) -> None:
        self.sent += data


@pytest.mark.parametrize(
    "host", ["https://10.0.0.1:6443", "https://api.example:443/prefix", "http://[::1]:8080"]
)
@pytest.mark.parametrize(
    ("method", "path", "body", "headers"),
    [
        ("POST", "/api/v1/namespaces/d/pods/p/binding", b'{"a":1}', {"Content-Type": "application/json"}),
        ("GET", "/api/v1/nodes", None, {"Accept": "application/json", "Authorization": "Bearer t"}),
        ("POST", "/apis/events.k8s.io/v1/namespaces/d/events", None, {"User-Agent": "x"}),
        ("PATCH", "/api/v1/namespaces/d/pods/p/status", b"{}", {"Host": "other", "Accept-Encoding": "gzip"}),
        ("PUT", "/x", b"y", {"Content-Length": "1"}),
    ],
)
def test_a_request_is_the_bytes_http_client_would_send(
    host: str, method: str, path: str, body: bytes | None, headers: dict[str, str]
) -> None:
    class Config:
        pass

    Config.host = host  # type: ignore[attr-defined]
    pool = ConnectionPool(Config())
    reference = http.client.HTTPConnection(pool.host, pool.port or (443 if pool._https else 80))
    reference.default_port = 443 if pool._https else 80
    capture = _Capture()
    reference.sock = capture
    reference.request(method, pool.prefix + path, body=body, headers=headers)
    assert pool._request_bytes(method, path, body, headers) == capture.sent


@pytest.mark.parametrize(
    ("path", "headers"),
    [("/a b", {}), ("/a\r\nX: y", {}), ("/ok", {"X": "a\r\nInjected: 1"}), ("/ok", {"X\n": "v"})],
)
def test_a_request_with_line_breaks_or_spaces_is_refused(path: str, headers: dict[str, str]) -> None:
    class Config:
        host = "https://10.0.0.1:6443"

    with pytest.raises(ValueError, match="contains"):
        ConnectionPool(Config())._request_bytes("GET", path, None, headers)
