"""Wires informers, cache, queue, frameworks, binding pool, leader election and the health server.

Start-up order follows kube-scheduler: build everything from the configuration (a bad config stops
here), start the health server and informers, wait for caches to sync, then schedule only while we
hold the lease. A standby keeps its informers warm.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from informers import NODES, PODS, AsyncTransport, InformerFactory, SharedInformer, strip_managed_fields
from informers.resource import ELASTIC_QUOTAS, NODE_RESOURCE_TOPOLOGIES, PODGROUPS, WORKLOAD_PODGROUPS
from scheduler import metrics
from scheduler.app import api_versions
from scheduler.app.api_probes import (
    ELASTIC_QUOTA_MISSING,
    NODE_RESOURCE_TOPOLOGY_MISSING,
    WORKLOAD_API_MISSING,
    api_missing,
)
from scheduler.app.event_handlers import EventHandlers
from scheduler.app.leaderelection import LeaderElector, RestLeaseClient
from scheduler.cache import PodInfoCache, SchedulerCache
from scheduler.cache.informer_listers import InformerListers
from scheduler.client.api import SchedulerApi
from scheduler.client.discovery import discover
from scheduler.client.events import EVENT_WRITERS, SERIES_WRITERS, STATUS_PATCH_TIMEOUT, EventRecorder
from scheduler.client.kubeclient import RestClient, load_configuration
from scheduler.client.load_watcher import Collectors
from scheduler.config import SchedulerConfig, config_to_dict
from scheduler.config.types import PROTOBUF_CONTENT_TYPE
from scheduler.controllers import Controller, podgroup_status
from scheduler.cycle.binding import BINDING_WORKERS, BindingPool
from scheduler.cycle.profiles import FrameworkHandle, build_frameworks, queue_hints
from scheduler.cycle.schedule_one import Scheduler
from scheduler.explain.debug import debug_pods_handler
from scheduler.explain.recorder import ANNOTATION, DecisionRecorder
from scheduler.extender.runner import Extenders
from scheduler.extender.setup import with_extender_hints, with_ignored_resources
from scheduler.features import DEFAULT_FEATURE_GATES, FeatureGates
from scheduler.framework.handle import WaitingPodHandle
from scheduler.framework.interface import PluginFactory
from scheduler.framework.objects import object_meta, scheduler_name_of
from scheduler.framework.objects_scheduling import scheduling_group_name
from scheduler.framework.resources import pod_request_amounts, same_request_inputs
from scheduler.framework.runtime import Framework
from scheduler.framework.types import PodSpecError
from scheduler.plugins.coscheduling.plugin import is_gang_member
from scheduler.serving.options import Servers, ServingOptions, build_servers
from scheduling_queue import SchedulingQueue
from scheduling_queue import metrics as queue_metrics
from scheduling_queue.types import Pod

log = logging.getLogger(__name__)

ACTIVE_POD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
LOOP_STALL_LIMIT = 30.0
# SIGTERM: in-flight bindings get this long (docs/operations.md promises it), every later step a few seconds.
SHUTDOWN_DRAIN_SECONDS = 10.0
SHUTDOWN_STEP_SECONDS = 3.0
# How long scheduling waits for the load-aware plugins' first sample (none configured: no wait).
FIRST_LOAD_SAMPLE_SECONDS = 60.0
# Between discovery attempts while the API server cannot answer at start-up.
DISCOVERY_RETRY_SECONDS = 1.0


class LeadershipLost(SystemExit):
    def __init__(self) -> None:
        super().__init__(1)


class SchedulerApp:
    def __init__(
        self,
        config: SchedulerConfig,
        *,
        registry: Mapping[str, PluginFactory],
        kubeconfig: str | None = None,
        serving: ServingOptions | None = None,
        leader_elect: bool | None = None,
        record_decisions: bool = True,
        annotate_decisions: frozenset[str] = frozenset(),
        nearest_misses_in_events: bool = False,
        features: FeatureGates = DEFAULT_FEATURE_GATES,
    ) -> None:
        # Extenders: built first, so a bad TLS setting stops start-up; their ignored resources reach
        # NodeResourcesFit before the frameworks are built.
        self.extenders = Extenders.from_config(config.extenders)
        config = with_ignored_resources(config)
        self.config = config
        self._configz_body: bytes | None = None
        self.features = features
        self._nearest_misses_in_events = nearest_misses_in_events
        self.registry = dict(registry)
        self.serving = serving or ServingOptions()
        self.leader_elect = config.leader_election.leader_elect if leader_elect is None else leader_elect
        self.identity = f"{socket.gethostname()}_{uuid.uuid4()}"
        self.kubeconfig = kubeconfig or config.client_connection.kubeconfig or None
        self.configuration = load_configuration(self.kubeconfig)
        conn = config.client_connection
        # A connection for every binding thread and event writer, so none is opened per request.
        pool_size = max(16, config.parallelism, BINDING_WORKERS) + EVENT_WRITERS
        self.rest = RestClient(self.configuration, qps=conn.qps, burst=conn.burst, pool_size=pool_size)
        # Upstream's default contentType: the Binding and Event of every pod go out as protobuf.
        self.api = SchedulerApi(self.rest, protobuf_writes=conn.content_type == PROTOBUF_CONTENT_TYPE)
        self.clock = time.time
        self.cache = SchedulerCache()
        self.pod_infos = PodInfoCache()
        # Plugins ask for listers while frameworks are built; their informers start with the others.
        self.listers = InformerListers()
        # Load-aware plugins ask for their measured-load source while frameworks are built.
        self.load_collectors = Collectors(self.clock)
        self.frameworks = self._build_frameworks()
        self.queue = self._build_queue()
        # v1.37's entity metrics count every queued pod as a 'pod' entity: only true while no pod
        # group is scheduled as one (scheduling_queue.metrics).
        queue_metrics.entities_are_pods = not features.generic_workload
        # GenericWorkload: the pod group cycle finds a group's members in the pod informer's store.
        self._pod_lister = self.listers.lister(PODS) if features.generic_workload else None
        if features.generic_workload:
            metrics.register_pod_group_metrics()
        # kube-scheduler's eventClient: the same connection settings, a rate limiter of its own.
        self.events_rest = RestClient(
            self.configuration,
            qps=conn.qps,
            burst=conn.burst,
            pool_size=max(16, config.parallelism, BINDING_WORKERS) + EVENT_WRITERS + SERIES_WRITERS,
        )
        self.recorder = EventRecorder(
            self.api,
            reporting_instance=self.identity,
            clock=self.clock,
            events_api=SchedulerApi(self.events_rest, protobuf_writes=self.api.protobuf_writes),
        )
        # Decision records (explain, /debug/pods): made here so the HTTP server can read them early.
        self.decisions = DecisionRecorder(
            enabled=record_decisions,
            clock=self.clock,
            annotate_profiles=annotate_decisions,
            annotator=self._annotate_decision if annotate_decisions else None,
        )
        self.scheduler: Scheduler | None = None
        self.elector: LeaderElector | None = None
        self.server: Servers | None = None
        self.factory: InformerFactory | None = None
        # The pods' informer: its store is read once more at start-up (recover_scheduled_events).
        self._pods_informer: SharedInformer | None = None
        self.transport: AsyncTransport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._leading = asyncio.Event()
        self._stop = asyncio.Event()
        # A write the server asked to resend later (Retry-After) is not resent once we may not bind.
        self.rest.may_retry = self.may_bind
        self._exit_code = 0
        self._loop_heartbeat = time.monotonic()
        self._synced = False
        self._first_load_sample_done = False
        self.lease_rest: RestClient | None = None
        # Controllers beside the scheduler (PodGroup status when Coscheduling is on); they write only
        # while this instance leads.
        self.controllers: list[Controller] = []
        # Replaced by tests; in the product it ends the process at once (see _start_elector).
        self._on_leadership_lost: Callable[[int], None] = exit_now

    # --- construction -------------------------------------------------------------------------
    def _build_queue(self) -> SchedulingQueue:
        """One queue for every profile: the first profile's QueueSort (all profiles share it, checked
        at config load), the union of the profiles' and extenders' hints, the config's backoffs."""
        first = next(iter(self.frameworks.values()))
        return SchedulingQueue(
            clock=_WallClock(),
            less=first.queue_sort_less(),
            pre_enqueue=self._pre_enqueue,
            hints=with_extender_hints(queue_hints(self.frameworks), self.extenders),
            initial_backoff=float(self.config.pod_initial_backoff_seconds),
            max_backoff=float(self.config.pod_max_backoff_seconds),
            pod_requests=pod_request_amounts,
            same_request_inputs=same_request_inputs,
            generic_workload=self.features.generic_workload,
        )

    def _build_frameworks(self) -> dict[str, Framework]:
        def handle_for(profile_name: str) -> FrameworkHandle:
            return FrameworkHandle(
                profile_name,
                self._snapshot,
                self.api,
                self.clock,
                self._waiting_pods,
                listers=self.listers.lister,
                load_metrics=self.load_collectors.source,
            )

        return build_frameworks(self.config, self.registry, handle_for, self.features)

    def _group_members(self, namespace: str, name: str) -> list[Pod]:
        assert self._pod_lister is not None
        return [p for p in self._pod_lister.list(namespace) if scheduling_group_name(p) == name]

    def _pod_group(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The scheduling.k8s.io/v1beta1 PodGroup, for its PodGroupInitiallyScheduled condition."""
        return self.listers.lister(WORKLOAD_PODGROUPS).get(name, namespace)

    def _wakes_on_add(self) -> Callable[[Pod], bool] | None:
        """Pending pods whose add may complete a group (upstream sends UnscheduledPodAdd to the queue
        for every pending pod's add while GenericWorkload is on; here only members' adds: the in-tree
        registrations for it are the gang plugins', whose hints say Skip for a pod of no group, but a
        plugin registered for every event hears the others' adds upstream and not here)."""
        coscheduling = PODGROUPS in self.listers.kinds
        gang = self.features.gang_scheduling
        if not (coscheduling or gang):
            return None

        def wakes(pod: Pod) -> bool:
            return (gang and bool(scheduling_group_name(pod))) or (coscheduling and is_gang_member(pod))

        return wakes

    def _snapshot(self) -> Any:
        if self.scheduler is None:
            raise RuntimeError("no snapshot before the scheduler starts")
        return self.scheduler.snapshot

    def _waiting_pods(self) -> Mapping[str, WaitingPodHandle]:
        return {} if self.scheduler is None else self.scheduler.waiting_pods

    def _pre_enqueue(self, pod: Pod, gating_plugin: str = "") -> str:
        fwk = self.frameworks.get(scheduler_name_of(pod))
        if fwk is None or not fwk.plugins.pre_enqueue:
            return ""
        try:
            info = self.pod_infos.get(pod)
        except PodSpecError:
            # Let the cycle report it as FailedScheduling instead of hiding the pod in the gated set.
            return ""
        status = fwk.run_pre_enqueue(info, gating_plugin)
        return status.plugin or "PreEnqueue" if status is not None else ""

    # --- health -------------------------------------------------------------------------------
    def readiness(self) -> tuple[bool, str]:
        if not self._synced:
            return False, "informer caches not synced"
        if not self._first_load_sample_done:
            # Upstream builds its load-aware plugins, first sample included, before it serves health.
            return False, "waiting for the first load sample"
        if self.elector is not None and not self.elector.is_leader():
            ok, why = self.elector.healthy(self.config.leader_election.lease_duration * 2)
            return ok, "standby" if ok else why
        return True, "ok"

    def liveness(self) -> tuple[bool, str]:
        stalled = time.monotonic() - self._loop_heartbeat
        if stalled > LOOP_STALL_LIMIT:
            return False, f"event loop stalled for {stalled:.0f}s"
        if self.elector is not None:
            ok, why = self.elector.healthy(self.config.leader_election.renew_deadline * 2)
            if not ok:
                return False, why
        return True, "ok"

    def _annotate_decision(self, key: str, uid: str, value: str) -> None:
        self.recorder.annotate_pod(key, uid, {ANNOTATION: value})

    def _is_leading(self) -> bool:
        return self._leading.is_set() if self.elector is not None else self.scheduler is not None

    def may_bind(self) -> bool:
        return not self._stop.is_set() and (self.elector is None or self.elector.is_leader())

    # --- running ------------------------------------------------------------------------------
    async def run(self) -> int:
        """Start-up in named phases, then schedule until stopped: serve health and metrics, build the
        scheduling cycle, start the informers, wait for their first lists, win leadership, run the
        cycle; shut down in order whatever happened."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self.start_serving()
        self.extenders.start(loop)
        scheduler = self._build_scheduler(loop)
        # Which version of each kind the API server serves (one build for v1.35 to v1.37 servers).
        resolution = await self._resolve_api_versions()
        if resolution is None or resolution.refusal is not None:
            if resolution is not None:
                log.error("%s", resolution.refusal)
            self._exit_code = 1
            await self._shutdown([])
            return self._exit_code
        self._start_informers(scheduler, resolution)
        # The writer and binding threads start while the informers sync, on a thread of their own.
        threads_started = loop.create_task(asyncio.to_thread(self._prestart_threads), name="threads")
        # The first load sample is taken while the informers sync (upstream takes it while the plugin
        # is built); its timers refresh it from then on.
        first_load_sample = loop.create_task(self.load_collectors.start(loop), name="load-metrics")
        first_load_sample.add_done_callback(self._first_load_sample_taken)
        background = [
            loop.create_task(self._heartbeat(), name="heartbeat"),
            loop.create_task(self.queue.run(), name="queue-flush"),
            loop.create_task(self._flush_events(), name="event-series"),
        ]
        try:
            if not await self._wait_synced():
                return self._exit_code or 1
            self._start_elector(loop)
            if not await self._wait_leading():
                return self._exit_code
            await threads_started
            log.info("scheduling as %s for profiles %s", self.identity, sorted(self.frameworks))
            for controller in self.controllers:
                controller.start()
            await self._wait_first_load_sample(first_load_sample)
            assert self._pods_informer is not None
            recovered = scheduler.recover_scheduled_events(self._pods_informer.store.list(), self.clock())
            if recovered:
                log.info("Scheduled Events of %d recently bound pods written again", recovered)
            return await self._schedule_until_stopped(loop, scheduler)
        finally:
            await self._shutdown(background)

    def _first_load_sample_taken(self, _: asyncio.Task[None]) -> None:
        self._first_load_sample_done = True

    async def _wait_first_load_sample(self, first: asyncio.Task[None]) -> None:
        """Load-aware plugins start with a sample when their source answers (each query has its own
        timeout); a source that hangs longer delays scheduling at most FIRST_LOAD_SAMPLE_SECONDS."""
        try:
            await asyncio.wait_for(asyncio.shield(first), FIRST_LOAD_SAMPLE_SECONDS)
        except TimeoutError:
            log.warning(
                "no first load sample after %gs; scheduling starts without one", FIRST_LOAD_SAMPLE_SECONDS
            )

    def _prestart_threads(self) -> None:
        """Off the loop: every thread the loop hands work to in bursts, started before scheduling."""
        self.recorder.prestart()
        if self.scheduler is not None:
            self.scheduler.binding_pool.prestart()

    def _build_scheduler(self, loop: asyncio.AbstractEventLoop) -> Scheduler:
        def pool_factory(on_done: Any) -> BindingPool:
            return BindingPool(
                loop,
                on_done,
                max_workers=max(BINDING_WORKERS, self.config.parallelism),
                may_bind=self.may_bind,
                before_bind=self.recorder.before_bind,
                after_patches=self.recorder.after_patches,
                patch_wait_limit=STATUS_PATCH_TIMEOUT + 1.0,
            )

        self.scheduler = Scheduler(
            frameworks=self.frameworks,
            queue=self.queue,
            cache=self.cache,
            pod_infos=self.pod_infos,
            recorder=self.recorder,
            binding_pool_factory=pool_factory,
            clock=self.clock,
            api=self.api,
            extenders=self.extenders,
            decisions=self.decisions,
            nearest_misses_in_events=self._nearest_misses_in_events,
            nominated_node_name_for_expectation=self.features.nominated_node_name_for_expectation,
            opportunistic_batching=self.features.opportunistic_batching,
            pod_group_members=self._group_members if self._pod_lister is not None else None,
            pod_group=self._pod_group if WORKLOAD_PODGROUPS in self.listers.kinds else None,
        )
        return self.scheduler

    def _start_informers(self, scheduler: Scheduler, resolution: api_versions.Resolution) -> None:
        """Watches feed the cache and the queue through the event handlers; listers for the other kinds
        the plugins read, at the versions the server serves (``resolution``); the PodGroup status
        controller when Coscheduling is on."""
        conn = self.config.client_connection
        self.transport = AsyncTransport(self.configuration, qps=conn.qps, burst=conn.burst)
        # managedFields are never read by a scheduler; dropping them halves the memory per pod.
        self.factory = InformerFactory(
            self.transport, transform=strip_managed_fields, served=resolution.served
        )
        handlers = EventHandlers(
            queue=self.queue,
            cache=self.cache,
            profiles=self.frameworks.keys(),
            reject_deleted_waiting_pod=scheduler.reject_deleted_waiting_pod,
            wakes_on_add=self._wakes_on_add(),
            on_pod_bound=scheduler.pod_bound,
            on_pod_deleted=scheduler.pod_deleted,
            on_node_deleted=scheduler.node_deleted,
        )
        nodes = self.factory.informer_for(NODES)
        nodes.add_event_handler(
            on_add=handlers.on_node_add, on_update=handlers.on_node_update, on_delete=handlers.on_node_delete
        )
        pods = self.factory.informer_for(PODS, field_selector=ACTIVE_POD_SELECTOR)
        self._pods_informer = pods
        pods.add_event_handler(
            on_add=handlers.on_pod_add, on_update=handlers.on_pod_update, on_delete=handlers.on_pod_delete
        )
        # A deleted pod's Events and condition patch waiting for a retry are dropped, not kept.
        pods.add_event_handler(on_delete=self._forget_pod_writes)
        started = self.listers.start(self.factory, {PODS: ACTIVE_POD_SELECTOR}, unserved=resolution.unserved)
        for spec, informer in started.items():
            handlers.watch_other_kind(spec, informer)
        # Coscheduling on: PodGroup status is kept current by the leader.
        pod_groups = self.listers.lister(PODGROUPS) if PODGROUPS in self.listers.kinds else None
        status_controller = podgroup_status.install(self.factory, pod_groups, self.api, self.clock)
        if status_controller is not None:
            self.controllers.append(status_controller)
        self.factory.start()

    async def _schedule_until_stopped(self, loop: asyncio.AbstractEventLoop, scheduler: Scheduler) -> int:
        scheduling = loop.create_task(scheduler.run(), name="scheduling-cycle")
        stop_wait = loop.create_task(self._stop.wait())
        await asyncio.wait({scheduling, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        scheduler.stop()
        if scheduling.done() and scheduling.exception() is not None:
            log.error("scheduling loop died: %s", scheduling.exception())
            self._exit_code = 1
        # A cycle is milliseconds of synchronous work; the queue is closed, so pop() returns now.
        await asyncio.wait({scheduling}, timeout=1)
        stop_wait.cancel()
        return self._exit_code

    async def _resolve_api_versions(self) -> api_versions.Resolution | None:
        """Discovery of the kinds plugins asked for, retried while the API server cannot answer (as
        the informers would retry); None when stopped first."""
        loop = asyncio.get_running_loop()
        kinds = [NODES, PODS, *self.listers.kinds]
        groups = api_versions.groups_of(kinds)
        while not self._stop.is_set():
            try:
                served = await loop.run_in_executor(None, discover, self.api, groups)
            except Exception as err:
                log.warning("API discovery: %s; retrying", err)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), DISCOVERY_RETRY_SECONDS)
                continue
            resolution = api_versions.resolve(kinds, served)
            moved = ", ".join(f"{s.name} {s.version}" for s in resolution.served.values())
            log.info("API server %s; watching %s", served.server_version, moved or "each kind at its version")
            for spec in resolution.unserved:
                log.info("%s is not served at any version: read as empty", spec.name)
            return resolution
        return None

    async def _wait_synced(self) -> bool:
        assert self.factory is not None
        # Ready once the handlers have the first lists too, not only the stores: the cache and queue are
        # built by the handlers, and a cycle run before they finish would miss bound pods.
        sync = asyncio.ensure_future(self.factory.wait_for_handlers_sync())
        stop_wait = asyncio.ensure_future(self._stop.wait())
        waits: set[asyncio.Future[Any]] = {sync, stop_wait}
        # A missing CRD would keep its informer from ever syncing: fail start-up, saying so, instead.
        probes: list[asyncio.Future[str]] = []
        if PODGROUPS in self.listers.kinds:
            probes.append(asyncio.ensure_future(api_missing(self.api)))
        if ELASTIC_QUOTAS in self.listers.kinds:
            probes.append(
                asyncio.ensure_future(
                    api_missing(self.api, spec=ELASTIC_QUOTAS, missing=ELASTIC_QUOTA_MISSING)
                )
            )
        if NODE_RESOURCE_TOPOLOGIES in self.listers.kinds:
            probes.append(
                asyncio.ensure_future(
                    api_missing(
                        self.api, spec=NODE_RESOURCE_TOPOLOGIES, missing=NODE_RESOURCE_TOPOLOGY_MISSING
                    )
                )
            )
        if WORKLOAD_PODGROUPS in self.listers.kinds:
            probes.append(
                asyncio.ensure_future(
                    api_missing(self.api, spec=WORKLOAD_PODGROUPS, missing=WORKLOAD_API_MISSING)
                )
            )
        waits.update(probes)
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        stop_wait.cancel()
        for missing in probes:
            missing.cancel()
            if missing.done() and not missing.cancelled() and not sync.done():
                log.error("%s", missing.result())
                self._exit_code = 1
        if not sync.done() or not sync.result():
            sync.cancel()
            return False
        self._synced = True
        # The synced cluster is long-lived: move it out of the young GC generations so that
        # collections during scheduling stop rescanning every cached pod and node.
        gc.collect()
        gc.freeze()
        log.info("informer caches synced: %s", self.cache.sizes())
        return True

    async def _wait_leading(self) -> bool:
        if self.elector is None:
            return True
        leading = asyncio.ensure_future(self._leading.wait())
        stop_wait = asyncio.ensure_future(self._stop.wait())
        await asyncio.wait({leading, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        stop_wait.cancel()
        leading.cancel()
        return self._leading.is_set() and not self._stop.is_set()

    def start_serving(self) -> None:
        """Bind the health and metrics server (the CLI calls this first, so a port in use, a bad
        address or missing TLS files stop start-up with one line). Idempotent."""
        if self.server is None:
            self._start_server()

    def _start_server(self) -> None:
        servers = build_servers(
            self.serving,
            readiness=self.readiness,
            liveness=self.liveness,
            debug_pods=debug_pods_handler(
                self.decisions.store, self._is_leading, lambda: self.decisions.enabled
            ),
            configz=self._configz,
        )
        if not servers.servers:
            return
        self.server = servers
        servers.start()

    def _configz(self) -> bytes:
        """/configz: the effective configuration after defaulting, as kube-scheduler serves it (the v1
        KubeSchedulerConfiguration under "componentconfig"). Built once: the config never changes."""
        if self._configz_body is None:
            self._configz_body = orjson.dumps({"componentconfig": config_to_dict(self.config)})
        return self._configz_body

    def _start_elector(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self.leader_elect:
            return
        le = self.config.leader_election

        def started() -> None:
            loop.call_soon_threadsafe(self._leading.set)

        def stopped() -> None:
            # Called from the elector thread once the renew deadline passed without a renewal (or the
            # lease was taken). Bindings already refuse (is_leader() is false). Like kube-scheduler's
            # klog.FlushAndExit, leave now: an orderly shutdown would wait on the very API server we
            # lost, and another replica may already lead.
            if self._stop.is_set():
                return
            log.error("leader election lost; exiting")
            self._exit_code = 1
            self._on_leadership_lost(1)

        # Lease calls get a client of their own: never rate-limited behind bindings, one attempt per
        # call, each bounded by what is left of the renew deadline (RestLeaseClient).
        self.lease_rest = RestClient(self.configuration, qps=0, burst=1, pool_size=2)
        self.elector = LeaderElector(
            None,
            lease_client=RestLeaseClient(self.lease_rest, le.resource_namespace, le.resource_name),
            namespace=le.resource_namespace,
            name=le.resource_name,
            identity=self.identity,
            lease_duration=le.lease_duration,
            renew_deadline=le.renew_deadline,
            retry_period=le.retry_period,
            on_started_leading=started,
            on_stopped_leading=stopped,
        )
        self.elector.start()

    async def _heartbeat(self) -> None:
        while True:
            self._loop_heartbeat = time.monotonic()
            for kind, size in self.cache.sizes().items():
                metrics.set_cache_size(kind, size)
            metrics.set_unschedulable_pods(self.queue.unschedulable_counts())
            await asyncio.sleep(1.0)

    def _forget_pod_writes(self, obj: Any) -> None:
        pod = getattr(obj, "obj", obj)  # a DeletedFinalStateUnknown tombstone carries the last state
        if isinstance(pod, Mapping):
            self.recorder.forget_pod(object_meta(pod).get("uid", ""))

    async def _flush_events(self) -> None:
        ticks = 0
        while True:
            await asyncio.sleep(1.0)
            self.recorder.retry_due()
            ticks += 1
            if ticks % 30 == 0:
                self.recorder.flush_series()

    def request_stop(self) -> None:
        """Thread-safe: begin an orderly shutdown (SIGTERM)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)

    async def _shutdown(self, background: list[asyncio.Task[Any]]) -> None:
        """Every step is bounded, so SIGTERM ends well inside a 30 s grace period even when the API
        server or etcd does not answer: bindings SHUTDOWN_DRAIN_SECONDS, then the rest a few seconds
        each. Threads left in a hung request are abandoned; the CLI exits without joining them."""
        self._stop.set()
        for controller in self.controllers:
            await controller.stop()
        if self.scheduler is not None:
            self.scheduler.stop()
            # In-flight bindings may finish; new ones are refused by may_bind().
            if not await self.scheduler.binding_pool.drain(timeout=SHUTDOWN_DRAIN_SECONDS):
                log.warning("%d bindings still in flight at shutdown", self.scheduler.binding_pool.in_flight)
            self.scheduler.binding_pool.shutdown()
        await self.extenders.close()
        self.load_collectors.stop()
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        if self.factory is not None:
            await _bounded(self.factory.stop(), SHUTDOWN_STEP_SECONDS, "stopping informers")
        if self.transport is not None:
            await _bounded(self.transport.close(), SHUTDOWN_STEP_SECONDS, "closing watch connections")
        loop = asyncio.get_running_loop()
        if self.elector is not None:
            # Release only on a clean stop: after losing the lease it is someone else's. Run in a
            # thread: the release is two blocking requests.
            release = self._exit_code == 0
            elector = self.elector
            await loop.run_in_executor(
                None, lambda: elector.stop(release=release, timeout=SHUTDOWN_STEP_SECONDS)
            )
        await loop.run_in_executor(
            None, lambda: self.recorder.shutdown(wait=True, timeout=SHUTDOWN_STEP_SECONDS)
        )
        if self.server is not None:
            self.server.stop()
        self.rest.close()
        self.events_rest.close()
        if self.lease_rest is not None:
            self.lease_rest.close()
        self.queue.close()


async def _bounded(step: Any, seconds: float, what: str) -> None:
    try:
        await asyncio.wait_for(step, seconds)
    except TimeoutError:
        log.warning("%s took longer than %gs at shutdown; going on", what, seconds)
    except Exception as err:  # a failure here must not keep the remaining steps from running
        log.warning("%s failed at shutdown: %s", what, err)


class _WallClock:
    def now(self) -> float:
        return time.time()


def exit_now(code: int) -> None:
    """Leave without running finalizers: used when the lease is lost and nothing more may happen."""
    logging.shutdown()
    os._exit(code)
