"""Upstream's table tests for PodTopologySpread, ported case by case (names kept) from
``pkg/scheduler/framework/plugins/podtopologyspread/{filtering,scoring,plugin}_test.go`` at v1.36.3; the
pod-change hint tables are v1.37.2's (split into AssignedPod and TargetPod tables).

The tables were converted mechanically from the Go source and keep its shape: ``st.MakePod()`` builders
(tests/unit/plugins/st_wrappers.py), Go struct literals as ``GoStruct``/``dict``, the Go field names.
tests/unit/plugins/test_plugin_podtopologyspread.py runs them.
"""

# ruff: noqa: E501, N816
from __future__ import annotations

import math
from typing import Any

from scheduler.framework.status import Code
from scheduling_queue.types import QueueingHint
from tests.unit.plugins.st_wrappers import GoStruct, MakeLabelSelector, MakeNode, MakePod

fooSelector = MakeLabelSelector().Exists("foo").Obj()
barSelector = MakeLabelSelector().Exists("bar").Obj()
taints: list[dict[str, Any]] = [
    {"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"}
]


def topologyNormalizingWeight(size: int) -> float:
    return math.log(size + 2)


def set_of(*names: str) -> set[str]:
    return set(names)


def mustConvertLabelSelectorAsSelector(_t: Any, selector: Any) -> Any:
    return selector


t = None


class labels:  # noqa: N801 - the Go package of labels.Nothing()
    @staticmethod
    def Nothing() -> Any:
        return None


def newCriticalPaths() -> tuple[tuple[str, int], tuple[str, int]]:
    return (("", 2**31 - 1), ("", 2**31 - 1))


class st:  # noqa: N801 - the Go package of st.NodeSelectorTypeMatchExpressions
    NodeSelectorTypeMatchExpressions = "matchExpressions"


