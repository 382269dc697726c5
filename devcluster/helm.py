"""The pinned helm CLI (built by devcluster/build_helm.sh) and rendering the chart with it."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from devcluster.binaries import cache_root

REPO = Path(__file__).resolve().parents[1]
VERSION_FILE = Path(__file__).resolve().parent / "HELM_VERSION"
CHART = REPO / "deploy" / "helm" / "py-scheduler"
BUILD_HINT = "run `make helm` (or `bash devcluster/build_helm.sh`) to build it"


class HelmMissingError(RuntimeError):
    """The pinned helm binary is not in the cache."""


class HelmError(RuntimeError):
    """helm exited non-zero; the message is its stderr."""


def helm_version() -> str:
    return VERSION_FILE.read_text().strip()


def helm_path() -> Path:
    """Same resolution as build_helm.sh: $PY_SCHEDULER_CACHE/helm-<version>/helm."""
    return cache_root() / f"helm-{helm_version()}" / "helm"


def require_helm() -> Path:
    path = helm_path()
    if not os.access(path, os.X_OK):
        raise HelmMissingError(f"helm {helm_version()} missing at {path}; {BUILD_HINT}")
    return path


def helm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # Rendering and linting a local chart need no repositories or plugins: keep helm's state out of ~.
    env = dict(os.environ)
    for kind in ("CACHE", "CONFIG", "DATA"):
        env.setdefault(f"HELM_{kind}_HOME", f"/tmp/py-scheduler-helm/{kind.lower()}")
    return subprocess.run(
        [str(require_helm()), *args], capture_output=True, text=True, timeout=timeout, check=False, env=env
    )


def template_text(
    release: str = "py-scheduler",
    namespace: str = "py-scheduler",
    *,
    values_files: Sequence[Path] = (),
    set_values: Mapping[str, str] | None = None,
    set_json: Mapping[str, Any] | None = None,
    chart: Path = CHART,
) -> str:
    """`helm template` output; raises HelmError (with helm's message) when rendering fails."""
    args = ["template", release, str(chart), "--namespace", namespace]
    for path in values_files:
        args += ["--values", str(path)]
    for key, value in (set_values or {}).items():
        args += ["--set", f"{key}={value}"]
    for key, value in (set_json or {}).items():
        args += ["--set-json", f"{key}={json.dumps(value)}"]
    result = helm(*args)
    if result.returncode != 0:
        raise HelmError(result.stderr.strip())
    return result.stdout


def template(
    release: str = "py-scheduler",
    namespace: str = "py-scheduler",
    *,
    values_files: Sequence[Path] = (),
    set_values: Mapping[str, str] | None = None,
    set_json: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """`helm template` parsed into objects."""
    text = template_text(
        release, namespace, values_files=values_files, set_values=set_values, set_json=set_json
    )
    return [doc for doc in yaml.safe_load_all(text) if doc]
