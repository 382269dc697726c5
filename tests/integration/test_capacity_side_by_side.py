"""Issue 26 side by side: CapacityScheduling (with ElasticQuota) and NodeResourcesAllocatable on two
identical real control planes, the scheduler-plugins v0.34.7 scheduler (built by
devcluster/build_scheduler_plugins.sh, with its controller writing ElasticQuota status.used) on one and
py-scheduler on the other, with the same profile, ElasticQuotas, PriorityClasses, nodes and pods.
Compared: placements, the pending pods with their PodScheduled message, and the preemption victims.

Pods are created one at a time, each waited for (bound, or reported unschedulable) before the next, so
both schedulers see the same sequence. Victims have terminationGracePeriodSeconds 0 (no kubelet here).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from devcluster.binaries import cache_root
from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for

REPO = Path(__file__).resolve().parents[2]
VERSION = (REPO / "devcluster/SCHEDULER_PLUGINS_VERSION").read_text().strip()
PEER_DIR = cache_root() / f"scheduler-plugins-{VERSION}"
PEER_SCHEDULER = PEER_DIR / "scheduler-plugins-scheduler"
PEER_CONTROLLER = PEER_DIR / "scheduler-plugins-controller"
CRDS = [
    REPO / "deploy/components/podgroup-crd/crd.yaml",
    REPO / "deploy/components/elasticquota-crd/crd.yaml",
]
NAME = "quota-scheduler"
PROFILE_PLUGINS = {
    "multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
    "postFilter": {"enabled": [{"name": "CapacityScheduling"}], "disabled": [{"name": "*"}]},
}

pytestmark = pytest.mark.skipif(
    not (os.access(PEER_SCHEDULER, os.X_OK) and os.access(PEER_CONTROLLER, os.X_OK)),
    reason="scheduler-plugins scheduler/controller not built: run devcluster/build_scheduler_plugins.sh",
)


class Side:
    """One control plane with one scheduler and scheduler-plugins' controller."""

    def __init__(self, cp: Any, label: str) -> None:
        self.cp = cp
        self.label = label
        self.api = cp.api_client()
        self.core = k8s.CoreV1Api(self.api)
        self.custom = k8s.CustomObjectsApi(self.api)
        self.sched = k8s.SchedulingV1Api(self.api)
        self.stop: Callable[[], object] = lambda: None

    def install_crds(self) -> None:
        ext: Any = k8s.ApiextensionsV1Api(self.api)
        for path in CRDS:
            body = yaml.safe_load(path.read_text())
            ext.create_custom_resource_definition(body=body, _preload_content=False)

        def served() -> bool:
            try:
                found = self.custom.get_api_resources("scheduling.x-k8s.io", "v1alpha1")
            except k8s.ApiException:
                return False
            return {"podgroups", "elasticquotas"} <= {r.name for r in found.resources}

        wait_for(served, 60, "scheduler-plugins CRDs served")


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    from devcluster.cluster import ControlPlane

    planes = [ControlPlane(), ControlPlane()]
    for plane in planes:
        plane.start()
    peer, ours = Side(planes[0], "scheduler-plugins"), Side(planes[1], "py-scheduler")
    controllers: list[Any] = []
    try:
        for side in (peer, ours):
            side.install_crds()
        profile = {"schedulerName": NAME, "plugins": PROFILE_PLUGINS}
        config = planes[0].write_kube_scheduler_config(profiles=[profile])
        handle = planes[0].start_kube_scheduler(config_path=config, binary=PEER_SCHEDULER)
        peer.stop = lambda: handle.stop(grace=5.0)
        proc = SchedulerProcess(
            planes[1].kubeconfig,
            tmp_path_factory.mktemp("py-scheduler"),
            config=scheduler_config(scheduler_name=NAME, profile_extra={"plugins": PROFILE_PLUGINS}),
        ).start()
        proc.wait_ready(90)
        ours.stop = proc.stop
        import subprocess

        for i, plane in enumerate(planes):
            log = open(tmp_path_factory.mktemp("controller") / f"controller-{i}.log", "w")  # noqa: SIM115
            controllers.append(
                subprocess.Popen(
                    [str(PEER_CONTROLLER), "--metricsAddr=0", "--probeAddr=0"],
                    env={**os.environ, "KUBECONFIG": str(plane.kubeconfig)},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        yield peer, ours
    finally:
        for c in controllers:
            c.terminate()
            c.wait(10)
        for side in (peer, ours):
            side.stop()
        for plane in planes:
            plane.stop()


# --- building the same objects on both sides ------------------------------------------------------


def namespace(sides: tuple[Side, Side], name: str) -> None:
    for side in sides:
        side.core.create_namespace({"metadata": {"name": name}}, _preload_content=False)
        wait_for(
            lambda side=side: bool(  # type: ignore[misc]
                side.core.list_namespaced_service_account(name, _preload_content=False).status == 200
            ),
            30,
            "namespace",
        )


def quota(sides: tuple[Side, Side], ns: str, min_: dict[str, str], max_: dict[str, str]) -> None:
    body = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "quota", "namespace": ns},
        "spec": {"min": min_, "max": max_},
    }
    for side in sides:
        side.custom.create_namespaced_custom_object(
            "scheduling.x-k8s.io", "v1alpha1", ns, "elasticquotas", body
        )


