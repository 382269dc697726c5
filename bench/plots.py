"""Pictures for the report: per workload, each contestant's bind rate over time and its latency
distribution, as PNG files beside the markdown.

matplotlib is an optional bench dependency (``pip install -e '.[bench]'``): without it ``draw`` draws
nothing and says why, and the report still renders, saying the pictures were skipped.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.analysis import RunResult

# Bind rate: bound-pod counts differenced over this many seconds (the timeline's step is 0.5 s).
RATE_WINDOW_S = 1.0


@dataclass
class Pictures:
    """workload -> the PNG file names drawn for it (relative to the markdown); ``skipped`` says why none."""

    files: dict[str, list[str]] = field(default_factory=dict)
    skipped: str = ""


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def bind_rate(
    timeline: Sequence[Sequence[float]], window: float = RATE_WINDOW_S
) -> list[tuple[float, float]]:
    """(seconds since the first create, pods bound per second over the preceding ``window``) per point
    of a (t, created, bound) timeline."""
    points = [(float(t), float(bound)) for t, _created, bound in timeline]
    out: list[tuple[float, float]] = []
    start = 0
    for t, bound in points:
        while points[start][0] < t - window - 1e-9:
            start += 1
        t0, b0 = points[start]
        if t > t0:
            out.append((t, (bound - b0) / (t - t0)))
    return out


def _by_workload(results: Sequence[RunResult]) -> dict[str, list[RunResult]]:
    """The median run (by throughput) of each contestant, per workload, in the order they ran."""
    grouped: dict[str, dict[str, list[RunResult]]] = {}
    for r in results:
        grouped.setdefault(r.workload, {}).setdefault(r.scheduler, []).append(r)
    return {name: [_median_run(runs) for runs in by.values()] for name, by in grouped.items()}


def _median_run(runs: Sequence[RunResult]) -> RunResult:
    """As report.median_run: the run with the median throughput, the lower middle for an even count."""
    ordered = sorted(runs, key=lambda r: r.throughput)
    return ordered[(len(ordered) - 1) // 2]


def draw(results: Sequence[RunResult], out_dir: Path, stem: str) -> Pictures:
    """Two PNGs per workload into ``out_dir``: ``<stem>-<workload>-rate.png`` and ``-latency.png``."""
    if not available():
        return Pictures(skipped="matplotlib is not installed (`pip install -e '.[bench]'` draws them)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pictures = Pictures()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, runs in _by_workload(results).items():
        files: list[str] = []
        rate_file = f"{stem}-{name}-rate.png"
        fig, ax = plt.subplots(figsize=(8, 4))
        for r in runs:
            rate = bind_rate(r.timeline)
            if rate:
                label = f"{r.scheduler} ({r.throughput:.0f}/s)"
                ax.plot([t for t, _ in rate], [v for _, v in rate], label=label)
        _finish(ax, f"{name}: bind rate ({RATE_WINDOW_S:.0f} s window)", "seconds since the first create",
                "pods bound per second")  # fmt: skip
        fig.tight_layout()
        fig.savefig(out_dir / rate_file, dpi=90)
        plt.close(fig)
        files.append(rate_file)
        with_cdf = [r for r in runs if r.latency_cdf_ms]
        if with_cdf:
            latency_file = f"{stem}-{name}-latency.png"
            fig, ax = plt.subplots(figsize=(8, 4))
            for r in with_cdf:
                ax.plot([v / 1000 for v in r.latency_cdf_ms], range(len(r.latency_cdf_ms)),
                        label=f"{r.scheduler} (p99 {r.p99_ms / 1000:.1f} s)")  # fmt: skip
            _finish(ax, f"{name}: latency distribution (create → bind seen)", "seconds",
                    "percent of pods bound within")  # fmt: skip
            fig.tight_layout()
            fig.savefig(out_dir / latency_file, dpi=90)
            plt.close(fig)
            files.append(latency_file)
        pictures.files[name] = files
    return pictures


def _finish(ax: Any, title: str, xlabel: str, ylabel: str) -> None:
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend()


def links(pictures: Pictures, workload: str) -> list[str]:
    """The markdown lines linking ``workload``'s pictures, or saying they were skipped."""
    if pictures.skipped:
        return [f"Pictures skipped: {pictures.skipped}."]
    files = pictures.files.get(workload) or []
    return [f"![{workload}: {Path(f).stem.rsplit('-', 1)[-1]}]({f})" for f in files]


def as_json(pictures: Pictures) -> Mapping[str, Any]:
    return {"files": pictures.files, "skipped": pictures.skipped}
