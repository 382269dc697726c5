"""``make bench``: the same workloads against kube-scheduler and py-scheduler on one local control plane.

For every workload, each scheduler gets a fresh control plane (etcd + kube-apiserver; priority and
fairness off and high inflight limits, the same for both), the workload's nodes, a warm-up pod to be
sure it is scheduling, then the pods, created as fast as the apiserver accepts them by this process
while the scheduler runs. A watch records when each pod is bound. See ``bench/workloads.py`` for the
workloads and ``bench/results/latest.md`` for the last results.

    python -m bench.side_by_side [--workloads basic,mixed,volumes,dra,extender,huge,...]
                                 [--schedulers kube,py,ceiling] [--quick] [--profile pyinstrument|py-spy]
                                 [--out FILE] [--note TEXT]

The ceiling (bench/trivial_binder.py) runs on basic and large next to the two schedulers, in the same
session and on the same workload, so ``ceiling fraction`` compares like with like. ``huge`` (15,000
nodes, 30,000 pods) also measures memory per node and per pod and the startup sync time
(bench/scale.py); it runs in full mode when the machine has the memory, and in --quick only if named.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

from bench import analysis, load, plots, prereqs, report, scale, schedulers, scrape, summary, workloads
from bench import apiserver_profile as apiserver_profile_
from bench.apiclient import BenchClient
from bench.claim_watch import ClaimWatch
from bench.foreign_cpu import cpu_window, read_cpu
from bench.loadgen import DEFAULT_CONCURRENCY, BindingWatch, RunRecord, create_pods, create_pods_steadily
from bench.procstat import sample
from devcluster import peers
from devcluster.binaries import k8s_version
from devcluster.cluster import ControlPlane
from devcluster.nodes import create_nodes

log = logging.getLogger("bench")

RESULTS = Path(__file__).resolve().parent / "results"
NAMESPACE = workloads.MEASURED_NAMESPACE
WARMUP_NAMESPACE = "bench-warmup"
MAX_INFLIGHT = 4000
MAX_MUTATING_INFLIGHT = 2000
# Memory for 5,000 nodes + 10,000 pods in the apiserver, etcd and a scheduler, with room to spare.
LARGE_MIN_FREE_GIB = 6.0
# huge: 15,000 nodes + 30,000 pods (+ 30,000 Events) in the apiserver and etcd, a scheduler and the load
# generator's lists. Peaks in one run (bench/results/latest.md, huge): apiserver 1.8 GiB, etcd 0.2, a
# scheduler 0.7; this process 0.3 while creating pods, more while it lists them at the end: about 4 GiB,
# doubled for the machine's other users.
HUGE_MIN_FREE_GIB = 8.0
MIN_FREE_GIB = {workloads.LARGE: LARGE_MIN_FREE_GIB, workloads.HUGE: HUGE_MIN_FREE_GIB}
SCHEDULER_KEYS = {
    "kube": schedulers.KUBE,
    "py": schedulers.PY,
    "ceiling": schedulers.CEILING,
    "limit": schedulers.HONEST,
}
# Workloads whose pods a round-robin binder places correctly (identical pods, roomy identical nodes):
# the trivial binder and the honest limit run on these, giving each its own two limits.
CEILING_WORKLOADS = (workloads.BASIC, workloads.LARGE)
# Run once per contestant: measured windows of half a minute or more (huge's of minutes), whose ratios
# hold from run to run. Every other workload runs ``--repeat`` times per contestant, alternating, and
# its medians are reported: a window of a few seconds swings by 20-30% between single runs, so one run
# of each would call a verdict on the machine's noise.
ONE_RUN_WORKLOADS = (workloads.LARGE, workloads.HUGE, workloads.EXTENDER)


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _free_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return 0.0


def _contestant(
    kind: str,
    cp: ControlPlane,
    workdir: Path,
    profiler: str | None,
    profile_out: Path | None,
    extenders: list[dict[str, object]] | None = None,
    profile: dict[str, object] | None = None,
) -> schedulers.Contestant:
    if kind == schedulers.KUBE:
        return schedulers.KubeScheduler(cp, extenders=extenders)
    if kind in (schedulers.SCHED_PLUGINS, schedulers.SCHED_PLUGINS_NOMINATING):
        assert profile is not None, "the scheduler-plugins peer runs a workload's own profile"
        return schedulers.SchedulerPluginsScheduler(
            cp, profile, v137_nomination=kind == schedulers.SCHED_PLUGINS_NOMINATING
        )
    if kind == schedulers.PY:
        return schedulers.PyScheduler(
            cp,
            workdir,
            profiler if profiler == "pyinstrument" else None,
            profile_out,
            extenders=extenders,
            profile=profile,
        )
    return schedulers.TrivialBinder(cp, workdir, honest=kind == schedulers.HONEST)


def _timeout(workload: workloads.Workload, base: float) -> float:
    return base if base > 0 else 120.0 + len(workload.pods) / 10


async def _warm_up(client: BenchClient, scheduler_name: str, timeout: float = 120.0) -> None:
    """One pod through the scheduler: proof that its caches are synced and it is scheduling."""
    await client.create_namespace(WARMUP_NAMESPACE)
    body = workloads.pod("warmup", "10m", "16Mi")
    body["spec"]["schedulerName"] = scheduler_name
    await client.request("POST", f"/api/v1/namespaces/{WARMUP_NAMESPACE}/pods", orjson.dumps(body))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = await client.request("GET", f"/api/v1/namespaces/{WARMUP_NAMESPACE}/pods/warmup")
        if (pod.get("spec") or {}).get("nodeName"):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{scheduler_name} did not bind the warm-up pod in {timeout:.0f}s")


async def _recreate(
    client: BenchClient, objects: Sequence[workloads.ApiObject], scheduler_name: str, interval: float
) -> int:
    """scheduler_perf's churn op, recreate mode: every ``interval`` seconds delete the previous copies of
    ``objects`` and create new ones (names suffixed with the round), until cancelled; returns the
    rounds. Failures are logged, not raised: the churn is background noise, not the measurement."""
    await client.create_namespace(workloads.CHURN_NAMESPACE)
    delete_body = orjson.dumps({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    live: list[str] = []
    rounds = 0

    async def delete(path: str) -> None:
        try:
            await client.request("DELETE", path, delete_body, ok=(200, 202, 404))
        except Exception as err:
            log.warning("churn: deleting %s failed: %s", path, err)

    async def create(obj: workloads.ApiObject, suffix: str) -> None:
        body = orjson.loads(orjson.dumps(obj.body))
        body["metadata"]["name"] = f"{body['metadata']['name']}-{suffix}"
        if body.get("kind") == "Pod":
            body["spec"]["schedulerName"] = scheduler_name
        try:
            await client.request("POST", obj.path, orjson.dumps(body), ok=(201,))
            live.append(f"{obj.path}/{body['metadata']['name']}")
        except Exception as err:
            log.warning("churn: creating %s failed: %s", body["metadata"]["name"], err)

    try:
        while True:
            previous, live[:] = list(live), []
            await asyncio.gather(*(delete(path) for path in previous))
            await asyncio.gather(*(create(obj, str(rounds)) for obj in objects))
            rounds += 1
            await asyncio.sleep(interval)
    except asyncio.CancelledError:
        await asyncio.gather(*(delete(path) for path in live))
        return rounds


async def _place_init_pods(
    client: BenchClient, workload: workloads.Workload, scheduler_name: str, timeout: float, concurrency: int
) -> None:
    """Upstream's initPods: created and bound by the same scheduler before the clock starts."""
    await client.create_namespace(workloads.INIT_NAMESPACE)
    record = RunRecord()
    watch = BindingWatch(client, workloads.INIT_NAMESPACE, record)
    await watch.start()
    bodies = workload.bodies(scheduler_name, init=True)
    await create_pods(client, workloads.INIT_NAMESPACE, bodies, record, concurrency=concurrency)
    names = frozenset(name for name, _ in bodies)
    done = await watch.wait_for(names, timeout)
    await watch.stop()
    if not done:
        raise TimeoutError(f"{scheduler_name}: {len(names) - len(record.bound)} init pods still pending")
    log.info("%d init pods bound", len(names))


