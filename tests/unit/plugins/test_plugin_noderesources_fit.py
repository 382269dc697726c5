"""NodeResourcesFit: cases ported from upstream's fit_test.go, least/most_allocated_test.go and
requested_to_capacity_ratio_test.go (v1.36)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.status import Code
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduling_queue.types import ActionType, QueueingHint, Resource
from tests.unit.plugins.plugin_testlib import node, node_info, pod, run_filter, run_score

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
HUGEPAGES = "hugepages-2Mi"

# Upstream's makeResources(10, 20, 32, 5, 20, 5): cpu 10m, memory 20, 32 pods, 5 of aaa, 20 storage.
FILTER_NODE = node(
    "n1",
    allocatable={"cpu": "10m", "memory": "20", EXT_A: "5", "ephemeral-storage": "20", HUGEPAGES: "5"},
    pods=32,
)


def req(cpu: int = 0, memory: int = 0, **scalars: int) -> dict[str, str]:
    out = {"cpu": f"{cpu}m", "memory": str(memory)}
    out.update({name.replace("__", "/").replace("_", "."): str(v) for name, v in scalars.items()})
    return out


def resource_pod(
    *containers: dict[str, str], init: tuple[dict[str, str], ...] = (), **kw: Any
) -> dict[str, Any]:
    return pod(requests=containers, init_requests=init, **kw)


def existing(cpu: int, memory: int, extra: dict[str, str] | None = None) -> dict[str, Any]:
    requests = req(cpu, memory)
    requests.update(extra or {})
    return pod("existing", requests=[requests], node_name="n1")


FILTER_CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], Code, list[str]]] = [
    ("no resources requested always fits", pod(), existing(10, 20), {}, Code.Success, []),
    (
        "too many resources fails",
        resource_pod(req(1, 1)),
        existing(10, 20),
        {},
        Code.Unschedulable,
        ["Insufficient cpu", "Insufficient memory"],
    ),
    (
        "too many resources fails due to init container cpu",
        resource_pod(req(1, 1), init=(req(3, 1),)),
        existing(8, 19),
        {},
        Code.Unschedulable,
        ["Insufficient cpu"],
    ),
    (
        "init container fits because it's the max, not sum",
        resource_pod(req(1, 1), init=(req(1, 1), req(1, 1))),
        existing(9, 19),
        {},
        Code.Success,
        [],
    ),
    ("equal edge case", resource_pod(req(5, 1)), existing(5, 19), {}, Code.Success, []),
    (
        "one resource memory fits",
        resource_pod(req(2, 1)),
        existing(9, 5),
        {},
        Code.Unschedulable,
        ["Insufficient cpu"],
    ),
    (
        "extended resource capacity enforced: more than the node has is unresolvable",
        resource_pod(req(1, 1) | {EXT_A: "10"}),
        existing(0, 0, {EXT_A: "0"}),
        {},
        Code.UnschedulableAndUnresolvable,
        [f"Insufficient {EXT_A}"],
    ),
    (
        "extended resource allocatable enforced",
        resource_pod(req(1, 1) | {EXT_A: "1"}),
        existing(0, 0, {EXT_A: "5"}),
        {},
        Code.Unschedulable,
        [f"Insufficient {EXT_A}"],
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        resource_pod(req(1, 1) | {EXT_A: "3"}, req(1, 1) | {EXT_A: "3"}),
        existing(0, 0, {EXT_A: "2"}),
        {},
        Code.UnschedulableAndUnresolvable,
        [f"Insufficient {EXT_A}"],
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        resource_pod(req(1, 1) | {EXT_B: "1"}),
        existing(0, 0),
        {},
        Code.UnschedulableAndUnresolvable,
        [f"Insufficient {EXT_B}"],
    ),
    (
        "kubernetes.io resource capacity enforced",
        resource_pod(req(1, 1) | {K8S_IO_A: "10"}),
        existing(0, 0),
        {},
        Code.UnschedulableAndUnresolvable,
        [f"Insufficient {K8S_IO_A}"],
    ),
    (
        "hugepages resource capacity enforced",
        resource_pod(req(1, 1) | {HUGEPAGES: "10"}),
        existing(0, 0, {HUGEPAGES: "0"}),
        {},
        Code.UnschedulableAndUnresolvable,
        [f"Insufficient {HUGEPAGES}"],
    ),
    (
        "skip checking ignored extended resource",
        resource_pod(req(1, 1) | {EXT_B: "1"}),
        existing(0, 0),
        {"ignoredResources": [EXT_B]},
        Code.Success,
        [],
    ),
    (
        "skip checking ignored extended resource via resource groups; kubernetes.io is never ignored",
        resource_pod(req(1, 1) | {EXT_B: "1", K8S_IO_A: "1"}),
        existing(0, 0),
        {"ignoredResourceGroups": ["example.com"]},
        Code.UnschedulableAndUnresolvable,
        [f"Insufficient {K8S_IO_A}"],
    ),
    (
        "skip checking extended resource request with quantity zero",
        resource_pod(req(1, 1) | {EXT_A: "0"}),
        existing(0, 0, {EXT_A: "6"}),
        {},
        Code.Success,
        [],
    ),
    (
        "resources + pod overhead fits",
        resource_pod(req(1, 1), extra_spec={"overhead": {"cpu": "3m", "memory": "13"}}),
        existing(5, 5),
        {},
        Code.Success,
        [],
    ),
    (
        "requests + overhead does not fit for memory",
        resource_pod(req(1, 1), extra_spec={"overhead": {"cpu": "1m", "memory": "15"}}),
        existing(5, 5),
        {},
        Code.Unschedulable,
        ["Insufficient memory"],
    ),
    (
        "ephemeral storage",
        resource_pod({"ephemeral-storage": "25"}),
        existing(0, 0),
        {},
        Code.UnschedulableAndUnresolvable,
        ["Insufficient ephemeral-storage"],
    ),
]


@pytest.mark.parametrize(
    ("pod_dict", "existing_pod", "args", "code", "reasons"),
    [case[1:] for case in FILTER_CASES],
    ids=[case[0] for case in FILTER_CASES],
)
def test_filter(
    pod_dict: dict[str, Any],
    existing_pod: dict[str, Any],
    args: dict[str, Any],
    code: Code,
    reasons: list[str],
) -> None:
    status = run_filter(NodeResourcesFit(args), pod_dict, node_info(FILTER_NODE, existing_pod))
    if code is Code.Success:
        assert status is None
    else:
        assert status is not None
        assert status.code is code
        assert status.reasons == reasons


def test_too_many_pods() -> None:
    full = node("n1", allocatable={"cpu": "10", "memory": "20Gi"}, pods=1)
    status = run_filter(NodeResourcesFit({}), pod(), node_info(full, existing(0, 0)))
    assert status is not None
    assert status.code is Code.Unschedulable
    assert status.reasons == ["Too many pods"]
    status = run_filter(NodeResourcesFit({}), resource_pod(req(20000, 1)), node_info(full, existing(0, 0)))
    assert status is not None
    assert status.code is Code.UnschedulableAndUnresolvable
    assert status.reasons == ["Too many pods", "Insufficient cpu"]


def test_sidecar_requests_add_up() -> None:
    sidecar_pod = resource_pod(
        req(5, 1),
        extra_spec={
            "initContainers": [
                {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "6m"}}}
            ]
        },
    )
    status = run_filter(NodeResourcesFit({}), sidecar_pod, node_info(FILTER_NODE))
    assert status is not None
    assert status.reasons == ["Insufficient cpu"]


# --- scoring ------------------------------------------------------------------------------------

CAP_4000 = {"cpu": "4000", "memory": "10000"}
CAP_6000 = {"cpu": "6000", "memory": "10000"}
CAP_10000 = {"cpu": "10000", "memory": "20000"}


def cores(cpu: str, memory: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory}


TWO_CONTAINERS = [cores("1000", "2000"), cores("2000", "3000")]


def score_nodes(
    args: dict[str, Any], pod_dict: dict[str, Any], nodes: list[tuple[dict[str, Any], list[dict[str, Any]]]]
) -> list[int]:
    infos = [node_info(n, *pods) for n, pods in nodes]
    return run_score(NodeResourcesFit(args), pod_dict, infos)


def on(node_name: str, *requests: dict[str, str]) -> dict[str, Any]:
    return pod("e", requests=requests, node_name=node_name)


LEAST_CASES: list[
    tuple[
        str,
        dict[str, Any],
        list[tuple[dict[str, Any], list[dict[str, Any]]]],
        list[dict[str, Any]] | None,
        list[int],
    ]
] = [
    (
        "nothing scheduled, nothing requested",
        pod(extra_spec={"containers": []}),
        [(node("node1", allocatable=CAP_4000), []), (node("node2", allocatable=CAP_4000), [])],
        None,
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        pod(requests=TWO_CONTAINERS),
        [(node("node1", allocatable=CAP_4000), []), (node("node2", allocatable=CAP_6000), [])],
        None,
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        pod(extra_spec={"containers": []}),
        [
            (
                node("node1", allocatable=CAP_10000),
                [on("node1", cores("3000", "0")), on("node1", cores("3000", "0"))],
            ),
            (
                node("node2", allocatable=CAP_10000),
                [on("node2", cores("3000", "0")), on("node2", cores("3000", "5000"))],
            ),
        ],
        None,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        pod(requests=TWO_CONTAINERS),
        [
            (node("node1", allocatable=CAP_10000), [on("node1", cores("3000", "0"))]),
            (node("node2", allocatable=CAP_10000), [on("node2", cores("3000", "5000"))]),
        ],
        None,
        [57, 45],
    ),
    (
        "requested resources exceed node capacity",
        pod(requests=[cores("3000", "0")]),
        [
            (node("node1", allocatable=CAP_4000), [on("node1", cores("3000", "0"))]),
            (node("node2", allocatable=CAP_4000), [on("node2", cores("3000", "5000"))]),
        ],
        None,
        [50, 25],
    ),
    (
        "zero node resources",
        pod(extra_spec={"containers": []}),
        [
            (node("node1"), [on("node1", cores("3000", "0"))]),
            (node("node2"), [on("node2", cores("3000", "5000"))]),
        ],
        None,
        [0, 0],
    ),
    (
        "different weights on CPU and memory",
        pod(requests=TWO_CONTAINERS),
        [(node("node1", allocatable=CAP_4000), []), (node("node2", allocatable=CAP_6000), [])],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request it",
        pod(requests=TWO_CONTAINERS),
        [
            (node("node1", allocatable=CAP_6000), []),
            (node("node2", allocatable=CAP_6000 | {"intel.com/foo": "4"}), []),
        ],
        [
            {"name": "cpu", "weight": 1},
            {"name": "memory", "weight": 1},
            {"name": "intel.com/foo", "weight": 1},
        ],
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests it",
        pod(requests=[cores("3000", "5000") | {"intel.com/foo": "2"}]),
        [
            (node("node1", allocatable=CAP_6000 | {"intel.com/foo": "4"}), []),
            (node("node2", allocatable=CAP_6000 | {"intel.com/foo": "10"}), []),
        ],
        [
            {"name": "cpu", "weight": 1},
            {"name": "memory", "weight": 1},
            {"name": "intel.com/foo", "weight": 1},
        ],
        [50, 60],
    ),
    (
        "the node doesn't have the resource",
        pod(requests=[cores("3000", "4000")]),
        [
            (node("node1", allocatable=CAP_6000), []),
            (node("node2", allocatable=CAP_6000 | {"intel.com/foo": "4"}), []),
        ],
        [
            {"name": "intel.com/foo", "weight": 2},
            {"name": "cpu", "weight": 1},
            {"name": "memory", "weight": 1},
        ],
        [55, 55],
    ),
]


@pytest.mark.parametrize(
    ("pod_dict", "nodes", "resources", "expected"),
    [c[1:] for c in LEAST_CASES],
    ids=[c[0] for c in LEAST_CASES],
)
def test_least_allocated(pod_dict: Any, nodes: Any, resources: Any, expected: list[int]) -> None:
    args: dict[str, Any] = {}
    if resources is not None:
        args = {"scoringStrategy": {"type": "LeastAllocated", "resources": resources}}
    assert score_nodes(args, pod_dict, nodes) == expected


def test_least_allocated_counts_non_zero_requests() -> None:
    # A container without requests counts 100m cpu and 200Mi memory when scoring.
    big = {"cpu": "1", "memory": str(1000 * 1024 * 1024)}
    scores = score_nodes({}, pod(), [(node("node1", allocatable=big), [])])
    # cpu: (1000-100)*100/1000 = 90; memory: (1000-200)*100/1000 = 80 -> 85
    assert scores == [85]


def test_least_allocated_scores_container_requests_not_pod_level_ones() -> None:
    """Upstream's Fit builds its resourceAllocationScorer without enablePodLevelResources (fit.go,
    nodeResourceStrategyTypeMap), so calculatePodResourceRequest skips spec.resources: the pod scores
    with its containers' requests, each missing cpu/memory defaulted to 100m/200Mi. Found side by side:
    a pod requesting 700m/2Gi at pod level with two bare containers, on a 3-CPU 8Gi node; kube-scheduler
    logged requestedResource=[200,419430400] and scored 94 (py-scheduler scored 75)."""
    alloc = {"cpu": "3", "memory": "8Gi"}
    pod_level = {"resources": {"requests": {"cpu": "700m", "memory": "2Gi"}}}
    two_bare = pod(images=["a", "b"], extra_spec=pod_level)
    # cpu (3000-200)*100/3000 = 93; memory (8192-400)*100/8192 = 95 -> 94
    assert score_nodes({}, two_bare, [(node("node1", allocatable=alloc), [])]) == [94]
    # A container's own request still counts; the pod-level one never does.
    one = pod(requests=[{"cpu": "1"}], extra_spec={"resources": {"requests": {"cpu": "2", "memory": "4Gi"}}})
    # cpu (3000-1000)*100/3000 = 66; memory (8192-200)*100/8192 = 97 -> 81
    assert score_nodes({}, one, [(node("node1", allocatable=alloc), [])]) == [81]


MOST_CASES: list[
    tuple[
        str,
        dict[str, Any],
        list[tuple[dict[str, Any], list[dict[str, Any]]]],
        list[dict[str, Any]] | None,
        list[int],
    ]
] = [
    (
        "nothing scheduled, nothing requested",
        pod(extra_spec={"containers": []}),
        [(node("node1", allocatable=CAP_4000), []), (node("node2", allocatable=CAP_4000), [])],
        None,
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        pod(requests=TWO_CONTAINERS),
        [(node("node1", allocatable=CAP_4000), []), (node("node2", allocatable=CAP_6000), [])],
        None,
        [62, 50],
    ),
    (
        "resources requested, pods scheduled with resources",
        pod(requests=[cores("1000", "2000"), cores("2000", "3000")]),
        [
            (node("node1", allocatable=CAP_10000), [on("node1", cores("3000", "0"))]),
            (node("node2", allocatable=CAP_10000), [on("node2", cores("3000", "5000"))]),
        ],
        None,
        [42, 55],
    ),
    (
        "resources requested equal node capacity",
        pod(requests=[cores("2000", "4000"), cores("3000", "5000")]),
        [
            (node("node1", allocatable={"cpu": "5000", "memory": "10000"}), []),
            (node("node2", allocatable={"cpu": "10000", "memory": "9000"}), []),
        ],
        None,
        [95, 75],
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        pod(),
        [
            (
                node("node1", allocatable={"cpu": "250m", "memory": "1000Mi"}),
                [on("node1", {}), on("node1", {})],
            ),
            (node("node2", allocatable={"cpu": "250m", "memory": "1000Mi"}), []),
        ],
        None,
        [80, 30],
    ),
    (
        "honor extended resource if the pod requests it",
        pod(requests=[cores("3000", "5000") | {"intel.com/foo": "2"}]),
        [
            (node("node1", allocatable=CAP_6000 | {"intel.com/foo": "4"}), []),
            (node("node2", allocatable=CAP_6000 | {"intel.com/foo": "10"}), []),
        ],
        [
            {"name": "cpu", "weight": 1},
            {"name": "memory", "weight": 1},
            {"name": "intel.com/foo", "weight": 1},
        ],
        [50, 40],
    ),
]


@pytest.mark.parametrize(
    ("pod_dict", "nodes", "resources", "expected"),
    [c[1:] for c in MOST_CASES],
    ids=[c[0] for c in MOST_CASES],
)
def test_most_allocated(pod_dict: Any, nodes: Any, resources: Any, expected: list[int]) -> None:
    args = {"scoringStrategy": {"type": "MostAllocated", "resources": resources or []}}
    assert score_nodes(args, pod_dict, nodes) == expected


def rtcr(shape: list[tuple[int, int]], resources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": resources or [],
            "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]},
        }
    }


def test_requested_to_capacity_ratio_bin_packing() -> None:
    # Upstream: shape {0:0, 100:10} (bin packing), nodes 4000/10000 and 6000/10000.
    scores = score_nodes(
        rtcr([(0, 0), (100, 10)]),
        pod(requests=[cores("3000", "5000")]),
        [(node("node1", allocatable=CAP_4000), []), (node("node2", allocatable=CAP_6000), [])],
    )
    # node1: cpu 75, memory 50 -> 62.5 -> 63 (Go rounds halves away from zero); node2: 50, 50 -> 50
    assert scores == [63, 50]


def test_requested_to_capacity_ratio_spreading_and_zero_scores_left_out() -> None:
    scores = score_nodes(
        rtcr([(0, 10), (100, 0)]),
        pod(requests=[cores("3000", "5000")]),
        [(node("node1", allocatable=CAP_4000), []), (node("node2", allocatable=CAP_6000), [])],
    )
    # node1: cpu 25, memory 50 -> 37.5 -> 38; node2: 50, 50 -> 50
    assert scores == [38, 50]
    # A resource scoring 0 is left out of the mean: cpu full (0), memory at 50% (50) -> 50.
    scores = score_nodes(
        rtcr([(0, 10), (100, 0)]),
        pod(requests=[cores("4000", "5000")]),
        [(node("node1", allocatable=CAP_4000), [])],
    )
    assert scores == [50]


def test_requested_to_capacity_ratio_extended_resources() -> None:
    # Upstream's TestResourceBinPackingMultipleExtended: foo weight 3, bar weight 5, shape {0:0, 100:1}.
    resources = [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}]
    base = {"cpu": "4", "memory": str(10000 * 1024 * 1024)}
    nodes: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [
        (node("node1", allocatable=base | {"intel.com/foo": "8", "intel.com/bar": "4"}), []),
        (node("node2", allocatable=base | {"intel.com/foo": "4", "intel.com/bar": "8"}), []),
    ]
    scores = score_nodes(
        rtcr([(0, 0), (100, 1)], resources),
        pod(requests=[{"intel.com/foo": "2", "intel.com/bar": "2"}]),
        nodes,
    )
    # node1: foo 25% -> 2, bar 50% -> 5: (2*3 + 5*5)/8 = 3.875 -> 4; node2: (5*3 + 2*5)/8 = 3.125 -> 3
    assert scores == [4, 3]


# --- args ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"scoringStrategy": {"type": "Foo"}}, "scoringStrategy.type"),
        ({"scoringStrategy": {}}, "scoringStrategy.type"),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": -1}]}},
            "scoringStrategy.resources[0].weight",
        ),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
            "scoringStrategy.resources[0].weight",
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio",
        ),
        (rtcr([]), "scoringStrategy.requestedToCapacityRatio.shape"),
        (rtcr([(10, 1), (10, 2)]), "scoringStrategy.requestedToCapacityRatio.shape[1].utilization"),
        (rtcr([(0, 11)]), "scoringStrategy.requestedToCapacityRatio.shape[0].score"),
        (rtcr([(101, 1)]), "scoringStrategy.requestedToCapacityRatio.shape[0].utilization"),
        (
            {"scoringStrategy": {"type": "MostAllocated", "requestedToCapacityRatio": {"shape": []}}},
            "scoringStrategy.requestedToCapacityRatio",
        ),
        ({"ignoredResourceGroups": ["example.com/aaa"]}, "ignoredResourceGroups[0]"),
        ({"ignoredResources": ["-bad"]}, "ignoredResources[0]"),
        ({"ignoredResources": "example.com/aaa"}, "ignoredResources"),
        ({"scoringstrategy": {}}, "scoringstrategy"),
        ({"kind": "NodeAffinityArgs"}, "kind"),
    ],
)
def test_invalid_args(args: dict[str, Any], field: str) -> None:
    with pytest.raises(PluginArgsError) as caught:
        NodeResourcesFit(args)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"NodeResourcesFit: {field}: ")


def test_args_defaults() -> None:
    plugin = NodeResourcesFit(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesFitArgs"}
    )
    assert plugin.args.strategy == "LeastAllocated"
    assert [(r.name, r.weight) for r in plugin.args.resources] == [("cpu", 1), ("memory", 1)]
    plugin = NodeResourcesFit(
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu"}, {"name": "memory", "weight": 0}],
            }
        }
    )
    assert [(r.name, r.weight) for r in plugin.args.resources] == [("cpu", 1), ("memory", 1)]


# --- queueing hints -----------------------------------------------------------------------------


def hint(
    plugin: NodeResourcesFit,
    resource: Resource,
    pod_dict: Any,
    old: Any,
    new: Any,
    action: ActionType | None = None,
) -> QueueingHint:
    """Ask the hint registered for ``resource`` (and ``action``, where a resource has several)."""
    for registration in plugin.events_to_register():
        if registration.event.resource is resource and (
            action is None or registration.event.action == action
        ):
            assert registration.hint is not None
            return registration.hint(pod_dict, old, new)
    raise AssertionError(f"no {resource} registration")


def test_registered_events() -> None:
    """v1.37.2's TestEventsToRegister with InPlacePodVerticalScaling (GA) and DRAExtendedResource
    (GA, locked) on, in upstream's order; no UpdatePodScaleUp pair (its alpha gate is refused)."""
    events = [(r.event.resource, r.event.action) for r in NodeResourcesFit({}).events_to_register()]
    assert events == [
        (Resource.AssignedPod, ActionType.Delete),
        (Resource.Node, ActionType.Add | ActionType.UpdateNodeAllocatable),
        (Resource.DeviceClass, ActionType.Add | ActionType.Update),
        (Resource.AssignedPod, ActionType.UpdatePodScaleDown),
        (Resource.TargetPod, ActionType.UpdatePodScaleDown),
    ]


