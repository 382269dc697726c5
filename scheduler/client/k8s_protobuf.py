"""Kubernetes' protobuf wire form for the scheduler's two per-pod writes: a Binding and an Event.

The API server decodes a protobuf body several times cheaper than the same object in JSON, and a
scheduler writes two of them per pod (kube-scheduler sends both as protobuf). Only these two messages
are needed, each with the fields the scheduler sets, so they are written here by hand (a dozen lines
of the wire format) rather than generated: see README.md ("Dependencies").

The body is the API server's envelope: the magic ``k8s\\x00`` followed by a ``runtime.Unknown``
(k8s.io/apimachinery/pkg/runtime/generated.proto) whose ``raw`` holds the object's message, from
k8s.io/api/core/v1/generated.proto (Binding, ObjectReference), k8s.io/api/events/v1/generated.proto
(Event) and k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto (ObjectMeta, MicroTime). Both
encoders take the JSON-shaped dict the JSON path sends, so the two paths write the same object; a key
they do not know raises ``ValueError`` instead of being left out.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Mapping
from typing import Any

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_LEN = 2  # wire type of strings, bytes and embedded messages
_VARINT = 0


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64/int32 negatives: two's complement over ten bytes
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _bytes_field(number: int, value: bytes) -> bytes:
    return _key(number, _LEN) + _varint(len(value)) + value


def _string_field(number: int, value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{what}: expected a string, got {type(value).__name__}")
    # proto2 optional: an empty string is sent as Go's marshaller does, since it cannot tell unset.
    return _bytes_field(number, value.encode())


def _int_field(number: int, value: int) -> bytes:
    return _key(number, _VARINT) + _varint(value)


def _message(
    obj: object, fields: Mapping[str, tuple[int, Callable[[int, Any, str], bytes]]], what: str
) -> bytes:
    """``obj``'s known keys in field-number order (as Go writes them); an unknown key raises."""
    if not isinstance(obj, Mapping):
        raise ValueError(f"{what}: expected an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(fields))
    if unknown:
        raise ValueError(f"{what}: no protobuf encoding for field(s) {', '.join(unknown)}")
    parts = [
        (number, encode(number, obj[name], f"{what}.{name}"))
        for name, (number, encode) in fields.items()
        if obj.get(name) is not None
    ]
    return b"".join(part for _, part in sorted(parts, key=lambda p: p[0]))


def _embedded(
    fields: Mapping[str, tuple[int, Callable[[int, Any, str], bytes]]],
) -> Callable[[int, Any, str], bytes]:
    def encode(number: int, value: Any, what: str) -> bytes:
        return _bytes_field(number, _message(value, fields, what))

    return encode


_MICRO_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z$")


def _micro_time(number: int, value: Any, what: str) -> bytes:
    """metav1.MicroTime {seconds, nanos} from RFC 3339 in UTC, as ``events.micro_time`` writes it."""
    match = _MICRO_TIME.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{what}: expected an RFC 3339 UTC time, got {value!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    nanos = int((match[7] or "0").ljust(9, "0"))
    body = _int_field(1, seconds) + (_int_field(2, nanos) if nanos else b"")
    return _bytes_field(number, body)


def _string(number: int, value: Any, what: str) -> bytes:
    return _string_field(number, value, what)


_OBJECT_META = {"name": (1, _string), "namespace": (3, _string), "uid": (5, _string)}
_OBJECT_REFERENCE = {
    "kind": (1, _string),
    "namespace": (2, _string),
    "name": (3, _string),
    "uid": (4, _string),
    "apiVersion": (5, _string),
    "resourceVersion": (6, _string),
    "fieldPath": (7, _string),
}
_TYPE_META = ("apiVersion", "kind")
_BINDING = {"metadata": (1, _embedded(_OBJECT_META)), "target": (2, _embedded(_OBJECT_REFERENCE))}
_EVENT = {
    "metadata": (1, _embedded(_OBJECT_META)),
    "eventTime": (2, _micro_time),
    "reportingController": (4, _string),
    "reportingInstance": (5, _string),
    "action": (6, _string),
    "reason": (7, _string),
    "regarding": (8, _embedded(_OBJECT_REFERENCE)),
    "related": (9, _embedded(_OBJECT_REFERENCE)),
    "note": (10, _string),
    "type": (11, _string),
}


def _envelope(obj: Mapping[str, Any], fields: Mapping[str, Any], api_version: str, kind: str) -> bytes:
    if obj.get("apiVersion") != api_version or obj.get("kind") != kind:
        raise ValueError(f"expected {api_version} {kind}, got {obj.get('apiVersion')} {obj.get('kind')}")
    raw = _message({k: v for k, v in obj.items() if k not in _TYPE_META}, fields, kind)
    type_meta = _string_field(1, api_version, "apiVersion") + _string_field(2, kind, "kind")
    unknown = _bytes_field(1, type_meta) + _bytes_field(2, raw)
    return MAGIC + unknown


def encode_binding(body: Mapping[str, Any]) -> bytes:
    """A v1 Binding (metadata name/namespace/uid, target) in the protobuf envelope."""
    return _envelope(body, _BINDING, "v1", "Binding")


def encode_event(body: Mapping[str, Any]) -> bytes:
    """An events.k8s.io/v1 Event as the scheduler creates it, in the protobuf envelope."""
    return _envelope(body, _EVENT, "events.k8s.io/v1", "Event")
