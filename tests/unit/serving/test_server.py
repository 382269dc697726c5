"""HealthServer: endpoints, status transitions, verbose output and TLS, over real sockets on port 0."""

from __future__ import annotations

import gzip
import shutil
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter

from scheduler import metrics
from scheduler.serving.server import HealthServer


class State:
    def __init__(self) -> None:
        self.ready = (False, "informer caches not synced")
        self.live = (True, "ok")

    def readiness(self) -> tuple[bool, str]:
        return self.ready

    def liveness(self) -> tuple[bool, str]:
        return self.live


def get(
    url: str, *, headers: dict[str, str] | None = None, context: ssl.SSLContext | None = None
) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read(), dict(err.headers)


@pytest.fixture
def state() -> State:
    return State()


@pytest.fixture
def server(state: State) -> Iterator[HealthServer]:
    srv = HealthServer("127.0.0.1", 0, poll_interval=0.02, readiness=state.readiness, liveness=state.liveness)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_port_zero_binds_a_real_port(server: HealthServer) -> None:
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}"


def test_readyz_goes_from_503_with_reason_to_200(server: HealthServer, state: State) -> None:
    status, body, _ = get(server.url + "/readyz")
    assert status == 503
    assert b"[-]readiness failed: informer caches not synced" in body
    assert body.rstrip().endswith(b"readyz check failed")

    state.ready = (True, "ok")
    status, body, headers = get(server.url + "/readyz")
    assert (status, body) == (200, b"ok")
    assert headers["Content-Type"].startswith("text/plain")


@pytest.mark.parametrize("path", ["/healthz", "/livez"])
def test_liveness_endpoints_ignore_readiness(server: HealthServer, path: str) -> None:
    status, body, _ = get(server.url + path)
    assert (status, body) == (200, b"ok")


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
def test_liveness_failure_fails_every_health_endpoint(server: HealthServer, state: State, path: str) -> None:
    state.ready = (True, "ok")
    state.live = (False, "leader election stalled for 31.0s")
    status, body, _ = get(server.url + path)
    assert status == 503
    assert b"[-]liveness failed: leader election stalled for 31.0s" in body


def test_verbose_lists_every_check(server: HealthServer, state: State) -> None:
    state.ready = (True, "ok")
    status, body, _ = get(server.url + "/readyz?verbose")
    assert status == 200
    assert body.decode().splitlines() == [
        "[+]ping ok",
        "[+]liveness ok",
        "[+]readiness ok",
        "readyz check passed",
    ]


def test_exclude_skips_a_check(server: HealthServer) -> None:
    status, body, _ = get(server.url + "/readyz?exclude=readiness&verbose")
    assert status == 200
    assert b"[+]readiness excluded: ok" in body


def test_single_check_path(server: HealthServer, state: State) -> None:
    assert get(server.url + "/readyz/ping")[:2] == (200, b"ok")
    status, body, _ = get(server.url + "/readyz/readiness")
    assert status == 503
    assert b"informer caches not synced" in body
    assert get(server.url + "/readyz/nope")[0] == 404


def test_check_that_raises_is_a_failure_not_a_crash(state: State) -> None:
    def broken() -> tuple[bool, str]:
        raise RuntimeError("boom")

    srv = HealthServer("127.0.0.1", 0, poll_interval=0.02, readiness=broken, liveness=state.liveness)
    srv.start()
    try:
        status, body, _ = get(srv.url + "/readyz")
        assert status == 503
        assert b"boom" in body
        assert get(srv.url + "/livez")[0] == 200
    finally:
        srv.stop()


def test_named_checks_mapping(state: State) -> None:
    srv = HealthServer(
        "127.0.0.1",
        0,
        poll_interval=0.02,
        readiness={"sched-handler-sync": state.readiness},
        liveness={"leaderElection": state.liveness},
    )
    srv.start()
    try:
        _, body, _ = get(srv.url + "/readyz?verbose")
        assert b"[+]leaderElection ok" in body
        assert b"[-]sched-handler-sync failed" in body
    finally:
        srv.stop()


def test_unknown_path_is_404(server: HealthServer) -> None:
    assert get(server.url + "/configz")[0] == 404


