"""Issue 27 side by side: NodeResourceTopologyMatch on two identical real control planes, the
scheduler-plugins v0.34.7 scheduler (built by devcluster/build_scheduler_plugins.sh) on one and
py-scheduler on the other, with the same four profiles (one per score strategy), the same
NodeResourceTopology objects (written here as a node agent, the topology-updater, would), nodes and
pods. Compared: placements and the pending pods with their PodScheduled message (each also checked as a
FailedScheduling Event).

Pods are created one at a time, each waited for (bound, or reported unschedulable) before the next, so
both schedulers see the same sequence. There is no kubelet: the NodeResourceTopologies say what the test
says, which is the point of the stale case.

The module's fixture first checks both schedulers without the CRD: scheduler-plugins' waits for it and
schedules nothing; py-scheduler stops at start-up saying so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from devcluster.cluster import ControlPlaneError
from devcluster.nodes import create_nodes, make_node
from devcluster.peers import scheduler_plugins
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for

REPO = Path(__file__).resolve().parents[3]
# Built before the first test by the peers session (tests/integration/peers/conftest.py).
PEER_SCHEDULER = scheduler_plugins().scheduler
CRD = REPO / "deploy/components/noderesourcetopology-crd/crd.yaml"
GROUP, VERSION_NRT, PLURAL = "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies"
PLUGIN = "NodeResourceTopologyMatch"

LEAST, MOST, BALANCED, LEAST_NUMA = "nrt-least", "nrt-most", "nrt-balanced", "nrt-least-numa"
STRATEGIES = {
    LEAST: "LeastAllocated",
    MOST: "MostAllocated",
    BALANCED: "BalancedAllocation",
    LEAST_NUMA: "LeastNUMANodes",
}


def nrt_profile(name: str, strategy: str) -> dict[str, Any]:
    """The default filters plus NodeResourceTopologyMatch; only it scores, so placements follow its
    score alone (upstream's own example profile, manifests/noderesourcetopology/scheduler-config.yaml)."""
    return {
        "schedulerName": name,
        "plugins": {
            "filter": {"enabled": [{"name": PLUGIN}]},
            "score": {"enabled": [{"name": PLUGIN, "weight": 1}], "disabled": [{"name": "*"}]},
        },
        "pluginConfig": [{"name": PLUGIN, "args": {"scoringStrategy": {"type": strategy}}}],
    }


# The overreserve cache: a resync every 2 s. Its profile's cache lists the NodeResourceTopologies when
# the scheduler starts (upstream's does, and keeps no object created later), so the burst case's
# object is published before both schedulers start.
CACHED = "nrt-cache"
RESYNC_SECONDS = 2


def cached_profile() -> dict[str, Any]:
    profile = nrt_profile(CACHED, "LeastAllocated")
    # The cache hears of placements at Reserve (and Unreserve): the plugin is enabled there too.
    profile["plugins"]["reserve"] = {"enabled": [{"name": PLUGIN}]}
    profile["plugins"]["postBind"] = {"enabled": [{"name": PLUGIN}]}
    profile["pluginConfig"][0]["args"]["cacheResyncPeriodSeconds"] = RESYNC_SECONDS
    return profile


PASSTHROUGH_PROFILES = [nrt_profile(name, strategy) for name, strategy in STRATEGIES.items()]
PROFILES = [*PASSTHROUGH_PROFILES, cached_profile()]
NS = "numa"

# scheduler-plugins v0.34.7 embeds kube-scheduler v1.34's DynamicResources, whose PostFilter begins most
# messages with this; py-scheduler follows kube-scheduler v1.37.2, which dropped it. Compared without it.
V134_DRA_PREFIX = "no new claims to deallocate, "


class Side:
    def __init__(self, cp: Any, label: str) -> None:
        self.proc: SchedulerProcess | None = None
        self.cp = cp
        self.label = label
        self.api = cp.api_client()
        self.core = k8s.CoreV1Api(self.api)
        self.custom = k8s.CustomObjectsApi(self.api)
        self.ext: Any = k8s.ApiextensionsV1Api(self.api)

    def served(self) -> bool:
        try:
            found = self.custom.get_api_resources(GROUP, VERSION_NRT)
        except k8s.ApiException:
            return False
        return PLURAL in {r.name for r in found.resources}

    def install_crd(self) -> None:
        self.ext.create_custom_resource_definition(
            body=yaml.safe_load(CRD.read_text()), _preload_content=False
        )
        wait_for(self.served, 60, f"{self.label}: NodeResourceTopology CRD served")


def check_without_crd(peer: Side, ours: Side, workdir: Path) -> None:
    """Without the CRD: scheduler-plugins' scheduler waits for its NodeResourceTopology informer to sync
    before scheduling anything (kube-scheduler waits on its dynamic informers), so it never gets ready
    and a pending pod of its own stays pending; py-scheduler exits at start-up naming the CRD. (With
    the overreserve cache, scheduler-plugins' exits too: the cache lists the objects when made.)"""
    peer.core.create_namespace({"metadata": {"name": "no-crd"}}, _preload_content=False)
    wait_for(
        lambda: peer.core.list_namespaced_service_account("no-crd", _preload_content=False).status == 200,
        30,
        "namespace",
    )
    body = guaranteed("waits", cpu="1")
    body["spec"]["schedulerName"] = LEAST
    create_nodes(peer.api, [make_node("no-crd-0", cpu="8", memory="32Gi")])
    peer.core.create_namespaced_pod("no-crd", body=body, _preload_content=False)
    config = peer.cp.write_kube_scheduler_config(profiles=PASSTHROUGH_PROFILES)
    with pytest.raises(ControlPlaneError) as failed:
        peer.cp.start_kube_scheduler(config_path=config, binary=PEER_SCHEDULER, timeout=15)
    assert "exited before" not in str(failed.value), f"scheduler-plugins exited: {failed.value}"
    assert not peer.core.read_namespaced_pod("waits", "no-crd").spec.node_name
    peer.core.delete_namespace("no-crd", _preload_content=False)
    peer.core.delete_node("no-crd-0", _preload_content=False)

    proc = SchedulerProcess(
        ours.cp.kubeconfig,
        workdir,
        name="py-scheduler-no-crd",
        config=scheduler_config(scheduler_name=LEAST, extra={"profiles": PASSTHROUGH_PROFILES}),
    ).start()
    assert proc.proc is not None
    try:
        code = proc.proc.wait(90)
    finally:
        proc.stop()
    assert code == 1
    assert "NodeResourceTopologyMatch is enabled but the API server does not serve" in proc.log_tail(80)


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    from devcluster.cluster import ControlPlane

    planes = [ControlPlane(), ControlPlane()]
    for plane in planes:
        plane.start()
    peer, ours = Side(planes[0], "scheduler-plugins"), Side(planes[1], "py-scheduler")
    stops: list[Any] = []
    try:
        check_without_crd(peer, ours, tmp_path_factory.mktemp("no-crd"))
        for side in (peer, ours):
            side.install_crd()
        for cached_node in ("burst-0", "foreign-0"):
            publish((peer, ours), nrt(cached_node, [zone(0, "8", "16Gi"), zone(1, "8", "16Gi")]))
        config = planes[0].write_kube_scheduler_config(profiles=PROFILES)
        handle = planes[0].start_kube_scheduler(config_path=config, binary=PEER_SCHEDULER)
        stops.append(lambda: handle.stop(grace=5.0))
        proc = SchedulerProcess(
            planes[1].kubeconfig,
            tmp_path_factory.mktemp("py-scheduler"),
            config=scheduler_config(scheduler_name=LEAST, extra={"profiles": PROFILES}),
        ).start()
        stops.append(proc.stop)
        proc.wait_ready(90)
        ours.proc = proc
        for side in (peer, ours):
            side.core.create_namespace({"metadata": {"name": NS}}, _preload_content=False)
            wait_for(
                lambda side=side: (
                    side.core.list_namespaced_service_account(  # type: ignore[misc]
                        NS, _preload_content=False
                    ).status
                    == 200
                ),
                30,
                "namespace",
            )
        yield peer, ours
    finally:
        for stop in stops:
            stop()
        for plane in planes:
            plane.stop()


# --- what a node agent publishes, and pods -----------------------------------------------------------


def zone(numa_id: int, cpu: str, memory: str, *, extra: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, **(extra or {})}
    return {
        "name": f"node-{numa_id}",
        "type": "Node",
        "costs": [{"name": f"node-{i}", "value": 10 if i == numa_id else 20} for i in range(2)],
        "resources": [
            {"name": name, "capacity": amount, "allocatable": amount, "available": amount}
            for name, amount in resources.items()
        ],
    }


def nrt(
    node: str,
    zones: list[dict[str, Any]],
    *,
    policy: str | None = "single-numa-node",
    scope: str = "container",
    attributes: list[dict[str, str]] | None = None,
    topology_policies: list[str] | None = None,
) -> dict[str, Any]:
    attrs = list(attributes or [])
    if policy is not None:
        attrs += [
            {"name": "topologyManagerPolicy", "value": policy},
            {"name": "topologyManagerScope", "value": scope},
        ]
    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION_NRT}",
        "kind": "NodeResourceTopology",
        "metadata": {"name": node},
        "zones": zones,
    }
    if attrs:
        body["attributes"] = attrs
    if topology_policies:
        body["topologyPolicies"] = topology_policies
    return body


