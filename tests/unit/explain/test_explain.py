"""Decision records, nearest misses, the store's bounds, /debug/pods, the explain CLI's proxy path,
simulate and scenarios. Everything runs the product's own cycle and plugins (CoreEnv, Simulation)."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from scheduler.explain import cli as explain_cli
from scheduler.explain.debug import debug_pods_handler
from scheduler.explain.manifests import expand_pods
from scheduler.explain.misses import format_bytes, format_cpu
from scheduler.explain.record import (
    BIND_FAILED,
    BINDING,
    BOUND,
    UNSCHEDULABLE,
    AttemptRecord,
    Miss,
    PluginVerdicts,
    ScoreTable,
    summary,
)
from scheduler.explain.simulate import Simulation
from scheduler.explain.store import DecisionStore
from scheduler.serving.server import HealthServer
from tests.unit.fakes import CoreEnv, make_node, make_pod

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "examples" / "scenarios"

MakeEnv = Callable[..., CoreEnv]


def latest(env: CoreEnv, key: str) -> AttemptRecord:
    record = env.decisions.store.latest(key)
    assert record is not None, f"no record for {key}"
    return record


# --- records --------------------------------------------------------------------------------------


async def test_filter_rejected_attempt_records_verdicts_and_nearest_misses(make_env: MakeEnv) -> None:
    taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    env = make_env(
        [make_node("n1", cpu="1"), make_node("n2", cpu="4", taints=[taint]), make_node("n3", cpu="1")]
    )
    env.queue.add(make_pod("big", cpu="2"))
    await env.schedule_next()

    record = latest(env, "default/big")
    assert record.outcome == UNSCHEDULABLE
    assert (record.nodes_total, record.nodes_evaluated, record.feasible) == (3, 3, 0)
    assert record.message.startswith("0/3 nodes are available:")
    fit = record.filters["NodeResourcesFit"]
    assert fit.rejected == 2 and dict(fit.reasons) == {"Insufficient cpu": 2}
    assert sorted(fit.nodes) == ["n1", "n3"]
    assert record.filters["TaintToleration"].rejected == 1
    texts = sorted(m.text() for m in record.nearest_misses)
    assert texts == [
        "n1: Insufficient cpu (requests 2, free 1)",
        "n2: untolerated taint gpu=true:NoSchedule",
        "n3: Insufficient cpu (requests 2, free 1)",
    ]
    assert record.scores == []


async def test_node_failing_two_plugins_is_not_a_nearest_miss(make_env: MakeEnv) -> None:
    taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    env = make_env([make_node("both", cpu="1", taints=[taint]), make_node("cpu-only", cpu="1")])
    env.queue.add(make_pod("big", cpu="2"))
    await env.schedule_next()
    record = latest(env, "default/big")
    assert [m.node for m in record.nearest_misses] == ["cpu-only"]
    assert record.misses_probed == 2


async def test_scored_attempt_records_per_plugin_scores_of_top_nodes(make_env: MakeEnv) -> None:
    env = make_env([make_node("empty"), make_node("half"), make_node("full"), make_node("busy")])
    for node, cpu in (("half", "2"), ("full", "3"), ("busy", "2500m")):
        env.cache.add_pod(make_pod(f"on-{node}", cpu=cpu, node_name=node))
    env.queue.add(make_pod("web", cpu="500m"))
    await env.schedule_next()

    record = latest(env, "default/web")
    assert record.outcome == BINDING and record.node == "empty"
    assert (record.feasible, record.filters) == (4, {})
    assert len(record.scores) == 3  # TOP_K
    chosen, *others = record.scores
    assert chosen.chosen and chosen.node == "empty" and not any(s.chosen for s in others)
    assert chosen.total >= max(s.total for s in others)
    assert [s.total for s in others] == sorted((s.total for s in others), reverse=True)
    weights = env.fwk.score_weights
    for scores in record.scores:
        assert scores.total == sum(weighted for _, _, weighted in scores.plugins.values())
        for plugin, (_raw, normalised, weighted) in scores.plugins.items():
            assert weighted == normalised * weights.get(plugin, 1)
    fit_raw = {s.node: s.plugins["NodeResourcesFit"][0] for s in record.scores}
    assert fit_raw["empty"] > fit_raw["half"]

    await env.wait_bindings(1)
    assert latest(env, "default/web").outcome == BOUND


async def test_single_feasible_node_is_recorded_as_unopposed(make_env: MakeEnv) -> None:
    env = make_env([make_node("small", cpu="1"), make_node("large", cpu="8")])
    env.queue.add(make_pod("big", cpu="4"))
    await env.schedule_next()
    record = latest(env, "default/big")
    assert record.node == "large" and record.filters["NodeResourcesFit"].nodes == ["small"]
    assert [(s.node, s.chosen, s.plugins) for s in record.scores] == [("large", True, {})]


async def test_recording_off_records_nothing_and_keeps_upstreams_event(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1", cpu="1")])
    env.decisions.enabled = False
    env.queue.add(make_pod("big", cpu="2"))
    await env.schedule_next()
    assert env.decisions.store.latest("default/big") is None
    env.flush_writes()
    [event] = [e for e in env.rest.events() if e["reason"] == "FailedScheduling"]
    assert event["note"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


async def test_annotation_is_written_for_annotated_profiles_only(make_env: MakeEnv) -> None:
    env = make_env([make_node("n1", cpu="2"), make_node("n2", cpu="2")])
    written: list[tuple[str, str, str]] = []
    decisions = env.decisions
    decisions._annotator = lambda key, uid, value: written.append((key, uid, value))
    env.queue.add(make_pod("web", cpu="500m"))
    await env.schedule_next()
    await env.wait_bindings(1)
    assert written == []  # off by default: no profile named

    decisions.annotate_profiles = frozenset({env.fwk.profile_name})
    env.queue.add(make_pod("web2", cpu="500m"))
    env.queue.add(make_pod("huge", cpu="8"))
    await env.schedule_next()
    await env.schedule_next()
    await env.wait_bindings(2)
    by_pod = {key: orjson.loads(value) for key, _, value in written}
    assert set(by_pod) == {"default/web2", "default/huge"}
    bound, pending = by_pod["default/web2"], by_pod["default/huge"]
    assert bound["outcome"] == BOUND and bound["node"] in ("n1", "n2") and bound["nodes"] == [2, 2, 2]
    assert next(iter(bound["scores"])) == bound["node"] and len(bound["scores"]) == 2
    assert pending["outcome"] == UNSCHEDULABLE and pending["filtered"] == {"NodeResourcesFit": 2}
    assert sorted(pending["nearestMisses"])[0].startswith("n1: Insufficient cpu (requests 8, free ")
    assert len(pending["nearestMisses"]) == 2
    assert pending["message"].startswith("0/2 nodes are available")


def test_summary_stays_within_its_bound() -> None:
    record = _record("ns/p", UNSCHEDULABLE)
    record.message = "0/5000 nodes are available: " + "x" * 3000
    record.filters = {f"Plugin{i}": PluginVerdicts(rejected=i + 1) for i in range(40)}
    record.nearest_misses = [Miss(f"node-{i}-{'y' * 200}", "NodeResourcesFit", "short") for i in range(10)]
    names = tuple(f"n{i}-{'z' * 250}" for i in range(3))
    record.score_table = ScoreTable((("A", 1),), names, [10, 9, 8], 0, [[1, 1, 1]], [[2, 2, 2]])
    text = summary(record, 1024)
    assert len(text.encode()) <= 1024
    doc = orjson.loads(text)
    assert doc["outcome"] == UNSCHEDULABLE and doc["message"].startswith("0/5000 nodes are available")
    assert next(iter(doc["filtered"])) == "Plugin39"  # the biggest rejector survives
    tiny = summary(record, 80)
    assert len(tiny.encode()) <= 80 and orjson.loads(tiny)["outcome"] == UNSCHEDULABLE


def test_quantities_read_like_kubectl() -> None:
    assert [format_cpu(m) for m in (2000, 1500, 250, 100)] == ["2", "1.5", "250m", "0.1"]
    assert [format_bytes(b) for b in (1 << 30, 3 << 29, 512 << 20)] == ["1Gi", "1.5Gi", "512Mi"]


# --- the store ------------------------------------------------------------------------------------


def _record(pod: str, outcome: str, attempt: int = 1) -> AttemptRecord:
    return AttemptRecord(pod=pod, uid="u", profile="p", attempt=attempt, time=0.0, outcome=outcome)


def test_store_keeps_pending_pods_through_a_burst_of_scheduled_ones() -> None:
    store = DecisionStore(pending_pods=2, recent_pods=3, attempts_per_pod=2)
    store.file(_record("ns/stuck", UNSCHEDULABLE))
    for i in range(10):
        store.file(_record(f"ns/ok-{i}", BINDING))
    assert store.latest("ns/stuck") is not None
    assert store.sizes() == (1, 3)
    assert store.latest("ns/ok-0") is None and store.latest("ns/ok-9") is not None


def test_store_bounds_pending_pods_and_attempts_per_pod() -> None:
    store = DecisionStore(pending_pods=2, recent_pods=2, attempts_per_pod=2)
    for i in range(3):
        store.file(_record(f"ns/p{i}", UNSCHEDULABLE))
    assert store.latest("ns/p0") is None and store.sizes() == (2, 0)
    for attempt in range(1, 5):
        store.file(_record("ns/p2", UNSCHEDULABLE, attempt))
    doc = store.get_json("ns/p2")
    assert doc is not None and [a["attempt"] for a in doc["attempts"]] == [3, 4]


def test_a_pod_that_finally_binds_moves_from_pending_to_recent() -> None:
    store = DecisionStore()
    store.file(_record("ns/p", UNSCHEDULABLE))
    record = _record("ns/p", BINDING, 2)
    store.file(record)
    assert store.sizes() == (0, 1)
    store.finish(record, BOUND)
    latest = store.latest("ns/p")
    assert latest is not None and latest.outcome == BOUND


def test_finishing_a_binding_files_the_pod_by_its_new_outcome_while_it_is_the_latest() -> None:
    store = DecisionStore(pending_pods=1, recent_pods=2)
    first = _record("ns/p", BINDING)
    store.file(first)
    store.finish(first, BIND_FAILED, "conflict")
    assert store.sizes() == (1, 0)
    assert store.latest("ns/p") is first and (first.outcome, first.message) == (BIND_FAILED, "conflict")
    # Moving to pending respects its bound: the oldest pending pod goes.
    second = _record("ns/q", BINDING)
    store.file(second)
    store.finish(second, BIND_FAILED)
    assert store.sizes() == (1, 0) and store.latest("ns/p") is None
    # An older attempt finishing late changes its record but no longer decides where the pod is filed.
    retry = _record("ns/q", BINDING, 2)
    store.file(retry)
    store.finish(second, BIND_FAILED, "late")
    assert store.sizes() == (0, 1) and store.latest("ns/q") is retry and second.message == "late"
    # And back: a pending record that finishes bound moves its pod to recent.
    stuck = _record("ns/r", UNSCHEDULABLE)
    store.file(stuck)
    store.finish(stuck, BOUND)
    assert store.sizes() == (0, 2) and store.latest("ns/r") is stuck


# --- /debug/pods and the CLI -------------------------------------------------------------------------


def _get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, orjson.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, orjson.loads(err.read())


def test_debug_endpoint_serves_records_only_on_the_leader() -> None:
    store = DecisionStore()
    store.file(_record("ns/web", UNSCHEDULABLE))
    leading, recording = [True], [True]
    server = HealthServer(
        "127.0.0.1",
        0,
        readiness=lambda: (True, "ok"),
        liveness=lambda: (True, "ok"),
        debug_pods=debug_pods_handler(store, lambda: leading[0], lambda: recording[0]),
    )
    server.start()
    try:
        status, doc = _get(f"{server.url}/debug/pods/ns/web")
        assert status == 200 and doc["pod"] == "ns/web" and doc["attempts"][0]["outcome"] == UNSCHEDULABLE
        assert _get(f"{server.url}/debug/pods/ns/nope")[0] == 404
        assert _get(f"{server.url}/debug/pods/ns")[0] == 400
        recording[0] = False
        status, doc = _get(f"{server.url}/debug/pods/ns/nope")
        assert status == 404 and "--record-decisions=false" in doc["error"]
        leading[0] = False
        status, doc = _get(f"{server.url}/debug/pods/ns/web")
        assert status == 503 and doc["leader"] is False
    finally:
        server.stop()


def test_proxy_path_goes_through_the_metrics_service() -> None:
    assert explain_cli.proxy_path("py-scheduler", "py-scheduler-metrics", "metrics", "team-a/web-0") == (
        "/api/v1/namespaces/py-scheduler/services/py-scheduler-metrics:metrics/proxy/debug/pods/team-a/web-0"
    )
    assert explain_cli.proxy_path("s", "svc", "10259", "ns/p", scheme="https") == (
        "/api/v1/namespaces/s/services/https:svc:10259/proxy/debug/pods/ns/p"
    )


def test_kubectl_plugin_entry_point_is_declared() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert 'kubectl-py_scheduler = "scheduler.explain.cli:kubectl_plugin"' in text


# --- simulate and scenarios ---------------------------------------------------------------------------


def test_workloads_expand_to_their_pods() -> None:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c"}]}}
    pods = expand_pods(
        [
            {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2, "template": template}},
            {"kind": "StatefulSet", "metadata": {"name": "s", "namespace": "db"},
             "spec": {"template": template}},
            {"kind": "Job", "metadata": {"name": "j"},
             "spec": {"parallelism": 3, "completions": 2, "template": template}},
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "x", "containers": []}},
        ]
    )  # fmt: skip
    keys = [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods]
    assert keys == ["default/d-0", "default/d-1", "db/s-0", "default/j-0", "default/j-1", "default/p"]
    assert pods[2]["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "s-0"
    assert "nodeName" not in pods[-1]["spec"]


def test_simulate_places_in_order_without_writing_and_explains_the_rest(tmp_path: Path) -> None:
    from scheduler.config import parse_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    config = parse_config(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    )
    nodes = [make_node("n1", cpu="2"), make_node("n2", cpu="1")]
    sim = Simulation(
        config, IN_TREE_REGISTRY, {"nodes": nodes, "pods": [make_pod("old", cpu="1", node_name="n1")]}
    )
    a, b, c = sim.place_all([make_pod("a", cpu="1"), make_pod("b", cpu="1"), make_pod("c", cpu="1")])
    assert {a.node, b.node} == {"n1", "n2"} and c.node is None
    assert c.record is not None and c.reason == "0/2 nodes are available: 2 Insufficient cpu."
    assert sorted(m.text() for m in c.record.nearest_misses) == [
        "n1: Insufficient cpu (requests 1, free 0)",
        "n2: Insufficient cpu (requests 1, free 0)",
    ]
    assert sim.summary()["placed"] == 2


def test_simulate_counts_the_snapshots_nominations_until_the_nominated_pod_is_placed() -> None:
    """A pending preemptor of priority 100 nominated to big (8 CPUs) keeps its 6 CPUs there: web (3) is
    refused while it waits, as the scheduler's Filter refuses it. Once the preemptor is placed (on
    big) or deleted, its nomination no longer counts twice or at all."""
    from scheduler.config import parse_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    config = parse_config(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    )
    nodes = [make_node("small", cpu="1"), make_node("big", cpu="8")]
    urgent = make_pod("urgent", cpu="6")
    urgent["spec"]["priority"] = 100
    urgent["status"]["nominatedNodeName"] = "big"

    sim = Simulation(config, IN_TREE_REGISTRY, {"nodes": nodes, "pods": [urgent]})
    web = sim.place(make_pod("web", cpu="3"))
    assert web.node is None and web.reason == "0/2 nodes are available: 2 Insufficient cpu."
    assert sim.place(urgent).node == "big"
    # Assumed on big, not nominated as well: 2 CPUs are left there, not 8 - 6 - 6.
    assert sim.place(make_pod("small-one", cpu="2")).node == "big"

    sim = Simulation(config, IN_TREE_REGISTRY, {"nodes": nodes, "pods": [urgent]})
    sim.remove_pod("default/urgent")
    assert sim.place(make_pod("web", cpu="3")).node == "big"


@pytest.mark.parametrize("scenario", sorted(p.name for p in SCENARIOS.glob("*.yaml")))
def test_example_scenarios_pass(scenario: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert explain_cli.main(["simulate", "--scenario", str(SCENARIOS / scenario)]) == 0
    assert "PASSED" in capsys.readouterr().out


def test_a_wrong_expectation_fails_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load((SCENARIOS / "zone-spread.yaml").read_text())
    doc["steps"][-1]["expect"] = [
        {"pod": "default/db-3", "onNodeWithLabels": {"topology.kubernetes.io/zone": "zone-b"}}
    ]
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert explain_cli.main(["simulate", "--scenario", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAILED (1 expectation(s))" in out
    assert "expected default/db-3 placed, but it is pending: 0/2 nodes are available" in out
    assert "would exceed maxSkew 1" in out


def test_explain_access_component_grants_debug_pods_and_the_https_service_proxy_only() -> None:
    directory = ROOT / "deploy" / "components" / "explain-access"
    assert yaml.safe_load((directory / "kustomization.yaml").read_text())["resources"] == ["clusterrole.yaml"]
    role = yaml.safe_load((directory / "clusterrole.yaml").read_text())
    assert role["kind"] == "ClusterRole" and role["metadata"]["name"] == "py-scheduler:explain"
    assert role["rules"] == [
        {"nonResourceURLs": ["/debug/pods/*"], "verbs": ["get"]},
        {
            "apiGroups": [""],
            "resources": ["services/proxy"],
            "resourceNames": [f"{explain_cli.DEFAULT_SCHEME}:py-scheduler-metrics:metrics"],
            "verbs": ["get"],
        },
    ]


class _ProxyHandler(BaseHTTPRequestHandler):
    answers: list[tuple[int, bytes]] = []
    seen: list[tuple[str, str | None, str | None]] = []

    def do_GET(self) -> None:
        self.seen.append(
            (self.path, self.headers.get("Authorization"), self.headers.get("X-Py-Scheduler-Authorization"))
        )
        status, body = self.answers.pop(0)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def fake_api_server(tmp_path: Path) -> Iterator[tuple[str, type[_ProxyHandler]]]:
    handler = type("Handler", (_ProxyHandler,), {"answers": [], "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{server.server_address[1]}'}}}}]\n"
        "users: [{name: u, user: {token: my-token}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    yield str(kubeconfig), handler
    server.shutdown()
    server.server_close()


def _status(code: int, message: str, details: dict[str, Any] | None = None) -> bytes:
    return orjson.dumps({"kind": "Status", "code": code, "message": message, "details": details or {}})


def test_explain_through_the_proxy_carries_the_callers_token_and_names_what_is_missing(
    fake_api_server: tuple[str, type[_ProxyHandler]], capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, handler = fake_api_server
    handler.answers = [
        (403, _status(403, 'forbidden: User "ann" cannot get path "/debug/pods/team-a/web"')),
        (403, _status(403, 'services "https:py-scheduler-metrics:metrics" is forbidden: User "ann" cannot '
                      'get resource "services/proxy" in API group "" in the namespace "py-scheduler"',
                      {"name": "https:py-scheduler-metrics:metrics", "kind": "services"})),
    ]  # fmt: skip
    no_reevaluation = ["--no-reevaluate"]
    assert explain_cli.main(["explain", "team-a/web", "--kubeconfig", kubeconfig, *no_reevaluation]) == 1
    path, authorization, forwarded = handler.seen[0]
    service = "/api/v1/namespaces/py-scheduler/services/https:py-scheduler-metrics:metrics"
    assert path == f"{service}/proxy/debug/pods/team-a/web"
    # The API server consumes Authorization; the scheduler reviews the forwarded copy.
    assert authorization == forwarded == "Bearer my-token"
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "py-scheduler explain team-a/web: no decision record from the scheduler."
    assert err[2] == f"           GET {service}/proxy/debug/pods/team-a/web"
    assert err[3] == (
        "  Answer:  HTTP 403: missing permission: get on the non-resource URL "
        "/debug/pods/team-a/web (bind the ClusterRole py-scheduler:explain with a ClusterRoleBinding, or "
        'grant /debug/pods/<namespace>/*); the scheduler said: forbidden: User "ann" cannot get path '
        '"/debug/pods/team-a/web"'
    )
    assert explain_cli.main(["explain", "team-a/web", "--kubeconfig", kubeconfig, *no_reevaluation]) == 1
    [line] = [ln for ln in capsys.readouterr().err.strip().splitlines() if ln.startswith("  Answer:")]
    assert (
        "missing permission: get services/proxy on https:py-scheduler-metrics:metrics in namespace "
        "py-scheduler" in line
    )


def test_explain_through_the_proxy_needs_a_bearer_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {username: a, password: b}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    assert explain_cli.main(["explain", "ns/p", "--kubeconfig", str(kubeconfig), "--no-reevaluate"]) == 1
    [line] = [ln for ln in capsys.readouterr().err.strip().splitlines() if ln.startswith("  Answer:")]
    assert "no connection" in line and "no bearer token" in line and "--endpoint" in line


@pytest.mark.parametrize("command", [["explain", "ns/pod"], ["snapshot", "-f", "out.yaml"]])
def test_a_bad_kubeconfig_is_one_line_not_a_traceback(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = explain_cli.main([*command, "--kubeconfig", str(tmp_path / "nope")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "kubeconfig" in err and "no such file" in err, err


def _fit_config(path: Path, strategy: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {
                        "schedulerName": "py-scheduler",
                        "pluginConfig": [
                            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": strategy}}}
                        ],
                    }
                ],
            }
        )
    )
    return path


def _dump(tmp_path: Path, pods: list[dict[str, Any]]) -> Path:
    # n-busy has 3 of its 4 cpus taken: MostAllocated packs onto it, LeastAllocated avoids it.
    nodes = [make_node("n-busy", cpu="4"), make_node("n-idle", cpu="4")]
    bound = make_pod("resident", cpu="3", node_name="n-busy")
    path = tmp_path / "cluster.json"
    items = [{"kind": "Node", **n} for n in nodes] + [{"kind": "Pod", **p} for p in (bound, *pods)]
    path.write_bytes(orjson.dumps({"kind": "List", "items": items}))
    return path


def test_simulate_without_pods_places_the_snapshots_pending_pods_of_its_profiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pending = make_pod("waiting", cpu="500m")
    other = make_pod("for-kube-scheduler", cpu="500m", scheduler_name="default-scheduler")
    cluster = _dump(tmp_path, [pending, other])
    assert explain_cli.main(["simulate", "--cluster", str(cluster), "-o", "json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert [p["pod"] for p in doc["placements"]] == ["default/waiting"]


def test_simulate_with_nothing_to_place_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert explain_cli.main(["simulate", "--cluster", str(_dump(tmp_path, []))]) == 2
    assert "nothing to place" in capsys.readouterr().err


def test_compare_explains_each_difference_by_plugin_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = _dump(tmp_path, [make_pod("web", cpu="500m")])
    least = _fit_config(tmp_path / "least.yaml", "LeastAllocated")
    most = _fit_config(tmp_path / "most.yaml", "MostAllocated")
    argv = ["simulate", "--cluster", str(cluster), "--config", str(least), "--compare", str(most)]
    assert explain_cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "1 pod(s) placed differently" in out
    lines = out.splitlines()
    first = next(line for line in lines if line.startswith("  first: "))
    second = next(line for line in lines if line.startswith("  second: "))
    # Each side scores both nodes, plugin by plugin; NodeResourcesFit is what tips them apart.
    assert first.startswith("  first: n-idle ") and "; n-busy " in first and "NodeResourcesFit" in first
    assert second.startswith("  second: n-idle ") and "; n-busy " in second
    fit = {
        side: [int(part.split("NodeResourcesFit ")[1].split(",")[0].rstrip(")")) for part in line.split("; ")]
        for side, line in (("least", first), ("most", second))
    }
    assert fit["least"][0] > fit["least"][1]  # LeastAllocated prefers the idle node
    assert fit["most"][0] < fit["most"][1]  # MostAllocated the busy one


def test_capacity_scheduling_rejection_and_allocatable_scores_are_recorded() -> None:
    """Issue 26: explain shows CapacityScheduling's PreFilter verdict and NodeResourcesAllocatable's
    per-node score."""
    from informers.resource import ELASTIC_QUOTAS
    from scheduler.config import parse_config
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {
                        "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
                        "postFilter": {
                            "enabled": [{"name": "CapacityScheduling"}],
                            "disabled": [{"name": "*"}],
                        },
                        "score": {"enabled": [{"name": "NodeResourcesAllocatable", "weight": 1}]},
                    },
                    "pluginConfig": [{"name": "NodeResourcesAllocatable", "args": {"mode": "Most"}}],
                }
            ],
        }
    )
    quota = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "q", "namespace": "team", "uid": "q", "resourceVersion": "1"},
        "spec": {"min": {"cpu": "1"}, "max": {"cpu": "1"}},
    }
    nodes = [make_node("small", cpu="2"), make_node("large", cpu="8")]
    sim = Simulation(config, IN_TREE_REGISTRY, {"nodes": nodes, ELASTIC_QUOTAS.name: [quota]})
    over = make_pod("over", namespace="team", cpu="2")
    fits = make_pod("fits", cpu="1")
    rejected, placed = sim.place_all([over, fits])

    assert rejected.node is None and rejected.record is not None
    message = "Pod team/over is rejected in PreFilter because ElasticQuota team is more than Max"
    assert rejected.record.pre_filter == message
    assert message in rejected.reason
    assert rejected.record.to_json()["preFilter"] == message

    assert placed.node == "large" and placed.record is not None
    scores = {s.node: s.plugins["NodeResourcesAllocatable"] for s in placed.record.scores}
    assert scores["large"][1] == 100 and scores["small"][1] == 0  # normalised: Most prefers large
    assert scores["large"][0] > scores["small"][0]  # raw
    as_json = placed.record.to_json()["scores"]
    assert any("NodeResourcesAllocatable" in str(entry) for entry in as_json)


async def test_preemption_toleration_verdict_says_why_no_pod_is_a_victim(make_env: MakeEnv) -> None:
    """Explain shows PreemptionToleration's PostFilter verdict: inside its PriorityClass's toleration
    window the only lower-priority pod is no victim ("No victims found on node ...", no nomination);
    once the window has passed the same preemptor is nominated to evict it."""
    from scheduler.client.events import rfc3339
    from scheduler.plugins.preemptiontoleration import PreemptionToleration

    profile = {
        "schedulerName": "py-scheduler",
        "plugins": {
            "postFilter": {
                "enabled": [{"name": "PreemptionToleration"}],
                "disabled": [{"name": "DefaultPreemption"}],
            }
        },
    }
    env = make_env([make_node("n1", cpu="1")], profile=profile)
    [plugin] = [p for p in env.fwk.plugins.post_filter if isinstance(p, PreemptionToleration)]
    tolerant = {
        "metadata": {
            "name": "tolerant-low",
            "annotations": {
                "preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority": "10000",
                "preemption-toleration.scheduling.x-k8s.io/toleration-seconds": "60",
            },
        },
        "value": 100,
    }
    plugin._priority_classes.add(tolerant)  # type: ignore[attr-defined]
    scheduled = env.clock.now()
    victim = make_pod("victim", cpu="1", node_name="n1")
    victim["spec"].update(priority=100, priorityClassName="tolerant-low")
    victim["status"] = {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(scheduled)}],
    }
    env.cache.add_pod(victim)
    preemptor = make_pod("early", cpu="1")
    preemptor["spec"]["priority"] = 1000
    env.queue.add(preemptor)
    await env.schedule_next()

    record = latest(env, "default/early")
    assert record.outcome == UNSCHEDULABLE
    assert (
        record.post_filter
        == "0/1 nodes are available: 1 No victims found on node n1 for preemptor pod early."
    )
    assert record.nominated_node == ""
    assert record.to_json()["postFilter"] == record.post_filter

    # Past the window: the victim may be preempted; the verdict is a nomination (v1.34: no message).
    env.clock.advance(61)
    late = make_pod("late", cpu="1")
    late["spec"]["priority"] = 1000
    env.queue.add(late)
    await env.schedule_next()
    record = latest(env, "default/late")
    assert record.nominated_node == "n1"
    assert record.post_filter == ""


def test_nearest_miss_of_numa_alignment_names_the_container_resource_and_numa_nodes() -> None:
    from scheduler.explain.misses import describe
    from scheduler.framework.cycle_state import CycleState
    from scheduler.framework.listers import NODE_RESOURCE_TOPOLOGIES
    from scheduler.framework.types import NodeInfo, PodInfo
    from scheduler.plugins.noderesourcetopology import NodeResourceTopologyMatch
    from tests.unit.plugins.plugin_testlib import FakeHandle

    def zone(numa_id: int, cpu: str) -> dict[str, Any]:
        return {"name": f"node-{numa_id}", "type": "Node", "resources": [{"name": "cpu", "available": cpu}]}

    nrt = {
        "metadata": {"name": "numa-0", "resourceVersion": "1"},
        "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"}],
        "zones": [zone(0, "2"), zone(1, "3")],
    }
    plugin = NodeResourceTopologyMatch(None, FakeHandle(objects={NODE_RESOURCE_TOPOLOGIES: [nrt]}))
    node = NodeInfo(make_node("numa-0", cpu="8"))
    requests = {"cpu": "4", "memory": "1Gi"}
    pod = make_pod("db", cpu="4", memory="1Gi")
    pod["spec"]["containers"][0]["resources"]["limits"] = dict(requests)
    state = CycleState()
    status = plugin.filter(state, PodInfo(pod), node)
    assert status is not None
    text = describe(status.with_plugin("NodeResourceTopologyMatch"), PodInfo(pod), node, state)
    assert (
        text
        == "cannot align container: container c: cpu 4 fits no single NUMA node (node-0 has 2, node-1 has 3)"
    )


def test_chosen_node_notes_say_which_numa_node_each_container_fits() -> None:
    from scheduler.explain.notes import chosen_node_notes
    from scheduler.explain.render import render_attempt
    from scheduler.framework.cycle_state import CycleState
    from scheduler.framework.listers import NODE_RESOURCE_TOPOLOGIES
    from scheduler.framework.types import NodeInfo, PodInfo
    from scheduler.plugins.noderesourcetopology import NodeResourceTopologyMatch
    from tests.unit.plugins.plugin_testlib import FakeHandle

    def zone(numa_id: int, cpu: str) -> dict[str, Any]:
        resources = [{"name": "cpu", "available": cpu}, {"name": "memory", "available": "4Gi"}]
        return {"name": f"node-{numa_id}", "type": "Node", "resources": resources}

    nrt = {
        "metadata": {"name": "numa-0", "resourceVersion": "1"},
        "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"}],
        "zones": [zone(0, "4"), zone(1, "4")],
    }
    plugin = NodeResourceTopologyMatch(None, FakeHandle(objects={NODE_RESOURCE_TOPOLOGIES: [nrt]}))
    node = NodeInfo(make_node("numa-0", cpu="8"))
    pod = make_pod("db", cpu="3", memory="1Gi")
    first = pod["spec"]["containers"][0]
    first["resources"]["limits"] = dict(first["resources"]["requests"])
    pod["spec"]["containers"].append({**first, "name": "sidecar"})
    state = CycleState()
    assert plugin.filter(state, PodInfo(pod), node) is None
    notes = chosen_node_notes(state, "numa-0")
    assert notes == [
        "NodeResourceTopologyMatch: container c on NUMA node-0, container sidecar on NUMA node-1"
    ]
    assert chosen_node_notes(state, "elsewhere") == []
    lines = render_attempt(
        {"attempt": 1, "time": 0, "outcome": "Bound", "node": "numa-0", "nodeNotes": notes}
    )
    assert f"  On numa-0: {notes[0]}" in lines


def test_load_aware_measured_load_is_recorded_and_rendered() -> None:
    """Explain shows each top node's measured load as a Trimaran plugin read it; simulate has no metrics
    source, so each node shows the fallback."""
    from scheduler.config import parse_config
    from scheduler.explain.render import render_attempt
    from scheduler.plugins.registry import IN_TREE_REGISTRY

    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {"score": {"enabled": [{"name": "TargetLoadPacking", "weight": 1}]}},
                    "pluginConfig": [
                        {"name": "TargetLoadPacking", "args": {"watcherAddress": "http://load-watcher:2020"}}
                    ],
                }
            ],
        }
    )
    nodes = [make_node("a", cpu="2"), make_node("b", cpu="4"), make_node("c", cpu="8"), make_node("d")]
    sim = Simulation(config, IN_TREE_REGISTRY, {"nodes": nodes})
    (placed,) = sim.place_all([make_pod("p", cpu="1")])
    assert placed.record is not None
    load = placed.record.to_json()["measuredLoad"]
    shown = {s.node for s in placed.record.scores}
    assert set(load) == shown and len(shown) == 3  # the top nodes only
    assert all(
        entry["fallback"] == "no_sample" and entry["sampleAgeSeconds"] is None for entry in load.values()
    )
    text = "\n".join(render_attempt(placed.record.to_json()))
    assert "Measured load (none):" in text
    assert "fallback: no_sample" in text
