"""Where the pinned control-plane binaries live, and a clear error when they are not built yet."""

from __future__ import annotations

import os
from pathlib import Path

VERSION_FILE = Path(__file__).resolve().parent / "K8S_VERSION"
# The older releases of the support window whose kube-apiserver the compatibility tests run against.
COMPAT_FILE = Path(__file__).resolve().parent / "COMPAT_VERSIONS"
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd")
BUILD_HINT = (
    "run `make control-plane` (or `bash devcluster/build.sh`; an older release: "
    "`bash devcluster/build.sh <version>` or `make test-compat`) to build them"
)


class BinariesMissingError(RuntimeError):
    """The control-plane binaries for the pinned release are not in the cache."""


def k8s_version() -> str:
    """The pinned Kubernetes release, e.g. ``v1.36.3``."""
    return VERSION_FILE.read_text().strip()


def compat_versions() -> list[str]:
    """The older releases of the support window, e.g. ``["v1.35.4", "v1.36.3"]``."""
    return [line.strip() for line in COMPAT_FILE.read_text().splitlines() if line.strip()]


def minor_of(version: str) -> int:
    """35 for ``v1.35.4``."""
    return int(version.lstrip("v").split(".")[1])


def cache_root() -> Path:
    """Same resolution as build.sh, so the two always agree."""
    configured = os.environ.get("PY_SCHEDULER_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "py-scheduler"


def binaries_dir(version: str | None = None) -> Path:
    return cache_root() / f"k8s-{version or k8s_version()}"


def require_binaries(directory: Path | None = None, names: tuple[str, ...] = BINARIES) -> Path:
    """Return the binaries directory, or raise naming what is missing and how to build it."""
    directory = directory or binaries_dir()
    missing = [name for name in names if not os.access(directory / name, os.X_OK)]
    if missing:
        raise BinariesMissingError(
            f"control-plane binaries missing from {directory}: {', '.join(missing)}; {BUILD_HINT}"
        )
    return directory
