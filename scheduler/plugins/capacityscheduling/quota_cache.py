"""The live quota cache of CapacityScheduling: ElasticQuotas and what the assigned pods of their
namespaces use (scheduler-plugins v0.34.7 ``capacity_scheduling.go``: addElasticQuota, updateElasticQuota,
deleteElasticQuota, addPod, updatePod, deletePod).

Fed on the event loop by the ElasticQuota and pod listers' events (pods only while assigned: an update
that binds a pod arrives as an add, as upstream's FilteringResourceEventHandler turns it), and by
Reserve/Unreserve for assumed pods. One deliberate difference: when a quota appears, the pods of its
namespace that are already assigned are counted (upstream counts only pods assigned after it, so a
quota created beside running pods starts at zero until the scheduler restarts).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler.framework.listers import KubeObject
from scheduler.framework.objects import namespace_of, pod_spec, pod_status, spec_of
from scheduler.plugins.capacityscheduling.elasticquota import (
    ElasticQuotaInfo,
    ElasticQuotaInfos,
    QuantityError,
    pod_key,
    pod_request,
    readable_quota,
)

log = logging.getLogger(__name__)

TERMINAL_PHASES = ("Succeeded", "Failed")


def assigned(pod: KubeObject) -> bool:
    """Upstream's ``assignedPod``: the pod has a node."""
    return bool(pod_spec(pod).get("nodeName"))


def quota_lists(eq: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    spec = spec_of(eq)
    try:
        return readable_quota(spec if isinstance(spec, Mapping) else {})
    except QuantityError as err:
        # The CRD's schema refuses unreadable quantities; should one get through, read it as empty.
        log.warning("ElasticQuota %s: %s", namespace_of(eq), err)
        return {}, {}


class QuotaCache:
    """Namespace -> ElasticQuotaInfo, current as of the last event (upstream's ``elasticQuotaInfos``)."""

    def __init__(self, pods_in_namespace: Callable[[str], Sequence[KubeObject]]) -> None:
        self.infos = ElasticQuotaInfos()
        self._pods_in_namespace = pods_in_namespace
        # Bumped on every change, so a caller can tell whether anything moved.
        self.version = 0

    # --- ElasticQuota events --------------------------------------------------------------------
    def add_quota(self, eq: KubeObject) -> None:
        namespace = namespace_of(eq)
        if namespace in self.infos:
            return
        min_list, max_list = quota_lists(eq)
        info = ElasticQuotaInfo(namespace, min_list, max_list)
        for pod in self._pods_in_namespace(namespace):
            if assigned(pod) and pod_status(pod).get("phase") not in TERMINAL_PHASES:
                info.add_pod_if_not_present(pod_key(pod), pod_request(pod))
        self.infos[namespace] = info
        self.version += 1

    def update_quota(self, old: KubeObject, new: KubeObject) -> None:
        min_list, max_list = quota_lists(new)
        info = ElasticQuotaInfo(namespace_of(new), min_list, max_list)
        previous = self.infos.get(namespace_of(old))
        if previous is not None:
            info.pods = previous.pods
            info.used = previous.used
        self.infos[namespace_of(new)] = info
        self.version += 1

    def delete_quota(self, eq: KubeObject) -> None:
        if self.infos.pop(namespace_of(eq), None) is not None:
            self.version += 1

    # --- assigned pod events --------------------------------------------------------------------
    def add_pod(self, pod: KubeObject) -> None:
        info = self.infos.get(namespace_of(pod))
        if info is not None:
            info.add_pod_if_not_present(pod_key(pod), pod_request(pod))
            self.version += 1

    def update_pod(self, old: KubeObject, new: KubeObject) -> None:
        if pod_status(old).get("phase") in TERMINAL_PHASES:
            return
        if pod_status(new).get("phase") not in ("Running", "Pending"):
            self.delete_pod(new)

    def delete_pod(self, pod: KubeObject) -> None:
        info = self.infos.get(namespace_of(pod))
        if info is not None and pod_key(pod) in info.pods:
            info.delete_pod_if_present(pod_key(pod), pod_request(pod))
            self.version += 1


class QuotaEvents:
    """ElasticQuota events into the cache."""

    def __init__(self, cache: QuotaCache) -> None:
        self._cache = cache

    def on_add(self, obj: KubeObject) -> None:
        self._cache.add_quota(obj)

    def on_update(self, old: KubeObject, new: KubeObject) -> None:
        self._cache.update_quota(old, new)

    def on_delete(self, obj: KubeObject) -> None:
        self._cache.delete_quota(obj)


class AssignedPodEvents:
    """Assigned pods' events into the cache."""

    def __init__(self, cache: QuotaCache) -> None:
        self._cache = cache

    def on_add(self, obj: KubeObject) -> None:
        self._cache.add_pod(obj)

    def on_update(self, old: KubeObject, new: KubeObject) -> None:
        self._cache.update_pod(old, new)

    def on_delete(self, obj: KubeObject) -> None:
        self._cache.delete_pod(obj)