def test_metrics_exposes_default_registry_in_text_format(server: HealthServer) -> None:
    metrics.observe_attempt(metrics.SCHEDULED, "server-test", 0.002)
    status, body, headers = get(server.url + "/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = body.decode()
    assert 'scheduler_schedule_attempts_total{profile="server-test",result="scheduled"}' in text
    assert "process_cpu_seconds_total" in text  # default process collector
    assert "python_info" in text  # default platform collector


def test_metrics_gzip_and_openmetrics(server: HealthServer) -> None:
    status, body, headers = get(server.url + "/metrics", headers={"Accept-Encoding": "gzip"})
    assert status == 200
    assert headers["Content-Encoding"] == "gzip"
    assert b"# TYPE" in gzip.decompress(body)

    _, body, headers = get(
        server.url + "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert body.rstrip().endswith(b"# EOF")


def test_custom_registry() -> None:
    registry = CollectorRegistry()
    Counter("only_here", "test", registry=registry).inc()
    srv = HealthServer(
        "127.0.0.1",
        0,
        poll_interval=0.02,
        readiness=lambda: (True, ""),
        liveness=lambda: (True, ""),
        registry=registry,
    )
    srv.start()
    try:
        _, body, _ = get(srv.url + "/metrics")
        assert b"only_here_total 1.0" in body
        assert b"scheduler_schedule_attempts" not in body
    finally:
        srv.stop()


def test_head_request(server: HealthServer) -> None:
    request = urllib.request.Request(server.url + "/livez", method="HEAD")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        assert response.read() == b""


def test_serves_while_another_thread_holds_a_request_open(server: HealthServer) -> None:
    """One stuck client (sent nothing) must not block the next probe."""
    import socket

    stuck = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        assert get(server.url + "/livez")[:2] == (200, b"ok")
    finally:
        stuck.close()


def test_stop_releases_the_port(state: State) -> None:
    srv = HealthServer("127.0.0.1", 0, poll_interval=0.02, readiness=state.readiness, liveness=state.liveness)
    srv.start()
    port = srv.port
    assert get(srv.url + "/livez")[:2] == (200, b"ok")
    srv.stop()
    with pytest.raises(urllib.error.URLError):  # nothing listens there any more
        urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=5)
    # Binding raises OSError (address in use) if the stopped server still held the port.
    again = HealthServer(
        "127.0.0.1", port, poll_interval=0.02, readiness=state.readiness, liveness=state.liveness
    )
    again.start()
    try:
        assert again.port == port
        assert get(again.url + "/livez")[:2] == (200, b"ok")
    finally:
        again.stop()


def test_tls_requires_both_files() -> None:
    with pytest.raises(ValueError, match="together"):
        HealthServer(
            "127.0.0.1",
            0,
            tls_cert_file="c.pem",
            poll_interval=0.02,
            readiness=lambda: (True, ""),
            liveness=lambda: (True, ""),
        )


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("openssl is required (the Makefile installs it)")
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "tls.crt", directory / "tls.key"
    subprocess.run(
        [
            openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert),
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


def test_tls_serves_https_with_the_given_certificate(self_signed: tuple[Path, Path], state: State) -> None:
    cert, key = self_signed
    srv = HealthServer(
        "127.0.0.1",
        0,
        tls_cert_file=str(cert),
        tls_key_file=str(key),
        poll_interval=0.02,
        readiness=state.readiness,
        liveness=state.liveness,
    )
    srv.start()
    try:
        assert srv.url.startswith("https://")
        context = ssl.create_default_context(cafile=str(cert))
        assert get(srv.url + "/livez", context=context)[:2] == (200, b"ok")
        assert get(srv.url + "/readyz", context=context)[0] == 503
        status, body, _ = get(srv.url + "/metrics", context=context)
        assert status == 200
        assert b"# TYPE" in body

        # A plain-HTTP client gets no answer, and the server keeps serving TLS afterwards.
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            urllib.request.urlopen(f"http://127.0.0.1:{srv.port}/livez", timeout=5).read()
        assert get(srv.url + "/livez", context=context)[:2] == (200, b"ok")
    finally:
        srv.stop()


def test_concurrent_probes(server: HealthServer) -> None:
    results: list[int] = []
    lock = threading.Lock()

    def probe() -> None:
        status = get(server.url + "/livez")[0]
        with lock:
            results.append(status)

    threads = [threading.Thread(target=probe) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == [200] * 16


def test_ipv6_bind_address(state: State) -> None:
    import socket

    if not socket.has_ipv6:
        pytest.skip("no IPv6 in this kernel")
    try:
        srv = HealthServer("::1", 0, poll_interval=0.02, readiness=state.readiness, liveness=state.liveness)
    except OSError as err:
        pytest.skip(f"cannot bind ::1: {err}")
    srv.start()
    try:
        assert srv.url.startswith("http://[::1]:")
        assert get(srv.url + "/livez")[:2] == (200, b"ok")
    finally:
        srv.stop()
