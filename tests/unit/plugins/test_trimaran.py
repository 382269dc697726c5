"""Trimaran: scheduler-plugins v0.34.7's table tests for TargetLoadPacking, LoadVariationRiskBalancing and
LowRiskOverCommitment (``targetloadpacking_test.go``, ``loadvariationriskbalancing_test.go``,
``analysis_test.go``, ``lowriskovercommitment_test.go``, ``beta_test.go``, ``resourcestats_test.go``,
``handler_test.go``: the cases, not the code), args defaults and refusals, the bound-pods cache, and the
fallbacks explain and the metrics show."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler import metrics
from scheduler.cycle.profiles import FrameworkHandle
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.listers import StaticLister
from scheduler.framework.load_metrics import (
    AVERAGE,
    CPU,
    LATEST,
    MEASURED_LOAD_KEY,
    MEMORY,
    STD,
    Metric,
    SourceStatus,
    TrimaranSpec,
    WatcherMetrics,
    Window,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.registry import IN_TREE_REGISTRY
from scheduler.plugins.trimaran import LoadVariationRiskBalancing, LowRiskOverCommitment, TargetLoadPacking
from scheduler.plugins.trimaran.args import (
    parse_go_float,
    parse_load_variation_risk_balancing,
    parse_low_risk_over_commitment,
    parse_target_load_packing,
)
from scheduler.plugins.trimaran.beta import BetaDistribution, match_moments, max_variance, probability_at_most
from scheduler.plugins.trimaran.loadvariationriskbalancing import risk_score
from scheduler.plugins.trimaran.pod_assign import ScheduledPodsCache
from scheduler.plugins.trimaran.resourcestats import (
    CpuMemory,
    NodeRequestsAndLimits,
    ResourceStats,
    effective_resource,
    mu_sigma,
    node_requests_and_limits,
    requests_and_limits,
    resource_stats,
)

WATCHER = {"watcherAddress": "http://load-watcher:2020"}
MEGA = 1024 * 1024


class StaticSource:
    def __init__(self, sample: WatcherMetrics) -> None:
        self.sample = sample

    def latest(self) -> WatcherMetrics:
        return self.sample

    def status(self) -> SourceStatus:
        return SourceStatus("static", 0.0, "")


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def handle_with(
    sample: WatcherMetrics, clock: Clock | None = None, pods: StaticLister | None = None
) -> FrameworkHandle:
    source = StaticSource(sample)
    lister = pods or StaticLister()
    return FrameworkHandle(
        "p",
        lambda: None,  # type: ignore[arg-type,return-value]
        None,
        clock or Clock(),
        listers=lambda spec: lister,
        load_metrics=lambda spec: source,
    )


def sample_of(nodes: Mapping[str, Sequence[tuple[str, str, float]]] | None, end: int = 0) -> WatcherMetrics:
    if nodes is None:
        return WatcherMetrics()
    return WatcherMetrics(
        end,
        Window("15m", end - 900, end),
        "test",
        {name: [Metric("", t, op, v) for t, op, v in ms] for name, ms in nodes.items()},
    )


def make_node(name: str, cpu: str = "1000m", memory: str = "1Gi") -> NodeInfo:
    """st.MakeNode().Capacity(...): capacity and allocatable alike."""
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    return NodeInfo({"metadata": {"name": name}, "status": {"capacity": resources, "allocatable": resources}})


def make_pod(
    name: str = "p",
    *,
    requests: Sequence[Mapping[str, str]] = (),
    limits: Sequence[Mapping[str, str]] = (),
    init: Mapping[str, Mapping[str, str]] | None = None,
    overhead: Mapping[str, str] | None = None,
    node_name: str = "",
    uid: str = "",
) -> dict[str, Any]:
    count = max(len(requests), len(limits))
    containers = []
    for i in range(count):
        resources: dict[str, Any] = {}
        if i < len(requests):
            resources["requests"] = dict(requests[i])
        if i < len(limits):
            resources["limits"] = dict(limits[i])
        containers.append({"name": f"c{i}", "resources": resources})
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = [{"name": "init", "resources": dict(init)}]
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "default", "uid": uid or name}, "spec": spec}


def score_of(plugin: Any, pod: Mapping[str, Any], node: NodeInfo) -> int:
    state = CycleState()
    info = PodInfo(pod)
    if hasattr(plugin, "pre_score"):
        assert plugin.pre_score(state, info, [node]) is None
    value, status = plugin.score(state, info, node)
    assert status is None
    return int(value)


# --- TargetLoadPacking ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "pod", "metrics_", "expected"),
    [
        ("new node", make_pod(), {"node-1": [(CPU, LATEST, 0.0)]}, 40),
        ("hot node", make_pod(), {"node-1": [(CPU, LATEST, 50.0)]}, 33),
        (
            "excess utilization returns min score",
            make_pod(requests=[{"cpu": "1000m"}], limits=[{"cpu": "1000m"}]),
            {"node-1": [(CPU, LATEST, 30.0)]},
            0,
        ),
        ("404 resp from watcher", make_pod(), None, 0),
    ],
)
def test_target_load_packing_upstream_cases(
    case: str, pod: dict[str, Any], metrics_: dict[str, Any] | None, expected: int
) -> None:
    plugin = TargetLoadPacking(WATCHER, handle_with(sample_of(metrics_)))
    assert score_of(plugin, pod, make_node("node-1")) == expected, case


def test_target_load_packing_prediction_and_target_curve() -> None:
    plugin = TargetLoadPacking({**WATCHER, "targetUtilization": 50}, handle_with(sample_of({})))
    # Limits win, then requests * 1.5 (Go's math.Round: halves away from zero), then 1000m.
    assert (
        plugin.predict_container({"resources": {"limits": {"cpu": "300m"}, "requests": {"cpu": "1"}}}) == 300
    )
    assert plugin.predict_container({"resources": {"requests": {"cpu": "101m"}}}) == 152
    assert plugin.predict_container({}) == 1000
    assert plugin.predict_pod(make_pod(limits=[{"cpu": "100m"}], overhead={"cpu": "50m"})) == 150
    node = make_node("n", cpu="4")
    sample = {"n": [(CPU, AVERAGE, 25.0)]}
    for pod_cpu, expected in (("0", 75), ("1", 100), ("2", 25), ("3", 0)):
        plugin = TargetLoadPacking({**WATCHER, "targetUtilization": 50}, handle_with(sample_of(sample)))
        assert score_of(plugin, make_pod(limits=[{"cpu": pod_cpu}]), node) == expected, pod_cpu


def test_target_load_packing_reads_capacity_not_allocatable() -> None:
    node = NodeInfo(
        {
            "metadata": {"name": "n"},
            "status": {"capacity": {"cpu": "2", "pods": "110"}, "allocatable": {"cpu": "1", "pods": "110"}},
        }
    )
    plugin = TargetLoadPacking(WATCHER, handle_with(sample_of({"n": [(CPU, LATEST, 10.0)]})))
    # 10 % of 2000m + 500m = 700m of 2000m = 35 % (under the target 40): 60 * 35 / 40 + 40 = 92.5 -> 93.
    assert score_of(plugin, make_pod(limits=[{"cpu": "500m"}]), node) == 93


def test_target_load_packing_counts_pods_bound_since_the_sample() -> None:
    clock = Clock(10_000.0)
    pods = StaticLister()
    handle = handle_with(sample_of({"n": [(CPU, LATEST, 0.0)]}, end=10_000), clock, pods)
    plugin = TargetLoadPacking(WATCHER, handle)
    source = handle.load_metrics(TrimaranSpec())
    assert isinstance(source, StaticSource)
    node = make_node("n", cpu="10")
    pod = make_pod(limits=[{"cpu": "1"}])
    assert score_of(plugin, pod, node) == 55  # 10 %: 60 * 10 / 40 + 40
    # A pod the watch shows on the node now counts until a sample at least 60 s younger arrives.
    pods.add(make_pod("bound", limits=[{"cpu": "2"}], node_name="n"))
    assert score_of(plugin, pod, node) == 85  # 30 %: 60 * 30 / 40 + 40
    source.sample = sample_of({"n": [(CPU, LATEST, 20.0)]}, end=10_059)
    assert score_of(plugin, pod, node) == 33  # 50 %, above the target: 40 * 50 / 60
    source.sample = sample_of({"n": [(CPU, LATEST, 20.0)]}, end=10_060)
    assert score_of(plugin, pod, node) == 85  # the sample has it now: 30 %
    # Deleted: gone from the cache; moved to another node: counted there.
    pods.delete("bound", "default")
    assert plugin.scheduled.pods_on("n") == []


def test_scheduled_pods_cache_cleanup_as_upstream_ticker() -> None:
    clock = Clock(0.0)
    cache = ScheduledPodsCache(clock)
    cache.on_add(make_pod("old", node_name="a"))
    clock.now = 100.0
    cache.on_add(make_pod("new", node_name="a"))
    cache.on_add(make_pod("other", node_name="b"))
    clock.now = 299.0
    assert [e.pod["metadata"]["name"] for e in cache.pods_on("a")] == ["old", "new"]
    # The sweep of the 300 s tick: entries older than 60 s go; a node whose entries are all older keeps
    # them (upstream's sort.Search finds no young one and leaves the list), until one is young.
    clock.now = 301.0
    cache.on_add(make_pod("young", node_name="a"))
    assert [e.pod["metadata"]["name"] for e in cache.pods_on("a")] == ["young"]
    assert [e.pod["metadata"]["name"] for e in cache.pods_on("b")] == ["other"]
    cache.on_update(make_pod("other", node_name="b"), make_pod("other", node_name="b"))
    assert len(cache.pods_on("b")) == 1
    cache.on_update(make_pod("other", node_name="b"), make_pod("other", node_name="c"))
    assert len(cache.pods_on("c")) == 1


def test_target_load_packing_falls_back_visibly() -> None:
    plugin = TargetLoadPacking(WATCHER, handle_with(sample_of({"n": [(MEMORY, AVERAGE, 10.0)]})))
    state = CycleState()
    notes: dict[str, Any] = {}
    state.write(MEASURED_LOAD_KEY, notes)
    before = metrics.LOAD_METRICS_FALLBACK.labels("TargetLoadPacking", "no_cpu_metric")._value.get()
    assert plugin.score(state, PodInfo(make_pod()), make_node("n")) == (0, None)
    assert plugin.score(state, PodInfo(make_pod()), make_node("missing")) == (0, None)
    after = metrics.LOAD_METRICS_FALLBACK.labels("TargetLoadPacking", "no_cpu_metric")._value.get()
    assert after == before + 1
    assert notes["n"].to_json()["fallback"] == "no_cpu_metric"
    assert notes["n"].to_json()["memory"] == {"avgPercent": 10.0, "stdPercent": 0.0}
    assert notes["missing"].to_json()["fallback"] == "no_node_metrics"


# --- LoadVariationRiskBalancing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "margin", "sensitivity", "stats", "expected"),
    [
        ("valid data", 1, 1, (100, 10, 40, 36), 57),
        ("zero capacity", 1, 2, (0, 10, 40, 36), 0),
        ("negative usedAvg", 1, 2, (100, 10, -40, 36), 65),
        ("large usedAvg", 1, 2, (100, 10, 200, 36), 20),
        ("negative usedStdev", 1, 2, (100, 10, 40, -36), 75),
        ("large usedStdev", 1, 2, (100, 10, 40, 120), 25),
        ("negative margin", -1, 1, (100, 10, 40, 36), 75),
        ("negative sensitivity", 1, -1, (100, 10, 40, 36), 57),
        ("zero sensitivity", 1, 0, (100, 10, 40, 36), 75),
    ],
)
def test_risk_score_upstream_cases(
    case: str, margin: float, sensitivity: float, stats: tuple[float, float, float, float], expected: int
) -> None:
    capacity, req, avg, std = stats
    got = risk_score(ResourceStats(avg, std, req, capacity), margin, sensitivity)
    assert math.floor(got + 0.5) == expected, case


def _lvrb_pod(cpu: int, memory: int) -> dict[str, Any]:
    """upstream's getPodWithContainersAndOverhead(0, 0, 0, [cpu], [memory]): requests = limits."""
    amounts = {"cpu": f"{cpu}m", "memory": str(memory)}
    return make_pod(
        requests=[amounts],
        limits=[amounts],
        init={"requests": {"cpu": "0", "memory": "0"}},
        overhead={"cpu": "0"},
    )