def publish(sides: tuple[Side, Side], body: dict[str, Any]) -> None:
    """Creates or replaces the NodeResourceTopology, as the topology-updater does on every change."""
    name = body["metadata"]["name"]
    for side in sides:
        try:
            current = side.custom.get_cluster_custom_object(GROUP, VERSION_NRT, PLURAL, name)
        except k8s.ApiException as err:
            if err.status != 404:
                raise
            side.custom.create_cluster_custom_object(GROUP, VERSION_NRT, PLURAL, body)
        else:
            updated = {
                **body,
                "metadata": {**body["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
            }
            side.custom.replace_cluster_custom_object(GROUP, VERSION_NRT, PLURAL, name, updated)
    # scheduler-plugins GETs the object in each Filter; py-scheduler reads its informer's copy. Let the
    # watch deliver it before the next pod (a watch event takes milliseconds; this is a wide margin).
    time.sleep(1.0)


def nodes(sides: tuple[Side, Side], case: str, count: int, cpu: str = "16", **extra: Any) -> None:
    for side in sides:
        create_nodes(
            side.api,
            [
                make_node(f"{case}-{i}", cpu=cpu, memory="64Gi", labels={"case": case}, **extra)
                for i in range(count)
            ],
        )


def container(
    name: str, cpu: str, memory: str = "1Gi", *, limits: bool = True, extra: dict[str, str] | None = None
) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory, **(extra or {})}
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = dict(requests)
    return {"name": name, "image": "busybox", "resources": resources}


def guaranteed(
    name: str, cpu: str = "", *, containers: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": containers or [container("c", cpu)],
            **spec,
        },
    }


