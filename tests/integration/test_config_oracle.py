"""The table of tests/unit/config/test_config_upstream_parity.py, checked against the real kube-scheduler.

A config kube-scheduler refuses makes it exit 1 within a fraction of a second, without any cluster;
one it accepts keeps it running (trying to reach the unreachable API server of a dummy kubeconfig).
Needs only the kube-scheduler binary, not the control plane.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

import pytest

from devcluster.binaries import binaries_dir
from tests.unit.config.test_config_upstream_parity import CASES, HEADER

# A refusal comes within a second even on a loaded machine; a process still running after this long
# has accepted its config.
VERDICT_WINDOW = 10.0

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def with_kubeconfig(body: str, kubeconfig: Path) -> str:
    # --kubeconfig is ignored when --config is given: the file must say it.
    if "clientConnection: {" in body:
        return body.replace("clientConnection: {", f"clientConnection: {{kubeconfig: {kubeconfig}, ")
    return body + f"clientConnection: {{kubeconfig: {kubeconfig}}}\n"


def test_kube_scheduler_agrees_with_the_table(tmp_path: Path) -> None:
    binary = binaries_dir() / "kube-scheduler"
    if not binary.exists():
        pytest.skip(f"{binary} not built")
    kubeconfig = tmp_path / "dummy.kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    procs: dict[str, subprocess.Popen[str]] = {}
    try:
        for i, (name, (body, _, prompt)) in enumerate(CASES.items()):
            if not prompt:
                continue
            path = tmp_path / f"case{i}.yaml"
            text = with_kubeconfig(body, kubeconfig) if "Parallelism" not in body else body
            path.write_text(HEADER + text)
            procs[name] = subprocess.Popen(
                [str(binary), "--config", str(path), "--secure-port", "0"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        deadline = time.monotonic() + VERDICT_WINDOW
        for proc in procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.0, deadline - time.monotonic()))
        verdicts = {name: proc.poll() is None for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    disagreements = {name: CASES[name][1] for name, ok in verdicts.items() if ok is not CASES[name][1]}
    assert not disagreements, f"table says accept={disagreements}, kube-scheduler says the opposite"
