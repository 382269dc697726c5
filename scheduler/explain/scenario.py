"""Scenarios: scripted cluster changes plus expectations, run on a Simulation, for CI.

```yaml
name: GPU pods land on GPU nodes
config: configs/bin-packing.yaml      # optional, relative to this file; default configuration
cluster: snapshot.json                # optional starting snapshot (py-scheduler snapshot)
steps:
  - addNodes:
      - {name: gpu-1, cpu: "8", memory: 32Gi, labels: {gpu: "true"}, taints: ["gpu=true:NoSchedule"]}
      - {namePrefix: cpu-, count: 3, cpu: "4", memory: 16Gi}
  - addPods:                          # Pod, Deployment, StatefulSet, ReplicaSet or Job manifests
      - {kind: Pod, metadata: {name: train}, spec: {...}}
  - deletePods: [default/train]
  - deleteNodes: [cpu-0]
  - advanceTime: 60                   # seconds, on the simulation clock
  - expect:
      - {pod: default/train, onNodeWithLabels: {gpu: "true"}}
      - {pod: default/web-3, pending: true, reason: "Insufficient cpu"}   # reason: a regex
      - {pod: default/web-0, node: cpu-1}
      - {pod: default/web-1, notOnNodes: [gpu-1]}
      - {placed: 5}
      - {nodesUsed: 2}
```

Expectations are checked where they stand, against the placements so far. Each failed expectation
is reported with what happened instead; the run exits non-zero if any failed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scheduler.config import load_config_with_plugins
from scheduler.explain.manifests import ManifestError, expand_pods, load_dump, node_manifest
from scheduler.explain.simulate import Placement, Simulation
from scheduler.plugins.registry import IN_TREE_REGISTRY


class ScenarioError(ValueError):
    """The scenario file itself is wrong (not an expectation failing)."""


class _Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@dataclass
class ScenarioResult:
    name: str
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def report(self) -> str:
        verdict = "PASSED" if self.ok else f"FAILED ({len(self.failures)} expectation(s))"
        return "\n".join([f"Scenario {self.name}: {verdict}", *self.lines])


def run_scenario(path: Path, *, config_override: str | None = None, seed: int = 1) -> ScenarioResult:
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ScenarioError(f"{path}: {err}") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("steps"), list):
        raise ScenarioError(f"{path}: expected a mapping with a list of steps")
    base = path.parent
    config_path = config_override or (str(base / doc["config"]) if doc.get("config") else None)
    config, registry = load_config_with_plugins(config_path, registry=IN_TREE_REGISTRY)
    objects = load_dump(base / doc["cluster"]) if doc.get("cluster") else {}
    clock = _Clock()
    sim = Simulation(config, registry, objects, seed=seed, clock=clock)
    result = ScenarioResult(str(doc.get("name") or path.stem))
    for number, step in enumerate(doc["steps"], start=1):
        if not isinstance(step, Mapping) or len(step) != 1:
            raise ScenarioError(f"{path}: step {number} must be a mapping with exactly one action")
        ((action, arg),) = step.items()
        _run_step(sim, clock, str(action), arg, number, result)
    return result


def _run_step(
    sim: Simulation, clock: _Clock, action: str, arg: Any, number: int, result: ScenarioResult
) -> None:
    where = f"step {number} ({action})"
    if action == "addNodes":
        for spec in _list(arg, where):
            for node in _nodes(spec, where):
                sim.add_node(node)
        result.lines.append(f"  {where}: {len(sim.snapshot_nodes())} node(s) in the cluster")
    elif action == "addPods":
        placements = sim.place_all(expand_pods(_list(arg, where)))
        for p in placements:
            result.lines.append(f"  {where}: {p.pod} -> {p.node or 'pending: ' + p.reason}")
    elif action == "deletePods":
        for key in _list(arg, where):
            sim.remove_pod(str(key) if "/" in str(key) else f"default/{key}")
    elif action == "deleteNodes":
        for name in _list(arg, where):
            sim.remove_node(str(name))
    elif action == "advanceTime":
        clock.now += float(arg)
    elif action == "expect":
        for expectation in _list(arg, where):
            failure = check(sim.placements, sim, expectation)
            label = _describe(expectation)
            if failure:
                result.failures.append(failure)
                result.lines.append(f"  {where}: FAIL {label}: {failure}")
            else:
                result.lines.append(f"  {where}: ok   {label}")
    else:
        raise ScenarioError(f"{where}: unknown action; expected addNodes, addPods, deletePods, deleteNodes, "
                            "advanceTime or expect")  # fmt: skip


def check(placements: Sequence[Placement], sim: Simulation, want: Mapping[str, Any]) -> str:
    """'' when ``want`` holds, else what happened instead."""
    if "placed" in want:
        placed = sum(1 for p in placements if p.node)
        return "" if placed == int(want["placed"]) else f"expected {want['placed']} placed, got {placed}"
    if "nodesUsed" in want:
        used = sorted({p.node for p in placements if p.node})
        if len(used) == int(want["nodesUsed"]):
            return ""
        return f"expected pods on {want['nodesUsed']} node(s), got {len(used)}: {', '.join(used)}"
    key = str(want.get("pod", ""))
    key = key if "/" in key else f"default/{key}"
    placement = next((p for p in reversed(placements) if p.pod == key), None)
    if placement is None:
        return f"pod {key} was never placed or was deleted"
    if want.get("pending"):
        if placement.node:
            return f"expected {key} pending, but it was placed on {placement.node}"
        pattern = want.get("reason")
        text = _pending_text(placement)
        if pattern and not re.search(str(pattern), text):
            return f"expected {key}'s reason to match {pattern!r}, got: {text}"
        return ""
    if not placement.node:
        return f"expected {key} placed, but it is pending: {_pending_text(placement)}"
    if "node" in want and placement.node != want["node"]:
        return f"expected {key} on {want['node']}, got {placement.node}"
    if placement.node in (want.get("notOnNodes") or ()):
        return f"expected {key} not on {placement.node}, but it is"
    labels_wanted: Mapping[str, str] = want.get("onNodeWithLabels") or {}
    if labels_wanted:
        labels = sim.node_labels(placement.node)
        wrong = {k: labels.get(k) for k, v in labels_wanted.items() if labels.get(k) != str(v)}
        if wrong:
            wanted = dict(labels_wanted)
            return f"expected {key} on a node with labels {wanted}, got {placement.node} with {wrong}"
    return ""


def _pending_text(p: Placement) -> str:
    misses = p.record.nearest_misses if p.record else []
    return p.reason + ("" if not misses else " Nearest misses: " + "; ".join(m.text() for m in misses))


def _describe(want: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in want.items())


def _list(arg: Any, where: str) -> list[Any]:
    if not isinstance(arg, list):
        raise ScenarioError(f"{where}: expected a list")
    return arg


def _nodes(spec: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """A Node manifest as is, or the short form (name or namePrefix+count, cpu, memory, pods, labels,
    taints as ``key=value:Effect``)."""
    if not isinstance(spec, Mapping):
        raise ScenarioError(f"{where}: a node must be a mapping")
    if spec.get("kind") == "Node":
        return [dict(spec)]
    names = [str(spec["name"])] if "name" in spec else [
        f"{spec.get('namePrefix', 'node-')}{i}" for i in range(int(spec.get("count", 1)))
    ]  # fmt: skip
    labels = spec.get("labels") or {}
    try:
        return [
            node_manifest(
                name,
                cpu=str(spec.get("cpu", "4")),
                memory=str(spec.get("memory", "16Gi")),
                pods=spec.get("pods", 110),
                labels={str(k): str(v) for k, v in labels.items()},
                taints=list(spec.get("taints") or ()),
            )
            for name in names
        ]
    except ManifestError as err:
        raise ScenarioError(f"{where}: {err}") from None
