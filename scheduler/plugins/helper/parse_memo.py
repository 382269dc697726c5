"""Parsed forms of pod spec fragments, shared by every pod that carries an equal fragment.

Plugins parse a pod's constraints once per pod version (``PodInfo.derived``), but each pod of a
ReplicaSet is a new pod with the same constraints: parsing them is most of what a PreFilter costs for
such pods. A fragment's canonical JSON (sorted keys, a fraction of a microsecond with orjson) is the
key; what parsing also reads of the pod (its namespace, its labels) goes into the key as well. Parsed
values must be immutable, since pods share them. A fragment that raises is parsed again each time.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import orjson
from cachetools import LRUCache

T = TypeVar("T")


class ParseMemo(Generic[T]):
    """An LRU of ``build()`` results by (``context``, canonical JSON of ``fragment``)."""

    def __init__(self, maxsize: int = 4096) -> None:
        self._cache: LRUCache[tuple[Hashable, bytes], T] = LRUCache(maxsize=maxsize)

    def get(self, context: Hashable, fragment: Any, build: Callable[[], T]) -> T:
        try:
            key = (context, orjson.dumps(fragment, option=orjson.OPT_SORT_KEYS))
        except (orjson.JSONEncodeError, TypeError):
            return build()
        try:
            return self._cache[key]
        except KeyError:
            pass
        value = self._cache[key] = build()
        return value
