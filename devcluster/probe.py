"""Free loopback ports, health probes and a condition wait with a deadline."""

from __future__ import annotations

import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping


class WaitTimeoutError(TimeoutError):
    """A condition did not become true before its deadline."""


def free_port() -> int:
    """A currently unused TCP port on 127.0.0.1 (the caller retries if someone takes it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(
    condition: Callable[[], bool],
    timeout: float,
    what: str,
    *,
    interval: float = 0.05,
    max_interval: float = 0.5,
    abort: Callable[[], str | None] | None = None,
) -> None:
    """Poll ``condition`` until it is true; raise WaitTimeoutError after ``timeout`` seconds.

    ``abort`` returns a reason to stop early (e.g. the process died); it is raised as RuntimeError.
    """
    deadline = time.monotonic() + timeout
    delay = interval
    while True:
        if condition():
            return
        if abort is not None and (reason := abort()) is not None:
            raise RuntimeError(reason)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(min(delay, remaining))
        delay = min(delay * 1.5, max_interval)


def http_get(
    url: str,
    context: ssl.SSLContext | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 2.0,
) -> tuple[int, bytes]:
    """(status, body) of a GET; status 0 when the server cannot be reached."""
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            status: int = response.status
            return status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def unverified_tls() -> ssl.SSLContext:
    """For probing components whose self-signed serving cert we do not distribute (kube-scheduler)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