# TestPreFilterState (filtering_test.go)
PRE_FILTER_STATE: list[dict[str, Any]] = [
    dict(
        name="clean cluster with one spreadConstraint",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            5, "zone", "DoNotSchedule", MakeLabelSelector().Label("foo", "bar").Obj(), None, None, None, None
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=5,
                    TopologyKey="zone",
                    Selector=(MakeLabelSelector().Label("foo", "bar").Obj()),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone1", 0), ("zone2", 0))],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
        ),
    ),
    dict(
        name="normal case with one spreadConstraint",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 2), ("zone1", 3))],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 2,
                }
            ],
        ),
    ),
    dict(
        name="normal case with null label selector",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", None, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=labels.Nothing(),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 0), ("zone1", 0))],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
        ),
    ),
    dict(
        name="normal case with one spreadConstraint, on a 3-zone cluster",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
            MakeNode().Name("node-o").Label("zone", "zone3").Label("node", "node-o").Obj(),
            MakeNode().Name("node-p").Label("zone", "zone3").Label("node", "node-p").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone3", 0), ("zone2", 2))],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 2,
                    "zone3": 0,
                }
            ],
        ),
    ),
    dict(
        name="namespace mismatch doesn't count",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Namespace("ns2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 1), ("zone1", 2))],
            TpValueToMatchNum=[
                {
                    "zone1": 2,
                    "zone2": 1,
                }
            ],
        ),
    ),
    dict(
        name="normal case with two spreadConstraints",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone1", 3), ("zone2", 4)), (("node-x", 0), ("node-b", 1))],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 4,
                },
                {
                    "node-a": 2,
                    "node-b": 1,
                    "node-x": 0,
                    "node-y": 4,
                },
            ],
        ),
    ),
    dict(
        name="soft spreadConstraints should be bypassed",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone1", 3), ("zone2", 4)), (("node-b", 1), ("node-a", 2))],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 4,
                },
                {
                    "node-a": 2,
                    "node-b": 1,
                    "node-y": 4,
                },
            ],
        ),
    ),
    dict(
        name="different labelSelectors - simple version",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 0), ("zone1", 1)), (("node-a", 0), ("node-y", 0))],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 0,
                },
                {
                    "node-a": 0,
                    "node-b": 1,
                    "node-y": 0,
                },
            ],
        ),
    ),
    dict(
        name="different labelSelectors - complex pods",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone1", 3), ("zone2", 4)), (("node-b", 0), ("node-a", 1))],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 4,
                },
                {
                    "node-a": 1,
                    "node-b": 0,
                    "node-y": 2,
                },
            ],
        ),
    ),
    dict(
        name="two spreadConstraints, and with podAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn("node", ["node-x"])
        .  # exclude node-x
        SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone1", 3), ("zone2", 4)), (("node-b", 1), ("node-a", 2))],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 4,
                },
                {
                    "node-a": 2,
                    "node-b": 1,
                    "node-y": 4,
                },
            ],
        ),
    ),
    dict(
        name="default constraints and a service",
        pod=MakePod().Name("p").Label("foo", "bar").Label("baz", "kar").Obj(),
        defaultConstraints=[
            dict(MaxSkew=3, TopologyKey="node", WhenUnsatisfiable="DoNotSchedule"),
            dict(MaxSkew=2, TopologyKey="node", WhenUnsatisfiable="ScheduleAnyway"),
            dict(MaxSkew=5, TopologyKey="rack", WhenUnsatisfiable="DoNotSchedule"),
        ],
        objs=[
            GoStruct("v1.Service", Spec=GoStruct("v1.ServiceSpec", Selector={"foo": "bar"})),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=3,
                    TopologyKey="node",
                    Selector=(MakeLabelSelector().Label("foo", "bar").Obj()),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=5,
                    TopologyKey="rack",
                    Selector=(MakeLabelSelector().Label("foo", "bar").Obj()),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[newCriticalPaths(), newCriticalPaths()],
            TpValueToMatchNum=[(), ()],
        ),
    ),
    dict(
        name="default constraints and a service that doesn't match",
        pod=MakePod().Name("p").Label("foo", "bar").Obj(),
        defaultConstraints=[
            dict(MaxSkew=3, TopologyKey="node", WhenUnsatisfiable="DoNotSchedule"),
        ],
        objs=[
            GoStruct("v1.Service", Spec=GoStruct("v1.ServiceSpec", Selector={"baz": "kep"})),
        ],
        wantPrefilterStatus=Code.Skip,
    ),
    dict(
        name="default constraints and a service, but pod has constraints",
        pod=MakePod()
        .Name("p")
        .Label("foo", "bar")
        .Label("baz", "tar")
        .SpreadConstraint(
            1, "zone", "DoNotSchedule", MakeLabelSelector().Label("baz", "tar").Obj(), None, None, None, None
        )
        .SpreadConstraint(
            2,
            "planet",
            "ScheduleAnyway",
            MakeLabelSelector().Label("fot", "rok").Obj(),
            None,
            None,
            None,
            None,
        )
        .Obj(),
        defaultConstraints=[
            dict(MaxSkew=2, TopologyKey="node", WhenUnsatisfiable="DoNotSchedule"),
        ],
        objs=[
            GoStruct("v1.Service", Spec=GoStruct("v1.ServiceSpec", Selector={"foo": "bar"})),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(MakeLabelSelector().Label("baz", "tar").Obj()),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[newCriticalPaths()],
            TpValueToMatchNum=[()],
        ),
    ),
    dict(
        name="default soft constraints and a service",
        pod=MakePod().Name("p").Label("foo", "bar").Obj(),
        defaultConstraints=[
            dict(MaxSkew=2, TopologyKey="node", WhenUnsatisfiable="ScheduleAnyway"),
        ],
        objs=[
            GoStruct("v1.Service", Spec=GoStruct("v1.ServiceSpec", Selector={"foo": "bar"})),
        ],
        wantPrefilterStatus=Code.Skip,
    ),
    dict(
        name="TpKeyToDomainsNum is calculated when MinDomains is enabled",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone1", 3), ("zone2", 4)), (("node-x", 0), ("node-b", 1))],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 4,
                },
                {
                    "node-a": 2,
                    "node-b": 1,
                    "node-x": 0,
                    "node-y": 4,
                },
            ],
        ),
    ),
    dict(
        name="feature gate disabled with NodeAffinityPolicy",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("node-a", 1), ("node-b", 2))],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                }
            ],
        ),
        enableNodeInclusionPolicy=False,
    ),
    dict(
        name="NodeAffinityPolicy honored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("node-a", 1), ("node-b", 2))],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                }
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy ignored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("node-c", 0), ("node-a", 1))],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-c": 0,
                }
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy honored with nodeAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], st.NodeSelectorTypeMatchExpressions)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-e").Node("node-c").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("node-a", 1), ("node-b", 2))],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                }
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy ignored with nodeAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], st.NodeSelectorTypeMatchExpressions)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("node-c", 0), ("node-a", 1))],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-c": 0,
                }
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="feature gate disabled with NodeTaintsPolicy",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("node-c", 0), ("node-a", 1))],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-c": 0,
                }
            ],
        ),
        enableNodeInclusionPolicy=False,
    ),
    dict(
        name="NodeTaintsPolicy ignored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("node-c", 0), ("node-a", 1))],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-c": 0,
                }
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy honored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, "Honor", None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Honor",
                ),
            ],
            CriticalPaths=[(("node-a", 1), ("node-b", 2))],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                }
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy honored with tolerated taints",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, "Honor", None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Honor",
                ),
            ],
            CriticalPaths=[(("node-c", 0), ("node-a", 1))],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-c": 0,
                }
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone1", 0), ("zone2", 1)), (("node-a", 0), ("node-x", 1))],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 1,
                },
                {
                    "node-a": 0,
                    "node-b": 2,
                    "node-x": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Honor", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Taints(taints).Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Honor",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone1", 0), ("zone2", 1)), (("node-a", 0), ("node-x", 1))],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 1,
                },
                {
                    "node-a": 0,
                    "node-b": 2,
                    "node-x": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("node", "node-b")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone1", 0), ("zone2", 1)), (("node-b", 0), ("node-x", 1))],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 1,
                },
                {
                    "node-b": 0,
                    "node-x": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, "Ignore", None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, "Honor", None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("node", "node-b")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Label("foo", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-x2").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Honor",
                ),
            ],
            CriticalPaths=[(("zone1", 2), ("zone2", 3)), (("node-y", 1), ("node-x", 2))],
            TpValueToMatchNum=[
                {
                    "zone1": 2,
                    "zone2": 3,
                },
                {
                    "node-x": 2,
                    "node-y": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="matchLabelKeys ignored when feature gate disabled",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, ["bar"])
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 2), ("zone1", 3))],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 2,
                }
            ],
        ),
        enableMatchLabelKeys=False,
    ),
    dict(
        name="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "a")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, ["bar"])
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("bar", "a").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Label("bar", "a").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(MakeLabelSelector().Exists("foo").Label("bar", "a").Obj()),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 1), ("zone1", 1))],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 1,
                }
            ],
        ),
        enableMatchLabelKeys=True,
    ),
    dict(
        name="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod=MakePod()
        .Name("p")
        .Label("foo", "a")
        .SpreadConstraint(1, "zone", "DoNotSchedule", MakeLabelSelector().Obj(), None, None, None, ["foo"])
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(MakeLabelSelector().Label("foo", "a").Obj()),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 2), ("zone1", 3))],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 2,
                }
            ],
        ),
        enableMatchLabelKeys=True,
    ),
    dict(
        name="key in matchLabelKeys is ignored when LabelSelector is None when feature gate enabled",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", None, None, None, None, ["bar"])
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(None),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 0), ("zone1", 0))],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
        ),
        enableMatchLabelKeys=True,
    ),
    dict(
        name="no pod is matched when LabelSelector is None when feature gate disabled",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", None, None, None, None, ["bar"])
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(None),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 0), ("zone1", 0))],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
        ),
    ),
    dict(
        name="key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, ["bar"])
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 2), ("zone1", 3))],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 2,
                }
            ],
        ),
        enableMatchLabelKeys=True,
    ),
    dict(
        name="two spreadConstraints with the same topologyKey",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        want=GoStruct(
            "preFilterState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[(("zone2", 1), ("zone1", 2)), (("zone1", 1), ("zone2", 3))],
            TpValueToMatchNum=[
                {
                    "zone1": 2,
                    "zone2": 1,
                },
                {
                    "zone1": 1,
                    "zone2": 3,
                },
            ],
        ),
    ),
    dict(
        name="skip if not specified",
        pod=MakePod().Name("p").Label("foo", "").Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
        ],
        wantPrefilterStatus=Code.Skip,
    ),
]

