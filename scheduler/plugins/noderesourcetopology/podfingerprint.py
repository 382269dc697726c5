"""The pod-set fingerprint a node agent publishes with its NodeResourceTopology, as
github.com/k8stopologyawareschedwg/podfingerprint v0.2.2 (``podfingerprint.go``) computes it.

Each pod is hashed with XXH64: its namespace with seed 0, then its name seeded with that hash. The
hashes are sorted, each written as 8 little-endian bytes, and that byte string hashed with XXH64 (seed
0). The signature is ``pfp0`` + ``v001`` + the digest in hex (big-endian). XXH64 is written out here
(the xxHash specification) rather than pulled in as a dependency: the sets hashed are a node's pods.
"""

from __future__ import annotations

from collections.abc import Iterable

PREFIX = "pfp0"
VERSION = "v001"
# The NodeResourceTopology attribute holding the signature, and the one naming how it was computed.
ATTRIBUTE = "nodeTopologyPodsFingerprint"
ATTRIBUTE_METHOD = "nodeTopologyPodsFingerprintMethod"
# The legacy place of the signature: an annotation.
ANNOTATION = "topology.node.k8s.io/fingerprint"
METHOD_ALL = "all"
METHOD_WITH_EXCLUSIVE_RESOURCES = "with-exclusive-resources"

MATCH = "match"
MISMATCH = "fingerprint mismatch"
MALFORMED = "malformed fingerprint"
INCOMPATIBLE_VERSION = "incompatible version"

_MASK = (1 << 64) - 1
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _MASK
    return (_rotl(acc, 31) * _P1) & _MASK


def _merge(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _MASK


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 of ``data``."""
    n = len(data)
    i = 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _MASK
        v2 = (seed + _P2) & _MASK
        v3 = seed & _MASK
        v4 = (seed - _P1) & _MASK
        while i + 32 <= n:
            v1 = _round(v1, int.from_bytes(data[i : i + 8], "little"))
            v2 = _round(v2, int.from_bytes(data[i + 8 : i + 16], "little"))
            v3 = _round(v3, int.from_bytes(data[i + 16 : i + 24], "little"))
            v4 = _round(v4, int.from_bytes(data[i + 24 : i + 32], "little"))
            i += 32
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK
        for v in (v1, v2, v3, v4):
            acc = _merge(acc, v)
    else:
        acc = (seed + _P5) & _MASK
    acc = (acc + n) & _MASK
    while i + 8 <= n:
        acc ^= _round(0, int.from_bytes(data[i : i + 8], "little"))
        acc = (_rotl(acc, 27) * _P1 + _P4) & _MASK
        i += 8
    if i + 4 <= n:
        acc ^= (int.from_bytes(data[i : i + 4], "little") * _P1) & _MASK
        acc = (_rotl(acc, 23) * _P2 + _P3) & _MASK
        i += 4
    while i < n:
        acc ^= (data[i] * _P5) & _MASK
        acc = (_rotl(acc, 11) * _P1) & _MASK
        i += 1
    acc ^= acc >> 33
    acc = (acc * _P2) & _MASK
    acc ^= acc >> 29
    acc = (acc * _P3) & _MASK
    acc ^= acc >> 32
    return acc


def _pod_hash(namespace: str, name: str) -> int:
    return xxh64(name.encode(), xxh64(namespace.encode()))


def sign(pods: Iterable[tuple[str, str]]) -> str:
    """The signature of a set of pods given as (namespace, name); their order does not matter."""
    packed = b"".join(h.to_bytes(8, "little") for h in sorted(_pod_hash(ns, name) for ns, name in pods))
    return PREFIX + VERSION + xxh64(packed).to_bytes(8, "big").hex()


def check(expected: str, computed: str) -> str:
    """``MATCH`` when the published signature ``expected`` is the ``computed`` one, else why not
    (upstream's errors: malformed, incompatible version, mismatch)."""
    if len(expected) < len(PREFIX) + len(VERSION) + 8 or expected[:4] != PREFIX:
        return MALFORMED
    if expected[4:8] != VERSION:
        return INCOMPATIBLE_VERSION
    return MATCH if expected[8:] == computed[8:] else MISMATCH
