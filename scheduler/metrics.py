"""Scheduler metrics with kube-scheduler's exact names, types, labels and buckets.

Source of truth: ``pkg/scheduler/metrics/metrics.go`` in kubernetes/kubernetes v1.36.3 (the release
``devcluster/K8S_VERSION`` pins) and, for the leader-election gauge,
``staging/src/k8s.io/component-base/metrics/prometheus/clientgo/leaderelection/metrics.go``.
Identical bucket boundaries mean kube-scheduler dashboards work unchanged, e.g.
``histogram_quantile(0.99, sum(rate(scheduler_scheduling_attempt_duration_seconds_bucket[5m])) by (le))``.

Not defined here (they have owners elsewhere, all in the same default REGISTRY):
``scheduler_pending_pods`` and ``scheduler_queue_incoming_pods_total`` in ``scheduling_queue/metrics.py``,
informer metrics in ``informers/metrics.py``.

The helpers are called on hot paths: each one is a dict lookup for the labelled child plus one
``observe``/``inc``. prometheus_client's own ``.labels()`` validates and locks on every call, so
children are memoised per label tuple.
"""

from __future__ import annotations

import random
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Final, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

# Go's client exposes no ``*_created`` series; without this every counter and histogram would carry an
# extra series that kube-scheduler dashboards neither expect nor use.
disable_created_metrics()  # type: ignore[no-untyped-call]


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Same float sequence as component-base ``ExponentialBuckets`` (repeated multiplication)."""
    buckets: list[float] = []
    value = start
    for _ in range(count):
        buckets.append(value)
        value *= factor
    return tuple(buckets)


class _FastChild:
    """One label set of a FastHistogram observed from several threads: a count per bucket (not
    cumulative) and the sum, changed and read under one lock."""

    __slots__ = ("_bounds", "_lock", "counts", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self._bounds = bounds
        self._lock = threading.Lock()
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        # bisect_left: a value equal to a bound falls in that bucket (Prometheus' le is inclusive).
        index = bisect_left(self._bounds, amount)
        with self._lock:
            self.counts[index] += 1
            self.sum += amount

    def snapshot(self) -> tuple[list[int], float]:
        with self._lock:
            return list(self.counts), self.sum


class _LoopChild:
    """One label set of a FastHistogram that only the event loop's thread observes: no lock.

    Why this is safe without one:
    - One writer: nothing races the loop's read-modify-write of a slot, so no observation is lost.
      Only label sets written on the loop get this child (``FastHistogram``'s ``single_writer``); the
      binding threads' extension points (``BINDING_THREAD_POINTS``) keep the locked one.
    - The scrape thread only reads, and reads everything at once: the bucket counts and the sum share
      one list, which ``list.copy`` copies in one C call without releasing the GIL. Each slot it copies
      holds an int or float object the loop stored whole (a pointer store), so no value is ever torn.
    - The copy can fall between an observe's two stores (count, then sum): the scrape then shows that
      one observation counted and not yet summed, and the next scrape shows it summed. Buckets, _count
      and +Inf stay consistent with each other (one copy, cumulated afterwards) and every series stays
      monotonic, so ``rate`` and ``histogram_quantile`` are unaffected; _sum can lag _count by at most
      the one observation in progress, i.e. the exposition is at most one observation stale.
    The GIL is what makes the copy atomic; a free-threaded build would need the lock back.
    """

    __slots__ = ("_bounds", "_slots")

    def __init__(self, bounds: Sequence[float]) -> None:
        self._bounds = bounds
        # A count per bucket (not cumulative), then the sum in the last slot.
        self._slots: list[float] = [0] * (len(bounds) + 1) + [0.0]

    def observe(self, amount: float) -> None:
        slots = self._slots
        # bisect_left: a value equal to a bound falls in that bucket (Prometheus' le is inclusive).
        slots[bisect_left(self._bounds, amount)] += 1
        slots[-1] += amount

    def snapshot(self) -> tuple[list[int], float]:
        slots = self._slots.copy()
        return slots[:-1], slots[-1]  # type: ignore[return-value]


_Child = _FastChild | _LoopChild


def _locked(values: tuple[str, ...]) -> bool:
    return False


def on_the_loop(values: tuple[str, ...]) -> bool:
    """``single_writer`` of a FastHistogram whose every label set is observed on the loop only."""
    return True


class FastHistogram(Collector):
    """A histogram for the scheduling cycle's hot path, exposed exactly like prometheus_client's.

    prometheus_client's observe takes three locks and walks the buckets (1.5 us); the cycle observes
    four extension points and the algorithm latency per pod, which made those 5 % of a cycle. This one
    bisects and, for a label set written from several threads, takes one lock (0.3 us); a label set
    that ``single_writer`` says only the loop observes takes none (``_LoopChild``). Used for the
    histograms observed on every cycle, pod or event.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry | None = REGISTRY,
        single_writer: Callable[[tuple[str, ...]], bool] = _locked,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._bounds = tuple(float(b) for b in buckets)
        self._children: dict[tuple[str, ...], _Child] = {}
        self._single_writer = single_writer
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str) -> _Child:
        if len(values) != len(self._labelnames):
            raise ValueError(f"{self._name}: expected labels {self._labelnames}, got {values}")
        child = self._children.get(values)
        if child is None:
            kind = _LoopChild if self._single_writer(values) else _FastChild
            with self._lock:
                child = self._children.setdefault(values, kind(self._bounds))
        return child

    def observe(self, amount: float) -> None:
        self.labels().observe(amount)

    def describe(self) -> list[Metric]:
        return [HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)]

    def snapshots(self) -> list[tuple[tuple[str, ...], list[int], float]]:
        """Per label set, in creation order: the count per bucket (not cumulative, +Inf last) and sum."""
        return [(values, *child.snapshot()) for values, child in list(self._children.items())]

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)
        les = [floatToGoString(b) for b in self._bounds] + ["+Inf"]  # type: ignore[no-untyped-call]
        for values, counts, total in self.snapshots():
            cumulative, running = [], 0
            for le, count in zip(les, counts, strict=True):
                running += count
                cumulative.append((le, float(running)))
            family.add_metric(list(values), cumulative, total)
        yield family