@pytest.mark.parametrize(
    ("case", "pod", "metrics_", "expected"),
    [
        ("new node", make_pod(), {"node-1": [(CPU, AVERAGE, 50.0)]}, 75),
        ("hot node", make_pod(), {"node-1": [(CPU, AVERAGE, 100.0)]}, 50),
        (
            "average and stDev metrics",
            _lvrb_pod(200, 256 * MEGA),
            {"node-1": [(CPU, AVERAGE, 30.0), (CPU, STD, 16.0)]},
            67,
        ),
        (
            "CPU and Memory metrics",
            _lvrb_pod(100, 512 * MEGA),
            {
                "node-1": [
                    (CPU, AVERAGE, 40.0),
                    (CPU, STD, 16.0),
                    (MEMORY, AVERAGE, 50.0),
                    (MEMORY, STD, 10.0),
                ]
            },
            45,
        ),
        (
            "pick worst case: CPU or Memory",
            _lvrb_pod(100, 512 * MEGA),
            {
                "node-1": [
                    (CPU, AVERAGE, 80.0),
                    (CPU, STD, 20.0),
                    (MEMORY, AVERAGE, 25.0),
                    (MEMORY, STD, 15.0),
                ]
            },
            45,
        ),
        ("404 resp from watcher", make_pod(), None, 0),
    ],
)
def test_load_variation_risk_balancing_upstream_cases(
    case: str, pod: dict[str, Any], metrics_: dict[str, Any] | None, expected: int
) -> None:
    plugin = LoadVariationRiskBalancing(WATCHER, handle_with(sample_of(metrics_)))
    assert score_of(plugin, pod, make_node("node-1")) == expected, case


