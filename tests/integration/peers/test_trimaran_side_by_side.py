"""Load-aware placement side by side: TargetLoadPacking, LoadVariationRiskBalancing and
LowRiskOverCommitment on two identical real control planes, the scheduler-plugins v0.34.7 scheduler
(devcluster/build_scheduler_plugins.sh; Trimaran compiled in, load-watcher v0.2.4 as its library) on one
and py-scheduler on the other, both reading the same real Prometheus (devcluster/build_prometheus.sh).

The test serves the per-node series load-watcher's queries read (``instance:node_cpu:ratio`` and
``instance:node_memory_utilisation:ratio`` with ``instance`` = the node name), constant per node so both
schedulers' 15-minute averages are the same whenever they fetch; Prometheus scrapes them every second.
Every node of every case exists from the start, on both planes, with the same name, and each case's pods
select their case's nodes. Pods are created one at a time, each waited for (bound, or reported
unschedulable) on both sides before the next, so both schedulers see the same sequence, including the
pods bound since their last sample.

upstream's load-watcher library can live once per process (it registers its HTTP handler globally), so
each plugin gets a scheduler-plugins scheduler of its own with one profile; py-scheduler runs the same
profile, started alongside it.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from devcluster.nodes import create_nodes, make_node
from devcluster.peers import scheduler_plugins
from devcluster.prometheus import PrometheusServer, ensure_prometheus
from devcluster.py_scheduler import SchedulerProcess, free_port, scheduler_config, wait_for

REPO = Path(__file__).resolve().parents[3]
# Built before the first test by the peers session (tests/integration/peers/conftest.py).
PEER_SCHEDULER = scheduler_plugins().scheduler
CPU_SERIES = "instance:node_cpu:ratio"
MEMORY_SERIES = "instance:node_memory_utilisation:ratio"

# case -> nodes: (name, cpu, memory, cpu ratio or None, memory ratio or None); None: no series at all.
NODES: dict[str, list[tuple[str, str, str, float | None, float | None]]] = {
    "tlp": [
        ("tlp-a", "4", "8Gi", 0.12, 0.3),
        ("tlp-b", "4", "8Gi", 0.33, 0.3),
        ("tlp-c", "4", "8Gi", 0.80, 0.3),
        ("tlp-quiet", "4", "8Gi", None, None),
    ],
    "lvrb": [
        ("lvrb-x", "4", "8Gi", 0.20, 0.50),
        ("lvrb-y", "4", "8Gi", 0.50, 0.10),
        ("lvrb-z", "4", "8Gi", 0.30, 0.30),
        ("lvrb-quiet", "4", "8Gi", None, None),
    ],
    "lroc": [
        ("lroc-a", "4", "8Gi", 0.20, 0.10),
        ("lroc-b", "4", "8Gi", 0.40, 0.10),
        ("lroc-c", "4", "8Gi", 0.70, 0.10),
        ("lroc-quiet", "4", "8Gi", None, None),
    ],
    "down": [
        ("down-a", "4", "8Gi", 0.12, 0.3),
        ("down-b", "4", "8Gi", 0.33, 0.3),
        ("down-c", "4", "8Gi", 0.80, 0.3),
    ],
    "svc": [
        ("svc-a", "4", "8Gi", 0.12, 0.3),
        ("svc-b", "4", "8Gi", 0.33, 0.3),
        ("svc-c", "4", "8Gi", 0.80, 0.3),
    ],
    "mid": [
        ("mid-a", "4", "8Gi", 0.12, 0.3),
        ("mid-b", "4", "8Gi", 0.33, 0.3),
        ("mid-c", "4", "8Gi", 0.80, 0.3),
    ],
}


def exposition() -> bytes:
    lines = [f"# TYPE {CPU_SERIES} gauge", f"# TYPE {MEMORY_SERIES} gauge"]
    for nodes in NODES.values():
        for name, _, _, cpu, memory in nodes:
            if cpu is not None:
                lines.append(f'{CPU_SERIES}{{instance="{name}"}} {cpu}')
            if memory is not None:
                lines.append(f'{MEMORY_SERIES}{{instance="{name}"}} {memory}')
    return ("\n".join(lines) + "\n").encode()


class _Exporter(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = exposition()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Garbage(http.server.BaseHTTPRequestHandler):
    """A broken metrics endpoint: answers every request 200 with a body that is not JSON."""

    def do_GET(self) -> None:
        self._garbage()

    def do_POST(self) -> None:
        self._garbage()

    def _garbage(self) -> None:
        body = b"<html>this is not the Prometheus API</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def http_server(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class Side:
    def __init__(self, plane: Any, label: str) -> None:
        self.plane = plane
        self.label = label
        self.api = plane.api_client()
        self.core = k8s.CoreV1Api(self.api)


class World:
    def __init__(
        self, peer: Side, ours: Side, prometheus: PrometheusServer, garbage: str, workdir: Path
    ) -> None:
        self.peer = peer
        self.ours = ours
        self.sides = (peer, ours)
        self.prometheus = prometheus
        self.garbage = garbage
        self.workdir = workdir


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from devcluster.cluster import ControlPlane

    started = time.monotonic()
    binary = ensure_prometheus()  # built once when missing: several minutes cold
    build_seconds = time.monotonic() - started
    if build_seconds > 5:
        print(f"prometheus built in {build_seconds:.0f}s")
    workdir = tmp_path_factory.mktemp("trimaran")
    planes = [ControlPlane(), ControlPlane()]
    with http_server(_Exporter) as exporter, http_server(_Garbage) as garbage:
        prometheus = PrometheusServer(binary, workdir / "prometheus", [exporter])
        try:
            for plane in planes:
                plane.start()
            prometheus.start()
            peer, ours = Side(planes[0], "scheduler-plugins"), Side(planes[1], "py-scheduler")
            for side in (peer, ours):
                create_nodes(
                    side.api,
                    [
                        make_node(name, cpu=cpu, memory=memory, labels={"case": case})
                        for case, nodes in NODES.items()
                        for name, cpu, memory, _, _ in nodes
                    ],
                )
            with_series = sum(1 for nodes in NODES.values() for n in nodes if n[3] is not None)
            prometheus.wait_for_series(CPU_SERIES, with_series)
            yield World(peer, ours, prometheus, garbage, workdir)
        finally:
            prometheus.stop()
            for plane in planes:
                plane.stop()


def profile(name: str, plugin: str, address: str) -> dict[str, Any]:
    """Only ``plugin`` scores, so placements follow its score alone."""
    plugins: dict[str, Any] = {
        "score": {"enabled": [{"name": plugin, "weight": 1}], "disabled": [{"name": "*"}]},
    }
    if plugin == "LowRiskOverCommitment":
        plugins["preScore"] = {"enabled": [{"name": plugin}]}
    return {
        "schedulerName": name,
        "plugins": plugins,
        "pluginConfig": [
            {"name": plugin, "args": {"metricProvider": {"type": "Prometheus", "address": address}}}
        ],
    }


@contextmanager
def schedulers(
    world: World, prof: dict[str, Any], ours: dict[str, Any] | None = None
) -> Iterator[SchedulerProcess]:
    """The scheduler-plugins scheduler and py-scheduler, each with ``prof`` (py-scheduler with ``ours``
    when given), started together."""
    config = world.peer.plane.write_kube_scheduler_config(profiles=[prof])
    handle = world.peer.plane.start_kube_scheduler(config_path=config, binary=PEER_SCHEDULER)
    proc = SchedulerProcess(
        world.ours.plane.kubeconfig,
        world.workdir,
        config=scheduler_config(scheduler_name=prof["schedulerName"], extra={"profiles": [ours or prof]}),
        name=f"py-scheduler-{prof['schedulerName']}-{free_port()}",
    ).start()
    try:
        proc.wait_ready(120)
        yield proc
    finally:
        proc.stop()
        handle.stop(grace=5.0)


def namespace(world: World, name: str) -> str:
    for side in world.sides:
        side.core.create_namespace({"metadata": {"name": name}}, _preload_content=False)
        wait_for(
            lambda side=side: (
                side.core.list_namespaced_service_account(name, _preload_content=False).status == 200
            ),  # type: ignore[misc]
            30,
            "namespace",
        )
    return name


def pod(
    name: str,
    scheduler: str,
    case: str,
    *,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    node_name: str = "",
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "busybox", "resources": resources}],
        "nodeSelector": {"case": case},
    }
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def outcome(side: Side, ns: str, name: str) -> tuple[str, str] | None:
    got = side.core.read_namespaced_pod(name, ns)
    if got.spec.node_name:
        return ("bound", got.spec.node_name)
    for cond in got.status.conditions or []:
        if cond.type == "PodScheduled" and cond.status == "False":
            return ("pending", cond.message or "")
    return None


def submit(world: World, ns: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """Creates the pod on both sides; each scheduler's decision (peer first)."""
    for side in world.sides:
        side.core.create_namespaced_pod(ns, body=body, _preload_content=False)
    results = []
    for side in world.sides:
        results.append(
            wait_for(
                lambda side=side: outcome(side, ns, body["metadata"]["name"]),  # type: ignore[misc]
                60,
                f"{side.label} to decide {ns}/{body['metadata']['name']}",
            )
        )
    # Both schedulers learn of the binding from their watch; give it a moment before the next pod, so
    # neither scores the next pod before it counts this one (TargetLoadPacking adds bound pods' load).
    time.sleep(1.0)
    return results