def outcome(side: Side, name: str) -> tuple[str, str] | None:
    try:
        got = side.core.read_namespaced_pod(name, NS)
    except k8s.ApiException as err:
        if err.status == 404:
            return ("gone", "")
        raise
    if got.spec.node_name:
        return ("bound", got.spec.node_name)
    for cond in got.status.conditions or []:
        if cond.type == "PodScheduled" and cond.status == "False":
            return ("pending", (cond.message or "").replace(V134_DRA_PREFIX, ""))
    return None


def submit(
    sides: tuple[Side, Side], body: dict[str, Any], case: str, profile: str = LEAST
) -> tuple[str, str]:
    """Creates the pod on both sides, waits for both decisions, asserts they agree; returns it."""
    body = {**body, "spec": {**body["spec"], "nodeSelector": {"case": case}, "schedulerName": profile}}
    name = body["metadata"]["name"]
    for side in sides:
        side.core.create_namespaced_pod(NS, body=body, _preload_content=False)
    results: list[tuple[str, str]] = []
    for side in sides:
        decided = wait_for(lambda side=side: outcome(side, name), 60, f"{side.label} to decide {name}")  # type: ignore[misc]
        results.append(decided)
    peer, ours = results
    assert ours == peer, f"{name}: scheduler-plugins {peer}, py-scheduler {ours}"
    if peer[0] == "pending":
        for side in sides:
            failed_scheduling_seen(side, name, peer[1])
    return peer


