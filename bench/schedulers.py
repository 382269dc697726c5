"""The three contestants, each started the way its users start it, on a given control plane.

* kube-scheduler: devcluster's build, ``--config`` with clientConnection qps/burst raised (as
  scheduler_perf does), default profile and plugins.
* scheduler-plugins: the sigs.k8s.io/scheduler-plugins scheduler (``cmd/scheduler``, built once into the
  cache by devcluster/build_scheduler_plugins.sh), started as kube-scheduler is, with a given profile
  (Coscheduling, CapacityScheduling): the peer of the gang and quota benchmarks.
* py-scheduler: ``python -m scheduler --config CFG --kubeconfig KC --secure-port 0 --port P
  --leader-elect false``, the same qps/burst, default profile and plugins. Optionally under a profiler.
* ceiling: ``bench.trivial_binder`` (round-robin, no filtering): one Binding per pod.
* honest limit: ``bench.trivial_binder --honest``: the Binding and the Scheduled Event per pod through
  py-scheduler's own client, with the same qps/burst.
"""

from __future__ import annotations

import compileall
import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import yaml

from bench import processes, scrape
from devcluster import peers
from devcluster.cluster import ControlPlane
from devcluster.probe import free_port, http_get, unverified_tls
from devcluster.process import ManagedProcess

REPO = Path(__file__).resolve().parents[1]
KUBE = "kube-scheduler"
SCHED_PLUGINS = "scheduler-plugins"
# The scheduler-plugins scheduler with NominatedNodeNameForExpectation on (PEER_V137_NOMINATION_GATE):
# the same API writes per Permit waiter as kube-scheduler v1.37.2 and py-scheduler, so the like-for-like
# peer on the gang workload; SCHED_PLUGINS is the peer as shipped (v1.34's default, the gate off).
SCHED_PLUGINS_NOMINATING = "scheduler-plugins (nominating)"
PY = "py-scheduler"
CEILING = "ceiling"
HONEST = "honest-limit"
# The two limits a scheduler's throughput is a fraction of.
LIMITS = (CEILING, HONEST)
# The schedulers py-scheduler is compared with: kube-scheduler, or scheduler-plugins' where a workload
# needs its plugins (workloads.Workload.peer).
PEERS = (KUBE, SCHED_PLUGINS_NOMINATING, SCHED_PLUGINS)
KUBE_SCHEDULER_NAME = "default-scheduler"
SCHED_PLUGINS_SCHEDULER_NAME = "scheduler-plugins-scheduler"
PY_SCHEDULER_NAME = "py-scheduler"
CEILING_SCHEDULER_NAME = "bench-binder"
HONEST_SCHEDULER_NAME = "bench-honest-binder"

# scheduler_perf raises the client limits to these; both schedulers get the same.
CLIENT_QPS = 5000
CLIENT_BURST = 5000

PROFILERS = ("pyinstrument", "py-spy")


