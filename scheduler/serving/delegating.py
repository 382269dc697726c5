"""Delegated authentication and authorization put together from kube-scheduler's flags, and the
guard the HTTP server asks before answering a request.

Where the review clients come from, as k8s.io/apiserver with kube-scheduler's settings
(``RemoteKubeConfigFileOptional``): ``--authentication-kubeconfig`` / ``--authorization-kubeconfig``,
else the in-cluster service account, else none. Without an authentication client no token is checked
(requests are anonymous); without an authorization client only the privileged group and the
always-allowed paths get through. Both say so in a WARNING at start-up, as upstream.

The client CA is ``--client-ca-file``, else (unless ``--authentication-skip-lookup``) the
``client-ca-file`` key of ``kube-system/extension-apiserver-authentication``, read at start-up and
every minute after. A lookup that fails stops start-up unless ``--authentication-tolerate-lookup-failure``
(kube-scheduler's default: true); a missing ConfigMap means no client CA, as upstream.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson
import urllib3
from kubernetes import config as k8s_config

from informers.credentials import CredentialError
from scheduler.client.kubeclient import RestClient, load_configuration, one_line
from scheduler.serving.authn import (
    TOKEN_CACHE_TTL_SECONDS,
    Authenticator,
    CachingTokenAuthenticator,
    TokenReviewAuthenticator,
    Unauthenticated,
    User,
)
from scheduler.serving.authz import (
    ALLOW_CACHE_TTL_SECONDS,
    DEFAULT_ALWAYS_ALLOW_GROUPS,
    DEFAULT_ALWAYS_ALLOW_PATHS,
    DENY_CACHE_TTL_SECONDS,
    AlwaysAllowPaths,
    Attributes,
    Authorizer,
    Decision,
    PrivilegedGroups,
    SubjectAccessReviewAuthorizer,
    UnionAuthorizer,
)
from scheduler.serving.reviews import ReviewClient
from scheduler.serving.tls import ServerTLS, TLSConfigError, client_ca_bundle

log = logging.getLogger(__name__)

AUTHENTICATION_CONFIGMAP: Final = (
    "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
)
CLIENT_CA_KEY: Final = "client-ca-file"
CLIENT_CA_REFRESH_SECONDS: Final = 60.0
# k8s.io/apiserver's delegated clients: high limits, since they bound every request's latency.
REVIEW_QPS: Final = 200.0
REVIEW_BURST: Final = 400
LOOKUP_TIMEOUT_SECONDS: Final = 10.0


class DelegationError(ValueError):
    """Start-up cannot go on; the message is one line naming the flag or file."""


@dataclass(frozen=True)
class DelegationOptions:
    authentication_kubeconfig: str | None = None
    authorization_kubeconfig: str | None = None
    skip_lookup: bool = False
    tolerate_lookup_failure: bool = True
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_GROUPS
    client_ca_file: str | None = None
    token_cache_ttl: float = TOKEN_CACHE_TTL_SECONDS
    allow_cache_ttl: float = ALLOW_CACHE_TTL_SECONDS
    deny_cache_ttl: float = DENY_CACHE_TTL_SECONDS


@dataclass(frozen=True)
class Refusal:
    """What the server answers instead of the resource."""

    status: int
    body: bytes
    content_type: str


def _status(code: int, reason: str, message: str) -> bytes:
    # A metav1.Status, as upstream's responsewriters write it.
    doc = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
           "reason": reason, "details": {}, "code": code}  # fmt: skip
    return orjson.dumps(doc) + b"\n"


class RequestGuard:
    """Authentication, then authorization of a request's non-resource URL and verb."""

    def __init__(self, authenticator: Authenticator, authorizer: Authorizer) -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer

    def check(
        self, method: str, path: str, authorization: str | None, peer_cert: Mapping[str, Any] | None
    ) -> tuple[User | None, Refusal | None]:
        try:
            user = self.authenticator.authenticate(authorization, peer_cert)
        except Unauthenticated as err:
            log.debug("unauthenticated request for %s: %s", path, err)
            return None, Refusal(401, _status(401, "Unauthorized", "Unauthorized"), "application/json")
        verb = method.lower()
        verdict = self.authorizer.authorize(Attributes(user, verb, path))
        if verdict.decision is Decision.ALLOW:
            return user, None
        if verdict.error:
            log.warning("authorizing %s %s for %s failed: %s", verb, path, user.name, verdict.error)
            body = f"Internal Server Error: {path!r}: {verdict.error}\n".replace("'", '"')
            return user, Refusal(500, body.encode(), "text/plain; charset=utf-8")
        message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
        if verdict.reason:
            message += f": {verdict.reason}"
        return user, Refusal(403, _status(403, "Forbidden", message), "application/json")


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.isfile(
        k8s_config.incluster_config.SERVICE_TOKEN_FILENAME
    )


