"""Plugin protocols, one per extension point (``pkg/scheduler/framework/interface.go``).

A plugin is any object with a ``name`` and the methods of the extension points it implements; the
framework detects them by method name. Methods run:

* on the scheduler's event loop, synchronously and without I/O: pre_enqueue, less, pre_filter, filter,
  post_filter, pre_score, score, normalize_score, reserve, unreserve, permit (a PostFilter plugin that
  must write hands the write to the framework: ``BlockingPostFilterPlugin``);
* in a binding thread, where blocking is allowed: pre_bind, bind, post_bind (and unreserve after a
  binding failure, marshalled back to the loop).

Returning ``None`` from a method that returns a Status means Success.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from scheduler.framework.columns import ColumnSpec
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.resources import Resource
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, NodeScore, PodInfo, PreFilterResult
from scheduling_queue.types import ClusterEventWithHint, QueuedPodInfo

if TYPE_CHECKING:
    from scheduler.framework.extender import Extenders
    from scheduler.framework.handle import Handle

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...


@runtime_checkable
class PreFilterExtensions(Protocol):
    """Optional, with ``pre_filter``: keep the PreFilter state right when a pod is added to or removed
    from a node in a what-if run (preemption's victims, nominated pods). Upstream's PreFilterExtensions.
    """

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...


@runtime_checkable
class AmountsFilterPlugin(FilterPlugin, Protocol):
    """A Filter whose verdict on a node depends on the pods there only through how many there are and
    the sum of their requests, and that never fails a node with fewer or smaller pods where it passed
    one with more (NodeResourcesFit). A preemption dry run then judges a node with victims taken off
    and nominated pods added by arithmetic, without copying the node (``scheduler.framework.trial``).
    """

    def amounts_filter(self, state: CycleState, pod: PodInfo) -> AmountsFilter:
        """``filter`` for this cycle's pod, as a function of the node and of what its pods request in
        sum and how many there are (asked once per node of a dry run, then per victim reprieved)."""
        ...


# (node, summed requests of its pods, how many pods) -> the Filter verdict; see AmountsFilterPlugin.
AmountsFilter = Callable[[NodeInfo, Resource, int], Status | None]


def filter_ignores_pods_on_node(plugin: object) -> bool:
    """Whether a Filter plugin promises that its verdict reads the Node object and the cycle state
    only, never the pods on the node (class attribute ``filter_ignores_pods_on_node = True``): a
    preemption dry run asks it once per node instead of once per victim reprieved."""
    return getattr(plugin, "filter_ignores_pods_on_node", False) is True


def sign_reads_spec_only(plugin: object) -> bool:
    """Whether a signing plugin promises (class attribute ``sign_reads_spec_only = True``) that its
    ``sign`` reads nothing but the pod's spec (requests included, as long as the pod's status reports no
    resources): two pods with equal specs then get equal parts, so the framework may reuse them."""
    return getattr(plugin, "sign_reads_spec_only", False) is True


def sign_splits_spec(plugin: object) -> bool:
    """Whether a signing plugin promises (class attribute ``sign_splits_spec = True``) that its part
    is computed in two steps: ``sign_spec(pod)``, reading nothing but the spec (as
    ``sign_reads_spec_only``), and ``sign_with(pod, spec_part)``, the rest; ``sign(pod)`` equals
    ``sign_with(pod, sign_spec(pod))`` (None from either: the pod cannot batch). The framework keeps
    the first step per spec, as it keeps the parts of the plugins that read the spec only."""
    return getattr(plugin, "sign_splits_spec", False) is True


def pre_state_from_signature(plugin: object) -> bool:
    """Whether a signing plugin promises (class attribute ``pre_state_from_signature = True``) that,
    for any pod it signs, its PreFilter and PreScore return and write to the CycleState only what the
    pod's signature determines: not the nodes passed in, nor any other cluster state. What it writes is
    then kept per signature and handed to the next pod of that signature as shallow copies (opportunistic
    batching), so a later phase may change a written value's attributes, but not containers it holds."""
    return getattr(plugin, "pre_state_from_signature", False) is True


@runtime_checkable
class SignPlugin(Plugin, Protocol):
    """Opportunistic batching (upstream's ``SignPlugin``): the part of a pod this plugin's PreFilter,
    Filter, PreScore and Score read, as a hashable value.

    Two pods whose parts are equal for every plugin of a profile must get the same Filter verdict and
    raw Score on any node in the same state, and a plugin's verdict on a node may depend only on that
    node (and on what the part itself captures). Return None when that cannot be promised for this
    pod (its answer depends on other pods' placement, on API objects a node generation does not
    track): batching is then off for the pod. A profile with any such plugin lacking ``sign`` never
    batches.
    """

    def sign(self, pod: PodInfo) -> Hashable | None: ...