class ObservationCounter(Collector):
    """A counter that counts a FastHistogram's observations per label set, exposed exactly like a
    prometheus_client Counter with the same labels: for a counter incremented exactly where the
    histogram is observed (upstream's schedule_attempts_total and attempt duration), so the hot path
    pays for one observe, and the two can never disagree."""

    def __init__(
        self,
        name: str,
        documentation: str,
        histogram: FastHistogram,
        *,
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._histogram = histogram
        if registry is not None:
            registry.register(self)

    def describe(self) -> list[Metric]:
        return [CounterMetricFamily(self._name, self._documentation, labels=self._histogram._labelnames)]

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self._name, self._documentation, labels=self._histogram._labelnames)
        for values, counts, _ in self._histogram.snapshots():
            family.add_metric(list(values), float(sum(counts)))
        yield family


class LoopCounter(Collector):
    """An unlabelled counter that only the event loop's thread increments, exposed exactly like a
    prometheus_client Counter: the increment is one attribute store with no lock (one writer, so none
    is lost), and the scrape thread reads the int object whole, as the queue's counters do
    (scheduling_queue/metrics.py)."""

    def __init__(
        self, name: str, documentation: str, *, registry: CollectorRegistry | None = REGISTRY
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._value = 0
        if registry is not None:
            registry.register(self)

    def inc(self) -> None:
        self._value += 1

    def describe(self) -> list[Metric]:
        return [CounterMetricFamily(self._name, self._documentation)]

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(self._name, self._documentation, value=float(self._value))


# Result label values (pkg/scheduler/metrics/profile_metrics.go).
SCHEDULED: Final = "scheduled"
UNSCHEDULABLE: Final = "unschedulable"
ERROR: Final = "error"

# Extension-point label values (pkg/scheduler/metrics/metrics.go).
PRE_FILTER: Final = "PreFilter"
FILTER: Final = "Filter"
PRE_FILTER_EXTENSION_ADD_POD: Final = "PreFilterExtensionAddPod"
PRE_FILTER_EXTENSION_REMOVE_POD: Final = "PreFilterExtensionRemovePod"
POST_FILTER: Final = "PostFilter"
PRE_SCORE: Final = "PreScore"
SCORE: Final = "Score"
SCORE_EXTENSION_NORMALIZE: Final = "ScoreExtensionNormalize"
PRE_BIND: Final = "PreBind"
BIND: Final = "Bind"
POST_BIND: Final = "PostBind"
RESERVE: Final = "Reserve"
UNRESERVE: Final = "Unreserve"
PERMIT: Final = "Permit"

# schedule_one.go: plugin metrics are recorded for a random 10% of scheduling cycles.
PLUGIN_METRICS_SAMPLE_PERCENT: Final = 10

# schedule_one.go getAttemptsLabel: attempts are capped to bound the label's cardinality.
_MAX_ATTEMPTS_LABEL: Final = 15

# The extension points the binding threads run (scheduler/cycle/binding.py); every other point, and
# every other histogram below that says ``on_the_loop``, is observed on the event loop's thread only:
# the scheduling cycle, the event handlers and the delivery of binding results all run there.
BINDING_THREAD_POINTS: Final = frozenset({"PreBindPreFlight", "PreBind", "Bind", "PostBind"})

# The attempt histogram counts the attempts too: scheduler_schedule_attempts_total is its _count per
# label set (upstream increments one where it observes the other), so an attempt costs one observe.
# Registered after the counter, so the exposition keeps the counter first.
SCHEDULING_ATTEMPT_DURATION = FastHistogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=None,
    single_writer=on_the_loop,
)
SCHEDULE_ATTEMPTS = ObservationCounter(
    "scheduler_schedule_attempts",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
    "scheduled, while 'error' means an internal scheduler problem.",
    SCHEDULING_ATTEMPT_DURATION,
)
REGISTRY.register(SCHEDULING_ATTEMPT_DURATION)
SCHEDULING_ALGORITHM_DURATION = FastHistogram(
    "scheduler_scheduling_algorithm_duration_seconds",
    "Scheduling algorithm latency in seconds",
    buckets=exponential_buckets(0.001, 2, 15),
    single_writer=on_the_loop,
)
EVENT_HANDLING_DURATION = FastHistogram(
    "scheduler_event_handling_duration_seconds",
    "Event handling latency in seconds.",
    ["event"],
    buckets=exponential_buckets(0.0001, 2, 12),
    single_writer=on_the_loop,
)
POD_SCHEDULING_SLI_DURATION = FastHistogram(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might "
    "involve multiple scheduling attempts.",
    ["attempts"],
    buckets=exponential_buckets(0.01, 2, 20),
    single_writer=on_the_loop,
)
POD_SCHEDULING_ATTEMPTS = FastHistogram(
    "scheduler_pod_scheduling_attempts",
    "Number of attempts to successfully schedule a pod.",
    buckets=exponential_buckets(1, 2, 5),
    single_writer=on_the_loop,
)
FRAMEWORK_EXTENSION_POINT_DURATION = FastHistogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"],
    buckets=exponential_buckets(0.0001, 2, 12),
    single_writer=lambda values: values[0] not in BINDING_THREAD_POINTS,
)
PLUGIN_EXECUTION_DURATION = FastHistogram(
    "scheduler_plugin_execution_duration_seconds",
    "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
    single_writer=lambda values: values[1] not in BINDING_THREAD_POINTS,
)
# Registered only with the GenericWorkload gate on (``register_pod_group_metrics``), as upstream.
POD_GROUP_SCHEDULE_ATTEMPTS = Counter(
    "scheduler_podgroup_schedule_attempts",
    "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not "
    "be scheduled, while 'error' means an internal scheduler problem.",
    ["result", "profile"],
    registry=None,
)
POD_GROUP_SCHEDULING_ATTEMPT_DURATION = FastHistogram(
    "scheduler_podgroup_scheduling_attempt_duration_seconds",
    "Pod group scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=None,
)
POD_GROUP_SCHEDULING_ALGORITHM_DURATION = FastHistogram(
    "scheduler_podgroup_scheduling_algorithm_duration_seconds",
    "Pod group scheduling algorithm latency in seconds",
    buckets=exponential_buckets(0.001, 2, 15),
    registry=None,
)
# Workload-aware preemption (registered with the pod group metrics, as upstream).
WORKLOAD_PREEMPTION_ATTEMPTS = Counter(
    "scheduler_workload_preemption_attempts",
    "Total preemption attempts initiated by workload (including pod groups) in the cluster till now.",
    ["result"],
    registry=None,
)
WORKLOAD_PREEMPTION_VICTIMS = Histogram(
    "scheduler_workload_preemption_victims",
    "Number of pod preemption victims caused by workload preemption.",
    buckets=exponential_buckets(1, 2, 11),
    registry=None,
)
PREEMPTION_WORKLOAD_DISRUPTIONS = Histogram(
    "scheduler_preemption_workload_disruptions",
    "Number of workload preemption units being preempted. A single preemption unit can be all pods in a "
    "pod group (in case of DisruptionMode=all), or a single pod (in case of DisruptionMode=single).",
    ["preemptor"],
    buckets=exponential_buckets(1, 2, 11),
    registry=None,
)
PREEMPTION_EVALUATION_DURATION = Histogram(
    "scheduler_preemption_evaluation_duration_seconds",
    "Duration in seconds for identifying the target preemption victims.",
    ["preemptor", "result"],
    buckets=exponential_buckets(0.001, 2, 16),
    registry=None,
)
PREEMPTION_EXECUTION_DURATION = Histogram(
    "scheduler_preemption_execution_duration_seconds",
    "Duration in seconds for preempting the target preemption victims. With async preemption enabled, "
    "preemption execution does not block the scheduling of other pods.",
    ["preemptor", "result"],
    buckets=exponential_buckets(0.001, 2, 16),
    registry=None,
)
PREEMPTION_PDB_VIOLATIONS = Counter(
    "scheduler_preemption_pdb_violations",
    "Total number of pod disruption budget violations caused by preemption.",
    ["preemptor"],
    registry=None,
)
# A pod group cycle's results (profile_metrics.go).
POD_GROUP_SCHEDULED: Final = "scheduled"
POD_GROUP_UNSCHEDULABLE: Final = "unschedulable"
POD_GROUP_WAITING_ON_PREEMPTION: Final = "waiting_on_preemption"
POD_GROUP_ERROR: Final = "error"
_pod_group_metrics_registered: set[int] = set()


