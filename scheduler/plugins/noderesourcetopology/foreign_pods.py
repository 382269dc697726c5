"""Foreign pods for the overreserve cache (scheduler-plugins v0.34.7
``pkg/noderesourcetopology/cache/foreign_pods.go``): a bound pod whose ``schedulerName`` is none of the
profiles that registered for detection was placed without this cache charging it, so its node's cached
view is unknown until resynced. With ``foreignPodsDetect: OnlyExclusiveResources`` only pods asking for
exclusive resources count.

As upstream, the registry is one per process: every profile running the overreserve cache with
detection on adds its name, and the mode is the last one set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.objects import pod_spec
from scheduler.framework.quantity import QuantityError
from scheduler.plugins.noderesourcetopology.exclusive import has_exclusive_resources
from scheduler.plugins.noderesourcetopology.requests import pod_requests


class ForeignPodsRegistry:
    def __init__(self) -> None:
        self.profile_names: set[str] = set()
        self.only_exclusive_resources = False

    def register(self, profile_name: str, mode: str) -> None:
        self.only_exclusive_resources = mode == "OnlyExclusiveResources"
        self.profile_names.add(profile_name)

    def is_foreign(self, pod: Mapping[str, Any]) -> bool:
        spec = pod_spec(pod)
        if not spec.get("nodeName"):
            return False
        if spec.get("schedulerName", "default-scheduler") in self.profile_names:
            return False
        if not self.only_exclusive_resources:
            return True
        try:
            return has_exclusive_resources(pod_requests(pod))
        except QuantityError:
            return False


PROCESS_REGISTRY = ForeignPodsRegistry()
