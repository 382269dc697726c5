"""The Binding and Event protobuf bodies, decoded by Google's protobuf runtime (an independent decoder).

The message schemas below restate k8s.io/api/core/v1/generated.proto (Binding, ObjectReference),
k8s.io/api/events/v1/generated.proto (Event), k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto
(ObjectMeta, MicroTime) and k8s.io/apimachinery/pkg/runtime/generated.proto (Unknown, TypeMeta) with
the fields the scheduler sends; the runtime parses the bytes and the test compares field by field.
"""

from __future__ import annotations

import calendar
import time
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.client import k8s_protobuf
from scheduler.client.events import micro_time

STRING = 9
INT64 = 3
INT32 = 5
MESSAGE = 11
BYTES = 12

SCHEMA: dict[str, list[tuple[str, int, int, str]]] = {
    "TypeMeta": [("apiVersion", 1, STRING, ""), ("kind", 2, STRING, "")],
    "Unknown": [
        ("typeMeta", 1, MESSAGE, "TypeMeta"),
        ("raw", 2, BYTES, ""),
        ("contentEncoding", 3, STRING, ""),
        ("contentType", 4, STRING, ""),
    ],
    "ObjectMeta": [
        ("name", 1, STRING, ""),
        ("generateName", 2, STRING, ""),
        ("namespace", 3, STRING, ""),
        ("uid", 5, STRING, ""),
        ("resourceVersion", 6, STRING, ""),
    ],
    "MicroTime": [("seconds", 1, INT64, ""), ("nanos", 2, INT32, "")],
    "ObjectReference": [
        ("kind", 1, STRING, ""),
        ("namespace", 2, STRING, ""),
        ("name", 3, STRING, ""),
        ("uid", 4, STRING, ""),
        ("apiVersion", 5, STRING, ""),
        ("resourceVersion", 6, STRING, ""),
        ("fieldPath", 7, STRING, ""),
    ],
    "Binding": [("metadata", 1, MESSAGE, "ObjectMeta"), ("target", 2, MESSAGE, "ObjectReference")],
    "Event": [
        ("metadata", 1, MESSAGE, "ObjectMeta"),
        ("eventTime", 2, MESSAGE, "MicroTime"),
        ("reportingController", 4, STRING, ""),
        ("reportingInstance", 5, STRING, ""),
        ("action", 6, STRING, ""),
        ("reason", 7, STRING, ""),
        ("regarding", 8, MESSAGE, "ObjectReference"),
        ("related", 9, MESSAGE, "ObjectReference"),
        ("note", 10, STRING, ""),
        ("type", 11, STRING, ""),
        ("deprecatedCount", 15, INT32, ""),
    ],
}


def _classes() -> dict[str, Any]:
    file = descriptor_pb2.FileDescriptorProto(name="k8s_subset.proto", package="k8s", syntax="proto2")
    for name, fields in SCHEMA.items():
        message = file.message_type.add(name=name)
        for field_name, number, kind, type_name in fields:
            field = message.field.add(name=field_name, number=number, type=kind, label=1)
            if type_name:
                field.type_name = f".k8s.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"k8s.{name}")) for name in SCHEMA
    }


CLASSES = _classes()


def _unwrap(body: bytes, kind: str) -> Any:
    assert body[:4] == b"k8s\x00"
    unknown = CLASSES["Unknown"].FromString(body[4:])
    assert unknown.typeMeta.kind == kind
    return unknown.typeMeta.apiVersion, CLASSES[kind].FromString(unknown.raw)


def _set_fields(message: Any) -> dict[str, Any]:
    return {field.name: value for field, value in message.ListFields()}


def test_binding_decodes_to_the_json_body() -> None:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "pod-ü", "namespace": "ns", "uid": "0f1e-uid"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-7"},
    }
    api_version, binding = _unwrap(k8s_protobuf.encode_binding(body), "Binding")
    assert api_version == "v1"
    assert _set_fields(binding.metadata) == {"name": "pod-ü", "namespace": "ns", "uid": "0f1e-uid"}
    assert _set_fields(binding.target) == {"apiVersion": "v1", "kind": "Node", "name": "node-7"}
    assert set(_set_fields(binding)) == {"metadata", "target"}


@pytest.mark.parametrize("stamp", [0.0, 1_795_000_000.25, 1_795_000_000.999_999_6, time.time()])
def test_event_decodes_to_the_json_body(stamp: float) -> None:
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.18a2b3c4d5e6f708", "namespace": "ns"},
        "eventTime": micro_time(stamp),
        "reportingController": "py-scheduler",
        "reportingInstance": "py-scheduler-host_1234",
        "action": "Binding",
        "reason": "Scheduled",
        "note": "Successfully assigned ns/p to node-1",
        "type": "Normal",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": "ns",
            "name": "p",
            "uid": "u-1",
            "resourceVersion": "4711",
        },
    }
    api_version, event = _unwrap(k8s_protobuf.encode_event(body), "Event")
    assert api_version == "events.k8s.io/v1"
    fields = _set_fields(event)
    assert set(fields) == set(body) - {"apiVersion", "kind"}
    for name in ("reportingController", "reportingInstance", "action", "reason", "note", "type"):
        assert fields[name] == body[name]
    assert _set_fields(event.metadata) == body["metadata"]
    assert _set_fields(event.regarding) == body["regarding"]
    # The same instant as the JSON string: whole seconds since the epoch plus nanoseconds.
    text = body["eventTime"]
    whole, fraction = text[:19], text[20:-1]
    assert event.eventTime.seconds == calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
    assert event.eventTime.nanos == int(fraction.ljust(9, "0"))


