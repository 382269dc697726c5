"""Informer metrics, module-level in prometheus-client's default registry."""

from __future__ import annotations

from prometheus_client import Counter

LISTS = Counter(
    "py_scheduler_informer_lists",
    "Complete LIST operations (all pages) started by informers.",
    ["resource"],
)
LIST_PAGES = Counter(
    "py_scheduler_informer_list_pages",
    "LIST requests (pages) sent by informers.",
    ["resource"],
)
WATCHES = Counter(
    "py_scheduler_informer_watches",
    "WATCH requests opened by informers.",
    ["resource"],
)
RELISTS = Counter(
    "py_scheduler_informer_relists",
    "LISTs after the first one, by why the watch could not simply resume.",
    ["resource", "reason"],
)
WATCH_ERRORS = Counter(
    "py_scheduler_informer_watch_errors",
    "Watches that ended in an error and were retried after backoff, by kind of error.",
    ["resource", "reason"],
)
EVENTS = Counter(
    "py_scheduler_informer_events",
    "Watch events received, by type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR).",
    ["resource", "type"],
)
HANDLER_ERRORS = Counter(
    "py_scheduler_informer_handler_errors",
    "Exceptions raised by informer event handlers and filters (logged and swallowed).",
    ["resource"],
)

RELIST_EXPIRED = "expired"
RELIST_TOO_LARGE_RV = "too_large_resource_version"
