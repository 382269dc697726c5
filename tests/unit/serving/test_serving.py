"""Secure serving without a cluster: the authenticator, the authorizers, the review client's retries
and caches (fake REST client and clock at the seam), and the HTTPS server with a client CA."""

from __future__ import annotations

import datetime
import http.client
import ssl
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import urllib3
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from scheduler.serving.authn import (
    ANONYMOUS,
    AUTHENTICATED_GROUP,
    Authenticator,
    CachingTokenAuthenticator,
    TokenReviewAuthenticator,
    Unauthenticated,
    User,
    bearer_token,
    certificate_user,
)
from scheduler.serving.authz import (
    AlwaysAllowPaths,
    Attributes,
    Decision,
    PrivilegedGroups,
    SubjectAccessReviewAuthorizer,
    UnionAuthorizer,
    check_always_allow_paths,
)
from scheduler.serving.delegating import RequestGuard
from scheduler.serving.reviews import (
    SUBJECT_ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    Backoff,
    ReviewClient,
    ReviewUnavailable,
)
from scheduler.serving.server import HealthServer
from scheduler.serving.tls import PAIR_NAME, ServerTLS, generate_self_signed, serving_cert


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeRest:
    """Answers POSTs from a script: each item is (status, body) or an exception to raise."""

    def __init__(self, *answers: tuple[int, Any] | Exception) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "", timeout: float = 0
    ) -> tuple[int, bytes]:
        assert method == "POST"
        assert timeout > 0
        self.sent.append((path, body))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        status, doc = answer
        return status, orjson.dumps(doc)


def review_client(rest: FakeRest, clock: FakeClock | None = None) -> ReviewClient:
    clock = clock or FakeClock()
    return ReviewClient(rest, sleep=clock.sleep, clock=clock)