# TestSingleConstraint (filtering_test.go)
SINGLE_CONSTRAINT: list[dict[str, Any]] = [
    dict(
        name="no existing pods",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Success,
            "node-x": Code.Success,
            "node-y": Code.Success,
        },
    ),
    dict(
        name="no existing pods, incoming pod doesn't match itself",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Success,
            "node-x": Code.Success,
            "node-y": Code.Success,
        },
    ),
    dict(
        name="existing pods in a different namespace do not count",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Namespace("ns2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Success,
            "node-x": Code.Unschedulable,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        name="existing pods do not match null selector",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", None, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Success,
            "node-x": Code.Success,
            "node-y": Code.Success,
        },
    ),
    dict(
        name="pods spread across zones as 3/3, all nodes fit",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Success,
            "node-x": Code.Success,
            "node-y": Code.Success,
        },
    ),
    dict(
        # TODO(Huang-Wei): maybe document this to remind users that typos on node labels
        # can cause unexpected behavior
        name="pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zon", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.UnschedulableAndUnresolvable,
            "node-x": Code.Unschedulable,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        name="pod cannot be scheduled as all nodes don't have label 'rack'",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "rack", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UnschedulableAndUnresolvable,
            "node-x": Code.UnschedulableAndUnresolvable,
        },
    ),
    dict(
        name="pods spread across nodes as 2/1/0/3, only node-x fits",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        name="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Success,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        # not a desired case, but it can happen
        # TODO(Huang-Wei): document this "pod-not-match-itself" case
        # in this case, placement of the new pod doesn't change pod distribution of the cluster
        # as the incoming pod doesn't have label "foo"
        name="pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        pod=MakePod()
        .Name("p")
        .Label("bar", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Success,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        # only node-a and node-y are considered, so pods spread as 2/~1~/~0~/3
        # ps: '~num~' is a markdown symbol to denote a crossline through 'num'
        # but in this unit test, we don't run NodeAffinity/TaintToleration Predicate, so node-b and node-x are
        # still expected to be fits;
        # the fact that node-a fits can prove the underlying logic works
        name="incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("node", ["node-a", "node-y"], st.NodeSelectorTypeMatchExpressions)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Success,  # in real case, it's False
            "node-x": Code.Success,  # in real case, it's False
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        name="terminating Pods should be excluded",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("foo", "").Terminating().Obj(),
            MakePod().Name("p-b").Node("node-b").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Unschedulable,
        },
    ),
    dict(
        # In this unit test, NodeAffinity plugin is not involved, so node-b still fits
        name="incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn("node", ["node-b"])
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Success,  # in real case, it's Unschedulable
            "node-x": Code.Unschedulable,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        name="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            2,
            "node",
            "DoNotSchedule",
            fooSelector,
            4,  # larger than the number of domains(3)
            None,
            None,
            None,
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-c": Code.Success,
        },
    ),
    dict(
        name="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            2,
            "node",
            "DoNotSchedule",
            fooSelector,
            2,  # smaller than the number of domains(3)
            None,
            None,
            None,
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Success,
            "node-c": Code.Success,
        },
    ),
    dict(
        name="pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            2,
            "zone",
            "DoNotSchedule",
            fooSelector,
            3,  # larger than the number of domains(2)
            None,
            None,
            None,
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Success,
        },
    ),
    dict(
        name="pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            2,
            "zone",
            "DoNotSchedule",
            fooSelector,
            1,  # smaller than the number of domains(2)
            None,
            None,
            None,
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Success,
            "node-x": Code.Success,
            "node-y": Code.Success,
        },
    ),
    dict(
        # pods spread across node as 1/1/0/~0~
        name="NodeAffinityPolicy honored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Success,  # in real case, when we disable NodeAffinity Plugin, node-y will be success.
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        # pods spread across node as 1/1/0/~1~
        name="NodeAffinityPolicy ignored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        # pods spread across node as 1/1/0/~0~
        name="NodeAffinityPolicy honored with nodeAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], st.NodeSelectorTypeMatchExpressions)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Success,  # in real case, when we disable NodeAffinity Plugin, node-y will be success.
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        # pods spread across node as 1/1/0/~1~
        name="NodeAffinityPolicy ignored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], st.NodeSelectorTypeMatchExpressions)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        # pods spread across node as 1/1/0/~0~
        name="NodeTaintsPolicy honored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, "Honor", None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Taints(taints).Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Success,  # in real case, when we disable TaintToleration Plugin, node-y will be success.
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        # pods spread across node as 1/1/0/~1~
        name="NodeTaintsPolicy ignored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Taints(taints).Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
        enableNodeInclusionPolicy=True,
    ),
]

