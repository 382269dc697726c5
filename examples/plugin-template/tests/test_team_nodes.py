"""TeamNodes, tested with py-scheduler's plugin test kit (the scheduler_harness and k8s fixtures)."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from types import ModuleType

import pytest
from my_scheduler_plugin import TeamNodes

from scheduler.testing import SchedulerHarness

Harness = Callable[..., SchedulerHarness]


def test_a_team_pod_prefers_its_own_nodes(scheduler_harness: Harness, k8s: ModuleType) -> None:
    h = scheduler_harness([TeamNodes], weights={"TeamNodes": 10})
    h.add(k8s.node("shared-1"), k8s.node("red-1", labels={"example.com/team": "red"}), k8s.node("shared-2"))
    result = h.schedule_one(k8s.pod("web", cpu="500m", labels={"team": "red"})).assert_on("red-1")
    assert result.scores()["TeamNodes"] == 1000


def test_other_teams_nodes_are_filtered_out(scheduler_harness: Harness, k8s: ModuleType) -> None:
    h = scheduler_harness([TeamNodes])
    h.add(k8s.node("blue-1", labels={"example.com/team": "blue"}), k8s.node("shared", cpu="1"))
    h.schedule_one(k8s.pod("a", cpu="1", labels={"team": "red"})).assert_on("shared")
    pending = h.schedule_one(k8s.pod("b", cpu="1", labels={"team": "red"}))
    pending.assert_pending("node belongs to team blue").assert_rejected_by("TeamNodes", "NodeResourcesFit")
    assert "TeamNodes" in pending.explain()


def test_a_new_node_of_the_team_wakes_the_pending_pod(scheduler_harness: Harness, k8s: ModuleType) -> None:
    h = scheduler_harness([TeamNodes])
    h.add(k8s.node("blue-1", labels={"example.com/team": "blue"}))
    h.schedule_one(k8s.pod("p", labels={"team": "red"})).assert_pending("belongs to team blue")
    h.add(k8s.node("red-1", labels={"example.com/team": "red"}))
    h.advance(20)
    (retry,) = h.run()
    retry.assert_on("red-1")


def test_the_args_rename_the_labels(scheduler_harness: Harness, k8s: ModuleType) -> None:
    h = scheduler_harness([TeamNodes], args={"TeamNodes": {"podLabel": "squad", "nodeLabel": "squad"}})
    h.add(k8s.node("a", labels={"squad": "x"}), k8s.node("b"))
    h.schedule_one(k8s.pod("p", labels={"squad": "y"})).assert_on("b")


def test_it_loads_through_its_entry_point_as_the_scheduler_loads_it(k8s: ModuleType) -> None:
    if not any(ep.name == "TeamNodes" for ep in entry_points(group="py_scheduler.plugins")):
        pytest.skip("the package is not installed (pip install -e .): no py_scheduler.plugins entry point")
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "py-scheduler", "plugins": {"multiPoint": {"enabled": [{"name": "TeamNodes"}]}}}
        ],
    }
    h = SchedulerHarness(config=config, objects=[k8s.node("green-1", labels={"example.com/team": "green"})])
    h.schedule_one(k8s.pod("p", labels={"team": "red"})).assert_pending("belongs to team green")
