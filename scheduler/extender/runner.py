"""Where extenders run in a scheduling attempt (``schedule_one.go``): after the Filter plugins
(``findNodesThatPassExtenders``), beside the Score plugins (``prioritizeNodes``), in place of the Bind
plugins (``extendersBinding``), and for preemption (``callExtenders`` in ``preemption.go``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.config.errors import ErrorList, FieldPath
from scheduler.config.types import ExtenderConfig
from scheduler.extender.client import ExtenderTLSError, HTTPExtender
from scheduler.extender.wire import MAX_EXTENDER_PRIORITY, WireError
from scheduler.framework.columns import IntArray
from scheduler.framework.extender import ExtenderError, Victims
from scheduler.framework.objects import object_meta
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo

log = logging.getLogger(__name__)

# Upstream framework.ExtenderName: the pseudo plugin put in a pod's unschedulable plugins when an
# extender filtered nodes out. It is registered for every cluster event, so any change retries the pod.
EXTENDER_NAME = "Extender"
MAX_NODE_SCORE = 100
# Integer division, as Go's constant expression fwk.MaxNodeScore / extenderv1.MaxExtenderPriority.
_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY

_CALL_ERRORS = (ExtenderError, WireError)


class ExtenderFilterError(Exception):
    """A non-ignorable extender failed at filter: the attempt fails with an error and backs off."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.status = Status.as_error(message)