# TestMultipleConstraints (filtering_test.go)
MULTIPLE_CONSTRAINTS: list[dict[str, Any]] = [
    dict(
        # 1. to fulfil "zone" constraint, incoming pod can be placed on any zone (hence any node)
        # 2. to fulfil "node" constraint, incoming pod can be placed on node-x
        # intersection of (1) and (2) returns node-x
        name="two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        # 1. to fulfil "zone" constraint, incoming pod can be placed on zone1 (node-a or node-b)
        # 2. to fulfil "node" constraint, incoming pod can be placed on node-x
        # intersection of (1) and (2) returns no node
        name="two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Unschedulable,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        # 1. to fulfil "zone" constraint, incoming pod can be placed on zone2 (node-x or node-y)
        # 2. to fulfil "node" constraint, incoming pod can be placed on node-a, node-b or node-x
        # intersection of (1) and (2) returns node-x
        name="Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("bar", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        # 1. to fulfil "zone" constraint, incoming pod can be placed on zone2 (node-x or node-y)
        # 2. to fulfil "node" constraint, incoming pod can be placed on node-a or node-b
        # intersection of (1) and (2) returns no node
        name="Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("bar", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Unschedulable,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        # 1. to fulfil "zone" constraint, incoming pod can be placed on zone1 (node-a or node-b)
        # 2. to fulfil "node" constraint, incoming pod can be placed on node-b or node-x
        # intersection of (1) and (2) returns node-b
        name="Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Success,
            "node-x": Code.Unschedulable,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        # 1. pod doesn't match itself on "zone" constraint, so it can be put onto any zone
        # 2. to fulfil "node" constraint, incoming pod can be placed on node-a or node-b
        # intersection of (1) and (2) returns node-a and node-b
        name="Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        pod=MakePod()
        .Name("p")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("bar", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Success,
            "node-b": Code.Success,
            "node-x": Code.Unschedulable,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        # 1. to fulfil "zone" constraint, incoming pod can be placed on any zone (hence any node)
        # 2. to fulfil "node" constraint, incoming pod can be placed on node-b (node-x doesn't have the required label)
        # intersection of (1) and (2) returns node-b
        name="two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Success,
            "node-x": Code.UnschedulableAndUnresolvable,
            "node-y": Code.Unschedulable,
        },
    ),
    dict(
        # 1. to fulfil "zone" constraint, pods spread across zones as 2/~0~
        # 2. to fulfil "node" constraint, pods spread across zones as 1/1/0/~1~
        # intersection of (1) and (2) returns node-x
        name="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        # 1. to fulfil "zone" constraint, pods spread across zones as 2/0
        # 2. to fulfil "node" constraint, pods spread across zones as 1/1/0/~1~
        # intersection of (1) and (2) returns node-x
        name="two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Honor", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Taints(taints).Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        # 1. to fulfil "zone" constraint, pods spread across zones as 1/~1~
        # 2. to fulfil "node" constraint, pods spread across zones as 1/0/0/~1~
        # intersection of (1) and (2) returns node-x
        name="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("node", "node-y")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Success,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        # 1. to fulfil "zone" constraint, pods spread across zones as 1/0
        # 2. to fulfil "node" constraint, pods spread across zones as 1/~1~/0/~1~
        # intersection of (1) and (2) returns node-x
        name="two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Honor", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("node", "node-y")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Unschedulable,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        # 1. to fulfil first "zone" constraint, incoming pod can be placed on zone2 (node-x or node-y)
        # 2. to fulfil second "zone" constraint, incoming pod can be placed on any zone
        # intersection of (1) and (2) returns node-x and node-y
        name="two Constraints on zone, spreads = [3/3, 2/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Success,
            "node-y": Code.Success,
        },
    ),
    dict(
        # 1. to fulfil first "zone" constraint, incoming pod can be placed on zone2 (node-x or node-y)
        # 2. to fulfil second "zone" constraint, incoming pod can be placed on zone1 (node-a or node-b)
        # intersection of (1) and (2) returns no node
        name="two Constraints on zone, spreads = [3/4, 2/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.Unschedulable,
            "node-b": Code.Unschedulable,
            "node-x": Code.Unschedulable,
            "node-y": Code.Unschedulable,
        },
    ),
]

