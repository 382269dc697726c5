"""Generic asyncio informers over the Kubernetes API, in the manner of client-go's ``tools/cache``.

An informer keeps a local, indexed copy of one resource and tells handlers what changed. It runs
on the caller's asyncio event loop and works on raw JSON dicts (orjson), never client model classes.

* **Reflector**: paginated LIST (``limit``/``continue``), then WATCH from the list's resourceVersion with
  bookmarks, a randomised 5-10 min server timeout and a client read timeout. Connection errors resume
  from the last resourceVersion after jittered, capped exponential backoff; 410 Gone relists and
  reconciles the store, delivering missed deletes (as :class:`DeletedFinalStateUnknown`), adds and updates.
* **Indexer**: thread-safe store keyed ``namespace/name`` (or ``name``) with named indexes.
* **SharedInformer**: handlers (sync or async callables) each get their own ordered queue and task, so a
  slow or failing handler never stalls the watch or other handlers. The store is updated before any
  handler hears of a change. Synchronous handlers must be quick: they run on the loop (an idle one
  straight from the informer's call, in order, without a task wake-up per event).
* **InformerFactory**: one informer per resource and selectors; ``start``, ``stop``, ``wait_for_cache_sync``.
* Metrics ``py_scheduler_informer_*`` in prometheus-client's default registry.
* ``informers.testing``: an in-memory ``FakeApiServer`` (a Transport with paging, selectors, history,
  compaction and fault injection) and a ``FakeClock``, for unit tests of code built on informers.

Usage::

    transport = AsyncTransport.from_kubeconfig("/path/to/kubeconfig", qps=50, burst=100)
    factory = InformerFactory(transport, transform=strip_managed_fields)
    pods = factory.informer_for(
        PODS, field_selector="status.phase!=Succeeded,status.phase!=Failed",
        indexers={NODE_NAME_INDEX: index_by_node_name},
    )
    pods.add_event_handler(on_add=lambda pod, initial: ..., on_update=..., on_delete=...)
    factory.start()
    if not await factory.wait_for_cache_sync(timeout=60):
        raise RuntimeError("informers did not sync")
    pods_on_node = pods.store.by_index(NODE_NAME_INDEX, "node-1")
    ...
    await factory.stop(); await transport.close()
"""

from informers.backoff import Backoff, BackoffPolicy
from informers.clock import REAL_CLOCK, Clock, RealClock
from informers.errors import ApiError, TransportError
from informers.factory import InformerFactory, InformerKey
from informers.handlers import (
    HandlerRegistration,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
)
from informers.informer import SharedInformer
from informers.objects import (
    DeletedFinalStateUnknown,
    KubeObject,
    TransformFunc,
    deletion_handling_key,
    meta_namespace_key,
    split_key,
    strip_managed_fields,
)
from informers.reflector import Reflector, ReflectorSink
from informers.resource import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    PRIORITY_CLASSES,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    ResourceSpec,
)
from informers.store import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    Indexer,
    IndexFunc,
    index_by_namespace,
    index_by_node_name,
)
from informers.transport import AsyncTransport, Transport

__all__ = [
    "CSI_DRIVERS",
    "CSI_NODES",
    "CSI_STORAGE_CAPACITIES",
    "NAMESPACES",
    "NAMESPACE_INDEX",
    "NODES",
    "NODE_NAME_INDEX",
    "PERSISTENT_VOLUMES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODS",
    "POD_DISRUPTION_BUDGETS",
    "PRIORITY_CLASSES",
    "REAL_CLOCK",
    "REPLICATION_CONTROLLERS",
    "REPLICA_SETS",
    "SERVICES",
    "STATEFUL_SETS",
    "STORAGE_CLASSES",
    "VOLUME_ATTACHMENTS",
    "ApiError",
    "AsyncTransport",
    "Backoff",
    "BackoffPolicy",
    "Clock",
    "DeletedFinalStateUnknown",
    "HandlerRegistration",
    "IndexFunc",
    "Indexer",
    "InformerFactory",
    "InformerKey",
    "KubeObject",
    "RealClock",
    "Reflector",
    "ReflectorSink",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceSpec",
    "SharedInformer",
    "TransformFunc",
    "Transport",
    "TransportError",
    "deletion_handling_key",
    "index_by_namespace",
    "index_by_node_name",
    "meta_namespace_key",
    "split_key",
    "strip_managed_fields",
]
