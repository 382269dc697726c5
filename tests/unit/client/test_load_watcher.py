"""The measured-load sources (load-watcher v0.2.4 as a library over Prometheus, and its service API): the
exact queries, how answers and failures are read, which window the plugins get, and the collector that
refreshes off the loop and keeps the last good sample. The HTTP exchange is faked at ``_send``; the real
Prometheus is in tests/integration/test_trimaran_side_by_side.py."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import urllib.request
from typing import Any

import pytest

from scheduler.client import load_watcher
from scheduler.client.load_watcher import (
    Collector,
    FetchError,
    LibraryWatcher,
    PrometheusProvider,
    decode_watcher_metrics,
)
from scheduler.framework.load_metrics import (
    AVERAGE,
    CPU,
    MEMORY,
    STD,
    Metric,
    MetricProviderSpec,
    SourceStatus,
    TrimaranSpec,
    WatcherMetrics,
    Window,
)


def vector(*series: tuple[str, str]) -> bytes:
    return json.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [{"metric": {"instance": host}, "value": [1.0, value]} for host, value in series],
            },
        }
    ).encode()


def form_of(request: urllib.request.Request) -> dict[str, list[str]]:
    data = request.data
    assert isinstance(data, bytes)
    return urllib.parse.parse_qs(data.decode())


class FakeHTTP:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.requests: list[urllib.request.Request] = []

    def __call__(self, request: urllib.request.Request, timeout: float, context: Any) -> tuple[int, bytes]:
        self.requests.append(request)
        if callable(self.answer):
            answer: tuple[int, bytes] = self.answer(form_of(request)["query"][0])
            return answer
        return self.answer  # type: ignore[no-any-return]

    def queries(self) -> list[str]:
        return [form_of(r)["query"][0] for r in self.requests]


def answer_by_metric(query: str) -> tuple[int, bytes]:
    if "node_cpu" in query:
        return 200, vector(("node-a", "0.25"), ("node-b", "0.5"))
    if "node_memory" in query:
        return 200, vector(("node-a", "0.125"))
    return 200, vector()


def test_prometheus_queries_and_values(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeHTTP(answer_by_metric)
    monkeypatch.setattr(load_watcher, "_send", fake)
    provider = PrometheusProvider(
        MetricProviderSpec("Prometheus", "http://prom:9090/"), clock=lambda: 1700000000.5
    )
    hosts = provider.fetch_all_hosts(Window("15m", 0, 900))
    queries = fake.queries()
    assert len(queries) == 34
    assert queries[0] == "avg_over_time(instance:node_cpu:ratio[15m])"
    assert queries[1] == "avg_over_time(instance:node_memory_utilisation:ratio[15m])"
    assert queries[17] == "stddev_over_time(instance:node_cpu:ratio[15m])"
    assert "avg_over_time(kepler_node_energy_stat[15m])" in queries
    request = fake.requests[0]
    assert request.full_url == "http://prom:9090/api/v1/query"
    assert request.get_method() == "POST"
    assert form_of(request)["time"] == ["1700000000.5"]
    assert request.get_header("Authorization") is None
    assert hosts["node-a"] == [
        Metric("instance:node_cpu:ratio", CPU, AVERAGE, 25.0, "15m"),
        Metric("instance:node_memory_utilisation:ratio", MEMORY, AVERAGE, 12.5, "15m"),
        Metric("instance:node_cpu:ratio", CPU, STD, 25.0, "15m"),
        Metric("instance:node_memory_utilisation:ratio", MEMORY, STD, 12.5, "15m"),
    ]
    assert [m.value for m in hosts["node-b"]] == [50.0, 50.0]


def test_prometheus_token_and_default_address(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeHTTP((200, vector()))
    monkeypatch.setattr(load_watcher, "_send", fake)
    PrometheusProvider(MetricProviderSpec("Prometheus", "", "s3cret", True)).query("up")
    assert fake.requests[0].full_url == "http://prometheus-k8s:9090/api/v1/query"
    assert fake.requests[0].get_header("Authorization") == "Bearer s3cret"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ((500, b"oops"), "server_error: server returned HTTP status 500"),
        ((200, b"<html>not json"), "bad_response"),
        ((200, b"[1, 2]"), "bad_response: the response is not a JSON object"),
        ((422, b'{"status":"error","errorType":"execution","error":"boom"}'), "execution: boom"),
        ((503, b'{"status":"success","data":{}}'), "inconsistent body"),
        (
            (200, b'{"status":"success","data":{"resultType":"vector","result":[{"value":[1]}]}}'),
            "unreadable",
        ),
    ],
)
def test_prometheus_failures_fail_the_whole_fetch(
    monkeypatch: pytest.MonkeyPatch, answer: tuple[int, bytes], message: str
) -> None:
    fake = FakeHTTP(answer)
    monkeypatch.setattr(load_watcher, "_send", fake)
    with pytest.raises(FetchError, match=message):
        PrometheusProvider(MetricProviderSpec("Prometheus", "http://p")).fetch_all_hosts(Window("5m", 0, 300))
    # Every query is still tried (load-watcher keeps going and reports the last error).
    assert len(fake.requests) == 34


def test_prometheus_other_result_types_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    scalar = json.dumps({"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}}).encode()
    monkeypatch.setattr(load_watcher, "_send", FakeHTTP((200, scalar)))
    assert (
        PrometheusProvider(MetricProviderSpec("Prometheus", "http://p")).fetch_all_hosts(Window("5m", 0, 1))
        == {}
    )


def test_unreachable_prometheus(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = PrometheusProvider(MetricProviderSpec("Prometheus", "http://127.0.0.1:1"))
    with pytest.raises(FetchError, match="URLError"):
        provider.query("up")


class FakeProvider:
    name = "Prometheus"

    def __init__(self) -> None:
        self.fail = False
        self.cpu = 10.0
        self.windows: list[str] = []

    def fetch_all_hosts(self, window: Window) -> dict[str, list[Metric]]:
        self.windows.append(window.duration)
        if self.fail:
            raise FetchError("URLError: connection refused")
        return {"n": [Metric("instance:node_cpu:ratio", CPU, AVERAGE, self.cpu, window.duration)]}


def test_library_watcher_prefers_fifteen_then_ten_minutes() -> None:
    watcher = LibraryWatcher(FakeProvider(), clock=lambda: 5000.0)
    assert watcher.latest() is None
    watcher.keep(watcher.fetch("5m"))
    assert watcher.latest() is None  # the 5m window is never what the plugins read
    watcher.keep(watcher.fetch("10m"))
    latest = watcher.latest()
    assert latest is not None and latest.window == Window("10m", 4400, 5000)
    watcher.keep(watcher.fetch("15m"))
    latest = watcher.latest()
    assert latest is not None and latest.window.duration == "15m" and latest.timestamp == 5000


def test_decode_load_watcher_service_json() -> None:
    body = {
        "timestamp": 1700000000,
        "window": {"duration": "15m", "start": 1699999100, "end": 1700000000},
        "source": "Prometheus",
        "data": {
            "NodeMetricsMap": {
                "n": {
                    "metrics": [
                        {"name": "cpu", "type": "CPU", "operator": "AVG", "rollup": "15m", "value": 42.5}
                    ]
                }
            }
        },
    }
    sample = decode_watcher_metrics(json.dumps(body).encode())
    assert sample.window.end == 1700000000
    assert sample.nodes == {"n": [Metric("cpu", CPU, AVERAGE, 42.5, "15m")]}
    with pytest.raises(FetchError, match="unable to decode watcher metrics"):
        decode_watcher_metrics(b"garbage")


def test_collector_keeps_the_last_good_sample_and_says_why() -> None:
    provider = FakeProvider()
    now = [1000.0]
    collector = Collector(
        TrimaranSpec(MetricProviderSpec("Prometheus", "http://p")), clock=lambda: now[0], provider=provider
    )

    async def run() -> None:
        loop = asyncio.get_running_loop()
        await collector.start(loop)
        first = collector.latest()
        assert first.nodes is not None and first.nodes["n"][0].value == 10.0
        assert provider.windows == ["15m", "10m", "5m"]
        assert collector.status().last_error == ""
        # Prometheus goes away: the refreshes fail, the plugins keep reading the last sample.
        provider.fail = True
        await collector._fetch_window("15m")
        collector.refresh_from_library()
        assert collector.latest() is first
        assert "connection refused" in collector.status().last_error
        provider.fail = False
        provider.cpu = 20.0
        now[0] = 1060.0
        await collector._fetch_window("15m")
        collector.refresh_from_library()
        latest = collector.latest()
        assert latest.nodes is not None and latest.nodes["n"][0].value == 20.0
        assert collector.status() == SourceStatus(collector.label, 1060.0, "")
        collector.stop()

    asyncio.run(run())


def test_collector_without_any_sample() -> None:
    provider = FakeProvider()
    provider.fail = True
    collector = Collector(TrimaranSpec(MetricProviderSpec("Prometheus", "http://q")), provider=provider)

    async def run() -> None:
        await collector.start(asyncio.get_running_loop())
        assert collector.latest() == WatcherMetrics()
        assert collector.latest().nodes is None
        assert collector.status().updated_at is None
        collector.stop()

    asyncio.run(run())


def test_collector_survives_an_unforeseen_failure() -> None:
    class Broken(FakeProvider):
        def fetch_all_hosts(self, window: Window) -> dict[str, list[Metric]]:
            raise KeyError("surprise")

    collector = Collector(TrimaranSpec(MetricProviderSpec("Prometheus", "http://r")), provider=Broken())

    async def run() -> None:
        await collector.start(asyncio.get_running_loop())
        assert collector.latest().nodes is None
        assert collector.status().last_error == "KeyError: 'surprise'"
        collector.stop()

    asyncio.run(run())
