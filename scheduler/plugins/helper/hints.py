"""Support for queueing hints: they see raw dicts, must be cheap, and must never raise."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from cachetools import LRUCache

from scheduler.cache.pod_infos import PodInfoCache
from scheduler.framework.objects import object_meta, pod_spec, pod_status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduling_queue.types import QueueingHint

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., QueueingHint])

# Hints run on the event loop for every pending pod an event might concern; the same pod version
# is asked about again and again, so its parsed form is kept.
_POD_INFOS = PodInfoCache(max_size=4096)
# One node event is judged for every pending pod: parse the node once per version, not once per pod.
_NODE_INFOS: LRUCache[tuple[str, str], NodeInfo] = LRUCache(maxsize=1024)


def safe_hint(fn: F) -> F:
    """Wraps a hint so that any failure answers Queue, as upstream does when a hint errors."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> QueueingHint:
        try:
            return fn(*args, **kwargs)
        except Exception:
            log.debug("queueing hint %s failed; queueing the pod", fn.__qualname__, exc_info=True)
            return QueueingHint.Queue

    return wrapper  # type: ignore[return-value]


def pod_info(pod: Mapping[str, Any]) -> PodInfo:
    """The parsed pod (cached by uid and resourceVersion). Raises PodSpecError."""
    return _POD_INFOS.get(pod)


def node_info(node: Mapping[str, Any]) -> NodeInfo:
    """A NodeInfo of the node alone, without pods: what upstream's hints build to judge a node.

    Shared between calls (cached by uid and resourceVersion): callers must not add pods to it.
    """
    meta = object_meta(node)
    uid, version = meta.get("uid") or "", meta.get("resourceVersion") or ""
    if not uid or not version:
        return NodeInfo(node)
    key = (uid, version)
    info = _NODE_INFOS.get(key)
    if info is None:
        info = _NODE_INFOS[key] = NodeInfo(node)
    return info


def uid_of(obj: Mapping[str, Any] | None) -> str:
    if not obj:
        return ""
    return str(object_meta(obj).get("uid") or "")


def is_assigned_or_nominated(pod: Mapping[str, Any]) -> bool:
    """Deleting such a pod may free room on a node (upstream checks nodeName and nominatedNodeName)."""
    spec = pod_spec(pod)
    status = pod_status(pod)
    return bool(spec.get("nodeName") or status.get("nominatedNodeName"))