def register_pod_group_metrics(registry: CollectorRegistry = REGISTRY) -> None:
    """The pod group metrics join ``registry`` (once): upstream registers them with GenericWorkload."""
    if id(registry) in _pod_group_metrics_registered:
        return
    _pod_group_metrics_registered.add(id(registry))
    for collector in (
        POD_GROUP_SCHEDULE_ATTEMPTS,
        POD_GROUP_SCHEDULING_ATTEMPT_DURATION,
        POD_GROUP_SCHEDULING_ALGORITHM_DURATION,
        WORKLOAD_PREEMPTION_ATTEMPTS,
        WORKLOAD_PREEMPTION_VICTIMS,
        PREEMPTION_WORKLOAD_DISRUPTIONS,
        PREEMPTION_EVALUATION_DURATION,
        PREEMPTION_EXECUTION_DURATION,
        PREEMPTION_PDB_VIOLATIONS,
    ):
        registry.register(collector)


def observe_pod_group_attempt(result: str, profile: str, seconds: float) -> None:
    POD_GROUP_SCHEDULING_ATTEMPT_DURATION.labels(result, profile).observe(seconds)
    POD_GROUP_SCHEDULE_ATTEMPTS.labels(result, profile).inc()


PERMIT_WAIT_DURATION = Histogram(
    "scheduler_permit_wait_duration_seconds",
    "Duration of waiting on permit.",
    ["result"],
    buckets=exponential_buckets(0.001, 2, 15),
)
CACHE_SIZE = Gauge(
    "scheduler_cache_size",
    "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
    ["type"],
)
UNSCHEDULABLE_PODS = Gauge(
    "scheduler_unschedulable_pods",
    "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all "
    "plugins that caused it to not schedule and so this metric have meaning only when broken down by "
    "plugin.",
    ["plugin", "profile"],
)
PLUGIN_EVALUATION = Counter(
    "scheduler_plugin_evaluation",
    "Number of attempts to schedule pods by each plugin and the extension point (available only in "
    "PreFilter, Filter, PreScore, and Score).",
    ["plugin", "extension_point", "profile"],
)
POD_SCHEDULED_AFTER_FLUSH = Counter(
    "scheduler_pod_scheduled_after_flush",
    "Number of pods that were successfully scheduled after being flushed from unschedulableEntities due "
    "to timeout. This metric helps detect potential queueing hint misconfigurations or event handling "
    "issues.",
)
# Preemption (pkg/scheduler/metrics/metrics.go).
PREEMPTION_ATTEMPTS = Counter(
    "scheduler_preemption_attempts",
    "Total preemption attempts in the cluster till now",
)
PREEMPTION_VICTIMS = Histogram(
    "scheduler_preemption_victims",
    "Number of selected preemption victims",
    # Upstream: #victims > 64 is rare, so [64, +Inf) is one bucket.
    buckets=exponential_buckets(1, 2, 7),
)
# Upstream counts running goroutines by the work they do; py-scheduler has no goroutines, and reports
# under the same name the preemptions whose victim writes are still in flight (operation="preemption").
GOROUTINES = Gauge(
    "scheduler_goroutines",
    "Number of running goroutines split by the work they do such as binding.",
    ["operation"],
)
OPERATION_PREEMPTION: Final = "preemption"
PREEMPTION_GOROUTINES_DURATION = Histogram(
    "scheduler_preemption_goroutines_duration_seconds",
    "Duration in seconds for running goroutines for the preemption.",
    ["result"],
    buckets=exponential_buckets(0.01, 2, 20),
)
PREEMPTION_GOROUTINES_EXECUTION = Counter(
    "scheduler_preemption_goroutines_execution",
    "Number of preemption goroutines executed.",
    ["result"],
)
GOROUTINE_RESULT_SUCCESS: Final = "success"
GOROUTINE_RESULT_ERROR: Final = "error"

