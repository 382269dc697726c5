"""Pods nominated to nodes by preemption, by node (upstream's ``nominator.go``).

The scheduler's Filter treats nominated pods of higher or equal priority as already running on their
node, so a preemptor's freed space is not handed to someone else while victims terminate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduling_queue.types import Pod, pod_key


def _ident(pod: Pod) -> str:
    uid = (pod.get("metadata") or {}).get("uid")
    return uid if isinstance(uid, str) and uid else pod_key(pod)


def _nominated_node_name(pod: Pod) -> str:
    status: Mapping[str, Any] = pod.get("status") or {}
    name = status.get("nominatedNodeName")
    return name if isinstance(name, str) else ""


class Nominator:
    """node name -> nominated pods; each pod is nominated to at most one node."""

    __slots__ = ("_by_node", "_changes", "_node_versions", "_pod_to_node", "_withdrawn", "node_versions")

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, Pod]] = {}
        self._pod_to_node: dict[str, str] = {}
        # Pod -> a node the scheduler published for it and then took back (see withdraw()).
        self._withdrawn: dict[str, str] = {}
        # Counts every change; a node's version is the count at its last change, so versions never repeat.
        self._changes = 0
        # Per node, the version of its last change: a reader keeps what it derived from one node's
        # nominations while other nodes' change (each preemption changes one node).
        self._node_versions: dict[str, int] = {}
        # A read-only view of the same dict, never rebound: a reader asking per node per cycle looks
        # the version up without a call (node_version's answer, 0 for a node never nominated to).
        self.node_versions: Mapping[str, int] = self._node_versions

    def __len__(self) -> int:
        return len(self._pod_to_node)

    def add_nominated_pod(self, pod: Pod, node_name: str | None = None) -> None:
        """Nominate ``pod`` to ``node_name``.

        ``None`` keeps whatever ``status.nominatedNodeName`` says (upstream's ModeNoop); ``""`` clears
        the nomination (ModeOverride with an empty name). Bound pods are never nominated.
        """
        self.delete_nominated_pod_if_exists(pod)
        node = _nominated_node_name(pod) if node_name is None else node_name
        if not node or (pod.get("spec") or {}).get("nodeName"):
            return
        ident = _ident(pod)
        if node_name is None:
            if self._withdrawn.get(ident) == node:
                return  # the echo of a nomination taken back since
        else:
            self._withdrawn.pop(ident, None)  # the scheduler nominates it anew
        self._pod_to_node[ident] = node
        self._by_node.setdefault(node, {})[ident] = pod
        self._changes += 1
        self._node_versions[node] = self._changes

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        ident = _ident(pod)
        node = self._pod_to_node.pop(ident, None)
        if node is None:
            return
        self._changes += 1
        self._node_versions[node] = self._changes
        pods = self._by_node.get(node)
        if pods is not None:
            pods.pop(ident, None)
            if not pods:
                del self._by_node[node]

    def update_nominated_pod(self, old: Pod, new: Pod) -> None:
        """Swap in the new pod version, keeping an in-memory nomination the update doesn't mention.

        An update that carries no nominatedNodeName can arrive right after preemption reserved a node
        in memory but before the status patch landed; dropping the reservation then would be wrong.
        """
        ident = _ident(old)
        withdrawn = self._withdrawn.get(ident)
        if withdrawn is not None and _nominated_node_name(new) != withdrawn:
            del self._withdrawn[ident]  # the pod moved on (our clearing patch landed, or a new nomination)
        if ident not in self._pod_to_node and not _nominated_node_name(new):
            return
        keep: str | None = None
        if not _nominated_node_name(old) and not _nominated_node_name(new):
            keep = self._pod_to_node.get(ident)
        self.delete_nominated_pod_if_exists(old)
        self.add_nominated_pod(new, keep)

    def withdraw(self, pod: Pod, node_name: str) -> None:
        """The scheduler published ``status.nominatedNodeName`` = ``node_name`` for ``pod`` and took it
        back (a pod rejected while waiting at Permit): no nomination now, and the update that shows the
        published value, which may arrive after the rejection (the writes are asynchronous), does not
        bring it back. A later update showing any other value, or a new nomination, ends this."""
        self.delete_nominated_pod_if_exists(pod)
        self._withdrawn[_ident(pod)] = node_name

    def forget(self, pod: Pod) -> None:
        """The pod is gone: drop everything kept about it."""
        self.delete_nominated_pod_if_exists(pod)
        self._withdrawn.pop(_ident(pod), None)

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        pods = self._by_node.get(node_name)
        return list(pods.values()) if pods else []

    @property
    def version(self) -> int:
        """Changes with every change to any node's nominations (versions never repeat)."""
        return self._changes

    def node_version(self, node_name: str) -> int:
        """The version of the last change to ``node_name``'s nominations (0: never nominated to)."""
        return self._node_versions.get(node_name, 0)

    def node_names(self) -> list[str]:
        """The nodes with at least one nominated pod."""
        return list(self._by_node)

    def nominated_node_for(self, pod: Pod) -> str:
        """The node ``pod`` is nominated to, or ``""``."""
        return self._pod_to_node.get(_ident(pod), "")
