"""Reading one HTTP/1.1 response from a (TLS) socket: status, headers and body, nothing else.

The binding threads send a Binding and an Event per pod and read two small responses. ``http.client``
read each through a buffered file over the socket, a line at a time, then built an ``HTTPMessage``
(email's Message: every lookup lower-cases and scans all headers): measured against the real TLS API
server, its response handling was half of a write's client CPU. Here the socket is read in large
``recv`` calls into one buffer; the head is split once and the body taken by Content-Length, chunked
transfer coding, or (without either) up to the end of the connection, as RFC 9112 section 6.3 says.

Anything malformed raises :class:`http.client.HTTPException` subclasses, the exceptions ``http.client``
raises for the same faults, so the pool's callers see no difference.
"""

from __future__ import annotations

import http.client
from typing import Protocol

# Larger than any head the API server sends; http.client's limits are 64 KiB per line, 100 headers.
MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
_RECV_BYTES = 65536


class _Socket(Protocol):
    def recv(self, size: int, /) -> bytes: ...


class Response:
    """A complete response: ``status``, ``headers`` (names lower-cased; repeated ones joined with
    ", " as ``HTTPMessage.get`` would not, but as RFC 9110 allows for list-valued fields),
    ``body`` and ``will_close`` (the connection cannot carry another request)."""

    __slots__ = ("body", "headers", "status", "will_close")

    def __init__(self, status: int, headers: dict[str, str], body: bytes, will_close: bool) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.will_close = will_close

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


class _Reader:
    """The bytes received so far and the socket to get more from."""

    __slots__ = ("buf", "pos", "sock")

    def __init__(self, sock: _Socket) -> None:
        self.sock = sock
        self.buf = b""
        self.pos = 0

    def _fill(self) -> bool:
        chunk = self.sock.recv(_RECV_BYTES)
        if not chunk:
            return False
        self.buf = self.buf[self.pos :] + chunk if self.pos else self.buf + chunk
        self.pos = 0
        return True

    def until(self, marker: bytes, limit: int) -> bytes:
        """The bytes up to ``marker`` (consumed, not returned)."""
        while True:
            end = self.buf.find(marker, self.pos)
            if end >= 0:
                out = self.buf[self.pos : end]
                self.pos = end + len(marker)
                return out
            if len(self.buf) - self.pos > limit:
                raise http.client.LineTooLong("response head")
            if not self._fill():
                if self.pos == len(self.buf):
                    raise http.client.RemoteDisconnected("Remote end closed connection without response")
                raise http.client.IncompleteRead(self.buf[self.pos :])

    def exactly(self, count: int) -> bytes:
        while len(self.buf) - self.pos < count:
            if not self._fill():
                raise http.client.IncompleteRead(self.buf[self.pos :], count - (len(self.buf) - self.pos))
        out = self.buf[self.pos : self.pos + count]
        self.pos += count
        return out

    def rest(self) -> bytes:
        while self._fill():
            pass
        out = self.buf[self.pos :]
        self.pos = len(self.buf)
        return out


def read_response(sock: _Socket, method: str) -> Response:
    """Read one response to a ``method`` request from ``sock`` (its timeout applies to every recv)."""
    reader = _Reader(sock)
    while True:
        version, status, headers = _head(reader.until(b"\r\n\r\n", MAX_HEAD_BYTES))
        if not 100 <= status < 200 or status == 101:
            break
        # An interim answer (100 Continue, 103 Early Hints): the real one follows.
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        body = b""
        eof_delimited = False
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        body = _chunked(reader)
        eof_delimited = False
    elif "content-length" in headers:
        body = reader.exactly(_content_length(headers["content-length"]))
        eof_delimited = False
    else:
        body = reader.rest()
        eof_delimited = True
    connection = headers.get("connection", "").lower()
    # HTTP/1.0 closes unless asked to keep alive; HTTP/1.1 keeps alive unless told to close.
    will_close = "keep-alive" not in connection if version == "HTTP/1.0" else "close" in connection
    # Bytes past the response mean the peer is out of step with us: never reuse that connection.
    will_close = will_close or eof_delimited or reader.pos != len(reader.buf)
    return Response(status, headers, body, will_close)


def _head(block: bytes) -> tuple[str, int, dict[str, str]]:
    lines = block.split(b"\r\n")
    parts = lines[0].split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit() or len(parts[1]) != 3:
        raise http.client.BadStatusLine(lines[0].decode("iso-8859-1"))
    version = parts[0].decode("ascii", "replace")
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise http.client.UnknownProtocol(version)
    if len(lines) - 1 > MAX_HEADERS:
        raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
    headers: dict[str, str] = {}
    last = ""
    for raw in lines[1:]:
        line = raw.decode("iso-8859-1")
        if line[:1] in (" ", "\t") and last:
            # Obsolete line folding: a continuation of the previous field's value.
            headers[last] = f"{headers[last]} {line.strip()}"
            continue
        name, sep, value = line.partition(":")
        name = name.strip().lower()
        if not sep or not name:
            raise http.client.HTTPException(f"malformed header line {line!r}")
        value = value.strip(" \t")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
        last = name
    return version, int(parts[1]), headers


def _content_length(text: str) -> int:
    # Repeated identical values ("12, 12") are allowed by RFC 9110; anything else is an error.
    values = {v.strip() for v in text.split(",")}
    if len(values) != 1:
        raise http.client.HTTPException(f"conflicting Content-Length {text!r}")
    value = values.pop()
    if not value.isdigit():
        raise http.client.HTTPException(f"invalid Content-Length {text!r}")
    return int(value)


def _chunked(reader: _Reader) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = reader.until(b"\r\n", MAX_HEAD_BYTES)
        size_text = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise http.client.IncompleteRead(b"".join(parts)) from None
        if size == 0:
            # Trailer fields, if any, end with an empty line; they are not kept.
            while reader.until(b"\r\n", MAX_HEAD_BYTES):
                pass
            return b"".join(parts)
        parts.append(reader.exactly(size))
        if reader.exactly(2) != b"\r\n":
            raise http.client.IncompleteRead(b"".join(parts))