async def _measure(
    cp: ControlPlane,
    contestant: schedulers.Contestant,
    workload: workloads.Workload,
    *,
    timeout: float,
    concurrency: int,
    on_started: Callable[[], None],
    extra_pids: dict[str, int] | None = None,
    metrics: Callable[[], scrape.Samples] | None = None,
    settle_pod_groups: bool = False,
    apiserver_profile: Path | None = None,
) -> tuple[RunRecord, dict[str, float], list[dict[str, object]], list[dict[str, object]], list[str]]:
    """The measured run: (record, usage, the pods and nodes at the end, problems the claim watch saw)."""
    async with BenchClient(cp.server, cp.token, cp.ca_file, connections=concurrency + 8) as client:
        await client.create_namespace(NAMESPACE)
        await _warm_up(client, contestant.scheduler_name)
        if settle_pod_groups and (left := await prereqs.wait_pod_groups_settled(client, NAMESPACE)):
            log.warning("%d PodGroups still without a phase when the clock starts", left)
        for class_name, value in workload.priority_classes.items():
            body: dict[str, object] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
            body |= {"metadata": {"name": class_name}, "value": value}
            await client.request(
                "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", orjson.dumps(body), ok=(201, 409)
            )
        if workload.init_pods:
            await _place_init_pods(client, workload, contestant.scheduler_name, timeout, concurrency)
        bodies = workload.bodies(contestant.scheduler_name)
        record = RunRecord()
        watch = BindingWatch(client, NAMESPACE, record)
        await watch.start()
        claims = ClaimWatch(client) if workload.watch_claims else None
        if claims is not None:
            await claims.start()
        pids = {"scheduler": contestant.pid, **cp.pids(), **(extra_pids or {})}
        before = {name: sample(pid) for name, pid in pids.items()}
        # The machine's busy CPU and the bench's own over the same window: other users' load (bench.load).
        machine_before = read_cpu()
        # Counters over the measured run only: the warm-up and init pods are not in the difference.
        metrics_before = await asyncio.to_thread(metrics) if metrics is not None else {}
        writes_before = scrape.api_writes(await client.text("/metrics"))
        profiling = None
        if apiserver_profile is not None:
            stem = f"{workload.name}-{contestant.scheduler_name}-{time.strftime('%H%M%S')}"
            profiling = apiserver_profile_.ApiserverProfile(client, apiserver_profile, stem)
            await profiling.start()
        on_started()
        churning = (
            asyncio.create_task(
                _recreate(
                    client, workload.background, contestant.scheduler_name, workload.background_interval_s
                )
            )
            if workload.background
            else None
        )
        if workload.steady_in_flight:
            creating = asyncio.create_task(
                create_pods_steadily(
                    client, NAMESPACE, bodies, record, watch, in_flight=workload.steady_in_flight
                )
            )
        else:
            creating = asyncio.create_task(
                create_pods(client, NAMESPACE, bodies, record, churn=workload.churn, concurrency=concurrency)
            )
        settle = 3.0 if workload.expect_unschedulable else 0.0
        done = await watch.wait_for(workload.expect_bound(), timeout, settle=settle)
        if not done and workload.steady_in_flight:
            creating.cancel()  # it waits for binds that did not come
        with contextlib.suppress(asyncio.CancelledError):
            await creating
        record.timed_out = not done
        record.end = time.monotonic()
        churn_rounds = None
        if churning is not None:
            churning.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                churn_rounds = await churning  # _recreate returns its rounds once cancelled
        after = {name: sample(pid) for name, pid in pids.items()}
        machine = cpu_window(machine_before, read_cpu())
        metrics_after = await asyncio.to_thread(metrics) if metrics is not None else {}
        writes = scrape.grown(writes_before, scrape.api_writes(await client.text("/metrics")))
        if profiling is not None:
            await profiling.stop()
        await watch.stop()
        problems: list[str] = []
        if claims is not None:
            problems = await claims.problems(record.node_of)
            await claims.stop()
        usage = {
            "cpu_s": after["scheduler"].cpu_seconds - before["scheduler"].cpu_seconds,
            "peak_rss_mib": after["scheduler"].peak_rss_mib,
            "apiserver_cpu_s": after["kube-apiserver"].cpu_seconds - before["kube-apiserver"].cpu_seconds,
            "etcd_cpu_s": after["etcd"].cpu_seconds - before["etcd"].cpu_seconds,
            "rss_mib": after["scheduler"].rss_mib,
            "apiserver_peak_rss_mib": after["kube-apiserver"].peak_rss_mib,
            "etcd_peak_rss_mib": after["etcd"].peak_rss_mib,
        }
        if churn_rounds is not None:
            usage["churn_rounds"] = float(churn_rounds)
        if machine is not None:
            usage |= {"machine_cpu_s": machine.machine_cpu_s, "own_cpu_s": machine.own_cpu_s,
                      "window_s": machine.wall_s}  # fmt: skip
        batching = {
            "batching_hits": scrape.BATCHING_HITS,
            "batching_misses": scrape.BATCHING_MISSES,
            "connections_opened": scrape.CONNECTIONS_OPENED,
        }
        for key, name in batching.items():
            if (grown := scrape.delta(metrics_before, metrics_after, name)) is not None:
                usage[key] = grown
        for key, count in writes.items():
            usage[f"writes/{key}"] = count
        for name in extra_pids or {}:
            usage[f"{name}_cpu_s"] = after[name].cpu_seconds - before[name].cpu_seconds
        pods = (await client.list(f"/api/v1/namespaces/{NAMESPACE}/pods"))["items"]
        nodes = (await client.list("/api/v1/nodes"))["items"]
        events = (await client.list(f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events"))["items"]
        for event in events:
            reason = str(event.get("reason") or "")
            usage[f"events/{reason}"] = usage.get(f"events/{reason}", 0) + 1
            series = (event.get("series") or {}).get("count")
            usage[f"occurrences/{reason}"] = usage.get(f"occurrences/{reason}", 0) + (series or 1)
        return record, usage, pods, nodes, problems


def run_one(
    workload: workloads.Workload,
    kind: str,
    *,
    timeout: float,
    concurrency: int,
    profiler: str | None,
    profile_dir: Path,
    keep_logs: Path | None = None,
    peer_controller: bool = True,
    apiserver_profile: Path | None = None,
) -> analysis.RunResult:
    log.info("== %s / %s: starting a fresh control plane", workload.name, kind)
    load_before = load.read_loadavg()
    with (
        tempfile.TemporaryDirectory(prefix=f"bench-{workload.name}-{kind}-") as tmp,
        ControlPlane(
            priority_and_fairness=False,
            max_requests_inflight=MAX_INFLIGHT,
            max_mutating_requests_inflight=MAX_MUTATING_INFLIGHT,
            apiserver_args=apiserver_profile_.PROFILING_ARGS if apiserver_profile is not None else (),
        ) as cp,
    ):
        workdir = Path(tmp)
        probe = None
        if workload.name == workloads.HUGE:
            probe = scale.ScaleProbe(nodes=len(workload.nodes), pods=len(workload.pods))
            empty = _contestant(kind, cp, workdir, None, None)
            probe.sync_empty_s, probe.rss_empty_mib = scale.startup_probe(empty)
            log.info("%s on an empty cluster: ready in %.1fs, RSS %.0f MiB", kind, probe.sync_empty_s,
                     probe.rss_empty_mib)  # fmt: skip
        started = time.monotonic()
        create_nodes(cp.api_client(), workload.nodes, concurrency=32)
        log.info("%d nodes in %.1fs", len(workload.nodes), time.monotonic() - started)
        prereqs.install_crds(cp, workload)
        prereqs.create_objects(cp, workload)
        if workload.controllers:
            cp.start_controller_manager(controllers=workload.controllers)
        controller = None
        if (
            peer_controller
            and workload.peer_controller
            and kind in (schedulers.SCHED_PLUGINS, schedulers.SCHED_PLUGINS_NOMINATING)
        ):
            controller = prereqs.PeerControllerProcess(
                peers.scheduler_plugins().controller, cp.kubeconfig, workdir / "controller.log",
                qps=schedulers.CLIENT_QPS, burst=schedulers.CLIENT_BURST,
            )  # fmt: skip
            controller.start()
        extender = None
        if workload.extender is not None:
            extender = prereqs.ExtenderProcess(workload.extender, workdir / "extender.log")
            extender.start()
        profile_out = profile_dir / f"{workload.name}-{kind}.pyinstrument.txt"
        contestant = _contestant(
            kind,
            cp,
            workdir,
            profiler,
            profile_out,
            extender.config() if extender is not None else None,
            workload.profile,
        )
        try:
            sync_s = scale.timed_start(contestant)
        except BaseException:
            if extender is not None:
                extender.stop()
            if controller is not None:
                controller.stop()
            raise
        spy_out = profile_dir / f"{workload.name}-{kind}.py-spy.txt"

        def on_started() -> None:
            if profiler == "py-spy" and isinstance(contestant, schedulers.PyScheduler):
                contestant.start_py_spy(spy_out)

        if probe is not None:
            probe.sync_nodes_s = sync_s
            probe.rss_nodes_mib = scale.rss_now(contestant.pid)
            log.info("%s with %d nodes: ready in %.1fs, RSS %.0f MiB", kind, probe.nodes, sync_s,
                     probe.rss_nodes_mib)  # fmt: skip
        notes: list[str] = []
        try:
            record, usage, pods, nodes, watched = asyncio.run(
                _measure(
                    cp,
                    contestant,
                    workload,
                    timeout=timeout,
                    concurrency=concurrency,
                    on_started=on_started,
                    extra_pids=extra_pids(extender, controller),
                    metrics=contestant.metrics if isinstance(contestant, schedulers.PyScheduler) else None,
                    # Whoever keeps PodGroup status has given each group its first phase before the clock.
                    settle_pod_groups=workload.peer_controller
                    and (controller is not None or kind == schedulers.PY),
                    apiserver_profile=apiserver_profile,
                )
            )
            if controller is not None:
                # Like for like: py-scheduler's CPU includes its in-process PodGroup controller.
                usage["cpu_s"] += usage["controller_cpu_s"]
                notes.append(
                    f"scheduler-plugins controller: {usage['controller_cpu_s']:.1f} CPU s, included in CPU s"
                    + ("" if controller.alive() else " (it exited during the run: see its log)")
                )
            if isinstance(contestant, schedulers.SchedulerPluginsScheduler):
                notes.append(
                    "scheduler-plugins: "
                    + (
                        f"{schedulers.PEER_V137_NOMINATION_GATE} (kube-scheduler v1.37.2's default, as "
                        "py-scheduler's: Permit waiters write their nominatedNodeName)"
                        if contestant.extra_args
                        else "NominatedNodeNameForExpectation off (its v1.34 default; py-scheduler's is on)"
                    )
                )
            plugins = contestant.plugins()
            violations = prereqs.verify(cp, workload, pods, nodes) + watched
            if workload.report_spread:
                notes.append(prereqs.spread_note(pods, nodes))
            if "churn_rounds" in usage:
                notes.append(
                    f"churn: {int(usage['churn_rounds'])} rounds of {len(workload.background)} objects "
                    f"recreated every {workload.background_interval_s:g}s"
                )
            if extender is not None:
                calls = ", ".join(f"{n} {verb}" for verb, n in sorted(extender.calls().items()))
                notes.append(f"extender: {usage['extender_cpu_s']:.1f} CPU s; calls {calls}")
        finally:
            contestant.stop()
            if keep_logs is not None and contestant.log_path.exists():
                keep_logs.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(contestant.log_path, keep_logs / f"{workload.name}-{kind}.log")
            if extender is not None:
                extender.stop()
            if controller is not None:
                controller.stop()
                if keep_logs is not None:
                    shutil.copyfile(controller.log_path, keep_logs / f"{workload.name}-{kind}-controller.log")
            if profiler and kind == schedulers.PY:
                notes.append(f"profiled with {profiler} (slower than unprofiled)")
        if probe is not None:
            probe.rss_after_run_mib = usage["rss_mib"]
            # Restarted against the full cluster: its startup sync time and resting memory there.
            restarted = _contestant(kind, cp, workdir, None, None)
            probe.sync_full_s, probe.rss_full_mib = scale.startup_probe(restarted)
            peaks = {name: sample(pid).peak_rss_mib for name, pid in cp.pids().items()}
            probe.apiserver_peak_rss_mib = peaks.get("kube-apiserver", math.nan)
            probe.etcd_peak_rss_mib = peaks.get("etcd", math.nan)
            log.info("%s restarted on the full cluster: ready in %.1fs, RSS %.0f MiB", kind,
                     probe.sync_full_s, probe.rss_full_mib)  # fmt: skip
    load_after = load.read_loadavg()
    tput, steady, duration = analysis.throughput(record, workload.expect_bound())
    lat = analysis.latencies_ms(record)
    placement = analysis.check_placement(workload, pods, nodes)
    if violations:
        placement.violations = violations
        placement.ok = False
    result = analysis.RunResult(
        workload=workload.name,
        scheduler=kind,
        pods=len(workload.pods),
        nodes=len(workload.nodes),
        bound=len(record.bound),
        duration_s=duration,
        throughput=tput,
        steady_throughput=steady,
        p50_ms=analysis.percentile(lat, 50),
        p90_ms=analysis.percentile(lat, 90),
        p99_ms=analysis.percentile(lat, 99),
        cpu_s=usage["cpu_s"],
        peak_rss_mib=usage["peak_rss_mib"],
        apiserver_cpu_s=usage["apiserver_cpu_s"],
        etcd_cpu_s=usage["etcd_cpu_s"],
        create_s=record.create_end - record.create_start,
        create_errors=record.create_errors,
        deleted=len(record.deleted),
        timed_out=record.timed_out,
        placement=placement,
        plugins=plugins,
        notes=notes,
        timeline=analysis.timeline(record),
        batching_hits=usage.get("batching_hits"),
        batching_misses=usage.get("batching_misses"),
        scale=probe.as_dict() if probe is not None else {},
        latency_cdf_ms=analysis.latency_cdf(lat),
        load_before=load_before,
        load_after=load_after,
        cores=load.cores(),
        machine_cpu_s=usage.get("machine_cpu_s"),
        own_cpu_s=usage.get("own_cpu_s"),
        window_s=usage.get("window_s"),
    )
    event_counts = ", ".join(
        f"{int(count)} {key.removeprefix('events/')}"
        + (
            f" ({int(usage['occurrences/' + key.removeprefix('events/')])} occurrences)"
            if "Failed" in key
            else ""
        )
        for key, count in sorted(usage.items())
        if key.startswith("events/")
    )
    if event_counts:
        result.notes.append(f"Events written: {event_counts}")
    # The load generator's own writes (pod creates) included: the same for every contestant.
    write_counts = ", ".join(
        f"{int(count)} {key.removeprefix('writes/')}"
        for key, count in sorted(usage.items())
        if key.startswith("writes/")
    )
    if write_counts:
        result.notes.append(f"API server writes during the run: {write_counts}")
    if (opened := usage.get("connections_opened")) is not None:
        result.notes.append(f"API connections opened by the binding and writer threads: {int(opened)}")
    scheduled_events = int(usage.get("events/Scheduled", 0))
    if kind != schedulers.CEILING and scheduled_events < len(record.bound):
        # Deferred writes would flatter the scheduler: the apiserver does that work after the clock.
        result.notes.append(
            f"Scheduled events lag: {scheduled_events} written for {len(record.bound)} bound pods"
        )
    if record.timed_out:
        result.notes.append(f"timed out after {timeout:.0f}s with {len(record.bound)} pods bound")
    if record.create_errors:
        result.notes.append(f"{record.create_errors} pod creations failed")
    log.info(
        "%s / %s: %d bound, %.1f pods/s (steady %.1f), p50 %.0f ms p99 %.0f ms, cpu %.1fs, rss %.0f MiB, "
        "creation took %.1fs, placement %s",
        workload.name, kind, result.bound, tput, steady, result.p50_ms, result.p99_ms, result.cpu_s,
        result.peak_rss_mib, result.create_s, "ok" if placement.ok else "WRONG",
    )  # fmt: skip
    return result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--workloads", help=f"default: all ({','.join(workloads.ALL_WORKLOADS)}); --quick leaves out huge"
    )
    parser.add_argument(
        "--schedulers",
        default="kube,py,ceiling,limit",
        help="kube,py,ceiling,limit (the ceiling, a trivial binder, and the honest limit, which also writes "
        f"the Scheduled Event through py-scheduler's client, run only on {','.join(CEILING_WORKLOADS)})",
    )
    parser.add_argument("--quick", action="store_true", help="smaller clusters and fewer pods")
    parser.add_argument("--profile", choices=schedulers.PROFILERS, help="profile py-scheduler's runs")
    parser.add_argument(
        "--apiserver-profile",
        type=Path,
        metavar="DIR",
        help="serve kube-apiserver's pprof; keep its CPU profiles and /metrics of each measured run in DIR",
    )
    parser.add_argument(
        "--keep-logs",
        type=Path,
        metavar="DIR",
        help="keep each run's scheduler log in DIR (<workload>-<kind>.log)",
    )
    parser.add_argument("--timeout", type=float, default=0.0, help="per-run seconds (default: by size)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per scheduler of every workload but "
        f"{', '.join(ONE_RUN_WORKLOADS)} (one run each), alternating; the medians are reported",
    )
    parser.add_argument(
        "--no-peer-controller",
        action="store_true",
        help="gang: run the scheduler-plugins scheduler without its controller (PodGroup status unkept)",
    )
    parser.add_argument(
        "--peer-as-shipped",
        choices=("also", "no", "only"),
        default="also",
        help="gang: the scheduler-plugins scheduler is run with NominatedNodeNameForExpectation on "
        "(kube-scheduler v1.37.2's default and py-scheduler's; alpha and off in the peer's v1.34 "
        "framework), so both write each Permit waiter's nominatedNodeName, and is the verdict's peer; "
        "'also' (default) runs it as shipped too, reported beside, 'no' skips that run, 'only' runs the "
        "peer as shipped alone (then the verdict's peer)",
    )
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="pod creates in flight")
    parser.add_argument("--out", type=Path, help="markdown output (default bench/results/latest.md)")
    parser.add_argument("--note", help="a line for the report's Machine section (who else used the machine)")
    parser.add_argument("--raw", type=Path, help="raw JSON output (default next to --out, .raw.json)")
    parser.add_argument("--render-only", type=Path, metavar="RAW", help="re-render a raw JSON file; no runs")
    return parser.parse_args(argv)


