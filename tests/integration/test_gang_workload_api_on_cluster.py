"""Issue 14, upstream's own gang API: scheduling.k8s.io/v1beta1 PodGroups (v1.37; v1alpha2 in v1.36) and
pods' ``spec.schedulingGroup``, on the real control plane (the session's API server serves the beta API).

Each case runs against py-scheduler (``--feature-gates=GenericWorkload=true``) and against the real
kube-scheduler v1.37.2 started with the same gate: the same objects must give the same all-or-nothing
outcome.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from devcluster.cluster import WORKLOAD_FEATURE_GATES
from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for
from tests.integration.workload import (
    RUN_LABEL,
    list_events,
    list_pods,
    make_pod,
    scrape,
    sole_kube_scheduler,
)


@pytest.fixture(scope="module")
def schedulers(
    control_plane: Any, kubeconfig: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulerProcess]:
    """py-scheduler (profile ``py-scheduler``) and kube-scheduler (``default-scheduler``), both gated on."""
    with sole_kube_scheduler(control_plane, extra_args=[WORKLOAD_FEATURE_GATES]):
        py = SchedulerProcess(
            kubeconfig, tmp_path_factory.mktemp("gang-alpha"), extra_args=[WORKLOAD_FEATURE_GATES]
        )
        py.start()
        try:
            py.wait_ready(60)
            yield py
        finally:
            code = py.stop()
            assert code == 0, f"py-scheduler exited with {code}:\n{py.log_tail()}"


SCHEDULERS = ["py-scheduler", "default-scheduler"]
CONDITION_FIELDS = ("type", "status", "reason", "message", "lastTransitionTime")


def pod_group(api_client: Any, namespace: str, name: str, min_count: int, priority_class: str = "") -> None:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if priority_class:
        # v1.37: the members must have the PodGroup's priority (kube-scheduler's validatePodGroup).
        spec["priorityClassName"] = priority_class
    body = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }
    custom: Any = k8s.CustomObjectsApi(api_client)
    custom.create_namespaced_custom_object("scheduling.k8s.io", "v1beta1", namespace, "podgroups", body)


def scheduled_condition(api_client: Any, namespace: str, name: str) -> dict[str, Any] | None:
    custom: Any = k8s.CustomObjectsApi(api_client)
    group = custom.get_namespaced_custom_object("scheduling.k8s.io", "v1beta1", namespace, "podgroups", name)
    for condition in (group.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodGroupInitiallyScheduled":
            return dict(condition)
    return None


def member(name: str, run_id: str, scheduler: str, group: str, cpu: str) -> dict[str, Any]:
    pod = make_pod(name, run_id, cpu=cpu, scheduler_name=scheduler)
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return pod


def create(core_v1: Any, namespace: str, pods: list[dict[str, Any]]) -> None:
    for pod in pods:
        core_v1.create_namespaced_pod(namespace, body=pod, _preload_content=False)


def bound(core_v1: Any, namespace: str, prefix: str) -> int:
    return sum(
        1
        for p in list_pods(core_v1, namespace)
        if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")
    )


def nodes(api_client: Any, run_id: str, count: int, cpu: str = "4") -> None:
    create_nodes(
        api_client, [make_node(f"w{i}-{run_id}", cpu=cpu, labels={RUN_LABEL: run_id}) for i in range(count)]
    )


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_gang_that_cannot_fit_binds_nothing_and_holds_nothing_while_one_that_fits_binds_whole(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, schedulers: None, scheduler: str
) -> None:
    nodes(api_client, run_id, 2)  # 8 CPUs
    pod_group(api_client, namespace, "big", 4)  # 4 x 3 CPU: only two fit, one per node
    pod_group(api_client, namespace, "fits", 3)  # 3 x 1 CPU
    create(core_v1, namespace, [member(f"big-{i}", run_id, scheduler, "big", "3") for i in range(4)])
    create(core_v1, namespace, [member(f"fits-{i}", run_id, scheduler, "fits", "1") for i in range(3)])

    wait_for(lambda: bound(core_v1, namespace, "fits-") == 3, 60, "the gang that fits bound whole")

    def big_refused() -> bool:
        return any(
            e.get("reason") == "FailedScheduling" and e["involvedObject"]["name"].startswith("big-")
            for e in list_events(core_v1, namespace)
        )

    wait_for(big_refused, 60, "the gang that cannot fit reported unschedulable")

    # As upstream's pod group cycle says it: the members that fit wait on the group; the others ran
    # PostFilter (DefaultPreemption) in the cycle and found nothing to preempt.
    def big_messages() -> set[str]:
        return {
            e["message"]
            for e in list_events(core_v1, namespace)
            if e.get("reason") == "FailedScheduling" and e["involvedObject"]["name"].startswith("big-")
        }

    wait_for(lambda: len(big_messages()) >= 2, 60, "both kinds of FailedScheduling for the big gang")
    if scheduler == "default-scheduler":
        # KNOWN DIVERGENCE (docs/kubernetes-1.37.md, open): v1.37.2's pod group cycle stops at
        # PlacementFeasible ("minCount (4) cannot be satisfied: S scheduled, R remaining"), runs no
        # per-member PostFilter and then its PodGroupPostFilter; py-scheduler still says what v1.36.3
        # said (below). The outcome (nothing bound, nothing held) is the same.
        assert any(
            re.fullmatch(r"0/\d+ nodes are available: \d+ Insufficient cpu\.", m) for m in big_messages()
        )
        assert any(
            re.fullmatch(r"minCount \(4\) cannot be satisfied: \d scheduled, \d remaining", m)
            for m in big_messages()
        ), big_messages()
    else:
        waiting, *misfits = sorted(big_messages(), key=lambda m: not m.startswith("pod group"))
        assert waiting == (
            "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
            "one or more plugins asked to wait and no plugin rejected pod"
        ), big_messages()
        assert misfits and all(
            re.fullmatch(
                r"0/\d+ nodes are available: \d+ Insufficient cpu\. .*preemption: 0/\d+ nodes are available: "
                r"\d+ No preemption victims found for incoming pod\.",
                m,
            )
            for m in misfits
        ), big_messages()
    # Nothing of the big gang is held: two plain pods of 1.5 CPU (one per node, beside 3 x 1 CPU of
    # "fits") are placed while it keeps retrying.
    create(
        core_v1,
        namespace,
        [make_pod(f"plain-{i}", run_id, cpu="1500m", scheduler_name=scheduler) for i in range(2)],
    )
    wait_for(lambda: bound(core_v1, namespace, "plain-") == 2, 60, "plain pods bound beside the failed gang")
    # A bounded watch, not a barrier: the big gang keeps retrying with backoff, and each retry is a
    # chance to bind part of it; 5 s spans several retries (no event marks "it has retried enough").
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        assert bound(core_v1, namespace, "big-") == 0
        time.sleep(0.5)

    # Both schedulers record each group's outcome on its PodGroup, alike.
    def both_written() -> bool:
        return all(scheduled_condition(api_client, namespace, name) for name in ("fits", "big"))

    wait_for(both_written, 30, "both groups' PodGroupInitiallyScheduled")
    for name, want in (
        ("fits", ("True", "Scheduled", "")),
        ("big", ("False", "Unschedulable", "pod group is unschedulable")),
    ):
        condition = scheduled_condition(api_client, namespace, name)
        assert condition is not None, name
        got = (condition["status"], condition["reason"], condition.get("message", ""))
        if scheduler == "default-scheduler" and name == "big":
            # KNOWN DIVERGENCE (open, as above): v1.37.2 writes the pod group result's own message.
            assert got[:2] == want[:2] and got[2].startswith("minCount (4) cannot be satisfied: "), condition
            assert got[2].endswith(
                ", pod group preemption: No preemption victims found for incoming preemptor"
            )
        else:
            assert got == want, condition
        # PodGroups carry no metadata.generation here, so observedGeneration (omitempty) is absent.
        assert sorted(condition) == sorted(CONDITION_FIELDS), condition


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_members_preempt_lower_priority_pods_and_the_gang_binds_once_they_are_gone(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, schedulers: SchedulerProcess, scheduler: str
) -> None:
    """Upstream's pod group cycle runs each member's PostFilter: DefaultPreemption evicts for the members,
    the group waits for the preemption ("pod group is waiting for preemption to complete"), then binds."""
    scheduling: Any = k8s.SchedulingV1Api(api_client)
    classes = {"low": 10, "high": 1000}
    for cls, value in classes.items():
        scheduling.create_priority_class(
            body={"metadata": {"name": f"{cls}-{run_id}"}, "value": value}, _preload_content=False
        )
    try:
        nodes(api_client, run_id, 2, cpu="2")
        fill = []
        for i in range(4):  # two 1-CPU low-priority pods on each node: the cluster is full
            pod = make_pod(f"low-{i}", run_id, cpu="1")
            pod["spec"]["nodeName"] = f"w{i % 2}-{run_id}"
            pod["spec"]["priorityClassName"] = f"low-{run_id}"
            fill.append(pod)
        create(core_v1, namespace, fill)
        pod_group(api_client, namespace, "vips", 2, priority_class=f"high-{run_id}")
        members = [member(f"vip-{i}", run_id, scheduler, "vips", "1") for i in range(2)]
        for pod in members:
            pod["spec"]["priorityClassName"] = f"high-{run_id}"
        create(core_v1, namespace, members)
        wait_for(lambda: bound(core_v1, namespace, "vip-") == 2, 90, "the gang bound after preempting")
        left = [
            p["metadata"]["name"]
            for p in list_pods(core_v1, namespace)
            if p["metadata"]["name"].startswith("low-")
        ]
        if scheduler == "py-scheduler":
            assert len(left) == 2, left  # exactly the room the two members needed was made
        else:
            # The peer: its asynchronous preemption can race its own retry on a loaded machine and
            # take one more victim (seen once in CI's load, as in test_preemption_on_cluster).
            assert len(left) <= 2, left
        preempted = [e for e in list_events(core_v1, namespace) if e.get("reason") == "Preempted"]
        assert {e["involvedObject"]["name"] for e in preempted} == {f"low-{i}" for i in range(4)} - set(left)
        waited = [
            e["message"]
            for e in list_events(core_v1, namespace)
            if e.get("reason") == "FailedScheduling" and e["involvedObject"]["name"].startswith("vip-")
        ]
        assert waited, "the members' first cycle did not report"
        if scheduler == "py-scheduler":
            # Upstream's pod group metrics (GenericWorkload on): one cycle waited, a later one scheduled.
            samples = scrape(schedulers)
            for result in ("waiting_on_preemption", "scheduled"):
                key = (
                    "scheduler_podgroup_schedule_attempts_total",
                    frozenset({("result", result), ("profile", "py-scheduler")}),
                )
                assert samples.get(key, 0) >= 1, (result, sorted(k for k in samples if "podgroup" in k[0]))
    finally:
        for cls in classes:
            scheduling.delete_priority_class(f"{cls}-{run_id}", _preload_content=False)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_pods_created_before_their_pod_group_bind_once_it_is_created(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, schedulers: None, scheduler: str
) -> None:
    nodes(api_client, run_id, 2)
    create(core_v1, namespace, [member(f"early-{i}", run_id, scheduler, "late", "100m") for i in range(3)])
    # The barrier: a plain pod created after them, for the same scheduler, bound. The scheduler sees
    # pods in creation order on one watch and runs PreEnqueue as each arrives; a member let through
    # would have been queued ahead of the witness (same priority, earlier), so attempted before it.
    create(core_v1, namespace, [make_pod("witness", run_id, cpu="100m", scheduler_name=scheduler)])
    wait_for(lambda: bound(core_v1, namespace, "witness") == 1, 60, "the witness pod bound")
    assert bound(core_v1, namespace, "early-") == 0  # held by PreEnqueue: no PodGroup yet
    pod_group(api_client, namespace, "late", 3)
    # Event-driven: the PodGroup's add wakes the held pods (no 5-minute flush needed).
    wait_for(
        lambda: bound(core_v1, namespace, "early-") == 3, 15, "the gang bound after its PodGroup appeared"
    )


def test_py_scheduler_without_the_gates_refuses_group_members_by_name(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, kubeconfig: str, tmp_path: Path
) -> None:
    """Gates off in py-scheduler while the API server keeps the field: the pod is refused naming the
    field and the flags, never scheduled as if it had no group."""
    nodes(api_client, run_id, 1)
    pod_group(api_client, namespace, "g", 1)
    # Its own profile: the module's gated py-scheduler may still run under "py-scheduler".
    config = scheduler_config(scheduler_name="py-scheduler-gates-off")
    proc = SchedulerProcess(kubeconfig, tmp_path, config=config, name="py-scheduler-gates-off").start()
    try:
        proc.wait_ready(60)
        create(core_v1, namespace, [member("solo", run_id, "py-scheduler-gates-off", "g", "100m")])

        def refused() -> list[str]:
            return [
                e.get("message", "")
                for e in list_events(core_v1, namespace)
                if e.get("reason") == "FailedScheduling" and e["involvedObject"]["name"] == "solo"
            ]

        messages = wait_for(refused, 30, "the group member refused")
        assert "pod uses schedulingGroup" in messages[0]
        assert "--feature-gates=GenericWorkload=true" in messages[0]
        assert bound(core_v1, namespace, "solo") == 0
    finally:
        proc.stop()