LEADER_ELECTION_MASTER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
    "master. 'name' is the string used to identify the lease. Please make sure to group by name.",
    ["name"],
)
LEADER_ELECTION_SLOWPATH = Counter(
    "leader_election_slowpath",
    "Total number of slow path exercised in renewing leader leases. 'name' is the string used to "
    "identify the lease. Please make sure to group by name.",
    ["name"],
)

# py-scheduler's own (no kube-scheduler counterpart with these semantics): opportunistic batching.
# Counted per pod by the scheduling algorithm, on the loop.
BATCHING_HITS = LoopCounter(
    "py_scheduler_batching_hits",
    "Scheduling attempts that reused the Filter verdicts and raw Scores of an earlier pod with the same "
    "signature, revalidating only the nodes changed since.",
)
BATCHING_MISSES = LoopCounter(
    "py_scheduler_batching_misses",
    "Scheduling attempts that judged every node afresh: a new signature, a pod no plugin could sign, "
    "or a node list that changed.",
)


def observe_batching(result: str) -> None:
    (BATCHING_HITS if result == "hit" else BATCHING_MISSES).inc()


# Ours: each connection to the API server costs a TLS handshake (Go's client multiplexes one HTTP/2
# connection; ours hold one per binding or writer thread in flight).
API_CONNECTIONS_OPENED = Counter(
    "py_scheduler_api_connections_opened",
    "Connections the binding and writer threads opened to the API server, by TLS handshake: full, "
    "or resumed (the session of an earlier connection; no certificate signature or verification).",
    ["handshake"],
)


