"""Pods (and a node) the real API server accepts but that no node can take, or that carry values the
scheduler cannot read: each bad pod gets a FailedScheduling Event naming its problem and a
PodScheduled=False condition, and the good pods created with them all bind, on the real control plane.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for
from tests.integration.workload import RUN_LABEL, create_pods, list_events, list_pods, make_pod

INT64_MAX = 9223372036854775807

Edit = Callable[[dict[str, Any]], None]


def with_resources(requests: dict[str, str], limits: dict[str, str] | None = None) -> Edit:
    def edit(pod: dict[str, Any]) -> None:
        resources = pod["spec"]["containers"][0]["resources"]
        resources["requests"].update(requests)
        if limits:
            resources["limits"] = limits

    return edit


def node_affinity(operator: str, values: list[str], *, required: bool) -> Edit:
    term = {"matchExpressions": [{"key": "rank", "operator": operator, "values": values}]}

    def edit(pod: dict[str, Any]) -> None:
        affinity: dict[str, Any]
        if required:
            affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        else:
            affinity = {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": term}]
            }
        pod["spec"]["affinity"] = {"nodeAffinity": affinity}

    return edit


def missing_claim(pod: dict[str, Any]) -> None:
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "no-such-claim"}}]


def spread_on_missing_key(pod: dict[str, Any]) -> None:
    pod["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 2147483647,
            "topologyKey": "no-such-key",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "x"}},
        }
    ]


def huge_init_container(pod: dict[str, Any]) -> None:
    init = copy.deepcopy(pod["spec"]["containers"][0])
    init["name"] = "init"
    init["resources"] = {"requests": {"cpu": "1e50"}}
    pod["spec"]["initContainers"] = [init]


# name -> (edit, words the FailedScheduling message must contain)
BAD: dict[str, tuple[Callable[[dict[str, Any]], None], tuple[str, ...]]] = {
    "cpu-1e100": (with_resources({"cpu": "1e100"}), ("Insufficient cpu",)),
    "memory-int64-max": (with_resources({"memory": str(INT64_MAX)}), ("Insufficient memory",)),
    "memory-1e30": (with_resources({"memory": "1e30"}), ("Insufficient memory",)),
    "ephemeral-1e40": (with_resources({"ephemeral-storage": "1e40"}), ("Insufficient ephemeral-storage",)),
    "extended-1e30": (
        with_resources({"example.com/gadget": "1e30"}, {"example.com/gadget": "1e30"}),
        ("Insufficient example.com/gadget",),
    ),
    "init-cpu-1e50": (huge_init_container, ("Insufficient cpu",)),
    # The API server checks Gt/Lt has one value, not that it is an integer.
    "required-gt-abc": (node_affinity("Gt", ["abc"], required=True), ("node affinity/selector",)),
    "required-gt-past-int64": (
        node_affinity("Gt", ["99999999999999999999"], required=True),
        ("node affinity/selector",),
    ),
    "preferred-gt-abc": (node_affinity("Gt", ["abc"], required=False), ("abc",)),
    "missing-pvc": (missing_claim, ('persistentvolumeclaim "no-such-claim" not found',)),
    "spread-missing-key": (spread_on_missing_key, ("topology spread constraints",)),
    # The longest name a pod may have: its Events' names must still fit (they add a suffix).
    "long-" + "n" * 248: (with_resources({"cpu": "1e100"}), ("Insufficient cpu",)),
}
LONG_GOOD = "good-long-" + "g" * 243


def test_bad_pods_get_failed_scheduling_events_and_good_pods_bind(
    *,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    # One node reports odd images: a negative size and two of int64's largest (their sum overflows).
    odd_images = {"img/negative:1": -5, "img/huge:1": INT64_MAX, "img/huge:2": INT64_MAX}
    create_nodes(
        api_client,
        [
            make_node(f"{run_id}-n0", labels={RUN_LABEL: run_id, "rank": "5"}, images=odd_images),
            make_node(f"{run_id}-n1", labels={RUN_LABEL: run_id, "rank": "7"}),
        ],
    )
    # Nodes a kubelet has not reported on yet, or reports oddly: no status at all; no allocatable
    # (capacity only); allocatable far past int64; zero pods allowed. Outside the run's node selector
    # (the vast one would take the huge pods), yet in every snapshot the scheduler builds.
    odd_nodes: list[dict[str, Any]] = [
        {"metadata": {"name": f"{run_id}-bare"}},
        {
            "metadata": {"name": f"{run_id}-capacity-only"},
            "status": {"capacity": {"cpu": "8", "pods": "110"}},
        },
        make_node(f"{run_id}-vast", cpu="1e100", memory="1e100"),
        make_node(f"{run_id}-no-pods"),
    ]
    odd_nodes[3]["status"]["allocatable"]["pods"] = "0"
    for node in odd_nodes:
        node["apiVersion"], node["kind"] = "v1", "Node"
        node["metadata"]["labels"] = {RUN_LABEL: f"{run_id}-odd"}
    create_nodes(api_client, odd_nodes)
    request.addfinalizer(
        lambda: core_v1.delete_collection_node(
            label_selector=f"{RUN_LABEL}={run_id}-odd", _preload_content=False
        )
    )
    proc = SchedulerProcess(control_plane.kubeconfig, tmp_path, scheduler_config()).start()
    processes.append(proc)
    proc.wait_ready(60)

    bad = []
    for name, (edit, _) in BAD.items():
        pod = make_pod(name, run_id)
        edit(pod)
        bad.append(pod)
    good = [make_pod(f"good-{i}", run_id) for i in range(6)] + [make_pod(LONG_GOOD, run_id)]
    for i, pod in enumerate(good[:3]):  # the odd images, on their own and together
        images = [["img/negative:1"], ["img/huge:1", "img/huge:2"], ["img/negative:1", "img/huge:1"]][i]
        container = pod["spec"]["containers"][0]
        pod["spec"]["containers"] = [
            {**container, "name": f"c{j}", "image": img} for j, img in enumerate(images)
        ]
    # Bad pods first, so the good ones queue behind them.
    create_pods(core_v1, namespace, bad, workers=1)
    create_pods(core_v1, namespace, good)

    def good_bound() -> bool:
        pods = {p["metadata"]["name"]: p for p in list_pods(core_v1, namespace)}
        return all(pods[p["metadata"]["name"]]["spec"].get("nodeName") for p in good)

    wait_for(good_bound, 30, "every good pod bound")

    def failures() -> dict[str, str]:
        return {
            e["involvedObject"]["name"]: e.get("message", "")
            for e in list_events(core_v1, namespace)
            if e.get("reason") == "FailedScheduling"
        }

    wait_for(lambda: set(BAD) <= set(failures()), 30, "a FailedScheduling event for every bad pod")
    messages = failures()
    for name, (_, words) in BAD.items():
        for word in words:
            assert word in messages[name], (name, messages[name])
    pods = {p["metadata"]["name"]: p for p in list_pods(core_v1, namespace)}
    for name in BAD:
        assert not pods[name]["spec"].get("nodeName"), name
        conditions = {c["type"]: c for c in pods[name]["status"].get("conditions", [])}
        assert conditions["PodScheduled"]["status"] == "False", (name, conditions)

    wait_for(
        lambda: any(
            e["involvedObject"]["name"] == LONG_GOOD and e.get("reason") == "Scheduled"
            for e in list_events(core_v1, namespace)
        ),
        30,
        "the Scheduled event of the pod with a 253-character name",
    )

    proc.assert_running()
    log = proc.log_path.read_text(errors="replace")
    assert "Traceback" not in log, log[-4000:]
    assert proc.stop() == 0, proc.log_tail()
