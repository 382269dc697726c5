"""Issue 14 on the real control plane: Coscheduling with scheduler-plugins' PodGroup CRD.

The CRD is applied from deploy/components/podgroup-crd; py-scheduler runs with Coscheduling enabled.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for
from tests.integration.workload import (
    RUN_LABEL,
    create_pods,
    list_events,
    list_nodes,
    list_pods,
    make_pod,
    new_run_id,
)

CRD = Path(__file__).resolve().parents[2] / "deploy/components/podgroup-crd/crd.yaml"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PERMIT_TIMEOUT = 5
# Keeps a deleted pod (with its deletionTimestamp) until the test lets it go.
FINALIZER = "example.com/py-scheduler-test"


CRD_NAME = "podgroups.scheduling.x-k8s.io"


def pod_groups_served(api_client: Any) -> bool:
    try:
        found = k8s.CustomObjectsApi(api_client).get_api_resources("scheduling.x-k8s.io", "v1alpha1")
    except k8s.ApiException as err:
        if err.status == 404:
            return False
        raise
    return any(r.name == "podgroups" for r in found.resources)


def install_crd(api_client: Any) -> None:
    ext: Any = k8s.ApiextensionsV1Api(api_client)
    body = yaml.safe_load(CRD.read_text())
    try:
        ext.create_custom_resource_definition(body=body, _preload_content=False)
    except k8s.ApiException as err:
        if err.status != 409:
            raise

    def established() -> bool:
        got = ext.read_custom_resource_definition(CRD_NAME)
        return any(c.type == "Established" and c.status == "True" for c in got.status.conditions or [])

    wait_for(established, 30, "the PodGroup CRD to be established")
    wait_for(lambda: pod_groups_served(api_client), 30, "PodGroups served")


def test_coscheduling_without_the_crd_fails_start_up_in_one_line(
    api_client: Any, kubeconfig: str, tmp_path: Path
) -> None:
    """A user who enables Coscheduling but forgot the CRD gets an exit (a CrashLoopBackOff in a
    cluster) and one line saying what to install, not a scheduler stuck waiting for an informer."""
    ext: Any = k8s.ApiextensionsV1Api(api_client)
    had_crd = pod_groups_served(api_client)
    if had_crd:
        ext.delete_custom_resource_definition(CRD_NAME)
        wait_for(lambda: not pod_groups_served(api_client), 60, "the PodGroup CRD gone")
    proc = gang_scheduler(kubeconfig, tmp_path).start()
    try:
        assert proc.proc is not None
        code = proc.proc.wait(30)
        assert code == 1, proc.log_tail()
        lines = [ln for ln in proc.log_path.read_text().splitlines() if "PodGroup CRD is not installed" in ln]
        assert len(lines) == 1, proc.log_tail()
        assert "deploy/components/podgroup-crd" in lines[0]
    finally:
        proc.stop()
        if had_crd:
            install_crd(api_client)


@pytest.fixture(scope="module")
def crd(api_client: Any) -> None:
    install_crd(api_client)


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


def gang_scheduler(kubeconfig: str, tmp_path: Path, **args: Any) -> SchedulerProcess:
    config = scheduler_config(
        profile_extra={
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
            },
            "pluginConfig": [
                {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": PERMIT_TIMEOUT, **args}}
            ],
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


def get_pod_group(api_client: Any, namespace: str, name: str) -> dict[str, Any]:
    custom: Any = k8s.CustomObjectsApi(api_client)
    got: dict[str, Any] = custom.get_namespaced_custom_object(
        "scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups", name
    )
    return got


def set_phase(core_v1: Any, namespace: str, name: str, phase: str) -> None:
    """What a kubelet would report (the devcluster has none)."""
    core_v1.patch_namespaced_pod_status(name, namespace, {"status": {"phase": phase}})


def test_pod_group_status_follows_its_pods(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    nodes(api_client, run_id, 2)
    pod_group(api_client, namespace, "st", 3)

    def status() -> dict[str, Any]:
        got: dict[str, Any] = get_pod_group(api_client, namespace, "st").get("status") or {}
        return got

    wait_for(lambda: status().get("phase") == "Pending", 10, "the new group Pending")
    names = [f"st-{i}" for i in range(3)]
    create(core_v1, namespace, [member(n, run_id, "st", "100m") for n in names])
    wait_for(lambda: bound_by_group(core_v1, namespace).get("st", 0) == 3, 20, "the gang bound")
    wait_for(lambda: status().get("phase") == "Scheduling", 10, "Scheduling once minMember pods exist")
    assert status().get("scheduleStartTime"), status()
    for n in names:
        set_phase(core_v1, namespace, n, "Running")
    wait_for(lambda: status().get("phase") == "Running" and status().get("running") == 3, 10, "Running")
    # Finished pods leave the scheduler's own pod watch; the controller's informer still counts them.
    for n in names[:2]:
        set_phase(core_v1, namespace, n, "Succeeded")
    wait_for(lambda: (status().get("running"), status().get("succeeded")) == (1, 2), 10, "counts updated")
    assert status().get("phase") == "Running"
    set_phase(core_v1, namespace, names[2], "Succeeded")
    wait_for(lambda: status().get("phase") == "Finished", 10, "Finished")
    # Counts of zero are no field, as scheduler-plugins' controller leaves them (omitempty).
    assert (status().get("running"), status().get("succeeded"), status().get("failed")) == (None, 3, None)


def debug_outcome(proc: SchedulerProcess, namespace: str, name: str) -> str:
    code, body = proc.get(f"/debug/pods/{namespace}/{name}")
    return body if code == 200 else ""


def waiting_at_permit(proc: SchedulerProcess, namespace: str, names: list[str]) -> bool:
    return all("WaitingOnPermit" in debug_outcome(proc, namespace, n) for n in names)


def bind_latencies(core_v1: Any, namespace: str, run_id: str, batch: str, count: int) -> list[float]:
    """Creates ``count`` plain pods at once; per pod, seconds from its create call to its binding seen."""
    pods = [make_pod(f"{batch}-{i}", run_id, cpu="10m") for i in range(count)]
    for pod in pods:
        pod["metadata"]["labels"]["batch"] = batch
    created: dict[str, float] = {}

    def create_some(chunk: list[dict[str, Any]]) -> None:
        for pod in chunk:
            core_v1.create_namespaced_pod(namespace, body=pod, _preload_content=False)
            created[pod["metadata"]["name"]] = time.monotonic()

    threads = [threading.Thread(target=create_some, args=(pods[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    bound: dict[str, float] = {}
    deadline = time.monotonic() + 120
    while len(bound) < count and time.monotonic() < deadline:
        resp = core_v1.list_namespaced_pod(namespace, label_selector=f"batch={batch}", _preload_content=False)
        now = time.monotonic()
        for pod in orjson_items(resp.data):
            if pod["spec"].get("nodeName"):
                bound.setdefault(pod["metadata"]["name"], now)
        time.sleep(POLL)
    for t in threads:
        t.join()
    assert len(bound) == count, f"{len(bound)}/{count} of {batch} bound"
    return sorted(bound[n] - created[n] for n in bound)


def orjson_items(data: bytes) -> list[dict[str, Any]]:
    import orjson

    items: list[dict[str, Any]] = orjson.loads(data)["items"]
    return items


POLL = 0.05


def test_pods_keep_binding_while_500_wait_at_permit(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, kubeconfig: str, tmp_path: Path, crd: None
) -> None:
    """500 members held at Permit are timers, not threads or cycles: plain pods created meanwhile all
    bind, and the 500 are still waiting afterwards. (How much they slow other pods is a speed question
    for the benchmarks; the latencies are printed for the curious.)"""
    # podGroupRejectPercentage 100: the member that never fits does not release the waiting 500.
    proc = gang_scheduler(kubeconfig, tmp_path, podGroupRejectPercentage=100).start()
    try:
        proc.wait_ready(60)
        nodes(api_client, run_id, 10)  # 1,100 pod slots
        others = 100
        pod_group(api_client, namespace, "big", 501, scheduleTimeoutSeconds=600)
        waiters = [f"big-{i:03d}" for i in range(500)]
        never = member("zz-never", run_id, "big", "10m")
        never["spec"]["nodeSelector"]["no-such-label"] = "x"
        create_pods(core_v1, namespace, [*(member(n, run_id, "big", "10m") for n in waiters), never])
        wait_for(lambda: waiting_at_permit(proc, namespace, waiters[::25]), 120, "a sample waiting at Permit")
        wait_for(lambda: waiting_at_permit(proc, namespace, waiters), 60, "all 500 waiting at Permit")

        # bind_latencies fails unless every one of the plain pods binds.
        loaded = bind_latencies(core_v1, namespace, run_id, "loaded", others)
        assert len(loaded) == others
        assert bound_by_group(core_v1, namespace).get("big", 0) == 0
        # Still waiting afterwards: the plain pods bound beside 500 waiters.
        assert waiting_at_permit(proc, namespace, waiters)
        proc.assert_running()
    finally:
        proc.stop()
    print(f"bind latency with 500 at Permit: p50 {statistics.median(loaded):.3f}s, "
          f"p90 {loaded[int(0.9 * len(loaded))]:.3f}s")  # fmt: skip


def test_killed_while_a_gang_waits_at_permit_the_gang_binds_whole_or_not_at_all(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, kubeconfig: str, tmp_path: Path, crd: None
) -> None:
    nodes(api_client, run_id, 2)
    pod_group(api_client, namespace, "kill", 4, scheduleTimeoutSeconds=120)
    ready = [f"kill-{i}" for i in range(3)]
    last = member("kill-3", run_id, "kill", "100m")
    last["spec"]["nodeSelector"]["gang-ready"] = "yes"  # fits nowhere until a node gets the label
    create(core_v1, namespace, [*(member(n, run_id, "kill", "100m") for n in ready), last])

    (tmp_path / "first").mkdir()
    # podGroupRejectPercentage 100: the member that does not fit leaves the others waiting at Permit
    # (with the default 10, its PostFilter releases them and they wait in the queue for an event).
    first = gang_scheduler(kubeconfig, tmp_path / "first", podGroupRejectPercentage=100).start()
    try:
        first.wait_ready(60)
        wait_for(lambda: waiting_at_permit(first, namespace, ready), 30, "3 members waiting at Permit")
        first.kill()  # SIGKILL: no shutdown, no Unreserve
    finally:
        first.stop()
    assert bound_by_group(core_v1, namespace).get("kill", 0) == 0

    second_dir = tmp_path / "second"
    second_dir.mkdir()
    second = gang_scheduler(kubeconfig, second_dir, podGroupRejectPercentage=100).start()
    try:
        second.wait_ready(60)
        wait_for(lambda: waiting_at_permit(second, namespace, ready), 30, "the restarted scheduler's waiters")
        # Not at all, while the gang cannot complete (longer than the Permit timeout of the plugin args).
        seen = []
        end = time.monotonic() + PERMIT_TIMEOUT + 2
        while time.monotonic() < end:
            seen.append(bound_by_group(core_v1, namespace).get("kill", 0))
            time.sleep(0.2)
        assert set(seen) == {0}, seen
        node = f"g0-{run_id}"
        core_v1.patch_node(node, {"metadata": {"labels": {"gang-ready": "yes"}}})
        # Whole, once it can.
        wait_for(lambda: bound_by_group(core_v1, namespace).get("kill", 0) == 4, 30, "the whole gang bound")
        second.assert_running()
    finally:
        second.stop()


def test_a_member_whose_node_is_deleted_while_it_waits_at_permit_is_not_bound_there(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, kubeconfig: str, tmp_path: Path, crd: None
) -> None:
    """The API server stores a Binding to a node that no longer exists (it does not check), and the pod
    would sit there until the pod garbage collector deleted it. A member waiting at Permit whose node
    is deleted meanwhile gets no Binding when the gang completes: it is retried and binds on a node
    that exists, so the whole gang ends bound on live nodes."""
    doomed, spare = f"doomed-{run_id}", f"spare-{run_id}"
    create_nodes(api_client, [make_node(doomed, labels={RUN_LABEL: run_id})])
    pod_group(api_client, namespace, "moved", 2, scheduleTimeoutSeconds=120)
    last = member("moved-1", run_id, "moved", "100m")
    last["spec"]["nodeSelector"]["gang-ready"] = "yes"  # fits only on the spare node, added later
    create(core_v1, namespace, [member("moved-0", run_id, "moved", "100m"), last])
    # podGroupRejectPercentage 100: the member that does not fit leaves the other waiting at Permit.
    proc = gang_scheduler(
        kubeconfig, tmp_path, permitWaitingTimeSeconds=60, podGroupRejectPercentage=100
    ).start()
    try:
        proc.wait_ready(60)
        wait_for(lambda: waiting_at_permit(proc, namespace, ["moved-0"]), 30, "moved-0 waiting at Permit")
        core_v1.delete_node(doomed)
        wait_for(
            lambda: all(n["metadata"]["name"] != doomed for n in list_nodes(core_v1, run_id)),
            10,
            "the node deleted",
        )
        create_nodes(api_client, [make_node(spare, labels={RUN_LABEL: run_id, "gang-ready": "yes"})])

        def placed() -> dict[str, str]:
            return {
                p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in list_pods(core_v1, namespace)
            }

        wait_for(lambda: all(placed().values()), 60, "the gang bound")
        assert placed() == {"moved-0": spare, "moved-1": spare}
        proc.assert_running()
        assert "Traceback" not in proc.log_path.read_text(errors="replace")
    finally:
        proc.stop()


def test_a_member_deleted_while_it_waits_at_permit_frees_its_room_at_once(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, kubeconfig: str, tmp_path: Path, crd: None
) -> None:
    """A gang member holding a node's whole room at Permit starts being deleted (a finalizer keeps the
    pod with its deletionTimestamp: the API server removes an unscheduled pod at once otherwise). As
    kube-scheduler's handleAssumedPodDeletion: it is rejected then and there, long before its 60 s
    Permit timeout, never bound, and a pending pod that needs its room is scheduled. The rejection is
    reported as upstream's handleBindingCycleError reports it: "0/1 nodes are available: 1 removed."."""
    node = f"full-{run_id}"
    create_nodes(api_client, [make_node(node, cpu="2", labels={RUN_LABEL: run_id})])
    pod_group(api_client, namespace, "leaving", 2)
    held = member("leaving-0", run_id, "leaving", "2")
    held["metadata"]["finalizers"] = [FINALIZER]
    never = member("leaving-1", run_id, "leaving", "100m")
    never["spec"]["nodeSelector"]["no-such-label"] = "x"
    create(core_v1, namespace, [held, never])
    # podGroupRejectPercentage 100: the member that does not fit leaves the other waiting at Permit.
    proc = gang_scheduler(
        kubeconfig, tmp_path, permitWaitingTimeSeconds=60, podGroupRejectPercentage=100
    ).start()
    try:
        proc.wait_ready(60)
        wait_for(lambda: waiting_at_permit(proc, namespace, ["leaving-0"]), 30, "leaving-0 waiting at Permit")
        create(core_v1, namespace, [make_pod("solo", run_id, cpu="2")])
        wait_for(
            lambda: any(
                e.get("reason") == "FailedScheduling"
                and (e.get("involvedObject") or {}).get("name") == "solo"
                for e in list_events(core_v1, namespace)
            ),
            30,
            "solo rejected while leaving-0 holds the node",
        )
        core_v1.delete_namespaced_pod("leaving-0", namespace, _preload_content=False)

        def node_of(name: str) -> str:
            return str(core_v1.read_namespaced_pod(name, namespace).spec.node_name or "")

        # Well within the 60 s Permit timeout: the deletion, not the timer, released the room.
        wait_for(lambda: node_of("solo") == node, 20, "solo bound to the freed node")
        deleting = core_v1.read_namespaced_pod("leaving-0", namespace)
        assert deleting.metadata.deletion_timestamp is not None and not deleting.spec.node_name

        def failures_of_leaving() -> list[str]:
            return [
                str(e.get("message") or e.get("note") or "")
                for e in list_events(core_v1, namespace)
                if (e.get("involvedObject") or {}).get("name") == "leaving-0"
                and e.get("reason") == "FailedScheduling"
            ]

        wait_for(
            lambda: "0/1 nodes are available: 1 removed." in failures_of_leaving(),
            20,
            "leaving-0's Permit rejection reported",
        )
        assert not core_v1.read_namespaced_pod("leaving-0", namespace).spec.node_name
        proc.assert_running()
        assert "Traceback" not in proc.log_path.read_text(errors="replace")
    finally:
        proc.stop()
        core_v1.patch_namespaced_pod(
            "leaving-0", namespace, {"metadata": {"finalizers": None}}, _preload_content=False
        )
