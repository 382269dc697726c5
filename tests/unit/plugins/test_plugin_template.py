"""examples/plugin-template is a package a user copies: installed into a fresh venv with pip, its own
tests pass with the plugin test kit, its entry point included.

py-scheduler and its dependencies come from this tree's environment (the venv's base layer, added
after the install), never from an index, and the template is installed with ``--no-deps``. Its build
backend (setuptools>=77) is the one thing pip's build isolation may fetch: this environment's
setuptools predates a built-in bdist_wheel and there is no ``wheel`` package to build offline."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
TEMPLATE = REPO / "examples" / "plugin-template"


def run(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def fresh_venv(root: Path) -> Path:
    venv.EnvBuilder(with_pip=True).create(root)
    return root / "bin" / "python"


def layer_this_environment(python: Path) -> None:
    """Make py-scheduler (installed from this tree, editable) and its dependencies importable in the
    venv without an index: this environment's site-packages as its base layer, plus the project's
    editable finder (not the other .pth files there: setuptools' distutils hack among them)."""
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=python.parent)
    ours = sysconfig.get_paths()["purelib"]
    editable = f"glob.glob({ours!r} + '/__editable__*.pth')"
    line = (
        f"import sys, glob; sys.path.append({ours!r}); "
        f"[exec(x) for f in {editable} for x in open(f) if x.startswith('import')]"
    )
    Path(site.stdout.strip(), "zz_py_scheduler_base.pth").write_text(line + "\n")


def test_the_template_installs_and_its_tests_pass_with_the_kit(tmp_path: Path) -> None:
    python = fresh_venv(tmp_path / "venv")
    copy = tmp_path / "my-plugin"
    shutil.copytree(TEMPLATE, copy, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    install = run(python, "-m", "pip", "install", "--no-deps", copy, cwd=tmp_path)
    assert install.returncode == 0, install.stdout + install.stderr
    layer_this_environment(python)
    listed = run(
        python,
        "-c",
        "from importlib.metadata import entry_points as e; "
        "print([p.value for p in e(group='py_scheduler.plugins')])",
        cwd=tmp_path,
    )
    assert "my_scheduler_plugin:TeamNodes" in listed.stdout, listed.stderr
    # The tests run against the installed package, not the copy's src/ (not on the path).
    tests = run(python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests", cwd=copy)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "5 passed" in tests.stdout, tests.stdout  # the entry-point test ran too, not skipped