def _review_client(path: str | None, flag: str) -> RestClient | None:
    if path is None and not _in_cluster():
        return None
    try:
        configuration = load_configuration(path)
    except ValueError as err:  # KubeconfigError
        raise DelegationError(f"{flag}: {err}") from None
    return RestClient(configuration, qps=REVIEW_QPS, burst=REVIEW_BURST)


class ClientCALookup:
    """Reads ``client-ca-file`` from the authentication ConfigMap; None when it has none."""

    def __init__(self, rest: RestClient) -> None:
        self._rest = rest

    def __call__(self) -> bytes | None:
        try:
            status, body = self._rest.request("GET", AUTHENTICATION_CONFIGMAP, timeout=LOOKUP_TIMEOUT_SECONDS)
        except (urllib3.exceptions.HTTPError, OSError, CredentialError) as err:
            raise OSError(
                f"GET configmap kube-system/extension-apiserver-authentication: {one_line(err)}"
            ) from None
        if status == 404:
            return None
        if status == 403:
            raise PermissionError(
                "cannot get configmap kube-system/extension-apiserver-authentication (forbidden): bind "
                "the Role extension-apiserver-authentication-reader in kube-system to the scheduler's "
                "ServiceAccount"
            )
        if status != 200:
            raise OSError(f"GET configmap kube-system/extension-apiserver-authentication: HTTP {status}")
        data = (orjson.loads(body).get("data") or {}).get(CLIENT_CA_KEY)
        return data.encode() if data else None


class ClientCAWatcher:
    """Re-reads the client CA every ``interval`` on its own thread and hands changes to ``apply``, as
    upstream's DynamicCAFromConfigMapController keeps the CA current."""

    def __init__(
        self,
        lookup: Callable[[], bytes | None],
        apply: Callable[[bytes | None], None],
        current: bytes | None,
        interval: float = CLIENT_CA_REFRESH_SECONDS,
    ) -> None:
        self._lookup = lookup
        self._apply = apply
        self._current = current
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="client-ca-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.refresh()

    def refresh(self) -> None:
        try:
            found = self._lookup()
            if found is not None:
                client_ca_bundle(found, "configmap kube-system/extension-apiserver-authentication")
        except (OSError, TLSConfigError, ValueError) as err:
            log.warning("client CA refresh failed, keeping the current one: %s", one_line(err))
            return
        if found != self._current:
            self._apply(found)
            self._current = found
            log.info("client CA from kube-system/extension-apiserver-authentication %s",
                     "updated" if found else "removed")  # fmt: skip

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=LOOKUP_TIMEOUT_SECONDS)


@dataclass
class Delegation:
    """What secure serving needs: the guard, the initial client CA and the watcher keeping it."""

    guard: RequestGuard
    client_ca: bytes | None
    watcher_factory: Callable[[ServerTLS], ClientCAWatcher] | None


