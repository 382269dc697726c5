"""An LRU of parsed pods keyed by (uid, resourceVersion), so each pod version is parsed once.

The same pod version reaches the scheduler several times: the queue sees it while pending, the cache
sees it once it is bound, a relist replays it. Parsing requests, ports and the rest costs far more than
a dict lookup, so every consumer goes through one shared ``PodInfoCache``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from scheduler.framework.objects import object_meta, pod_spec
from scheduler.framework.resources import has_status_resources
from scheduler.framework.types import PodInfo, PodSpecError

DEFAULT_MAX_SIZE = 16384

_Key = tuple[str, str]


class PodInfoCache:
    """``get(pod)`` returns the PodInfo of that pod version, parsing it only on the first call.

    A version that fails to parse is remembered too: the same PodSpecError is raised again without
    re-parsing. Pods without a uid or resourceVersion (hand-built test objects) are never cached,
    because their key would not identify one version.
    """

    __slots__ = ("_entries", "_max_size", "hits", "misses", "successors")

    def __init__(self, max_size: int = DEFAULT_MAX_SIZE) -> None:
        # Least recently used first. An OrderedDict rather than cachetools' LRUCache: every pod version
        # passes here on the loop thread (pending, bound, relisted), and its C move_to_end/popitem cost
        # a fraction of LRUCache's Python-level bookkeeping per lookup and insert.
        self._entries: OrderedDict[_Key, PodInfo | str] = OrderedDict()
        self._max_size = max_size
        self.hits = 0
        self.misses = 0
        # Misses answered from the previous version's PodInfo.
        self.successors = 0

    def get(
        self, pod: Mapping[str, Any], previous: PodInfo | None = None, *, compared: bool = False
    ) -> PodInfo:
        """``previous``: the PodInfo of an earlier version of this pod, if the caller has it; a new
        version whose parsed facts cannot differ reuses it (``PodInfo.successor``) instead of parsing.
        ``compared``: the caller found ``pod`` equal to ``previous.pod`` but for what no snapshot reader
        reads (``_compared_successor``)."""
        meta = object_meta(pod)
        uid = meta.get("uid") or ""
        resource_version = meta.get("resourceVersion") or ""
        if not uid or not resource_version:
            self.misses += 1
            return PodInfo(pod)
        key = (uid, resource_version)
        entries = self._entries
        entry = entries.get(key)
        if entry is None:
            self.misses += 1
            if previous is not None:
                successor = (
                    _compared_successor(pod, previous, resource_version)
                    if compared
                    else previous.successor(pod)
                )
                if successor is not None:
                    self.successors += 1
                    self._insert(key, successor)
                    return successor
            try:
                info = PodInfo(pod)
            except PodSpecError as err:
                self._insert(key, str(err))
                raise
            self._insert(key, info)
            return info
        entries.move_to_end(key)
        self.hits += 1
        if isinstance(entry, str):
            raise PodSpecError(entry)
        return entry

    def forget(self, info: PodInfo) -> None:
        """Drops the entry of ``info``'s version (``info`` or a copy of it, such as the assumed one):
        a pod version no caller will ask for again, such as the pending version of a pod now bound,
        would otherwise keep its whole object alive until the LRU pushes it out, for the collector to
        scan again and again. Asked for after all, it is parsed again."""
        self._entries.pop((info.uid, info.resource_version), None)

    def _insert(self, key: _Key, entry: PodInfo | str) -> None:
        entries = self._entries
        entries[key] = entry
        if len(entries) > self._max_size:
            entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


def _compared_successor(pod: Mapping[str, Any], previous: PodInfo, resource_version: str) -> PodInfo | None:
    """``previous.successor(pod)`` for a ``pod`` its caller found equal to ``previous.pod`` but for what
    ``same_but_unread`` (``scheduler/cache/echo.py``) ignores: the uid, spec, labels, annotations and
    status but the PodScheduled condition are equal, so of ``successor``'s comparisons only the
    status-resources check is left, and it reads the same in both versions."""
    if has_status_resources(previous.pod):
        return None
    return previous._copy_for(pod, pod_spec(pod), resource_version)
