"""Measured node load for the Trimaran plugins, fetched the way scheduler-plugins v0.34.7 does
(``pkg/trimaran/collector.go``) through load-watcher v0.2.4 (``pkg/watcher/watcher.go``,
``pkg/watcher/api/client.go``, ``pkg/watcher/internal/metricsprovider/prometheus.go``).

Two sources, as upstream's:

* a metric provider queried by the scheduler itself (load-watcher as a library). For Prometheus: per
  window (15m, 10m, 5m) the instant queries ``avg_over_time(<metric>[<window>])`` and
  ``stddev_over_time(<metric>[<window>])`` for each of load-watcher's 17 node recording rules
  (``instance:node_cpu:ratio``, ``instance:node_memory_utilisation:ratio``, ...), each result's
  ``instance`` label naming the node and its value times 100 the percentage. A window is fetched at
  start and then every minute; a fetch in which any query failed is dropped whole. The plugins read the
  newest 15m sample, else the newest 10m one.
* a load-watcher service: ``GET <watcherAddress>/watcher`` (its JSON API), 55 s timeout.

The plugins' copy is refreshed every 30 s (upstream's collector period) from the newest sample; a
refresh that finds nothing keeps the previous copy, however old. Every network call runs on a worker
thread; timers on the event loop start them, and the copy is replaced on the loop, so a cycle never
waits for the network and reads a copy no thread writes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from scheduler import metrics
from scheduler.framework.load_metrics import (
    AVERAGE,
    BANDWIDTH,
    CPU,
    ENERGY,
    MEMORY,
    PROMETHEUS,
    STD,
    STORAGE,
    Metric,
    MetricProviderSpec,
    SourceStatus,
    TrimaranSpec,
    WatcherMetrics,
    Window,
)

log = logging.getLogger(__name__)

COLLECTOR_PERIOD_SECONDS = 30.0
WINDOW_REFETCH_SECONDS = 60.0
SAMPLES_PER_WINDOW = 5
PROMETHEUS_QUERY_TIMEOUT = 10.0
WATCHER_SERVICE_TIMEOUT = 55.0
DEFAULT_PROMETHEUS_ADDRESS = "http://prometheus-k8s:9090"
WATCHER_PATH = "/watcher"

FIFTEEN_MINUTES, TEN_MINUTES, FIVE_MINUTES = "15m", "10m", "5m"
WINDOW_SECONDS = {FIFTEEN_MINUTES: 15 * 60, TEN_MINUTES: 10 * 60, FIVE_MINUTES: 5 * 60}

PROM_AVG, PROM_STD = "avg_over_time", "stddev_over_time"
HOST_LABEL = "instance"
# load-watcher's recording rules, in its query order, with the metric type each reports.
PROM_METRICS: tuple[tuple[str, str], ...] = (
    ("instance:node_cpu:ratio", CPU),
    ("instance:node_memory_utilisation:ratio", MEMORY),
    ("instance:node_network_transmit_bytes:rate:sum", BANDWIDTH),
    ("instance:node_network_transmit_drop_excluding_lo:rate5m", BANDWIDTH),
    ("instance:node_network_receive_bytes:rate:sum", BANDWIDTH),
    ("instance:node_network_receive_drop_excluding_lo:rate5m", BANDWIDTH),
    ("instance_device:node_disk_io_time_seconds:rate5m", STORAGE),
    ("scaph_host_power_microwatts", ENERGY),
    ("scaph_host_energy_microjoules", ENERGY),
    ("kepler_node_core_joules_total", ENERGY),
    ("kepler_node_uncore_joules_total", ENERGY),
    ("kepler_node_dram_joules_total", ENERGY),
    ("kepler_node_package_joules_total", ENERGY),
    ("kepler_node_other_joules_total", ENERGY),
    ("kepler_node_gpu_joules_total", ENERGY),
    ("kepler_node_platform_joules_total", ENERGY),
    ("kepler_node_energy_stat", ENERGY),
)


class FetchError(Exception):
    """A source did not answer with a usable sample; the message says why."""


class Provider(Protocol):
    name: str

    def fetch_all_hosts(self, window: Window) -> dict[str, list[Metric]]:
        """Every host's metrics for ``window``; raises FetchError when any query failed."""
        ...


