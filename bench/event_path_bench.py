"""In-process CPU of the informer-to-cache/queue path per scheduled pod (no API server).

Replays what the pod informer of a ``basic``-like run delivers: per pod a watch line ADDED (pending,
as the API server serialises it, managedFields included) and, once the pod is assumed on a node, the
bind's echo MODIFIED (nodeName and the PodScheduled condition set). Each line goes through the same
steps as on the scheduler's loop: orjson decode, the informer's transform and store, the listener, the
event handlers, the scheduling queue (hints for the assigned-pod event included) and the cache.
Each listener has its own task, as in the informer; an idle one is called in line by the informer.
The cycle itself is reduced to pop, assume and a successful binding's result (finish_binding, done,
the pending version's PodInfo dropped), with a window of pods in flight as the binding pool keeps
them. Each cycle first brings the scheduler's snapshot (with the default
profile's node columns, built once) up to date, as ``schedule_one`` does: that update pays for the
nodes changed since the last cycle, by the assume and by the bind's echo; its share is printed apart.

    python -m bench.event_path_bench [--nodes 500] [--pods 2000] [--repeat 9] [--profile]

Prints the process CPU time per pod of the best repeat (the machine is shared; the minimum is the
least disturbed run).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import cProfile
import gc
import pstats
import time
from collections import deque
from typing import Any

import orjson

from informers import PODS, SharedInformer
from informers.objects import strip_managed_fields
from scheduler.app.cli import GC_GEN0_THRESHOLD
from scheduler.app.event_handlers import EventHandlers
from scheduler.cache import PodInfoCache, SchedulerCache, Snapshot
from scheduler.config import parse_config_with_plugins
from scheduler.cycle.profiles import FrameworkHandle, build_frameworks, queue_hints
from scheduler.framework.listers import ResourceSpec, StaticLister
from scheduler.framework.resources import pod_request_amounts
from scheduler.framework.runtime import node_columns_of
from scheduler.framework.types import PodInfo
from scheduler.plugins.registry import IN_TREE_REGISTRY
from scheduling_queue import SchedulingQueue
from scheduling_queue.types import QueuedPodInfo

PROFILE = "py-scheduler"
IN_FLIGHT = 16


def _node(index: int) -> dict[str, Any]:
    name = f"node-{index}"
    alloc = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": str(100 + index),
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": f"zone-{index % 3}",
            },
        },
        "spec": {},
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pending_pod(index: int) -> dict[str, Any]:
    """A pod as the API server returns it after defaulting and admission."""
    name = f"pod-{index:06d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"0b6e7a3c-0000-4000-8000-{index:012d}",
            "resourceVersion": str(10_000 + 3 * index),
            "creationTimestamp": "2026-11-27T09:00:00Z",
            "labels": {"app": "bench", "shard": str(index % 16)},
            "managedFields": [
                {
                    "manager": "bench",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-11-27T09:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:shard": {}}},
                        "f:spec": {
                            "f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}},
                            "f:schedulerName": {},
                        },
                    },
                }
            ],
        },
        "spec": {
            "volumes": [
                {
                    "name": f"kube-api-access-{index % 100000:05d}",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                        ],
                        "defaultMode": 420,
                    },
                }
            ],
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    "volumeMounts": [
                        {
                            "name": f"kube-api-access-{index % 100000:05d}",
                            "readOnly": True,
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        }
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "schedulerName": PROFILE,
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def _bound(pod: dict[str, Any], node_name: str) -> dict[str, Any]:
    bound = copy.deepcopy(pod)
    bound["metadata"]["resourceVersion"] = str(int(pod["metadata"]["resourceVersion"]) + 1)
    bound["spec"]["nodeName"] = node_name
    bound["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": "2026-11-27T09:00:01Z",
        }
    ]
    return bound


def _line(event_type: str, obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": event_type, "object": obj})


class _GcTime:
    """CPU seconds the cyclic collector spent while ``active`` (a gc callback)."""

    def __init__(self) -> None:
        self.active = False
        self.seconds = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if not self.active:
            return
        if phase == "start":
            self._start = time.process_time()
        else:
            self.seconds += time.process_time() - self._start


GC_TIME = _GcTime()
gc.callbacks.append(GC_TIME)


class _WallClock:
    def now(self) -> float:
        return time.time()


class _Env:
    def __init__(self, nodes: int) -> None:
        self.cache = SchedulerCache()
        self.pod_infos = PodInfoCache()
        doc = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": PROFILE}],
        }
        cfg, registry = parse_config_with_plugins(doc, registry=dict(IN_TREE_REGISTRY))
        listers: dict[ResourceSpec, StaticLister] = {}

        def lister(spec: ResourceSpec) -> StaticLister:
            return listers.setdefault(spec, StaticLister())

        def handle_for(name: str) -> FrameworkHandle:
            return FrameworkHandle(name, lambda: self.snapshot, None, time.monotonic, listers=lister)

        frameworks = build_frameworks(cfg, registry, handle_for)
        # The cycle's snapshot, with every node column the profile's plugins declare.
        self.snapshot = Snapshot(node_columns_of(frameworks.values()))
        first = next(iter(frameworks.values()))
        self.queue = SchedulingQueue(
            clock=_WallClock(),
            less=first.queue_sort_less(),
            hints=queue_hints(frameworks),
            pod_requests=pod_request_amounts,
        )
        self.handlers = EventHandlers(queue=self.queue, cache=self.cache, profiles=frameworks.keys())
        self.informer = SharedInformer(None, PODS, transform=strip_managed_fields)  # type: ignore[arg-type]
        self.informer.add_event_handler(
            on_add=self.handlers.on_pod_add,
            on_update=self.handlers.on_pod_update,
            on_delete=self.handlers.on_pod_delete,
        )
        # The app's second pod handler: pending writes of a deleted pod are dropped (delete only).
        self.informer.add_event_handler(on_delete=lambda obj: None)
        self.listeners = self.informer._listeners
        for index in range(nodes):
            self.handlers.on_node_add(_node(index))
        self.node_names = self.cache.node_names()
        self.cache.update_snapshot(self.snapshot)
        self.snapshot.columns()
        self.snapshot_seconds = 0.0

    def update_snapshot(self) -> None:
        """The cycle's first step, timed on its own."""
        start = time.process_time()
        self.cache.update_snapshot(self.snapshot)
        self.snapshot_seconds += time.process_time() - start

    def bound(self, qpi: QueuedPodInfo, info: PodInfo) -> None:
        """A successful binding's result, as ``Scheduler._on_binding_done`` takes it."""
        self.cache.finish_binding(qpi.key)
        self.queue.done(qpi)
        self.pod_infos.forget(info)

    def start(self) -> None:
        """The listeners' tasks, as the informer starts them (an idle one is called in line)."""
        for listener in self.listeners:
            listener.start()

    async def stop(self) -> None:
        for listener in self.listeners:
            await listener.stop()

    async def deliver(self, line: bytes) -> None:
        """One watch line, as the reflector applies it; returns once every listener handled it."""
        event = orjson.loads(line)
        self.informer.apply(event["type"], event["object"])
        await asyncio.sleep(0)
        # Listeners expose no "drained" event to wait on; one more loop pass is rarely needed.
        while any(listener.pending for listener in self.listeners):  # noqa: ASYNC110
            await asyncio.sleep(0)


