"""bench.apiserver_profile's reading of two /metrics scrapes: what grew between them."""

from __future__ import annotations

from bench.apiserver_profile import parse_metrics, request_deltas

BEFORE = """\
# HELP apiserver_request_total Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="pods",subresource="binding",verb="POST"} 10
apiserver_request_total{code="200",resource="pods",subresource="",verb="WATCH"} 3
apiserver_watch_events_sizes_sum{resource="pods"} 1.5e+06
process_cpu_seconds_total 12.5
"""
AFTER = """\
apiserver_request_total{code="201",resource="pods",subresource="binding",verb="POST"} 4010
apiserver_request_total{code="200",resource="pods",subresource="",verb="WATCH"} 3
apiserver_request_total{code="201",resource="events",subresource="",verb="POST"} 4000
apiserver_watch_events_sizes_sum{resource="pods"} 2.5e+06
process_cpu_seconds_total 20
"""


def test_parse_reads_names_labels_and_values_and_skips_comments() -> None:
    samples = parse_metrics(BEFORE)
    assert samples[("process_cpu_seconds_total", "")] == 12.5
    assert samples[("apiserver_watch_events_sizes_sum", '{resource="pods"}')] == 1.5e6
    assert len(samples) == 4


def test_deltas_keep_what_grew_under_the_prefix_including_new_series() -> None:
    grown = request_deltas(parse_metrics(BEFORE), parse_metrics(AFTER), "apiserver_request_total")
    assert grown == {
        ("apiserver_request_total", '{code="201",resource="pods",subresource="binding",verb="POST"}'): 4000,
        ("apiserver_request_total", '{code="201",resource="events",subresource="",verb="POST"}'): 4000,
    }
    sizes = request_deltas(parse_metrics(BEFORE), parse_metrics(AFTER), "apiserver_watch_events_sizes")
    assert sizes == {("apiserver_watch_events_sizes_sum", '{resource="pods"}'): 1e6}