def _ssl_context(insecure: bool) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class PrometheusProvider:
    """load-watcher's Prometheus client: instant queries over the HTTP API."""

    name = PROMETHEUS

    def __init__(self, spec: MetricProviderSpec, clock: Callable[[], float] = time.time) -> None:
        self.address = (spec.address or DEFAULT_PROMETHEUS_ADDRESS).rstrip("/")
        self._token = spec.token
        self._clock = clock
        # As upstream: the insecure transport and the bearer token go together; without a token the
        # default (verifying) transport is used whatever insecureSkipVerify says.
        self._ssl = _ssl_context(spec.insecure_skip_verify) if spec.token else _ssl_context(False)

    def fetch_all_hosts(self, window: Window) -> dict[str, list[Metric]]:
        hosts: dict[str, list[Metric]] = {}
        failure: FetchError | None = None
        for method, operator in ((PROM_AVG, AVERAGE), (PROM_STD, STD)):
            for metric_name, metric_type in PROM_METRICS:
                query = f"{method}({metric_name}[{window.duration}])"
                try:
                    result = self.query(query)
                except FetchError as err:
                    log.error("error querying Prometheus for query %s: %s", query, err)
                    failure = err
                    continue
                if result is None:
                    continue
                for host, sample_value in result:
                    hosts.setdefault(host, []).append(
                        Metric(metric_name, metric_type, operator, sample_value * 100, window.duration)
                    )
        if failure is not None:
            raise failure
        return hosts

    def query(self, promql: str) -> list[tuple[str, float]] | None:
        """One instant query: (host, value) per series of a vector result; None for another type."""
        body = self._post("/api/v1/query", {"query": promql, "time": _go_time(self._clock())})
        data = body.get("data")
        if not isinstance(data, Mapping):
            raise FetchError("bad_data: no data in the response")
        if data.get("resultType") != "vector":
            log.error("error: The Prometheus results should not be type: %s.", data.get("resultType"))
            return None
        out: list[tuple[str, float]] = []
        for series in data.get("result") or ():
            try:
                labels = series.get("metric") or {}
                value = float(series["value"][1])
            except (AttributeError, KeyError, IndexError, TypeError, ValueError) as err:
                raise FetchError(f"bad_data: unreadable sample: {err}") from None
            out.append((str(labels.get(HOST_LABEL, "")), value))
        return out

    def _post(self, path: str, form: Mapping[str, str]) -> Mapping[str, Any]:
        request = urllib.request.Request(
            self.address + path,
            data=urllib.parse.urlencode(form).encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            method="POST",
        )
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        status, raw = _send(request, PROMETHEUS_QUERY_TIMEOUT, self._ssl)
        # Prometheus answers 400, 422 and 503 with an error body; other non-2xx codes are server errors.
        if status // 100 != 2 and status not in (400, 422, 503):
            raise FetchError(f"server_error: server returned HTTP status {status}")
        try:
            body = json.loads(raw) if status != 204 else {}
        except ValueError as err:
            raise FetchError(f"bad_response: {err}") from None
        if not isinstance(body, Mapping):
            raise FetchError("bad_response: the response is not a JSON object")
        if status // 100 != 2 and body.get("status") == "success":
            raise FetchError("bad_response: inconsistent body for response code")
        if body.get("status") == "error":
            raise FetchError(f"{body.get('errorType', '')}: {body.get('error', '')}")
        return body


def _go_time(seconds: float) -> str:
    """client_golang's ``formatTime``: Unix seconds with the fraction, shortest form, no ``.0``."""
    text = repr(float(seconds))
    return text[:-2] if text.endswith(".0") else text


def _send(request: urllib.request.Request, timeout: float, context: ssl.SSLContext) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as err:
        return int(err.code), err.read()
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise FetchError(f"{type(err).__name__}: {err}") from None


