"""Command line and KubeSchedulerConfiguration for running the real kube-scheduler next to ours."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

CONFIG_API_VERSION = "kubescheduler.config.k8s.io/v1"
# Health and metrics stay reachable without a controller-manager or delegated authorization.
ALWAYS_ALLOW_PATHS = "/healthz,/readyz,/livez,/metrics"


def kube_scheduler_config(
    kubeconfig: str | Path,
    qps: float | None = None,
    burst: int | None = None,
    profiles: Sequence[Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A KubeSchedulerConfiguration; with --config, kube-scheduler ignores --kubeconfig, so it is set here."""
    connection: dict[str, Any] = {"kubeconfig": str(kubeconfig)}
    if qps is not None:
        connection["qps"] = qps
    if burst is not None:
        connection["burst"] = burst
    config: dict[str, Any] = {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": connection,
        "leaderElection": {"leaderElect": False},
    }
    if profiles is not None:
        config["profiles"] = [dict(p) for p in profiles]
    config.update(extra or {})
    return config


def write_kube_scheduler_config(path: Path, config: Mapping[str, Any]) -> Path:
    path.write_text(json.dumps(dict(config), indent=2) + "\n")  # component config decoders take JSON
    return path


def kube_scheduler_argv(
    binary: Path,
    *,
    kubeconfig: Path,
    secure_port: int,
    cert_dir: Path,
    config_path: Path | None = None,
    extra_args: Sequence[str] = (),
    delegated_auth: bool = False,
    auth_kubeconfig: Path | None = None,
) -> list[str]:
    """``delegated_auth``: kube-scheduler's own defaults (only the health paths always allowed, the
    client CA looked up) with TokenReview and SubjectAccessReview through ``kubeconfig``, as a
    cluster runs it (``auth_kubeconfig`` instead, when given); otherwise health and metrics are open
    and nothing is looked up."""
    argv = [str(binary)]
    # --kubeconfig is ignored when --config is given; the config's clientConnection.kubeconfig wins.
    argv.append(f"--config={config_path}" if config_path is not None else f"--kubeconfig={kubeconfig}")
    argv += [
        "--leader-elect=false",  # honoured even with --config
        "--bind-address=127.0.0.1",
        f"--secure-port={secure_port}",
        f"--cert-dir={cert_dir}",
        "--v=1",
    ]
    if delegated_auth:
        reviews = auth_kubeconfig or kubeconfig
        argv += [f"--authentication-kubeconfig={reviews}", f"--authorization-kubeconfig={reviews}"]
    else:
        # Health and metrics readable without delegated authorization; no client CA lookup.
        argv += [
            "--authentication-skip-lookup=true",
            f"--authorization-always-allow-paths={ALWAYS_ALLOW_PATHS}",
        ]
    argv += list(extra_args)
    return argv