def failed_scheduling_seen(side: Side, name: str, message: str) -> None:
    note = message if len(message) <= 1024 else message[: 1024 - 4] + " ..."

    def seen() -> bool:
        events = side.core.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}").items
        return any(
            e.reason == "FailedScheduling" and (e.message or "").replace(V134_DRA_PREFIX, "") == note
            for e in events
        )

    wait_for(seen, 30, f"{side.label}: FailedScheduling {note!r} of {name}")


def pending_with(result: tuple[str, str], reason: str) -> None:
    assert result[0] == "pending" and f"1 {reason}" in result[1], result


# --- cases -----------------------------------------------------------------------------------------


def test_single_numa_container_scope(sides: tuple[Side, Side]) -> None:
    """Two NUMA nodes of 4 cpu: 8 cpu on the node, at most 4 in one NUMA node."""
    publish(sides, nrt("cont-0", [zone(0, "4", "16Gi"), zone(1, "4", "16Gi")]))
    nodes(sides, "cont", 1)
    # Fits the node by total, no single NUMA node: refused.
    pending_with(submit(sides, guaranteed("c-big", "6"), "cont"), "cannot align container")
    # Two containers of 3: one per NUMA node.
    two = guaranteed("c-two", containers=[container("a", "3"), container("b", "3")])
    assert submit(sides, two, "cont") == ("bound", "cont-0")
    # Three containers of 3: the third finds no NUMA node with 3 left.
    three = guaranteed("c-three", containers=[container(n, "3") for n in "abc"])
    pending_with(submit(sides, three, "cont"), "cannot align container")
    # An init container that fits no NUMA node.
    init = guaranteed("c-init", "1", initContainers=[container("init", "6")])
    pending_with(submit(sides, init, "cont"), "cannot align init container")
    # A Burstable pod's cpu is not pinned: it fits.
    assert submit(sides, guaranteed("c-burst", containers=[container("c", "6", limits=False)]), "cont") == (
        "bound",
        "cont-0",
    )
    # A BestEffort pod is not judged.
    best_effort = guaranteed("c-be", containers=[{"name": "c", "image": "busybox"}])
    assert submit(sides, best_effort, "cont") == ("bound", "cont-0")
    # py-scheduler's explain: where each container went, and why the big one fits no NUMA node.
    placed = debug_record(sides[1], "c-two")
    assert placed["nodeNotes"] == [
        "NodeResourceTopologyMatch: container a on NUMA node-0, container b on NUMA node-1"
    ]
    pending = debug_record(sides[1], "c-big")
    assert pending["nearestMisses"] == [
        {
            "node": "cont-0",
            "plugin": "NodeResourceTopologyMatch",
            "detail": "cannot align container: container c: cpu 6 fits no single NUMA node "
            "(node-0 has 4, node-1 has 4)",
        }
    ]


def debug_record(side: Side, name: str) -> dict[str, Any]:
    """The last attempt py-scheduler recorded for the pod (its /debug/pods, what explain reads)."""
    assert side.proc is not None
    code, body = side.proc.get(f"/debug/pods/{NS}/{name}")
    assert code == 200, body
    attempts: list[dict[str, Any]] = json.loads(body)["attempts"]
    return attempts[-1]