# TestPreScoreSkip (scoring_test.go)
PRE_SCORE_SKIP: list[dict[str, Any]] = [
    dict(
        name="the pod doesn't have soft topology spread Constraints",
        pod=MakePod().Name("p").Namespace("default").Obj(),
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="List",
        ),
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
    ),
    dict(
        name="default constraints and a replicaset that doesn't match",
        pod=MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "bar")
        .Label("baz", "sup")
        .OwnerReference("rs2", ("apps/v1", "ReplicaSet"))
        .Obj(),
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultConstraints=[
                dict(
                    MaxSkew=2,
                    TopologyKey="planet",
                    WhenUnsatisfiable="ScheduleAnyway",
                ),
            ],
            DefaultingType="List",
        ),
        nodes=[
            MakeNode().Name("node-a").Label("planet", "mars").Obj(),
        ],
        objs=[
            GoStruct(
                "appsv1.ReplicaSet",
                ObjectMeta=GoStruct("metav1.ObjectMeta", Namespace="default", Name="rs1"),
                Spec=GoStruct("appsv1.ReplicaSetSpec", Selector=MakeLabelSelector().Exists("tar").Obj()),
            ),
        ],
    ),
]

# TestPreScoreStateEmptyNodes (scoring_test.go)
PRE_SCORE_STATE: list[dict[str, Any]] = [
    dict(
        name="normal case",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="List",
        ),
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="kubernetes.io/hostname",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
                (),
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(2), topologyNormalizingWeight(3)],
        ),
    ),
    dict(
        name="null selector",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", None, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="List",
        ),
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=labels.Nothing(),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(2)],
        ),
    ),
    dict(
        name="node-x doesn't have label zone",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-x").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="List",
        ),
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="kubernetes.io/hostname",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set_of("node-x"),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                },
                (),
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(1), topologyNormalizingWeight(2)],
        ),
    ),
    dict(
        name="system default constraints and a replicaset",
        pod=MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "tar")
        .Label("baz", "sup")
        .OwnerReference("rs1", ("apps/v1", "ReplicaSet"))
        .Obj(),
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="System",
        ),
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("kubernetes.io/hostname", "node-a")
            .Label("topology.kubernetes.io/zone", "mars")
            .Obj(),
            MakeNode()
            .Name("node-b")
            .Label("kubernetes.io/hostname", "node-b")
            .Label("topology.kubernetes.io/zone", "mars")
            .Obj(),
            # Nodes with no zone are not excluded. They are considered a separate zone.
            MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        objs=[
            GoStruct(
                "appsv1.ReplicaSet",
                ObjectMeta=GoStruct("metav1.ObjectMeta", Namespace="default", Name="rs1"),
                Spec=GoStruct("appsv1.ReplicaSetSpec", Selector=fooSelector),
            ),
        ],
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=3,
                    TopologyKey="kubernetes.io/hostname",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=5,
                    TopologyKey="topology.kubernetes.io/zone",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                (),
                {
                    "mars": 0,
                    "": 0,
                },
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(4), topologyNormalizingWeight(2)],
        ),
    ),
    dict(
        name="default constraints and a replicaset",
        pod=MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "tar")
        .Label("baz", "sup")
        .OwnerReference("rs1", ("apps/v1", "ReplicaSet"))
        .Obj(),
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultConstraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="kubernetes.io/hostname",
                    WhenUnsatisfiable="ScheduleAnyway",
                ),
                dict(
                    MaxSkew=2,
                    TopologyKey="rack",
                    WhenUnsatisfiable="DoNotSchedule",
                ),
                dict(MaxSkew=2, TopologyKey="planet", WhenUnsatisfiable="ScheduleAnyway"),
            ],
            DefaultingType="List",
        ),
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("rack", "rack1")
            .Label("kubernetes.io/hostname", "node-a")
            .Label("planet", "mars")
            .Obj(),
        ],
        objs=[
            GoStruct(
                "appsv1.ReplicaSet",
                ObjectMeta=GoStruct("metav1.ObjectMeta", Namespace="default", Name="rs1"),
                Spec=GoStruct("appsv1.ReplicaSetSpec", Selector=fooSelector),
            ),
        ],
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="kubernetes.io/hostname",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=2,
                    TopologyKey="planet",
                    Selector=(fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                (),
                {
                    "mars": 0,
                },
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(1), topologyNormalizingWeight(1)],
        ),
    ),
    dict(
        name="default constraints and a replicaset, but pod has constraints",
        pod=MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "bar")
        .Label("baz", "sup")
        .OwnerReference("rs1", ("apps/v1", "ReplicaSet"))
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .SpreadConstraint(
            2,
            "planet",
            "ScheduleAnyway",
            MakeLabelSelector().Label("baz", "sup").Obj(),
            None,
            None,
            None,
            None,
        )
        .Obj(),
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultConstraints=[
                dict(
                    MaxSkew=2,
                    TopologyKey="galaxy",
                    WhenUnsatisfiable="ScheduleAnyway",
                ),
            ],
            DefaultingType="List",
        ),
        nodes=[
            MakeNode().Name("node-a").Label("planet", "mars").Label("galaxy", "andromeda").Obj(),
        ],
        objs=[
            GoStruct(
                "appsv1.ReplicaSet",
                ObjectMeta=GoStruct("metav1.ObjectMeta", Namespace="default", Name="rs1"),
                Spec=GoStruct("appsv1.ReplicaSetSpec", Selector=fooSelector),
            ),
        ],
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=2,
                    TopologyKey="planet",
                    Selector=(MakeLabelSelector().Label("baz", "sup").Obj()),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "mars": 0,
                }
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(1)],
        ),
    ),
    dict(
        name="NodeAffinityPolicy honored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="List",
        ),
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(2)],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy ignored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="List",
        ),
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(2)],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy honored with nodeAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], st.NodeSelectorTypeMatchExpressions)
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="List",
        ),
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(2)],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy ignored with nodeAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], st.NodeSelectorTypeMatchExpressions)
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="List",
        ),
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(2)],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy honored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, "Honor", None)
        .Obj(),
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Taints(taints)
            .Obj(),
        ],
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="List",
        ),
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Honor",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(2)],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy ignored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-a")
            .Obj(),
            MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("foo", "")
            .Label("kubernetes.io/hostname", "node-b")
            .Obj(),
            MakeNode()
            .Name("node-x")
            .Label("zone", "zone2")
            .Label("kubernetes.io/hostname", "node-x")
            .Taints(taints)
            .Obj(),
        ],
        config=GoStruct(
            "config.PodTopologySpreadArgs",
            DefaultingType="List",
        ),
        want=GoStruct(
            "preScoreState",
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=(barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                }
            ],
            TopologyNormalizingWeight=[topologyNormalizingWeight(2)],
        ),
        enableNodeInclusionPolicy=True,
    ),
]

