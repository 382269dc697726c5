"""PodGroup status: what py-scheduler's controller would write, against what scheduler-plugins' own
controller (v0.34.7 ``cmd/controller``, run for real) wrote, step by step through a gang's life.

At each step the real controller settles the group on a real API server; py-scheduler's transitions
(``desired_status`` and ``status_patch``, the functions its in-process controller writes with), applied
as a JSON merge patch to the status before the step, must give the same stored status, and must find
nothing left to write once it is there. ``scheduleStartTime`` is left out of the comparison: py-scheduler
sets it on entering Scheduling, upstream v0.34.7 never does (docs/gang-scheduling.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from bench.prereqs import PeerControllerProcess, install_crd
from devcluster.peers import SchedulerPlugins
from scheduler.controllers.podgroup_status import desired_status, status_patch

REPO = Path(__file__).resolve().parents[3]
CRDS = [
    REPO / "deploy/components/podgroup-crd/crd.yaml",
    REPO / "deploy/components/elasticquota-crd/crd.yaml",  # the controller does not start without it
]
GROUP, VERSION, NAMESPACE, NAME = "scheduling.x-k8s.io", "v1alpha1", "gangs", "g"
LABEL = "scheduling.x-k8s.io/pod-group"
OWNER = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "name": "job-1",
    "uid": "0c3b7c5e-0000-4000-8000-000000000001",
}


@pytest.fixture(scope="module")
def cluster(scheduler_plugins: SchedulerPlugins, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from devcluster.cluster import ControlPlane

    cp = ControlPlane()
    cp.start()
    controller = None
    try:
        api = cp.api_client()
        for path in CRDS:
            install_crd(api, path)
        k8s.CoreV1Api(api).create_namespace({"metadata": {"name": NAMESPACE}})
        log = tmp_path_factory.mktemp("controller") / "controller.log"
        controller = PeerControllerProcess(
            scheduler_plugins.controller, cp.kubeconfig, log, qps=50, burst=100
        )
        controller.start()
        yield api
        assert controller.alive(), f"the controller exited: see {log}"
    finally:
        if controller is not None:
            controller.stop()
        cp.stop()


def stored(api: Any) -> dict[str, Any]:
    obj: dict[str, Any] = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, "podgroups", NAME
    )
    return obj


def pods_of(api: Any) -> list[dict[str, Any]]:
    resp = k8s.CoreV1Api(api).list_namespaced_pod(NAMESPACE, label_selector=f"{LABEL}={NAME}")
    return [api.sanitize_for_serialization(p) for p in resp.items]


def settled(api: Any, phase: str, quiet: float = 1.5, timeout: float = 30.0) -> dict[str, Any]:
    """The group's status once it shows ``phase`` and has not changed for ``quiet`` seconds (the
    controller requeues on its own writes until nothing changes)."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        status = dict(stored(api).get("status") or {})
        if status != last:
            last, since = status, time.monotonic()
        elif status.get("phase") == phase and time.monotonic() - since >= quiet:
            return status
        time.sleep(0.1)
    raise AssertionError(f"PodGroup never settled in {phase}: {last}")


def merged(status: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch applied to a status: null removes the field."""
    out = dict(status)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def without_start(status: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in status.items() if k != "scheduleStartTime"}


def py_agrees(api: Any, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    """From ``before`` py-scheduler's controller reaches ``after`` (scheduleStartTime aside), and once
    there it has nothing to write."""
    group, pods = stored(api), pods_of(api)
    from_before = desired_status({**group, "status": dict(before)}, pods, time.time())
    assert from_before is not None
    reached = merged(before, status_patch(before, from_before))
    assert without_start(reached) == without_start(after), (before, reached, after)
    from_after = desired_status({**group, "status": dict(after)}, pods, time.time())
    # None: a final phase, left alone (as upstream's reconcile returns early).
    assert from_after is None or without_start(status_patch(after, from_after)) == {}, after


def set_phase(api: Any, name: str, phase: str) -> None:
    k8s.CoreV1Api(api).patch_namespaced_pod_status(name, NAMESPACE, {"status": {"phase": phase}})


def test_a_gangs_status_as_scheduler_plugins_controller_writes_it(cluster: Any) -> None:
    api = cluster
    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    custom.create_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, "podgroups",
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup", "metadata": {"name": NAME},
         "spec": {"minMember": 2}},
    )  # fmt: skip
    pending = settled(api, "Pending")
    py_agrees(api, {}, pending)

    for i in range(2):
        core.create_namespaced_pod(
            NAMESPACE,
            {
                "metadata": {"name": f"p{i}", "labels": {LABEL: NAME}, "ownerReferences": [OWNER]},
                # Assigned to a node no kubelet runs: phases are set by hand, as a kubelet would.
                "spec": {"nodeName": "no-such-node", "containers": [{"name": "c", "image": "busybox"}]},
            },
        )
    scheduling = settled(api, "Scheduling")
    assert scheduling.get("occupiedBy") == f"{NAMESPACE}/job-1"
    py_agrees(api, pending, scheduling)

    for i in range(2):
        set_phase(api, f"p{i}", "Running")
    running = settled(api, "Running")
    assert running.get("running") == 2
    py_agrees(api, scheduling, running)

    set_phase(api, "p0", "Succeeded")
    mixed = settled(api, "Running")
    assert (mixed.get("running"), mixed.get("succeeded")) == (1, 1)
    py_agrees(api, running, mixed)

    set_phase(api, "p1", "Succeeded")
    finished = settled(api, "Finished")
    # Upstream's counts are omitempty: the running count that fell to zero is gone, not 0.
    assert "running" not in finished and finished.get("succeeded") == 2, finished
    py_agrees(api, mixed, finished)
