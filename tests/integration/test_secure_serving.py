"""Secure serving on the real control plane, side by side with kube-scheduler started with the same
flags: the same requests (anonymous, a wrong token, a valid but unauthorised ServiceAccount, an
authorised one, the cluster admin, a client certificate signed by the cluster's client CA) to each path
get the same status codes; a self-signed start; the review API unreachable (fail closed, as
kube-scheduler); explain as an allowed and as a refused user.

The module runs its own control plane: its API server has --client-ca-file, so it publishes the client
CA in kube-system/extension-apiserver-authentication, which both schedulers look up as in a cluster.
"""

from __future__ import annotations

import datetime
import http.client
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from devcluster.cluster import ControlPlane
from devcluster.credentials import write_kubeconfig
from devcluster.nodes import create_nodes, make_node
from devcluster.process import ManagedProcess
from devcluster.py_scheduler import REPO, SchedulerProcess, scheduler_config, wait_for

READER_ROLE = "secure-serving-test:reader"
CERT_GROUP = "secure-serving-certs"
SCHEDULER_NAME = "py-scheduler-secure"


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    signer: ec.EllipticCurvePrivateKey,
    *,
    ca: bool,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )  # fmt: skip
    if not ca:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    return builder.sign(signer, hashes.SHA256())


@dataclass
class Cluster:
    plane: ControlPlane
    client_cert: tuple[str, str]  # (cert, key) of CN=cert-user, O=CERT_GROUP, signed by the client CA
    foreign_cert: tuple[str, str]  # the same subject, signed by another CA
    tokens: dict[str, str]  # user -> bearer token
    kubeconfigs: dict[str, Path]
    workdir: Path


