"""Delegated authorization, as k8s.io/apiserver's DelegatingAuthorizationOptions builds it.

A union, first decision wins: the privileged group ``system:masters`` (the API server allows it
everything anyway), the always-allowed paths (``--authorization-always-allow-paths``: exact, or a
prefix when ending in ``*``), then a SubjectAccessReview for the non-resource URL and the request's
verb (the HTTP method in lower case, as upstream's RequestInfoFactory: GET is ``get``, HEAD is
``head``). Review answers are cached, allowed for ``allow_ttl`` and denied for ``deny_ttl`` (10 s each
by default), errors never. When nobody allows, the request is forbidden (403), or fails (500) if a
review could not be made, as upstream's WithAuthorization.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final, Protocol

from cachetools import TTLCache

from scheduler.serving.authn import User
from scheduler.serving.reviews import SUBJECT_ACCESS_REVIEWS, ReviewClient, ReviewUnavailable

# k8s.io/apiserver: DelegatingAuthorizationOptions.AllowCacheTTL / DenyCacheTTL.
ALLOW_CACHE_TTL_SECONDS: Final = 10.0
DENY_CACHE_TTL_SECONDS: Final = 10.0
DEFAULT_ALWAYS_ALLOW_PATHS: Final = ("/healthz", "/readyz", "/livez")
DEFAULT_ALWAYS_ALLOW_GROUPS: Final = ("system:masters",)
SAR_CACHE_SIZE: Final = 8192


class Decision(Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no-opinion"


@dataclass(frozen=True)
class Attributes:
    """A non-resource request: who, which verb, which path."""

    user: User
    verb: str
    path: str


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str = ""
    error: str = ""  # a review that could not be made: the request fails closed with 500


class Authorizer(Protocol):
    def authorize(self, attributes: Attributes) -> Verdict: ...


class PrivilegedGroups:
    def __init__(self, groups: Sequence[str]) -> None:
        self._groups = frozenset(groups)

    def authorize(self, attributes: Attributes) -> Verdict:
        if self._groups.intersection(attributes.user.groups):
            return Verdict(Decision.ALLOW)
        return Verdict(Decision.NO_OPINION)


def check_always_allow_paths(paths: Sequence[str]) -> tuple[str, ...]:
    """Upstream's path.NewAuthorizer: a ``*`` only at the end (prefix match)."""
    for path in paths:
        if "*" in path[:-1]:
            raise ValueError(f"only trailing * allowed in {path!r}")
    return tuple(paths)


class AlwaysAllowPaths:
    def __init__(self, paths: Sequence[str]) -> None:
        paths = check_always_allow_paths(paths)
        self._exact = frozenset(p for p in paths if not p.endswith("*"))
        self._prefixes = tuple(p[:-1] for p in paths if p.endswith("*"))

    def authorize(self, attributes: Attributes) -> Verdict:
        path = attributes.path
        if path in self._exact or any(path.startswith(prefix) for prefix in self._prefixes):
            return Verdict(Decision.ALLOW)
        return Verdict(Decision.NO_OPINION)


class SubjectAccessReviewAuthorizer:
    """A SubjectAccessReview with ``nonResourceAttributes``, cached per (user, verb, path)."""

    def __init__(
        self,
        client: ReviewClient,
        *,
        allow_ttl: float = ALLOW_CACHE_TTL_SECONDS,
        deny_ttl: float = DENY_CACHE_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._allowed: TTLCache[Attributes, Verdict] | None = (
            TTLCache(maxsize=SAR_CACHE_SIZE, ttl=allow_ttl, timer=clock) if allow_ttl > 0 else None
        )
        self._denied: TTLCache[Attributes, Verdict] | None = (
            TTLCache(maxsize=SAR_CACHE_SIZE, ttl=deny_ttl, timer=clock) if deny_ttl > 0 else None
        )

    def authorize(self, attributes: Attributes) -> Verdict:
        with self._lock:
            for cache in (self._allowed, self._denied):
                if cache is not None and attributes in cache:
                    return cache[attributes]
        user = attributes.user
        spec: dict[str, object] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": attributes.path, "verb": attributes.verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        try:
            status = self._client.create(SUBJECT_ACCESS_REVIEWS, review)
        except ReviewUnavailable as err:
            return Verdict(Decision.NO_OPINION, error=str(err))
        reason = str(status.get("reason") or "")
        if status.get("allowed"):
            verdict, cache = Verdict(Decision.ALLOW, reason), self._allowed
        else:
            # "denied" is an explicit deny; otherwise the webhook has no opinion. Both end in 403.
            decision = Decision.DENY if status.get("denied") else Decision.NO_OPINION
            verdict, cache = Verdict(decision, reason), self._denied
        if cache is not None:
            with self._lock:
                cache[attributes] = verdict
        return verdict


class UnionAuthorizer:
    """The first Allow or Deny wins; otherwise no opinion, with every reason and error."""

    def __init__(self, authorizers: Sequence[Authorizer]) -> None:
        self._authorizers = tuple(authorizers)

    def authorize(self, attributes: Attributes) -> Verdict:
        reasons: list[str] = []
        errors: list[str] = []
        for authorizer in self._authorizers:
            verdict = authorizer.authorize(attributes)
            if verdict.decision is not Decision.NO_OPINION:
                return verdict
            if verdict.reason:
                reasons.append(verdict.reason)
            if verdict.error:
                errors.append(verdict.error)
        return Verdict(Decision.NO_OPINION, "\n".join(reasons), "; ".join(errors))
