"""Helpers for tests that drive a SchedulingQueue (like upstream's ``queue/testing.go``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduling_queue.scheduling_queue import SchedulingQueue
from scheduling_queue.types import Pod, QueuedPodInfo, QueueingHint


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    priority: int | None = None,
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    scheduling_gates: Sequence[str] = (),
    requests: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    node_name: str = "",
    nominated_node_name: str = "",
    scheduler_name: str = "py-scheduler",
    resource_version: str = "1",
) -> dict[str, Any]:
    """A raw pod dict as the informers deliver it, with just the fields the queue reads."""
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": dict(requests or {})}}],
    }
    if priority is not None:
        spec["priority"] = priority
    if scheduling_gates:
        spec["schedulingGates"] = [{"name": g} for g in scheduling_gates]
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if node_name:
        spec["nodeName"] = node_name
    status: dict[str, Any] = {"phase": "Pending"}
    if nominated_node_name:
        status["nominatedNodeName"] = nominated_node_name
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace}-{name}",
            "resourceVersion": resource_version,
            "labels": dict(labels or {}),
        },
        "spec": spec,
        "status": status,
    }


def with_changes(pod: Pod, **changes: Any) -> dict[str, Any]:
    """A copy of ``pod`` with top-level sections merged: ``with_changes(p, spec={"priority": 5})``.

    The resourceVersion is bumped, as the API server would.
    """
    out: dict[str, Any] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in pod.items()}
    for section, values in changes.items():
        merged = dict(out.get(section) or {})
        merged.update(values)
        out[section] = merged
    meta = dict(out.get("metadata") or {})
    meta["resourceVersion"] = str(int(meta.get("resourceVersion") or "0") + 1)
    out["metadata"] = meta
    return out


def queue_always(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.Queue


def skip_always(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.Skip


async def wait_until(cond: Callable[[], bool], timeout: float = 2.0) -> None:
    """Yield to the loop until ``cond()`` holds; raise TimeoutError after ``timeout`` real seconds."""
    async with asyncio.timeout(timeout):
        # Polling is the point: the conditions are arbitrary queue states, not events to await.
        while not cond():  # noqa: ASYNC110
            await asyncio.sleep(0)


def pop(q: SchedulingQueue) -> QueuedPodInfo:
    """The next pod, which must be there (tests drive the queue without awaiting)."""
    qpi = q.pop_nowait()
    assert qpi is not None
    return qpi


def fail(q: SchedulingQueue, qpi: QueuedPodInfo, *plugins: str, pending: tuple[str, ...] = ()) -> None:
    """End an attempt as the scheduler does when ``plugins`` rejected the pod (none: an error)."""
    qpi.unschedulable_plugins = set(plugins)
    qpi.pending_plugins = set(pending)
    q.add_unschedulable_if_not_present(qpi)