# TestPodTopologySpreadScore (scoring_test.go)
SCORE: list[dict[str, Any]] = [
    # Explanation on the Legend:
    # a) X/Y means there are X matching pods on node1 and Y on node2, both nodes are candidates
    #   (i.e. they have passed all predicates)
    # b) X/~Y~ means there are X matching pods on node1 and Y on node2, but node Y is NOT a candidate
    # c) X/?Y? means there are X matching pods on node1 and Y on node2, both nodes are candidates
    #    but node2 doesn't have all required topologyKeys present.
    dict(
        name="one constraint on node, no existing pods",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=100),
            dict(Name="node-b", Score=100),
        ],
    ),
    dict(
        # if there is only one candidate node, it should be scored to 100
        name="one constraint on node, only one node is candidate",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=100),
        ],
    ),
    dict(
        name="one constraint on node, all nodes have the same number of matching pods",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=100),
            dict(Name="node-b", Score=100),
        ],
    ),
    dict(
        # matching pods spread as 2/1/0/3.
        name="one constraint on node, all 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d2").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d3").Node("node-d").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        failedNodes=[],
        want=[
            dict(Name="node-a", Score=20),
            dict(Name="node-b", Score=60),
            dict(Name="node-c", Score=100),
            dict(Name="node-d", Score=0),
        ],
    ),
    dict(
        name="one constraint on node, null selector",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", None, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d2").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d3").Node("node-d").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=100),
            dict(Name="node-b", Score=100),
            dict(Name="node-c", Score=100),
            dict(Name="node-d", Score=100),
        ],
    ),
    dict(
        name="one constraint on node, all 4 nodes are candidates, maxSkew=2",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        # matching pods spread as 2/1/0/3.
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d2").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d3").Node("node-d").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        failedNodes=[],
        want=[
            dict(Name="node-a", Score=33),  # +13, compared to maxSkew=1
            dict(Name="node-b", Score=66),  # +6, compared to maxSkew=1
            dict(Name="node-c", Score=100),
            dict(Name="node-d", Score=16),  # +16, compared to maxSkew=1
        ],
    ),
    dict(
        name="one constraint on node, all 4 nodes are candidates, maxSkew=3",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(3, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            # matching pods spread as 4/3/2/1.
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b3").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-c2").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        failedNodes=[],
        want=[
            dict(Name="node-a", Score=44),  # +16 compared to maxSkew=1
            dict(Name="node-b", Score=66),  # +9 compared to maxSkew=1
            dict(Name="node-c", Score=77),  # +6 compared to maxSkew=1
            dict(Name="node-d", Score=100),
        ],
    ),
    dict(
        name="system defaulting, nodes don't have zone, pods match service",
        pod=MakePod().Name("p").Label("foo", "").Obj(),
        existingPods=[
            # matching pods spread as 4/3/2/1.
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b3").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-c2").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-c").Label("kubernetes.io/hostname", "node-c").Obj(),
            MakeNode().Name("node-d").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        failedNodes=[],
        objs=[
            GoStruct("v1.Service", Spec=GoStruct("v1.ServiceSpec", Selector={"foo": ""})),
        ],
        want=[
            # Same scores as if we were using one spreading constraint.
            dict(Name="node-a", Score=44),
            dict(Name="node-b", Score=66),
            dict(Name="node-c", Score=77),
            dict(Name="node-d", Score=100),
        ],
    ),
    dict(
        # matching pods spread as 4/2/1/~3~ (node4 is not a candidate)
        name="one constraint on node, 3 out of 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-x").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-y").Label("kubernetes.io/hostname", "node-y").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=33),
            dict(Name="node-b", Score=83),
            dict(Name="node-x", Score=100),
        ],
    ),
    dict(
        # matching pods spread as 4/?2?/1/~3~, total = 4+?+1 = 5 (as node2 is problematic)
        name="one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("n", "node-b").Obj(),  # label `n` doesn't match topologyKey
            MakeNode().Name("node-x").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-y").Label("kubernetes.io/hostname", "node-y").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=16),
            dict(Name="node-b", Score=0),
            dict(Name="node-x", Score=100),
        ],
    ),
    dict(
        # matching pods spread as 4/2/1/~3~
        name="one constraint on zone, 3 out of 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-y").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-y").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=75),
            dict(Name="node-b", Score=75),
            dict(Name="node-x", Score=100),
        ],
    ),
    dict(
        # matching pods spread as 2/~1~/2/~4~.
        name="two Constraints on zone and node, 2 out of 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-x2").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-y").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=100),
            dict(Name="node-x", Score=63),
        ],
    ),
    dict(
        name="two Constraints on zone, 2 out of 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-b").Label("zone", "zone1").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=85),
            dict(Name="node-x", Score=100),
        ],
    ),
    dict(
        # If Constraints hold different labelSelectors, it's a little complex.
        # +----------------------+------------------------+
        # |         zone1        |          zone2         |
        # +----------------------+------------------------+
        # | node-a |    node-b   | node-x |     node-y    |
        # +--------+-------------+--------+---------------+
        # | P{foo} | P{foo, bar} |        | P{foo} P{bar} |
        # +--------+-------------+--------+---------------+
        # For the first constraint (zone): the matching pods spread as 2/2/1/1
        # For the second constraint (node): the matching pods spread as 0/1/0/1
        name="two Constraints on zone and node, with different labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-y").Obj(),
        ],
        failedNodes=[],
        want=[
            dict(Name="node-a", Score=60),
            dict(Name="node-b", Score=20),
            dict(Name="node-x", Score=100),
            dict(Name="node-y", Score=60),
        ],
    ),
    dict(
        # For the first constraint (zone): the matching pods spread as 0/0/2/2
        # For the second constraint (node): the matching pods spread as 0/1/0/1
        name="two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-y").Obj(),
        ],
        failedNodes=[],
        want=[
            dict(Name="node-a", Score=100),
            dict(Name="node-b", Score=60),
            dict(Name="node-x", Score=40),
            dict(Name="node-y", Score=0),
        ],
    ),
    dict(
        # For the first constraint (zone): the matching pods spread as 2/2/1/~1~
        # For the second constraint (node): the matching pods spread as 0/1/0/~1~
        name="two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-x").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-y").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-y").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=50),
            dict(Name="node-b", Score=25),
            dict(Name="node-x", Score=100),
        ],
    ),
    dict(
        name="existing pods in a different namespace do not count",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=100),
            dict(Name="node-b", Score=33),
        ],
    ),
    dict(
        name="terminating Pods should be excluded",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("kubernetes.io/hostname", "node-b").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("foo", "").Terminating().Obj(),
            MakePod().Name("p-b").Node("node-b").Label("foo", "").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=100),
            dict(Name="node-b", Score=0),
        ],
    ),
    dict(
        # This test is artificial. In the real world, API Server would fail a pod's creation
        # when non-default minDomains is specified along with SchedulingAnyway.
        name="minDomains has no effect when ScheduleAnyway",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            2,
            "node",
            "ScheduleAnyway",
            fooSelector,
            10,  # larger than the number of domains(3)
            None,
            None,
            None,
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=75),
            dict(Name="node-b", Score=75),
            dict(Name="node-c", Score=100),
        ],
    ),
    dict(
        name="NodeAffinityPolicy honoed with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=0),
            dict(Name="node-b", Score=33),
            dict(Name="node-c", Score=100),
        ],
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy ignored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector({"foo": ""})
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=66),
            dict(Name="node-b", Score=100),
            dict(Name="node-c", Score=100),
        ],
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy honoed with nodeAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], st.NodeSelectorTypeMatchExpressions)
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=0),
            dict(Name="node-b", Score=33),
            dict(Name="node-c", Score=100),
        ],
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy ignored with nodeAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn("foo", [""], st.NodeSelectorTypeMatchExpressions)
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, "Ignore", None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=66),
            dict(Name="node-b", Score=100),
            dict(Name="node-c", Score=100),
        ],
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy honored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, "Honor", None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=0),
            dict(Name="node-b", Score=33),
            dict(Name="node-c", Score=100),
        ],
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy ignored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=66),
            dict(Name="node-b", Score=100),
            dict(Name="node-c", Score=100),
        ],
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="matchLabelKeys ignored when feature gate disabled",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .Label("baz", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, ["baz"])
        .SpreadConstraint(
            1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, ["baz"]
        )
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-c").Label("bar", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-c").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-c").Obj(),
            MakeNode().Name("node-d").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=60),
            dict(Name="node-b", Score=20),
            dict(Name="node-c", Score=60),
            dict(Name="node-d", Score=100),
        ],
        enableMatchLabelKeys=False,
    ),
    dict(
        name="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", MakeLabelSelector().Obj(), None, None, None, ["foo"])
        .SpreadConstraint(
            1,
            "kubernetes.io/hostname",
            "ScheduleAnyway",
            MakeLabelSelector().Obj(),
            None,
            None,
            None,
            ["bar"],
        )
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-c").Label("bar", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-c").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-c").Obj(),
            MakeNode().Name("node-d").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=60),
            dict(Name="node-b", Score=20),
            dict(Name="node-c", Score=60),
            dict(Name="node-d", Score=100),
        ],
        enableMatchLabelKeys=True,
    ),
    dict(
        name="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .Label("baz", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(
            1, "kubernetes.io/hostname", "ScheduleAnyway", barSelector, None, None, None, ["baz"]
        )
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Label("baz", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-c2").Node("node-c").Label("bar", "").Obj(),
            MakePod().Name("p-d3").Node("node-c").Label("bar", "").Label("baz", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("kubernetes.io/hostname", "node-b").Obj(),
            MakeNode().Name("node-c").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-c").Obj(),
            MakeNode().Name("node-d").Label("zone", "zone2").Label("kubernetes.io/hostname", "node-d").Obj(),
        ],
        want=[
            dict(Name="node-a", Score=60),
            dict(Name="node-b", Score=20),
            dict(Name="node-c", Score=60),
            dict(Name="node-d", Score=100),
        ],
        enableMatchLabelKeys=True,
    ),
]