def test_load_variation_risk_balancing_args_defaults() -> None:
    # Upstream's TestNew: bad values fall back to the defaults, they are not refused.
    args = parse_load_variation_risk_balancing({**WATCHER, "safeVarianceMargin": -5}, "LVRB")
    assert (args.safe_variance_margin, args.safe_variance_sensitivity) == (1.0, 1.0)
    args = parse_load_variation_risk_balancing({**WATCHER, "safeVarianceSensitivity": -1}, "LVRB")
    assert args.safe_variance_sensitivity == 1.0
    args = parse_load_variation_risk_balancing(
        {**WATCHER, "safeVarianceMargin": 2, "safeVarianceSensitivity": 0.5}, "L"
    )
    assert (args.safe_variance_margin, args.safe_variance_sensitivity) == (2.0, 0.5)


# --- LowRiskOverCommitment -----------------------------------------------------------------------------


def test_low_risk_over_commitment_upstream_score_case() -> None:
    plugin = LowRiskOverCommitment(
        {**WATCHER, "smoothingWindowSize": 5, "riskLimitWeights": {"cpu": 0.5, "memory": 0.5}},
        handle_with(sample_of({"node-1": [(CPU, AVERAGE, 20.0)]})),
    )
    # A best-effort pod is not scored: minimum score.
    assert score_of(plugin, make_pod(), make_node("node-1")) == 0


