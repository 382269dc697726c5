"""The error the framework's API writes raise (``Handle.patch_*``, the preemption executor's deletions,
a plugin's PreBind write). Defined here, not in the client that raises it, so that plugins can handle it
without importing the client layer."""

from __future__ import annotations

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})


class ApiError(Exception):
    """A failed request. ``retryable`` is true for throttling, server errors and lost connections."""

    def __init__(
        self, status: int, message: str, *, retryable: bool | None = None, api_message: str = ""
    ) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        # ``message`` without the status prefix.
        self.detail = message
        # The message of the API server's Status answer, alone: what client-go's error says
        # (``StatusError.Error()``), so texts written for users read as kube-scheduler's.
        self.api_message = api_message
        self.retryable = status in RETRYABLE_STATUSES if retryable is None else retryable
