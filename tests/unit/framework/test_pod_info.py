"""PodInfo's parsed facts: the affinity flags and host ports, including the shortcuts for the usual pod
(no affinity, no init containers) and the errors of malformed specs."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.types import HostPort, PodInfo, PodSpecError


def pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "1"}, "spec": spec}


TERM = {"labelSelector": {}, "topologyKey": "zone"}


@pytest.mark.parametrize(
    ("affinity", "flags"),
    [
        (None, (False, False)),
        ({}, (False, False)),
        ("not a map", (False, False)),
        ({"nodeAffinity": {}}, (False, False)),
        ({"podAffinity": {}}, (True, False)),
        ({"podAffinity": None}, (False, False)),
        ({"podAntiAffinity": {}}, (True, False)),
        ({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}, (True, True)),
        ({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}, (True, False)),
        ({"podAntiAffinity": "not a map"}, (True, False)),
    ],
)
def test_affinity_flags(affinity: Any, flags: tuple[bool, bool]) -> None:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if affinity is not None:
        spec["affinity"] = affinity
    info = PodInfo(pod(spec))
    assert (info.has_pod_affinity, info.has_required_anti_affinity) == flags
    # An explicit null reads as no affinity.
    if affinity is None:
        spec["affinity"] = None
        assert not PodInfo(pod(spec)).has_pod_affinity


def test_host_ports_count_sidecars_only_and_leave_the_spec_alone() -> None:
    containers = [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}]}]
    init = [
        {"name": "sidecar", "restartPolicy": "Always", "ports": [{"hostPort": 9090, "protocol": "UDP"}]},
        {"name": "init", "ports": [{"hostPort": 7070}]},
    ]
    spec = {"containers": containers, "initContainers": init}
    info = PodInfo(pod(spec))
    assert info.host_ports == (HostPort("0.0.0.0", "TCP", 8080), HostPort("0.0.0.0", "UDP", 9090))
    assert [c["name"] for c in spec["containers"]] == ["c"]
    assert PodInfo(pod({"containers": containers})).host_ports == (HostPort("0.0.0.0", "TCP", 8080),)
    assert PodInfo(pod({})).host_ports == ()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"containers": 5}, "pod ns/p: 'int' object is not iterable"),
        ({"containers": ["c"]}, "pod ns/p: 'str' object has no attribute 'get'"),
        ({"containers": [], "initContainers": ["c"]}, "pod ns/p: 'str' object has no attribute 'get'"),
    ],
)
def test_malformed_containers_are_pod_spec_errors(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(PodSpecError) as err:
        PodInfo(pod(spec))
    assert str(err.value) == message