def device_class(name: str, extended_resource_name: str | None = None) -> dict[str, Any]:
    spec = {} if extended_resource_name is None else {"extendedResourceName": extended_resource_name}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_device_class_hints() -> None:
    """A class that comes to back an extended resource the pod asks for queues it (upstream's
    isSchedulableAfterDeviceClassEvent); other classes and unchanged names do not."""
    plugin = NodeResourcesFit({})
    implicit = pod(uid="implicit", requests=[{"cpu": "1", "deviceclass.resource.kubernetes.io/gpu": "1"}])
    declared = pod(uid="declared", requests=[{"cpu": "1", "example.com/gpu": "2"}])
    plain = pod(uid="plain", requests=[{"cpu": "1"}])
    gpu, other = device_class("gpu"), device_class("other")
    named = device_class("other", "example.com/gpu")
    # Added: by the implicit name, or by a declared name the pod requests.
    assert hint(plugin, Resource.DeviceClass, implicit, None, gpu) is QueueingHint.Queue
    assert hint(plugin, Resource.DeviceClass, implicit, None, other) is QueueingHint.Skip
    assert hint(plugin, Resource.DeviceClass, declared, None, named) is QueueingHint.Queue
    assert hint(plugin, Resource.DeviceClass, declared, None, other) is QueueingHint.Skip
    assert hint(plugin, Resource.DeviceClass, plain, None, named) is QueueingHint.Skip
    # Updated: only a change of the declared name counts, and only to one the pod requests.
    assert hint(plugin, Resource.DeviceClass, declared, other, named) is QueueingHint.Queue
    assert hint(plugin, Resource.DeviceClass, declared, named, named) is QueueingHint.Skip
    assert hint(plugin, Resource.DeviceClass, declared, named, other) is QueueingHint.Skip
    assert hint(plugin, Resource.DeviceClass, implicit, gpu, gpu) is QueueingHint.Skip


