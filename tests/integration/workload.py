"""Pods and nodes for scheduling tests, isolated per test by a run label and a nodeSelector."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

from scheduler.framework.quantity import milli_value, value

RUN_LABEL = "py-scheduler.test/run"


@contextlib.contextmanager
def sole_kube_scheduler(control_plane: Any, **start_args: Any) -> Iterator[Any]:
    """The real kube-scheduler, started on the shared control plane and stopped on exit.

    devcluster runs kube-scheduler without leader election: one another module left running would be a
    second "default-scheduler" racing this one, overcommitting nodes and preempting twice per pod. So a
    leftover is an error here, and every module stops its own.
    """
    others = sorted(name for name in control_plane.pids() if name.startswith("kube-scheduler-"))
    assert not others, f"a kube-scheduler another test left running would race this one: {others}"
    handle = control_plane.start_kube_scheduler(**start_args)
    try:
        yield handle
    finally:
        handle.stop(grace=10.0)


def new_run_id() -> str:
    return uuid.uuid4().hex[:8]


def make_pod(
    name: str,
    run_id: str,
    *,
    cpu: str = "100m",
    memory: str = "128Mi",
    scheduler_name: str = "py-scheduler",
    tolerations: list[dict[str, Any]] | None = None,
    node_selector: Mapping[str, str] | None = None,
    priority: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "nodeSelector": {RUN_LABEL: run_id, **(node_selector or {})},
        "containers": [
            {"name": "app", "image": "registry.k8s.io/pause:3.10",
             "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        ],
        "terminationGracePeriodSeconds": 0,
    }  # fmt: skip
    if tolerations:
        spec["tolerations"] = tolerations
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {RUN_LABEL: run_id}},
            "spec": spec}  # fmt: skip


def create_pods(core_v1: Any, namespace: str, pods: Iterable[Mapping[str, Any]], workers: int = 16) -> None:
    def create(pod: Mapping[str, Any]) -> None:
        core_v1.create_namespaced_pod(namespace, body=pod, _preload_content=False)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(create, pods))


def list_pods(core_v1: Any, namespace: str) -> list[dict[str, Any]]:
    resp = core_v1.list_namespaced_pod(namespace, _preload_content=False)
    items: list[dict[str, Any]] = orjson.loads(resp.data)["items"]
    return items


def list_nodes(core_v1: Any, run_id: str) -> list[dict[str, Any]]:
    resp = core_v1.list_node(label_selector=f"{RUN_LABEL}={run_id}", _preload_content=False)
    items: list[dict[str, Any]] = orjson.loads(resp.data)["items"]
    return items


def list_events(core_v1: Any, namespace: str) -> list[dict[str, Any]]:
    resp = core_v1.list_namespaced_event(namespace, _preload_content=False)
    items: list[dict[str, Any]] = orjson.loads(resp.data)["items"]
    return items


def pod_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    cpu = mem = 0
    for container in pod["spec"]["containers"]:
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += milli_value(requests.get("cpu", "0"))
        mem += value(requests.get("memory", "0"))
    return cpu, mem


def overcommitted_nodes(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[str]:
    """Nodes where the bound pods' requests exceed allocatable (cpu, memory or pod count)."""
    used: dict[str, list[int]] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node:
            cpu, mem = pod_requests(pod)
            entry = used.setdefault(node, [0, 0, 0])
            entry[0] += cpu
            entry[1] += mem
            entry[2] += 1
    bad = []
    for node in nodes:
        name = node["metadata"]["name"]
        alloc = node["status"]["allocatable"]
        cpu, mem, count = used.get(name, [0, 0, 0])
        if cpu > milli_value(alloc["cpu"]) or mem > value(alloc["memory"]) or count > int(alloc["pods"]):
            bad.append(f"{name}: cpu {cpu}m/{alloc['cpu']}, memory {mem}/{alloc['memory']}, pods {count}")
    return bad


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _samples(text: str) -> Samples:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape(proc: Any) -> Samples:
    """A running py-scheduler's /metrics: (name, labels) -> value of every sample."""
    status, text = proc.get("/metrics")
    assert status == 200, text
    return _samples(text)


def scrape_kube_scheduler(handle: Any) -> Samples:
    """The /metrics of a kube-scheduler the control plane started (``start_kube_scheduler``'s handle)."""
    from devcluster.probe import http_get, unverified_tls

    port = next(a.split("=", 1)[1] for a in handle.argv if a.startswith("--secure-port="))
    status, body = http_get(f"https://127.0.0.1:{port}/metrics", context=unverified_tls(), timeout=10)
    assert status == 200, body[:200]
    return _samples(body.decode())


def no_preemption_running(samples: Samples) -> bool:
    """No asynchronous preemption is in flight in the scheduler these samples come from, so every victim
    it chose has been deleted (the barrier before checking that no more victims were taken).

    py-scheduler counts running preemptions in ``scheduler_goroutines{operation="preemption"}``.
    kube-scheduler has no such gauge: each preemption goroutine it starts observes
    ``scheduler_preemption_victims`` once and, after its last delete, counts itself in
    ``scheduler_preemption_goroutines_execution_total`` (SchedulerAsyncPreemption, on by default)."""
    running = samples.get(("scheduler_goroutines", frozenset({("operation", "preemption")})))
    if running is not None:
        return running == 0
    started = samples.get(("scheduler_preemption_victims_count", frozenset()), 0.0)
    finished = sum(
        v for (name, _), v in samples.items() if name == "scheduler_preemption_goroutines_execution_total"
    )
    return started == finished