# Test_isSchedulableAfterNodeChange (plugin_test.go)
HINT_NODE_CHANGE: list[dict[str, Any]] = [
    dict(
        name="node updates label which matches topologyKey",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone2").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="node that doesn't match topologySpreadConstraints updates non-related label",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("foo", "bar1").Obj(),
        newNode=MakeNode().Name("node-a").Label("foo", "bar2").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="node that match topologySpreadConstraints adds non-related label",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode()
        .Name("node-a")
        .Label("zone", "zone1")
        .Label("node", "node1")
        .Label("foo", "bar")
        .Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node1").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="create node with non-related labels",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newNode=MakeNode().Name("node-a").Label("foo", "bar").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="create node with related labels",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="delete node with non-related labels",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("foo", "bar").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="delete node with related labels",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="add node with related labels that only match one of topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="add node with related labels that match all topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node1").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="update node with related labels that only match one of topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="update node with related labels that match all topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node1").Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node2").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="update node with different taints that match all topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode()
        .Name("node-a")
        .Label("zone", "zone1")
        .Label("node", "node1")
        .Taints([dict(Key="aaa", Value="bbb", Effect="NoSchedule")])
        .Obj(),
        newNode=MakeNode()
        .Name("node-a")
        .Label("zone", "zone1")
        .Label("node", "node1")
        .Taints([dict(Key="ccc", Value="bbb", Effect="NoSchedule")])
        .Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="update node with different taints that only match one of topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode()
        .Name("node-a")
        .Label("node", "node1")
        .Taints([dict(Key="aaa", Value="bbb", Effect="NoSchedule")])
        .Obj(),
        newNode=MakeNode()
        .Name("node-a")
        .Label("node", "node1")
        .Taints([dict(Key="ccc", Value="bbb", Effect="NoSchedule")])
        .Obj(),
        expectedHint=QueueingHint.Skip,
    ),
]

