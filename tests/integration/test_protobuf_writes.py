"""The real API server takes the protobuf Binding and Event and stores what the JSON path stores."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from scheduler.client.api import BindingConflict, SchedulerApi
from scheduler.client.events import EventRecorder
from scheduler.client.kubeclient import RestClient, load_configuration

# Set by the server, so different between any two objects.
VOLATILE = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "name")


def _pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": "nobody",
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def _get(api: SchedulerApi, path: str) -> dict[str, Any]:
    status, data = api.rest.request("GET", path)
    assert status == 200, data
    decoded: dict[str, Any] = orjson.loads(data)
    return decoded


def _comparable(obj: dict[str, Any], *names: str) -> dict[str, Any]:
    """``obj`` without what the server sets per object, with ``names`` (the pod's name) masked."""
    text = orjson.dumps({k: v for k, v in obj.items() if k != "metadata"}).decode()
    for name in names:
        text = text.replace(name, "<pod>")
    meta = {k: v for k, v in obj["metadata"].items() if k not in VOLATILE}
    rest: dict[str, Any] = orjson.loads(text)
    # The Binding's PodScheduled condition is stamped in whole seconds by the server: the two binds
    # may straddle a second.
    for condition in rest.get("status", {}).get("conditions", ()):
        condition.pop("lastTransitionTime", None)
    return {"metadata": meta, **rest}


@pytest.mark.usefixtures("run_id")
def test_protobuf_binding_and_event_store_the_same_objects_as_json(
    control_plane: Any, core_v1: Any, namespace: str
) -> None:
    core_v1.create_node(
        body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"pb-node-{namespace}"}},
    )
    try:
        rest = RestClient(load_configuration(str(control_plane.kubeconfig)), pool_size=4)
        apis = {fmt: SchedulerApi(rest, protobuf_writes=fmt == "protobuf") for fmt in ("json", "protobuf")}
        node = f"pb-node-{namespace}"
        pods: dict[str, dict[str, Any]] = {}
        for fmt, api in apis.items():
            created = core_v1.api_client.sanitize_for_serialization(
                core_v1.create_namespaced_pod(namespace, _pod(f"p-{fmt}", namespace))
            )
            meta = created["metadata"]
            api.bind(namespace, meta["name"], meta["uid"], node)
            recorder = EventRecorder(api, reporting_instance="pb-test", clock=lambda: 1_795_000_000.123456)
            recorder.event(
                created,
                event_type="Normal",
                reason="Scheduled",
                action="Binding",
                message=f"Successfully assigned {namespace}/{meta['name']} to {node}",
                controller="py-scheduler",
                aggregate=False,
                inline=True,
            )
            recorder.shutdown(wait=True)
            pods[fmt] = _get(api, f"/api/v1/namespaces/{namespace}/pods/{meta['name']}")
            assert pods[fmt]["spec"]["nodeName"] == node

        # The bound pods differ only in what the server sets per object.
        assert _comparable(pods["protobuf"], "p-protobuf") == _comparable(pods["json"], "p-json")
        # Both Bindings were recorded as the same field manager's update.
        managers = {
            fmt: sorted((m["manager"], m["operation"]) for m in pod["metadata"]["managedFields"])
            for fmt, pod in pods.items()
        }
        assert managers["protobuf"] == managers["json"]

        events = {
            e["regarding"]["name"]: e
            for e in _get(apis["json"], f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]
        }
        assert set(events) == {"p-json", "p-protobuf"}
        assert events["p-protobuf"]["eventTime"] == "2026-11-18T11:06:40.123456Z"
        pb_event = _comparable(events["p-protobuf"], "p-protobuf", pods["protobuf"]["metadata"]["uid"])
        json_event = _comparable(events["p-json"], "p-json", pods["json"]["metadata"]["uid"])
        # regarding.resourceVersion is each pod's own version at creation time.
        for event in (pb_event, json_event):
            event["regarding"].pop("resourceVersion")
        assert pb_event == json_event

        # An error answer is still JSON and still read: binding the bound pod again is a conflict.
        meta = pods["protobuf"]["metadata"]
        with pytest.raises(BindingConflict) as conflict:
            apis["protobuf"].bind(namespace, meta["name"], meta["uid"], node)
        assert conflict.value.status == 409
        assert "already" in conflict.value.detail
        rest.close()
    finally:
        core_v1.delete_node(f"pb-node-{namespace}")


@pytest.mark.usefixtures("run_id")
@pytest.mark.parametrize("name_length", [100, 200])
def test_a_pod_with_a_long_name_is_bound_and_gets_its_event_through_protobuf(
    control_plane: Any, core_v1: Any, namespace: str, name_length: int
) -> None:
    """Names long enough that the Binding's and the Event's nested messages pass 127 bytes (their
    lengths take two bytes) or that single fields do: the API server takes both and stores them."""
    node = f"pb-long-{name_length}-{namespace}"[:63]
    core_v1.create_node(body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    rest = RestClient(load_configuration(str(control_plane.kubeconfig)), pool_size=2)
    try:
        api = SchedulerApi(rest, protobuf_writes=True)
        name = ("p" * name_length)[:name_length]
        created = core_v1.api_client.sanitize_for_serialization(
            core_v1.create_namespaced_pod(namespace, _pod(name, namespace))
        )
        api.bind(namespace, name, created["metadata"]["uid"], node)
        recorder = EventRecorder(api, reporting_instance="pb-test", clock=lambda: 1_795_000_000.5)
        recorder.event(
            created,
            event_type="Normal",
            reason="Scheduled",
            action="Binding",
            message=f"Successfully assigned {namespace}/{name} to {node}",
            controller="py-scheduler",
            aggregate=False,
            inline=True,
        )
        recorder.shutdown(wait=True)
        assert _get(api, f"/api/v1/namespaces/{namespace}/pods/{name}")["spec"]["nodeName"] == node
        events = _get(api, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]
        assert [e["regarding"]["name"] for e in events if e["reason"] == "Scheduled"] == [name]
    finally:
        rest.close()
        core_v1.delete_node(node)
