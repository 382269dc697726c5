"""The live LIST behind ``snapshot``, ``simulate --kubeconfig`` and explain's re-evaluation: every kind of
SNAPSHOT_KINDS, by GET only, page by page.

A transient answer (429, a 5xx, no answer at all: a reset, a refused connection, a timeout) is asked
again after a jittered, growing wait, a few times; RestClient has already waited out an integer
Retry-After by then (client-go's checkWait). A kind not served (404: an API that is off, a CRD not
installed) has no objects and is not named; one this user may not list (401, 403), or one that still
fails after the retries, is left out and named with the API server's last answer. Nodes and pods cannot
be left out: their failure stops the listing with one line naming the kind and the answer.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

import orjson
import urllib3

from informers.backoff import Backoff, BackoffPolicy
from informers.clock import REAL_CLOCK, Clock
from informers.resource import NODES, PODS, ResourceSpec
from scheduler.client.kubeclient import RestClient, load_configuration, one_line
from scheduler.explain.manifests import SNAPSHOT_KINDS
from scheduler.framework.objects import list_continue

# GET path -> (HTTP status, body); raises OSError or urllib3's HTTPError when no answer came.
Get = Callable[[str], tuple[int, bytes]]

PAGE_SIZE = 500
# Tries per request: the first and three more, waiting about 0.5, 1 and 2 seconds (each up to 1.5x).
LIST_TRIES = 4
LIST_BACKOFF = BackoffPolicy(initial=0.5, cap=4.0, factor=2.0, jitter=0.5, reset_after=float("inf"))
# Kinds without which nothing can be judged.
REQUIRED = frozenset({NODES.name, PODS.name})


class ListingError(OSError):
    """Nodes or pods could not be listed: one line naming the kind and the last answer."""


def answer_text(status: int, body: bytes) -> str:
    """``HTTP 503`` or ``no answer (<the error>)``, one line."""
    if status:
        return f"HTTP {status}"
    return f"no answer ({' '.join(body.decode(errors='replace').split())[:200]})"


def transient(status: int) -> bool:
    """No answer, throttled, or a server error: worth asking again. A refusal (401, 403) is not."""
    return status in {0, 429} or status >= 500


def get_with_retries(
    get: Get,
    path: str,
    *,
    tries: int = LIST_TRIES,
    sleep: Callable[[float], None] | None = None,
    rng: random.Random | None = None,
    clock: Clock | None = None,
) -> tuple[int, bytes]:
    """``get(path)``, asked again while the answer is transient; the last answer otherwise. No answer
    at all is status 0 with the error's text as the body."""
    backoff = Backoff(LIST_BACKOFF, clock=clock or REAL_CLOCK, rng=rng)
    status, body = 0, b""
    for attempt in range(1, tries + 1):
        try:
            status, body = get(path)
        except (OSError, urllib3.exceptions.HTTPError) as err:
            status, body = 0, one_line(err).encode()
        if not transient(status) or attempt == tries:
            return status, body
        (sleep or time.sleep)(backoff.next_delay())
    return status, body


def list_kinds(
    get: Get,
    kinds: Sequence[ResourceSpec] = SNAPSHOT_KINDS,
    *,
    sleep: Callable[[float], None] | None = None,
    rng: random.Random | None = None,
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Every object of ``kinds`` (resource name -> objects, each with its kind and apiVersion, without
    managedFields), and the kinds left out (resource name -> the last answer). Raises ListingError when
    nodes or pods cannot be listed."""
    out: dict[str, list[dict[str, Any]]] = {}
    unlisted: dict[str, str] = {}
    for spec in kinds:
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query = f"?limit={PAGE_SIZE}" + (f"&continue={quote(token)}" if token else "")
            status, body = get_with_retries(get, spec.path() + query, sleep=sleep, rng=rng)
            if status != 200:
                break
            page = orjson.loads(body)
            for item in page.get("items") or ():
                item["kind"], item["apiVersion"] = spec.kind, spec.api_version
                if isinstance(item.get("metadata"), dict):
                    item["metadata"].pop("managedFields", None)
                items.append(item)
            token = list_continue(page)
            if not token:
                break
        if status == 200:
            out[spec.name] = items
            continue
        if spec.name in REQUIRED:
            detail = " ".join(body[:200].decode(errors="replace").split()) if status else ""
            answer = answer_text(status, body) + (f": {detail}" if detail else "")
            raise ListingError(f"listing {spec.name}: {answer}")
        if status != 404:
            unlisted[spec.name] = answer_text(status, body)
    return out, unlisted


def list_cluster(kubeconfig: str | None) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """``list_kinds`` against the cluster of ``kubeconfig`` (default: in-cluster, then ~/.kube/config)."""
    rest = RestClient(load_configuration(kubeconfig), qps=50, burst=50)
    try:
        return list_kinds(lambda path: rest.request("GET", path))
    finally:
        rest.close()
