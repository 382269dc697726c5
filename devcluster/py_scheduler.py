"""Runs py-scheduler as a real process against a devcluster control plane (tests, demo, bench)."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll ``condition`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last value: {last!r})")


def scheduler_config(
    *,
    scheduler_name: str = "py-scheduler",
    leader_elect: bool = False,
    lease_name: str = "py-scheduler",
    extra: Mapping[str, Any] | None = None,
    profile_extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": leader_elect,
            "resourceName": lease_name,
            "resourceNamespace": "kube-system",
        },
        "clientConnection": {"qps": 500, "burst": 1000},
        "profiles": [{"schedulerName": scheduler_name, **(profile_extra or {})}],
    }
    config.update(extra or {})
    return config


class SchedulerProcess:
    def __init__(
        self,
        kubeconfig: str | Path,
        workdir: Path,
        config: Mapping[str, Any] | None = None,
        *,
        name: str = "py-scheduler",
        extra_args: list[str] | None = None,
        env: Mapping[str, str] | None = None,
        secure: bool = False,
    ) -> None:
        """``secure``: HTTPS with delegated authentication and authorization through ``kubeconfig``, as
        deployed; otherwise the explicit insecure mode (plain HTTP on --port, no authentication), which
        tests of scheduling itself use to read /metrics and /debug/pods without credentials."""
        self.kubeconfig = str(kubeconfig)
        self.workdir = workdir
        self.name = name
        self.config_path = workdir / f"{name}-config.yaml"
        self.config_path.write_text(yaml.safe_dump(dict(config or scheduler_config())))
        self.log_path = workdir / f"{name}.log"
        self.port = free_port()
        self.extra_args = extra_args or []
        self.env = env
        self.secure = secure
        self.proc: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str]:
        return [
            sys.executable, "-m", "scheduler",
            "--config", str(self.config_path),
            "--kubeconfig", self.kubeconfig,
            "--bind-address", "127.0.0.1",
            *self.serving_args(),
            "-v", "4",
            *self.extra_args,
        ]  # fmt: skip

    def serving_args(self) -> list[str]:
        if not self.secure:
            return ["--secure-port", "0", "--port", str(self.port)]
        return [
            "--secure-port", str(self.port),
            "--authentication-kubeconfig", self.kubeconfig,
            "--authorization-kubeconfig", self.kubeconfig,
        ]  # fmt: skip

    def start(self) -> SchedulerProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO)
        env.update(self.env or {})
        self.log_file = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.argv(), stdout=self.log_file, stderr=subprocess.STDOUT, cwd=REPO, env=env,
            start_new_session=True,
        )  # fmt: skip
        return self

    def url(self, path: str) -> str:
        return f"{'https' if self.secure else 'http'}://127.0.0.1:{self.port}{path}"

    def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        """(status, body); status 0 when unreachable. ``token``: sent as a bearer token."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        context = None
        if self.secure:
            # The serving certificate is self-signed; what is tested here is who gets an answer.
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        try:
            request = urllib.request.Request(self.url(path), headers=headers)
            with urllib.request.urlopen(request, timeout=15, context=context) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
        except OSError:
            return 0, ""

    def wait_ready(self, timeout: float = 30.0) -> None:
        def ready() -> bool:
            self.assert_running()
            return self.get("/readyz")[0] == 200

        wait_for(ready, timeout, f"{self.name} /readyz (log: {self.log_path})")

    def assert_running(self) -> None:
        assert self.proc is not None
        code = self.proc.poll()
        if code is not None:
            raise AssertionError(f"{self.name} exited with {code}; log {self.log_path}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 20.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log_file.close()
        return self.proc.returncode
