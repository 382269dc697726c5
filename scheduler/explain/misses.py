"""Nearest misses: the nodes a pending pod failed by exactly one Filter plugin, and what is short.

Filter stops at a node's first failing plugin, so after a failed cycle we know one reason per node,
not whether it was the only one. For a bounded number of rejected nodes we run the remaining Filter
plugins again (on the cycle's own CycleState, so PreFilter's precomputations are reused). Only on
failure, and bounded, so the happy path pays nothing.

The texts say what is short in the user's terms: ``Insufficient cpu (requests 2, free 1.5)``,
``untolerated taint gpu=true:NoSchedule``, ``would exceed maxSkew 1 (zone-a has 4, zone-b 5)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from itertools import islice

from scheduler.cache.snapshot import Snapshot
from scheduler.explain.record import Miss
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import FilterPlugin
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper.taints import find_untolerated_taint, pod_tolerations, taint_fields
from scheduler.plugins.noderesources.fit import REASON_TOO_MANY_PODS
from scheduler.plugins.noderesourcetopology import misfit_detail
from scheduler.plugins.podtopologyspread.plugin import describe_skew

log = logging.getLogger(__name__)

# Rejected nodes whose other Filter plugins are re-run after a failed cycle.
PROBE_LIMIT = 64
# Nearest misses kept per attempt, and named in the FailedScheduling event.
KEEP = 5
EVENT_MISSES = 2

Describer = Callable[[Status, PodInfo, NodeInfo, CycleState], str]


def nearest_misses(
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    snapshot: Snapshot,
    node_to_status: Mapping[str, Status],
    *,
    probe_limit: int = PROBE_LIMIT,
    keep: int = KEEP,
) -> tuple[list[Miss], int]:
    """(misses, nodes probed). Resolvable rejections are probed first: a node rejected as
    UnschedulableAndUnresolvable (a missing label, a cordon) is rarely the one a user can fix by
    freeing room."""
    # Not part of the cycle: untimed, so the plugin metrics count only the cycle's own calls.
    plugins = fwk.filter_plugins_for(state, timed=False)
    candidates = sorted(
        islice(node_to_status.items(), probe_limit * 4),
        key=lambda item: item[1].code is not Code.Unschedulable,
    )[:probe_limit]
    misses: list[Miss] = []
    for node_name, status in candidates:
        node = snapshot.get(node_name)
        if node is None:
            continue
        if _fails_another(plugins, status.plugin, state, pod, node):
            continue
        misses.append(Miss(node_name, status.plugin, describe(status, pod, node, state)))
        if len(misses) >= keep:
            break
    return misses, len(candidates)


def _fails_another(
    plugins: Sequence[FilterPlugin], failed: str, state: CycleState, pod: PodInfo, node: NodeInfo
) -> bool:
    for plugin in plugins:
        name = plugin.name
        if name == failed:
            continue
        try:
            verdict = plugin.filter(state, pod, node)
        except Exception:
            log.debug("re-running Filter %s on %s for nearest misses failed", name, node.name, exc_info=True)
            return True
        if verdict is not None and verdict.code is not Code.Success:
            return True
    return False


def describe(status: Status, pod: PodInfo, node: NodeInfo, state: CycleState) -> str:
    """One rejection in the user's terms; the plugin's own reasons when we know no better."""
    describer = _DESCRIBERS.get(status.plugin)
    if describer is not None:
        try:
            text = describer(status, pod, node, state)
        except Exception:  # a detail must never cost the record
            log.debug("describing a %s rejection failed", status.plugin, exc_info=True)
            text = ""
        if text:
            return text
    return status.message() or status.code.name


def gist(misses: list[Miss], limit: int = EVENT_MISSES) -> str:
    """The one line appended to the FailedScheduling event."""
    if not misses:
        return ""
    shown = "; ".join(m.text() for m in misses[:limit])
    more = f" (+{len(misses) - limit} more)" if len(misses) > limit else ""
    return f"Nearest misses: {shown}{more}."


# --- per plugin -------------------------------------------------------------------------------------


def format_cpu(milli: int) -> str:
    if milli % 1000 == 0:
        return str(milli // 1000)
    if milli % 100 == 0 or milli > 1000:
        return f"{milli / 1000:g}"
    return f"{milli}m"


def format_bytes(amount: int) -> str:
    for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if amount >= size:
            value = amount / size
            return f"{value:.0f}{unit}" if value == int(value) else f"{value:.1f}{unit}"
    return str(amount)


def _resources(status: Status, pod: PodInfo, node: NodeInfo, state: CycleState) -> str:
    want, alloc, used = pod.requests, node.allocatable, node.requested
    parts: list[str] = []
    for reason in status.reasons:
        if reason == "Insufficient cpu":
            free = alloc.milli_cpu - used.milli_cpu
            parts.append(f"{reason} (requests {format_cpu(want.milli_cpu)}, free {format_cpu(free)})")
        elif reason == "Insufficient memory":
            free = alloc.memory - used.memory
            parts.append(f"{reason} (requests {format_bytes(want.memory)}, free {format_bytes(free)})")
        elif reason == "Insufficient ephemeral-storage":
            free = alloc.ephemeral_storage - used.ephemeral_storage
            wanted = format_bytes(want.ephemeral_storage)
            parts.append(f"{reason} (requests {wanted}, free {format_bytes(free)})")
        elif reason == REASON_TOO_MANY_PODS:
            parts.append(f"{reason} ({len(node.pods)} of {alloc.allowed_pod_number} pods)")
        elif reason.startswith("Insufficient "):
            name = reason.removeprefix("Insufficient ")
            free = alloc.scalar.get(name, 0) - used.scalar.get(name, 0)
            parts.append(f"{reason} (requests {want.scalar.get(name, 0)}, free {free})")
        else:
            parts.append(reason)
    return ", ".join(parts)


def _taints(status: Status, pod: PodInfo, node: NodeInfo, state: CycleState) -> str:
    taint = find_untolerated_taint(node.taints, pod_tolerations(pod))
    if taint is None:
        return ""
    key, value, effect = taint_fields(taint)
    return f"untolerated taint {key}={value}:{effect}" if value else f"untolerated taint {key}:{effect}"


def _spread(status: Status, pod: PodInfo, node: NodeInfo, state: CycleState) -> str:
    return describe_skew(state, node)


def _affinity(status: Status, pod: PodInfo, node: NodeInfo, state: CycleState) -> str:
    selector = pod.spec.get("nodeSelector") or {}
    labels = node.labels
    wrong = [
        f"{key}={want} (node has {labels[key]!r})" if key in labels else f"{key}={want} (node has no {key})"
        for key, want in selector.items()
        if labels.get(key) != want
    ]
    if wrong:
        return "nodeSelector " + ", ".join(wrong)
    return status.message()


def _unschedulable(status: Status, pod: PodInfo, node: NodeInfo, state: CycleState) -> str:
    return "node is cordoned (spec.unschedulable)"


def _ports(status: Status, pod: PodInfo, node: NodeInfo, state: CycleState) -> str:
    wanted = sorted({f"{p.port}/{p.protocol}" for p in pod.host_ports if p in node.used_ports})
    return f"host port(s) {', '.join(wanted)} already in use" if wanted else ""


def _numa(status: Status, pod: PodInfo, node: NodeInfo, state: CycleState) -> str:
    """NodeResourceTopologyMatch: which container (or the pod) and resource fit no single NUMA node,
    and what each NUMA node has."""
    detail = misfit_detail(state, node.name)
    return f"{status.message()}: {detail}" if detail else ""


_DESCRIBERS: dict[str, Describer] = {
    names.NODE_RESOURCES_FIT: _resources,
    names.TAINT_TOLERATION: _taints,
    names.POD_TOPOLOGY_SPREAD: _spread,
    names.NODE_AFFINITY: _affinity,
    names.NODE_UNSCHEDULABLE: _unschedulable,
    names.NODE_PORTS: _ports,
    names.NODE_RESOURCE_TOPOLOGY_MATCH: _numa,
}