def extra_pids(*processes: prereqs.ExtenderProcess | prereqs.PeerControllerProcess | None) -> dict[str, int]:
    """The helper processes of a run whose CPU is measured with the scheduler's, by name."""
    names = {prereqs.ExtenderProcess: "extender", prereqs.PeerControllerProcess: "controller"}
    return {names[type(p)]: p.pid for p in processes if p is not None}


def runs_of(workload: str, repeat: int) -> int:
    """How many times each contestant runs ``workload``: ``repeat``, or once for ONE_RUN_WORKLOADS."""
    return 1 if workload in ONE_RUN_WORKLOADS else max(repeat, 1)


def mode_text(names: Sequence[str], kinds: Sequence[str], repeat: int) -> str:
    """The report's account of how many runs each figure is the median of."""
    contestants = ", ".join(kinds)
    repeated = [n for n in names if runs_of(n, repeat) > 1]
    once = [n for n in names if runs_of(n, repeat) == 1]
    if not repeated:
        return f"one run per contestant ({contestants})"
    which = f"every workload but {', '.join(once)} (one run each)" if once else ", ".join(repeated)
    if once and len(repeated) < len(once):
        which = f"{', '.join(repeated)} (the others one run each)"
    return (
        f"{max(repeat, 1)} runs per contestant ({contestants}) of {which}, alternating; the median run (by "
        "throughput) is shown, and ratios are medians of each figure"
    )


