"""Scheduler metrics must match kube-scheduler's so its dashboards and alerts work unchanged."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from scheduler import metrics
from scheduler.cycle.profiles import SAMPLE_PERCENT_ENV
from tests.unit.fakes import CoreEnv, make_node, make_pod

# Upstream definitions, copied by hand from kubernetes/kubernetes v1.36.3
# pkg/scheduler/metrics/metrics.go (names, types, label names, ExponentialBuckets arguments) and
# staging/src/k8s.io/component-base/metrics/prometheus/clientgo/leaderelection/metrics.go.
# The bucket strings are what Go prints for them (strconv.FormatFloat(v, 'g', -1, 64)), i.e. the `le`
# label values kube-scheduler exposes.
UPSTREAM_HISTOGRAMS: dict[str, tuple[tuple[str, ...], list[str]]] = {
    # ExponentialBuckets(0.001, 2, 15)
    "scheduler_scheduling_attempt_duration_seconds": (
        ("result", "profile"),
        [
            "0.001",
            "0.002",
            "0.004",
            "0.008",
            "0.016",
            "0.032",
            "0.064",
            "0.128",
            "0.256",
            "0.512",
            "1.024",
            "2.048",
            "4.096",
            "8.192",
            "16.384",
        ],
    ),
    "scheduler_scheduling_algorithm_duration_seconds": (
        (),
        [
            "0.001",
            "0.002",
            "0.004",
            "0.008",
            "0.016",
            "0.032",
            "0.064",
            "0.128",
            "0.256",
            "0.512",
            "1.024",
            "2.048",
            "4.096",
            "8.192",
            "16.384",
        ],
    ),
    "scheduler_permit_wait_duration_seconds": (
        ("result",),
        [
            "0.001",
            "0.002",
            "0.004",
            "0.008",
            "0.016",
            "0.032",
            "0.064",
            "0.128",
            "0.256",
            "0.512",
            "1.024",
            "2.048",
            "4.096",
            "8.192",
            "16.384",
        ],
    ),
    # ExponentialBuckets(0.0001, 2, 12)
    "scheduler_event_handling_duration_seconds": (
        ("event",),
        [
            "0.0001",
            "0.0002",
            "0.0004",
            "0.0008",
            "0.0016",
            "0.0032",
            "0.0064",
            "0.0128",
            "0.0256",
            "0.0512",
            "0.1024",
            "0.2048",
        ],
    ),
    "scheduler_framework_extension_point_duration_seconds": (
        ("extension_point", "status", "profile"),
        [
            "0.0001",
            "0.0002",
            "0.0004",
            "0.0008",
            "0.0016",
            "0.0032",
            "0.0064",
            "0.0128",
            "0.0256",
            "0.0512",
            "0.1024",
            "0.2048",
        ],
    ),
    # ExponentialBuckets(0.01, 2, 20)
    "scheduler_pod_scheduling_sli_duration_seconds": (
        ("attempts",),
        [
            "0.01",
            "0.02",
            "0.04",
            "0.08",
            "0.16",
            "0.32",
            "0.64",
            "1.28",
            "2.56",
            "5.12",
            "10.24",
            "20.48",
            "40.96",
            "81.92",
            "163.84",
            "327.68",
            "655.36",
            "1310.72",
            "2621.44",
            "5242.88",
        ],
    ),
    # ExponentialBuckets(1, 2, 5)
    "scheduler_pod_scheduling_attempts": ((), ["1", "2", "4", "8", "16"]),
    # ExponentialBuckets(0.00001, 1.5, 20)
    "scheduler_plugin_execution_duration_seconds": (
        ("plugin", "extension_point", "status"),
        [
            "1e-05",
            "1.5000000000000002e-05",
            "2.2500000000000005e-05",
            "3.375000000000001e-05",
            "5.062500000000001e-05",
            "7.593750000000002e-05",
            "0.00011390625000000003",
            "0.00017085937500000006",
            "0.0002562890625000001",
            "0.00038443359375000017",
            "0.0005766503906250003",
            "0.0008649755859375004",
            "0.0012974633789062506",
            "0.0019461950683593758",
            "0.0029192926025390638",
            "0.004378938903808595",
            "0.006568408355712893",
            "0.009852612533569338",
            "0.014778918800354007",
            "0.02216837820053101",
        ],
    ),
}
UPSTREAM_COUNTERS: dict[str, tuple[str, ...]] = {
    "scheduler_schedule_attempts_total": ("result", "profile"),
    "scheduler_plugin_evaluation_total": ("plugin", "extension_point", "profile"),
    "leader_election_slowpath_total": ("name",),
    "scheduler_pod_scheduled_after_flush_total": (),
}
UPSTREAM_GAUGES: dict[str, tuple[str, ...]] = {
    "scheduler_unschedulable_pods": ("plugin", "profile"),
    "scheduler_cache_size": ("type",),
    "leader_election_master_status": ("name",),
}


def _touch_every_metric() -> None:
    """Labelled metrics only appear in the exposition once a child exists."""
    metrics.observe_attempt(metrics.SCHEDULED, "touch", 0.01)
    metrics.observe_algorithm(0.001)
    metrics.observe_permit_wait("Success", 0.001)
    metrics.observe_event_handling("NodeAdd", 0.0001)
    metrics.observe_extension_point(metrics.FILTER, "Success", "touch", 0.0001)
    metrics.observe_pod_bound(1, 0.1)
    metrics.observe_plugin("NodeResourcesFit", metrics.FILTER, "Success", 0.00001)
    metrics.count_plugin_evaluation("NodeResourcesFit", metrics.FILTER, "touch")
    metrics.unschedulable_pod_added("touch", "touch")
    metrics.unschedulable_pod_removed("touch", "touch")
    metrics.set_cache_size("nodes", 3)
    metrics.set_leader("touch", True)
    metrics.leader_slowpath("touch")


def _families() -> dict[str, tuple[str, list[tuple[str, dict[str, str], float]]]]:
    _touch_every_metric()
    text = generate_latest(REGISTRY).decode()
    out: dict[str, tuple[str, list[tuple[str, dict[str, str], float]]]] = {}
    for family in text_string_to_metric_families(text):
        samples = [(s.name, dict(s.labels), s.value) for s in family.samples]
        out[family.name] = (family.type, samples)
    return out


def _exposed_name(name: str, kind: str) -> str:
    # The parser strips a counter's _total suffix from the family name.
    return name.removesuffix("_total") if kind == "counter" else name


@pytest.mark.parametrize("name", sorted(UPSTREAM_HISTOGRAMS))
def test_histogram_name_labels_and_buckets_match_upstream(name: str) -> None:
    labels, go_buckets = UPSTREAM_HISTOGRAMS[name]
    kind, samples = _families()[name]
    assert kind == "histogram"
    buckets = [s for s in samples if s[0] == f"{name}_bucket"]
    assert buckets, f"{name} exposes no buckets"
    first = buckets[0][1]
    assert set(first) == {*labels, "le"}
    same_child = [
        b
        for b in buckets
        if {k: v for k, v in b[1].items() if k != "le"} == {k: v for k, v in first.items() if k != "le"}
    ]
    les = [b[1]["le"] for b in same_child]
    assert les[-1] == "+Inf"
    # Same floats as Go (so histogram_quantile and `by (le)` aggregate alike) ...
    assert [float(le) for le in les[:-1]] == [float(le) for le in go_buckets]
    # ... and the same strings, except that prometheus_client writes integral bounds as "1.0" where Go
    # writes "1" (Prometheus 3 normalises le on ingestion, so the series still line up).
    assert [le.removesuffix(".0") for le in les[:-1]] == go_buckets


@pytest.mark.parametrize("name", sorted(UPSTREAM_COUNTERS))
def test_counter_names_and_labels_match_upstream(name: str) -> None:
    families = _families()
    kind, samples = families[_exposed_name(name, "counter")]
    assert kind == "counter"
    totals = [s for s in samples if s[0] == name]
    assert totals
    assert set(totals[0][1]) == set(UPSTREAM_COUNTERS[name])


@pytest.mark.parametrize("name", sorted(UPSTREAM_GAUGES))
def test_gauge_names_and_labels_match_upstream(name: str) -> None:
    kind, samples = _families()[name]
    assert kind == "gauge"
    assert set(samples[0][1]) == set(UPSTREAM_GAUGES[name])


def test_no_created_series_like_go_client() -> None:
    text = generate_latest(REGISTRY).decode()
    assert "scheduler_schedule_attempts_created" not in text
    assert "_created{" not in text


def test_metrics_owned_by_other_modules_are_not_defined_here() -> None:
    kinds = (MetricWrapperBase, metrics.FastHistogram, metrics.ObservationCounter, metrics.LoopCounter)
    own = {m._name for m in vars(metrics).values() if isinstance(m, kinds)}
    assert "scheduler_pending_pods" not in own
    assert "scheduler_queue_incoming_pods" not in own
    assert "scheduler_schedule_attempts" in own


def _value(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_observe_attempt_counts_and_times_by_result_and_profile() -> None:
    labels = {"result": "unschedulable", "profile": "p-attempt"}
    before = _value("scheduler_schedule_attempts_total", labels)
    before_count = _value("scheduler_scheduling_attempt_duration_seconds_count", labels)
    metrics.pod_unschedulable("p-attempt", 0.003)
    metrics.pod_unschedulable("p-attempt", 0.005)
    assert _value("scheduler_schedule_attempts_total", labels) == before + 2
    assert _value("scheduler_scheduling_attempt_duration_seconds_count", labels) == before_count + 2
    bucket = _value("scheduler_scheduling_attempt_duration_seconds_bucket", {**labels, "le": "0.004"})
    assert bucket >= 1
    metrics.pod_scheduled("p-attempt", 0.001)
    metrics.pod_schedule_error("p-attempt", 0.001)
    for result in ("scheduled", "error"):
        assert _value("scheduler_schedule_attempts_total", {"result": result, "profile": "p-attempt"}) >= 1


def test_attempts_label_is_capped_like_upstream() -> None:
    assert metrics.attempts_label(1) == "1"
    assert metrics.attempts_label(14) == "14"
    assert metrics.attempts_label(15) == "15+"
    assert metrics.attempts_label(99) == "15+"
    before = _value("scheduler_pod_scheduling_sli_duration_seconds_count", {"attempts": "15+"})
    metrics.observe_pod_bound(20, 3.0)
    assert _value("scheduler_pod_scheduling_sli_duration_seconds_count", {"attempts": "15+"}) == before + 1


def test_plugin_metrics_are_sampled_at_ten_percent() -> None:
    assert metrics.PLUGIN_METRICS_SAMPLE_PERCENT == 10
    assert metrics.should_sample_plugin_metrics(lambda: 0.0)
    assert metrics.should_sample_plugin_metrics(lambda: 0.0999)
    assert not metrics.should_sample_plugin_metrics(lambda: 0.1)
    assert not metrics.should_sample_plugin_metrics(lambda: 0.99)


def test_unschedulable_pods_gauge_goes_up_and_down() -> None:
    labels = {"plugin": "TaintToleration", "profile": "p-gauge"}
    metrics.unschedulable_pod_added("TaintToleration", "p-gauge")
    metrics.unschedulable_pod_added("TaintToleration", "p-gauge")
    metrics.unschedulable_pod_removed("TaintToleration", "p-gauge")
    assert _value("scheduler_unschedulable_pods", labels) == 1


def test_leader_gauge() -> None:
    metrics.set_leader("lease-x", True)
    assert _value("leader_election_master_status", {"name": "lease-x"}) == 1
    metrics.set_leader("lease-x", False)
    assert _value("leader_election_master_status", {"name": "lease-x"}) == 0


def test_exponential_buckets_is_go_sequence() -> None:
    assert metrics.exponential_buckets(1, 2, 5) == (1, 2, 4, 8, 16)
    assert len(metrics.exponential_buckets(0.00001, 1.5, 20)) == 20


def test_pod_group_metrics_match_upstream_and_join_a_registry_only_when_asked() -> None:
    """metrics.go: podgroup_schedule_attempts_total, podgroup_scheduling_attempt_duration_seconds and
    podgroup_scheduling_algorithm_duration_seconds, registered with GenericWorkload only."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    assert "podgroup" not in generate_latest(registry).decode()
    metrics.register_pod_group_metrics(registry)
    metrics.register_pod_group_metrics(registry)  # idempotent
    metrics.observe_pod_group_attempt(metrics.POD_GROUP_WAITING_ON_PREEMPTION, "touch", 0.003)
    metrics.POD_GROUP_SCHEDULING_ALGORITHM_DURATION.observe(0.002)
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
    attempts = families["scheduler_podgroup_schedule_attempts"]
    assert attempts.type == "counter"
    # The counters are the process's own: tests that ran before may have added series of other profiles.
    [total] = [
        s
        for s in attempts.samples
        if s.name == "scheduler_podgroup_schedule_attempts_total" and s.labels.get("profile") == "touch"
    ]
    assert total.labels == {"result": "waiting_on_preemption", "profile": "touch"} and total.value >= 1
    go_buckets = [0.001 * 2**k for k in range(15)]
    for name, labels in (
        ("scheduler_podgroup_scheduling_attempt_duration_seconds", {"result", "profile"}),
        ("scheduler_podgroup_scheduling_algorithm_duration_seconds", set()),
    ):
        family = families[name]
        assert family.type == "histogram"
        buckets = [s for s in family.samples if s.name == f"{name}_bucket"]
        assert {k for k in buckets[0].labels if k != "le"} == labels
        les = [b.labels["le"] for b in buckets if b.labels.get("profile", "touch") == "touch"]
        assert [float(le) for le in les[:-1]] == go_buckets and les[-1] == "+Inf"


