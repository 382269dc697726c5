"""Issue 15 on the real control plane: scheduler extenders over HTTP, served by the example extender
(``examples/extender``) as a real process on loopback, for py-scheduler and for kube-scheduler."""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.nodes import HOSTNAME_LABEL, create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for
from tests.integration.workload import RUN_LABEL, list_events, list_pods, make_pod

REPO = Path(__file__).resolve().parents[2]
ALLOW_KEY, ALLOW_VALUE = "example.com/extender", "ok"
SCORE_ANNOTATION = "example.com/extender-score"
DENIED = f"node(s) didn't have label {ALLOW_KEY}={ALLOW_VALUE}"
TIMEOUT_TEXT = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"


class ExtenderProcess:
    """``python -m examples.extender`` on a free loopback port."""

    def __init__(self, workdir: Path, *args: str) -> None:
        self.log_path = workdir / f"extender-{os.getpid()}-{time.monotonic_ns()}.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "examples.extender", "--port", "0",
             "--label", f"{ALLOW_KEY}={ALLOW_VALUE}", "--annotation", SCORE_ANNOTATION, *args],
            stdout=subprocess.PIPE, stderr=self._log, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
            start_new_session=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"extender did not start: {self.log_path.read_text()}")
        self.url: str = json.loads(line)["listening"]

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(self.url + "/stats", timeout=5) as resp:
            stats: dict[str, int] = json.loads(resp.read())
            return stats

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._log.close()


@pytest.fixture
def start_extender(tmp_path: Path) -> Iterator[Callable[..., ExtenderProcess]]:
    started: list[ExtenderProcess] = []

    def start(*args: str) -> ExtenderProcess:
        ext = ExtenderProcess(tmp_path, *args)
        started.append(ext)
        return ext

    yield start
    for ext in started:
        ext.stop()


@pytest.fixture
def start_scheduler(kubeconfig: str, tmp_path: Path) -> Iterator[Callable[..., SchedulerProcess]]:
    started: list[SchedulerProcess] = []

    def start(extenders: list[dict[str, Any]], name: str = "py-scheduler") -> SchedulerProcess:
        config = scheduler_config(extra={"extenders": extenders})
        proc = SchedulerProcess(kubeconfig, tmp_path, config, name=name).start()
        started.append(proc)
        proc.wait_ready(60)
        return proc

    yield start
    for proc in started:
        code = proc.stop()
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"


def _node(
    name: str, run_id: str, *, allowed: bool, score: int | None = None, **labels: str
) -> dict[str, Any]:
    node = make_node(
        name, labels={RUN_LABEL: run_id, **labels, **({ALLOW_KEY: ALLOW_VALUE} if allowed else {})}
    )
    if score is not None:
        node["metadata"].setdefault("annotations", {})[SCORE_ANNOTATION] = str(score)
    return node


def _bound(core_v1: Any, namespace: str, want: int) -> dict[str, str] | None:
    pods = [p for p in list_pods(core_v1, namespace) if p["spec"].get("nodeName")]
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods} if len(pods) >= want else None


def _failed_message(core_v1: Any, namespace: str, pod: str) -> str:
    messages = [
        e["message"]
        for e in list_events(core_v1, namespace)
        if e["involvedObject"]["name"] == pod and e["reason"] == "FailedScheduling"
    ]
    return messages[-1] if messages else ""