def nodes(sides: tuple[Side, Side], prefix: str, sizes: list[tuple[str, str]]) -> None:
    for side in sides:
        create_nodes(
            side.api,
            [
                make_node(f"{prefix}-{i}", cpu=cpu, memory=mem, labels={"case": prefix})
                for i, (cpu, mem) in enumerate(sizes)
            ],
        )


def priority_class(sides: tuple[Side, Side], name: str, value: int) -> None:
    for side in sides:
        try:
            side.sched.create_priority_class(
                {"metadata": {"name": name}, "value": value}, _preload_content=False
            )
        except k8s.ApiException as err:
            if err.status != 409:
                raise


def pod(name: str, cpu: str, priority_class_name: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": NAME,
            **({"priorityClassName": priority_class_name} if priority_class_name else {}),
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
            "nodeSelector": {},
        },
    }


def outcome(side: Side, ns: str, name: str) -> tuple[str, str] | None:
    """("bound", node) or ("pending", message) once the scheduler decided; None before."""
    try:
        got = side.core.read_namespaced_pod(name, ns)
    except k8s.ApiException as err:
        if err.status == 404:
            return ("gone", "")
        raise
    if got.spec.node_name:
        return ("bound", got.spec.node_name)
    for cond in got.status.conditions or []:
        if cond.type == "PodScheduled" and cond.status == "False":
            return ("pending", cond.message or "")
    return None


def submit(sides: tuple[Side, Side], ns: str, body: dict[str, Any], case: str) -> list[tuple[str, str]]:
    """Creates the pod on both sides and waits for each scheduler's decision."""
    body = {**body, "spec": {**body["spec"], "nodeSelector": {"case": case}}}
    results: list[tuple[str, str]] = []
    for side in sides:
        side.core.create_namespaced_pod(ns, body=body, _preload_content=False)
    for side in sides:
        got: list[tuple[str, str]] = []

        def decided(side: Side = side, got: list[tuple[str, str]] = got) -> bool:
            result = outcome(side, ns, body["metadata"]["name"])
            if result is not None:
                got.append(result)
            return result is not None

        wait_for(decided, 60, f"{side.label} to decide {ns}/{body['metadata']['name']}")
        results.append(got[-1])
    return results


def state(side: Side, ns: str) -> dict[str, tuple[str, str] | None]:
    return {
        p.metadata.name: outcome(side, ns, p.metadata.name) for p in side.core.list_namespaced_pod(ns).items
    }


def agree(sides: tuple[Side, Side], nss: list[str], settle: Callable[[Side], bool] | None = None) -> None:
    if settle is not None:
        for side in sides:
            wait_for(lambda side=side: settle(side), 60, f"{side.label} to settle")  # type: ignore[misc]
    peer = {ns: state(sides[0], ns) for ns in nss}
    ours = {ns: state(sides[1], ns) for ns in nss}
    assert ours == peer