def workload_names(requested: str | None, *, quick: bool) -> list[str]:
    """The workloads to run: those named (comma-separated), else all of them, huge left out of --quick."""
    if requested is None:
        return [w for w in workloads.ALL_WORKLOADS if not (quick and w == workloads.HUGE)]
    return [w.strip() for w in requested.split(",") if w.strip()]


def contestants_for(
    workload: str, kinds: Sequence[str], peer: str = schedulers.KUBE, peer_as_shipped: str = "also"
) -> list[str]:
    """``kinds`` in order, the two limits kept only where a round-robin binder places pods correctly,
    kube-scheduler replaced by the workload's ``peer``. The scheduler-plugins peer (gang) runs with the
    nomination gate on, and as shipped too unless ``peer_as_shipped`` is "no" ("only": as shipped alone)."""
    peers = [peer]
    if peer == schedulers.SCHED_PLUGINS:
        peers = {
            "also": [schedulers.SCHED_PLUGINS_NOMINATING, schedulers.SCHED_PLUGINS],
            "no": [schedulers.SCHED_PLUGINS_NOMINATING],
            "only": [schedulers.SCHED_PLUGINS],
        }[peer_as_shipped]
    out: list[str] = []
    for k in kinds:
        if k in schedulers.LIMITS and workload not in CEILING_WORKLOADS:
            continue
        out += peers if k == schedulers.KUBE else [k]
    return out


