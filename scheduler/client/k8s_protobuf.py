"""Kubernetes' protobuf wire form for the scheduler's two per-pod writes: a Binding and an Event.

The API server decodes a protobuf body several times cheaper than the same object in JSON, and a
scheduler writes two of them per pod (kube-scheduler sends both as protobuf). Only these two messages
are needed, each with the fields the scheduler sets, so they are written here by hand (strings,
lengths and one timestamp) rather than generated: see README.md ("Dependencies").

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
from collections.abc import Mapping
from typing import Any

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# Per field, the key byte (field number << 3 | wire type 2: length-delimited) of fields 1 to 11.
_TAG = {number: bytes((number << 3 | 2,)) for number in range(1, 12)}
# A length under 128 is one varint byte: every field the scheduler sends but a long Event note.
_SHORT_LENGTH = [bytes((n,)) for n in range(128)]

_STRING, _MESSAGE, _MICRO_TIME = range(3)
# A message's fields in field-number order, as Go writes them: (JSON name, key byte, kind, sub-fields).
Fields = tuple[tuple[str, bytes, int, "Fields | None"], ...]


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64/int32 negatives: two's complement over ten bytes
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length(n: int) -> bytes:
    return _SHORT_LENGTH[n] if n < 128 else _varint(n)


def _message(obj: object, fields: Fields, names: frozenset[str], what: str) -> bytes:
    """``obj``'s fields (JSON nulls are absent, as for the API server); an unknown key raises.
    An empty string is written like any other: Go's generated code writes every string field."""
    if not isinstance(obj, dict):
        raise ValueError(f"{what}: expected an object, got {type(obj).__name__}")
    if unknown := obj.keys() - names:
        raise ValueError(f"{what}: no protobuf encoding for field(s) {', '.join(sorted(unknown))}")
    out: list[bytes] = []
    for name, tag, kind, sub in fields:
        value = obj.get(name)
        if value is None:
            continue
        if kind == _STRING:
            if type(value) is not str:
                raise ValueError(f"{what}.{name}: expected a string, got {type(value).__name__}")
            data = value.encode()
        elif kind == _MESSAGE:
            assert sub is not None
            data = _message(value, sub, _NAMES[id(sub)], f"{what}.{name}")
        else:
            data = _micro_time(value, f"{what}.{name}")
        out += (tag, _length(len(data)), data)
    return b"".join(out)


_MICRO_TIME_FORMAT = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z$")
# The last whole second seen: events are written within the same second, one after another.
# Kept with its encoded field (0x08: field 1, wire type 0 varint).
_last_second: tuple[str, bytes] = ("", b"")


def _micro_time(value: object, what: str) -> bytes:
    """metav1.MicroTime {seconds = 1, nanos = 2} from RFC 3339 in UTC, as ``events.micro_time`` writes it."""
    global _last_second
    stamp, seconds = _last_second
    if (
        isinstance(value, str)
        and len(value) == 27
        and value[:19] == stamp
        and value[19] == "."
        and value[26] == "Z"
    ):
        micros = value[20:26]
        if micros.isascii() and micros.isdigit():  # the same second as the last one: no parse of the date
            nanos = int(micros) * 1000
            return seconds + (b"\x10" + _varint(nanos) if nanos else b"")
    match = _MICRO_TIME_FORMAT.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{what}: expected an RFC 3339 UTC time, got {value!r}")
    assert isinstance(value, str)
    if value[:19] != stamp:
        year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
        epoch = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
        seconds = b"\x08" + _varint(epoch)
        _last_second = (value[:19], seconds)
    nanos = int((match[7] or "0").ljust(9, "0"))
    # nanos: field 2, wire type 0 (varint).
    return seconds + (b"\x10" + _varint(nanos) if nanos else b"")