def run_sequence(world: World, ns: str, bodies: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Every pod's outcome, asserting both sides agree on each; returns py-scheduler's."""
    ours = []
    for body in bodies:
        peer_result, our_result = submit(world, ns, body)
        assert our_result == peer_result, f"{body['metadata']['name']}: peer {peer_result}, ours {our_result}"
        ours.append(our_result)
    return ours


def debug_record(proc: SchedulerProcess, ns: str, name: str) -> dict[str, Any]:
    status, body = proc.get(f"/debug/pods/{ns}/{name}")
    assert status == 200, body
    found: dict[str, Any] = json.loads(body)
    return found


def measured_load(doc: Any) -> dict[str, Any]:
    """The measuredLoad of the pod's latest attempt in a /debug/pods document."""
    loads: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("measuredLoad"), dict):
                loads.append(value["measuredLoad"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(doc)
    assert loads, f"no measuredLoad in {doc}"
    return loads[-1]


def metric_value(proc: SchedulerProcess, name: str, **labels: str) -> float:
    status, text = proc.get("/metrics")
    assert status == 200
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


# --- the three plugins -------------------------------------------------------------------------------


def test_target_load_packing_side_by_side(world: World) -> None:
    """Pods of 500m (12.5 % of a node) pack onto the least loaded node up to the 40 % target, then
    spill; pods bound since the sample count, so the burst does not pile onto the idle-looking node; the
    node without series scores 0 on both."""
    ns = namespace(world, "tlp")
    with schedulers(world, profile("tlp", "TargetLoadPacking", world.prometheus.url)) as proc:
        bodies = [
            pod(f"p{i}", "tlp", "tlp", requests={"cpu": "100m"}, limits={"cpu": "500m"}) for i in range(6)
        ]
        got = run_sequence(world, ns, bodies)
        assert [node for _, node in got] == ["tlp-a", "tlp-a", "tlp-b", "tlp-a", "tlp-b", "tlp-a"]
        load = measured_load(debug_record(proc, ns, "p2"))
        assert load["tlp-a"]["cpu"]["avgPercent"] == pytest.approx(12.0)
        assert load["tlp-a"]["window"] == "15m"
        assert "fallback" not in load["tlp-a"]
        assert metric_value(proc, "py_scheduler_load_metrics_age_seconds") >= 0
        assert metric_value(proc, "py_scheduler_load_metrics_fetches_total", result="success") >= 3


def test_load_watcher_service_side_by_side(world: World) -> None:
    """py-scheduler reading a load-watcher service (``watcherAddress``) places as the scheduler-plugins
    scheduler reading Prometheus does. The service is a real one: the load-watcher v0.2.4 library inside
    the scheduler-plugins scheduler serves its JSON API on port 2020 while its plugin is in library mode."""
    import socket

    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 2020)) == 0:
            pytest.skip("port 2020 is taken: the peer's load-watcher could not serve there")
    ns = namespace(world, "watcher")
    peer_profile = profile("tlp-watcher", "TargetLoadPacking", world.prometheus.url)
    ours = {
        **peer_profile,
        "pluginConfig": [{"name": "TargetLoadPacking", "args": {"watcherAddress": "http://127.0.0.1:2020"}}],
    }
    with schedulers(world, peer_profile, ours) as proc:
        bodies = [pod(f"p{i}", "tlp-watcher", "svc", limits={"cpu": "500m"}) for i in range(4)]
        got = run_sequence(world, ns, bodies)
        assert [node for _, node in got] == ["svc-a", "svc-a", "svc-b", "svc-a"]
        load = measured_load(debug_record(proc, ns, "p0"))
        assert load["svc-a"]["source"] == "watcher:http://127.0.0.1:2020"
        assert load["svc-a"]["cpu"]["avgPercent"] == pytest.approx(12.0)