def test_an_unknown_field_is_refused_not_dropped() -> None:
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "ns"},
        "series": {"count": 2},
    }
    with pytest.raises(ValueError, match="series"):
        k8s_protobuf.encode_event(body)
    with pytest.raises(ValueError, match=r"metadata.*labels"):
        k8s_protobuf.encode_binding(
            {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "labels": {"a": "b"}}}
        )


def test_the_wrong_kind_or_a_bad_time_is_refused() -> None:
    with pytest.raises(ValueError, match="Binding"):
        k8s_protobuf.encode_binding({"apiVersion": "v1", "kind": "Pod"})
    bad = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "eventTime": "yesterday"}
    with pytest.raises(ValueError, match="RFC 3339"):
        k8s_protobuf.encode_event(bad)


def test_long_strings_use_multi_byte_lengths() -> None:
    note = "x" * 1000  # a length over 127 takes two varint bytes
    body = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "note": note, "type": "Warning"}
    _, event = _unwrap(k8s_protobuf.encode_event(body), "Event")
    assert event.note == note
    assert event.type == "Warning"


TEXT = st.text(max_size=200)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(TEXT, min_size=15, max_size=15),
    stamp=st.floats(min_value=0, max_value=4_000_000_000, allow_nan=False),
)
def test_the_straight_path_writes_what_the_field_tables_write(texts: list[str], stamp: float) -> None:
    """The scheduler's usual shapes take a faster path; any strings (empty, non-ASCII, 128 bytes or
    more, which leave it for the tables) must give the tables' bytes, which the decoder reads back."""
    t = iter(texts)
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": next(t), "namespace": next(t), "uid": next(t)},
        "target": {"apiVersion": "v1", "kind": "Node", "name": next(t)},
    }
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": next(t), "namespace": next(t)},
        "eventTime": micro_time(stamp),
        "reportingController": next(t),
        "reportingInstance": next(t),
        "action": next(t),
        "reason": next(t),
        "note": next(t),
        "type": next(t),
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": next(t),
            "name": next(t),
            "uid": next(t),
            "resourceVersion": "1",
        },
    }
    assert k8s_protobuf.encode_binding(binding) == k8s_protobuf.encode_with_tables(
        binding, k8s_protobuf._BINDING
    )
    encoded = k8s_protobuf.encode_event(event)
    assert encoded == k8s_protobuf.encode_with_tables(event, k8s_protobuf._EVENT)
    _, decoded = _unwrap(encoded, "Event")
    assert (decoded.note, decoded.regarding.uid, decoded.metadata.name) == (
        event["note"],
        event["regarding"]["uid"],  # type: ignore[index]
        event["metadata"]["name"],  # type: ignore[index]
    )


@pytest.mark.parametrize("pod_name_length", [40, 80, 90, 110, 127])
def test_fields_short_alone_but_long_together_give_the_tables_bytes(pod_name_length: int) -> None:
    """Each string under 128 bytes, their message over it (a long pod name beside its namespace and
    uid): the message's length takes two bytes, so the straight path must not write it as one."""
    pod, namespace, uid = "p" * pod_name_length, "team-namespace", "0123abcd-" * 4
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod, "namespace": namespace, "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-" + "n" * 100},
    }
    assert k8s_protobuf.encode_binding(binding) == k8s_protobuf.encode_with_tables(
        binding, k8s_protobuf._BINDING
    )
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{pod}.{'f' * 16}"[:127], "namespace": namespace},
        "eventTime": micro_time(1_795_000_000.5),
        "reportingController": "py-scheduler",
        "reportingInstance": "py-scheduler-host",
        "action": "Binding",
        "reason": "Scheduled",
        "note": f"Successfully assigned {namespace}/{pod} to node-1",
        "type": "Normal",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": namespace,
            "name": pod,
            "uid": uid,
            "resourceVersion": "12345",
        },
    }
    encoded = k8s_protobuf.encode_event(event)
    assert encoded == k8s_protobuf.encode_with_tables(event, k8s_protobuf._EVENT)
    _, decoded = _unwrap(encoded, "Event")
    assert (decoded.metadata.name, decoded.regarding.name) == (event["metadata"]["name"], pod)  # type: ignore[index]


def test_a_usual_body_with_a_non_string_falls_back_and_is_refused() -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "namespace": "ns", "uid": 7},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n"},
    }
    with pytest.raises(ValueError, match=r"Binding.metadata.uid: expected a string, got int"):
        k8s_protobuf.encode_binding(body)