NODE_A = make_node("node-A", cpu="4000m", memory="4Ki")
METRICS_A = sample_of(
    {"node-A": [(CPU, AVERAGE, 80.0), (CPU, STD, 0.0), (MEMORY, AVERAGE, 25.0), (MEMORY, STD, 0.0)]}
)
NRLA_A1 = NodeRequestsAndLimits(
    CpuMemory(2000, 2048),
    CpuMemory(3000, 6144),
    CpuMemory(1000, 0),
    CpuMemory(2000, 0),
    CpuMemory(4000, 4096),
)
NRLA_A2 = NodeRequestsAndLimits(
    CpuMemory(4000, 1024),
    CpuMemory(5000, 7168),
    CpuMemory(3000, 512),
    CpuMemory(4000, 6144),
    CpuMemory(4000, 4096),
)


@pytest.mark.parametrize(
    ("case", "resource", "metric_type", "on_node", "want"),
    [
        ("test-cpu-1", "cpu", CPU, NRLA_A1, 0.5),
        ("test-mem-1", "memory", MEMORY, NRLA_A1, 0.25),
        ("test-cpu-2", "cpu", CPU, NRLA_A2, 1.0),
        ("test-mem-2", "memory", MEMORY, NRLA_A2, 0.75),
    ],
)
def test_low_risk_over_commitment_compute_risk_upstream_cases(
    case: str, resource: str, metric_type: str, on_node: NodeRequestsAndLimits, want: float
) -> None:
    plugin = LowRiskOverCommitment({**WATCHER, "smoothingWindowSize": 5}, handle_with(METRICS_A))
    node_metrics = METRICS_A.nodes["node-A"]  # type: ignore[index]
    assert plugin.risk(node_metrics, NODE_A, resource, metric_type, on_node) == want, case


