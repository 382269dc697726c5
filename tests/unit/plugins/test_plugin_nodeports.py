"""NodePorts: cases from upstream's node_ports_test.go (v1.36)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo
from scheduler.plugins.nodeports import NodePorts
from scheduling_queue.types import ActionType, QueueingHint, Resource
from tests.unit.plugins.plugin_testlib import node, node_info, pod, run_filter

REASON = "node(s) didn't have free ports for the requested pod ports"


def ports(*specs: str) -> list[dict[str, Any]]:
    out = []
    for spec in specs:
        protocol, ip, port = spec.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "hostIP": ip, "protocol": protocol})
    return out


def port_pod(*specs: str, **kw: Any) -> dict[str, Any]:
    return pod(ports=ports(*specs), **kw)


def node_using(*specs: str) -> Any:
    return node_info(node("n1"), port_pod(*specs, node_name="n1"))


CASES: list[tuple[str, dict[str, Any], Any, bool]] = [
    ("no ports: filter skipped", pod(), node_using(), True),
    ("other port", port_pod("UDP/127.0.0.1/8080"), node_using("UDP/127.0.0.1/9090"), True),
    ("same udp port", port_pod("UDP/127.0.0.1/8080"), node_using("UDP/127.0.0.1/8080"), False),
    ("same tcp port", port_pod("TCP/127.0.0.1/8080"), node_using("TCP/127.0.0.1/8080"), False),
    ("different host ip", port_pod("TCP/127.0.0.1/8080"), node_using("TCP/127.0.0.2/8080"), True),
    ("different protocol", port_pod("UDP/127.0.0.1/8080"), node_using("TCP/127.0.0.1/8080"), True),
    (
        "second udp port conflict",
        port_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        node_using("UDP/127.0.0.1/8080"),
        False,
    ),
    (
        "first tcp port conflict",
        port_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        node_using("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        False,
    ),
    (
        "0.0.0.0 wanted conflicts with a specific ip",
        port_pod("TCP/0.0.0.0/8001"),
        node_using("TCP/127.0.0.1/8001"),
        False,
    ),
    (
        "TCP conflict due to 0.0.0.0",
        port_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        node_using("TCP/127.0.0.1/8001"),
        False,
    ),
    (
        "specific ip conflicts with 0.0.0.0 in use",
        port_pod("TCP/127.0.0.1/8001"),
        node_using("TCP/0.0.0.0/8001"),
        False,
    ),
    (
        "different protocol against 0.0.0.0",
        port_pod("UDP/127.0.0.1/8001"),
        node_using("TCP/0.0.0.0/8001"),
        True,
    ),
    (
        "UDP conflict due to 0.0.0.0",
        port_pod("UDP/127.0.0.1/8001"),
        node_using("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        False,
    ),
    (
        "empty hostIP means 0.0.0.0 and empty protocol TCP",
        pod(ports=[{"containerPort": 8001, "hostPort": 8001}]),
        node_using("TCP/127.0.0.1/8001"),
        False,
    ),
    (
        "a non-sidecar init container's hostPort does not count",
        pod(extra_spec={"initContainers": [{"name": "i", "ports": ports("TCP/0.0.0.0/8001")}]}),
        node_using("TCP/0.0.0.0/8001"),
        True,
    ),
    (
        "a sidecar init container's hostPort counts",
        pod(
            extra_spec={
                "initContainers": [
                    {"name": "i", "restartPolicy": "Always", "ports": ports("TCP/0.0.0.0/8001")}
                ]
            }
        ),
        node_using("TCP/0.0.0.0/8001"),
        False,
    ),
]


@pytest.mark.parametrize(("pod_dict", "info", "fits"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter(pod_dict: dict[str, Any], info: Any, fits: bool) -> None:
    status = run_filter(NodePorts({}), pod_dict, info)
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.Unschedulable
        assert status.reasons == [REASON]


def test_pre_filter_skips_pods_without_host_ports() -> None:
    _, status = NodePorts({}).pre_filter(CycleState(), PodInfo(pod()), [])
    assert status is not None
    assert status.code is Code.Skip


def test_events() -> None:
    registrations = NodePorts({}).events_to_register()
    assert [(r.event.resource, r.event.action) for r in registrations] == [
        (Resource.AssignedPod, ActionType.Delete),
        (Resource.Node, ActionType.Add),
    ]
    assert registrations[1].hint is None


@pytest.mark.parametrize(
    ("deleted", "expected"),
    [
        (port_pod("TCP/127.0.0.1/8080", node_name="n1"), QueueingHint.Queue),
        (port_pod("TCP/127.0.0.1/8080", nominated_node_name="n1"), QueueingHint.Queue),
        (port_pod("TCP/127.0.0.1/8080"), QueueingHint.Skip),
        (port_pod("TCP/127.0.0.1/8081", node_name="n1"), QueueingHint.Skip),
        (pod(node_name="n1"), QueueingHint.Skip),
        (port_pod("TCP/0.0.0.0/8080", node_name="n1"), QueueingHint.Queue),
    ],
    ids=["assigned", "nominated", "unscheduled", "other-port", "no-ports", "wildcard"],
)
def test_pod_deleted_hint(deleted: dict[str, Any], expected: QueueingHint) -> None:
    hint = NodePorts({}).events_to_register()[0].hint
    assert hint is not None
    assert hint(port_pod("TCP/127.0.0.1/8080"), deleted, None) is expected
