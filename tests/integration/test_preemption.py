"""Issue 13 on the real control plane: priority and preemption with kube-controller-manager running (its
disruption controller fills PodDisruptionBudget status, which preemption reads).

Pods get their priority from PriorityClasses (the Priority admission plugin refuses a bare
``spec.priority``); victims have ``terminationGracePeriodSeconds: 0``, so a delete removes them at once
(there is no kubelet).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, wait_for
from tests.integration.workload import RUN_LABEL, list_events, list_pods, make_pod, new_run_id


@pytest.fixture
def run_id(core_v1: Any, api_client: Any) -> Iterator[str]:
    from kubernetes.client import SchedulingV1Api

    rid = new_run_id()
    scheduling = SchedulingV1Api(api_client)
    for name, value, policy in (("low", 10, None), ("high", 1000, None), ("never", 1000, "Never")):
        body: dict[str, Any] = {"metadata": {"name": f"{name}-{rid}"}, "value": value}
        if policy:
            body["preemptionPolicy"] = policy
        scheduling.create_priority_class(body=body, _preload_content=False)
    yield rid
    core_v1.delete_collection_node(label_selector=f"{RUN_LABEL}={rid}", _preload_content=False)
    for name in ("low", "high", "never"):
        scheduling.delete_priority_class(f"{name}-{rid}", _preload_content=False)


@pytest.fixture
def scheduler(kubeconfig: str, tmp_path: Path, controller_manager: Any) -> Iterator[SchedulerProcess]:
    proc = SchedulerProcess(kubeconfig, tmp_path).start()
    try:
        proc.wait_ready(60)
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"


def _pod(name: str, run_id: str, cls: str, cpu: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    pod = make_pod(name, run_id, cpu=cpu, memory="64Mi")
    pod["spec"]["priorityClassName"] = f"{cls}-{run_id}"
    pod["metadata"]["labels"].update(labels or {})
    return pod


def _nodes(api_client: Any, run_id: str, count: int) -> list[str]:
    names = [f"pre{i}-{run_id}" for i in range(count)]
    create_nodes(api_client, [make_node(n, cpu="2", labels={RUN_LABEL: run_id}) for n in names])
    return names


def _create(core_v1: Any, namespace: str, pod: dict[str, Any]) -> None:
    core_v1.create_namespaced_pod(namespace, body=pod, _preload_content=False)


def _by_name(core_v1: Any, namespace: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in list_pods(core_v1, namespace)}


def _events(core_v1: Any, namespace: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in list_events(core_v1, namespace) if e["reason"] == reason]


def _fill(core_v1: Any, namespace: str, run_id: str, nodes: list[str], labels_of: Any = None) -> None:
    """Two 1-cpu low-priority pods per 2-cpu node: a full cluster."""
    for i in range(2 * len(nodes)):
        _create(core_v1, namespace, _pod(f"low-{i}", run_id, "low", "1", labels_of(i) if labels_of else None))

    def all_bound() -> bool:
        pods = _by_name(core_v1, namespace).values()
        return len(pods) == 2 * len(nodes) and all(p["spec"].get("nodeName") for p in pods)

    wait_for(all_bound, 60, "low-priority pods bound")


def test_high_priority_pod_preempts_one_victim_and_binds_there(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    nodes = _nodes(api_client, run_id, 2)
    _fill(core_v1, namespace, run_id, nodes)
    before = {n: p["spec"]["nodeName"] for n, p in _by_name(core_v1, namespace).items()}
    _create(core_v1, namespace, _pod("vip", run_id, "high", "1"))

    def vip_bound() -> dict[str, Any] | None:
        vip = _by_name(core_v1, namespace).get("vip")
        return vip if vip and vip["spec"].get("nodeName") else None

    vip = wait_for(vip_bound, 60, "the preemptor bound")
    pods = _by_name(core_v1, namespace)
    gone = sorted(set(before) - set(pods))
    assert len(gone) == 1, gone  # the minimal set: one 1-cpu victim
    assert vip["spec"]["nodeName"] == before[gone[0]]
    [preempted] = _events(core_v1, namespace, "Preempted")
    assert preempted["involvedObject"]["name"] == gone[0]
    assert (
        preempted["message"] == f"Preempted by pod {vip['metadata']['uid']} on node {vip['spec']['nodeName']}"
    )
    failed = [
        e for e in _events(core_v1, namespace, "FailedScheduling") if e["involvedObject"]["name"] == "vip"
    ]
    assert failed and "0/" in failed[0]["message"] and "Insufficient cpu" in failed[0]["message"]


def test_preemption_policy_never_evicts_nothing_and_waits(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    nodes = _nodes(api_client, run_id, 2)
    _fill(core_v1, namespace, run_id, nodes)
    _create(core_v1, namespace, _pod("polite", run_id, "never", "1"))

    def reported() -> str | None:
        for e in _events(core_v1, namespace, "FailedScheduling"):
            if e["involvedObject"]["name"] == "polite":
                return str(e["message"])
        return None

    message = wait_for(reported, 60, "FailedScheduling for the preemptionPolicy=Never pod")
    # Upstream's text, then (py-scheduler's addition) the nearest misses.
    assert "preemption: not eligible due to preemptionPolicy=Never.." in message, message
    pods = _by_name(core_v1, namespace)
    assert len(pods) == 5 and not pods["polite"]["spec"].get("nodeName")
    assert not _events(core_v1, namespace, "Preempted")


def test_pdb_protected_pods_are_not_chosen_when_others_will_do(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    from kubernetes.client import PolicyV1Api

    nodes = _nodes(api_client, run_id, 2)
    # Pods 0 and 2 land... wherever; protect half of them by label and choose by label, not node.
    _fill(core_v1, namespace, run_id, nodes, labels_of=lambda i: {"app": "guarded" if i % 2 == 0 else "free"})
    pods = _by_name(core_v1, namespace)
    # Whatever the placement, one unprotected pod makes room: the victim must be one of those.
    PolicyV1Api(api_client).create_namespaced_pod_disruption_budget(
        namespace,
        body={
            "metadata": {"name": "guard"},
            # minAvailable works for bare pods (maxUnavailable needs a controller's scale); with no
            # kubelet no pod is Ready, so the controller computes disruptionsAllowed 0 either way.
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}},
        },
        _preload_content=False,
    )

    def pdb_observed() -> bool:
        pdb = PolicyV1Api(api_client).read_namespaced_pod_disruption_budget("guard", namespace)
        return (
            pdb.status is not None and pdb.status.observed_generation == 1 and pdb.status.expected_pods == 2
        )

    wait_for(pdb_observed, 60, "the disruption controller to compute the PDB status")
    _create(core_v1, namespace, _pod("vip", run_id, "high", "1"))

    def vip_bound() -> bool:
        vip = _by_name(core_v1, namespace).get("vip")
        return bool(vip and vip["spec"].get("nodeName"))

    wait_for(vip_bound, 60, "the preemptor bound")
    gone = set(pods) - set(_by_name(core_v1, namespace))
    assert len(gone) == 1
    assert pods[gone.pop()]["metadata"]["labels"]["app"] == "free"
