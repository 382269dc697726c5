"""tests/unit mirrors the source tree: each test file sits in the folder of what it tests, none loose."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
UNIT = ROOT / "tests" / "unit"

# Each folder of tests/unit and the source it holds the tests of (any one of them must exist).
MIRRORS: dict[str, tuple[str, ...]] = {
    "app": ("scheduler/app",),
    "cache": ("scheduler/cache",),
    "client": ("scheduler/client",),
    "config": ("scheduler/config",),
    "controllers": ("scheduler/controllers",),
    "cycle": ("scheduler/cycle",),
    "explain": ("scheduler/explain",),
    "extender": ("scheduler/extender",),
    "framework": ("scheduler/framework",),
    "metrics": ("scheduler/metrics.py",),
    "plugins": ("scheduler/plugins", "examples"),
    "preemption": ("scheduler/preemption",),
    "serving": ("scheduler/serving",),
    "util": ("scheduler/util",),
    "testing": ("scheduler/testing",),
    "scheduling_queue": ("scheduling_queue",),
    "informers": ("informers",),
    # Not Python: the manifests, the Helm chart, the Dockerfile and the Grafana dashboard.
    "deploy": ("deploy", "Dockerfile"),
    # The project as a whole: the docs and their links, the bench, this layout.
    "project": ("docs", "bench"),
}

# Shared by the tests of several folders; not tests themselves.
LOOSE_HELPERS = {"conftest.py", "fakes.py"}


def test_no_test_file_sits_loose_in_tests_unit() -> None:
    loose = sorted(p.name for p in UNIT.glob("*.py") if p.name not in LOOSE_HELPERS)
    assert loose == [], (
        f"move {loose} into the folder of what they test, one of tests/unit/{{{','.join(sorted(MIRRORS))}}}/"
    )


def test_test_files_live_only_in_the_mirror_folders() -> None:
    folders = {p.relative_to(UNIT).parts[0] for p in UNIT.rglob("test_*.py") if p.parent != UNIT}
    assert folders <= set(MIRRORS), f"unknown test folders {sorted(folders - set(MIRRORS))}: add to MIRRORS"


def test_every_mirror_folder_names_source_that_exists() -> None:
    missing = {name: paths for name, paths in MIRRORS.items() if not any((ROOT / p).exists() for p in paths)}
    assert missing == {}


def test_test_module_names_are_unique_across_tests() -> None:
    """The test folders are not packages (no ``__init__.py``): pytest imports each test file by its
    basename, so two files of one name in different folders would fail collection."""
    names = Counter(p.name for p in (ROOT / "tests").rglob("test_*.py"))
    assert [name for name, n in names.items() if n > 1] == []