# --- authentication -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("  BEARER abc  ", "abc"),
        ("Bearer abc extra", "abc"),
        ("Bearer ", None),
        ("Bearer  abc", None),  # upstream: the space before the token leaves it empty
        ("Basic dXNlcjpw", None),
        ("", None),
        (None, None),
    ],
)
def test_bearer_token_is_parsed_as_upstream(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_certificate_user_is_the_common_name_and_organizations() -> None:
    cert = {
        "subject": ((("organizationName", "ops"),), (("organizationName", "sre"),), (("commonName", "ann"),))
    }
    assert certificate_user(cert) == User("ann", groups=("ops", "sre"))
    with pytest.raises(Unauthenticated, match="common name"):
        certificate_user({"subject": ((("organizationName", "ops"),),)})


def token_review(user: str, groups: list[str], authenticated: bool = True) -> tuple[int, dict[str, Any]]:
    status = {"authenticated": authenticated, "user": {"username": user, "uid": "u1", "groups": groups}}
    return 201, {"kind": "TokenReview", "status": status}


def test_a_valid_token_is_its_user_with_the_authenticated_group() -> None:
    rest = FakeRest(token_review("sa", ["system:serviceaccounts"]))
    authn = Authenticator(TokenReviewAuthenticator(review_client(rest)), client_certificates=False)
    user = authn.authenticate("Bearer good", None)
    assert user == User("sa", "u1", ("system:serviceaccounts", AUTHENTICATED_GROUP))
    path, body = rest.sent[0]
    assert path == TOKEN_REVIEWS
    assert body["spec"] == {"token": "good"}
    assert body["kind"] == "TokenReview"


def test_no_credentials_is_anonymous_and_a_rejected_or_unreviewable_token_is_not() -> None:
    rejected = Authenticator(
        TokenReviewAuthenticator(review_client(FakeRest(token_review("", [], False)))),
        client_certificates=False,
    )
    assert rejected.authenticate(None, None) == ANONYMOUS
    with pytest.raises(Unauthenticated, match="invalid bearer token"):
        rejected.authenticate("Bearer wrong", None)
    down = Authenticator(
        TokenReviewAuthenticator(review_client(FakeRest(urllib3.exceptions.ProtocolError("refused")))),
        client_certificates=False,
    )
    with pytest.raises(Unauthenticated, match="could not be reviewed"):
        down.authenticate("Bearer any", None)


def test_without_a_token_reviewer_a_token_is_not_looked_at() -> None:
    assert Authenticator(None, client_certificates=False).authenticate("Bearer x", None) == ANONYMOUS


def test_a_verified_certificate_wins_over_a_token() -> None:
    rest = FakeRest(token_review("sa", []))
    authn = Authenticator(TokenReviewAuthenticator(review_client(rest)), client_certificates=True)
    cert = {"subject": ((("commonName", "ann"),),)}
    assert authn.authenticate("Bearer t", cert) == User("ann", groups=(AUTHENTICATED_GROUP,))
    assert rest.sent == []


def test_token_answers_are_cached_for_the_ttl_and_errors_never() -> None:
    clock = FakeClock()
    answers: list[User | Exception | None] = [User("a"), None, ReviewUnavailable("down"), User("b")]
    calls: list[str] = []

    class Inner:
        def authenticate_token(self, token: str) -> User | None:
            calls.append(token)
            answer = answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer

    cache = CachingTokenAuthenticator(Inner(), ttl=10.0, clock=clock)
    assert cache.authenticate_token("t1") == User("a")
    assert cache.authenticate_token("t1") == User("a")  # cached
    assert cache.authenticate_token("t2") is None
    assert cache.authenticate_token("t2") is None  # a rejection is cached too
    assert calls == ["t1", "t2"]
    clock.now += 10.5
    with pytest.raises(ReviewUnavailable):
        cache.authenticate_token("t1")
    assert cache.authenticate_token("t1") == User("b")  # the error was not cached
    assert calls == ["t1", "t2", "t1", "t1"]


# --- the review client ------------------------------------------------------------------------------


def test_reviews_are_retried_on_connection_errors_and_5xx_with_upstreams_backoff() -> None:
    clock = FakeClock()
    rest = FakeRest(
        urllib3.exceptions.ProtocolError("refused"),
        (503, {}),
        (429, {}),
        (201, {"status": {"allowed": True}}),
    )
    assert review_client(rest, clock).create(SUBJECT_ACCESS_REVIEWS, {}) == {"allowed": True}
    assert len(rest.sent) == 4
    # 0.5 + 0.75 + 1.125 seconds, each with at most 20% jitter.
    assert 2.375 <= clock.now - 1000.0 <= 2.375 * 1.2


def test_reviews_give_up_after_five_attempts_or_at_once_on_a_4xx() -> None:
    rest = FakeRest(urllib3.exceptions.ProtocolError("refused"))
    with pytest.raises(ReviewUnavailable, match="refused"):
        review_client(rest).create(TOKEN_REVIEWS, {})
    assert len(rest.sent) == Backoff().steps
    forbidden = FakeRest((403, {"message": "no"}))
    with pytest.raises(ReviewUnavailable, match="HTTP 403"):
        review_client(forbidden).create(TOKEN_REVIEWS, {})
    assert len(forbidden.sent) == 1


def test_reviews_stop_at_the_timeout() -> None:
    clock = FakeClock()
    rest = FakeRest(urllib3.exceptions.ProtocolError("refused"))
    client = ReviewClient(rest, timeout=1.0, sleep=clock.sleep, clock=clock)
    with pytest.raises(ReviewUnavailable):
        client.create(TOKEN_REVIEWS, {})
    assert clock.now - 1000.0 <= 1.0
    assert len(rest.sent) == 2  # at 0 s and after the first 0.5 s wait; the next wait passes the deadline


# --- authorization ----------------------------------------------------------------------------------

ANN = User("ann", "u-ann", ("devs", AUTHENTICATED_GROUP), (("scopes", ("a",)),))


def test_sar_asks_for_the_non_resource_url_and_verb_and_caches_both_answers() -> None:
    clock = FakeClock()
    rest = FakeRest((201, {"status": {"allowed": True}}))
    sar = SubjectAccessReviewAuthorizer(review_client(rest), allow_ttl=10, deny_ttl=5, clock=clock)
    attrs = Attributes(ANN, "get", "/metrics")
    assert sar.authorize(attrs).decision is Decision.ALLOW
    assert sar.authorize(attrs).decision is Decision.ALLOW
    assert len(rest.sent) == 1
    path, body = rest.sent[0]
    assert path == SUBJECT_ACCESS_REVIEWS
    assert body["spec"] == {
        "user": "ann",
        "uid": "u-ann",
        "groups": ["devs", AUTHENTICATED_GROUP],
        "extra": {"scopes": ["a"]},
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }
    rest.answers = [(201, {"status": {"allowed": False, "reason": "no binding"}})]
    other = Attributes(ANN, "head", "/metrics")
    verdict = sar.authorize(other)
    assert (verdict.decision, verdict.reason) == (Decision.NO_OPINION, "no binding")
    sar.authorize(other)
    assert len(rest.sent) == 2  # the denial is cached
    clock.now += 6  # past the deny TTL, within the allow TTL
    rest.answers = [(201, {"status": {"allowed": True}})]
    assert sar.authorize(other).decision is Decision.ALLOW
    assert sar.authorize(attrs).decision is Decision.ALLOW
    assert len(rest.sent) == 3
    rest.answers = [(201, {"status": {"allowed": False, "denied": True}})]
    assert sar.authorize(Attributes(ANN, "get", "/x")).decision is Decision.DENY


def test_an_unreachable_sar_is_an_error_and_is_not_cached() -> None:
    rest = FakeRest(urllib3.exceptions.ProtocolError("refused"))
    sar = SubjectAccessReviewAuthorizer(review_client(rest))
    verdict = sar.authorize(Attributes(ANN, "get", "/metrics"))
    assert verdict.decision is Decision.NO_OPINION
    assert "refused" in verdict.error
    rest.answers = [(201, {"status": {"allowed": True}})]
    assert sar.authorize(Attributes(ANN, "get", "/metrics")).decision is Decision.ALLOW


def test_always_allow_paths_exact_or_trailing_star() -> None:
    paths = AlwaysAllowPaths(["/healthz", "/debug/pods/team-a/*"])

    def allowed(path: str) -> bool:
        return paths.authorize(Attributes(ANONYMOUS, "get", path)).decision is Decision.ALLOW

    assert allowed("/healthz")
    assert not allowed("/healthz/ping")
    assert allowed("/debug/pods/team-a/web")
    assert not allowed("/debug/pods/team-b/web")
    with pytest.raises(ValueError, match="trailing"):
        check_always_allow_paths(["/a*/b"])


def test_union_first_decision_wins_and_system_masters_skips_the_review() -> None:
    rest = FakeRest((201, {"status": {"allowed": False}}))
    union = UnionAuthorizer(
        [PrivilegedGroups(["system:masters"]), AlwaysAllowPaths(["/healthz"]), SubjectAccessReviewAuthorizer(
            review_client(rest))]
    )  # fmt: skip
    admin = User("admin", groups=("system:masters",))
    assert union.authorize(Attributes(admin, "get", "/metrics")).decision is Decision.ALLOW
    assert union.authorize(Attributes(ANONYMOUS, "get", "/healthz")).decision is Decision.ALLOW
    assert rest.sent == []
    assert union.authorize(Attributes(ANONYMOUS, "get", "/metrics")).decision is Decision.NO_OPINION
    assert len(rest.sent) == 1


# --- the guard's answers ------------------------------------------------------------------------------


def guard(*answers: tuple[int, Any] | Exception) -> tuple[RequestGuard, FakeRest]:
    rest = FakeRest(*answers)
    client = review_client(rest)
    authn = Authenticator(
        CachingTokenAuthenticator(TokenReviewAuthenticator(client)), client_certificates=True
    )
    authz = UnionAuthorizer(
        [PrivilegedGroups(["system:masters"]), AlwaysAllowPaths(["/healthz", "/readyz", "/livez"]),
         SubjectAccessReviewAuthorizer(client)]
    )  # fmt: skip
    return RequestGuard(authn, authz), rest


def test_guard_answers_401_403_and_500_as_kube_scheduler() -> None:
    g, rest = guard(token_review("", [], authenticated=False))
    _, refusal = g.check("GET", "/healthz", "Bearer wrong", None)
    assert refusal is not None and refusal.status == 401  # authentication runs before the path check
    assert orjson.loads(refusal.body)["reason"] == "Unauthorized"
    assert g.check("GET", "/healthz", None, None) == (ANONYMOUS, None)

    rest.answers = [(201, {"status": {"allowed": False}})]
    _, refusal = g.check("GET", "/metrics", None, None)
    assert refusal is not None and refusal.status == 403
    assert (
        orjson.loads(refusal.body)["message"]
        == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    )
    _, refusal = g.check("HEAD", "/debug/pods/ns/p", None, None)
    assert refusal is not None
    assert 'cannot head path "/debug/pods/ns/p"' in orjson.loads(refusal.body)["message"]

    rest.answers = [urllib3.exceptions.ProtocolError("refused")]
    _, refusal = g.check("GET", "/configz", None, None)
    assert refusal is not None and refusal.status == 500
    assert refusal.body.startswith(b'Internal Server Error: "/configz": ')


# --- TLS and the server -----------------------------------------------------------------------------


def test_cert_dir_gets_a_self_signed_pair_that_the_next_start_reuses(tmp_path: Path) -> None:
    first = serving_cert(None, None, str(tmp_path / "certs"), "0.0.0.0")
    key = tmp_path / "certs" / f"{PAIR_NAME}.key"
    assert (tmp_path / "certs" / f"{PAIR_NAME}.crt").read_bytes() == first.cert_pem
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    again = serving_cert(None, None, str(tmp_path / "certs"), "0.0.0.0")
    assert again.cert_pem == first.cert_pem and "written" not in again.source
    cert = x509.load_pem_x509_certificate(first.cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    in_memory = serving_cert(None, None, None, "10.1.2.3")
    cert = x509.load_pem_x509_certificate(in_memory.cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "10.1.2.3"}


def _ca(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return key, cert


def client_pair(
    tmp: Path, ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate], cn: str, org: str
) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org), x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(ca[1].subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca[0], hashes.SHA256())
    )  # fmt: skip
    crt, pem = tmp / f"{cn}.crt", tmp / f"{cn}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return str(crt), str(pem)