class LibraryWatcher:
    """load-watcher as a library: the latest samples of each window, fetched from a provider."""

    def __init__(self, provider: Provider, clock: Callable[[], float] = time.time) -> None:
        self.provider = provider
        self._clock = clock
        self.samples: dict[str, deque[WatcherMetrics]] = {
            duration: deque(maxlen=SAMPLES_PER_WINDOW) for duration in WINDOW_SECONDS
        }

    def fetch(self, duration: str) -> WatcherMetrics:
        """Fetch one window (blocking: on a worker thread). Raises FetchError and keeps nothing when
        any query failed."""
        now = int(self._clock())
        window = Window(duration, now - WINDOW_SECONDS[duration], now)
        hosts = self.provider.fetch_all_hosts(window)
        return WatcherMetrics(int(self._clock()), window, self.provider.name, hosts)

    def keep(self, sample: WatcherMetrics) -> None:
        self.samples[sample.window.duration].append(sample)

    def latest(self) -> WatcherMetrics | None:
        """The newest 15m sample, else the newest 10m one (``GetLatestWatcherMetrics(15m)``)."""
        for duration in (FIFTEEN_MINUTES, TEN_MINUTES):
            kept = self.samples[duration]
            if kept:
                return kept[-1]
        return None


def decode_watcher_metrics(raw: bytes) -> WatcherMetrics:
    """The load-watcher service's JSON (``WatcherMetrics``). Raises FetchError on anything else."""
    try:
        body = json.loads(raw)
        window = body.get("window") or {}
        nodes: dict[str, list[Metric]] = {}
        for host, node in ((body.get("data") or {}).get("NodeMetricsMap") or {}).items():
            nodes[str(host)] = [
                Metric(
                    str(m.get("name", "")),
                    str(m.get("type", "")),
                    str(m.get("operator", "")),
                    float(m.get("value", 0)),
                    str(m.get("rollup", "")),
                )
                for m in (node or {}).get("metrics") or ()
            ]
        return WatcherMetrics(
            int(body.get("timestamp", 0)),
            Window(str(window.get("duration", "")), int(window.get("start", 0)), int(window.get("end", 0))),
            str(body.get("source", "")),
            nodes,
        )
    except (ValueError, TypeError, AttributeError) as err:
        raise FetchError(f"unable to decode watcher metrics: {err}") from None


class ServiceWatcher:
    """A load-watcher service (``serviceClient``)."""

    def __init__(self, address: str) -> None:
        self.address = address

    def fetch(self) -> WatcherMetrics:
        request = urllib.request.Request(
            self.address + WATCHER_PATH, headers={"Content-Type": "application/json"}, method="GET"
        )
        status, raw = _send(request, WATCHER_SERVICE_TIMEOUT, ssl.create_default_context())
        if status != 200:
            raise FetchError(f"received status code {status} from watcher")
        return decode_watcher_metrics(raw)


def source_label(spec: TrimaranSpec) -> str:
    if spec.watcher_address:
        return f"watcher:{spec.watcher_address}"
    provider = spec.metric_provider
    return f"{provider.type}:{provider.address or DEFAULT_PROMETHEUS_ADDRESS}"


