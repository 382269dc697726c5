"""The scheduler cache (assigned and assumed pods per node) and the per-cycle Snapshot."""

from scheduler.cache.cache import CacheError, SchedulerCache, new_snapshot
from scheduler.cache.node_tree import NodeTree, zone_key
from scheduler.cache.pod_infos import PodInfoCache
from scheduler.cache.snapshot import Snapshot

__all__ = [
    "CacheError",
    "NodeTree",
    "PodInfoCache",
    "SchedulerCache",
    "Snapshot",
    "new_snapshot",
    "zone_key",
]
