"""Node columns shared by the resource plugins (NodeResourcesFit, NodeResourcesBalancedAllocation).

Declared once here, so both plugins hand the framework the same spec objects and each column is kept
once however many of them are enabled.
"""

from __future__ import annotations

import numpy as np

from scheduler.framework.columns import NodeColumn

_PREFIX = "noderesources/"

# The node's allocatable amounts: Node object facts, kept as they are when only the node's pods change.
ALLOCATABLE_CPU = NodeColumn(
    _PREFIX + "allocatable.cpu", np.int64, lambda info: info.allocatable.milli_cpu, reads_pods=False
)
ALLOCATABLE_MEMORY = NodeColumn(
    _PREFIX + "allocatable.memory", np.int64, lambda info: info.allocatable.memory, reads_pods=False
)
ALLOCATABLE_EPHEMERAL = NodeColumn(
    _PREFIX + "allocatable.ephemeral-storage",
    np.int64,
    lambda info: info.allocatable.ephemeral_storage,
    reads_pods=False,
)
ALLOCATABLE_PODS = NodeColumn(
    _PREFIX + "allocatable.pods", np.int64, lambda info: info.allocatable.allowed_pod_number, reads_pods=False
)
# Plain requests of the pods on the node, assumed ones included.
REQUESTED_CPU = NodeColumn(
    _PREFIX + "requested.cpu", np.int64, lambda info: info.requested.milli_cpu, reads_pods=True
)
REQUESTED_MEMORY = NodeColumn(
    _PREFIX + "requested.memory", np.int64, lambda info: info.requested.memory, reads_pods=True
)
REQUESTED_EPHEMERAL = NodeColumn(
    _PREFIX + "requested.ephemeral-storage",
    np.int64,
    lambda info: info.requested.ephemeral_storage,
    reads_pods=True,
)
# Non-zero requests: 100m / 200Mi for containers that request none (scoring only).
NON_ZERO_CPU = NodeColumn(
    _PREFIX + "non-zero-requested.cpu",
    np.int64,
    lambda info: info.non_zero_requested.milli_cpu,
    reads_pods=True,
)
NON_ZERO_MEMORY = NodeColumn(
    _PREFIX + "non-zero-requested.memory",
    np.int64,
    lambda info: info.non_zero_requested.memory,
    reads_pods=True,
)
NUM_PODS = NodeColumn(_PREFIX + "pods", np.int64, lambda info: len(info.pods), reads_pods=True)
# Room left (allocatable minus plain requests; negative when overcommitted): the Filter's common case,
# every node of the window fitting, is then one comparison per resource instead of a subtraction too.
FREE_CPU = NodeColumn(
    _PREFIX + "free.cpu",
    np.int64,
    lambda info: info.allocatable.milli_cpu - info.requested.milli_cpu,
    reads_pods=True,
)
FREE_MEMORY = NodeColumn(
    _PREFIX + "free.memory",
    np.int64,
    lambda info: info.allocatable.memory - info.requested.memory,
    reads_pods=True,
)
FREE_EPHEMERAL = NodeColumn(
    _PREFIX + "free.ephemeral-storage",
    np.int64,
    lambda info: info.allocatable.ephemeral_storage - info.requested.ephemeral_storage,
    reads_pods=True,
)
FREE_PODS = NodeColumn(
    _PREFIX + "free.pods",
    np.int64,
    lambda info: info.allocatable.allowed_pod_number - len(info.pods),
    reads_pods=True,
)