def observe_connection_opened(resumed: bool) -> None:
    API_CONNECTIONS_OPENED.labels("resumed" if resumed else "full").inc()


_M = TypeVar("_M", bound=MetricWrapperBase)
_children: dict[tuple[int, tuple[str, ...]], MetricWrapperBase] = {}


def _child(metric: _M, *labels: str) -> _M:
    # A race between two threads only builds the same child twice; prometheus_client returns the
    # same object for the same labels, so the memo stays consistent without a lock.
    key = (id(metric), labels)
    child = _children.get(key)
    if child is None:
        child = metric.labels(*labels)
        _children[key] = child
    return child  # type: ignore[return-value]


_attempt_children: dict[tuple[str, str], _Child] = {}


def observe_attempt(result: str, profile: str, seconds: float) -> None:
    """One scheduling attempt ended: result is ``scheduled``, ``unschedulable`` or ``error``."""
    key = (result, profile)
    child = _attempt_children.get(key)
    if child is None:
        child = _attempt_children[key] = SCHEDULING_ATTEMPT_DURATION.labels(*key)
    # Also counts the attempt: SCHEDULE_ATTEMPTS exposes this histogram's count.
    child.observe(seconds)


def pod_scheduled(profile: str, seconds: float) -> None:
    observe_attempt(SCHEDULED, profile, seconds)