@runtime_checkable
class BatchFilterPlugin(Plugin, Protocol):
    """Optional fast path: judge many nodes at once (e.g. vectorised); same answers as ``filter``."""

    def filter_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]: ...


@runtime_checkable
class ColumnarPlugin(Plugin, Protocol):
    """Optional, with the batch methods: the node columns they read (``scheduler.framework.columns``).

    Called once when the framework is built; the snapshot then keeps exactly the columns of the
    enabled plugins, and a plugin reads them from the NodeSubset it is given (``nodes.gather(spec)``).
    """

    def node_columns(self) -> Sequence[ColumnSpec]: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None]:
        """Returns the nominated node name (preemption) or None, and a status."""
        ...


@runtime_checkable
class ExtenderPostFilterPlugin(PostFilterPlugin, Protocol):
    """A PostFilter plugin that consults the extenders (DefaultPreemption: their preemptVerb). When an
    extender would be asked, the scheduler awaits this coroutine on the event loop instead of
    ``post_filter``; the HTTP calls are its only awaits."""

    async def post_filter_with_extenders(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status], extenders: Extenders
    ) -> tuple[str | None, Status | None]: ...


# The blocking part of a PostFilter plugin's answer: runs in a worker thread, returns what
# ``post_filter`` would (nominated node or None, status).
PostFilterCall = Callable[[], tuple[str | None, Status | None]]


@runtime_checkable
class BlockingPostFilterPlugin(PostFilterPlugin, Protocol):
    """A PostFilter plugin whose answer may need a blocking API call (DynamicResources: it deallocates a
    claim, a status write). The scheduling cycle calls ``post_filter_call`` instead of ``post_filter``.

    Without I/O it returns its result, as ``post_filter`` would. When it needs the write it decides
    everything on the loop and returns a ``PostFilterCall`` that only performs the write and returns
    the result. The framework runs that call in a worker thread and the cycle awaits it: the loop keeps
    serving watches, bindings and timers, the next pod waits (as upstream's scheduleOne does), and the
    plugins after it run once its result is folded in. The call must not touch core state (stores,
    cache, queue): the informer delivers what the write changed."""

    def post_filter_call(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None] | PostFilterCall: ...


# What an ``AwaitingPostFilterPlugin`` hands the cycle: a coroutine on the event loop that returns what
# ``post_filter`` would (nominated node or None, status).
PostFilterAwaitable = Coroutine[Any, Any, tuple[str | None, Status | None]]


@runtime_checkable
class AwaitingPostFilterPlugin(PostFilterPlugin, Protocol):
    """A PostFilter plugin whose answer may have to wait on the event loop for what one of the
    scheduler's components does (CapacityScheduling: the preemption Executor's synchronous preemption,
    whose writes run in the Executor's threads, and the informer showing them). The scheduling cycle
    calls ``post_filter_awaitable`` instead of ``post_filter``.

    Without waiting it returns its result, as ``post_filter`` would; otherwise it decides on the loop
    and returns a coroutine, which the cycle awaits as it awaits a ``BlockingPostFilterPlugin``'s call:
    the loop keeps serving watches, bindings and timers, the next pod waits (as upstream's scheduleOne
    does). Between its awaits the coroutine runs on the loop and may read core state."""

    def post_filter_awaitable(
        self, state: CycleState, pod: PodInfo, node_statuses: Mapping[str, Status]
    ) -> tuple[str | None, Status | None] | PostFilterAwaitable: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]: ...


@runtime_checkable
class BatchScorePlugin(Plugin, Protocol):
    """Optional fast path: score many nodes at once; same answers as ``score``."""

    def score_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Sequence[int] | npt.NDArray[np.int64]: ...


@runtime_checkable
class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None: ...


@runtime_checkable
class BatchScoreExtensions(Protocol):
    """Optional fast path of NormalizeScore: the scores of all nodes as one int64 numpy array, in node
    order; returns the normalised array, a new one: the input is not modified (decision records keep
    it as the raw scores). Same answers as ``normalize_score``."""

    def normalize_score_array(self, state: CycleState, pod: PodInfo, scores: Any) -> Any: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        """Status Wait with a timeout in seconds holds the pod until allowed, rejected or timed out."""
        ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...


@runtime_checkable
class PreBindPreFlightPlugin(Plugin, Protocol):
    """Optional for PreBind plugins (upstream's PreBindPreFlight): will PreBind do anything for this
    pod on this node? None (Success): yes; ``Status.skip()``: nothing to do; an error status: the
    binding cycle fails. A PreBind plugin without it counts as Skip."""

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Status Skip passes the pod to the next bind plugin."""
        ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """The cluster events that may make a pod this plugin rejected schedulable, with hints."""
        ...


# factory(args, handle) -> plugin. ``args`` is the plugin's pluginConfig entry, defaulted.
PluginFactory = Callable[[Mapping[str, Any], "Handle"], Plugin]

EXTENSION_POINTS: dict[str, type] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}