def test_load_variation_risk_balancing_side_by_side(world: World) -> None:
    """The lowest risk (measured average + request, per resource, the worse of the two) wins; the
    measured load does not count pods bound since, so every pod of the burst goes to the same node on
    both sides, as upstream's."""
    ns = namespace(world, "lvrb")
    with schedulers(world, profile("lvrb", "LoadVariationRiskBalancing", world.prometheus.url)):
        bodies = [pod(f"p{i}", "lvrb", "lvrb", requests={"cpu": "500m", "memory": "512Mi"}) for i in range(4)]
        got = run_sequence(world, ns, bodies)
        assert {node for _, node in got} == {"lvrb-z"}


def test_low_risk_over_commitment_side_by_side(world: World) -> None:
    """Burstable pods (request 500m, limit 2) go where over-commitment is least risky, given the pods
    already on each node and the measured load."""
    ns = namespace(world, "lroc")
    for side in world.sides:
        for name, node, req, lim in (("run-a", "lroc-a", "1", "3"), ("run-b", "lroc-b", "500m", "1")):
            body = pod(
                name, "default-scheduler", "lroc", requests={"cpu": req}, limits={"cpu": lim}, node_name=node
            )
            side.core.create_namespaced_pod(ns, body=body, _preload_content=False)
    with schedulers(world, profile("lroc", "LowRiskOverCommitment", world.prometheus.url)):
        bodies = [
            pod(f"p{i}", "lroc", "lroc", requests={"cpu": "500m"}, limits={"cpu": "2"}) for i in range(4)
        ]
        got = run_sequence(world, ns, bodies)
        assert [node for _, node in got] == ["lroc-c", "lroc-a", "lroc-a", "lroc-a"]


