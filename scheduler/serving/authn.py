"""Delegated authentication, as k8s.io/apiserver's DelegatingAuthenticatorConfig builds it.

In order: a client certificate that chained to the client CA (the TLS handshake verified it; the user
is its Common Name, the groups its Organizations), then a bearer token checked with a TokenReview
(answers cached for ``cache_ttl``, 10 s by default, successes and rejections alike, errors never),
then anonymous. A token the API server rejects, or one that cannot be checked because the review API
is unreachable, fails the request (401): it never falls back to anonymous (upstream's FailOnError
union). Authenticated users get the ``system:authenticated`` group (AuthenticatedGroupAdder).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from cachetools import TTLCache

from scheduler.serving.reviews import TOKEN_REVIEWS, ReviewClient, ReviewUnavailable

ANONYMOUS_USER: Final = "system:anonymous"
UNAUTHENTICATED_GROUP: Final = "system:unauthenticated"
AUTHENTICATED_GROUP: Final = "system:authenticated"
# k8s.io/apiserver: DelegatingAuthenticationOptions.CacheTTL (--authentication-token-webhook-cache-ttl).
TOKEN_CACHE_TTL_SECONDS: Final = 10.0
TOKEN_CACHE_SIZE: Final = 4096
# `py-scheduler explain` through the API server's service proxy: the API server consumes the caller's
# Authorization header, so explain sends the caller's bearer token in this one as well. It is read only
# when Authorization is absent and is reviewed exactly like it (docs/security.md).
FORWARDED_AUTHORIZATION: Final = "X-Py-Scheduler-Authorization"


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    # Sorted (key, values) pairs, not a dict: a User is part of the authorization cache's key.
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def anonymous(self) -> bool:
        return self.name == ANONYMOUS_USER


ANONYMOUS: Final = User(ANONYMOUS_USER, groups=(UNAUTHENTICATED_GROUP,))


class Unauthenticated(Exception):
    """Credentials were presented and could not be accepted (401); ``str()`` says why, for the log."""


class TokenAuthenticator(Protocol):
    def authenticate_token(self, token: str) -> User | None:
        """The token's user, None if the API server rejects it; ReviewUnavailable if it cannot say."""


class TokenReviewAuthenticator:
    """A TokenReview per token (``spec.audiences`` empty: the API server's own audiences)."""

    def __init__(self, client: ReviewClient, audiences: tuple[str, ...] = ()) -> None:
        self._client = client
        self._audiences = audiences

    def authenticate_token(self, token: str) -> User | None:
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = list(self._audiences)
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        status = self._client.create(TOKEN_REVIEWS, review)
        if not status.get("authenticated"):
            return None
        user: Mapping[str, Any] = status.get("user") or {}
        raw_extra = user.get("extra")
        extra = tuple(
            sorted((str(k), tuple(str(v) for v in vs or ())) for k, vs in raw_extra.items())
            if isinstance(raw_extra, Mapping)
            else ()
        )
        return User(
            name=str(user.get("username") or ""),
            uid=str(user.get("uid") or ""),
            groups=tuple(str(g) for g in user.get("groups") or ()),
            extra=extra,
        )


class CachingTokenAuthenticator:
    """Caches answers by a keyed hash of the token (no token is kept), as upstream's token cache."""

    def __init__(
        self,
        inner: TokenAuthenticator,
        ttl: float = TOKEN_CACHE_TTL_SECONDS,
        *,
        clock: Callable[[], float] = time.monotonic,
        maxsize: int = TOKEN_CACHE_SIZE,
    ) -> None:
        self._inner = inner
        self._key = secrets.token_bytes(32)
        self._cache: TTLCache[bytes, User | None] = TTLCache(maxsize=maxsize, ttl=ttl, timer=clock)
        self._lock = threading.Lock()
        self._enabled = ttl > 0

    def authenticate_token(self, token: str) -> User | None:
        key = hmac.new(self._key, token.encode(), hashlib.sha256).digest()
        if self._enabled:
            with self._lock:
                if key in self._cache:
                    return self._cache[key]
        user = self._inner.authenticate_token(token)  # ReviewUnavailable propagates uncached
        if self._enabled:
            with self._lock:
                self._cache[key] = user
        return user


def bearer_token(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (scheme case-insensitive), as upstream parses it;
    None when there is no usable bearer token (another scheme, or empty)."""
    parts = (authorization or "").strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def certificate_user(peer_cert: Mapping[str, Any]) -> User:
    """x509.CommonNameUserConversion: CN is the user, each Organization a group."""
    names: list[str] = []
    groups: list[str] = []
    for rdn in peer_cert.get("subject") or ():
        for attribute, value in rdn:
            if attribute == "commonName":
                names.append(str(value))
            elif attribute == "organizationName":
                groups.append(str(value))
    if not names or not names[0]:
        raise Unauthenticated("common name of the client certificate is empty")
    return User(names[0], groups=tuple(groups))


def _with_authenticated_group(user: User) -> User:
    if AUTHENTICATED_GROUP in user.groups:
        return user
    return User(user.name, user.uid, (*user.groups, AUTHENTICATED_GROUP), user.extra)


class Authenticator:
    """The request authenticator: certificate, bearer token, else anonymous."""

    def __init__(self, tokens: TokenAuthenticator | None, *, client_certificates: bool) -> None:
        # Without a token reviewer (no authentication kubeconfig, as upstream) a bearer token is
        # not looked at: the request is anonymous and authorization decides.
        self._tokens = tokens
        self._certificates = client_certificates

    def authenticate(self, authorization: str | None, peer_cert: Mapping[str, Any] | None) -> User:
        """The caller's user; raises Unauthenticated for credentials that are wrong or uncheckable."""
        if self._certificates and peer_cert:
            return _with_authenticated_group(certificate_user(peer_cert))
        token = bearer_token(authorization)
        if token is not None and self._tokens is not None:
            try:
                user = self._tokens.authenticate_token(token)
            except ReviewUnavailable as err:
                raise Unauthenticated(f"the token could not be reviewed: {err}") from None
            if user is None or not user.name:
                raise Unauthenticated("invalid bearer token")
            return _with_authenticated_group(user)
        return ANONYMOUS
