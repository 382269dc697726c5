"""The scheduler's writes: Binding, Events and the PodScheduled condition, with typed failures.

Called from binding and writer threads only; never from the event loop, since every call blocks.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import orjson
import urllib3

from informers.resource import ResourceSpec
from scheduler.client import k8s_protobuf
from scheduler.client.httppool import ConnectionFailed
from scheduler.client.kubeclient import RestClient
from scheduler.framework.api_error import ApiError
from scheduler.framework.objects import object_meta, pod_spec

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
# The GET that tells whether a Binding whose answer was lost landed after all.
LANDED_TIMEOUT = 10.0
# Upstream's util.BindPod (v1.37): retry.OnError(retry.DefaultBackoff, Retriable, bind): at most 4
# attempts, waiting 10 ms, 50 ms and 250 ms (factor 5, jitter 0.1) between them.
BIND_BACKOFF_SECONDS = (0.01, 0.05, 0.25)
BIND_BACKOFF_JITTER = 0.1


# What one read of the pod right after a Binding's 404/409 shows (``BindingConflict.pod_state``).
POD_BOUND = "bound"  # bound to a node (by anyone): "already assigned"
POD_GONE = "gone"  # deleted (404)
POD_REPLACED = "replaced"  # a namesake with another uid: the Binding's uid precondition failed
POD_PENDING = "pending"  # still this pod, unbound: "being deleted", scheduling gates, a proxy's 409
POD_UNKNOWN = "unknown"  # the read failed; the watch will tell
# The states in which the attempt is over: nothing to retry and nothing to report.
SETTLED_POD_STATES = frozenset({POD_BOUND, POD_GONE, POD_REPLACED})


class BindingConflict(ApiError):
    """The Binding was answered 404 or 409. The API server answers 409 when the pod is already
    assigned, is being deleted, has scheduling gates, or its uid (the Binding's precondition) differs:
    a namesake replaced it; 404 when it is gone. ``pod_state`` says which, from one read of the pod."""

    def __init__(
        self, status: int, message: str, *, api_message: str = "", pod_state: str = POD_UNKNOWN
    ) -> None:
        super().__init__(status, message, retryable=False, api_message=api_message)
        self.pod_state = pod_state

    @property
    def settled(self) -> bool:
        """The pod is bound, gone or replaced: upstream's handleSchedulingFailure does not requeue it."""
        return self.pod_state in SETTLED_POD_STATES


class BindingOutcomeUnknown(ApiError):
    """The Binding failed, but a try of it may have been stored: its answer was lost (a reset, a
    timeout while reading the response) or was a 5xx, and the read that would have told failed too.
    ``node_name`` is where it was sent; the watch settles it (``scheduler.cycle.unknown_binds``).
    Otherwise it is the error of the last try, with its status, text and retryability."""

    def __init__(self, err: ApiError, node_name: str) -> None:
        super().__init__(err.status, err.detail, retryable=err.retryable, api_message=err.api_message)
        self.node_name = node_name


def outcome_unknown(err: ApiError) -> bool:
    """Whether a write that failed with ``err`` may still have been stored: no answer came (other than
    a refused connection, which sent nothing), or the API server answered a 5xx (an etcd timeout is
    answered after the write may have been committed)."""
    return (err.status == 0 and not connection_refused(err)) or err.status >= 500


def connection_refused(err: BaseException) -> bool:
    """Whether ``err`` (or what caused it) is a refused connection (utilnet.IsConnectionRefused)."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if isinstance(current, ConnectionRefusedError) or "connection refused" in str(current).lower():
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def bind_retriable(err: ApiError) -> bool:
    """Upstream's util.Retriable (v1.37): an internal error (500), service unavailable (503) or a
    refused connection. Not a conflict, not a timeout."""
    return err.status in (500, 503) or (err.status == 0 and connection_refused(err))


def _message(body: bytes) -> str:
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:300].decode("utf-8", "replace")
    if isinstance(decoded, dict):
        return str(decoded.get("message") or decoded.get("reason") or decoded)[:500]
    return str(decoded)[:500]


def _status_message(body: bytes) -> str:
    """The ``message`` of a ``Status`` answer, whole (client-go's error text); empty when there is none."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return ""
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return str(decoded.get("message") or "")
    return ""


class SchedulerApi:
    def __init__(self, rest: RestClient, *, protobuf_writes: bool = False) -> None:
        """``protobuf_writes``: send the per-pod Binding and Event bodies as protobuf, as kube-scheduler
        does (the API server decodes them for a fraction of the JSON cost); answers stay JSON."""
        self.rest = rest
        self.protobuf_writes = protobuf_writes

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        timeout: float = DEFAULT_TIMEOUT,
    ) -> bytes:
        try:
            status, data = self.rest.request(method, path, body, content_type=content_type, timeout=timeout)
        except ConnectionFailed as err:  # its text already names the request
            raise ApiError(0, str(err), retryable=True) from err
        except urllib3.exceptions.HTTPError as err:
            raise ApiError(0, f"{method} {path}: {err}", retryable=True) from err
        if 200 <= status < 300:
            return data
        raise ApiError(status, f"{method} {path}: {_message(data)}", api_message=_status_message(data))

    def request_json(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> Mapping[str, Any]:
        """A plugin's API call (claims' status, finalizers...): the decoded JSON object answered."""
        data = self._call(method, path, body, content_type=content_type)
        decoded = orjson.loads(data) if data else {}
        return decoded if isinstance(decoded, Mapping) else {}

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        """POST pods/{name}/binding. The uid precondition stops us binding a re-created namesake."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        path = f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}/binding"
        # A try whose outcome is unknown may have been stored: a later try's 409 "already assigned"
        # is then our own Binding, and the final error says the pod may be bound.
        maybe_stored = False
        payload: Any = body
        content_type = "application/json"
        if self.protobuf_writes:
            payload, content_type = k8s_protobuf.encode_binding(body), k8s_protobuf.CONTENT_TYPE
        for attempt in range(len(BIND_BACKOFF_SECONDS) + 1):
            try:
                self._call("POST", path, payload, content_type=content_type)
                return
            except ApiError as err:
                if err.status in (404, 409):
                    # Already assigned (maybe by us, before a restart), being deleted, gated, replaced by
                    # a namesake (the uid precondition), or deleted: one read tells which, so the
                    # scheduler decides as upstream's handleSchedulingFailure does with its pod lister,
                    # without waiting for the watch. Not worth a retry (upstream's Retriable says so too).
                    state, bound_to = self._pod_state(namespace, name, uid)
                    if maybe_stored and state == POD_BOUND and bound_to == node_name:
                        log.info("binding %s/%s to %s landed on an earlier try", namespace, name, node_name)
                        return
                    raise BindingConflict(
                        err.status, err.detail, api_message=err.api_message, pod_state=state
                    ) from err
                if (err.status == 0 or err.status >= 500) and self._landed(namespace, name, uid, node_name):
                    # The answer was lost (a timeout, a reset, a 5xx after the write) but the Binding
                    # was stored: it is bound, and reporting an error would write SchedulerError onto it.
                    log.info("binding %s/%s to %s landed despite %s", namespace, name, node_name, err)
                    return
                maybe_stored = maybe_stored or outcome_unknown(err)
                if attempt == len(BIND_BACKOFF_SECONDS) or not bind_retriable(err):
                    if maybe_stored:
                        raise BindingOutcomeUnknown(err, node_name) from err
                    raise
                delay = BIND_BACKOFF_SECONDS[attempt]
                log.info("binding %s/%s to %s: %s; retrying", namespace, name, node_name, err)
                time.sleep(delay + random.uniform(0, BIND_BACKOFF_JITTER * delay))

    def _pod_state(self, namespace: str, name: str, uid: str) -> tuple[str, str]:
        """What the API server holds under this pod's name now (``POD_*``), and its node if bound."""
        try:
            data = self._call(
                "GET", f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}", timeout=LANDED_TIMEOUT
            )
            pod = orjson.loads(data)
        except ApiError as err:
            return (POD_GONE if err.status == 404 else POD_UNKNOWN), ""
        except orjson.JSONDecodeError:
            return POD_UNKNOWN, ""
        if not isinstance(pod, dict):
            return POD_UNKNOWN, ""
        if uid and object_meta(pod).get("uid") != uid:
            return POD_REPLACED, ""
        node = str(pod_spec(pod).get("nodeName") or "")
        return (POD_BOUND if node else POD_PENDING), node

    def _landed(self, namespace: str, name: str, uid: str, node_name: str) -> bool:
        """Whether this pod (this uid) is bound to ``node_name`` now; False when that cannot be read."""
        try:
            data = self._call(
                "GET", f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}", timeout=LANDED_TIMEOUT
            )
            pod = orjson.loads(data)
        except (ApiError, orjson.JSONDecodeError):
            return False
        if not isinstance(pod, dict):
            return False
        return bool(uid) and object_meta(pod).get("uid") == uid and pod_spec(pod).get("nodeName") == node_name

    def update_object(self, resource: ResourceSpec, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """PUT one object of ``resource``; the stored object comes back."""
        meta = object_meta(obj)
        path = f"{resource.path(meta.get('namespace'))}/{quote(str(meta.get('name', '')), safe='')}"
        stored: Mapping[str, Any] = orjson.loads(self._call("PUT", path, obj))
        return stored

    def get_pod(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        try:
            data = self._call("GET", f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}")
        except ApiError as err:
            if err.status == 404:
                return None
            raise
        pod: Mapping[str, Any] = orjson.loads(data)
        return pod

    def patch_pod_status(
        self, namespace: str, name: str, patch: Mapping[str, Any], *, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        """Strategic-merge patch of pods/status (conditions merge by type, as upstream's PatchPodStatus)."""
        self._call(
            "PATCH",
            f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}/status",
            patch,
            content_type="application/strategic-merge-patch+json",
            timeout=timeout,
        )

    def delete_pod(self, namespace: str, name: str, uid: str = "") -> bool:
        """DELETE a pod (its grace period applies); with ``uid``, only that incarnation. False when it
        is already gone (404) or was replaced by a namesake (409)."""
        body: dict[str, Any] | None = None
        if uid:
            body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        try:
            self._call("DELETE", f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}", body)
        except ApiError as err:
            if err.status in (404, 409):
                return False
            raise
        return True

    def create_event(
        self, namespace: str, event: Mapping[str, Any], *, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        path = f"/apis/events.k8s.io/v1/namespaces/{quote(namespace)}/events"
        # An Event created with its series (one whose first create was lost, see EventRecorder) is rare
        # and the encoder has no table for EventSeries: it goes as JSON without a warning.
        if self.protobuf_writes and "series" not in event:
            try:
                encoded = k8s_protobuf.encode_event(event)
            except ValueError as err:
                # An Event with a field the encoder has no table for still goes out, as JSON: losing
                # it would be worse than the API server's dearer decode of one request.
                log.warning("Event %s sent as JSON: %s", object_meta(event).get("name", ""), err)
            else:
                self._call("POST", path, encoded, content_type=k8s_protobuf.CONTENT_TYPE, timeout=timeout)
                return
        self._call("POST", path, event, timeout=timeout)

    def patch_event(
        self, namespace: str, name: str, patch: Mapping[str, Any], *, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self._call(
            "PATCH",
            f"/apis/events.k8s.io/v1/namespaces/{quote(namespace)}/events/{quote(name)}",
            patch,
            content_type="application/merge-patch+json",
            timeout=timeout,
        )
