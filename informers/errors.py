"""Errors a transport raises, independent of the HTTP library underneath."""

from __future__ import annotations

from typing import Any


class TransportError(Exception):
    """The request never got an HTTP answer, or the stream broke: refused, reset, timed out, bad TLS."""


class ApiError(Exception):
    """The API server answered with a failure ``Status`` (an HTTP error, or an ERROR watch event)."""

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        body: Any = None,
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        # Seconds the server asked us to wait before trying again (429 and some 5xx: the Retry-After
        # header, or the Status's details.retryAfterSeconds); None when it said nothing.
        self.retry_after = retry_after if retry_after is not None else _details_retry_after(body)

    @classmethod
    def from_status(
        cls, status_obj: Any, default_code: int = 500, *, retry_after: float | None = None
    ) -> ApiError:
        """Build from a ``meta/v1 Status`` dict (the body of an error response or ERROR event)."""
        if not isinstance(status_obj, dict):
            return cls(default_code, "Unknown", repr(status_obj), status_obj, retry_after=retry_after)
        code = status_obj.get("code")
        return cls(
            int(code) if isinstance(code, int) and code > 0 else default_code,
            str(status_obj.get("reason") or ""),
            str(status_obj.get("message") or ""),
            status_obj,
            retry_after=retry_after,
        )

    @property
    def is_gone(self) -> bool:
        """410: the resourceVersion is older than the server still keeps; only a relist recovers."""
        return self.status == 410 or self.reason in ("Expired", "Gone")

    @property
    def is_too_large_resource_version(self) -> bool:
        """The server's cache is behind the resourceVersion asked for (e.g. right after a restart)."""
        details = self.body.get("details") if isinstance(self.body, dict) else None
        causes = details.get("causes") if isinstance(details, dict) else None
        if isinstance(causes, list):
            return any(isinstance(c, dict) and c.get("reason") == "ResourceVersionTooLarge" for c in causes)
        return "Too large resource version" in self.message


# client-go's rest.Request: a 429 or 5xx answer carrying an integer Retry-After is sent again after
# that many seconds, up to this many times in a row (its maxRetries), for every verb.
RETRY_AFTER_MAX_RETRIES = 10


def retry_after_seconds(status: int, header: str | None) -> int | None:
    """client-go's checkWait: the seconds to wait before sending again, or None for no retry."""
    if header is None or not (status == 429 or status >= 500):
        return None
    try:
        seconds = int(header.strip(), 10)
    except ValueError:  # an HTTP date, or junk: client-go's strconv.Atoi refuses both
        return None
    return max(seconds, 0)


def _details_retry_after(body: Any) -> float | None:
    details = body.get("details") if isinstance(body, dict) else None
    seconds = details.get("retryAfterSeconds") if isinstance(details, dict) else None
    return float(seconds) if isinstance(seconds, int) and seconds > 0 else None
