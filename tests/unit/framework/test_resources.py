"""The one PodRequests (``scheduler.framework.resources``): cases ported from component-helpers v0.37.2
``resource/helpers_test.go`` (TestPodResourceRequests, TestPodLevelResourceRequests,
TestAggregateContainerRequestsAndLimits) and the
scheduler's non-zero accounting (``PodInfo.CalculateResource``, ``getNonMissingContainerRequests``)."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

import scheduler.framework.resources as resources_module
from scheduler.framework.quantity import QuantityError, parse_quantity
from scheduler.framework.resources import (
    Resource,
    pod_request_amounts,
    pod_requests,
    pod_requests_and_non_zero,
    same_request_inputs,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.noderesources.resource_allocation import scoring_non_zero_requests

INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
ALWAYS = "Always"


def container(name: str, requests: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {"requests": requests} if requests else {}}
    out.update(extra)
    return out


def status(name: str, requests: dict[str, str] | None = None, allocated: dict[str, str] | None = None) -> Any:
    out: dict[str, Any] = {"name": name}
    if requests is not None:
        out["resources"] = {"requests": requests}
    if allocated is not None:
        out["allocatedResources"] = allocated
    return out


def make_pod(
    containers: list[Any] = (),  # type: ignore[assignment]
    init: list[Any] = (),  # type: ignore[assignment]
    statuses: list[Any] = (),  # type: ignore[assignment]
    init_statuses: list[Any] = (),  # type: ignore[assignment]
    conditions: list[Any] = (),  # type: ignore[assignment]
    pod_level: dict[str, str] | None = None,
    overhead: dict[str, str] | None = None,
    pod_status_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    if overhead is not None:
        spec["overhead"] = overhead
    pod_status: dict[str, Any] = {
        "containerStatuses": list(statuses),
        "initContainerStatuses": list(init_statuses),
        "conditions": list(conditions),
        **(pod_status_extra or {}),
    }
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "u", "resourceVersion": "1"},
        "spec": spec,
        "status": pod_status,
    }


def amounts(**quantities: str) -> dict[str, Fraction]:
    return {name.replace("_", "-"): parse_quantity(q) for name, q in quantities.items()}


# TestPodResourceRequests (the UseStatusResources cases; the scheduler always passes true).
RESIZE_CASES: list[tuple[str, dict[str, Any], dict[str, Fraction]]] = [
    (
        "resized, infeasible",
        make_pod(
            [container("c1", {"cpu": "4"})], statuses=[status("c1", {"cpu": "2"})], conditions=INFEASIBLE
        ),
        amounts(cpu="2"),
    ),
    (
        "resized, infeasible & in-progress",
        make_pod(
            [container("c1", {"cpu": "6"})],
            statuses=[status("c1", {"cpu": "2"}, {"cpu": "4"})],
            conditions=INFEASIBLE,
        ),
        amounts(cpu="4"),
    ),
    (
        "resized, no resize status",
        make_pod([container("c1", {"cpu": "4"})], statuses=[status("c1", {"cpu": "2"})]),
        amounts(cpu="4"),
    ),
    (
        "resized: per-resource 3-way maximum",
        make_pod(
            [container("c1", {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"})],
            statuses=[
                status(
                    "c1",
                    {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
                    {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                )
            ],
        ),
        amounts(cpu="30m", memory="30M", ephemeral_storage="30G"),
    ),
    (
        "resized, restartable init container, infeasible",
        make_pod(
            init=[container("s1", {"cpu": "4"}, restartPolicy=ALWAYS)],
            init_statuses=[status("s1", {"cpu": "2"})],
            conditions=INFEASIBLE,
        ),
        amounts(cpu="2"),
    ),
    (
        "resized, restartable init container, no resize status",
        make_pod(
            init=[container("s1", {"cpu": "4"}, restartPolicy=ALWAYS)],
            init_statuses=[status("s1", {"cpu": "2"})],
        ),
        amounts(cpu="4"),
    ),
    (
        "allocated without actuated resources counts as both (v0.37; cs.Resources == nil)",
        make_pod([container("c1", {"cpu": "1"})], statuses=[status("c1", None, {"cpu": "3"})]),
        amounts(cpu="3"),
    ),
    (
        "an ordinary init container's status counts in its peak (v0.37)",
        make_pod(
            [container("c1", {"cpu": "1"})],
            init=[container("i1", {"cpu": "2"})],
            init_statuses=[status("i1", {"cpu": "5"}, {"cpu": "5"})],
        ),
        amounts(cpu="5"),
    ),
    (
        "aggregate request resolves max of sums instead of sum of maxes",
        make_pod(
            [container("c1", {"cpu": "1"}), container("c2", {"cpu": "2"})],
            statuses=[status("c1", None, {"cpu": "2"}), status("c2", None, {"cpu": "1"})],
        ),
        amounts(cpu="3"),
    ),
    (
        "aggregate container request resolves directly from pod status when PLR vertical scaling enabled",
        make_pod(
            [container("c1", {"cpu": "1"})],
            pod_status_extra={"allocatedResources": {"cpu": "4"}, "resources": {"requests": {"cpu": "3"}}},
        ),
        amounts(cpu="4"),
    ),
    (
        "falls back to container status aggregation when podAllocatedResources is nil",
        make_pod(
            [container("c1", {"cpu": "1"})],
            statuses=[status("c1", {"cpu": "5"}, {"cpu": "6"})],
            pod_status_extra={"resources": {"requests": {"cpu": "3"}}},
        ),
        amounts(cpu="6"),
    ),
    (
        "falls back to container status aggregation when podResources is nil",
        make_pod(
            [container("c1", {"cpu": "1"})],
            statuses=[status("c1", {"cpu": "5"}, {"cpu": "6"})],
            pod_status_extra={"allocatedResources": {"cpu": "4"}},
        ),
        amounts(cpu="6"),
    ),
    (
        "infeasible resize without container statuses counts nothing of the spec",
        make_pod([container("c1", {"cpu": "1"})], conditions=INFEASIBLE),
        {},
    ),
    (
        "regular container with empty requests, but status with non-empty requests",
        make_pod([container("c1")], statuses=[status("c1", {"cpu": "1"}, {"cpu": "1"})]),
        amounts(cpu="1"),
    ),
    (
        "restartable-init, init and regular",
        make_pod(
            [container("c1", {"cpu": "1", "memory": "1Gi"}), container("c2", {"cpu": "500m"})],
            init=[
                container("s1", {"cpu": "100m", "memory": "128Mi"}, restartPolicy=ALWAYS),
                container("i1", {"cpu": "3", "memory": "1Ki"}),
            ],
            overhead={"cpu": "10m", "memory": "1k"},
        ),
        # max(1 + 0.5 + 0.1 sidecar, 0.1 sidecar + 3 init) + overhead
        {"cpu": Fraction("3.11"), "memory": Fraction(2**30 + 128 * 2**20 + 1000)},
    ),
]


@pytest.mark.parametrize(("pod", "expected"), [c[1:] for c in RESIZE_CASES], ids=[c[0] for c in RESIZE_CASES])
def test_pod_requests_with_status_resources(pod: dict[str, Any], expected: dict[str, Fraction]) -> None:
    assert pod_request_amounts(pod) == expected
    assert pod_requests(pod) == Resource.from_amounts(expected)
    assert pod_requests_and_non_zero(pod)[0] == Resource.from_amounts(expected)


def test_pod_requests_without_status_ignore_it() -> None:
    """ "resized, infeasible, but don't use status"."""
    pod = make_pod(
        [container("c1", {"cpu": "4"})], statuses=[status("c1", {"cpu": "2"})], conditions=INFEASIBLE
    )
    assert pod_request_amounts(pod, use_status=False) == amounts(cpu="4")


# TestPodLevelResourceRequests (SkipPodLevelResources false: PodLevelResources is on by default).
POD_LEVEL_CASES: list[tuple[str, dict[str, Any], dict[str, Fraction]]] = [
    ("pod level memory", make_pod(pod_level={"memory": "2Mi"}), amounts(memory="2Mi")),
    (
        "pod level memory and container level cpu",
        make_pod([container("c", {"cpu": "2m"})], pod_level={"memory": "2Mi"}),
        amounts(memory="2Mi", cpu="2m"),
    ),
    (
        "pod level unsupported resources set at both levels",
        make_pod([container("c", {"storage": "3Mi"})], pod_level={"storage": "2Mi"}),
        amounts(storage="3Mi"),
    ),
    (
        "pod level unsupported resources set at pod-level",
        make_pod([container("c", {"memory": "3Mi"})], pod_level={"storage": "2Mi"}),
        amounts(memory="3Mi"),
    ),
    (
        "both container-level and pod-level",
        make_pod([container("c", {"memory": "3Mi", "cpu": "2m"})], pod_level={"memory": "6Mi", "cpu": "8m"}),
        amounts(memory="6Mi", cpu="8m"),
    ),
    (
        "pod-level resources, container-level resources, init and sidecar",
        make_pod(
            [container("c", {"memory": "3Mi", "cpu": "2m"})],
            init=[
                container("i", {"memory": "5Mi", "cpu": "4m"}),
                container("s", {"memory": "2Mi", "cpu": "1m"}, restartPolicy=ALWAYS),
            ],
            pod_level={"memory": "18Mi", "cpu": "18m"},
        ),
        amounts(memory="18Mi", cpu="18m"),
    ),
    (
        "hugepage request single page size",
        make_pod(pod_level={"memory": "10Mi", "hugepages-2Mi": "2Mi"}),
        amounts(memory="10Mi", hugepages_2Mi="2Mi"),
    ),
    (
        "container-level and pod-level hugepages, single page size",
        make_pod([container("c", {"hugepages-2Mi": "6Mi"})], pod_level={"cpu": "1", "hugepages-2Mi": "10Mi"}),
        amounts(cpu="1", hugepages_2Mi="10Mi"),
    ),
    (
        "hugepages multiple page sizes between pod-level and container-level",
        make_pod(
            [container("c", {"memory": "4Mi", "hugepages-1Gi": "1Gi"})],
            pod_level={"cpu": "1", "hugepages-2Mi": "10Mi"},
        ),
        amounts(cpu="1", memory="4Mi", hugepages_2Mi="10Mi", hugepages_1Gi="1Gi"),
    ),
    (
        "pod-level requests with status resources (InPlacePodLevelResourcesVerticalScaling)",
        make_pod(
            [container("c", {"cpu": "1"})],
            pod_level={"cpu": "2", "memory": "1Gi"},
            pod_status_extra={
                "resources": {"requests": {"cpu": "3"}},
                "allocatedResources": {"memory": "2Gi"},
            },
        ),
        amounts(cpu="3", memory="2Gi"),
    ),
    (
        "pod level requests with PLR vertical scaling enabled and status populated",
        make_pod(
            [container("c1", {"cpu": "1"})],
            pod_level={"cpu": "2"},
            pod_status_extra={"allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "3.5"}}},
        ),
        amounts(cpu="3.5"),
    ),
    (
        "pod level requests with PLR vertical scaling enabled and infeasible resize",
        make_pod(
            [container("c1", {"cpu": "1"})],
            pod_level={"cpu": "10"},
            conditions=INFEASIBLE,
            pod_status_extra={"allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "4"}}},
        ),
        amounts(cpu="4"),
    ),
    (
        "pod-level overhead is added after the override",
        make_pod(pod_level={"cpu": "1"}, overhead={"cpu": "250m"}),
        amounts(cpu="1250m"),
    ),
]


@pytest.mark.parametrize(
    ("pod", "expected"), [c[1:] for c in POD_LEVEL_CASES], ids=[c[0] for c in POD_LEVEL_CASES]
)
def test_pod_level_requests(pod: dict[str, Any], expected: dict[str, Fraction]) -> None:
    assert pod_request_amounts(pod) == expected


# Non-zero accounting: PodInfo.CalculateResource's Non0CPU / Non0Mem.
NON_ZERO_CASES: list[tuple[str, dict[str, Any], int, int]] = [
    ("no requests: defaults per container", make_pod([container("a"), container("b")]), 200, 2 * 200 * 2**20),
    ("explicit zero is kept", make_pod([container("a", {"cpu": "0", "memory": "0"})]), 0, 0),
    (
        "pod-level memory only, no container cpu: cpu defaults per container",
        make_pod([container("a"), container("b")], pod_level={"memory": "1Gi"}),
        200,
        2**30,
    ),
    (
        "pod-level memory only, one container has cpu: no cpu default (requests has cpu)",
        make_pod([container("a", {"cpu": "200m"}), container("b")], pod_level={"memory": "1Gi"}),
        200,
        2**30,
    ),
    (
        "pod-level cpu and memory: no defaults at all",
        make_pod([container("a")], pod_level={"cpu": "50m", "memory": "64Mi"}),
        50,
        64 * 2**20,
    ),
    (
        "status resources count for the defaults too",
        make_pod([container("a")], statuses=[status("a", {"cpu": "300m"}, {"cpu": "300m"})]),
        300,
        200 * 2**20,
    ),
]


@pytest.mark.parametrize(
    ("pod", "milli_cpu", "memory"), [c[1:] for c in NON_ZERO_CASES], ids=[c[0] for c in NON_ZERO_CASES]
)
def test_non_zero_requests(pod: dict[str, Any], milli_cpu: int, memory: int) -> None:
    non_zero = pod_requests(pod, non_zero=True)
    assert (non_zero.milli_cpu, non_zero.memory) == (milli_cpu, memory)
    assert pod_requests_and_non_zero(pod)[1] == non_zero
    info = PodInfo(pod)
    assert (info.non_zero_requests.milli_cpu, info.non_zero_requests.memory) == (milli_cpu, memory)


def test_scorer_non_zero_defaults_every_container_and_skips_pod_level_requests() -> None:
    """calculatePodResourceRequest passes the defaults unconditionally, and Fit's scorer is built
    without enablePodLevelResources, so pod-level values never count there (kube-scheduler v1.36.3
    logs requestedResource=[200,419430400] for two bare containers under pod-level 700m/2Gi)."""
    pod = PodInfo(make_pod([container("a", {"cpu": "200m"}), container("b")], pod_level={"memory": "1Gi"}))
    assert pod.non_zero_requests.milli_cpu == 200
    assert pod.non_zero_requests.memory == 2**30
    assert scoring_non_zero_requests(pod).milli_cpu == 300
    assert scoring_non_zero_requests(pod).memory == 2 * 200 * 2**20


def test_assigned_pod_counts_at_its_resized_requests_on_the_node() -> None:
    """A running pod being resized up holds max(spec, actuated, allocated) on its node."""
    node = NodeInfo({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}})
    pod = make_pod([container("c", {"cpu": "1"})], statuses=[status("c", {"cpu": "2"}, {"cpu": "3"})])
    pod["spec"]["nodeName"] = "n"
    node.add_pod(PodInfo(pod))
    assert node.requested.milli_cpu == 3000


def test_exact_sums_round_once_like_quantities() -> None:
    """Upstream adds Quantities and rounds once in Value(); per-container rounding would overcount."""
    pod = make_pod([container("a", {"memory": "0.5"}), container("b", {"memory": "0.5"})])
    assert pod_requests(pod).memory == 1
    assert pod_requests_and_non_zero(pod)[0].memory == 1


# --- same_request_inputs: equal requests known without computing them ------------------------------

_ALL_CASES = [c[1] for c in RESIZE_CASES] + [c[1] for c in POD_LEVEL_CASES]


def test_same_request_inputs_implies_equal_requests_for_every_pair_of_cases() -> None:
    """Over every pair of the cases above (requests equal or not), "same" is only ever said of pods
    whose requests are equal; and every case is the same as itself and as a deep copy."""
    said_same = 0
    for a in _ALL_CASES:
        assert same_request_inputs(a, copy.deepcopy(a))
        for b in _ALL_CASES:
            if same_request_inputs(a, b):
                said_same += 1
                assert pod_request_amounts(a) == pod_request_amounts(b)
    assert said_same >= len(_ALL_CASES)


def _bound_echo(pod: dict[str, Any]) -> dict[str, Any]:
    """What a bind and the kubelet change that requests do not read."""
    echo = copy.deepcopy(pod)
    echo["spec"]["nodeName"] = "node-1"
    echo["metadata"]["resourceVersion"] = "2"
    echo["metadata"]["labels"] = {"app": "x"}
    echo["status"]["phase"] = "Running"
    echo["status"]["conditions"] = [*echo["status"]["conditions"], {"type": "PodScheduled", "status": "True"}]
    return echo


@pytest.mark.parametrize("pod", _ALL_CASES)
def test_an_update_requests_do_not_read_is_the_same(pod: dict[str, Any]) -> None:
    assert same_request_inputs(pod, _bound_echo(pod))
    assert pod_request_amounts(pod) == pod_request_amounts(_bound_echo(pod))


_BASE = make_pod(
    [container("c1", {"cpu": "1"})],
    init=[container("i1", {"cpu": "500m"})],
    statuses=[status("c1", {"cpu": "1"}, {"cpu": "1"})],
    init_statuses=[status("i1", {"cpu": "500m"}, {"cpu": "500m"})],
)


def _changed(path: str, value: Any) -> dict[str, Any]:
    pod = copy.deepcopy(_BASE)
    *parents, leaf = path.split(".")
    target: Any = pod
    for key in parents:
        target = target[key] if not key.isdigit() else target[int(key)]
    target[leaf] = value
    return pod


@pytest.mark.parametrize(
    "changed",
    [
        _changed("spec.containers.0.resources", {"requests": {"cpu": "2"}}),
        _changed("spec.initContainers.0.resources", {"requests": {"cpu": "3"}}),
        _changed("spec.initContainers.0.restartPolicy", ALWAYS),
        _changed("spec.resources", {"requests": {"cpu": "4"}}),
        _changed("spec.overhead", {"cpu": "1"}),
        _changed("status.containerStatuses", [status("c1", {"cpu": "2"}, {"cpu": "2"})]),
        _changed("status.initContainerStatuses", [status("i1", {"cpu": "3"}, {"cpu": "3"})]),
        _changed("status.allocatedResources", {"cpu": "5"}),
        _changed("status.conditions", INFEASIBLE),
    ],
    ids=[
        "container requests",
        "init container requests",
        "init container becomes a sidecar",
        "pod-level requests",
        "overhead",
        "container statuses",
        "init container statuses",
        "pod allocated resources",
        "resize turns infeasible",
    ],
)
def test_a_change_requests_read_is_not_the_same(changed: dict[str, Any]) -> None:
    assert not same_request_inputs(_BASE, changed)
    assert not same_request_inputs(changed, _BASE)


def test_pod_level_status_resources_are_read() -> None:
    """status.allocatedResources with status.resources: the kubelet's pod-wide sums, which requests read
    (InPlacePodLevelResourcesVerticalScaling)."""
    base = make_pod([container("c1", {"cpu": "1"})], pod_status_extra={"allocatedResources": {"cpu": "1"}})
    resized = copy.deepcopy(base)
    resized["status"]["resources"] = {"requests": {"cpu": "3"}}
    resized["status"]["allocatedResources"] = {"cpu": "3"}
    assert pod_request_amounts(base) != pod_request_amounts(resized)
    assert not same_request_inputs(base, resized)
    only_resources = copy.deepcopy(base)
    only_resources["status"]["resources"] = {"requests": {"cpu": "1"}}
    assert not same_request_inputs(base, only_resources)


def test_conditions_that_change_no_resize_verdict_are_the_same() -> None:
    pending = [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]
    a = _changed("status.conditions", [{"type": "Ready", "status": "False"}])
    b = _changed("status.conditions", [{"type": "Ready", "status": "True"}, *pending])
    assert same_request_inputs(a, b)
    assert not same_request_inputs(a, _changed("status.conditions", INFEASIBLE))


# The one-container memo of pod_requests_and_non_zero: the same answers as the general sums.
ONE_CONTAINER_REQUESTS: list[dict[str, Any]] = [
    {"cpu": "100m", "memory": "128Mi"},
    {"memory": "128Mi", "cpu": "100m"},
    {"cpu": "100m"},
    {"memory": "1Gi"},
    {},
    {"cpu": "1", "memory": "1", "ephemeral-storage": "1Gi", "example.com/gpu": "2"},
    {"example.com/gpu": "2", "cpu": "250m"},
    {"cpu": "0.1"},
]


@pytest.mark.parametrize("requests", ONE_CONTAINER_REQUESTS)
def test_one_container_memo_matches_the_general_sums(requests: dict[str, str]) -> None:
    resources_module._ONE_CONTAINER.clear()
    pod = make_pod([{"name": "c", "resources": {"requests": dict(requests)}}])
    # The general path's answer: pod_requests reads every rule, not the fast path.
    expected = (pod_requests(pod), pod_requests(pod, non_zero=True))
    first = pod_requests_and_non_zero(pod)
    assert first == expected
    assert len(resources_module._ONE_CONTAINER) == 1
    again = pod_requests_and_non_zero(make_pod([{"name": "d", "resources": {"requests": dict(requests)}}]))
    assert again == expected
    # Remembered: the second pod of those requests shares the first one's (never written) Resources.
    assert again[0] is first[0] and again[1] is first[1]
    assert list(again[0].scalar) == list(expected[0].scalar)


def test_one_container_memo_keeps_numbers_and_errors_out() -> None:
    resources_module._ONE_CONTAINER.clear()
    # A number is a valid quantity, but 1 == 1.0 == True as tuple keys: not remembered.
    numeric = make_pod([{"name": "c", "resources": {"requests": {"cpu": 1}}}])
    assert pod_requests_and_non_zero(numeric)[0].milli_cpu == 1000
    assert resources_module._ONE_CONTAINER == {}
    # A bad quantity raises every time, the same error, and is not remembered.
    bad = make_pod([{"name": "c", "resources": {"requests": {"cpu": "lots"}}}])
    errors = []
    for _ in range(2):
        with pytest.raises(QuantityError) as err:
            pod_requests_and_non_zero(bad)
        errors.append(str(err.value))
    assert errors[0] == errors[1]
    assert resources_module._ONE_CONTAINER == {}


def test_one_container_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    resources_module._ONE_CONTAINER.clear()
    monkeypatch.setattr(resources_module, "_ONE_CONTAINER_MAX", 2)
    for milli in (1, 2, 3):
        pod = make_pod([{"name": "c", "resources": {"requests": {"cpu": f"{milli}m"}}}])
        assert pod_requests_and_non_zero(pod)[0].milli_cpu == milli
    assert len(resources_module._ONE_CONTAINER) == 1


def test_a_boolean_quantity_is_refused_even_after_the_equal_number_was_read() -> None:
    # True == 1.0 and hash(True) == hash(1.0): an untyped cache would answer True with 1.0's value.
    assert parse_quantity(1.0) == Fraction(1)
    with pytest.raises(QuantityError):
        parse_quantity(True)
    assert parse_quantity(0.0) == Fraction(0)
    with pytest.raises(QuantityError):
        parse_quantity(False)
