"""A real Prometheus server (built by devcluster/build_prometheus.sh at devcluster/PROMETHEUS_VERSION) on
loopback, scraping the targets it is given every second, for the load-aware (Trimaran) tests and bench.

    binary = ensure_prometheus()               # builds it once when missing (several minutes cold)
    prom = PrometheusServer(binary, run_dir, targets=["127.0.0.1:9100"]).start()
    prom.wait_for_series("instance:node_cpu:ratio", count=3)
    prom.url                                   # http://127.0.0.1:<port>
    prom.stop(); prom.start()                  # down and up again on the same port, same TSDB

Scrapes keep the target's own labels (``honor_labels``), so a series exposed with ``instance="node-a"``
is stored with that instance: the label load-watcher's queries read as the node name.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from devcluster.binaries import cache_root
from devcluster.process import ManagedProcess, tail_file
from devcluster.py_scheduler import free_port, wait_for

HERE = Path(__file__).resolve().parent
VERSION_FILE = HERE / "PROMETHEUS_VERSION"
BUILD_SCRIPT = HERE / "build_prometheus.sh"


def prometheus_version() -> str:
    return VERSION_FILE.read_text().strip()


def prometheus_path() -> Path:
    """Same resolution as build_prometheus.sh: $PY_SCHEDULER_CACHE/prometheus-<version>/prometheus."""
    return cache_root() / f"prometheus-{prometheus_version()}" / "prometheus"


def ensure_prometheus() -> Path:
    """The pinned binary, built first when missing (the build script skips a cached one)."""
    path = prometheus_path()
    if not path.exists():
        subprocess.run(["bash", str(BUILD_SCRIPT)], check=True)
    return path


def scrape_config(targets: Sequence[str], interval: str = "1s") -> dict[str, Any]:
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [
            {
                "job_name": "nodes",
                "honor_labels": True,
                "scrape_interval": interval,
                "scrape_timeout": interval,
                "static_configs": [{"targets": list(targets)}],
            }
        ],
    }


class PrometheusServer:
    def __init__(self, binary: Path, run_dir: Path, targets: Sequence[str], interval: str = "1s") -> None:
        self.binary = binary
        self.run_dir = run_dir
        self.port = free_port()
        self.config_path = run_dir / "prometheus.yml"
        self.data_dir = run_dir / "data"
        self.log_path = run_dir / "prometheus.log"
        run_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(yaml.safe_dump(scrape_config(targets, interval)))
        self._proc: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        """Start (or start again on the same port and TSDB) and wait until it is ready."""
        self._proc = ManagedProcess(
            "prometheus",
            [
                str(self.binary),
                f"--config.file={self.config_path}",
                f"--storage.tsdb.path={self.data_dir}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            self.log_path,
        )
        self._proc.start()

        def ready() -> bool:
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"prometheus exited:\n{tail_file(self.log_path)}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                    return bool(response.status == 200)
            except OSError:
                return False

        wait_for(ready, timeout, "prometheus /-/ready", interval=0.2)
        return self

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop(grace=5.0)
            self._proc = None

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's vector result (raises on an error answer)."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.loads(response.read())
        if body.get("status") != "success":
            raise RuntimeError(f"prometheus query {promql!r} failed: {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def wait_for_series(self, metric: str, count: int, timeout: float = 60.0) -> None:
        """Until ``count`` series of ``metric`` have samples (the first scrapes landed in the TSDB)."""
        wait_for(
            lambda: len(self.query(metric)) >= count, timeout, f"{count} series of {metric}", interval=0.5
        )