def test_workload_preemption_metrics_match_upstream_and_join_with_the_pod_group_metrics() -> None:
    """metrics.go (v1.37.2): workload_preemption_attempts_total{result}, workload_preemption_victims,
    preemption_workload_disruptions{preemptor}, preemption_evaluation_duration_seconds{preemptor,result},
    preemption_execution_duration_seconds{preemptor,result}, preemption_pdb_violations_total{preemptor},
    registered with GenericWorkload (with the pod group metrics), not before."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    assert "preemption" not in generate_latest(registry).decode()
    metrics.register_pod_group_metrics(registry)
    metrics.WORKLOAD_PREEMPTION_ATTEMPTS.labels("Success").inc()
    metrics.WORKLOAD_PREEMPTION_VICTIMS.observe(2)
    metrics.observe_preemption_disruptions("podgroup", 1, 1)
    metrics.observe_preemption_disruptions("pod", 0, 0)  # nothing to count: no series
    metrics.PREEMPTION_EVALUATION_DURATION.labels("podgroup", "Success").observe(0.01)
    metrics.PREEMPTION_EXECUTION_DURATION.labels("podgroup", "success").observe(0.02)
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
    counts = [1.0 * 2**k for k in range(11)]
    durations = [0.001 * 2**k for k in range(16)]
    for name, kind, labels, buckets in (
        ("scheduler_workload_preemption_attempts", "counter", {"result"}, None),
        ("scheduler_workload_preemption_victims", "histogram", set(), counts),
        ("scheduler_preemption_workload_disruptions", "histogram", {"preemptor"}, counts),
        ("scheduler_preemption_evaluation_duration_seconds", "histogram", {"preemptor", "result"}, durations),
        ("scheduler_preemption_execution_duration_seconds", "histogram", {"preemptor", "result"}, durations),
        ("scheduler_preemption_pdb_violations", "counter", {"preemptor"}, None),
    ):
        family = families[name]
        assert family.type == kind, name
        assert {k for s in family.samples for k in s.labels if k != "le"} == labels, name
        if buckets is not None:
            les = [s.labels["le"] for s in family.samples if s.name == f"{name}_bucket"]
            first = les[: len(buckets) + 1]
            assert [float(le) for le in first[:-1]] == pytest.approx(buckets) and first[-1] == "+Inf", name
    disrupted = families["scheduler_preemption_workload_disruptions"].samples
    assert "podgroup" in {s.labels["preemptor"] for s in disrupted}


def _values_to_observe(bounds: tuple[float, ...], n: int) -> list[float]:
    """``n`` values spread over the buckets, the bounds themselves (le is inclusive) and beyond +Inf's."""
    rng = random.Random(7)
    edge = [*bounds, bounds[0] / 2, bounds[-1] * 3]
    return [rng.choice(edge) if i % 3 == 0 else rng.uniform(0, bounds[-1] * 1.5) for i in range(n)]


