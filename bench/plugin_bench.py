"""CPU per pod of the scheduling cycle on the side-by-side workloads, in-process (no API server).

    python -m bench.plugin_bench [--workloads TopologySpreading,volumes,...] [--quick] [--profile N]

Builds a workload's cluster in-process: its nodes in a SchedulerCache, its objects (PVs, PVCs, CSINodes,
ResourceSlices, claims...) in static listers behind the Handle, its init pods placed by the scheduler
itself. Then, per measured pod, does what the cycle does up to binding (snapshot update, PodInfo,
``schedule_pod``, Reserve, assume into the cache) and prints ``time.process_time`` per pod. Claims a
pod reserved are written back allocated, as DynamicResources' PreBind and the claim informer would.
``--profile N`` prints cProfile's N most expensive functions (cumulative) of the measured part.

The side-by-side benchmark measures the whole scheduler against kube-scheduler; this one isolates the
plugins' share with far less noise on a shared machine (see bench/results/optimisation-log.md).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import pstats
import random
import time
from typing import Any

from bench import workloads
from scheduler.app.cli import GC_GEN0_THRESHOLD
from scheduler.cache import SchedulerCache, Snapshot
from scheduler.config import parse_config_with_plugins
from scheduler.cycle.algorithm import SchedulingAlgorithm
from scheduler.cycle.profiles import FrameworkHandle, build_frameworks
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import (
    CSI_NODES,
    DEVICE_CLASSES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    REPLICA_SETS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    SERVICES,
    ResourceSpec,
    StaticLister,
)
from scheduler.framework.runtime import Framework, node_columns_of
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo
from scheduler.plugins.registry import IN_TREE_REGISTRY

PROFILE = "py-scheduler"
# The collection path of a workload object -> the kind its lister serves.
_KINDS: dict[str, ResourceSpec] = {
    "csinodes": CSI_NODES,
    "persistentvolumeclaims": PERSISTENT_VOLUME_CLAIMS,
    "persistentvolumes": PERSISTENT_VOLUMES,
    "deviceclasses": DEVICE_CLASSES,
    "resourceslices": RESOURCE_SLICES,
    "resourceclaims": RESOURCE_CLAIMS,
    "replicasets": REPLICA_SETS,
    "services": SERVICES,
}


class _Cluster:
    def __init__(self, workload: workloads.Workload) -> None:
        self.listers: dict[ResourceSpec, StaticLister] = {}
        for index, obj in enumerate(workload.objects):
            body: dict[str, Any] = copy.deepcopy(obj.body)
            meta = body["metadata"]
            meta.setdefault("uid", f"obj-{index}")
            meta.setdefault("resourceVersion", "1")
            parts = obj.path.strip("/").split("/")
            if "namespaces" in parts:
                meta["namespace"] = parts[parts.index("namespaces") + 1]
            if obj.status is not None:
                body["status"] = copy.deepcopy(obj.status)
            self.lister(_KINDS[parts[-1]]).add(body)
        self.cache = SchedulerCache()
        for raw in workload.nodes:
            node = copy.deepcopy(raw)
            node["metadata"].setdefault("uid", node["metadata"]["name"])
            node["metadata"].setdefault("resourceVersion", "1")
            self.cache.add_node(node)
        doc = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": PROFILE}],
        }
        cfg, registry = parse_config_with_plugins(doc, registry=dict(IN_TREE_REGISTRY))
        self.snapshot = Snapshot()

        def handle_for(name: str) -> FrameworkHandle:
            return FrameworkHandle(name, lambda: self.snapshot, None, time.monotonic, listers=self.lister)

        self.framework: Framework = build_frameworks(cfg, registry, handle_for)[PROFILE]
        self.snapshot = Snapshot(node_columns_of([self.framework]))
        self.algorithm = SchedulingAlgorithm(rng=random.Random(0))
        self.unschedulable = 0

    def lister(self, spec: ResourceSpec) -> StaticLister:
        found = self.listers.get(spec)
        if found is None:
            found = self.listers[spec] = StaticLister()
        return found

    def schedule(self, raw: dict[str, Any], namespace: str, uid: str) -> None:
        pod: dict[str, Any] = copy.deepcopy(raw)
        pod["metadata"].update(namespace=namespace, uid=uid, resourceVersion="1")
        pod["spec"]["schedulerName"] = PROFILE
        self.cache.update_snapshot(self.snapshot)
        info = PodInfo(pod)
        state = self.framework.new_cycle_state()
        try:
            result = self.algorithm.schedule_pod(self.framework, state, info, self.snapshot)
        except Exception:
            self.unschedulable += 1
            return
        status = self.framework.run_reserve(state, info, result.node_name)
        if status is not None and status.code is not Code.Success:
            raise RuntimeError(f"reserve of {uid} failed: {status}")
        self._write_back_claims(state, info)
        pod["spec"]["nodeName"] = result.node_name
        self.cache.add_pod(pod)

    def _write_back_claims(self, state: CycleState, info: PodInfo) -> None:
        """What PreBind and the claim informer do for DynamicResources: claims become allocated."""
        from scheduler.plugins.dynamicresources.plugin import STATE_KEY

        dra_state = state.get(STATE_KEY)
        if dra_state is None:
            return
        claims = self.lister(RESOURCE_CLAIMS)
        for index, allocation in dra_state.allocations.items():
            claim = copy.deepcopy(dict(dra_state.claims[index]))
            claim["status"] = {
                "allocation": allocation,
                "reservedFor": [{"resource": "pods", "name": info.name, "uid": info.uid}],
            }
            claim["metadata"]["resourceVersion"] = "2"
            claims.add(claim)


def measure(
    name: str, quick: bool, profile_top: int = 0, profiler: cProfile.Profile | None = None
) -> tuple[float, int, int]:
    """CPU seconds per measured pod, pods, pods that did not fit. ``profiler`` (or, with
    ``profile_top``, a new one whose top functions are printed) profiles the measured pods only."""
    workload = workloads.build(name, quick=quick)
    cluster = _Cluster(workload)
    for i, raw in enumerate(workload.init_pods):
        cluster.schedule(raw, workloads.INIT_NAMESPACE, f"init-{i}")
    pods = workload.pods
    if profiler is None and profile_top:
        profiler = cProfile.Profile()

    def run() -> None:
        for i, raw in enumerate(pods):
            cluster.schedule(raw, workloads.MEASURED_NAMESPACE, f"pod-{i}")

    begin = time.process_time()
    if profiler is not None:
        profiler.runcall(run)
    else:
        run()
    spent = time.process_time() - begin
    if profiler is not None and profile_top:
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats(profile_top)
    return spent / len(pods), len(pods), cluster.unschedulable


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--workloads",
        default=",".join(
            (*workloads.CONSTRAINT_WORKLOADS, workloads.VOLUMES, workloads.DRA, workloads.BASIC)
        ),
    )
    parser.add_argument("--quick", action="store_true", help="the --quick sizes of side_by_side")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print cProfile's top N")
    parser.add_argument("--repeat", type=int, default=1, help="runs per workload; the minimum is printed")
    args = parser.parse_args()
    # As the scheduler's process runs (scheduler/app/cli.py): the cyclic collector rarely.
    gc.set_threshold(GC_GEN0_THRESHOLD, *gc.get_threshold()[1:])
    for name in (w.strip() for w in args.workloads.split(",") if w.strip()):
        runs = [measure(name, args.quick, args.profile) for _ in range(args.repeat)]
        per_pod, pods, failed = min(runs)
        print(f"{name}: {per_pod * 1e6:.0f} us CPU per pod ({pods} pods, {failed} unschedulable)")


if __name__ == "__main__":
    main()