_OBJECT_META: Fields = (
    ("name", _TAG[1], _STRING, None),
    ("namespace", _TAG[3], _STRING, None),
    ("uid", _TAG[5], _STRING, None),
)
_OBJECT_REFERENCE: Fields = tuple(
    (name, _TAG[number], _STRING, None)
    for number, name in enumerate(
        ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"), start=1
    )
)
_BINDING: Fields = (
    ("metadata", _TAG[1], _MESSAGE, _OBJECT_META),
    ("target", _TAG[2], _MESSAGE, _OBJECT_REFERENCE),
)
_EVENT: Fields = (
    ("metadata", _TAG[1], _MESSAGE, _OBJECT_META),
    ("eventTime", _TAG[2], _MICRO_TIME, None),
    ("reportingController", _TAG[4], _STRING, None),
    ("reportingInstance", _TAG[5], _STRING, None),
    ("action", _TAG[6], _STRING, None),
    ("reason", _TAG[7], _STRING, None),
    ("regarding", _TAG[8], _MESSAGE, _OBJECT_REFERENCE),
    ("related", _TAG[9], _MESSAGE, _OBJECT_REFERENCE),
    ("note", _TAG[10], _STRING, None),
    ("type", _TAG[11], _STRING, None),
)
_TYPE_META = frozenset(("apiVersion", "kind"))
_NAMES = {
    id(fields): frozenset(name for name, *_ in fields) | (_TYPE_META if top else frozenset())
    for fields, top in ((_OBJECT_META, False), (_OBJECT_REFERENCE, False), (_BINDING, True), (_EVENT, True))
}


def _envelope(obj: Mapping[str, Any], fields: Fields, type_meta: bytes, api_version: str, kind: str) -> bytes:
    if obj.get("apiVersion") != api_version or obj.get("kind") != kind:
        raise ValueError(f"expected {api_version} {kind}, got {obj.get('apiVersion')} {obj.get('kind')}")
    raw = _message(obj, fields, _NAMES[id(fields)], kind)
    # runtime.Unknown: typeMeta = 1, raw = 2 (contentEncoding and contentType unset).
    return MAGIC + type_meta + _TAG[2] + _length(len(raw)) + raw


def _type_meta(api_version: str, kind: str) -> bytes:
    inner = _TAG[1] + _length(len(api_version)) + api_version.encode() + _TAG[2] + _length(len(kind))
    inner += kind.encode()
    return _TAG[1] + _length(len(inner)) + inner


_BINDING_TYPE = _type_meta("v1", "Binding")
_EVENT_TYPE = _type_meta("events.k8s.io/v1", "Event")


def _embed(tag: bytes, data: bytes) -> bytes:
    return tag + _length(len(data)) + data


# The shapes the scheduler sends (``SchedulerApi.bind``, ``EventRecorder.event``) take a straight
# path: one bytes formatting per message instead of the field tables' loop, about ten times faster.
# Anything else (another key, a non-string, a value or nested message of 128 bytes or more) goes
# through the tables, which write the same bytes for these shapes (the tests hold them to it) and name
# what is wrong.
class _Unusual(Exception):
    pass


def _short(value: object) -> bytes:
    if type(value) is not str:
        raise _Unusual
    data = value.encode()
    if len(data) >= 128:
        raise _Unusual
    return data


def _short_length(n: int) -> int:
    """``n`` as a one-byte length (a varint under 128), for a nested message the straight path writes
    with ``%c``; longer ones go through the tables."""
    if n >= 128:
        raise _Unusual
    return n


