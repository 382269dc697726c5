"""What ``py-scheduler --version`` prints: this build, the Kubernetes release whose kube-scheduler it
follows, the Python running it, and the commit where it is known."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

# The kube-scheduler release py-scheduler follows (placements, plugins, config, metrics). The tests
# hold it equal to devcluster/K8S_VERSION, the release the side-by-side tests run.
KUBERNETES_REFERENCE = "v1.37.2"
# Set by an image build (--build-arg COMMIT=...) where no git checkout is at hand.
COMMIT_ENV = "PY_SCHEDULER_COMMIT"


def package_version() -> str:
    try:
        return metadata.version("py-scheduler")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def commit() -> str:
    """The commit from the environment, else from the git checkout holding this source, else ""."""
    if os.environ.get(COMMIT_ENV):
        return os.environ[COMMIT_ENV][:40]
    source = Path(__file__).resolve().parents[2]
    if not (source / ".git").exists():
        return ""
    try:
        done = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def version_text() -> str:
    parts = [
        f"py-scheduler {package_version()}",
        f"Kubernetes reference {KUBERNETES_REFERENCE}",
        f"Python {platform.python_version()}",
    ]
    sha = commit()
    if sha:
        parts.append(f"commit {sha}")
    return ", ".join(parts)