def test_single_numa_pod_scope(sides: tuple[Side, Side]) -> None:
    publish(sides, nrt("pods-0", [zone(0, "4", "16Gi"), zone(1, "4", "16Gi")], scope="pod"))
    nodes(sides, "pods", 1)
    # 3 + 3 fits container by container, not as one pod.
    two = guaranteed("p-two", containers=[container("a", "3"), container("b", "3")])
    pending_with(submit(sides, two, "pods"), "cannot align pod")
    assert submit(sides, guaranteed("p-four", "4"), "pods") == ("bound", "pods-0")


def test_legacy_topology_policies(sides: tuple[Side, Side]) -> None:
    """The deprecated topologyPolicies field, read when no attribute says otherwise."""
    body = nrt("legacy-0", [zone(0, "4", "16Gi"), zone(1, "4", "16Gi")], policy=None)
    publish(sides, {**body, "topologyPolicies": ["SingleNUMANodePodLevel"]})
    nodes(sides, "legacy", 1)
    two = guaranteed("l-two", containers=[container("a", "3"), container("b", "3")])
    pending_with(submit(sides, two, "legacy"), "cannot align pod")


@pytest.mark.parametrize("policy", ["restricted", "best-effort", "none"])
def test_other_policies_do_not_filter(sides: tuple[Side, Side], policy: str) -> None:
    case = f"pol-{policy}"
    publish(sides, nrt(f"{case}-0", [zone(0, "4", "16Gi"), zone(1, "4", "16Gi")], policy=policy))
    nodes(sides, case, 1)
    assert submit(sides, guaranteed(f"{case}-big", "6"), case) == ("bound", f"{case}-0")


def test_extended_resource_per_numa_node(sides: tuple[Side, Side]) -> None:
    gpu = "example.com/gpu"
    publish(
        sides, nrt("gpu-0", [zone(0, "4", "16Gi", extra={gpu: "1"}), zone(1, "4", "16Gi", extra={gpu: "1"})])
    )
    nodes(sides, "gpu", 1, extra_allocatable={gpu: "2"})
    pending_with(
        submit(sides, guaranteed("g-two", containers=[container("c", "1", extra={gpu: "2"})]), "gpu"),
        "cannot align container",
    )
    assert submit(sides, guaranteed("g-one", containers=[container("c", "1", extra={gpu: "1"})]), "gpu") == (
        "bound",
        "gpu-0",
    )


def test_node_without_nrt_passes(sides: tuple[Side, Side]) -> None:
    nodes(sides, "bare", 1)
    assert submit(sides, guaranteed("b-big", "6"), "bare") == ("bound", "bare-0")


def test_malformed_nrts(sides: tuple[Side, Side]) -> None:
    """Attributes with values no kubelet writes leave the defaults (policy none: no filtering); zones
    that are not NUMA nodes (another type, a name not node-<id>, an id above 64) are skipped, so a
    single-numa-node node with none left fits no request of cpu or memory, of any QoS class (no NUMA
    node reports them, and they are not host-level resources)."""
    bad_attrs = [
        {"name": "topologyManagerPolicy", "value": "single-numa"},
        {"name": "topologyManagerScope", "value": "socket"},
        {"name": "topologyManagerMaxNUMANodes", "value": "many"},
    ]
    publish(
        sides, nrt("odd-0", [zone(0, "4", "16Gi"), zone(1, "4", "16Gi")], policy=None, attributes=bad_attrs)
    )
    nodes(sides, "odd", 1)
    assert submit(sides, guaranteed("o-big", "6"), "odd") == ("bound", "odd-0")

    socket = {**zone(0, "8", "16Gi"), "type": "Socket"}
    unnamed = {**zone(1, "8", "16Gi"), "name": "numa1"}
    far = {**zone(1, "8", "16Gi"), "name": "node-65"}
    publish(sides, nrt("nozone-0", [socket, unnamed, far]))
    nodes(sides, "nozone", 1)
    pending_with(submit(sides, guaranteed("n-one", "1"), "nozone"), "cannot align container")
    burstable = guaranteed("n-burst", containers=[container("c", "1", limits=False)])
    pending_with(submit(sides, burstable, "nozone"), "cannot align container")


