"""PrioritySort (``pkg/scheduler/framework/plugins/queuesort/priority_sort.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework import Handle
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader
from scheduling_queue.types import priority_sort_less


class PrioritySort:
    """QueueSort: higher ``spec.priority`` first, then the pod that entered the queue earlier.

    Upstream: ``pkg/scheduler/framework/plugins/queuesort/priority_sort.go`` (v1.37.2).
    """

    name = names.PRIORITY_SORT

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())

    # The function itself, not a wrapper: the queue recognises it and orders activeQ by a plain tuple
    # key (priority, timestamp) instead of calling it for every heap comparison.
    less = staticmethod(priority_sort_less)