# --- cases -----------------------------------------------------------------------------------------


def test_borrowing_within_max_and_refusal_above_max(sides: tuple[Side, Side]) -> None:
    namespace(sides, "borrow-a")
    namespace(sides, "borrow-b")
    nodes(sides, "borrow", [("8", "16Gi")])
    quota(sides, "borrow-a", {"cpu": "2"}, {"cpu": "4"})
    quota(sides, "borrow-b", {"cpu": "4"}, {"cpu": "6"})
    # a borrows b's idle min up to its max (4 > its min 2), then is refused above max.
    for i in range(4):
        peer, ours = submit(sides, "borrow-a", pod(f"a{i}", "1"), "borrow")
        assert peer[0] == ours[0] == "bound"
    peer, ours = submit(sides, "borrow-a", pod("a4", "1"), "borrow")
    assert peer == ours and peer[0] == "pending"
    assert "is more than Max" in ours[1]
    agree(sides, ["borrow-a", "borrow-b"])


def test_refusal_above_min_when_nothing_is_idle_and_reclaim_by_preemption(sides: tuple[Side, Side]) -> None:
    namespace(sides, "reclaim-a")
    namespace(sides, "reclaim-b")
    nodes(sides, "reclaim", [("4", "16Gi")])
    quota(sides, "reclaim-a", {"cpu": "2"}, {"cpu": "4"})
    quota(sides, "reclaim-b", {"cpu": "2"}, {"cpu": "4"})
    # a borrows all of b's idle min: 4 cpu on the 4-cpu node.
    for i in range(4):
        peer, ours = submit(sides, "reclaim-a", pod(f"a{i}", "1"), "reclaim")
        assert peer[0] == ours[0] == "bound"
    # a fifth pod of a: above max too (and nothing idle).
    peer, ours = submit(sides, "reclaim-a", pod("a4", "1"), "reclaim")
    assert peer == ours and peer[0] == "pending"
    # b, within its min, reclaims: a borrower of a is preempted (any priority) and b's pod binds.
    for side in sides:
        side.core.create_namespaced_pod(
            "reclaim-b",
            body={**pod("b0", "1"), "spec": {**pod("b0", "1")["spec"], "nodeSelector": {"case": "reclaim"}}},
            _preload_content=False,
        )

    def settled(side: Side) -> bool:
        got = outcome(side, "reclaim-b", "b0")
        return (
            got is not None
            and got[0] == "bound"
            and len(side.core.list_namespaced_pod("reclaim-a").items) <= 4
        )

    agree(sides, ["reclaim-a", "reclaim-b"], settle=settled)


def test_no_preemption_across_quotas_within_min(sides: tuple[Side, Side]) -> None:
    namespace(sides, "within-a")
    namespace(sides, "within-b")
    nodes(sides, "within", [("2", "16Gi")])
    quota(sides, "within-a", {"cpu": "1"}, {"cpu": "4"})
    quota(sides, "within-b", {"cpu": "1"}, {"cpu": "4"})
    for ns in ("within-a", "within-b"):
        peer, ours = submit(sides, ns, pod(f"{ns}-0", "1"), "within")
        assert peer[0] == ours[0] == "bound"
    # The node is full and each quota is at its min: a high-priority pod of a, which would go over
    # its min, may only evict lower-priority pods of its own quota, never b's.
    priority_class(sides, "quota-high", 1000)
    for side in sides:
        body = pod("vip", "1", "quota-high")
        body["spec"]["nodeSelector"] = {"case": "within"}
        side.core.create_namespaced_pod("within-a", body=body, _preload_content=False)

    def settled(side: Side) -> bool:
        got = outcome(side, "within-a", "vip")
        return got is not None and got[0] == "bound"

    agree(sides, ["within-a", "within-b"], settle=settled)
    assert outcome(sides[1], "within-b", "within-b-0") == ("bound", "within-0")
    assert outcome(sides[1], "within-a", "within-a-0") == ("gone", "")
