"""Every start-up error is one line naming the problem, exit code 1, never a traceback (issue 11)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scheduler.app import cli
from scheduler.config.loader import MAX_CONFIG_BYTES

REPO = Path(__file__).resolve().parents[3]

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""
HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
BOMB = (
    HEADER
    + "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
)


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def write(tmp: Path, name: str, text: str | bytes) -> str:
    path = tmp / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def plugin_profile(attr: str) -> str:
    """A profile enabling one of the plugins of tests/unit/framework/oot_bad_plugins.py."""
    name = f"tests.unit.framework.oot_bad_plugins:{attr}"
    return f"profiles: [{{schedulerName: x, plugins: {{multiPoint: {{enabled: [{{name: '{name}'}}]}}}}}}]\n"


# (case, argv builder, words the one line must contain)
Case = tuple[str, Callable[[Path, int], list[str]], tuple[str, ...]]


def free() -> list[str]:
    """Secure serving on a port free right now, not 10259, which another scheduler may hold."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return ["--bind-address", "127.0.0.1", "--secure-port", str(port)]


def kc(tmp: Path) -> list[str]:
    return ["--kubeconfig", write(tmp, "ok.kubeconfig", KUBECONFIG)]


def cfg(tmp: Path, text: str | bytes) -> list[str]:
    return ["--config", write(tmp, "config.yaml", text)]


