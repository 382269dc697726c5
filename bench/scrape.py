"""Read a scheduler's /metrics (Prometheus text format) into numbers the report can difference.

Only what the bench needs: sample lines ``name{labels} value [timestamp]``; comments skipped. A metric
is summed over its label sets, and a Counter may be exposed with or without its ``_total`` suffix
(prometheus_client adds it; the metric is declared without it).
"""

from __future__ import annotations

import math
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping

Samples = dict[str, float]

BATCHING_HITS = "py_scheduler_batching_hits"
BATCHING_MISSES = "py_scheduler_batching_misses"
CONNECTIONS_OPENED = "py_scheduler_api_connections_opened"


def parse(text: str) -> Samples:
    """Metric family name -> the sum of its samples over all label sets (NaN samples skipped)."""
    out: Samples = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        brace = line.find("{")
        if brace >= 0:
            name = line[:brace]
            rest = line[line.rindex("}") + 1 :].split()
        else:
            name, *rest = line.split()
        if not rest:
            continue
        try:
            number = float(rest[0])
        except ValueError:
            continue
        if math.isnan(number):
            continue
        out[name] = out.get(name, 0.0) + number
    return out


def counter(samples: Mapping[str, float], name: str) -> float | None:
    """A counter's value, exposed as ``name_total`` or ``name``; None if the scrape lacks it."""
    for key in (f"{name}_total", name):
        if key in samples:
            return samples[key]
    return None


def delta(before: Mapping[str, float], after: Mapping[str, float], name: str) -> float | None:
    """How much counter ``name`` grew between two scrapes; None if either lacks it."""
    first, last = counter(before, name), counter(after, name)
    if first is None or last is None:
        return None
    return last - first


def fetch(url: str, context: ssl.SSLContext | None = None, timeout: float = 10.0) -> Samples:
    """GET and parse ``url``; an empty dict if it cannot be read (the report then says "not scraped")."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as resp:
            return parse(resp.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, OSError):
        return {}


APISERVER_REQUESTS = "apiserver_request_total"
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")


def _labels(text: str) -> dict[str, str]:
    """``a="x",b="y"`` -> {"a": "x", "b": "y"} (label values here never hold quotes or commas)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        if key:
            out[key.strip()] = value.strip().strip('"')
    return out


def api_writes(text: str) -> Samples:
    """The API server's write requests from its /metrics text: "VERB resource[/subresource]" -> count
    (``apiserver_request_total`` summed over codes, scopes and groups). Differenced over a run, this is
    what a scheduler made the API server do besides its reads and watches."""
    out: Samples = {}
    for raw in text.splitlines():
        if not raw.startswith(APISERVER_REQUESTS + "{"):
            continue
        brace_end = raw.rindex("}")
        labels = _labels(raw[len(APISERVER_REQUESTS) + 1 : brace_end])
        verb = labels.get("verb", "")
        if verb not in WRITE_VERBS:
            continue
        resource = labels.get("resource", "")
        if sub := labels.get("subresource", ""):
            resource = f"{resource}/{sub}"
        try:
            number = float(raw[brace_end + 1 :].split()[0])
        except (IndexError, ValueError):
            continue
        key = f"{verb} {resource}"
        out[key] = out.get(key, 0.0) + number
    return out


def grown(before: Mapping[str, float], after: Mapping[str, float]) -> Samples:
    """Per-key growth between two samplings (keys absent before count from zero); unchanged keys left out."""
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0}