def test_low_risk_over_commitment_beta_fit_on_a_loaded_node() -> None:
    """A node whose measured load varies: the beta fit decides (numbers cross-checked by hand with the
    regularized incomplete beta function)."""
    sample = sample_of(
        {"n": [(CPU, AVERAGE, 30.0), (CPU, STD, 5.0), (MEMORY, AVERAGE, 20.0), (MEMORY, STD, 2.0)]}
    )
    plugin = LowRiskOverCommitment(WATCHER, handle_with(sample))
    running = make_pod(
        "running", requests=[{"cpu": "1", "memory": "1Gi"}], limits=[{"cpu": "2", "memory": "2Gi"}]
    )
    node = make_node("n", cpu="4", memory="8Gi")
    node.add_pod(PodInfo({**running, "spec": {**running["spec"], "nodeName": "n"}}))
    pod = make_pod(requests=[{"cpu": "500m", "memory": "512Mi"}], limits=[{"cpu": "1", "memory": "1Gi"}])
    # cpu: mu .3, sigma .05*sqrt(5); P(load <= 1/4) / P(load <= 2/4) -> risk .5 * (1 - P); no limit risk.
    mu, sigma = 0.3, 0.05 * math.sqrt(5)
    fitted = match_moments(mu, sigma * sigma + mu * mu)
    assert fitted is not None
    p_cpu = min(fitted.cdf(0.25) / fitted.cdf(0.5), 1.0)
    mu_m, sigma_m = 0.2, 0.02 * math.sqrt(5)
    fitted_m = match_moments(mu_m, sigma_m * sigma_m + mu_m * mu_m)
    assert fitted_m is not None
    p_mem = min(fitted_m.cdf(1 / 8) / fitted_m.cdf(2 / 8), 1.0)
    expected = round((1 - max(0.5 * (1 - p_cpu), 0.5 * (1 - p_mem))) * 100)
    assert score_of(plugin, pod, node) == expected
    assert 0 < expected < 100


def test_low_risk_over_commitment_args_defaults() -> None:
    args = parse_low_risk_over_commitment(
        {**WATCHER, "smoothingWindowSize": 0, "riskLimitWeights": {"cpu": 2}}, "L"
    )
    assert args.smoothing_window_size == 5
    assert args.risk_limit_weight("cpu") == 0.5
    assert args.risk_limit_weight("memory") == 0.5
    args = parse_low_risk_over_commitment({**WATCHER, "riskLimitWeights": {"memory": 0.8}}, "L")
    assert args.risk_limit_weight("memory") == 0.8


