"""The shared credential source (issue 17): exec plugins, token files, expiry, 401 handling."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from informers.connection import load
from informers.credentials import (
    Credential,
    CredentialError,
    Credentials,
    ExecSource,
    TokenFileSource,
    parse_exec_credential,
)
from scheduler.app import cli
from scheduler.client.kubeclient import RestClient

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"


class FakeClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def plugin(tmp: Path, body: str) -> str:
    """An exec plugin: a Python script that appends KUBERNETES_EXEC_INFO and its env to calls.log."""
    script = tmp / "plugin.py"
    script.write_text(
        "import json, os, sys\n"
        f"log = open({str(tmp / 'calls.log')!r}, 'a')\n"
        "log.write(json.dumps({'info': os.environ.get('KUBERNETES_EXEC_INFO'), "
        "'env': os.environ.get('PLUGIN_ENV'), 'args': sys.argv[1:]}) + '\\n')\n"
        "log.close()\n" + body
    )
    return str(script)


def calls(tmp: Path) -> list[dict[str, object]]:
    path = tmp / "calls.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def exec_spec(script: str, api_version: str = V1, args: tuple[str, ...] = ()) -> dict[str, object]:
    return {
        "apiVersion": api_version,
        "command": sys.executable,
        "args": [script, *args],
        "env": [{"name": "PLUGIN_ENV", "value": "from-kubeconfig"}],
        "interactiveMode": "Never",
    }


def credential_json(api_version: str, **status: object) -> str:
    return json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "status": status})


@pytest.mark.parametrize("api_version", [V1, V1BETA1])
def test_exec_token_env_args_and_exec_info(tmp_path: Path, api_version: str) -> None:
    clock = FakeClock()
    out = credential_json(api_version, token="tok-1", expirationTimestamp=stamp(clock.now + 600))
    script = plugin(tmp_path, f"print({out!r})\n")
    source = ExecSource(exec_spec(script, api_version, ("--region", "x")), clock=clock)
    cred = source.fetch()
    assert cred.authorization == "Bearer tok-1"
    assert cred.cert is None
    # Refetched 10 s before expiry (the margin), never after.
    assert cred.refresh_at == pytest.approx(clock.now + 590)
    (call,) = calls(tmp_path)
    assert call["env"] == "from-kubeconfig"
    assert call["args"] == ["--region", "x"]
    info = json.loads(str(call["info"]))
    assert info == {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}


def test_exec_without_expiry_is_kept() -> None:
    status = parse_exec_credential(credential_json(V1, token="t").encode(), V1)
    assert status.expires is None and status.token == "t"


def self_signed(tmp: Path) -> tuple[str, str]:
    files = ["-keyout", str(tmp / "k.pem"), "-out", str(tmp / "c.pem")]
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=x", *files],
        check=True,
        capture_output=True,
    )
    return (tmp / "c.pem").read_text(), (tmp / "k.pem").read_text()


def test_exec_client_certificate(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    script = plugin(
        tmp_path, f"print({credential_json(V1, clientCertificateData=cert, clientKeyData=key)!r})\n"
    )
    cred = ExecSource(exec_spec(script)).fetch()
    assert cred.authorization is None
    assert cred.cert is not None
    assert Path(cred.cert[0]).read_text() == cert
    assert Path(cred.cert[1]).stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("output", "words"),
    [
        ("not json", "not JSON"),
        (credential_json(V1BETA1, token="t"), "returned 'client.authentication.k8s.io/v1beta1'"),
        (json.dumps({"apiVersion": V1, "kind": "ExecCredential"}), "no status"),
        (credential_json(V1), "no token"),
        (credential_json(V1, clientCertificateData="x"), "only one of"),
        (credential_json(V1, token="t", expirationTimestamp="soon"), "expirationTimestamp"),
    ],
)
def test_exec_bad_output(output: str, words: str) -> None:
    with pytest.raises(CredentialError, match=words):
        parse_exec_credential(output.encode(), V1)


def kubeconfig(tmp: Path, user: dict[str, object], server: str = "http://127.0.0.1:1") -> str:
    path = tmp / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


def test_failing_plugin_is_one_startup_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = plugin(tmp_path, "sys.stderr.write('no SSO session\\nrun login first\\n')\nsys.exit(3)\n")
    code = cli.main(["--kubeconfig", kubeconfig(tmp_path, {"exec": exec_spec(script)})])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1
    assert len(lines) == 1, err
    assert "exited with 3" in lines[0] and "no SSO session run login first" in lines[0]
    assert "kubeconfig" in lines[0]


def test_missing_plugin_command_is_one_startup_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = {"apiVersion": V1, "command": "./no-such-plugin"}
    code = cli.main(["--kubeconfig", kubeconfig(tmp_path, {"exec": spec})])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1
    # Resolved against the kubeconfig's directory, as clientcmd does.
    assert str(tmp_path / "no-such-plugin") in lines[0]


def test_kubeconfig_exec_is_run_once_at_load_and_again_at_expiry(tmp_path: Path) -> None:
    clock = FakeClock()
    out = credential_json(V1, token="tok", expirationTimestamp=stamp(clock.now + 5))
    script = plugin(tmp_path, f"print({out!r})\n")
    conn = load(kubeconfig(tmp_path, {"exec": exec_spec(script)}), clock=clock)
    assert len(calls(tmp_path)) == 1  # the client library's loader did not run it too
    assert conn.credentials.current().authorization == "Bearer tok"
    clock.now += 3.5  # before the margin (a fifth of a 5 s life): cached
    conn.credentials.current()
    assert len(calls(tmp_path)) == 1
    clock.now += 0.6  # 4.1 s: within a second of expiry
    conn.credentials.current()
    assert len(calls(tmp_path)) == 2


def test_token_file_reread_every_minute_keeping_the_last_good(tmp_path: Path) -> None:
    clock = FakeClock()
    token = tmp_path / "token"
    token.write_text("one\n")
    conn = load(kubeconfig(tmp_path, {"tokenFile": "token", "token": "ignored"}), clock=clock)
    creds = conn.credentials
    assert creds.current().authorization == "Bearer one"
    token.write_text("two")
    clock.now += 59
    assert creds.current().authorization == "Bearer one"
    clock.now += 2
    assert creds.current().authorization == "Bearer two"
    token.unlink()
    clock.now += 61
    assert creds.current().authorization == "Bearer two"


def test_unreadable_token_file_at_start_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match="no-token"):
        TokenFileSource(str(tmp_path / "no-token")).fetch()


def test_unauthorized_refetches_only_the_credential_that_failed() -> None:
    @dataclass
    class Counting:
        n: int = 0

        def fetch(self) -> Credential:
            self.n += 1
            return Credential(authorization=f"Bearer {self.n}")

    source = Counting()
    creds = Credentials(source)
    first = creds.current()
    creds.unauthorized(first)
    second = creds.current()
    assert second.authorization == "Bearer 2"
    creds.unauthorized(first)  # a late 401 for the old one: already replaced
    assert creds.current() is second and source.n == 2


@dataclass
class Api:
    """An API server that accepts one token; records the Authorization header of each request."""

    good: str
    seen: list[str | None] = field(default_factory=list)


@pytest.fixture
def api() -> Iterator[tuple[Api, str]]:
    state = Api(good="Bearer good")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            auth = self.headers.get("Authorization")
            state.seen.append(auth)
            code = 200 if auth == state.good else 401
            body = b"{}"
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def rest_with_token_file(tmp: Path, server: str, token: str) -> tuple[RestClient, Path]:
    (tmp / "token").write_text(token)
    path = kubeconfig(tmp, {"tokenFile": "token"}, server)
    return RestClient(load(path).configuration, qps=0), tmp / "token"


def test_401_refetches_once_and_retries(tmp_path: Path, api: tuple[Api, str]) -> None:
    state, server = api
    rest, token = rest_with_token_file(tmp_path, server, "old")
    token.write_text("good")  # rotated on disk; the cached one is refused
    assert rest.request("GET", "/api")[0] == 200
    assert state.seen == ["Bearer old", "Bearer good"]


def test_401_twice_is_returned(tmp_path: Path, api: tuple[Api, str]) -> None:
    state, server = api
    rest, token = rest_with_token_file(tmp_path, server, "old")
    token.write_text("still-bad")
    assert rest.request("GET", "/api")[0] == 401
    assert state.seen == ["Bearer old", "Bearer still-bad"]
    state.seen.clear()
    # Unchanged credential after a 401: no pointless retry.
    assert rest.request("GET", "/api")[0] == 401
    assert state.seen == ["Bearer still-bad"]