def test_stale_nrt(sides: tuple[Side, Side]) -> None:
    """Pods bound since the agent last published are not seen (the passthrough cache): three pods of 4
    cpu all go to NUMA node 0 of 8 as published; once the agent publishes what is left, a 6-cpu pod
    fits no NUMA node; when it publishes room again the pod is woken and bound."""
    publish(sides, nrt("stale-0", [zone(0, "8", "16Gi"), zone(1, "8", "16Gi")]))
    nodes(sides, "stale", 1, cpu="32")
    for i in range(3):
        assert submit(sides, guaranteed(f"s{i}", "4"), "stale") == ("bound", "stale-0")
    publish(sides, nrt("stale-0", [zone(0, "0", "13Gi"), zone(1, "4", "16Gi")]))
    pending_with(submit(sides, guaranteed("s-six", "6"), "stale"), "cannot align container")
    publish(sides, nrt("stale-0", [zone(0, "0", "13Gi"), zone(1, "8", "16Gi")]))
    for side in sides:

        def woken(side: Side = side) -> bool:
            return outcome(side, "s-six") == ("bound", "stale-0")

        wait_for(woken, 60, f"{side.label}: s-six woken")


def set_running(sides: tuple[Side, Side], names: list[str]) -> None:
    """What the kubelet would report of the pods once started (there is no kubelet here)."""
    for side in sides:
        for name in names:
            side.core.patch_namespaced_pod_status(name, NS, {"status": {"phase": "Running"}})


def delete_pod(sides: tuple[Side, Side], name: str) -> None:
    for side in sides:
        side.core.delete_namespaced_pod(name, NS, grace_period_seconds=0, _preload_content=False)
    for side in sides:
        wait_for(lambda side=side: outcome(side, name) == ("gone", ""), 30, f"{side.label}: {name} gone")  # type: ignore[misc]


def test_overreserve_burst_and_resync(sides: tuple[Side, Side]) -> None:
    """cacheResyncPeriodSeconds > 0: pods bound before the agent republishes are charged to every NUMA
    zone, so the third 4-cpu pod onto two zones of 8 is refused (the passthrough cache admits three onto
    one zone, test_stale_nrt). The agent then publishes what is left with the pods' fingerprint: a
    wrong one keeps the node's charges (an 8-cpu pod is refused), the right one (computed by
    py-scheduler's own podfingerprint, so accepted by both only if it is the Go library's) resyncs
    both caches, and the 8-cpu pod fits zone 1."""
    from scheduler.plugins.noderesourcetopology import podfingerprint

    nodes(sides, "burst", 1, cpu="32")
    for i in range(2):
        assert submit(sides, guaranteed(f"b{i}", "4"), "burst", CACHED) == ("bound", "burst-0")
    pending_with(submit(sides, guaranteed("b2", "4"), "burst", CACHED), "cannot align container")
    refused = debug_record(sides[1], "b2")
    assert [m for m in refused["nearestMisses"] if m["plugin"] == PLUGIN] == [
        {
            "node": "burst-0",
            "plugin": "NodeResourceTopologyMatch",
            "detail": "cannot align container: container c: cpu 4 fits no single NUMA node (node-0 has 0, "
            "node-1 has 0) (NUMA view reserved-over: numa/b0, numa/b1 charged to every NUMA zone since "
            "the agent last published)",
        }
    ]
    delete_pod(sides, "b2")
    set_running(sides, ["b0", "b1"])
    left = [zone(0, "0", "14Gi"), zone(1, "8", "16Gi")]

    def with_fingerprint(pods: list[tuple[str, str]]) -> dict[str, Any]:
        attr = {"name": podfingerprint.ATTRIBUTE, "value": podfingerprint.sign(pods)}
        return nrt("burst-0", left, attributes=[attr])

    publish(sides, with_fingerprint([(NS, "b0")]))
    time.sleep(3 * RESYNC_SECONDS)
    pending_with(submit(sides, guaranteed("b-wrong", "8"), "burst", CACHED), "cannot align container")
    delete_pod(sides, "b-wrong")
    publish(sides, with_fingerprint([(NS, "b0"), (NS, "b1")]))
    time.sleep(3 * RESYNC_SECONDS)
    assert submit(sides, guaranteed("b-eight", "8"), "burst", CACHED) == ("bound", "burst-0")
    assert debug_record(sides[1], "b-eight")["nodeNotes"] == [
        "NodeResourceTopologyMatch: container c on NUMA node-1"
    ]