# --- beta distribution (beta_test.go) ------------------------------------------------------------------


def test_beta_match_moments_and_cdf_upstream_cases() -> None:
    fitted = match_moments(0.5, 1.0 / 3.0)
    assert fitted is not None
    assert (round(fitted.alpha, 12), round(fitted.beta, 12)) == (1.0, 1.0)
    assert match_moments(0, 0) is None
    two = BetaDistribution(2, 2)
    assert two.cdf(0.5) == pytest.approx(0.5, abs=1e-12)
    assert two.cdf(0.0) == 0.0
    assert two.cdf(1.0) == 1.0
    assert BetaDistribution(-1, 1).cdf(0.5) == 0
    # A closed form: I_x(2, 2) = 3x^2 - 2x^3; and I_x(a, 1) = x^a.
    for x in (0.1, 0.3, 0.77, 0.95):
        assert two.cdf(x) == pytest.approx(3 * x * x - 2 * x**3, rel=1e-13)
        assert BetaDistribution(3.5, 1).cdf(x) == pytest.approx(x**3.5, rel=1e-13)
    assert max_variance(0.5) == 0.25
    assert max_variance(0) == 0 == max_variance(1)
    assert probability_at_most(0, 0.1, 0.2) == (1.0, None)
    assert probability_at_most(0.3, 0, 0.2) == (0.0, None)
    assert probability_at_most(0.3, 0, 0.4) == (1.0, None)


# --- resource statistics (resourcestats_test.go) -------------------------------------------------------

STATS_METRICS = [
    Metric("no_name", CPU, "", 40),
    Metric("cpu_running_avg", CPU, AVERAGE, 40),
    Metric("cpu_running_std", CPU, STD, 36),
    Metric("mem_running_avg", MEMORY, AVERAGE, 20),
    Metric("mem_running_std", MEMORY, STD, 10),
]


def test_resource_stats_upstream_cases() -> None:
    node = make_node("node0")
    request = CpuMemory(100, MEGA)
    assert resource_stats(STATS_METRICS, node, request, "cpu", CPU) == ResourceStats(400, 360, 100, 1000)
    assert resource_stats(STATS_METRICS[3:], node, request, "cpu", CPU) is None
    assert resource_stats(STATS_METRICS, node, request, "memory", MEMORY) == ResourceStats(
        204.8, 102.4, 1, 1024
    )
    assert mu_sigma(ResourceStats(400, 360, 100, 1000)) == (0.5, 0.36)
    assert mu_sigma(ResourceStats(2000, 360, 100, 1000)) == (1.0, 0.36)
    assert mu_sigma(ResourceStats(400, 360, 100, 0)) == (0.0, 0.0)


def _requests_pod(
    overhead: int, init_cpu: int, init_memory: int, cpus: list[int], memories: list[int]
) -> dict[str, Any]:
    return make_pod(
        requests=[{"cpu": f"{c}m", "memory": str(m)} for c, m in zip(cpus, memories, strict=True)],
        init={"requests": {"cpu": f"{init_cpu}m", "memory": str(init_memory)}},
        overhead={"cpu": f"{overhead}m"},
    )


