"""DefaultBinder (``pkg/scheduler/framework/plugins/defaultbinder/default_binder.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework import Code, CycleState, Handle, PodInfo, Status
from scheduler.framework.api_error import ApiError
from scheduler.plugins import names
from scheduler.plugins.helper.args import ArgsReader


class DefaultBinder:
    """Bind: POSTs the pod's Binding through the handle (runs in a binding thread; may block). Since
    v1.37 upstream binds through ``util.BindPod``, which retries an internal error, service unavailable
    or a refused connection with retry.DefaultBackoff; ``SchedulerApi.bind`` does the same.

    Upstream: ``pkg/scheduler/framework/plugins/defaultbinder/default_binder.go`` (v1.37.2).
    """

    name = names.DEFAULT_BINDER

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        ArgsReader(self.name).top(args, None, ())
        if handle is None:
            raise ValueError(f"{self.name} needs a framework handle")
        self._handle = handle

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        try:
            self._handle.bind_pod(pod.namespace, pod.name, pod.uid, node_name)
        except Exception as err:
            # The binding cycle inspects ``status.error`` (e.g. a conflict: the pod is already bound).
            # The text is the API server's message when it answered one, as upstream's AsStatus(err)
            # (client-go's StatusError): it is what FailedScheduling and PodScheduled=False say.
            if isinstance(err, ApiError) and err.api_message:
                return Status(Code.Error, [err.api_message], error=err)
            return Status.as_error(err)
        return None