# --- faults ------------------------------------------------------------------------------------------


def _all_placed(world: World, ns: str, bodies: list[dict[str, Any]]) -> None:
    """Every pod is bound on both sides (every node scores the minimum: the choice among them is each
    scheduler's own random tie-break, so only the outcome is compared)."""
    for body in bodies:
        peer_result, our_result = submit(world, ns, body)
        assert peer_result[0] == our_result[0] == "bound", (peer_result, our_result)


def test_prometheus_down_at_start(world: World) -> None:
    ns = namespace(world, "down-at-start")
    closed = f"http://127.0.0.1:{free_port()}"
    with schedulers(world, profile("tlp-down", "TargetLoadPacking", closed)) as proc:
        bodies = [pod(f"p{i}", "tlp-down", "down", limits={"cpu": "500m"}) for i in range(3)]
        _all_placed(world, ns, bodies)
        load = measured_load(debug_record(proc, ns, "p0"))
        assert {entry["fallback"] for entry in load.values()} == {"no_sample"}
        assert any("URLError" in entry.get("lastError", "") for entry in load.values())
        fallbacks = metric_value(
            proc, "py_scheduler_load_metrics_fallback_total", plugin="TargetLoadPacking", reason="no_sample"
        )
        assert fallbacks >= 3
        assert metric_value(proc, "py_scheduler_load_metrics_fetches_total", result="error") >= 3


def test_prometheus_answering_garbage(world: World) -> None:
    ns = namespace(world, "garbage")
    with schedulers(world, profile("tlp-garbage", "TargetLoadPacking", f"http://{world.garbage}")) as proc:
        bodies = [pod(f"p{i}", "tlp-garbage", "down", limits={"cpu": "500m"}) for i in range(3)]
        _all_placed(world, ns, bodies)
        load = measured_load(debug_record(proc, ns, "p1"))
        assert {entry["fallback"] for entry in load.values()} == {"no_sample"}
        assert any("bad_response" in entry.get("lastError", "") for entry in load.values())


def test_prometheus_down_mid_run(world: World) -> None:
    """Both keep the sample they took and place exactly as with Prometheus up."""
    ns = namespace(world, "down-mid-run")
    with schedulers(world, profile("tlp-mid", "TargetLoadPacking", world.prometheus.url)) as proc:
        world.prometheus.stop()
        try:
            bodies = [pod(f"p{i}", "tlp-mid", "mid", limits={"cpu": "500m"}) for i in range(4)]
            got = run_sequence(world, ns, bodies)
            assert [node for _, node in got] == ["mid-a", "mid-a", "mid-b", "mid-a"]
        finally:
            world.prometheus.start()
        assert proc.get("/readyz")[0] == 200
