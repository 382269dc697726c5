"""explain and simulate on the real control plane: py-scheduler as a process, kube-scheduler beside it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import REPO, SchedulerProcess, wait_for
from tests.integration.workload import (
    RUN_LABEL,
    create_pods,
    list_events,
    list_pods,
    make_pod,
    new_run_id,
    sole_kube_scheduler,
)


@pytest.fixture
def run_id(core_v1: Any) -> Iterator[str]:
    rid = new_run_id()
    yield rid
    core_v1.delete_collection_node(label_selector=f"{RUN_LABEL}={rid}", _preload_content=False)


@pytest.fixture
def scheduler(kubeconfig: str, tmp_path: Path) -> Iterator[SchedulerProcess]:
    proc = SchedulerProcess(kubeconfig, tmp_path).start()
    try:
        proc.wait_ready()
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_explain_names_the_blocker_then_why_the_new_node_won(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    labels = {RUN_LABEL: run_id}
    create_nodes(api_client, [make_node(f"small-{run_id}-{i}", cpu="1", memory="4Gi", labels=labels)
                              for i in range(2)])  # fmt: skip
    create_pods(core_v1, namespace, [make_pod("big", run_id, cpu="1500m")])
    key = f"{namespace}/big"
    endpoint = scheduler.url("")

    def pending_explained() -> dict[str, Any] | None:
        done = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint, "-o", "json")
        if done.returncode != 0:
            return None
        doc: dict[str, Any] = orjson.loads(done.stdout)
        return doc if doc["attempts"][-1]["outcome"] == "Unschedulable" else None

    doc = wait_for(pending_explained, 30, "an Unschedulable record for big")
    attempt = doc["attempts"][-1]
    assert attempt["filter"]["NodeResourcesFit"]["reasons"] == {"Insufficient cpu": 2}
    misses = {m["node"]: m["detail"] for m in attempt["nearestMisses"]}
    assert misses == {f"small-{run_id}-{i}": "Insufficient cpu (requests 1.5, free 1)" for i in range(2)}
    table = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint)
    assert table.returncode == 0, table.stderr
    assert "NodeResourcesFit" in table.stdout and "Insufficient cpu (requests 1.5, free 1)" in table.stdout
    print(table.stdout)  # the example output in docs/explain.md

    create_nodes(api_client, [make_node(f"big-{run_id}", cpu="4", memory="8Gi", labels=labels)])

    def bound_explained() -> dict[str, Any] | None:
        done = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint, "-o", "json")
        doc: dict[str, Any] = orjson.loads(done.stdout) if done.returncode == 0 else {}
        attempts = doc.get("attempts") or [{}]
        return doc if attempts[-1].get("outcome") == "Bound" else None

    doc = wait_for(bound_explained, 60, "a Bound record for big")
    attempt = doc["attempts"][-1]
    assert attempt["node"] == f"big-{run_id}"
    assert attempt["scores"][0] == {"node": f"big-{run_id}", "total": 0, "chosen": True, "plugins": {}}
    assert attempt["filter"]["NodeResourcesFit"]["rejected"] == 2
    assert [p["spec"].get("nodeName") for p in list_pods(core_v1, namespace)] == [f"big-{run_id}"]
    table = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint)
    assert "the only feasible node" in table.stdout
    print(table.stdout)


def test_explain_shows_why_the_winner_beat_the_runner_up_and_annotates_the_pod(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, kubeconfig: str, tmp_path: Path
) -> None:
    """Three feasible nodes, one busy: the record names the winner and the runners-up with every Score
    plugin's raw/normalised/weighted values; --annotate-decisions writes the summary to the pod."""
    labels = {RUN_LABEL: run_id}
    names = [f"score-{run_id}-{i}" for i in range(3)]
    create_nodes(api_client, [make_node(name, cpu="4", memory="8Gi", labels=labels) for name in names])
    proc = SchedulerProcess(kubeconfig, tmp_path, extra_args=["--annotate-decisions", "py-scheduler"])
    proc.start()
    try:
        proc.wait_ready()
        endpoint = proc.url("")
        # Fill the first node so LeastAllocated (the default) prefers the other two.
        filler = make_pod("filler", run_id, cpu="3")
        filler["spec"]["nodeName"] = names[0]
        create_pods(core_v1, namespace, [filler])
        create_pods(core_v1, namespace, [make_pod("web", run_id, cpu="500m")])
        key = f"{namespace}/web"

        def bound_explained() -> dict[str, Any] | None:
            done = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint, "-o", "json")
            doc: dict[str, Any] = orjson.loads(done.stdout) if done.returncode == 0 else {}
            attempts = doc.get("attempts") or [{}]
            return doc if attempts[-1].get("outcome") == "Bound" else None

        attempt = wait_for(bound_explained, 60, "a Bound record for web")["attempts"][-1]
        winner = attempt["node"]
        assert winner in names[1:]
        scores = attempt["scores"]
        assert attempt["nodes"]["feasible"] == 3 and len(scores) == 3
        assert scores[0]["node"] == winner and scores[0]["chosen"]
        runners_up = [s for s in scores[1:] if not s["chosen"]]
        assert len(runners_up) == 2 and {s["node"] for s in scores} == set(names)
        assert scores[0]["total"] >= runners_up[0]["total"] >= runners_up[1]["total"]
        assert runners_up[-1]["node"] == names[0]  # the busy node scores lowest
        fit = {s["node"]: s["plugins"]["NodeResourcesFit"] for s in scores}
        assert fit[winner]["raw"] > fit[names[0]]["raw"]
        for s in scores:
            assert s["total"] == sum(v["weighted"] for v in s["plugins"].values())
        table = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint)
        assert table.returncode == 0, table.stderr
        assert "Why this node" in table.stdout and f"{winner} (chosen)" in table.stdout
        assert names[0] in table.stdout and "NodeResourcesFit" in table.stdout
        print(table.stdout)

        def annotated() -> dict[str, Any] | None:
            pod = core_v1.read_namespaced_pod("web", namespace)
            value = (pod.metadata.annotations or {}).get("py-scheduler.io/decision")
            return orjson.loads(value) if value else None

        summary = wait_for(annotated, 30, "the py-scheduler.io/decision annotation on web")
        assert summary["outcome"] == "Bound" and summary["node"] == winner
        assert next(iter(summary["scores"])) == winner and len(summary["scores"]) == 3
    finally:
        code = proc.stop()
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"