CASES: list[Case] = [
    (
        "kubeconfig missing",
        lambda t, p: ["--kubeconfig", str(t / "nope")],
        ("kubeconfig", "nope", "no such file"),
    ),
    (
        "kubeconfig a directory",
        lambda t, p: ["--kubeconfig", str(t)],
        ("kubeconfig", "not a regular file"),
    ),
    (
        "kubeconfig server not a URL",
        lambda t, p: ["--kubeconfig", write(t, "s", KUBECONFIG.replace("https://127.0.0.1:1", "not a url"))],
        ("kubeconfig", "server 'https://not a url'", "http(s) URL"),
    ),
    (
        "kubeconfig server of another scheme",
        lambda t, p: ["--kubeconfig", write(t, "s", KUBECONFIG.replace("https://", "ftp://"))],
        ("kubeconfig", "ftp://127.0.0.1:1", "http(s) URL"),
    ),
    (
        "kubeconfig server port out of range",
        lambda t, p: ["--kubeconfig", write(t, "s", KUBECONFIG.replace(":1", ":99999"))],
        ("kubeconfig", "https://127.0.0.1:99999", "out of range"),
    ),
    (
        "kubeconfig client certificate not PEM",
        lambda t, p: [
            "--kubeconfig",
            write(
                t,
                "c",
                KUBECONFIG.replace("{token: t}", "{client-certificate-data: Zm9v, client-key-data: YmFy}"),
            ),
        ],
        ("kubeconfig", "client-certificate/client-key", "PEM"),
    ),
    ("kubeconfig empty", lambda t, p: ["--kubeconfig", write(t, "e", "")], ("kubeconfig", "empty")),
    (
        "kubeconfig malformed",
        lambda t, p: ["--kubeconfig", write(t, "m", "clusters: [[[\n")],
        ("kubeconfig", "/m"),
    ),
    (
        "kubeconfig wrong shape",
        lambda t, p: ["--kubeconfig", write(t, "w", "- 1\n- 2\n")],
        ("kubeconfig", "/w"),
    ),
    (
        "clientConnection.kubeconfig missing",
        lambda t, p: cfg(t, HEADER + f"clientConnection: {{kubeconfig: {t}/gone}}\n"),
        ("kubeconfig", "gone", "no such file"),
    ),
    ("port out of range", lambda t, p: [*kc(t), "--port", "70000"], ("--port", "70000", "out of range")),
    ("port not a number", lambda t, p: [*kc(t), "--port", "http"], ("--port", "not a port")),
    (
        "secure port out of range",
        lambda t, p: [*kc(t), "--secure-port", "70000"],
        ("--secure-port", "70000", "between 0 and 65535"),
    ),
    (
        "secure port in use",
        lambda t, p: [*kc(t), "--bind-address", "127.0.0.1", "--secure-port", str(p)],
        ("127.0.0.1:", "in use"),
    ),
    (
        "insecure port in use",
        lambda t, p: [*kc(t), "--bind-address", "127.0.0.1", "--secure-port", "0", "--port", str(p)],
        ("127.0.0.1:", "in use"),
    ),
    (
        "--port and --secure-port the same",
        lambda t, p: [*kc(t), "--port", "10259"],
        ("--port 10259", "--secure-port", "plain"),
    ),
    ("empty bind address", lambda t, p: [*kc(t), "--bind-address="], ("--bind-address", "expected an IP")),
    (
        "bad bind address",
        lambda t, p: [*kc(t), "--bind-address", "300.1.2.3", "--secure-port", "10259"],
        ("300.1.2.3",),
    ),
    (
        "missing TLS files",
        lambda t, p: [*kc(t), *free(), "--tls-cert-file", "/no/cert", "--tls-private-key-file", "/no/key"],
        ("--tls-cert-file", "/no/cert", "No such file"),
    ),
    (
        "TLS cert without key",
        lambda t, p: [*kc(t), "--tls-cert-file", "/no/cert"],
        ("--tls-private-key-file",),
    ),
    (
        "TLS files that are no certificate",
        lambda t, p: [
            *kc(t),
            *free(),
            "--tls-cert-file",
            write(t, "c", "x"),
            "--tls-private-key-file",
            write(t, "k", "x"),
        ],
        ("serving certificate",),
    ),
    (
        "cert dir not writable",
        lambda t, p: [*kc(t), *free(), "--cert-dir", write(t, "file", "x") + "/sub"],
        ("--cert-dir", "/file/sub"),
    ),
    (
        "client CA file missing",
        lambda t, p: [*kc(t), *free(), "--client-ca-file", f"{t}/no-ca"],
        ("--client-ca-file", "no-ca", "No such file"),
    ),
    (
        "client CA file holds no certificate",
        lambda t, p: [*kc(t), *free(), "--client-ca-file", write(t, "ca", "not a pem")],
        ("--client-ca-file", "no usable CA certificate"),
    ),
    (
        "authentication kubeconfig missing",
        lambda t, p: [*kc(t), *free(), "--authentication-kubeconfig", f"{t}/no-authn"],
        ("--authentication-kubeconfig", "no-authn", "no such file"),
    ),
    (
        "authorization kubeconfig malformed",
        lambda t, p: [*kc(t), *free(), "--authorization-kubeconfig", write(t, "bad", "clusters: [[[\n")],
        ("--authorization-kubeconfig", "/bad"),
    ),
    (
        "always-allow path with an inner star",
        lambda t, p: [*kc(t), "--authorization-always-allow-paths", "/healthz,/a*b"],
        ("--authorization-always-allow-paths", "/a*b", "trailing *"),
    ),
    (
        "cache TTL not a duration",
        lambda t, p: [*kc(t), "--authentication-token-webhook-cache-ttl", "soon"],
        ("--authentication-token-webhook-cache-ttl", "soon"),
    ),
    (
        "skip-lookup not a bool",
        lambda t, p: [*kc(t), "--authentication-skip-lookup=perhaps"],
        ("--authentication-skip-lookup", "true or false"),
    ),
    (
        "lookup failure not tolerated",
        lambda t, p: [
            *kc(t),
            *free(),
            "--authentication-kubeconfig",
            write(t, "authn", KUBECONFIG),
            "--authentication-tolerate-lookup-failure=false",
        ],
        ("client CA", "extension-apiserver-authentication", "tolerate-lookup-failure=false"),
    ),
    ("config missing", lambda t, p: ["--config", str(t / "absent.yaml")], ("absent.yaml", "cannot read")),
    ("config deep nesting", lambda t, p: cfg(t, "a: " + "[" * 5000 + "]" * 5000), ("nested deeper",)),
    ("config deep JSON", lambda t, p: cfg(t, '{"a": ' + "[" * 50000 + "]" * 50000 + "}"), ("nested deeper",)),
    ("config alias bomb", lambda t, p: cfg(t, BOMB), ("aliases expand",)),
    ("config too large", lambda t, p: cfg(t, HEADER + "#" * MAX_CONFIG_BYTES), ("larger than",)),
    ("config not UTF-8", lambda t, p: cfg(t, b"\xff\xfe\x00bad"), ("UTF-8",)),
    ("config bad YAML", lambda t, p: cfg(t, "a: [\n  b: {\n"), ("invalid YAML",)),
    (
        "config several errors",
        lambda t, p: cfg(t, HEADER + "parallelism: 0\npodInitialBackoffSeconds: 0\n"),
        ("parallelism", "podInitialBackoffSeconds"),
    ),
    (
        "duration past Go's int64 nanoseconds",
        lambda t, p: cfg(t, HEADER + "leaderElection: {leaseDuration: 99999999999999h}\n"),
        ("leaderElection.leaseDuration", "99999999999999h", "invalid duration"),
    ),
    (
        "plugin enabled at a point it does not implement",
        lambda t, p: [
            *kc(t),
            *cfg(t, HEADER + "profiles: [{plugins: {bind: {enabled: [{name: NodeResourcesFit}]}}}]\n"),
        ],
        ("invalid configuration", "config.yaml", "plugins.bind.enabled[0]", "NodeResourcesFit"),
    ),
    (
        "extender caFile missing",
        lambda t, p: [
            *kc(t),
            *cfg(t, HEADER + f"extenders: [{{urlPrefix: 'https://e', tlsConfig: {{caFile: {t}/no-ca}}}}]\n"),
        ],
        ("invalid configuration", "extenders[0].tlsConfig.caFile", "no-ca", "No such file"),
    ),
    (
        "extender certFile missing",
        lambda t, p: [
            *kc(t),
            *cfg(
                t, HEADER + f"extenders: [{{urlPrefix: 'https://e', tlsConfig: {{certFile: {t}/no-cert}}}}]\n"
            ),
        ],
        ("invalid configuration", "extenders[0].tlsConfig.certFile", "no-cert", "No such file"),
    ),
    (
        "extender caFile not a certificate",
        lambda t, p: [
            *kc(t),
            *cfg(
                t,
                HEADER
                + f"extenders: [{{urlPrefix: 'https://e', tlsConfig: {{caFile: {write(t, 'ca', 'x')}}}}}]\n",
            ),
        ],
        ("invalid configuration", "extenders[0].tlsConfig.caFile", "/ca"),
    ),
    (
        "extender insecure with a CA",
        lambda t, p: [
            *kc(t),
            *cfg(
                t,
                HEADER + "extenders: [{urlPrefix: 'https://e', tlsConfig: {insecure: true, caData: eA==}}]\n",
            ),
        ],
        ("invalid configuration", "extenders[0].tlsConfig", "insecure"),
    ),
    (
        "plugin with a misspelt method",
        lambda t, p: [*kc(t), *cfg(t, HEADER + plugin_profile("Misspelt"))],
        ("invalid configuration", "oot_bad_plugins:Misspelt", "method scroe", "did you mean score?"),
    ),
    (
        "plugin method of the wrong arity",
        lambda t, p: [*kc(t), *cfg(t, HEADER + plugin_profile("WrongArity"))],
        ("oot_bad_plugins:WrongArity", "score(self, state, pod) takes 2", "called with 3"),
    ),
    (
        "plugin factory returning a coroutine filter",
        lambda t, p: [*kc(t), *free(), *cfg(t, HEADER + plugin_profile("async_filter_factory"))],
        ("oot_bad_plugins:async_filter_factory", 'name "AsyncFilter"', "method filter is a coroutine"),
    ),
    ("unknown flag", lambda t, p: ["--no-such-flag"], ("unrecognized arguments", "--no-such-flag")),
    (
        "annotate an unknown profile",
        lambda t, p: [*kc(t), "--annotate-decisions", "nope,default-scheduler"],
        ("--annotate-decisions", "nope"),
    ),
    (
        "annotate without recording",
        lambda t, p: [*kc(t), "--record-decisions=false", "--annotate-decisions", "default-scheduler"],
        ("--record-decisions=true",),
    ),
    ("verbosity not a number", lambda t, p: ["-v", "loud"], ("-v/--v", "not an integer", "loud")),
    (
        "verbosity past int32",
        lambda t, p: ["-v", "99999999999999999999"],
        ("-v/--v", "99999999999999999999", "out of range"),
    ),
    ("record-decisions not a bool", lambda t, p: ["--record-decisions", "maybe"], ("true or false",)),
]