def pod_unschedulable(profile: str, seconds: float) -> None:
    observe_attempt(UNSCHEDULABLE, profile, seconds)


def pod_schedule_error(profile: str, seconds: float) -> None:
    observe_attempt(ERROR, profile, seconds)


def attempts_label(attempts: int) -> str:
    return f"{_MAX_ATTEMPTS_LABEL}+" if attempts >= _MAX_ATTEMPTS_LABEL else str(attempts)


_POD_ATTEMPTS = POD_SCHEDULING_ATTEMPTS.labels()


# By the attempts a pod took, capped as the label is: no label string is formatted per pod.
_sli_children: dict[int, _Child] = {}


def observe_pod_bound(attempts: int, sli_seconds: float) -> None:
    """After a successful bind: attempts it took and seconds since the pod first entered the queue."""
    _POD_ATTEMPTS.observe(attempts)
    capped = min(attempts, _MAX_ATTEMPTS_LABEL)  # the label's cap, so the memo stays as small
    child = _sli_children.get(capped)
    if child is None:
        child = _sli_children[capped] = POD_SCHEDULING_SLI_DURATION.labels(attempts_label(capped))
    child.observe(sli_seconds)


_ALGORITHM = SCHEDULING_ALGORITHM_DURATION.labels()
_points: dict[tuple[str, str, str], _Child] = {}
_plugin_children: dict[tuple[str, str, str], _Child] = {}


def observe_algorithm(seconds: float) -> None:
    _ALGORITHM.observe(seconds)


_event_children: dict[str, _Child] = {}


def observe_event_handling(event: str, seconds: float) -> None:
    child = _event_children.get(event)
    if child is None:
        child = _event_children[event] = EVENT_HANDLING_DURATION.labels(event)
    child.observe(seconds)


def observe_extension_point(extension_point: str, status: str, profile: str, seconds: float) -> None:
    """``status`` is the Status code's name as upstream prints it: Success, Unschedulable, Error, ..."""
    key = (extension_point, status, profile)
    child = _points.get(key)
    if child is None:
        child = _points[key] = FRAMEWORK_EXTENSION_POINT_DURATION.labels(*key)
    child.observe(seconds)


def extension_point_observer(profile: str) -> Callable[[str, str, float], None]:
    """``observe_extension_point`` bound to one profile, for its framework: the framework observes
    several points per pod, each then one call and one lookup by (point, status). Called on the loop
    and, for BINDING_THREAD_POINTS, on binding threads: two threads adding the same key both store the
    one child ``labels`` returns for it."""
    children: dict[tuple[str, str], _Child] = {}

    def observe(extension_point: str, status: str, seconds: float) -> None:
        child = children.get((extension_point, status))
        if child is None:
            child = children[extension_point, status] = FRAMEWORK_EXTENSION_POINT_DURATION.labels(
                extension_point, status, profile
            )
        child.observe(seconds)

    return observe