def _raw(plane: ControlPlane, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    with plane.api_client() as client:
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        request = client.param_serialize(
            method=method, resource_path=path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        response = client.call_api(*request, _request_timeout=30)
        data = response.read()
        return response.status, orjson.loads(data) if data else None


def _service_account_token(plane: ControlPlane, namespace: str, name: str) -> str:
    status, _ = _raw(plane, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts",
                     {"metadata": {"name": name}})  # fmt: skip
    assert status in (201, 409)
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    status, data = _raw(plane, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", body)
    assert status == 201, data
    token: str = data["status"]["token"]
    return token


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("secure-serving")
    ca_key, other_key, user_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "devcluster-client-ca")])
    other_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "someone-else-ca")])
    ca = _cert(ca_name, ca_name, ca_key, ca_key, ca=True)
    (work / "client-ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, CERT_GROUP),
                         x509.NameAttribute(NameOID.COMMON_NAME, "cert-user")])  # fmt: skip
    for name, issuer, signer in (("user", ca_name, ca_key), ("foreign", other_name, other_key)):
        (work / f"{name}.crt").write_bytes(
            _cert(subject, issuer, user_key, signer, ca=False).public_bytes(serialization.Encoding.PEM)
        )
    (work / "user.key").write_bytes(_key_pem(user_key))

    plane = ControlPlane(apiserver_args=[f"--client-ca-file={work / 'client-ca.crt'}"])
    plane.start()
    try:
        namespace = "secure-serving"
        assert _raw(plane, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})[0] == 201
        role = {"metadata": {"name": READER_ROLE},
                "rules": [{"nonResourceURLs": ["/metrics", "/debug/pods/*"], "verbs": ["get"]}]}  # fmt: skip
        assert _raw(plane, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)[0] == 201
        binding = {
            "metadata": {"name": READER_ROLE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER_ROLE},
            "subjects": [
                {"kind": "ServiceAccount", "name": "reader", "namespace": namespace},
                {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": CERT_GROUP},
            ],
        }
        assert (
            _raw(plane, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)[0] == 201
        )
        tokens = {
            "admin": plane.token,
            "reader": _service_account_token(plane, namespace, "reader"),
            "nobody": _service_account_token(plane, namespace, "nobody"),
            "wrong": "not-a-token-anyone-issued",
        }
        ca_pem = plane.ca_file.read_bytes()
        kubeconfigs = {
            user: write_kubeconfig(work / f"{user}.kubeconfig", plane.server, ca_pem, user, tokens[user])
            for user in ("reader", "nobody")
        }
        yield Cluster(
            plane,
            (str(work / "user.crt"), str(work / "user.key")),
            (str(work / "foreign.crt"), str(work / "user.key")),
            tokens,
            kubeconfigs,
            work,
        )
    finally:
        plane.stop()


def request(port: int, path: str, *, token: str | None = None, cert: tuple[str, str] | None = None) -> int:
    """The status of a GET over HTTPS (the certificate is self-signed); -1 when TLS refused us."""
    return fetch(port, path, token=token, cert=cert)[0]


def fetch(
    port: int, path: str, *, token: str | None = None, cert: tuple[str, str] | None = None
) -> tuple[int, bytes]:
    """Status and body of a GET over HTTPS; (-1, b"") when TLS refused us."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if cert is not None:
        context.load_cert_chain(*cert)
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        response = conn.getresponse()
        return response.status, response.read()
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return -1, b""
    finally:
        conn.close()


def _py_scheduler(cluster: Cluster, name: str, extra: list[str] | None = None) -> SchedulerProcess:
    config = scheduler_config(scheduler_name=SCHEDULER_NAME)
    proc = SchedulerProcess(cluster.plane.kubeconfig, cluster.workdir, config, name=name, extra_args=extra,
                            secure=True)  # fmt: skip
    proc.start()
    proc.wait_ready(timeout=60)
    return proc


@pytest.fixture(scope="module")
def side_by_side(cluster: Cluster) -> Iterator[tuple[SchedulerProcess, ManagedProcess]]:
    py = _py_scheduler(cluster, "py-secure")
    kube = cluster.plane.start_kube_scheduler(delegated_auth=True)
    try:
        yield py, kube
    finally:
        kube.stop()
        code = py.stop()
        assert code == 0, py.log_tail()


CALLERS: dict[str, dict[str, Any]] = {
    "anonymous": {},
    "wrong-token": {"token": "wrong"},
    "valid-unauthorised": {"token": "nobody"},
    "authorised": {"token": "reader"},
    "system:masters": {"token": "admin"},
    "client-certificate": {"cert": "client"},
}
PATHS = ("/healthz", "/readyz", "/livez", "/metrics", "/debug/pods/secure-serving/nope", "/configz")
# Where the answers may differ once a request is authorised: none. (kube-scheduler has no /debug/pods and
# answers 404, the same code as py-scheduler's "no record".)
AUTHORISED_DIFFERENCES: dict[str, tuple[int, int]] = {}


def _call(cluster: Cluster, port: int, path: str, caller: dict[str, Any]) -> int:
    token = cluster.tokens[caller["token"]] if "token" in caller else None
    cert = cluster.client_cert if caller.get("cert") else None
    return request(port, path, token=token, cert=cert)


def test_status_codes_match_kube_scheduler_for_every_caller_and_path(
    cluster: Cluster, side_by_side: tuple[SchedulerProcess, ManagedProcess]
) -> None:
    py, kube = side_by_side
    rows = []
    for who, caller in CALLERS.items():
        for path in PATHS:
            rows.append(
                (who, path, _call(cluster, kube.port, path, caller), _call(cluster, py.port, path, caller))
            )
    table = "\n".join(f"{who:20} {path:32} kube-scheduler {k}  py-scheduler {p}" for who, path, k, p in rows)
    differing = [(w, p, k, m) for w, p, k, m in rows if k != m and AUTHORISED_DIFFERENCES.get(p) != (k, m)]
    assert differing == [], table
    expected = {
        ("anonymous", "/healthz"): 200,
        ("anonymous", "/metrics"): 403,
        ("wrong-token", "/healthz"): 401,
        ("wrong-token", "/metrics"): 401,
        ("valid-unauthorised", "/livez"): 200,
        ("valid-unauthorised", "/metrics"): 403,
        ("valid-unauthorised", "/debug/pods/secure-serving/nope"): 403,
        ("authorised", "/metrics"): 200,
        ("authorised", "/configz"): 403,  # the reader role grants /metrics and /debug/pods/* only
        ("system:masters", "/metrics"): 200,
        ("system:masters", "/configz"): 200,
        ("client-certificate", "/metrics"): 200,
        ("client-certificate", "/debug/pods/secure-serving/nope"): 404,
    }
    got = {(w, p): m for w, p, _, m in rows}
    assert {key: got[key] for key in expected} == expected, table


def test_a_certificate_from_another_ca_is_refused(
    cluster: Cluster, side_by_side: tuple[SchedulerProcess, ManagedProcess]
) -> None:
    """kube-scheduler finishes the handshake and answers 401; Python's ssl fails the handshake
    (docs/security.md). Neither serves the request."""
    py, kube = side_by_side
    assert request(kube.port, "/metrics", cert=cluster.foreign_cert) == 401
    assert request(py.port, "/metrics", cert=cluster.foreign_cert) == -1
    assert request(py.port, "/healthz", cert=cluster.foreign_cert) == -1


def test_the_self_signed_certificate_names_localhost(
    side_by_side: tuple[SchedulerProcess, ManagedProcess],
) -> None:
    py, _ = side_by_side
    pem = ssl.get_server_certificate(("127.0.0.1", py.port))
    cert = x509.load_pem_x509_certificate(pem.encode())
    assert cert.issuer == cert.subject
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert "self-signed, in memory" in py.log_path.read_text()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_review_api_unreachable_fails_closed_like_kube_scheduler(cluster: Cluster) -> None:
    """TokenReview and SubjectAccessReview through a kubeconfig whose server does not answer: the
    health paths still answer anonymous callers, everything else fails (401 for a token, 500 for an
    anonymous request to a protected path), for both schedulers. The self-signed pair goes to --cert-dir."""
    dead = write_kubeconfig(
        cluster.workdir / "dead.kubeconfig",
        f"https://127.0.0.1:{_closed_port()}",
        cluster.plane.ca_file.read_bytes(),
        "admin",
        cluster.plane.token,
    )
    cert_dir = cluster.workdir / "py-certs"
    py = SchedulerProcess(
        cluster.plane.kubeconfig, cluster.workdir, scheduler_config(scheduler_name=SCHEDULER_NAME),
        name="py-dead",
        extra_args=["--authentication-kubeconfig", str(dead), "--authorization-kubeconfig", str(dead),
                    "--cert-dir", str(cert_dir)],
        secure=True,
    )  # fmt: skip
    # The flags given last win: the dead kubeconfig replaces the working one of secure mode.
    py.start()
    kube = cluster.plane.start_kube_scheduler(delegated_auth=True, auth_kubeconfig=dead)
    try:
        py.wait_ready(timeout=60)
        checks = [
            ("/healthz", None, 200),
            ("/metrics", None, 500),
            ("/metrics", cluster.tokens["reader"], 401),
            ("/healthz", cluster.tokens["reader"], 401),
        ]
        for path, token, expected in checks:
            assert (request(kube.port, path, token=token), request(py.port, path, token=token)) == (
                expected,
                expected,
            ), (path, token is not None)
        served = ssl.get_server_certificate(("127.0.0.1", py.port)).encode()
        on_disk = (cert_dir / "py-scheduler.crt").read_bytes()
        assert x509.load_pem_x509_certificate(served) == x509.load_pem_x509_certificate(on_disk)
    finally:
        kube.stop()
        assert py.stop() == 0, py.log_tail()


def _explain(kubeconfig: Path, endpoint: str, key: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler", "explain", key, "--kubeconfig", str(kubeconfig),
         "--endpoint", endpoint, "--insecure-skip-tls-verify", "-o", "json", "--no-reevaluate"],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
    )  # fmt: skip


def test_explain_as_an_allowed_and_a_refused_user(
    cluster: Cluster, side_by_side: tuple[SchedulerProcess, ManagedProcess]
) -> None:
    py, _ = side_by_side
    plane = cluster.plane
    with plane.api_client() as client:
        create_nodes(client, [make_node("secure-serving-node", cpu="4", memory="8Gi")])
    pod = {
        "metadata": {"name": "explained", "namespace": "secure-serving"},
        "spec": {"schedulerName": SCHEDULER_NAME,
                 "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": "100m"}}}]},
    }  # fmt: skip
    assert _raw(plane, "POST", "/api/v1/namespaces/secure-serving/pods", pod)[0] == 201
    wait_for(
        lambda: _raw(plane, "GET", "/api/v1/namespaces/secure-serving/pods/explained")[1]["spec"].get(
            "nodeName"
        ),
        60,
        "the pod bound by py-scheduler",
    )
    endpoint = py.url("")
    allowed = _explain(cluster.kubeconfigs["reader"], endpoint, "secure-serving/explained")
    assert allowed.returncode == 0, allowed.stderr
    record = orjson.loads(allowed.stdout)
    assert record["pod"] == "secure-serving/explained"
    assert record["attempts"][-1]["node"] == "secure-serving-node"

    refused = _explain(cluster.kubeconfigs["nobody"], endpoint, "secure-serving/explained")
    assert refused.returncode == 1
    assert refused.stdout == ""
    [answer] = [line for line in refused.stderr.splitlines() if line.startswith("  Answer:  HTTP 403: ")]
    assert "missing permission: get on the non-resource URL /debug/pods/secure-serving/explained" in answer
    assert "Traceback" not in refused.stderr


def test_configz_has_kube_schedulers_shape(
    cluster: Cluster, side_by_side: tuple[SchedulerProcess, ManagedProcess]
) -> None:
    """Both serve the effective v1 configuration under "componentconfig", with the same top-level fields
    and the same values for the fields py-scheduler's configuration sets alike."""
    py, kube = side_by_side
    admin = cluster.tokens["admin"]
    (kube_status, kube_body), (py_status, py_body) = (
        fetch(p.port, "/configz", token=admin) for p in (kube, py)
    )
    assert (kube_status, py_status) == (200, 200)
    kube_config, py_config = (
        orjson.loads(kube_body)["componentconfig"],
        orjson.loads(py_body)["componentconfig"],
    )
    assert (py_config["apiVersion"], py_config["kind"]) == (kube_config["apiVersion"], kube_config["kind"])
    missing = sorted(set(kube_config) - set(py_config))
    assert missing == [], (missing, sorted(py_config))
    for key in ("podInitialBackoffSeconds", "podMaxBackoffSeconds", "percentageOfNodesToScore"):
        assert py_config.get(key) == kube_config.get(key), key