def build_delegation(options: DelegationOptions) -> Delegation:
    """Clients, client CA and authorizers from the options. Raises DelegationError (one line)."""
    try:
        allow_paths = AlwaysAllowPaths(options.always_allow_paths)
    except ValueError as err:
        raise DelegationError(f"--authorization-always-allow-paths: {err}") from None
    authn_rest = _review_client(options.authentication_kubeconfig, "--authentication-kubeconfig")
    if options.authorization_kubeconfig == options.authentication_kubeconfig and authn_rest is not None:
        authz_rest: RestClient | None = authn_rest
    else:
        authz_rest = _review_client(options.authorization_kubeconfig, "--authorization-kubeconfig")

    client_ca, watcher_factory = _client_ca(options, authn_rest)
    tokens = None
    if authn_rest is None:
        log.warning("No authentication-kubeconfig provided and not in a cluster: bearer tokens "
            "are not checked "
                    "(requests are anonymous).")  # fmt: skip
    else:
        tokens = CachingTokenAuthenticator(
            TokenReviewAuthenticator(ReviewClient(authn_rest)), options.token_cache_ttl
        )
    authorizers = _authorizers(options, allow_paths, authz_rest)
    authenticator = Authenticator(
        tokens, client_certificates=client_ca is not None or watcher_factory is not None
    )
    return Delegation(RequestGuard(authenticator, UnionAuthorizer(authorizers)), client_ca, watcher_factory)


def _client_ca(
    options: DelegationOptions, authn_rest: RestClient | None
) -> tuple[bytes | None, Callable[[ServerTLS], ClientCAWatcher] | None]:
    """The client CA (from --client-ca-file, or looked up in kube-system's
    extension-apiserver-authentication ConfigMap and refreshed by a watcher), as kube-scheduler's
    DelegatingAuthenticationOptions."""
    client_ca: bytes | None = None
    watcher_factory: Callable[[ServerTLS], ClientCAWatcher] | None = None
    if options.client_ca_file:
        try:
            with open(options.client_ca_file, "rb") as f:
                client_ca = client_ca_bundle(f.read(), f"--client-ca-file {options.client_ca_file}")
        except OSError as err:
            raise DelegationError(
                f"--client-ca-file {options.client_ca_file}: {err.strerror or err}"
            ) from None
        except TLSConfigError as err:
            raise DelegationError(str(err)) from None
    elif not options.skip_lookup:
        if authn_rest is None:
            log.warning(
                "No authentication-kubeconfig provided in order to lookup client-ca-file in "
                "configmap/extension-apiserver-authentication in kube-system, so client certificate "
                "authentication won't work."
            )
        else:
            lookup = ClientCALookup(authn_rest)
            try:
                client_ca = lookup()
                if client_ca is not None:
                    client_ca_bundle(client_ca, "configmap kube-system/extension-apiserver-authentication")
            except (OSError, TLSConfigError) as err:
                if not options.tolerate_lookup_failure:
                    raise DelegationError(
                        f"looking up the client CA: {one_line(err)} "
                        "(--authentication-tolerate-lookup-failure=false)"
                    ) from None
                log.warning(
                    "Error looking up in-cluster authentication configuration: %s. Continuing without "
                    "it (client certificates are not accepted until a refresh finds the CA); set "
                    "--authentication-tolerate-lookup-failure=false to require it.",
                    one_line(err),
                )
                client_ca = None
            initial = client_ca

            def watcher(tls: ServerTLS) -> ClientCAWatcher:
                return ClientCAWatcher(lookup, tls.set_client_ca, initial)

            watcher_factory = watcher
    return client_ca, watcher_factory


def _authorizers(
    options: DelegationOptions, allow_paths: AlwaysAllowPaths, authz_rest: RestClient | None
) -> list[Authorizer]:
    """The union kube-scheduler builds: privileged groups, always-allowed paths, then a
    SubjectAccessReview."""
    authorizers: list[Authorizer] = []
    if options.always_allow_groups:
        authorizers.append(PrivilegedGroups(options.always_allow_groups))
    if options.always_allow_paths:
        authorizers.append(allow_paths)
    if authz_rest is None:
        log.warning(
            "No authorization-kubeconfig provided, so SubjectAccessReview of authorization tokens won't work."
        )
    else:
        authorizers.append(
            SubjectAccessReviewAuthorizer(
                ReviewClient(authz_rest), allow_ttl=options.allow_cache_ttl, deny_ttl=options.deny_cache_ttl
            )
        )
    return authorizers