def raw_json(
    results: Sequence[analysis.RunResult],
    *,
    settings: dict[str, str],
    descriptions: dict[str, str],
    skipped: dict[str, str],
    pictures: plots.Pictures,
) -> dict[str, object]:
    """The raw results file: every run, and the figures derived from them (both limits and each
    scheduler's fraction of each, the verdicts with their load reasons, the pictures drawn)."""
    verdicts = {}
    for name in dict.fromkeys(r.workload for r in results):
        outcome, why = load.verdict(results, name)
        verdicts[name] = {"outcome": outcome, "why": why}
    return {
        "settings": settings,
        "descriptions": descriptions,
        "skipped": skipped,
        "limits": summary.limits(results),
        "verdicts": verdicts,
        "pictures": plots.as_json(pictures),
        "results": [r.to_json() for r in results],
    }


def render_only(raw: Path, out: Path) -> int:
    """Re-render the markdown (and redraw the pictures) from a raw JSON file."""
    data = json.loads(raw.read_text())
    results = [analysis.RunResult.from_json(r) for r in data["results"]]
    pictures = plots.draw(results, out.parent, out.stem)
    out.write_text(
        report.render(
            results,
            settings=data["settings"],
            descriptions=data["descriptions"],
            skipped=data["skipped"],
            pictures=pictures,
        )
    )
    print(out.read_text())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    args = parse_args(argv)
    if args.render_only is not None:
        return render_only(args.render_only, args.out or args.render_only.with_suffix("").with_suffix(".md"))
    names = workload_names(args.workloads, quick=args.quick)
    kinds = [SCHEDULER_KEYS[k.strip()] for k in args.schedulers.split(",") if k.strip()]
    out = args.out or RESULTS / ("latest-quick.md" if args.quick else "latest.md")
    raw = args.raw or out.with_suffix(".raw.json")
    profile_dir = out.parent / "profiles"
    if args.profile:
        profile_dir.mkdir(parents=True, exist_ok=True)
    results: list[analysis.RunResult] = []
    descriptions: dict[str, str] = {}
    skipped: dict[str, str] = {}
    started = time.monotonic()
    session_load = _loadavg()
    for name in names:
        workload = workloads.build(name, quick=args.quick)
        descriptions[name] = workload.description
        if name in MIN_FREE_GIB:
            free, needed = _free_gib(), MIN_FREE_GIB[name]
            if free < needed:
                skipped[name] = f"this machine has {free:.1f} GiB free; {name} needs {needed}"
                continue
            descriptions[name] += f". The machine holds it: {free:.1f} GiB were available."
        run_kinds = contestants_for(name, kinds, workload.peer, args.peer_as_shipped)
        repeat = runs_of(name, args.repeat)
        # Alternate the schedulers (kube, py, kube, py...) so drift in the machine's load hits both.
        for _ in range(repeat):
            for kind in run_kinds:
                results.append(
                    run_one(
                        workload,
                        kind,
                        timeout=_timeout(workload, args.timeout),
                        concurrency=args.concurrency,
                        profiler=args.profile,
                        profile_dir=profile_dir,
                        keep_logs=args.keep_logs,
                        peer_controller=not args.no_peer_controller,
                        apiserver_profile=args.apiserver_profile,
                    )
                )
    settings = {
        "Kubernetes": f"{k8s_version()} (kube-apiserver, etcd, kube-scheduler built by devcluster)",
        "control plane": f"fresh per run; priority and fairness off; max-requests-inflight {MAX_INFLIGHT}, "
        f"max-mutating-requests-inflight {MAX_MUTATING_INFLIGHT}; etcd without fsync",
        "client limits": f"qps {schedulers.CLIENT_QPS}, burst {schedulers.CLIENT_BURST} for both schedulers "
        "and the honest limit",
        "load generator": f"this process (aiohttp, pre-serialised JSON), {args.concurrency} creates in "
        "flight while the scheduler runs; pods created as fast as the apiserver accepts them",
        "mode": ("quick" if args.quick else "full") + "; " + mode_text(names, kinds, args.repeat),
        "wall time": f"{time.monotonic() - started:.0f}s",
        "load average (1, 5, 15 min)": f"{session_load} before the first run (before the bench's own "
        f"load), {_loadavg()} at the end; "
        f"{load.cores()} cores",
    }
    if args.note:
        settings["note"] = args.note
    out.parent.mkdir(parents=True, exist_ok=True)
    pictures = plots.draw(results, out.parent, out.stem)
    data = raw_json(results, settings=settings, descriptions=descriptions, skipped=skipped, pictures=pictures)
    raw.write_text(json.dumps(data, indent=1, default=str))
    out.write_text(
        report.render(
            results, settings=settings, descriptions=descriptions, skipped=skipped, pictures=pictures
        )
    )
    text = out.read_text()
    print(text)
    return 0 if all(r.placement.ok and not r.timed_out for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
