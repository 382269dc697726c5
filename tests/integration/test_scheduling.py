"""py-scheduler end to end on the real control plane, with the real kube-scheduler running beside it."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import REPO, SchedulerProcess, scheduler_config, wait_for
from tests.integration.workload import (
    RUN_LABEL,
    create_pods,
    list_events,
    list_nodes,
    list_pods,
    make_pod,
    overcommitted_nodes,
    sole_kube_scheduler,
)


@pytest.fixture(scope="module")
def kube_scheduler(control_plane: Any) -> Iterator[Any]:
    with sole_kube_scheduler(control_plane) as handle:
        yield handle


@pytest.fixture
def scheduler(kubeconfig: str, tmp_path: Path) -> Iterator[SchedulerProcess]:
    proc = SchedulerProcess(kubeconfig, tmp_path).start()
    try:
        proc.wait_ready()
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, (
            f"py-scheduler exited with {code} on SIGTERM; log {proc.log_path}:\n{proc.log_tail()}"
        )


def bound(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if p["spec"].get("nodeName")]


def events_for(core_v1: Any, namespace: str, pod: str, reason: str) -> list[dict[str, Any]]:
    return [
        e for e in list_events(core_v1, namespace)
        if e["involvedObject"]["name"] == pod and e["reason"] == reason
    ]  # fmt: skip


def _scheduled_events_if_complete(core_v1: Any, namespace: str, want: int) -> Counter[str] | None:
    scheduled = Counter(
        e["involvedObject"]["name"]
        for e in list_events(core_v1, namespace)
        if e["reason"] == "Scheduled" and e["involvedObject"]["name"].startswith("p-")
    )
    return scheduled if len(scheduled) >= want else None


def condition(pod: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond["type"] == kind:
            return dict(cond)
    return None


def test_binds_300_pods_on_50_heterogeneous_nodes_without_overcommit(
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    kube_scheduler: Any,
    scheduler: SchedulerProcess,
) -> None:
    sizes = [("2", "4Gi", 20), ("4", "8Gi", 30), ("8", "16Gi", 110), ("1", "2Gi", 10)]
    nodes = []
    for i in range(50):
        cpu, memory, max_pods = sizes[i % len(sizes)]
        taints = ["dedicated=gpu:NoSchedule"] if i % 10 == 0 else None
        nodes.append(make_node(f"n-{run_id}-{i}", cpu=cpu, memory=memory, pods=max_pods,
                               labels={RUN_LABEL: run_id, "topology.kubernetes.io/zone": f"z{i % 3}"},
                               taints=taints))  # fmt: skip
    create_nodes(api_client, nodes)
    toleration = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    cpus, memories = ["100m", "250m", "500m"], ["64Mi", "256Mi", "512Mi"]
    ours = [
        make_pod(f"p-{i}", run_id, cpu=cpus[i % 3], memory=memories[i % 3],
                 tolerations=toleration if i % 7 == 0 else None)
        for i in range(300)
    ]  # fmt: skip
    theirs = [make_pod(f"d-{i}", run_id, cpu="200m", memory="256Mi", scheduler_name="default-scheduler")
              for i in range(40)]  # fmt: skip
    create_pods(core_v1, namespace, theirs + ours)

    def all_bound() -> bool:
        return len(bound(list_pods(core_v1, namespace))) == len(ours) + len(theirs)

    wait_for(all_bound, 120, "all 340 pods bound")
    pods = list_pods(core_v1, namespace)
    assert overcommitted_nodes(list_nodes(core_v1, run_id), pods) == []
    tainted = {n["metadata"]["name"] for n in nodes if n["spec"].get("taints")}
    for pod in pods:
        if pod["spec"]["nodeName"] in tainted:
            assert pod["spec"].get("tolerations"), f"{pod['metadata']['name']} landed on a tainted node"
    # Events are written off the scheduling path, so they may trail the bindings a little.
    scheduled = wait_for(
        lambda: _scheduled_events_if_complete(core_v1, namespace, 300), 20, "Scheduled events"
    )
    assert all(scheduled[f"p-{i}"] == 1 for i in range(300)), "each of our pods has one Scheduled event"
    _, metrics = scheduler.get("/metrics")
    assert 'scheduler_schedule_attempts_total{profile="py-scheduler",result="scheduled"}' in metrics


def test_pods_for_other_schedulers_are_left_alone(
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    kube_scheduler: Any,
    scheduler: SchedulerProcess,
) -> None:
    create_nodes(api_client, [make_node(f"n-{run_id}", labels={RUN_LABEL: run_id})])
    create_pods(core_v1, namespace, [
        make_pod("by-default", run_id, scheduler_name="default-scheduler"),
        make_pod("by-nobody", run_id, scheduler_name="nobody-scheduler"),
        make_pod("by-us", run_id),
    ])  # fmt: skip
    wait_for(lambda: len(bound(list_pods(core_v1, namespace))) == 2, 30, "two pods bound")
    pods = {p["metadata"]["name"]: p for p in list_pods(core_v1, namespace)}
    assert not pods["by-nobody"]["spec"].get("nodeName")
    assert condition(pods["by-nobody"], "PodScheduled") is None, "nobody touched the orphan pod"

    def scheduled_sources() -> dict[str, str] | None:
        sources = {
            e["involvedObject"]["name"]: e.get("reportingComponent") or e["source"].get("component")
            for e in list_events(core_v1, namespace) if e["reason"] == "Scheduled"
        }  # fmt: skip
        return sources if len(sources) == 2 else None

    # Events are written off the binding path, so they may trail the binds.
    sources = wait_for(scheduled_sources, 20, "two Scheduled events")
    assert sources == {"by-default": "default-scheduler", "by-us": "py-scheduler"}


def test_unschedulable_pod_reports_reason_and_binds_when_a_node_arrives(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    create_nodes(
        api_client, [make_node(f"n-{run_id}-{i}", cpu="2", labels={RUN_LABEL: run_id}) for i in range(3)]
    )
    create_pods(core_v1, namespace, [make_pod("big", run_id, cpu="6")])

    def failed_event() -> list[dict[str, Any]]:
        return events_for(core_v1, namespace, "big", "FailedScheduling")

    events = wait_for(failed_event, 20, "FailedScheduling event")
    # Nodes of other tests are excluded by the nodeSelector, so the message counts them as mismatches.
    message = events[0]["message"]
    assert "nodes are available:" in message and "3 Insufficient cpu" in message, message
    pod = wait_for(
        lambda: next((p for p in list_pods(core_v1, namespace) if condition(p, "PodScheduled")), None),
        10, "PodScheduled condition",
    )  # fmt: skip
    cond = condition(pod, "PodScheduled")
    assert cond is not None and cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert "Insufficient cpu" in cond["message"]

    create_nodes(api_client, [make_node(f"n-{run_id}-big", cpu="8", labels={RUN_LABEL: run_id})])
    # Event-driven: well under the 5-minute unschedulable flush (and within one max backoff).
    pod = wait_for(lambda: bound(list_pods(core_v1, namespace)), 12, "the big pod bound after NodeAdd")[0]
    assert pod["spec"]["nodeName"] == f"n-{run_id}-big"


def test_deleting_a_bound_pod_makes_room_for_a_pending_one(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    create_nodes(api_client, [make_node(f"n-{run_id}", cpu="2", labels={RUN_LABEL: run_id})])
    create_pods(core_v1, namespace, [make_pod("first", run_id, cpu="1500m")])
    wait_for(lambda: bound(list_pods(core_v1, namespace)), 20, "first pod bound")
    create_pods(core_v1, namespace, [make_pod("second", run_id, cpu="1500m")])
    wait_for(lambda: events_for(core_v1, namespace, "second", "FailedScheduling"), 20, "second pod rejected")
    core_v1.delete_namespaced_pod("first", namespace, grace_period_seconds=0, _preload_content=False)
    pod = wait_for(
        lambda: [p for p in bound(list_pods(core_v1, namespace)) if p["metadata"]["name"] == "second"],
        12, "second pod bound after the first was deleted",
    )[0]  # fmt: skip
    assert pod["spec"]["nodeName"] == f"n-{run_id}"


def test_a_bound_pod_requesting_past_int64_does_not_stop_scheduling(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    """The API server keeps ``cpu: 1e100`` (as "10e99") on a pod created with spec.nodeName; counted on
    its node, it once made every scheduling cycle raise OverflowError."""
    full, free = f"n-{run_id}-full", f"n-{run_id}-free"
    create_nodes(api_client, [make_node(n, cpu="4", labels={RUN_LABEL: run_id}) for n in (full, free)])
    huge = make_pod("huge", run_id, cpu="1e100", memory="1e100", scheduler_name="nobody")
    huge["spec"]["nodeName"] = full
    create_pods(core_v1, namespace, [huge])
    wait_for(
        lambda: any(p["metadata"]["name"] == "huge" for p in list_pods(core_v1, namespace)), 10, "huge pod"
    )
    create_pods(core_v1, namespace, [make_pod(f"small-{i}", run_id, cpu="1") for i in range(3)])

    def all_bound() -> list[dict[str, Any]] | None:
        pods = bound(list_pods(core_v1, namespace))
        return pods if len(pods) == 4 else None

    pods = wait_for(all_bound, 20, "the small pods bound")
    assert {p["spec"]["nodeName"] for p in pods if p["metadata"]["name"] != "huge"} == {free}


def test_sigkill_mid_run_then_restart_binds_every_pod_once(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, kubeconfig: str, tmp_path: Path
) -> None:
    create_nodes(api_client, [make_node(f"n-{run_id}-{i}", labels={RUN_LABEL: run_id}) for i in range(10)])
    # A low client QPS keeps the run long enough for the kill to land in the middle of it.
    slow = scheduler_config(extra={"clientConnection": {"qps": 40, "burst": 40}})
    first = SchedulerProcess(kubeconfig, tmp_path, slow, name="first").start()
    first.wait_ready()
    create_pods(core_v1, namespace, [make_pod(f"p-{i}", run_id) for i in range(200)])
    wait_for(lambda: len(bound(list_pods(core_v1, namespace))) >= 20, 60, "some pods bound")
    first.kill()
    assert first.proc is not None and first.proc.returncode == -9
    before = len(bound(list_pods(core_v1, namespace)))
    second = SchedulerProcess(kubeconfig, tmp_path, name="second").start()
    try:
        second.wait_ready()
        wait_for(lambda: len(bound(list_pods(core_v1, namespace))) == 200, 90, "all 200 pods bound")
    finally:
        assert second.stop() == 0, second.log_tail()
    # The killed process may have bound pods without writing their events; none may have two.
    scheduled = Counter(
        e["involvedObject"]["name"] for e in list_events(core_v1, namespace) if e["reason"] == "Scheduled"
    )
    assert max(scheduled.values()) == 1, "a pod was bound twice"
    assert before < 200, "the kill landed mid-run"
    assert overcommitted_nodes(list_nodes(core_v1, run_id), list_pods(core_v1, namespace)) == []


def test_bad_config_exits_1_and_names_the_field(tmp_path: Path, kubeconfig: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "py-scheduler", "plugins": {"score": {"enabled": [
            {"name": "NodeResourcesFit", "weight": -1}]}}}],
    }))  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "scheduler", "--config", str(bad), "--kubeconfig", kubeconfig],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "profiles[0].plugins.score.enabled[0].weight" in result.stderr

    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                       "percentageOfNodesToScor: 10\n")  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "scheduler", "--config", str(unknown), "--kubeconfig", kubeconfig],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "percentageOfNodesToScor" in result.stderr