class RecordingGuard(RequestGuard):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None, str | None]] = []

    def check(self, method: str, path: str, authorization: str | None, peer_cert: Any) -> Any:
        cn = certificate_user(peer_cert).name if peer_cert else None
        self.seen.append((method, path, authorization, cn))
        return None, None


@pytest.fixture
def secure_server() -> Iterator[tuple[HealthServer, RecordingGuard, ServerTLS]]:
    tls = ServerTLS(generate_self_signed("127.0.0.1"))
    recording = RecordingGuard()
    server = HealthServer("127.0.0.1", 0, tls=tls, guard=recording, readiness=lambda: (True, ""),
                          liveness=lambda: (True, ""))  # fmt: skip
    server.start()
    yield server, recording, tls
    server.stop()


def _get(
    server: HealthServer,
    path: str,
    headers: dict[str, str] | None = None,
    cert: tuple[str, str] | None = None,
) -> int:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if cert:
        context.load_cert_chain(*cert)
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        return conn.getresponse().status
    finally:
        conn.close()


def test_every_path_goes_through_the_guard_with_the_decoded_path(
    secure_server: tuple[HealthServer, RecordingGuard, ServerTLS],
) -> None:
    server, recording, _ = secure_server
    assert server.url.startswith("https://")
    assert _get(server, "/metrics", {"Authorization": "Bearer t"}) == 200
    assert _get(server, "/debug/pods/team%2Da/web/") == 404  # no debug handler here; guarded all the same
    assert recording.seen == [
        ("GET", "/metrics", "Bearer t", None),
        ("GET", "/debug/pods/team-a/web", None, None),
    ]


