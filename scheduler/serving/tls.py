"""The serving certificate and the server's TLS context, as k8s.io/apiserver's SecureServingOptions.

With ``--tls-cert-file``/``--tls-private-key-file`` those files are served. Otherwise a self-signed
certificate is made at start-up: written to ``<cert-dir>/py-scheduler.crt`` and ``.key`` when
``--cert-dir`` is given (and reused from there on the next start, as upstream's
``MaybeDefaultWithSelfSignedCerts`` does with its PairName), else kept in memory only.

Client certificates are requested when a client CA is known (``--client-ca-file`` or the cluster's
``extension-apiserver-authentication`` ConfigMap). Python's ``ssl`` verifies a presented certificate
during the handshake, so a certificate from another CA fails the handshake, where Go's
``RequestClientCert`` accepts it and its x509 authenticator answers 401 (docs/security.md).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

# The file names under --cert-dir (upstream's PairName is "kube-scheduler").
PAIR_NAME = "py-scheduler"
# Upstream's self-signed certificates (client-go's cert.GenerateSelfSignedCertKey) last a year.
SELF_SIGNED_DAYS = 365


class TLSConfigError(ValueError):
    """A certificate, key or CA that cannot be used; the message is one line naming the file or flag."""


@dataclass(frozen=True)
class CertKey:
    """A PEM certificate chain and its key, and where they came from (for log lines)."""

    cert_pem: bytes
    key_pem: bytes
    source: str


def _unspecified(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_unspecified
    except ValueError:
        return False


def generate_self_signed(bind_address: str, *, now: datetime.datetime | None = None) -> CertKey:
    """A self-signed serving certificate for ``localhost`` and 127.0.0.1, plus the bind address when
    it is a specific IP (upstream adds ``localhost`` to the DNS names for an unspecified one)."""
    start = now or datetime.datetime.now(datetime.UTC)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"localhost@{int(start.timestamp())}")])
    ips: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ipaddress.ip_address("127.0.0.1")]
    try:
        bound = ipaddress.ip_address(bind_address)
    except ValueError:
        bound = None
    if bound is not None and not bound.is_unspecified and bound not in ips:
        ips.append(bound)
    sans: list[x509.GeneralName] = [x509.DNSName("localhost")]
    sans += [x509.IPAddress(ip) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - datetime.timedelta(minutes=1))
        .not_valid_after(start + datetime.timedelta(days=SELF_SIGNED_DAYS))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=True,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertKey(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        "self-signed, in memory",
    )


def serving_cert(
    cert_file: str | None, key_file: str | None, cert_dir: str | None, bind_address: str
) -> CertKey:
    """The certificate to serve, chosen as SecureServingOptions does: the given files, else a pair
    already in ``cert_dir``, else a new self-signed one (written to ``cert_dir`` when given)."""
    if bool(cert_file) != bool(key_file):
        raise TLSConfigError("--tls-cert-file and --tls-private-key-file go together")
    if cert_file and key_file:
        return CertKey(_read(cert_file, "--tls-cert-file"), _read(key_file, "--tls-private-key-file"),
                       f"{cert_file}, {key_file}")  # fmt: skip
    if cert_dir:
        crt, key = Path(cert_dir) / f"{PAIR_NAME}.crt", Path(cert_dir) / f"{PAIR_NAME}.key"
        if crt.is_file() and key.is_file():
            return CertKey(_read(str(crt), "--cert-dir"), _read(str(key), "--cert-dir"), f"{crt}, {key}")
        made = generate_self_signed(bind_address)
        try:
            os.makedirs(cert_dir, mode=0o755, exist_ok=True)
            crt.write_bytes(made.cert_pem)
            # The key is written private from the start, never readable by others even briefly.
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(made.key_pem)
        except OSError as err:
            raise TLSConfigError(f"--cert-dir {cert_dir}: cannot write the self-signed pair: {err}") from None
        return CertKey(made.cert_pem, made.key_pem, f"self-signed, written to {crt}, {key}")
    return generate_self_signed(bind_address)


def _read(path: str, flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise TLSConfigError(f"{flag} {path}: {err.strerror or err}") from None


@contextlib.contextmanager
def _pem_paths(cert: CertKey) -> Iterator[tuple[str, str]]:
    """Paths ``load_cert_chain`` can read for a pair held in memory: memfd files under /proc/self/fd
    (nothing touches a file system), or a private temporary directory removed at once where memfd
    is missing."""
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None and os.path.isdir("/proc/self/fd"):
        fds = [memfd("py-scheduler-cert"), memfd("py-scheduler-key")]
        try:
            for fd, data in zip(fds, (cert.cert_pem, cert.key_pem), strict=True):
                os.write(fd, data)
            yield f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}"
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="py-scheduler-tls-") as tmp:
        crt, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        crt.write_bytes(cert.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(cert.key_pem)
        yield str(crt), str(key)


def client_ca_bundle(pem: bytes, source: str) -> bytes:
    """``pem`` if it holds at least one CA certificate ``ssl`` can load, else a one-line error."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_verify_locations(cadata=pem.decode("ascii", errors="replace"))
    except (ssl.SSLError, ValueError) as err:
        raise TLSConfigError(f"{source}: no usable CA certificate ({err})") from None
    return pem


class ServerTLS:
    """The server's TLS context. Each accepted connection is wrapped with the current one, so a new
    client CA applies to new connections without restarting the listener."""

    def __init__(self, cert: CertKey, client_ca: bytes | None = None) -> None:
        self.cert = cert
        self._lock = threading.Lock()
        self._current = self._build(client_ca)

    def _build(self, client_ca: bytes | None) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            with _pem_paths(self.cert) as (crt, key):
                context.load_cert_chain(crt, key)
        except (ssl.SSLError, OSError) as err:
            raise TLSConfigError(f"serving certificate ({self.cert.source}): {err}") from None
        if client_ca:
            # Ask for a certificate, do not require one: bearer tokens and anonymous requests
            # come without. A presented certificate must chain to the client CA.
            context.verify_mode = ssl.CERT_OPTIONAL
            context.load_verify_locations(cadata=client_ca.decode("ascii", errors="replace"))
        return context

    def set_client_ca(self, client_ca: bytes | None) -> None:
        context = self._build(client_ca)
        with self._lock:
            self._current = context

    def wrap(self, sock: socket.socket) -> ssl.SSLSocket:
        with self._lock:
            context = self._current
        # Handshake lazily on the handler thread: a slow client must not block accept().
        return context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