async def _run_once(nodes: int, pods: int, profile: bool) -> tuple[float, float, float, pstats.Stats | None]:
    """(CPU seconds of the replay, of which the collector's, of which the snapshot updates', the
    profile if asked for)."""
    env = _Env(nodes)
    pending = [_pending_pod(i) for i in range(pods)]
    added = [_line("ADDED", pod) for pod in pending]
    echoes = [
        _line("MODIFIED", _bound(pod, env.node_names[i % len(env.node_names)]))
        for i, pod in enumerate(pending)
    ]
    in_flight: deque[Any] = deque()
    env.start()
    # Each run starts from a collected heap, so a full collection owed to an earlier run's garbage
    # does not land in this one.
    gc.collect()
    profiler = cProfile.Profile() if profile else None
    start = time.process_time()
    GC_TIME.seconds = 0.0
    GC_TIME.active = True
    if profiler is not None:
        profiler.enable()
    for i in range(pods):
        await env.deliver(added[i])
        qpi = env.queue.pop_nowait()
        assert qpi is not None
        env.update_snapshot()
        info = env.pod_infos.get(qpi.pod)
        node_name = env.node_names[i % len(env.node_names)]
        env.cache.assume_pod(info, node_name)
        in_flight.append((qpi, info))
        if len(in_flight) > IN_FLIGHT:
            env.bound(*in_flight.popleft())
            await env.deliver(echoes[i - IN_FLIGHT])
    while in_flight:
        env.bound(*in_flight.popleft())
        await env.deliver(echoes[pods - len(in_flight) - 1])
    if profiler is not None:
        profiler.disable()
    elapsed = time.process_time() - start
    GC_TIME.active = False
    if env.cache.assumed_count() != 0 or env.cache.sizes()["pods"] != pods:
        raise RuntimeError(f"cache not consistent after the run: {env.cache.sizes()}")
    await env.stop()
    env.queue.close()
    stats = pstats.Stats(profiler) if profiler is not None else None
    return elapsed, GC_TIME.seconds, env.snapshot_seconds, stats


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one extra run")

    args = parser.parse_args()
    # The scheduler's own collector setting: its collections are part of the loop's cost per pod.
    gc.set_threshold(GC_GEN0_THRESHOLD, *gc.get_threshold()[1:])

    async def run() -> None:
        runs = [(await _run_once(args.nodes, args.pods, False))[:3] for _ in range(args.repeat)]
        best, best_gc, best_snapshot = min(runs)
        print(
            f"event path: {best / args.pods * 1e6:.1f} us CPU per pod, of which the collector"
            f" {best_gc / args.pods * 1e6:.1f} and the snapshot updates {best_snapshot / args.pods * 1e6:.1f}"
            f" (min of {args.repeat}; all: {', '.join(f'{t / args.pods * 1e6:.1f}' for t, _, _ in runs)};"
            f" snapshot updates, all: {', '.join(f'{s / args.pods * 1e6:.1f}' for _, _, s in runs)})"
        )
        if args.profile:
            stats = (await _run_once(args.nodes, args.pods, True))[3]
            assert stats is not None
            stats.sort_stats("cumulative").print_stats(45)

    asyncio.run(run())


if __name__ == "__main__":
    main()