# Test_isSchedulableAfterPodChange (plugin_test.go)
# v1.37.2's Test_isSchedulableAfterAssignedPodChange (v1.36.3's Test_isSchedulableAfterPodChange minus
# the target pod's own updates, which moved to the TargetPod table below).
HINT_ASSIGNED_POD_CHANGE: list[dict[str, Any]] = [
    dict(
        name="add pod with labels match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="add un-scheduled pod",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newPod=MakePod().UID("p2").Label("foo", "").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="update un-scheduled pod",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newPod=MakePod().UID("p2").Label("foo", "").Obj(),
        oldPod=MakePod().UID("p2").Label("bar", "").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="delete un-scheduled pod",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Label("foo", "").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="add pod with different namespace",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Namespace("fake-namespace").Label("foo", "").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="add pod with labels don't match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("bar", "").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="delete pod with labels that match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="delete nominated pod with labels that don't match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").NominatedNodeName("fake-node").Label("bar", "").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="delete nominated pod with labels that match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").NominatedNodeName("fake-node").Label("foo", "").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="delete pod with labels that don't match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("bar", "").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="update pod's non-related label",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar1").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="add pod's label that matches topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="delete pod label that matches topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="change pod's label that matches topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "foo1").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "foo2").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="change pod's label that doesn't match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar1").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="change pod's label that doesn't match topologySpreadConstraints selector with multi topologySpreadConstraints",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("baz", "").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
]

# v1.37.2's Test_isSchedulableAfterTargetPodChange.
HINT_TARGET_POD_CHANGE: list[dict[str, Any]] = [
    dict(
        name="the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new toleration",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Honor", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p").Name("p").Label("foo", "").Obj(),
        newPod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .Obj(),
        expectedHint=QueueingHint.Queue,
        enableNodeInclusionPolicyInPodTopologySpread=True,
    ),
    dict(
        name="the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new toleration",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Ignore", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p").Name("p").Label("foo", "").Obj(),
        newPod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .Obj(),
        expectedHint=QueueingHint.Skip,
    ),
    dict(
        name="the unschedulable Pod has topologySpreadConstraint and has got a new label matching the selector of the constraint",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Ignore", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p").Name("p").Obj(),
        newPod=MakePod().UID("p").Name("p").Label("foo", "").Obj(),
        expectedHint=QueueingHint.Queue,
    ),
    dict(
        name="the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Ignore", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p").Name("p").Obj(),
        newPod=MakePod().UID("p").Name("p").Label("unrelated", "").Obj(),
        expectedHint=QueueingHint.Skip,
    ),
]