def test_node_hints() -> None:
    plugin = NodeResourcesFit({})
    target = pod(requests=[{"cpu": "2", "memory": "1Gi"}])
    small = node("n", allocatable={"cpu": "1", "memory": "4Gi"})
    big = node("n", allocatable={"cpu": "4", "memory": "4Gi"})
    bigger = node("n", allocatable={"cpu": "8", "memory": "4Gi"})
    more_memory = node("n", allocatable={"cpu": "4", "memory": "8Gi"})
    assert hint(plugin, Resource.Node, target, None, small) is QueueingHint.Skip
    assert hint(plugin, Resource.Node, target, None, big) is QueueingHint.Queue
    assert hint(plugin, Resource.Node, target, small, big) is QueueingHint.Queue
    assert hint(plugin, Resource.Node, target, big, bigger) is QueueingHint.Queue
    # It fits either way, and nothing the pod asks for grew (it was not rejected for this node).
    assert hint(plugin, Resource.Node, target, big, big) is QueueingHint.Skip
    assert hint(plugin, Resource.Node, pod(requests=[{"cpu": "2"}]), big, more_memory) is QueueingHint.Skip
    more_pods = node("n", allocatable={"cpu": "4", "memory": "4Gi"}, pods=200)
    assert hint(plugin, Resource.Node, target, big, more_pods) is QueueingHint.Queue