class Collector:
    """The plugins' copy of one source's latest sample (upstream's ``Collector``), refreshed on loop
    timers from fetches that run on a worker thread. Implements ``LoadMetricsSource``."""

    def __init__(
        self,
        spec: TrimaranSpec,
        *,
        clock: Callable[[], float] = time.time,
        provider: Provider | None = None,
    ) -> None:
        self.spec = spec
        self.label = source_label(spec)
        self._clock = clock
        self._sample = WatcherMetrics()
        self._updated_at: float | None = None
        self._last_error = ""
        self.service: ServiceWatcher | None = None
        self.library: LibraryWatcher | None = None
        if spec.watcher_address:
            self.service = ServiceWatcher(spec.watcher_address)
        else:
            self.library = LibraryWatcher(provider or PrometheusProvider(spec.metric_provider, clock), clock)
        self._executor: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timers: list[asyncio.TimerHandle] = []
        self._stopped = False
        metrics.LOAD_METRICS_AGE.labels(self.label).set_function(self._age)

    # --- LoadMetricsSource ---------------------------------------------------------------------
    def latest(self) -> WatcherMetrics:
        return self._sample

    def status(self) -> SourceStatus:
        return SourceStatus(self.label, self._updated_at, self._last_error)

    def _age(self) -> float:
        taken = self._sample.timestamp
        return self._clock() - taken if self._sample.nodes is not None else float("nan")

    # --- refreshing (on the loop; the fetches on the worker thread) -----------------------------
    async def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Take the first sample (upstream does before the plugin exists), then refresh on timers."""
        self._loop = loop
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="load-metrics")
        if self.library is not None:
            for duration in WINDOW_SECONDS:
                await self._fetch_window(duration)
                self._after(WINDOW_REFETCH_SECONDS, self._window_timer(duration))
            self.refresh_from_library()
        else:
            await self._fetch_service()
        self._after(COLLECTOR_PERIOD_SECONDS, self._collector_timer)

    def stop(self) -> None:
        self._stopped = True
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _after(self, seconds: float, callback: Callable[[], None]) -> None:
        if self._stopped or self._loop is None:
            return
        self._timers = [t for t in self._timers if not t.cancelled() and t.when() > self._loop.time()]
        self._timers.append(self._loop.call_later(seconds, callback))

    def _window_timer(self, duration: str) -> Callable[[], None]:
        def fire() -> None:
            task = asyncio.ensure_future(self._fetch_window(duration))
            task.add_done_callback(lambda _: self._after(WINDOW_REFETCH_SECONDS, fire))

        return fire

    def _collector_timer(self) -> None:
        if self.library is not None:
            self.refresh_from_library()
            self._after(COLLECTOR_PERIOD_SECONDS, self._collector_timer)
        else:
            task = asyncio.ensure_future(self._fetch_service())
            task.add_done_callback(lambda _: self._after(COLLECTOR_PERIOD_SECONDS, self._collector_timer))

    async def _off_loop(self, work: Callable[[], WatcherMetrics]) -> WatcherMetrics | None:
        assert self._loop is not None
        try:
            sample = await self._loop.run_in_executor(self._executor, work)
        except FetchError as err:
            self._fetch_failed(str(err))
            return None
        except RuntimeError as err:
            if not self._stopped:  # else the executor was shut down while the scheduler stops
                self._fetch_failed(f"{type(err).__name__}: {err}")
            return None
        except Exception as err:
            # A source answering in a way nobody foresaw must not take the scheduler down.
            log.exception("load metrics from %s: unexpected failure", self.label)
            self._fetch_failed(f"{type(err).__name__}: {err}")
            return None
        metrics.LOAD_METRICS_FETCHES.labels(self.label, "success").inc()
        self._last_error = ""
        return sample

    def _fetch_failed(self, message: str) -> None:
        log.error("load metrics from %s: %s (keeping the previous sample)", self.label, message)
        metrics.LOAD_METRICS_FETCHES.labels(self.label, "error").inc()
        self._last_error = message

    async def _fetch_window(self, duration: str) -> None:
        assert self.library is not None
        library = self.library
        sample = await self._off_loop(lambda: library.fetch(duration))
        if sample is not None:
            library.keep(sample)

    async def _fetch_service(self) -> None:
        assert self.service is not None
        sample = await self._off_loop(self.service.fetch)
        if sample is not None:
            self._replace(sample)

    def refresh_from_library(self) -> None:
        assert self.library is not None
        sample = self.library.latest()
        if sample is None:
            # Nothing fetched yet: the fetch's own error (kept in _last_error) says why.
            log.error("load metrics from %s: unable to get any latest metrics", self.label)
            return
        self._replace(sample)

    def _replace(self, sample: WatcherMetrics) -> None:
        # The last fetch's error stays visible: a copy of an older sample is not a fresh one.
        self._sample = sample
        self._updated_at = self._clock()


class Collectors:
    """One Collector per distinct TrimaranSpec, handed to the plugins through their Handle."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.by_spec: dict[TrimaranSpec, Collector] = {}

    def source(self, spec: TrimaranSpec) -> Collector:
        collector = self.by_spec.get(spec)
        if collector is None:
            collector = self.by_spec[spec] = Collector(spec, clock=self._clock)
        return collector

    async def start(self, loop: asyncio.AbstractEventLoop) -> None:
        await asyncio.gather(*(c.start(loop) for c in self.by_spec.values()))

    def stop(self) -> None:
        for collector in self.by_spec.values():
            collector.stop()

    def sources(self) -> Sequence[Collector]:
        return list(self.by_spec.values())


__all__ = [
    "Collector",
    "Collectors",
    "FetchError",
    "LibraryWatcher",
    "PrometheusProvider",
    "ServiceWatcher",
    "decode_watcher_metrics",
]