def test_a_refusal_is_answered_before_the_handler(tmp_path: Path) -> None:
    g, _ = guard((201, {"status": {"allowed": False}}))
    served: list[str] = []

    def debug(key: str) -> tuple[int, bytes]:
        served.append(key)
        return 200, b"{}"

    tls = ServerTLS(generate_self_signed("127.0.0.1"))
    server = HealthServer("127.0.0.1", 0, tls=tls, guard=g, readiness=lambda: (True, ""),
                          liveness=lambda: (True, ""), debug_pods=debug)  # fmt: skip
    server.start()
    try:
        assert _get(server, "/debug/pods/ns/p") == 403
        assert _get(server, "/livez") == 200
    finally:
        server.stop()
    assert served == []


def test_client_certificates_from_the_client_ca_identify_and_others_fail_the_handshake(
    secure_server: tuple[HealthServer, RecordingGuard, ServerTLS], tmp_path: Path
) -> None:
    server, recording, tls = secure_server
    ca, other = _ca("cluster-ca"), _ca("other-ca")
    ann = client_pair(tmp_path, ca, "ann", "devs")
    eve = client_pair(tmp_path, other, "eve", "devs")

    def last_user() -> str | None:
        return recording.seen[-1][3]

    # No client CA yet: certificates are not asked for, so none is seen.
    assert _get(server, "/metrics", cert=ann) == 200
    assert last_user() is None
    tls.set_client_ca(ca[1].public_bytes(serialization.Encoding.PEM))
    assert _get(server, "/metrics", cert=ann) == 200
    assert last_user() == "ann"
    assert _get(server, "/metrics") == 200  # a certificate is asked for, not required
    assert last_user() is None
    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        _get(server, "/metrics", cert=eve)
    assert all(seen[3] != "eve" for seen in recording.seen)


def test_configz_is_served_behind_the_guard_as_kube_schedulers_componentconfig(tmp_path: Path) -> None:
    allowed, _ = guard((201, {"status": {"allowed": True}}))
    denied, _ = guard((201, {"status": {"allowed": False}}))
    body = b'{"componentconfig":{"kind":"KubeSchedulerConfiguration"}}'
    for g, want in ((allowed, 200), (denied, 403)):
        tls = ServerTLS(generate_self_signed("127.0.0.1"))
        server = HealthServer("127.0.0.1", 0, tls=tls, guard=g, readiness=lambda: (True, ""),
                              liveness=lambda: (True, ""), configz=lambda: body)  # fmt: skip
        server.start()
        try:
            assert _get(server, "/configz") == want  # anonymous: straight to the SubjectAccessReview
        finally:
            server.stop()