def test_overreserve_foreign_pod_until_resync(sides: tuple[Side, Side]) -> None:
    """A pod placed by no profile with the overreserve cache (here: bound by its spec.nodeName) makes
    its node untrusted by that profile's cache on both schedulers (`invalid node topology data`) until
    the agent publishes with a fingerprint that counts it; then the node takes pods again."""
    from scheduler.plugins.noderesourcetopology import podfingerprint

    nodes(sides, "foreign", 1, cpu="32")
    intruder = guaranteed("intruder", "1")
    intruder["spec"]["nodeName"] = "foreign-0"
    for side in sides:
        side.core.create_namespaced_pod(NS, body=intruder, _preload_content=False)
    set_running(sides, ["intruder"])
    time.sleep(1.0)
    pending_with(submit(sides, guaranteed("f-one", "1"), "foreign", CACHED), "invalid node topology data")
    refused = debug_record(sides[1], "f-one")
    assert [m["detail"] for m in refused["nearestMisses"] if m["plugin"] == PLUGIN] == [
        "invalid node topology data: pods of other schedulers were bound here since the agent last "
        "published (dirty until the cache resyncs)"
    ]
    delete_pod(sides, "f-one")
    attr = {"name": podfingerprint.ATTRIBUTE, "value": podfingerprint.sign([(NS, "intruder")])}
    publish(sides, nrt("foreign-0", [zone(0, "7", "15Gi"), zone(1, "8", "16Gi")], attributes=[attr]))
    time.sleep(3 * RESYNC_SECONDS)
    assert submit(sides, guaranteed("f-two", "1"), "foreign", CACHED) == ("bound", "foreign-0")


# Two nodes per strategy whose scores differ, so the best is unique: "-a" has NUMA nodes of 4 cpu and
# 4Gi, "-b" of 8 cpu and 16Gi; a Guaranteed pod of 2 cpu and 2Gi. LeastAllocated: a 50, b 81 -> b;
# MostAllocated: a 50, b 18 -> a; BalancedAllocation: a 100 (equal fractions), b 99 -> a.
@pytest.mark.parametrize(
    ("profile", "expected"), [(LEAST, "b"), (MOST, "a"), (BALANCED, "a")], ids=["least", "most", "balanced"]
)
def test_score_strategies(sides: tuple[Side, Side], profile: str, expected: str) -> None:
    case = profile
    publish(sides, nrt(f"{case}-a", [zone(0, "4", "4Gi"), zone(1, "4", "4Gi")]))
    publish(sides, nrt(f"{case}-b", [zone(0, "8", "16Gi"), zone(1, "8", "16Gi")]))
    for side in sides:
        create_nodes(
            side.api,
            [make_node(f"{case}-{s}", cpu="16", memory="64Gi", labels={"case": case}) for s in "ab"],
        )
    got = submit(sides, guaranteed(f"{case}-pod", containers=[container("c", "2", "2Gi")]), case, profile)
    assert got == ("bound", f"{case}-{expected}")