def _assigned_delete(plugin: NodeResourcesFit, target: Any, deleted: Any) -> QueueingHint:
    return hint(plugin, Resource.AssignedPod, target, deleted, None, ActionType.Delete)


def _assigned_scale_down(plugin: NodeResourcesFit, target: Any, old: Any, new: Any) -> QueueingHint:
    return hint(plugin, Resource.AssignedPod, target, old, new, ActionType.UpdatePodScaleDown)


def _target_scale_down(plugin: NodeResourcesFit, target: Any, old: Any, new: Any) -> QueueingHint:
    return hint(plugin, Resource.TargetPod, target, old, new, ActionType.UpdatePodScaleDown)


def test_assigned_pod_delete_hint() -> None:
    """v1.37.2's Test_isSchedulableAfterAssignedPodDelete (the deferred-resize cases need the refused
    InPlacePodVerticalScalingSchedulerPreemption gate): the deleted pod had a node or a nominated one."""
    plugin = NodeResourcesFit({})
    target = pod("pod1", requests=[{"cpu": "1"}])
    assert _assigned_delete(plugin, pod(), "not-a-pod") is QueueingHint.Queue  # backoff-wrong-old-object
    assert _assigned_delete(plugin, target, pod("pod2", requests=[{"cpu": "1"}], node_name="fake")) is (
        QueueingHint.Queue
    )
    assert _assigned_delete(plugin, {}, {}) is QueueingHint.Skip  # skip-queue-on-unscheduled-pod-deleted
    nominated = pod("pod2", requests=[{"cpu": "2"}], nominated_node_name="fake")
    assert _assigned_delete(plugin, target, nominated) is QueueingHint.Queue


