"""TokenReview and SubjectAccessReview calls to the API server, from the HTTP server's threads.

They go through the project's REST client (``scheduler.client.kubeclient.RestClient``) with a bounded
timeout, and are retried as k8s.io/apiserver's webhook clients retry them
(``DefaultAuthWebhookRetryBackoff``: 500 ms, factor 1.5, jitter 0.2, 5 steps) on connection errors,
429 and 5xx. A review that still fails raises :class:`ReviewUnavailable`: the caller fails closed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson
import urllib3

from informers.credentials import CredentialError

TOKEN_REVIEWS: Final = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS: Final = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
# k8s.io/apiserver: DelegatingAuthenticationOptions.TokenRequestTimeout and
# DelegatingAuthorizationOptions.ClientTimeout.
REVIEW_TIMEOUT_SECONDS: Final = 10.0


@dataclass(frozen=True)
class Backoff:
    """wait.Backoff: the first wait, its growth factor, the jitter fraction and the attempts."""

    duration: float = 0.5
    factor: float = 1.5
    jitter: float = 0.2
    steps: int = 5


DEFAULT_BACKOFF: Final = Backoff()


class ReviewUnavailable(Exception):
    """The review API did not answer usefully; the message is one line."""


class Requester(Protocol):
    """What a review needs of ``RestClient``: one request, (status, body)."""

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = ..., timeout: float = ...
    ) -> tuple[int, bytes]: ...


class ReviewClient:
    """POSTs a review object and returns its ``status``; safe to share between threads."""

    def __init__(
        self,
        rest: Requester,
        *,
        timeout: float = REVIEW_TIMEOUT_SECONDS,
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rest = rest
        self._timeout = timeout
        self._backoff = backoff
        self._sleep = sleep
        self._clock = clock

    def create(self, path: str, review: Mapping[str, Any]) -> dict[str, Any]:
        deadline = self._clock() + self._timeout
        wait = self._backoff.duration
        problem = ""
        for step in range(self._backoff.steps):
            left = deadline - self._clock()
            if left <= 0:
                break
            try:
                status, body = self._rest.request("POST", path, dict(review), timeout=left)
            except (urllib3.exceptions.HTTPError, OSError, CredentialError) as err:
                problem = f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"
            else:
                if status in (200, 201):
                    try:
                        doc = orjson.loads(body)
                    except orjson.JSONDecodeError:
                        raise ReviewUnavailable(
                            f"POST {path}: HTTP {status} with a body that is not JSON"
                        ) from None
                    got = doc.get("status") if isinstance(doc, dict) else None
                    return got if isinstance(got, dict) else {}
                problem = f"HTTP {status}: {body[:200].decode(errors='replace').strip()}"
                if status != 429 and status < 500:
                    # 401/403/404...: asking again gets the same answer (upstream does not retry either).
                    break
            if step + 1 < self._backoff.steps:
                pause = min(wait * (1 + random.random() * self._backoff.jitter), deadline - self._clock())
                if pause <= 0:
                    break
                self._sleep(pause)
                wait *= self._backoff.factor
        raise ReviewUnavailable(f"POST {path}: {problem or 'timed out'}")