def _usual_binding(body: Mapping[str, Any]) -> bytes:
    meta, target = body["metadata"], body["target"]
    if len(body) != 4 or len(meta) != 3 or len(target) != 3 or body["apiVersion"] != "v1":
        raise _Unusual
    name, namespace, uid = _short(meta["name"]), _short(meta["namespace"]), _short(meta["uid"])
    kind, node, version = _short(target["kind"]), _short(target["name"]), _short(target["apiVersion"])
    # ObjectMeta: name 1, namespace 3, uid 5. ObjectReference: kind 1, name 3, apiVersion 5.
    raw = b"\x0a%c\x0a%c%s\x1a%c%s\x2a%c%s" % (
        _short_length(6 + len(name) + len(namespace) + len(uid)),
        len(name),
        name,
        len(namespace),
        namespace,
        len(uid),
        uid,
    )
    raw += b"\x12%c\x0a%c%s\x1a%c%s\x2a%c%s" % (
        _short_length(6 + len(kind) + len(node) + len(version)),
        len(kind),
        kind,
        len(node),
        node,
        len(version),
        version,
    )
    return MAGIC + _BINDING_TYPE + _embed(_TAG[2], raw)


def _usual_event(body: Mapping[str, Any]) -> bytes:
    meta, ref = body["metadata"], body["regarding"]
    if len(body) != 11 or len(meta) != 2 or len(ref) != 6 or body["apiVersion"] != "events.k8s.io/v1":
        raise _Unusual
    name, namespace = _short(meta["name"]), _short(meta["namespace"])
    fields = (
        ref["kind"],
        ref["namespace"],
        ref["name"],
        ref["uid"],
        ref["apiVersion"],
        ref["resourceVersion"],
    )
    r = [_short(value) for value in fields]
    regarding = b"\x0a%c%s\x12%c%s\x1a%c%s\x22%c%s\x2a%c%s\x32%c%s" % (
        len(r[0]),
        r[0],
        len(r[1]),
        r[1],
        len(r[2]),
        r[2],
        len(r[3]),
        r[3],
        len(r[4]),
        r[4],
        len(r[5]),
        r[5],
    )
    _short_length(len(regarding))
    texts = (body["reportingController"], body["reportingInstance"], body["action"], body["reason"])
    t = [_short(value) for value in texts]
    kind = _short(body["type"])
    note = body["note"]
    if type(note) is not str:
        raise _Unusual
    note_bytes = note.encode()  # a FailedScheduling note is often 128 bytes or more
    raw = b"\x0a%c\x0a%c%s\x1a%c%s" % (
        _short_length(4 + len(name) + len(namespace)),
        len(name),
        name,
        len(namespace),
        namespace,
    )
    raw += _embed(_TAG[2], _micro_time(body["eventTime"], "Event.eventTime"))
    raw += b"\x22%c%s\x2a%c%s\x32%c%s\x3a%c%s\x42%c%s" % (
        len(t[0]),
        t[0],
        len(t[1]),
        t[1],
        len(t[2]),
        t[2],
        len(t[3]),
        t[3],
        len(regarding),
        regarding,
    )
    raw += _embed(_TAG[10], note_bytes) + b"\x5a%c%s" % (len(kind), kind)
    return MAGIC + _EVENT_TYPE + _embed(_TAG[2], raw)


def encode_binding(body: Mapping[str, Any]) -> bytes:
    """A v1 Binding (metadata name/namespace/uid, target) in the protobuf envelope."""
    if body.get("kind") == "Binding":
        try:
            return _usual_binding(body)
        except (_Unusual, KeyError, TypeError, AttributeError):
            pass
    return encode_with_tables(body, _BINDING)


def encode_event(body: Mapping[str, Any]) -> bytes:
    """An events.k8s.io/v1 Event as the scheduler creates it, in the protobuf envelope."""
    if body.get("kind") == "Event":
        try:
            return _usual_event(body)
        except (_Unusual, KeyError, TypeError, AttributeError):
            pass
    return encode_with_tables(body, _EVENT)


def encode_with_tables(body: Mapping[str, Any], fields: Fields) -> bytes:
    """The field tables' path (``_BINDING`` or ``_EVENT``), whatever the shape."""
    if fields is _BINDING:
        return _envelope(body, _BINDING, _BINDING_TYPE, "v1", "Binding")
    return _envelope(body, _EVENT, _EVENT_TYPE, "events.k8s.io/v1", "Event")