@pytest.mark.parametrize(("argv", "words"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_startup_error_is_one_line_and_exit_1(
    argv: Callable[[Path, int], list[str]],
    words: tuple[str, ...],
    tmp_path: Path,
    busy_port: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    try:
        code = cli.main(argv(tmp_path, busy_port))
    except SystemExit as exit_:  # argparse
        code = exit_.code  # type: ignore[assignment]
    out = capsys.readouterr()
    lines = [line for line in out.err.splitlines() if line.strip()]
    assert code == 1, out.err
    assert len(lines) == 1, out.err
    assert lines[0].startswith("py-scheduler: ")
    for word in words:
        assert word in lines[0], lines[0]
    assert "Traceback" not in out.err + out.out
    assert len(lines[0]) < 5000


def test_an_unforeseen_exception_before_the_loop_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(cli, "SchedulerApp", boom)
    assert cli.main(kc(tmp_path)) == 1
    err = capsys.readouterr().err
    assert err == "py-scheduler: start-up failed: RuntimeError: boom second line\n"


def test_a_misspelt_plugin_method_stops_the_real_process_with_one_line(tmp_path: Path) -> None:
    """issue 28: a plugin with a misspelt method stops start-up with one line naming both."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scheduler",
            *kc(tmp_path),
            *cfg(tmp_path, HEADER + plugin_profile("Misspelt")),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert "oot_bad_plugins:Misspelt" in result.stderr and "method scroe" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_the_real_entry_point_prints_one_line(tmp_path: Path) -> None:
    """The same through ``python -m scheduler``: nothing escapes as a traceback from the process."""
    result = subprocess.run(
        [sys.executable, "-m", "scheduler", "--config", write(tmp_path, "b.yaml", BOMB)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "aliases expand" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_a_gate_value_py_scheduler_cannot_honour_stops_the_real_process_with_one_line() -> None:
    """``--feature-gates=SchedulerAsyncPreemption=false`` through ``python -m scheduler``: exit 1 before
    any config or cluster is read, one line naming the gate and what py-scheduler always does."""
    result = subprocess.run(
        [sys.executable, "-m", "scheduler", "--feature-gates=SchedulerAsyncPreemption=false"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "feature gate SchedulerAsyncPreemption=false is not supported" in result.stderr
    assert "always behaves as SchedulerAsyncPreemption=true" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("cluster", "host"),
    [
        # client-go's DefaultServerURL: https when TLS is configured, else http.
        ('{server: "127.0.0.1:6443", insecure-skip-tls-verify: true}', "https://127.0.0.1:6443"),
        ('{server: "localhost:8080"}', "http://localhost:8080"),
        ('{server: "https://10.0.0.1"}', "https://10.0.0.1"),
    ],
)
def test_a_bare_host_port_server_gets_a_scheme_like_client_go(
    cluster: str, host: str, tmp_path: Path
) -> None:
    from scheduler.client.kubeclient import load_configuration

    text = KUBECONFIG.replace('{server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}', cluster)
    assert load_configuration(write(tmp_path, "k", text)).host == host


def test_version_names_the_build_the_kubernetes_reference_and_python(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import platform

    from scheduler.app.version import KUBERNETES_REFERENCE

    with pytest.raises(SystemExit) as done:
        cli.build_parser().parse_args(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("py-scheduler ")
    assert f"Kubernetes reference {KUBERNETES_REFERENCE}" in out
    assert f"Python {platform.python_version()}" in out


def test_the_kubernetes_reference_is_the_release_the_side_by_side_tests_run() -> None:
    from scheduler.app.version import KUBERNETES_REFERENCE

    assert (
        Path(__file__).parents[3] / "devcluster" / "K8S_VERSION"
    ).read_text().strip() == KUBERNETES_REFERENCE


def test_version_carries_the_commit_given_by_the_image_build(monkeypatch: pytest.MonkeyPatch) -> None:
    from scheduler.app import version

    monkeypatch.setenv(version.COMMIT_ENV, "0123456789abcdef")
    assert version.version_text().endswith("commit 0123456789abcdef")
