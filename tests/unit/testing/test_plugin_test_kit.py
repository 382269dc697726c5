"""The plugin test kit (scheduler.testing): builders, the harness on the real framework, cache and
queue, its assertions and its pytest fixtures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from examples.prefer_label import PreferLabel
from scheduler.framework import (
    RESOURCE_QUOTAS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    Resource,
    Status,
)
from scheduler.testing import SchedulerHarness, node, pod, pvc, resource_quota

REPO = Path(__file__).resolve().parents[3]


class QuotaGate:
    """Rejects every node when the pod's namespace has a quota named 'frozen'."""

    name = "QuotaGate"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if self.handle.lister(RESOURCE_QUOTAS).get("frozen", pod.namespace) is not None:
            return Status.unschedulable("namespace is frozen", resolvable=False)
        return None


class OnlyLabelled:
    """Filters out nodes without label ok=yes; a node being added may help."""

    name = "OnlyLabelled"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None if node.labels.get("ok") == "yes" else Status.unschedulable("node is not ok")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(Resource.Node, ActionType.Add, "NodeAdd"))]


def test_a_score_plugin_decides_between_equal_nodes_and_explain_says_so() -> None:
    h = SchedulerHarness([PreferLabel], args={"PreferLabel": {"label": "fast"}}, weights={"PreferLabel": 5})
    h.add(node("a"), node("b", labels={"fast": "yes"}), node("c"))
    result = h.schedule_one(pod("p", cpu="1")).assert_on("b")
    assert result.scores()["PreferLabel"] == 500  # 100, weight 5
    text = result.explain()
    assert "Outcome:   Binding on b" in text
    assert "PreferLabel                      100/100/500  0/0/0" in text
    assert result.explain_json()["node"] == "b"


def test_placements_accumulate_like_the_scheduler_assumes_them() -> None:
    h = SchedulerHarness()
    h.add(node("small", cpu="1"), node("big", cpu="2"))
    results = h.schedule(*(pod(f"p{i}", cpu="800m") for i in range(4)))
    placed = [r.node for r in results]
    assert sorted(n for n in placed if n) == ["big", "big", "small"]
    results[-1].assert_pending(r"0/2 nodes are available: 2 Insufficient cpu").assert_rejected_by(
        "NodeResourcesFit"
    )
    assert "default/p3" in h.pending()


def test_a_rejected_pod_waits_in_the_queue_until_an_event_its_plugin_registered() -> None:
    h = SchedulerHarness([OnlyLabelled])
    h.add(node("a"))
    first = h.schedule_one(pod("p"))
    first.assert_pending("node is not ok").assert_rejected_by("OnlyLabelled")
    assert h.pending() == ["default/p"]
    h.add(node("b", labels={"ok": "yes"}))  # NodeAdd: the plugin's hint moves the pod
    h.advance(20)  # past its backoff
    (retry,) = h.run()
    retry.assert_on("b")
    assert h.pending() == []


def test_plugins_read_any_object_through_the_handle() -> None:
    h = SchedulerHarness(
        [QuotaGate], objects=[node("a"), resource_quota("frozen", namespace="ns1", hard={"pods": "0"})]
    )
    h.schedule_one(pod("p", namespace="ns1")).assert_pending("namespace is frozen")
    h.schedule_one(pod("q", namespace="ns2")).assert_on("a")


def test_volumes_and_bound_pods_are_part_of_the_cluster() -> None:
    h = SchedulerHarness()
    h.add(
        node("a", cpu="1"),
        node("b", cpu="1"),
        pod("running", cpu="1", node_name="a"),
        pvc("data", volume_name=""),
    )
    h.schedule_one(pod("p", cpu="500m")).assert_on("b")
    # A pod whose claim does not exist is unschedulable, as in the scheduler.
    h.schedule_one(pod("v", pvcs=["missing"])).assert_pending('persistentvolumeclaim "missing" not found')


def test_a_config_file_and_a_snapshot_file_are_accepted(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: py-scheduler\n  plugins:\n"
        "    score: {enabled: [{name: 'examples.prefer_label:PreferLabel', weight: 5}]}\n"
        "  pluginConfig: [{name: 'examples.prefer_label:PreferLabel', args: {label: fast}}]\n"
    )
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {kind: Node, metadata: {name: x}, status: {allocatable: {cpu: '4', memory: 8Gi, pods: '9'}}}\n"
        "- {kind: Node, metadata: {name: y, labels: {fast: 'y'}}, status: {allocatable: {pods: '9'}}}\n"
    )
    h = SchedulerHarness(config=config, cluster=cluster)
    h.schedule_one(pod("p")).assert_on("y")


def test_a_plugin_that_does_not_match_the_protocols_is_refused_as_at_start_up() -> None:
    from tests.unit.framework.oot_bad_plugins import Misspelt

    with pytest.raises(Exception, match="method scroe is not an extension point; did you mean score"):
        SchedulerHarness([Misspelt])


def test_a_failed_assertion_says_what_happened_instead() -> None:
    h = SchedulerHarness(objects=[node("a", cpu="1")])
    result = h.schedule_one(pod("p", cpu="2"))
    with pytest.raises(
        AssertionError, match=r"expected on a, got pending: 0/1 nodes are available: 1 Insufficient cpu"
    ):
        result.assert_on("a")


def test_unknown_kinds_are_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="cannot add Frobnicator: not a kind the scheduler reads"):
        SchedulerHarness().add({"kind": "Frobnicator", "metadata": {"name": "x"}})


def test_the_pytest_fixtures_are_registered_by_entry_point(
    scheduler_harness: Callable[..., SchedulerHarness], k8s: ModuleType
) -> None:
    h = scheduler_harness([PreferLabel], args={"PreferLabel": {"label": "gpu"}})
    h.add(k8s.node("plain"), k8s.node("gpu", labels={"gpu": "1"}))
    h.schedule_one(k8s.pod("p")).assert_on("gpu")
