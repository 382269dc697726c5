"""The bind's echo as the real API server writes it: held in place by the cache when the node has no
topology labels, an ordinary update when the PodTopologyLabels admission copies them into the pod."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from scheduler.cache import SchedulerCache, Snapshot
from scheduler.cache.echo import same_but_unread
from scheduler.client.api import SchedulerApi
from scheduler.client.kubeclient import RestClient, load_configuration
from scheduler.framework.types import PodInfo

ZONE = "topology.kubernetes.io/zone"


def _get(api: SchedulerApi, path: str) -> dict[str, Any]:
    status, data = api.rest.request("GET", path)
    assert status == 200, data
    decoded: dict[str, Any] = orjson.loads(data)
    # What the scheduler's informers keep (they drop managedFields).
    decoded["metadata"].pop("managedFields", None)
    return decoded


@pytest.mark.usefixtures("run_id")
def test_the_servers_echo_of_a_binding_is_held_in_place_unless_it_copies_topology_labels(
    control_plane: Any, core_v1: Any, namespace: str
) -> None:
    plain, zoned = f"echo-plain-{namespace}", f"echo-zoned-{namespace}"
    nodes = {}
    for name, labels in ((plain, {}), (zoned, {ZONE: "zone-a"})):
        core_v1.create_node(
            body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
        )
        nodes[name] = core_v1.api_client.sanitize_for_serialization(core_v1.read_node(name))
    rest = RestClient(load_configuration(str(control_plane.kubeconfig)), pool_size=2)
    try:
        api = SchedulerApi(rest)
        cache = SchedulerCache()
        for node in nodes.values():
            cache.add_node(node)
        snapshot = Snapshot()
        echoes: dict[str, tuple[Mapping[str, Any], dict[str, Any]]] = {}
        for node_name in nodes:
            pod_name = "p-zoned" if node_name == zoned else "p-plain"
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod_name, "namespace": namespace, "labels": {"app": "echo"}},
                "spec": {
                    "schedulerName": "nobody",
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ],
                },
            }
            core_v1.create_namespaced_pod(namespace, body)
            pending = _get(api, f"/api/v1/namespaces/{namespace}/pods/{pod_name}")
            assumed = cache.assume_pod(PodInfo(pending), node_name)
            cache.update_snapshot(snapshot)
            meta = pending["metadata"]
            api.bind(namespace, meta["name"], meta["uid"], node_name)
            echo = _get(api, f"/api/v1/namespaces/{namespace}/pods/{pod_name}")
            echoes[node_name] = (assumed.pod, echo)
            generation = cache.generation
            cache.update_pod(pending, echo)
            held = cache.generation == generation
            assert held == (node_name == plain), (node_name, assumed.pod, echo)
        assumed_plain, echo_plain = echoes[plain]
        assert same_but_unread(assumed_plain, echo_plain)
        assert echo_plain["metadata"]["resourceVersion"] != assumed_plain["metadata"]["resourceVersion"]
        assumed_zoned, echo_zoned = echoes[zoned]
        assert not same_but_unread(assumed_zoned, echo_zoned)
        # The difference is the zone label the admission copied from the node.
        assert echo_zoned["metadata"]["labels"] == {"app": "echo", ZONE: "zone-a"}
        assert cache.assumed_count() == 0
        rest.close()
    finally:
        for name in nodes:
            core_v1.delete_node(name)