def test_effective_requests_and_limits_upstream_cases() -> None:
    assert effective_resource(
        _requests_pod(10, 100, 512, [1000, 500], [2048, 1024]), "requests"
    ) == CpuMemory(1510, 3072)
    assert effective_resource(
        _requests_pod(10, 2000, 4096, [1000, 500], [2048, 1024]), "requests"
    ) == CpuMemory(2010, 4096)
    pod = _requests_pod(0, 0, 0, [0, 0, 1000], [0, 200 * MEGA, 400 * MEGA])
    assert effective_resource(pod, "requests") == CpuMemory(1000, 600 * MEGA)
    limited = make_pod(
        requests=[{"cpu": "1000m", "memory": "2048"}, {"cpu": "500m", "memory": "1024"}],
        limits=[{"cpu": "1000m", "memory": "4096"}, {"cpu": "2500m", "memory": "2048"}],
        init={"requests": {"cpu": "100m", "memory": "512"}, "limits": {"cpu": "2000m", "memory": "4096"}},
        overhead={"cpu": "10m"},
    )
    assert effective_resource(limited, "limits") == CpuMemory(3510, 6144)
    requests, limits = requests_and_limits(
        make_pod(requests=[{"cpu": "2", "memory": "1Gi"}], limits=[{"cpu": "1"}])
    )
    assert (limits.milli_cpu, limits.memory) == (2000, 1024 * MEGA)
    on_node = node_requests_and_limits(
        [(CpuMemory(3000, 0), CpuMemory(5000, 0))], make_node("n", cpu="4"), requests, limits
    )
    assert on_node.request == CpuMemory(4000, 1024 * MEGA)  # 5000 capped by allocatable
    assert on_node.limit == CpuMemory(7000, 1024 * MEGA)
    assert on_node.request_minus_pod == CpuMemory(3000, 0)
    assert on_node.limit_minus_pod == CpuMemory(5000, 0)


# --- args: defaults and refusals ---------------------------------------------------------------------


def test_target_load_packing_args_defaults_and_refusals() -> None:
    args = parse_target_load_packing(
        {"metricProvider": {"type": "Prometheus", "address": "http://p:9090"}}, "T"
    )
    assert (args.default_requests_milli_cpu, args.default_requests_multiplier, args.target_utilization) == (
        1000,
        1.5,
        40,
    )
    assert args.spec.metric_provider.insecure_skip_verify is True
    args = parse_target_load_packing(
        {**WATCHER, "targetUtilization": -3, "defaultRequests": {"memory": "1Gi"}}, "T"
    )
    assert (args.target_utilization, args.default_requests_milli_cpu) == (40, 0)
    with pytest.raises(
        PluginArgsError, match="TargetLoadPacking: defaultRequestsMultiplier: unable to parse"
    ):
        parse_target_load_packing({**WATCHER, "defaultRequestsMultiplier": "x1.5"}, "TargetLoadPacking")
    with pytest.raises(
        PluginArgsError, match=r"metricProvider.type: invalid MetricProvider.Type, got Graphite"
    ):
        parse_target_load_packing({"metricProvider": {"type": "Graphite"}}, "T")
    # The default provider (metrics-server) and SignalFx are refused, naming the field.
    for given in ({}, {"metricProvider": {"type": "SignalFx"}}):
        with pytest.raises(PluginArgsError, match=r"metricProvider.type: Unsupported value"):
            parse_target_load_packing(given, "T")
    with pytest.raises(PluginArgsError, match="unknown field"):
        parse_target_load_packing({**WATCHER, "targetUtilisation": 50}, "T")
    with pytest.raises(PluginArgsError, match=r"defaultRequests\.cpu"):
        parse_target_load_packing({**WATCHER, "defaultRequests": {"cpu": "lots"}}, "T")


def test_go_float_parsing() -> None:
    assert parse_go_float("1.5") == 1.5
    assert parse_go_float("2e1") == 20
    assert parse_go_float("0x1p-2") == 0.25
    for bad in (" 1.5", "1_5", "abc", ""):
        with pytest.raises(ValueError, match="invalid syntax"):
            parse_go_float(bad)


def test_registered_under_upstream_names() -> None:
    for name, cls in (
        ("TargetLoadPacking", TargetLoadPacking),
        ("LoadVariationRiskBalancing", LoadVariationRiskBalancing),
        ("LowRiskOverCommitment", LowRiskOverCommitment),
    ):
        assert IN_TREE_REGISTRY[name] is cls
        assert cls(WATCHER, None).name == name
