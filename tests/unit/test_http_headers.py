"""The write pool's response header parsing gives what ``http.client`` gives, without email.parser.

Checked against the stdlib on random header blocks (plain lines, repeated names, odd spacing, and the
cases that must go to the email parser: folded lines, malformed names, an mbox "From " line), and on a
real HTTP exchange over a socket.
"""

from __future__ import annotations

import http.client
import io
import socket
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.httppool import ConnectionPool, _Response, parse_headers

_NAME_CHARS = st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters=":")
_VALUE_CHARS = st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\r\n")


@st.composite
def header_lines(draw: Any) -> bytes:
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["plain", "plain", "plain", "folded", "spaced-name", "from", "no-colon"]))
        name = draw(st.text(_NAME_CHARS, min_size=1, max_size=12))
        value = draw(st.text(_VALUE_CHARS, max_size=20))
        if kind == "plain":
            lines.append(f"{name}:{draw(st.sampled_from(['', ' ', '  ', chr(9)]))}{value}")
        elif kind == "folded":
            lines.append(f"{name}: {value}")
            lines.append(f"{draw(st.sampled_from([' ', chr(9)]))}{value}")
        elif kind == "spaced-name":
            lines.append(f"{name} : {value}")
        elif kind == "from":
            lines.append(f"From {value}")
        else:
            lines.append(name)
    end: str = draw(st.sampled_from(["\r\n", "\n"]))
    return "".join(line + end for line in lines).encode("iso-8859-1") + end.encode()


@settings(max_examples=400, deadline=None)
@given(header_lines())
def test_headers_parse_as_the_stdlib_parses_them(block: bytes) -> None:
    ours = parse_headers(io.BytesIO(block + b"body"))
    theirs = http.client.parse_headers(io.BytesIO(block + b"body"))
    assert list(ours.items()) == list(theirs.items())
    for name in {key.lower() for key in theirs}:
        assert ours.get_all(name) == theirs.get_all(name)


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


def test_the_pool_parses_responses_with_its_own_response_class() -> None:
    class Config:
        host = "http://127.0.0.1:1"

    pool = ConnectionPool(Config())
    assert pool._new(None).response_class is _Response


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
