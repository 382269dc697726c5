"""The user documentation holds together: README.md stays a short guide, every relative link in it,
docs/*.md and bench/README.md reaches an existing file (and heading, for ``#anchor`` links), and every
repository path the docs name in backticks exists.

Paths go stale when modules move; this is where that shows.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DOCS = sorted([README, ROOT / "bench" / "README.md", *(ROOT / "docs").glob("*.md")])
README_MAX_BYTES = 20 * 1024

# Top-level directories whose paths the docs name in backticks, e.g. `scheduler/framework/objects.py`.
REPO_DIRS = ("scheduler", "scheduling_queue", "informers", "deploy", "devcluster", "bench", "tests")
BACKTICKED_PATH = re.compile(r"`((?:" + "|".join(REPO_DIRS) + r")/[^`\s]*)`")
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
# [text](target) or [text](target "title"); images too. The text may hold inline code.
LINK = re.compile(r"!?\[(?:[^\]\n]|\][^(\n])*?\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def without_code_blocks(text: str) -> str:
    return FENCE.sub("", text)


def links(path: Path) -> list[str]:
    """The link targets of a markdown file, outside code blocks and inline code."""
    text = INLINE_CODE.sub("", without_code_blocks(path.read_text()))
    return LINK.findall(text)


def github_slug(heading: str, seen: dict[str, int]) -> str:
    """The anchor GitHub gives a heading: inline markup dropped, lower case, punctuation removed,
    spaces to hyphens, ``-1``, ``-2`` ... for repeats."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").replace("*", "").lower()
    slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
    count = seen.get(slug, 0)
    seen[slug] = count + 1
    return slug if count == 0 else f"{slug}-{count}"


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    return {github_slug(m[2], seen) for m in HEADING.finditer(without_code_blocks(path.read_text()))}


def test_slugs_follow_github() -> None:
    seen: dict[str, int] = {}
    why = "Why `scheduling_queue/` and not `queue/`"
    assert github_slug(why, seen) == "why-scheduling_queue-and-not-queue"
    assert (
        github_slug("Upstream's gang API (alpha: scheduling.k8s.io/v1alpha2)", seen)
        == "upstreams-gang-api-alpha-schedulingk8siov1alpha2"
    )
    assert github_slug("huge: 15,000 nodes, 30,000 pods", seen) == "huge-15000-nodes-30000-pods"
    assert github_slug("Metrics", seen) == "metrics"
    assert github_slug("Metrics", seen) == "metrics-1"


def test_link_pattern() -> None:
    text = "see [a `b`](x.md#y), ![img](p.png) and [c](https://e.org) but not `[d](z.md)`"
    assert LINK.findall(INLINE_CODE.sub("", text)) == ["x.md#y", "p.png", "https://e.org"]


def test_readme_is_a_short_guide() -> None:
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move detail into docs/"


def test_docs_pages_exist() -> None:
    names = {p.name for p in (ROOT / "docs").glob("*.md")}
    for page in (
        "architecture.md",
        "configuration.md",
        "plugins.md",
        "gang-scheduling.md",
        "dra.md",
        "explain.md",
        "metrics.md",
        "operations.md",
        "parity.md",
    ):
        assert page in names


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_relative_links_resolve(doc: Path) -> None:
    broken: list[str] = []
    for target in links(doc):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
            continue
        if not dest.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {rel(dest)}")
    assert broken == [], f"{rel(doc)}: {broken}"


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_named_repository_paths_exist(doc: Path) -> None:
    """`scheduler/...`, `tests/...` and the like, as the docs name them (globs allowed)."""
    missing = []
    for name in BACKTICKED_PATH.findall(doc.read_text()):
        path = name.rstrip(".,:;")
        is_glob = any(ch in path for ch in "*?[")
        if not (any(ROOT.glob(path)) if is_glob else (ROOT / path).exists()):
            missing.append(path)
    assert missing == [], f"{rel(doc)} names paths that do not exist: {missing}"


def test_architecture_names_paths() -> None:
    """The check above covers docs/architecture.md, which must name some paths for it to mean much."""
    assert len(BACKTICKED_PATH.findall(ARCHITECTURE.read_text())) >= 5


LAYOUT_ENTRY = re.compile(r"^( {0,6})([\w.\-]+/|[\w\-]+\.py)(?=\s|$)")
LAYOUT_FILES_IN_TEXT = re.compile(r"\b([a-z_]+\.py)\b")


def layout_paths(text: str) -> list[str]:
    """The paths the layout block of architecture.md names: each top entry (no indent), each entry
    indented under it, and every ``name.py`` in an entry's description (a file of that entry's folder)."""
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    paths: list[str] = []
    parents: dict[int, str] = {}
    folder = ""
    for line in block.splitlines()[1:]:
        match = LAYOUT_ENTRY.match(line)
        if match:
            indent, name = len(match[1]), match[2]
            parent = "" if indent == 0 else parents.get(indent - 2, "")
            path = parent + name
            paths.append(path)
            parents = {k: v for k, v in parents.items() if k < indent}
            parents[indent] = path if name.endswith("/") else parent
            folder = path if name.endswith("/") else parent
            description = line[match.end() :]
        else:
            description = line
        paths.extend(folder + f for f in LAYOUT_FILES_IN_TEXT.findall(description))
    return paths


def test_architecture_layout_names_only_what_exists() -> None:
    paths = layout_paths(ARCHITECTURE.read_text())
    assert len(paths) > 40, paths  # the parser still reads the block
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md's layout names paths that do not exist: {missing}"


def test_architecture_layout_lists_every_scheduler_package() -> None:
    named = set(layout_paths(ARCHITECTURE.read_text()))
    packages = {
        f"scheduler/{p.name}/" for p in (ROOT / "scheduler").iterdir() if (p / "__init__.py").exists()
    }
    assert packages <= named, f"packages missing from the layout: {sorted(packages - named)}"


def test_layout_parser_catches_a_stale_path() -> None:
    text = "## Layout\n```\nscheduler/\n  cycle/      gone.py (moved)\n```\n"
    assert layout_paths(text) == ["scheduler/", "scheduler/cycle/", "scheduler/cycle/gone.py"]