def should_sample_plugin_metrics(rand: Callable[[], float] = random.random) -> bool:
    """Decide once per scheduling cycle whether this cycle records per-plugin durations."""
    return rand() * 100 < PLUGIN_METRICS_SAMPLE_PERCENT


def observe_plugin(plugin: str, extension_point: str, status: str, seconds: float) -> None:
    key = (plugin, extension_point, status)
    child = _plugin_children.get(key)
    if child is None:
        child = _plugin_children[key] = PLUGIN_EXECUTION_DURATION.labels(*key)
    child.observe(seconds)


def count_plugin_evaluation(plugin: str, extension_point: str, profile: str, n: int = 1) -> None:
    _child(PLUGIN_EVALUATION, plugin, extension_point, profile).inc(n)


def observe_permit_wait(result: str, seconds: float) -> None:
    _child(PERMIT_WAIT_DURATION, result).observe(seconds)


def set_cache_size(kind: str, value: int) -> None:
    """``kind`` is ``nodes``, ``pods`` or ``assumed_pods`` as in kube-scheduler's cache."""
    _child(CACHE_SIZE, kind).set(value)


def set_unschedulable_pods(counts: Mapping[tuple[str, str], int]) -> None:
    """Set the gauge from a fresh count per (plugin, profile); pairs that went away drop to 0."""
    for labels in list(_unschedulable_seen - counts.keys()):
        _child(UNSCHEDULABLE_PODS, *labels).set(0)
    for labels, count in counts.items():
        _child(UNSCHEDULABLE_PODS, *labels).set(count)
    _unschedulable_seen.clear()
    _unschedulable_seen.update(counts)


_unschedulable_seen: set[tuple[str, str]] = set()


def unschedulable_pod_added(plugin: str, profile: str) -> None:
    _child(UNSCHEDULABLE_PODS, plugin, profile).inc()


def unschedulable_pod_removed(plugin: str, profile: str) -> None:
    _child(UNSCHEDULABLE_PODS, plugin, profile).dec()


def set_leader(name: str, leading: bool) -> None:
    _child(LEADER_ELECTION_MASTER_STATUS, name).set(1.0 if leading else 0.0)


def leader_slowpath(name: str) -> None:
    _child(LEADER_ELECTION_SLOWPATH, name).inc()


def observe_preemption_disruptions(preemptor: str, disruptions: int, pdb_violations: int) -> None:
    """Part of upstream's executor ``observeVictims``: the workload units one preemption evicts (a pod
    group's member, or a whole PodGroup in disruption mode all; a pod's preemption counts none, as
    upstream's candidates of a pod carry none) and the budgets its victims break, by who preempted
    (``pod`` or ``podgroup``). The victim count itself is ``scheduler_preemption_victims`` for a pod
    and ``scheduler_workload_preemption_victims`` for a pod group."""
    if disruptions > 0:
        PREEMPTION_WORKLOAD_DISRUPTIONS.labels(preemptor).observe(disruptions)
    if pdb_violations > 0:
        PREEMPTION_PDB_VIOLATIONS.labels(preemptor).inc(pdb_violations)


# py-scheduler's own: where the load-aware (Trimaran) plugins' measured load stands.
LOAD_METRICS_FALLBACK = Counter(
    "py_scheduler_load_metrics_fallback_total",
    "Nodes a load-aware plugin scored with the minimum score because the latest load sample had no "
    "metrics for them (reason: no_sample, no_node_metrics, no_cpu_metric).",
    ["plugin", "reason"],
)
LOAD_METRICS_FETCHES = Counter(
    "py_scheduler_load_metrics_fetches_total",
    "Refreshes of a load metrics source (a metric provider or a load-watcher service), by result.",
    ["source", "result"],
)
LOAD_METRICS_AGE = Gauge(
    "py_scheduler_load_metrics_age_seconds",
    "Seconds since the load sample the load-aware plugins read was taken (absent: none yet).",
    ["source"],
)


def load_metrics_fallback(plugin: str, reason: str) -> None:
    _child(LOAD_METRICS_FALLBACK, plugin, reason).inc()
