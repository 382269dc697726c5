"""Issue 14 on the real control plane: Coscheduling with scheduler-plugins' PodGroup CRD.

The CRD is applied from deploy/components/podgroup-crd; py-scheduler runs with Coscheduling enabled.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for
from tests.integration.workload import RUN_LABEL, list_pods, make_pod, new_run_id

CRD = Path(__file__).resolve().parents[2] / "deploy/components/podgroup-crd/crd.yaml"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PERMIT_TIMEOUT = 5


@pytest.fixture(scope="module")
def crd(api_client: Any) -> None:
    ext: Any = k8s.ApiextensionsV1Api(api_client)
    body = yaml.safe_load(CRD.read_text())
    try:
        ext.create_custom_resource_definition(body=body, _preload_content=False)
    except k8s.ApiException as err:
        if err.status != 409:
            raise

    def established() -> bool:
        got = ext.read_custom_resource_definition("podgroups.scheduling.x-k8s.io")
        return any(c.type == "Established" and c.status == "True" for c in got.status.conditions or [])

    wait_for(established, 30, "the PodGroup CRD to be established")


@pytest.fixture
def run_id(core_v1: Any) -> Iterator[str]:
    rid = new_run_id()
    yield rid
    core_v1.delete_collection_node(label_selector=f"{RUN_LABEL}={rid}", _preload_content=False)


@pytest.fixture
def scheduler(kubeconfig: str, tmp_path: Path, crd: None) -> Iterator[SchedulerProcess]:
    proc = gang_scheduler(kubeconfig, tmp_path).start()
    try:
        proc.wait_ready(60)
        yield proc
    finally:
        proc.stop()


def gang_scheduler(kubeconfig: str, tmp_path: Path) -> SchedulerProcess:
    config = scheduler_config(
        profile_extra={
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
            },
            "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": PERMIT_TIMEOUT}}],
        }
    )
    return SchedulerProcess(kubeconfig, tmp_path, config=config)


def nodes(api_client: Any, run_id: str, count: int, cpu: str = "4") -> None:
    create_nodes(
        api_client, [make_node(f"g{i}-{run_id}", cpu=cpu, labels={RUN_LABEL: run_id}) for i in range(count)]
    )


def pod_group(api_client: Any, namespace: str, name: str, min_member: int, **spec: Any) -> None:
    custom: Any = k8s.CustomObjectsApi(api_client)
    body = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, **spec},
    }
    custom.create_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups", body)


def member(name: str, run_id: str, group: str, cpu: str) -> dict[str, Any]:
    pod = make_pod(name, run_id, cpu=cpu)
    pod["metadata"]["labels"][GROUP_LABEL] = group
    return pod


def create(core_v1: Any, namespace: str, pods: list[dict[str, Any]]) -> None:
    for pod in pods:
        core_v1.create_namespaced_pod(namespace, body=pod, _preload_content=False)


def bound_by_group(core_v1: Any, namespace: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for pod in list_pods(core_v1, namespace):
        group = pod["metadata"].get("labels", {}).get(GROUP_LABEL, "")
        if pod["spec"].get("nodeName"):
            counts[group] = counts.get(group, 0) + 1
    return counts


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_gangs_each_needing_70_percent_never_deadlock(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess, seed: int
) -> None:
    nodes(api_client, run_id, 4)  # 16 CPUs; a gang of 8 x 1400m needs 11.2 (70%)
    pod_group(api_client, namespace, "a", 8)
    pod_group(api_client, namespace, "b", 8)
    pods = [member(f"{g}-{i}", run_id, g, "1400m") for g in "ab" for i in range(8)]
    random.Random(seed).shuffle(pods)
    halves = [pods[::2], pods[1::2]]
    threads = [threading.Thread(target=create, args=(core_v1, namespace, half)) for half in halves]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    seen: list[dict[str, int]] = []

    def one_gang_whole() -> bool:
        seen.append(bound_by_group(core_v1, namespace))
        return 8 in seen[-1].values()

    wait_for(one_gang_whole, 60, "one gang fully bound")
    winner = next(g for g, n in seen[-1].items() if n == 8)
    loser = "b" if winner == "a" else "a"
    # The loser never held a bound pod, at any poll: no partial binding, no deadlock.
    assert all(counts.get(loser, 0) == 0 for counts in seen), seen

    core_v1.delete_collection_namespaced_pod(
        namespace, label_selector=f"{GROUP_LABEL}={winner}", grace_period_seconds=0, _preload_content=False
    )
    wait_for(lambda: bound_by_group(core_v1, namespace).get(loser, 0) == 8, 60, "the second gang bound")
    assert bound_by_group(core_v1, namespace).get(winner, 0) == 0


def test_pods_created_before_their_pod_group_bind_when_it_appears(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    nodes(api_client, run_id, 2)
    create(core_v1, namespace, [member(f"early-{i}", run_id, "late", "100m") for i in range(3)])
    wait_for(lambda: len(list_pods(core_v1, namespace)) == 3, 10, "the pods created")
    assert bound_by_group(core_v1, namespace) == {}
    pod_group(api_client, namespace, "late", 3)
    # Event-driven: the PodGroup add wakes the held pods (the queue's own flush is 5 minutes).
    wait_for(lambda: bound_by_group(core_v1, namespace).get("late", 0) == 3, 10, "the gang bound")


def test_a_gang_that_cannot_complete_releases_what_it_reserved(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    nodes(api_client, run_id, 2)  # 8 CPUs
    pod_group(api_client, namespace, "stuck", 4)
    pods = [member(f"stuck-{i}", run_id, "stuck", "2") for i in range(3)]
    never = member("stuck-3", run_id, "stuck", "2")
    never["spec"]["nodeSelector"]["no-such-label"] = "x"  # the 4th member never fits
    create(core_v1, namespace, [*pods, never])
    # Meanwhile a pod that needs 6 CPUs (only possible once the gang holds nothing) is scheduled.
    big = [make_pod(f"solo-{i}", run_id, cpu="3500m") for i in range(2)]
    create(core_v1, namespace, big)
    wait_for(
        lambda: all(
            p["spec"].get("nodeName")
            for p in list_pods(core_v1, namespace)
            if p["metadata"]["name"].startswith("solo")
        ),
        PERMIT_TIMEOUT * 4,
        "the solo pods bound",
    )
    assert bound_by_group(core_v1, namespace).get("stuck", 0) == 0