class Contestant(Protocol):
    label: str
    scheduler_name: str
    log_path: Path

    def start(self) -> None: ...

    @property
    def pid(self) -> int: ...

    def plugins(self) -> dict[str, Any]: ...

    def stop(self) -> None: ...


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _wait(condition: Any, timeout: float, what: str, alive: Any, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError(f"{what}: the process exited; log {log}:\n{_tail(log)}")
        if condition():
            return
        time.sleep(0.1)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


@functools.cache
def compile_sources() -> None:
    """Byte-compile py-scheduler's packages once, as its image does (Dockerfile: compileall), so a timed
    start is not also compiling every module (the environment may set PYTHONDONTWRITEBYTECODE)."""
    for package in ("scheduler", "informers", "scheduling_queue"):
        compileall.compile_dir(REPO / package, quiet=1)


def peer_of(schedulers: Iterable[str]) -> str:
    """The scheduler py-scheduler is compared with among ``schedulers`` (a workload's contestants):
    scheduler-plugins' with the nomination gate on where it ran (like for like), else scheduler-plugins'
    as shipped, else kube-scheduler."""
    ran = set(schedulers)
    return next((peer for peer in PEERS[1:] if peer in ran), KUBE)


def second_peer(schedulers: Iterable[str]) -> str | None:
    """The peer as shipped where it ran beside the like-for-like one (peer_of): reported with its own
    ratios and verdict, never in place of the first."""
    ran = set(schedulers)
    return SCHED_PLUGINS if SCHED_PLUGINS in ran and peer_of(ran) != SCHED_PLUGINS else None


def scheduler_plugins_binary() -> Path:
    return peers.scheduler_plugins().scheduler


def ensure_scheduler_plugins() -> Path:
    """The scheduler-plugins binary, built once (cached outside the repo) if missing."""
    return peers.ensure_scheduler_plugins().scheduler


class KubeScheduler:
    label = KUBE
    scheduler_name = KUBE_SCHEDULER_NAME
    _binary: Path | None = None  # devcluster's kube-scheduler
    # More flags for the process (quota_bench --keep-logs: --v=2 for the victims of each preemption).
    extra_args: Sequence[str] = ()

    def __init__(self, cp: ControlPlane, extenders: list[dict[str, Any]] | None = None) -> None:
        self._cp = cp
        self._config = cp.write_kube_scheduler_config(
            qps=CLIENT_QPS, burst=CLIENT_BURST, extra={"extenders": extenders} if extenders else None
        )
        self._handle: ManagedProcess | None = None
        self.log_path = cp.log_dir / "kube-scheduler-1.log"

    def start(self) -> None:
        """Returns once /readyz answers 200: informers synced and their handlers too (upstream's
        ``sched-handler-sync`` check), as py-scheduler's start waits for its own /readyz."""
        self._handle = self._cp.start_kube_scheduler(
            extra_args=self.extra_args, config_path=self._config, binary=self._binary
        )
        self.log_path = self._handle.log_path
        handle = self._handle
        port = next(a.split("=", 1)[1] for a in handle.argv if a.startswith("--secure-port="))
        tls = unverified_tls()
        url = f"https://127.0.0.1:{port}/readyz"
        _wait(lambda: http_get(url, context=tls)[0] == 200, 300.0, url, handle.running, self.log_path)

    @property
    def pid(self) -> int:
        assert self._handle is not None
        return self._handle.pid

    def plugins(self) -> dict[str, Any]:
        """The defaulted configuration's multiPoint plugins, as kube-scheduler itself writes it out."""
        out = self._cp.run_dir / "kube-scheduler-defaulted.yaml"
        binary = self._binary or self._cp.binaries_dir / "kube-scheduler"
        subprocess.run(
            [str(binary), f"--config={self._config}", f"--write-config-to={out}"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        if not out.exists():
            return {"error": "kube-scheduler --write-config-to wrote nothing"}
        config = yaml.safe_load(out.read_text())
        profile = config["profiles"][0]
        enabled = ((profile.get("plugins") or {}).get("multiPoint") or {}).get("enabled") or []
        return {
            "multiPoint": [
                f"{p['name']}" + (f" (weight {p['weight']})" if p.get("weight") else "") for p in enabled
            ],
            "percentageOfNodesToScore": config.get("percentageOfNodesToScore"),
            "parallelism": config.get("parallelism"),
        }

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.stop(grace=10.0)


# The gate that makes the scheduler-plugins scheduler (kube-scheduler v1.34's framework) publish a
# Permit waiter's node as v1.37.2 does by default (pkg/scheduler/schedule_one.go bindingCycle, identical
# in both versions once on).
PEER_V137_NOMINATION_GATE = "--feature-gates=NominatedNodeNameForExpectation=true"


class SchedulerPluginsScheduler(KubeScheduler):
    """The scheduler-plugins scheduler with one profile (its plugins and pluginConfig), started as
    devcluster starts kube-scheduler and the bench's client qps/burst; built first if missing."""

    scheduler_name = SCHED_PLUGINS_SCHEDULER_NAME

    def __init__(self, cp: ControlPlane, profile: dict[str, Any], *, v137_nomination: bool = False) -> None:
        """``v137_nomination``: NominatedNodeNameForExpectation on, as kube-scheduler v1.37.2 and
        py-scheduler have it by default (the peer's v1.34 framework has it as alpha, off, with the same
        code path): each pod waiting at Permit writes its ``nominatedNodeName`` before it binds. The
        label tells the two apart (SCHED_PLUGINS_NOMINATING, SCHED_PLUGINS)."""
        self._cp = cp
        self.label = SCHED_PLUGINS_NOMINATING if v137_nomination else SCHED_PLUGINS
        self.extra_args = (PEER_V137_NOMINATION_GATE,) if v137_nomination else ()
        self._binary = ensure_scheduler_plugins()
        self._config = cp.write_kube_scheduler_config(
            qps=CLIENT_QPS, burst=CLIENT_BURST, profiles=[{"schedulerName": self.scheduler_name, **profile}]
        )
        self._handle = None
        self.log_path = cp.log_dir / "kube-scheduler-1.log"


class PyScheduler:
    label = PY
    scheduler_name = PY_SCHEDULER_NAME

    def __init__(
        self,
        cp: ControlPlane,
        workdir: Path,
        profiler: str | None = None,
        profile_out: Path | None = None,
        extenders: list[dict[str, Any]] | None = None,
        profile: dict[str, Any] | None = None,
    ) -> None:
        compile_sources()
        self._cp = cp
        self._workdir = workdir
        self._profiler = profiler
        self._profile_out = profile_out
        self.config_path = workdir / "py-scheduler-config.yaml"
        config = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "clientConnection": {"kubeconfig": str(cp.kubeconfig), "qps": CLIENT_QPS, "burst": CLIENT_BURST},
            # ``profile``: plugins/pluginConfig of a non-default profile (the gang bench's Coscheduling).
            "profiles": [{"schedulerName": PY_SCHEDULER_NAME, **(profile or {})}],
        }
        if extenders:
            config["extenders"] = extenders
        self.config_path.write_text(yaml.safe_dump(config))
        self.log_path = workdir / "py-scheduler.log"
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self._spy: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str]:
        scheduler = [
            "-m", "scheduler",
            "--config", str(self.config_path),
            "--kubeconfig", str(self._cp.kubeconfig),
            "--bind-address", "127.0.0.1",
            # Plain HTTP on a free port (the explicit insecure mode): the bench scrapes /metrics
            # without credentials and must not take 10259 from another scheduler on the machine.
            "--secure-port", "0",
            "--port", str(self.port),
            "--leader-elect", "false",
            # e.g. PY_SCHEDULER_BENCH_ARGS=--record-decisions=false: the cost of decision recording.
            *shlex.split(os.environ.get("PY_SCHEDULER_BENCH_ARGS", "")),
        ]  # fmt: skip
        if self._profiler == "pyinstrument":
            assert self._profile_out is not None
            return [sys.executable, "-m", "pyinstrument", "-r", "text", "--show-all",
                    "-o", str(self._profile_out), *scheduler]  # fmt: skip
        return [sys.executable, *scheduler]

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                self.argv(), stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env, start_new_session=True
            )
        _wait(self._ready, 300.0, "py-scheduler /readyz", self._alive, self.log_path)

    def start_py_spy(self, out: Path) -> None:
        """Sample whichever thread holds the GIL until stop() (py-spy must be on PATH): where the
        scheduler's Python CPU goes, loop and binding threads alike."""
        spy = shutil.which("py-spy")
        if spy is None:
            raise RuntimeError("py-spy is not on PATH")
        self._spy = subprocess.Popen(
            [spy, "record", "--pid", str(self.pid), "--rate", "100", "--format", "raw", "--output", str(out),
             "--gil", "--threads"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def metrics(self) -> scrape.Samples:
        """Its /metrics now, summed per metric name (empty if it cannot be read)."""
        return scrape.fetch(f"http://127.0.0.1:{self.port}/metrics")

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def plugins(self) -> dict[str, Any]:
        """The plugins of each extension point, resolved from the config as the scheduler does."""
        from scheduler.cache import Snapshot
        from scheduler.config import load_config, resolve_profile
        from scheduler.cycle.profiles import FrameworkHandle, PluginInstances
        from scheduler.plugins.registry import DEFAULT_MULTIPOINT, IN_TREE_REGISTRY

        config = load_config(str(self.config_path), registry=IN_TREE_REGISTRY)
        profile = config.profiles[0]
        handle = FrameworkHandle(profile.scheduler_name, Snapshot, None, time.time)
        plugins = PluginInstances(IN_TREE_REGISTRY, profile.args_for, handle)
        resolved = resolve_profile(profile, IN_TREE_REGISTRY, DEFAULT_MULTIPOINT, plugins.implements)
        weights = resolved.score_weights
        return {
            "multiPoint": [
                name + (f" (weight {weights[name]})" if name in weights else "")
                for name, _ in DEFAULT_MULTIPOINT
            ],
            "filter": resolved.plugins["filter"],
            "score": resolved.plugins["score"],
            "percentageOfNodesToScore": config.percentage_of_nodes_to_score,
            "parallelism": config.parallelism,
        }

    def stop(self) -> None:
        if self._spy is not None and self._spy.poll() is None:
            self._spy.send_signal(signal.SIGINT)
            try:
                self._spy.wait(30)
            except subprocess.TimeoutExpired:
                self._spy.kill()
        # A profiler writes its report on exit; that can take a while.
        processes.stop(self._proc, 120 if self._profiler else 20, after_kill=10)


class TrivialBinder:
    """The ceiling, or with ``honest`` the honest limit (Binding + Scheduled Event, py-scheduler's client)."""

    def __init__(self, cp: ControlPlane, workdir: Path, *, honest: bool = False) -> None:
        self._cp = cp
        self.honest = honest
        self.label = HONEST if honest else CEILING
        self.scheduler_name = HONEST_SCHEDULER_NAME if honest else CEILING_SCHEDULER_NAME
        self.log_path = workdir / f"{self.label}.log"
        self._ready_file = workdir / f"{self.label}.ready"
        self._proc: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "bench.trivial_binder",
                "--kubeconfig", str(self._cp.kubeconfig),
                "--scheduler-name", self.scheduler_name,
                "--ready-file", str(self._ready_file)]  # fmt: skip
        if self.honest:
            argv += ["--honest", "--qps", str(CLIENT_QPS), "--burst", str(CLIENT_BURST)]
        return argv

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        argv = self.argv()
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env, start_new_session=True
            )
        alive = lambda: self._proc is not None and self._proc.poll() is None  # noqa: E731
        _wait(self._ready_file.exists, 60.0, "trivial binder", alive, self.log_path)

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def plugins(self) -> dict[str, Any]:
        if self.honest:
            return {
                "multiPoint": ["(none: round-robin bind + Scheduled Event, no filtering or scoring)"],
                "client": f"py-scheduler's RestClient, qps {CLIENT_QPS}, burst {CLIENT_BURST}",
            }
        return {"multiPoint": ["(none: round-robin bind, no filtering or scoring)"]}

    def stop(self) -> None:
        processes.stop(self._proc)