def test_target_pod_scale_down_hint() -> None:
    """v1.37.2's Test_isSchedulableAfterTargetPodScaleDown: always Queue, without comparing uids (v1.36
    asked whether the scaled pod was the rejected one), so another pending pod's scale-down replayed
    from the in-flight log queues too."""
    plugin = NodeResourcesFit({})
    container_level = pod("pod1", uid="pod1", requests=[{"cpu": "1"}])
    pod_level = pod("pod1", uid="pod1", extra_spec={"resources": {"requests": {"cpu": "1"}}})
    assert _target_scale_down(plugin, container_level, None, None) is QueueingHint.Queue
    assert _target_scale_down(plugin, pod_level, None, None) is QueueingHint.Queue
    other_before = pod("other", uid="other", requests=[{"cpu": "2"}])
    other_after = pod("other", uid="other", requests=[{"cpu": "1"}])
    assert _target_scale_down(plugin, container_level, other_before, other_after) is QueueingHint.Queue


def _pod_level(name: str, requests: dict[str, str], node_name: str = "") -> dict[str, Any]:
    return pod(name, uid=name, node_name=node_name, extra_spec={"resources": {"requests": requests}})


def test_assigned_pod_scale_down_hint() -> None:
    """v1.37.2's Test_isSchedulableAfterAssignedPodScaleDown (without the deferred-resize cases)."""
    plugin = NodeResourcesFit({})
    target = pod("pod1", uid="pod1", requests=[{"cpu": "1"}])
    assert _assigned_scale_down(plugin, pod(), "not-a-pod", pod()) is QueueingHint.Queue
    assert _assigned_scale_down(plugin, pod(), pod(), "not-a-pod") is QueueingHint.Queue
    # skip-queue-on-other-unscheduled-pod
    unassigned_before = pod("pod2", uid="uid1", requests=[{"cpu": "2"}])
    unassigned_after = pod("pod2", uid="uid1", requests=[{"cpu": "1"}])
    assert _assigned_scale_down(plugin, target, unassigned_before, unassigned_after) is QueueingHint.Skip
    # skip-queue-on-other-pod-unrelated-resource-scaled-down
    memory_before = pod("pod2", uid="pod2", requests=[{"memory": "2"}], node_name="fake")
    memory_after = pod("pod2", uid="pod2", requests=[{"memory": "1"}], node_name="fake")
    assert _assigned_scale_down(plugin, target, memory_before, memory_after) is QueueingHint.Skip
    # skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down
    pod_level_target = _pod_level("pod1", {"cpu": "1"})
    assert (
        _assigned_scale_down(
            plugin,
            pod_level_target,
            _pod_level("pod2", {"memory": "2"}, "fake"),
            _pod_level("pod2", {"memory": "1"}, "fake"),
        )
        is QueueingHint.Skip
    )
    # queue-on-other-pod-some-resource-scale-down
    cpu_before = pod("pod2", uid="pod2", requests=[{"cpu": "2"}], node_name="fake")
    cpu_after = pod("pod2", uid="pod2", requests=[{"cpu": "1"}], node_name="fake")
    assert _assigned_scale_down(plugin, target, cpu_before, cpu_after) is QueueingHint.Queue
    # queue-on-other-pod-some-pod-level-resource-scale-down
    assert (
        _assigned_scale_down(
            plugin,
            pod_level_target,
            _pod_level("pod2", {"cpu": "2"}, "fake"),
            _pod_level("pod2", {"cpu": "1"}, "fake"),
        )
        is QueueingHint.Queue
    )