@pytest.fixture
def kube_scheduler(control_plane: Any) -> Iterator[Any]:
    with sole_kube_scheduler(control_plane) as handle:
        yield handle


def test_simulate_matches_kube_scheduler_and_compares_packing(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, kube_scheduler: Any, kubeconfig: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    labels = {RUN_LABEL: run_id}
    sizes = {"a": "1", "b": "2", "c": "4"}
    create_nodes(api_client, [make_node(f"{n}-{run_id}", cpu=c, memory="8Gi", labels=labels)
                              for n, c in sizes.items()])  # fmt: skip
    # Each pod fits exactly one node (the others are too small or already full).
    pods = [make_pod(f"p{i}", run_id, cpu=cpu, scheduler_name="default-scheduler")
            for i, cpu in enumerate(("3", "1500m"))]  # fmt: skip
    pods_file = tmp_path / "pods.yaml"
    for pod in pods:
        pod["metadata"]["namespace"] = namespace
    pods_file.write_text(yaml.safe_dump_all(pods))

    simulated = cli("simulate", "--kubeconfig", kubeconfig, "--pods", str(pods_file), "-o", "json")
    assert simulated.returncode == 0, simulated.stderr
    predicted = {p["pod"]: p["node"] for p in orjson.loads(simulated.stdout)["placements"]}
    assert list_pods(core_v1, namespace) == []  # read-only: nothing was created

    for pod in pods:
        create_pods(core_v1, namespace, [pod])
        name = pod["metadata"]["name"]

        def is_bound(wanted: str = name) -> bool:
            return any(p["spec"].get("nodeName") for p in list_pods(core_v1, namespace)
                       if p["metadata"]["name"] == wanted)  # fmt: skip

        wait_for(is_bound, 60, f"{name} bound")
    actual = {
        f"{namespace}/{p['metadata']['name']}": p["spec"]["nodeName"] for p in list_pods(core_v1, namespace)
    }
    assert predicted == actual == {f"{namespace}/p0": f"c-{run_id}", f"{namespace}/p1": f"b-{run_id}"}

    # Packing: a dump of just this run's nodes, small pods, LeastAllocated vs MostAllocated.
    dump = tmp_path / "cluster.json"
    assert cli("snapshot", "--kubeconfig", kubeconfig, "-f", str(dump)).returncode == 0
    doc = orjson.loads(dump.read_bytes())
    doc["items"] = [
        i for i in doc["items"] if i["kind"] == "Node" and i["metadata"]["labels"].get(RUN_LABEL) == run_id
    ]
    dump.write_bytes(orjson.dumps(doc))
    small = [make_pod(f"s{i}", run_id, cpu="250m", scheduler_name="py-scheduler") for i in range(4)]
    pods_file.write_text(yaml.safe_dump_all(small))
    configs = REPO / "examples" / "scenarios" / "configs"
    compared = cli("simulate", "--cluster", str(dump), "--pods", str(pods_file),
                   "--config", str(configs / "least-allocated.yaml"),
                   "--compare", str(configs / "most-allocated.yaml"), "-o", "json")  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    result = orjson.loads(compared.stdout)
    assert result["summary"]["nodesUsed"] > 1
    assert result["compare"]["summary"]["nodesUsed"] == 1  # MostAllocated packs them all onto one node
    text = cli("simulate", "--cluster", str(dump), "--pods", str(pods_file),
               "--config", str(configs / "least-allocated.yaml"),
               "--compare", str(configs / "most-allocated.yaml"))  # fmt: skip
    assert "placed differently" in text.stdout
    print(text.stdout)


def _first_sentence(message: str) -> str:
    """``0/N nodes are available: <the Filter reasons>``: what precedes PostFilter's (preemption) part."""
    return message.split(". ", 1)[0].rstrip(".")


def test_explain_as_a_new_user_says_what_it_tried_then_re_evaluates(
    core_v1: Any, api_client: Any, control_plane: Any, namespace: str, run_id: str, tmp_path: Path
) -> None:
    """The issue's new user: py-scheduler runs as a process (HTTPS, delegated auth), not behind the
    Service of deploy/, and the user may list nodes and pods but has no services/proxy permission.
    explain says what it asked and of whom, the answer and the RBAC it needs, then prints a labelled
    re-evaluation whose Filter reasons are the scheduler's FailedScheduling Event's."""
    from tests.integration.test_auth import kubeconfig as write_kubeconfig
    from tests.integration.test_deploy import raw

    labels = {RUN_LABEL: run_id}
    create_nodes(api_client, [make_node(f"tiny-{run_id}-{i}", cpu="1", memory="4Gi", labels=labels)
                              for i in range(2)])  # fmt: skip
    user = f"explain-user-{run_id}"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": user},
        "rules": [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
        "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": namespace}],
    }
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": user}}
    assert raw(api_client, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", sa)[0] == 201
    assert raw(api_client, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)[0] == 201
    assert (
        raw(api_client, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)[0] == 201
    )
    proc = SchedulerProcess(control_plane.kubeconfig, tmp_path, secure=True).start()
    try:
        token_request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
        status, issued = raw(
            api_client, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{user}/token", token_request
        )
        assert status == 201, issued
        user_kubeconfig = write_kubeconfig(control_plane, tmp_path / "user.kubeconfig",
                                           {"token": issued["status"]["token"]})  # fmt: skip
        proc.wait_ready()
        create_pods(core_v1, namespace, [make_pod("huge", run_id, cpu="64")])

        def failed_scheduling() -> str | None:
            for event in list_events(core_v1, namespace):
                if event.get("reason") == "FailedScheduling" and event["involvedObject"]["name"] == "huge":
                    return str(event["message"])
            return None

        event_message = wait_for(failed_scheduling, 60, "the FailedScheduling Event of huge")
        key = f"{namespace}/huge"
        table = cli("explain", key, "--kubeconfig", str(user_kubeconfig))
        assert table.returncode == 0, table.stderr
        print(table.stderr + table.stdout)  # the example output in docs/explain.md
        tried = table.stderr
        assert "no decision record from the scheduler" in tried
        assert "the Service py-scheduler-metrics (port metrics, https) in namespace py-scheduler" in tried
        assert (
            "/api/v1/namespaces/py-scheduler/services/https:py-scheduler-metrics:metrics/proxy/debug/pods/"
            in tried
        )
        assert "HTTP 403" in tried
        assert (
            "get on services/proxy for https:py-scheduler-metrics:metrics in namespace py-scheduler" in tried
        )
        assert f"get on the non-resource URL /debug/pods/{namespace}/huge" in tried
        assert "--endpoint" in tried
        out = table.stdout
        assert out.startswith(f"Pod {key}: RE-EVALUATION NOW (not the scheduler's recorded decision)")
        message_line = next(line for line in out.splitlines() if line.strip().startswith("Message:"))
        reevaluated = message_line.split("Message:", 1)[1].strip()
        assert _first_sentence(reevaluated) == _first_sentence(event_message), (reevaluated, event_message)
        assert "Insufficient cpu" in reevaluated
        assert "Configuration not read from ConfigMap py-scheduler/py-scheduler-config: HTTP 403" in out

        as_json = cli("explain", key, "--kubeconfig", str(user_kubeconfig), "-o", "json")
        assert as_json.returncode == 0, as_json.stderr
        doc = orjson.loads(as_json.stdout)
        assert doc["reevaluation"] is True and doc["attempts"][0]["outcome"] == "Unschedulable"
        assert doc["attempts"][0]["filter"]["NodeResourcesFit"]["reasons"]["Insufficient cpu"] >= 2

        refused = cli("explain", key, "--kubeconfig", str(user_kubeconfig), "--no-reevaluate")
        assert refused.returncode == 1 and refused.stdout == ""
        assert "HTTP 403" in refused.stderr
    finally:
        code = proc.stop()
        for path in (f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{user}",
                     f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{user}"):  # fmt: skip
            raw(api_client, "DELETE", path)
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"
