"""From a run's raw timings and the final cluster state to the figures the report shows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.loadgen import RunRecord
from bench.workloads import Workload
from scheduler.framework.quantity import milli_value, value

STEADY_FROM = 0.10
STEADY_TO = 0.90


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) of unsorted values; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class Placement:
    """Is the end state right: nothing overcommitted, the expected pods bound, the rest pending."""

    overcommitted_nodes: list[str] = field(default_factory=list)
    missing_bound: list[str] = field(default_factory=list)  # expected bound, still pending
    unexpected_bound: list[str] = field(default_factory=list)  # expected unschedulable, bound
    pending: list[str] = field(default_factory=list)  # every pod still pending at the end
    ok: bool = True
    # Workload-specific rules broken (a device allocated twice, a pod on a node its extender rejects...).
    violations: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    workload: str
    scheduler: str
    pods: int
    nodes: int
    bound: int
    duration_s: float
    throughput: float
    steady_throughput: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    cpu_s: float
    peak_rss_mib: float
    apiserver_cpu_s: float
    etcd_cpu_s: float
    create_s: float
    create_errors: int
    deleted: int
    timed_out: bool
    placement: Placement
    plugins: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # (seconds since the first create, pods created, pods bound), every half second.
    timeline: list[tuple[float, int, int]] = field(default_factory=list)
    # py-scheduler's py_scheduler_batching_{hits,misses} grown during the measured run (its /metrics
    # scraped before and after); None when not scraped (other schedulers) or not exported.
    batching_hits: float | None = None
    batching_misses: float | None = None
    # The huge workload's memory and startup probes (bench.scale.ScaleProbe.as_dict); empty otherwise.
    scale: dict[str, float] = field(default_factory=dict)
    # Latency percentiles 0, 1, ..., 100 in ms (latency_cdf): the distribution the report draws.
    latency_cdf_ms: list[float] = field(default_factory=list)
    # /proc/loadavg (1, 5, 15 min) right before the contestant started and right after the run, and the
    # machine's cores: bench.load refuses to call a result on a loaded machine. Empty: not recorded.
    load_before: list[float] = field(default_factory=list)
    load_after: list[float] = field(default_factory=list)
    cores: int = 0
    # Over the measured run (bench.foreign_cpu): every core's busy CPU seconds, the bench's own process
    # tree's CPU seconds and the wall seconds between the two readings. What the machine spent beyond the
    # bench is its other users' load, which bench.load weighs for the verdict. None: not recorded (raw
    # results from before it was measured, or no /proc/stat).
    machine_cpu_s: float | None = None
    own_cpu_s: float | None = None
    window_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        fields = dict(data)
        fields["placement"] = Placement(**fields["placement"])
        fields["timeline"] = [tuple(point) for point in fields.get("timeline") or ()]
        return cls(**fields)


def throughput(record: RunRecord, counted: frozenset[str] | None = None) -> tuple[float, float, float]:
    """(overall pods/s, steady pods/s, duration): first create sent to last bind seen; the steady
    rate counts the binds between the 10th and the 90th percentile of bind times. Only pods in
    ``counted`` count, if given: churn deletes some pods before or after their bind, at random."""
    times = sorted(t for name, t in record.bound.items() if counted is None or name in counted)
    if not times:
        return 0.0, 0.0, 0.0
    duration = times[-1] - record.create_start
    overall = len(times) / duration if duration > 0 else 0.0
    lo = int(len(times) * STEADY_FROM)
    hi = max(lo, int(len(times) * STEADY_TO) - 1)
    span = times[hi] - times[lo]
    steady = (hi - lo) / span if span > 0 else overall
    return overall, steady, duration


def timeline(record: RunRecord, step: float = 0.5) -> list[tuple[float, int, int]]:
    """Cumulative created and bound counts over time, for plots and for spotting a backlog."""
    created = sorted(record.created.values())
    bound = sorted(record.bound.values())
    if not bound:
        return []
    end = max(bound[-1], created[-1] if created else 0.0)
    out: list[tuple[float, int, int]] = []
    t = record.create_start
    c = b = 0
    while t <= end + step:
        while c < len(created) and created[c] <= t:
            c += 1
        while b < len(bound) and bound[b] <= t:
            b += 1
        out.append((round(t - record.create_start, 2), c, b))
        t += step
    return out


def latency_cdf(latencies: Sequence[float]) -> list[float]:
    """Nearest-rank percentiles 0 (the minimum), 1, ..., 100 of ``latencies``; empty without any."""
    if not latencies:
        return []
    ordered = sorted(latencies)
    return [ordered[0], *(ordered[min(len(ordered), max(1, math.ceil(q / 100 * len(ordered)))) - 1]
                          for q in range(1, 101))]  # fmt: skip


def latencies_ms(record: RunRecord) -> list[float]:
    """Creation (201 received) to bound (watch event received), per pod; clamped at 0 because the
    watch can deliver a bind before the create's own response is processed."""
    out = []
    for name, bound_at in record.bound.items():
        created = record.created.get(name)
        if created is not None:
            out.append(max(0.0, bound_at - created) * 1000)
    return out


def _requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    cpu = memory = 0
    for container in (pod.get("spec") or {}).get("containers") or ():
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += milli_value(requests.get("cpu", "0"))
        memory += value(requests.get("memory", "0"))
    return cpu, memory


def check_placement(
    workload: Workload, pods: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]]
) -> Placement:
    """Every node within allocatable (cpu, memory, pod count), counting every pod bound to it."""
    result = Placement()
    allocatable: dict[str, tuple[int, int, int]] = {}
    for node in nodes:
        alloc = (node.get("status") or {}).get("allocatable") or {}
        allocatable[node["metadata"]["name"]] = (
            milli_value(alloc.get("cpu", "0")),
            value(alloc.get("memory", "0")),
            value(alloc.get("pods", "0")),
        )
    used: dict[str, list[int]] = {}
    bound: set[str] = set()
    for pod in pods:
        name = pod["metadata"]["name"]
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            result.pending.append(name)
            continue
        bound.add(name)
        cpu, memory = _requests(pod)
        entry = used.setdefault(node_name, [0, 0, 0])
        entry[0] += cpu
        entry[1] += memory
        entry[2] += 1
    for node_name, (cpu, memory, count) in used.items():
        cap = allocatable.get(node_name)
        if cap is None or cpu > cap[0] or memory > cap[1] or count > cap[2]:
            result.overcommitted_nodes.append(node_name)
    present = {p["metadata"]["name"] for p in pods}
    result.missing_bound = sorted(n for n in workload.expect_bound() if n in present and n not in bound)
    result.unexpected_bound = sorted(n for n in workload.expect_unschedulable if n in bound)
    result.pending.sort()
    result.ok = not (result.overcommitted_nodes or result.missing_bound or result.unexpected_bound)
    return result