def test_pod_hint_uses_actuated_resources_while_resizing() -> None:
    plugin = NodeResourcesFit({})
    target = pod(requests=[{"cpu": "2"}])
    status = {"containerStatuses": [{"name": "c0", "resources": {"requests": {"cpu": "2"}}}]}
    before = pod("x", requests=[{"cpu": "2"}], node_name="n", uid="x-uid", status=status)
    # The spec shrank but the kubelet still runs the container with 2 cpus: nothing freed yet.
    after = pod("x", requests=[{"cpu": "1"}], node_name="n", uid="x-uid", status=status)
    assert _assigned_scale_down(plugin, target, before, after) is QueueingHint.Skip
    done = pod(
        "x",
        requests=[{"cpu": "1"}],
        node_name="n",
        uid="x-uid",
        status={"containerStatuses": [{"name": "c0", "resources": {"requests": {"cpu": "1"}}}]},
    )
    assert _assigned_scale_down(plugin, target, after, done) is QueueingHint.Queue


def test_hints_never_raise() -> None:
    plugin = NodeResourcesFit({})
    broken = pod(requests=[{"cpu": "lots"}])
    assert hint(plugin, Resource.Node, broken, None, node("n")) is QueueingHint.Queue
    # An update without the old object cannot be judged: queue rather than fail.
    assert _assigned_scale_down(plugin, pod(), None, {"spec": {"nodeName": "n"}, "metadata": {}}) is (
        QueueingHint.Queue
    )