@pytest.mark.parametrize("single_writer", [metrics.on_the_loop, lambda values: False], ids=["loop", "locked"])
def test_fast_histogram_exposition_is_prometheus_clients_byte_for_byte(
    single_writer: Callable[[tuple[str, ...]], bool],
) -> None:
    bounds = metrics.exponential_buckets(0.0001, 2, 12)
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    fast = metrics.FastHistogram("h_seconds", "Help.", ["a", "b"], buckets=bounds, registry=ours)
    reference = Histogram("h_seconds", "Help.", ["a", "b"], buckets=bounds, registry=theirs)
    for i, value in enumerate(_values_to_observe(bounds, 1000)):
        labels = ("x", "y") if i % 4 else ("z", "y")
        fast.labels(*labels).observe(value)
        reference.labels(*labels).observe(value)
    assert generate_latest(ours) == generate_latest(theirs)


def test_schedule_attempts_counter_is_exposed_as_prometheus_clients_counter_byte_for_byte() -> None:
    bounds = metrics.exponential_buckets(0.001, 2, 15)
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    fast = metrics.FastHistogram(
        "attempt_seconds", "Latency.", ["result", "profile"], buckets=bounds, registry=None
    )
    metrics.ObservationCounter("attempts", "Attempts.", fast, registry=ours)
    ours.register(fast)
    counter = Counter("attempts", "Attempts.", ["result", "profile"], registry=theirs)
    reference = Histogram(
        "attempt_seconds", "Latency.", ["result", "profile"], buckets=bounds, registry=theirs
    )
    assert generate_latest(ours) == generate_latest(theirs)
    for i, value in enumerate(_values_to_observe(bounds, 500)):
        labels = ("scheduled" if i % 5 else "unschedulable", "p")
        fast.labels(*labels).observe(value)
        reference.labels(*labels).observe(value)
        counter.labels(*labels).inc()
    assert generate_latest(ours) == generate_latest(theirs)


