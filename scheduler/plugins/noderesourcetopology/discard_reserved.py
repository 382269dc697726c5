"""The discardReservedNodes cache of NodeResourceTopologyMatch (scheduler-plugins v0.34.7
``pkg/noderesourcetopology/cache/discardreserved.go``): a node with a pod reserved on it and not yet
bound is not trusted ("invalid node topology data" in Filter, 0 in Score) until the pod is bound or
unreserved; otherwise the node's last published object is read, as the passthrough cache does.
"""

from __future__ import annotations


class DiscardReservedCache:
    def __init__(self) -> None:
        # node -> uids of the pods reserved there and not yet bound.
        self._reserved: dict[str, set[str]] = {}

    def is_reserved(self, node_name: str) -> bool:
        return bool(self._reserved.get(node_name))

    def reserved(self, node_name: str) -> tuple[str, ...]:
        return tuple(sorted(self._reserved.get(node_name, ())))

    def reserve(self, node_name: str, pod_uid: str) -> None:
        self._reserved.setdefault(node_name, set()).add(pod_uid)

    def release(self, node_name: str, pod_uid: str) -> None:
        """Unreserve and PostBind."""
        self._reserved.get(node_name, set()).discard(pod_uid)
