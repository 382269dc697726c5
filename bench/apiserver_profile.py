"""The API server's own view of a measured run: CPU profiles and /metrics, for ``--apiserver-profile``.

kube-apiserver serves Go's pprof at /debug/pprof/ when started with ``--profiling=true`` (devcluster
turns it off by default). A CPU profile covers a fixed number of seconds asked for up front, and a run's
length is not known then, so the collector takes back-to-back slices until stopped; ``go tool pprof``
merges them (``go tool pprof -top a.pb.gz b.pb.gz``). /metrics is saved whole before and after, so
request counts by verb, resource and content type, watch counts and watch event sizes can be compared
between runs with :func:`request_deltas`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Mapping
from pathlib import Path

from bench.apiclient import BenchClient

# Slices short enough that the last one, cut off when the run ends, loses little.
SLICE_SECONDS = 10
PROFILING_ARGS = ("--profiling=true",)

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")


class ApiserverProfile:
    """Saves /metrics and back-to-back CPU profiles of the API server under ``out`` with ``stem``."""

    def __init__(self, client: BenchClient, out: Path, stem: str) -> None:
        self._client = client
        self._out = out
        self._stem = stem
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.slices: list[Path] = []

    async def save_metrics(self, label: str) -> Path:
        path = self._out / f"{self._stem}.metrics-{label}.txt"
        path.write_text(await self._client.text("/metrics"))
        return path

    async def start(self) -> None:
        self._out.mkdir(parents=True, exist_ok=True)
        await self.save_metrics("before")
        self._task = asyncio.create_task(self._profile())

    async def stop(self) -> None:
        """Scrapes /metrics now, then waits for the slice in progress (cancelled, it would be lost)."""
        await self.save_metrics("after")
        self._stopping = True
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _profile(self) -> None:
        index = 0
        while not self._stopping:
            path = self._out / f"{self._stem}.cpu-{index:02d}.pb.gz"
            url = f"{self._client.server}/debug/pprof/profile?seconds={SLICE_SECONDS}"
            async with self._client.session.get(url) as resp:
                data = await resp.read()
            if resp.status == 200:
                path.write_bytes(data)
                self.slices.append(path)
            index += 1


def parse_metrics(text: str) -> dict[tuple[str, str], float]:
    """(name, labels) -> value for every sample of a Prometheus text exposition."""
    samples: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        if (match := _SAMPLE.match(line)) is not None:
            samples[(match[1], match[2] or "")] = float(match[3])
    return samples


def request_deltas(
    before: Mapping[tuple[str, str], float], after: Mapping[tuple[str, str], float], prefix: str
) -> dict[tuple[str, str], float]:
    """The samples named ``prefix``* that grew between the two scrapes, by how much."""
    return {
        key: value - before.get(key, 0.0)
        for key, value in after.items()
        if key[0].startswith(prefix) and value - before.get(key, 0.0) != 0
    }