class Extenders:
    """The configured extenders, shared by every profile as upstream's ``sched.Extenders``."""

    def __init__(self, extenders: Sequence[HTTPExtender]) -> None:
        # Upstream buildExtenders: ignorable extenders go to the tail, each group keeping its order.
        self.extenders: tuple[HTTPExtender, ...] = (
            *(e for e in extenders if not e.ignorable),
            *(e for e in extenders if e.ignorable),
        )
        self.has_filters = any(e.is_filter for e in self.extenders)
        self.has_prioritizers = any(e.is_prioritizer for e in self.extenders)
        self.has_binders = any(e.is_binder for e in self.extenders)

    @classmethod
    def from_config(cls, configs: Sequence[ExtenderConfig]) -> Extenders:
        """Raises ConfigError naming the setting when an extender's TLS files cannot be used."""
        extenders: list[HTTPExtender] = []
        errs = ErrorList()
        for i, config in enumerate(configs):
            try:
                extenders.append(HTTPExtender(config))
            except ExtenderTLSError as err:
                path = FieldPath("extenders").index(i).child("tlsConfig")
                errs.other(f"{path.child(err.field) if err.field else path}: {err}")
        errs.raise_if_any()
        return cls(extenders)

    def __bool__(self) -> bool:
        return bool(self.extenders)

    def __len__(self) -> int:
        return len(self.extenders)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        for e in self.extenders:
            e.bind_loop(loop)

    async def close(self) -> None:
        await asyncio.gather(*(e.close() for e in self.extenders), return_exceptions=True)

    # --- filter -------------------------------------------------------------------------------------
    async def find_nodes_that_pass(
        self, pod: PodInfo, feasible: Sequence[NodeInfo], node_to_status: dict[str, Any]
    ) -> Sequence[NodeInfo]:
        """Each interested filter narrows the list in turn. Failed nodes' reasons go to
        ``node_to_status`` (failedAndUnresolvableNodes wins over failedNodes)."""
        for ext in self.extenders:
            if not feasible:
                break
            if not ext.is_filter or not ext.is_interested(pod):
                continue
            try:
                result = await ext.filter(pod, feasible)
                passed = _resolve(ext, result.node_names, result.nodes, feasible)
            except _CALL_ERRORS as err:
                if ext.ignorable:
                    log.info(
                        "skipping extender %s as it returned error and has ignorable flag set: %s",
                        ext.name,
                        err,
                    )
                    continue
                raise ExtenderFilterError(str(err)) from err
            unresolvable = result.failed_and_unresolvable_nodes
            for name, message in unresolvable.items():
                node_to_status[name] = Status(Code.UnschedulableAndUnresolvable, [message])
            for name, message in result.failed_nodes.items():
                if name not in unresolvable:
                    node_to_status[name] = Status(Code.Unschedulable, [message])
            feasible = passed
        return feasible

    # --- prioritize ---------------------------------------------------------------------------------
    async def prioritize(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> IntArray | None:
        """The extenders' weighted scores per node (aligned with ``nodes``), scaled from 0..10 to the
        framework's 0..100; None when no extender scored. Errors are ignored, as upstream: the other
        scores decide."""
        prioritizers = [e for e in self.extenders if e.is_prioritizer and e.is_interested(pod)]
        if not prioritizers:
            return None
        answers = await asyncio.gather(
            *(e.prioritize(pod, nodes) for e in prioritizers), return_exceptions=True
        )
        index = {n.name: i for i, n in enumerate(nodes)}
        totals: IntArray = np.zeros(len(nodes), dtype=np.int64)
        scored = False
        for ext, answer in zip(prioritizers, answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, _CALL_ERRORS):
                    raise answer
                log.debug(
                    "extender %s failed to prioritize %s, no score given: %s", ext.name, pod.key, answer
                )
                continue
            for hp in answer:
                i = index.get(hp.host)
                if i is not None:
                    totals[i] += hp.score * ext.weight * _SCALE
                    scored = True
        return totals if scored else None

    # --- bind ---------------------------------------------------------------------------------------
    def bind(self, pod: PodInfo, node_name: str) -> tuple[bool, Status | None]:
        """Upstream ``extendersBinding``, on a binding thread: (handled, status). An ignorable binder's
        error falls through to the next binder, then to the Bind plugins."""
        for ext in self.extenders:
            if not ext.is_binder or not ext.is_interested(pod):
                continue
            try:
                ext.bind_blocking(pod.name, pod.namespace, pod.uid, node_name)
            except _CALL_ERRORS as err:
                if ext.ignorable:
                    log.info(
                        "skipping extender %s in bind as it returned error and has ignorable flag set: %s",
                        ext.name,
                        err,
                    )
                    continue
                return True, Status.as_error(str(err))
            return True, None
        return False, None

    # --- preempt ------------------------------------------------------------------------------------
    def preempts_for(self, pod: PodInfo) -> bool:
        """Whether preemption for ``pod`` has an extender to ask (one with a preemptVerb interested in it)."""
        return any(ext.supports_preemption and ext.is_interested(pod) for ext in self.extenders)

    async def process_preemption(
        self,
        pod: PodInfo,
        victims: Mapping[str, Victims],
        pods_on_node: Callable[[str], Iterable[Mapping[str, Any]] | None],
    ) -> dict[str, Victims]:
        """Upstream ``callExtenders`` for DefaultPreemption: each interested preempting extender may
        drop candidate nodes or change their victims. ``pods_on_node(name)`` gives a snapshot node's
        pods (None for an unknown node). Raises ExtenderError when a non-ignorable extender fails."""
        current = dict(victims)
        if not current:
            return current
        for ext in self.extenders:
            if not ext.supports_preemption or not ext.is_interested(pod):
                continue
            try:
                meta = await ext.process_preemption(pod, current)
                answer = _convert_to_victims(ext, meta, pods_on_node)
            except _CALL_ERRORS as err:
                if ext.ignorable:
                    log.info(
                        "skipped extender %s as it returned error and has ignorable flag set: %s",
                        ext.name,
                        err,
                    )
                    continue
                raise ExtenderError(str(err)) from err
            for node_name, v in list(answer.items()):
                if not v.pods:
                    if ext.ignorable:
                        del answer[node_name]
                        continue
                    raise ExtenderError(f'expected at least one victim pod on node "{node_name}"')
            current = answer
            if not current:
                break
        return current


def _resolve(
    ext: HTTPExtender, node_names: list[str] | None, nodes: list[str] | None, feasible: Sequence[NodeInfo]
) -> list[NodeInfo]:
    """The filter's answer as our NodeInfos. Upstream rebuilds bare NodeInfos from a returned NodeList
    (losing their pods for scoring) and accepts nodes it never sent; we map both forms back to the
    snapshot and refuse unknown names the way upstream refuses them for nodeCacheCapable extenders."""
    names = node_names if ext.config.node_cache_capable and node_names is not None else nodes
    if names is None:
        return []
    by_name = {n.name: n for n in feasible}
    out = []
    for name in names:
        node = by_name.get(name)
        if node is None:
            raise ExtenderError(
                f'extender "{ext.name}" claims a filtered node "{name}" '
                "which is not found in the input node list"
            )
        out.append(node)
    return out


def _convert_to_victims(
    ext: HTTPExtender,
    meta: Mapping[str, Any],
    pods_on_node: Callable[[str], Iterable[Mapping[str, Any]] | None],
) -> dict[str, Victims]:
    """Upstream ``convertToVictims``: UIDs back to the pods on that node of the snapshot."""
    out: dict[str, Victims] = {}
    for node_name, mv in meta.items():
        pods = pods_on_node(node_name)
        if pods is None:
            raise ExtenderError(f'nodeinfo not found for node name "{node_name}"')
        by_uid = {str(object_meta(p).get("uid") or ""): p for p in pods}
        chosen = []
        for uid in mv.uids:
            pod = by_uid.get(uid)
            if pod is None:
                raise ExtenderError(
                    f"extender: {ext.name} claims to preempt pod (UID: {uid}) on node: {node_name}, "
                    "but the pod is not found on that node"
                )
            chosen.append(pod)
        out[node_name] = Victims(chosen, mv.num_pdb_violations)
    return out