def test_loop_counter_is_exposed_as_prometheus_clients_counter_byte_for_byte() -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    fast = metrics.LoopCounter("hits", "Hits.", registry=ours)
    reference = Counter("hits", "Hits.", registry=theirs)
    assert generate_latest(ours) == generate_latest(theirs)
    for _ in range(1234):
        fast.inc()
        reference.inc()
    assert generate_latest(ours) == generate_latest(theirs)


def test_a_scrape_during_loop_observations_is_never_torn() -> None:
    """The loop child takes no lock: a scrape from another thread, while the loop observes, still shows
    cumulative buckets ending at _count, a count never behind an earlier scrape, and at most the one
    observation in progress counted but not yet summed."""
    registry = CollectorRegistry()
    fast = metrics.FastHistogram(
        "h", "Help.", buckets=(1.0, 2.0, 3.0), registry=registry, single_writer=metrics.on_the_loop
    )
    child = fast.labels()
    done = threading.Event()

    def observe_on_the_loop() -> None:
        for _ in range(200_000):
            child.observe(1.0)  # every observation adds exactly 1 to the sum
        done.set()

    writer = threading.Thread(target=observe_on_the_loop)
    writer.start()
    last_count = 0.0
    while not done.is_set():
        [family] = text_string_to_metric_families(generate_latest(registry).decode())
        samples = {(s.name, s.labels.get("le", "")): s.value for s in family.samples}
        buckets = [samples[("h_bucket", le)] for le in ("1.0", "2.0", "3.0", "+Inf")]
        count, total = samples[("h_count", "")], samples[("h_sum", "")]
        assert buckets == sorted(buckets) and buckets[-1] == count == buckets[0]
        assert count >= last_count and count - 1 <= total <= count
        last_count = count
    writer.join()
    assert child.snapshot() == ([200_000, 0, 0, 0], 200_000.0)