def _metric(proc: SchedulerProcess, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples carrying ``labels`` (in any order)."""
    status, text = proc.get("/metrics")
    assert status == 200
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_filter_prioritize_and_bind(
    api_client: Any,
    core_v1: Any,
    namespace: str,
    run_id: str,
    kubeconfig: str,
    start_extender: Callable[..., ExtenderProcess],
    start_scheduler: Callable[..., SchedulerProcess],
) -> None:
    ext = start_extender("--unresolvable", "--kubeconfig", kubeconfig)
    proc = start_scheduler(
        [
            {
                "urlPrefix": ext.url,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 5,
                "bindVerb": "bind",
                "httpTimeout": "5s",
            }
        ]
    )
    # Equal nodes but for the extender: "denied" scores highest but fails the filter; of the allowed
    # two, "best" has the higher extender score.
    names = {k: f"{k}-{run_id}" for k in ("denied", "low", "best")}
    create_nodes(
        api_client,
        [
            _node(names["denied"], run_id, allowed=False, score=10),
            _node(names["low"], run_id, allowed=True, score=1),
            _node(names["best"], run_id, allowed=True, score=9),
        ],
    )
    pods = [make_pod(f"p{i}", run_id) for i in range(3)]
    for pod in pods:
        core_v1.create_namespaced_pod(namespace, body=pod, _preload_content=False)
    placed = wait_for(functools.partial(_bound, core_v1, namespace, 3), 60, "3 pods bound")
    assert set(placed.values()) == {names["best"]}, placed
    # The extender performed every Binding and py-scheduler reported success.
    stats = ext.stats()
    assert stats.get("bind", 0) == 3 and stats["filter"] >= 3 and stats["prioritize"] >= 3, stats

    # Events are written off the binding path, so they may trail the binds.
    def scheduled() -> list[dict[str, Any]] | None:
        found = [e for e in list_events(core_v1, namespace) if e["reason"] == "Scheduled"]
        return found if len(found) >= 3 else None

    assert len(wait_for(scheduled, 30, "three Scheduled events")) == 3

    # Only the denied node passes the Filter plugins: the extender's unresolvable reason is the message.
    stuck = make_pod("stuck", run_id, node_selector={HOSTNAME_LABEL: names["denied"]})
    core_v1.create_namespaced_pod(namespace, body=stuck, _preload_content=False)
    message = wait_for(
        lambda: _failed_message(core_v1, namespace, "stuck"), 30, "FailedScheduling for the denied pod"
    )
    assert re.match(r"0/\d+ nodes are available: ", message), message
    assert f"1 {DENIED}" in message, message
    assert _metric(proc, "scheduler_extender_duration_seconds_count", verb="filter", status="Success") >= 4


def test_timeouts_ignorable_and_not(
    api_client: Any,
    core_v1: Any,
    namespace: str,
    run_id: str,
    start_extender: Callable[..., ExtenderProcess],
    start_scheduler: Callable[..., SchedulerProcess],
) -> None:
    slow = start_extender("--delay", "3")
    common = {"urlPrefix": slow.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1}
    proc = start_scheduler(
        [
            # Interested only in pods asking for its resource, which NodeResourcesFit then ignores.
            {
                **common,
                "httpTimeout": "500ms",
                "ignorable": True,
                "managedResources": [{"name": "example.com/lenient", "ignoredByScheduler": True}],
            },
            {
                **common,
                "httpTimeout": "500ms",
                "managedResources": [{"name": "example.com/strict", "ignoredByScheduler": True}],
            },
        ]
    )
    create_nodes(api_client, [_node(f"n{i}-{run_id}", run_id, allowed=i == 0) for i in range(3)])

    def asking(name: str, resource: str) -> dict[str, Any]:
        pod = make_pod(name, run_id)
        resources = pod["spec"]["containers"][0]["resources"]
        resources["requests"][resource] = "1"
        resources["limits"] = {resource: "1"}
        return pod

    core_v1.create_namespaced_pod(
        namespace, body=asking("strict", "example.com/strict"), _preload_content=False
    )
    message = wait_for(
        lambda: _failed_message(core_v1, namespace, "strict"), 30, "strict pod FailedScheduling"
    )
    assert message == f'Post "{slow.url}/filter": {TIMEOUT_TEXT}', message

    # While the strict pod keeps timing out and retrying, everything else is served.
    start = time.monotonic()
    core_v1.create_namespaced_pod(
        namespace, body=asking("lenient", "example.com/lenient"), _preload_content=False
    )
    for i in range(5):
        core_v1.create_namespaced_pod(namespace, body=make_pod(f"plain{i}", run_id), _preload_content=False)
    health_latency = []
    while time.monotonic() - start < 30:
        t0 = time.monotonic()
        assert proc.get("/healthz")[0] == 200
        health_latency.append(time.monotonic() - t0)
        placed = _bound(core_v1, namespace, 6)
        if placed is not None:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"lenient and plain pods not bound; log {proc.log_path}:\n{proc.log_tail()}")
    elapsed = time.monotonic() - start
    assert "strict" not in placed
    # The ignorable extender's filter and prioritize each cost at most httpTimeout (0.5 s): the lenient
    # pod is not held for the extender's 3 s, and the strict pod's retries don't starve the others.
    assert elapsed < 15, elapsed
    assert max(health_latency) < 1.0, health_latency
    # Retried with backoff: more than one error attempt, each ending in the timeout.
    wait_for(
        lambda: _metric(proc, "scheduler_schedule_attempts_total", result="error") >= 2,
        30,
        "a second attempt of the strict pod",
    )
    assert _metric(proc, "scheduler_extender_errors_total", reason="timeout") >= 2
    durations = _metric(proc, "scheduler_extender_duration_seconds_sum", status="Error")
    count = _metric(proc, "scheduler_extender_duration_seconds_count", status="Error")
    assert count >= 2 and durations / count < 1.0, (durations, count)


def test_same_choices_as_kube_scheduler(
    api_client: Any,
    core_v1: Any,
    namespace: str,
    run_id: str,
    control_plane: Any,
    start_extender: Callable[..., ExtenderProcess],
    start_scheduler: Callable[..., SchedulerProcess],
) -> None:
    """One config, one extender; each scheduler gets a pool of nodes where the extender's filter (and
    once its scores) leave a single right answer."""
    from tests.conftest import _delete_namespace

    ext = start_extender()
    extenders = [{"urlPrefix": ext.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 5}]
    start_scheduler(extenders)
    kube = control_plane.start_kube_scheduler(
        config_path=control_plane.write_kube_scheduler_config(
            profiles=[{"schedulerName": "kube-ext"}], extra={"extenders": extenders}
        )
    )
    nodes = []
    for pool in ("kube", "py"):
        # s0: denied; s1: the only allowed node of group a; s2/s3: allowed group b, s3 scores higher.
        nodes += [
            _node(f"{pool}-s0-{run_id}", run_id, allowed=False, score=10, pool=pool, group="a"),
            _node(f"{pool}-s1-{run_id}", run_id, allowed=True, pool=pool, group="a"),
            _node(f"{pool}-s2-{run_id}", run_id, allowed=True, score=2, pool=pool, group="b"),
            _node(f"{pool}-s3-{run_id}", run_id, allowed=True, score=8, pool=pool, group="b"),
        ]
    create_nodes(api_client, nodes)
    kube_ns = f"ext-kube-{run_id}"
    core_v1.create_namespace(body={"metadata": {"name": kube_ns}}, _preload_content=False)
    try:
        chosen: dict[str, dict[str, str]] = {}
        for pool, ns, scheduler_name in (("kube", kube_ns, "kube-ext"), ("py", namespace, "py-scheduler")):
            for group in ("a", "b"):
                for i in range(2):
                    pod = make_pod(
                        f"{group}{i}",
                        run_id,
                        scheduler_name=scheduler_name,
                        node_selector={"pool": pool, "group": group},
                    )
                    core_v1.create_namespaced_pod(ns, body=pod, _preload_content=False)
            placed = wait_for(functools.partial(_bound, core_v1, ns, 4), 60, f"{pool} pods bound")
            chosen[pool] = {name: node.split("-")[1] for name, node in placed.items()}
        assert chosen["py"] == chosen["kube"] == {"a0": "s1", "a1": "s1", "b0": "s3", "b1": "s3"}, chosen
    finally:
        kube.stop()
        _delete_namespace(core_v1, kube_ns)
