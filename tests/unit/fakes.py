"""Fakes and builders shared by the unit tests that run a Scheduler on fakes (cycle/, client/, app/,
preemption/, extender/, explain/ ...); holds no tests.

Seams are faked, everything else is real: a ``FakeRest`` stands in for the API server behind a real
``SchedulerApi``; the SchedulingQueue, SchedulerCache, EventRecorder, BindingPool and the in-tree plugins
(built through ``scheduler.cycle.profiles.build_framework`` from a parsed configuration) are the
product's own.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from informers.resource import ResourceSpec
from scheduler.cache import PodInfoCache, SchedulerCache, Snapshot
from scheduler.client.api import SchedulerApi
from scheduler.client.events import EventRecorder
from scheduler.config import parse_config_with_plugins
from scheduler.cycle import profiles
from scheduler.cycle.binding import BindingPool, BindingResult
from scheduler.cycle.profiles import FrameworkHandle, queue_hints
from scheduler.cycle.schedule_one import Scheduler
from scheduler.explain.recorder import DecisionRecorder
from scheduler.framework.handle import WaitingPodHandle
from scheduler.framework.interface import PluginFactory
from scheduler.framework.listers import Lister
from scheduler.framework.resources import pod_request_amounts
from scheduler.framework.runtime import Framework
from scheduler.plugins.registry import IN_TREE_REGISTRY
from scheduling_queue import FakeClock, SchedulingQueue

PROFILE = "py-scheduler"

_seq = itertools.count(1)


# --- object builders --------------------------------------------------------------------------------


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "metadata": {
            "name": name,
            "uid": f"node-{name}",
            "resourceVersion": str(next(_seq)),
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    node_name: str = "",
    scheduler_name: str = PROFILE,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    uid: str | None = None,
    conditions: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = dict(affinity)
    status: dict[str, Any] = {"phase": "Pending"}
    if conditions:
        status["conditions"] = [dict(c) for c in conditions]
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace}-{name}",
            "resourceVersion": str(next(_seq)),
        },
        "spec": spec,
        "status": status,
    }


# --- the API server seam ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    body: Any
    content_type: str
    thread: str


Responder = Callable[[str, str, Any], tuple[int, bytes]]


def _created(method: str, path: str, body: Any) -> tuple[int, bytes]:
    return 201, b"{}"


@dataclass
class FakeRest:
    """Stands in for ``RestClient``: records every request (from any thread) and answers via ``respond``."""

    respond: Responder = _created
    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> tuple[int, bytes]:
        with self._lock:
            self.calls.append(Call(method, path, body, content_type, threading.current_thread().name))
        return self.respond(method, path, body)

    def matching(self, method: str, fragment: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method and fragment in c.path]

    def bindings(self) -> dict[str, str]:
        """pod name -> node name of every Binding POSTed."""
        return {
            c.body["metadata"]["name"]: c.body["target"]["name"] for c in self.matching("POST", "/binding")
        }

    def events(self) -> list[dict[str, Any]]:
        return [c.body for c in self.matching("POST", "/events")]

    def status_patches(self) -> list[Call]:
        return self.matching("PATCH", "/status")

    def close(self) -> None:
        return None


def status_error(code: int, message: str) -> tuple[int, bytes]:
    return code, orjson.dumps({"kind": "Status", "message": message, "code": code})


# --- frameworks -------------------------------------------------------------------------------------


def build_frameworks(
    snapshot: Callable[[], Snapshot],
    api: SchedulerApi | None,
    clock: Callable[[], float],
    *,
    profile: Mapping[str, Any] | None = None,
    extra_registry: Mapping[str, PluginFactory] | None = None,
    percentage_of_nodes_to_score: int | None = None,
    listers: Callable[[ResourceSpec], Lister] | None = None,
    waiting_pods: Callable[[], Mapping[str, WaitingPodHandle]] = dict,
) -> dict[str, Framework]:
    """One Framework per profile of a parsed configuration, wired the way the app wires them."""
    registry: dict[str, PluginFactory] = {**IN_TREE_REGISTRY, **(extra_registry or {})}
    doc: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [dict(profile or {"schedulerName": PROFILE})],
    }
    if percentage_of_nodes_to_score is not None:
        doc["percentageOfNodesToScore"] = percentage_of_nodes_to_score
    cfg, registry = parse_config_with_plugins(doc, registry=registry)

    def handle_for(profile_name: str) -> FrameworkHandle:
        return FrameworkHandle(profile_name, snapshot, api, clock, waiting_pods, listers=listers)

    return profiles.build_frameworks(cfg, registry, handle_for)


# --- a whole scheduler, fakes at the seams ----------------------------------------------------------


class CoreEnv:
    """A Scheduler with real queue, cache, recorder, binding pool and plugins; FakeRest as the API server.

    Build it inside a running event loop (an async test); call ``close()`` at the end.
    """

    def __init__(
        self,
        nodes: Sequence[Mapping[str, Any]] = (),
        *,
        respond: Responder = _created,
        profile: Mapping[str, Any] | None = None,
        extra_registry: Mapping[str, PluginFactory] | None = None,
        may_bind: Callable[[], bool] = lambda: True,
        listers: Callable[[ResourceSpec], Lister] | None = None,
        nominated_node_name_for_expectation: bool = True,
        opportunistic_batching: bool = True,
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.clock = FakeClock()
        self.rest = FakeRest(respond)
        self.api = SchedulerApi(self.rest)  # type: ignore[arg-type]
        self.pod_infos = PodInfoCache()
        self.cache = SchedulerCache(pod_infos=self.pod_infos)
        for node in nodes:
            self.cache.add_node(node)
        self.scheduler: Scheduler | None = None
        self.frameworks = build_frameworks(
            self._snapshot,
            self.api,
            self.clock.now,
            profile=profile,
            extra_registry=extra_registry,
            listers=listers,
            waiting_pods=self._waiting_pods,
        )
        self.queue = SchedulingQueue(
            clock=self.clock, hints=queue_hints(self.frameworks), pod_requests=pod_request_amounts
        )
        self.recorder = EventRecorder(self.api, reporting_instance="test-instance", clock=self.clock.now)
        self.results: list[BindingResult] = []
        self.delivered_on: list[threading.Thread] = []
        self.pool: BindingPool | None = None

        def pool_factory(on_done: Callable[[BindingResult], None]) -> BindingPool:
            def spy(result: BindingResult) -> None:
                self.delivered_on.append(threading.current_thread())
                self.results.append(result)
                on_done(result)

            self.pool = BindingPool(
                self.loop,
                spy,
                max_workers=2,
                may_bind=may_bind,
                # Looked up per call, so a test can wrap the recorder's method after construction.
                before_bind=lambda uid: self.recorder.before_bind(uid),  # noqa: PLW0108
            )
            return self.pool

        # What explain and /debug/pods read; the app wires the same recorder in.
        self.decisions = DecisionRecorder(clock=self.clock.now)
        self.scheduler = Scheduler(
            frameworks=self.frameworks,
            queue=self.queue,
            cache=self.cache,
            pod_infos=self.pod_infos,
            recorder=self.recorder,
            binding_pool_factory=pool_factory,
            clock=self.clock.now,
            api=self.api,
            decisions=self.decisions,
            nominated_node_name_for_expectation=nominated_node_name_for_expectation,
            opportunistic_batching=opportunistic_batching,
        )

    def _snapshot(self) -> Snapshot:
        assert self.scheduler is not None
        return self.scheduler.snapshot

    def _waiting_pods(self) -> Mapping[str, WaitingPodHandle]:
        return {} if self.scheduler is None else self.scheduler.waiting_pods

    @property
    def sched(self) -> Scheduler:
        assert self.scheduler is not None
        return self.scheduler

    @property
    def fwk(self) -> Framework:
        return self.frameworks[PROFILE]

    async def schedule_next(self) -> None:
        """Pop one pod and run one scheduling cycle on it."""
        qpi = self.queue.pop_nowait()
        assert qpi is not None, "activeQ is empty"
        rest = self.sched.schedule_one(qpi)
        if rest is not None:  # a PostFilter plugin's API write, awaited as Scheduler.run does
            await rest

    async def wait_bindings(self, count: int, timeout: float = 3.0) -> None:
        await wait_for(lambda: len(self.results) >= count, timeout)

    def flush_writes(self) -> None:
        """Wait for the recorder's writer threads: every event and status patch has reached FakeRest."""
        self.recorder.shutdown(wait=True)

    def close(self) -> None:
        self.queue.close()
        self.sched.preemption.shutdown(wait=True)
        if self.pool is not None:
            self.pool.shutdown()
        self.recorder.shutdown(wait=True)


async def wait_for(cond: Callable[[], bool], timeout: float = 3.0) -> None:
    """Yield to the loop until ``cond()`` holds (binding results arrive via call_soon_threadsafe)."""
    async with asyncio.timeout(timeout):
        while not cond():  # noqa: ASYNC110 -- the state comes from worker threads, not an awaitable
            await asyncio.sleep(0.001)