async def test_loop_only_histogram_children_are_observed_on_the_loop_thread_only(
    make_env: Callable[..., CoreEnv], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock-free children and counters are safe only with one writer: schedule and bind pods with
    every plugin timed, and check that none was written from a binding thread."""
    writers: dict[int, set[int]] = {}
    observe = metrics._LoopChild.observe

    def recording(self: metrics._LoopChild, amount: float) -> None:
        writers.setdefault(id(self), set()).add(threading.get_ident())
        observe(self, amount)

    monkeypatch.setattr(metrics._LoopChild, "observe", recording)
    inc = metrics.LoopCounter.inc

    def recording_inc(self: metrics.LoopCounter) -> None:
        writers.setdefault(id(self), set()).add(threading.get_ident())
        inc(self)

    monkeypatch.setattr(metrics.LoopCounter, "inc", recording_inc)
    monkeypatch.setenv(SAMPLE_PERCENT_ENV, "100")
    env = make_env([make_node("n1"), make_node("n2")])
    for i in range(4):
        env.queue.add(make_pod(f"p{i}", cpu="100m"))
    for _ in range(4):
        await env.schedule_next()
    await env.wait_bindings(4)
    assert len(env.rest.bindings()) == 4
    assert id(metrics.BATCHING_MISSES) in writers and id(metrics._ALGORITHM) in writers
    assert {thread for threads in writers.values() for thread in threads} == {threading.get_ident()}


def test_a_profiles_extension_point_observer_feeds_the_same_series_as_observe_extension_point() -> None:
    labels = {"extension_point": metrics.PRE_SCORE, "status": "Success", "profile": "p-observer"}
    count = "scheduler_framework_extension_point_duration_seconds_count"
    observe = metrics.extension_point_observer("p-observer")
    observe(metrics.PRE_SCORE, "Success", 0.0002)
    observe(metrics.PRE_SCORE, "Success", 0.0003)
    metrics.observe_extension_point(metrics.PRE_SCORE, "Success", "p-observer", 0.0004)
    assert _value(count, labels) == 3
    assert _value(count, {**labels, "status": "Error"}) == 0
    seconds = _value("scheduler_framework_extension_point_duration_seconds_sum", labels)
    assert seconds == pytest.approx(0.0009)


async def test_a_pod_bound_after_the_leftover_flush_moved_it_is_counted(
    make_env: Callable[..., CoreEnv],
) -> None:
    """v1.37.2's scheduler_pod_scheduled_after_flush_total: a pod unschedulable until the 5-minute
    flush moved it (no event did: the node's room appeared without one) counts once bound; a pod an
    event moved, and one that failed again after the flush, do not."""
    name = "scheduler_pod_scheduled_after_flush_total"
    before = _value(name, {})
    env = make_env([make_node("n1", cpu="1")])
    env.queue.add(make_pod("big", cpu="2"))
    await env.schedule_next()  # unschedulable: 2 CPUs on a 1-CPU node
    env.queue.add(make_pod("small", cpu="100m"))
    await env.schedule_next()
    await env.wait_bindings(1)
    assert _value(name, {}) == before  # bound without a flush
    # The node grows with no event the queue sees (the cache alone is told), then the flush moves it.
    env.cache.add_node(make_node("n1", cpu="4"))
    env.clock.advance(301)
    env.queue.flush_unschedulable_leftover()
    env.clock.advance(11)  # its backoff
    env.queue.flush_backoff_completed()
    await env.schedule_next()
    await env.wait_bindings(2)
    assert env.rest.bindings()["big"] == "n1"
    assert _value(name, {}) == before + 1
