"""When a new version of a cached pod changes nothing the scheduler reads (the bind's echo).

Once a pod is assumed, the informer shows it again when the Binding lands: the same pod with
``spec.nodeName`` set (the assumed copy already had it), ``PodScheduled=True`` among its conditions and
a new ``resourceVersion``. Replacing the assumed version by that one the ordinary way (remove, add)
changes the node's generation, so the next snapshot update clones the node again and recomputes its
node columns, and batching judges the row again, all for a change nothing reads.

``same_but_unread`` decides, conservatively, that the two versions are the same pod for every reader
of a snapshot: the whole object is compared, and only these may differ:

- ``metadata.resourceVersion`` and ``metadata.managedFields``: no plugin, preemption step or explain
  view reads a snapshot pod's resourceVersion (victims are deleted by name with a uid precondition,
  their status patched by name), and managedFields are dropped by the informer anyway;
- the ``PodScheduled`` condition: nothing reads it off an assigned pod (preemption reads the
  ``DisruptionTarget`` condition, resource fitting the ``PodResizePending`` one; both still compared).

Everything else must be equal: labels (InterPodAffinity, PodTopologySpread, PDBs, gangs), annotations,
ownerReferences, ``deletionTimestamp`` (preemption's terminating victims, PodTopologySpread), the
whole spec (requests, ports, volumes, claims, affinity, tolerations, priority), the whole status but
that one condition (``startTime`` orders victims, status resources, ``nominatedNodeName``, claim
statuses). A binding that also copies the node's topology labels (the PodTopologyLabels admission) is
therefore an ordinary update.

The cache also requires that the swap leaves every map in the order the ordinary path would give
(see ``SchedulerCache._swap_in_place``); this module only compares the objects.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

# Fields of metadata nothing reads off an assigned pod.
IGNORED_METADATA = frozenset({"resourceVersion", "managedFields"})
# The one condition type the Binding sets.
POD_SCHEDULED = "PodScheduled"
_CONDITIONS = frozenset({"conditions"})

_MISSING = object()


def same_but_unread(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``new``, a version of the pod ``old``, is the same pod on the same node for every reader
    of a snapshot, so the cache may hold ``new`` while a snapshot keeps ``old`` (uid, name and node
    are in the objects compared). Written for the common case, one call per bind's echo: equal keys,
    values compared before any key is looked up among the ignored ones."""
    if len(old) != len(new):
        return False
    for field, value in old.items():
        other = new.get(field, _MISSING)
        if other is value:
            continue
        if field == "metadata":
            if not _equal_except(value, other, IGNORED_METADATA):
                return False
        elif field == "status":
            if not _same_status(value, other):
                return False
        elif value != other:
            return False
    return True


def _same_status(old: Any, new: Any) -> bool:
    if not isinstance(old, dict) or not isinstance(new, dict):
        return bool(old == new)
    if not _equal_except(old, new, _CONDITIONS):
        return False
    # The echo of a pod never refused before adds the condition; a retried pod's flips it to True.
    conditions, other = old.get("conditions"), new.get("conditions")
    return conditions == other or _but_scheduled(conditions) == _but_scheduled(other)


def _but_scheduled(conditions: Any) -> list[Any]:
    return [c for c in conditions or () if not (isinstance(c, dict) and c.get("type") == POD_SCHEDULED)]


def _equal_except(old: Any, new: Any, ignored: Collection[str]) -> bool:
    """``old == new`` for two dicts but their ``ignored`` keys: ``new`` with ``old``'s ignored entries
    in place of its own, compared to ``old`` in one dict comparison (C code, where a loop over the
    keys would run one Python iteration per key on the echo's path)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return bool(old == new)
    patched = new.copy()
    for key in ignored:
        value = old.get(key, _MISSING)
        if value is _MISSING:
            patched.pop(key, None)
        else:
            patched[key] = value
    return patched == old