def test_score_least_numa_nodes(sides: tuple[Side, Side]) -> None:
    """Restricted policy (no filtering), pod scope, a 6-cpu pod: "-a" needs both of its 4-cpu NUMA
    nodes (100 - 2*12 + 6 = 82), "-b" one of its 8-cpu ones (100 - 12 + 6 = 94), "-c" one too but with
    topologyManagerMaxNUMANodes 2 (100 - 50 + 25 = 75): "-b"."""
    case = LEAST_NUMA
    publish(
        sides, nrt(f"{case}-a", [zone(0, "4", "8Gi"), zone(1, "4", "8Gi")], policy="restricted", scope="pod")
    )
    publish(
        sides, nrt(f"{case}-b", [zone(0, "8", "8Gi"), zone(1, "8", "8Gi")], policy="restricted", scope="pod")
    )
    max_two = [{"name": "topologyManagerMaxNUMANodes", "value": "2"}]
    publish(
        sides,
        nrt(
            f"{case}-c",
            [zone(0, "8", "8Gi"), zone(1, "8", "8Gi")],
            policy="restricted",
            scope="pod",
            attributes=max_two,
        ),
    )
    for side in sides:
        create_nodes(
            side.api,
            [make_node(f"{case}-{s}", cpu="16", memory="64Gi", labels={"case": case}) for s in "abc"],
        )
    got = submit(sides, guaranteed(f"{case}-pod", containers=[container("c", "6", "2Gi")]), case, LEAST_NUMA)
    assert got == ("bound", f"{case}-b")


def test_crd_removed_while_running(sides: tuple[Side, Side]) -> None:
    """Last: deleting the CRD deletes every NodeResourceTopology; neither scheduler crashes, and a node
    that refused a pod now takes it (no object: the filter passes)."""
    publish(sides, nrt("gone-0", [zone(0, "4", "16Gi"), zone(1, "4", "16Gi")]))
    nodes(sides, "gone", 1)
    pending_with(submit(sides, guaranteed("gone-before", "6"), "gone"), "cannot align container")
    for side in sides:
        side.ext.delete_custom_resource_definition(f"{PLURAL}.{GROUP}", _preload_content=False)
    for side in sides:
        wait_for(lambda side=side: not side.served(), 60, f"{side.label}: CRD gone")  # type: ignore[misc]
    time.sleep(1.0)
    assert submit(sides, guaranteed("gone-after", "6"), "gone") == ("bound", "gone-0")


@pytest.mark.parametrize(
    "strategy",
    [{"type": "Foo"}, {"resources": [{"name": "cpu", "weight": 1}]}],
    ids=["unknown type", "no type"],
)
def test_bad_args_stop_both_at_start_up(tmp_path: Path, strategy: dict[str, Any]) -> None:
    """Both refuse the same args with the same field error (no cluster needed: both fail building the
    profile, before they would talk to an API server)."""
    import subprocess
    import sys

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
                "users": [{"name": "u", "user": {"token": "x"}}],
            }
        )
    )
    profile = {
        "schedulerName": "numa",
        "plugins": {"filter": {"enabled": [{"name": PLUGIN}]}},
        "pluginConfig": [{"name": PLUGIN, "args": {"scoringStrategy": strategy}}],
    }
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "profiles": [profile],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    peer = subprocess.run(
        [str(PEER_SCHEDULER), "--config", str(path), "--secure-port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    ours = subprocess.run(
        [sys.executable, "-m", "scheduler", "--config", str(path), "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=False,
    )
    value = strategy.get("type", "")
    error = f'scoringStrategy.type: Invalid value: "{value}": invalid ScoringStrategyType'
    assert peer.returncode != 0 and error.replace('"', '\\"') in peer.stderr
    assert ours.returncode != 0
    lines = ours.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(f"NodeResourceTopologyMatch: {error}"), ours.stderr
