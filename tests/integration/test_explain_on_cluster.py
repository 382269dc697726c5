"""explain and simulate on the real control plane: py-scheduler as a process, kube-scheduler beside it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import REPO, SchedulerProcess, wait_for
from scheduler.explain.manifests import load_dump, spec_of_object
from tests.integration.workload import (
    RUN_LABEL,
    create_pods,
    list_events,
    list_pods,
    make_pod,
    new_run_id,
    sole_kube_scheduler,
)


@pytest.fixture
def run_id(core_v1: Any) -> Iterator[str]:
    rid = new_run_id()
    yield rid
    core_v1.delete_collection_node(label_selector=f"{RUN_LABEL}={rid}", _preload_content=False)


@pytest.fixture
def scheduler(kubeconfig: str, tmp_path: Path) -> Iterator[SchedulerProcess]:
    proc = SchedulerProcess(kubeconfig, tmp_path).start()
    try:
        proc.wait_ready()
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_explain_names_the_blocker_then_why_the_new_node_won(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    labels = {RUN_LABEL: run_id}
    create_nodes(api_client, [make_node(f"small-{run_id}-{i}", cpu="1", memory="4Gi", labels=labels)
                              for i in range(2)])  # fmt: skip
    create_pods(core_v1, namespace, [make_pod("big", run_id, cpu="1500m")])
    key = f"{namespace}/big"
    endpoint = scheduler.url("")

    def pending_explained() -> dict[str, Any] | None:
        done = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint, "-o", "json")
        if done.returncode != 0:
            return None
        doc: dict[str, Any] = orjson.loads(done.stdout)
        return doc if doc["attempts"][-1]["outcome"] == "Unschedulable" else None

    doc = wait_for(pending_explained, 30, "an Unschedulable record for big")
    attempt = doc["attempts"][-1]
    assert attempt["filter"]["NodeResourcesFit"]["reasons"] == {"Insufficient cpu": 2}
    misses = {m["node"]: m["detail"] for m in attempt["nearestMisses"]}
    assert misses == {f"small-{run_id}-{i}": "Insufficient cpu (requests 1.5, free 1)" for i in range(2)}
    table = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint)
    assert table.returncode == 0, table.stderr
    assert "NodeResourcesFit" in table.stdout and "Insufficient cpu (requests 1.5, free 1)" in table.stdout
    print(table.stdout)  # the example output in docs/explain.md

    create_nodes(api_client, [make_node(f"big-{run_id}", cpu="4", memory="8Gi", labels=labels)])

    def bound_explained() -> dict[str, Any] | None:
        done = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint, "-o", "json")
        doc: dict[str, Any] = orjson.loads(done.stdout) if done.returncode == 0 else {}
        attempts = doc.get("attempts") or [{}]
        return doc if attempts[-1].get("outcome") == "Bound" else None

    doc = wait_for(bound_explained, 60, "a Bound record for big")
    attempt = doc["attempts"][-1]
    assert attempt["node"] == f"big-{run_id}"
    assert attempt["scores"][0] == {"node": f"big-{run_id}", "total": 0, "chosen": True, "plugins": {}}
    assert attempt["filter"]["NodeResourcesFit"]["rejected"] == 2
    assert [p["spec"].get("nodeName") for p in list_pods(core_v1, namespace)] == [f"big-{run_id}"]
    table = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint)
    assert "the only feasible node" in table.stdout
    print(table.stdout)


def test_explain_shows_why_the_winner_beat_the_runner_up_and_annotates_the_pod(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, kubeconfig: str, tmp_path: Path
) -> None:
    """Three feasible nodes, one busy: the record names the winner and the runners-up with every Score
    plugin's raw/normalised/weighted values; --annotate-decisions writes the summary to the pod."""
    labels = {RUN_LABEL: run_id}
    names = [f"score-{run_id}-{i}" for i in range(3)]
    create_nodes(api_client, [make_node(name, cpu="4", memory="8Gi", labels=labels) for name in names])
    proc = SchedulerProcess(kubeconfig, tmp_path, extra_args=["--annotate-decisions", "py-scheduler"])
    proc.start()
    try:
        proc.wait_ready()
        endpoint = proc.url("")
        # Fill the first node so LeastAllocated (the default) prefers the other two.
        filler = make_pod("filler", run_id, cpu="3")
        filler["spec"]["nodeName"] = names[0]
        create_pods(core_v1, namespace, [filler])
        create_pods(core_v1, namespace, [make_pod("web", run_id, cpu="500m")])
        key = f"{namespace}/web"

        def bound_explained() -> dict[str, Any] | None:
            done = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint, "-o", "json")
            doc: dict[str, Any] = orjson.loads(done.stdout) if done.returncode == 0 else {}
            attempts = doc.get("attempts") or [{}]
            return doc if attempts[-1].get("outcome") == "Bound" else None

        attempt = wait_for(bound_explained, 60, "a Bound record for web")["attempts"][-1]
        winner = attempt["node"]
        assert winner in names[1:]
        scores = attempt["scores"]
        assert attempt["nodes"]["feasible"] == 3 and len(scores) == 3
        assert scores[0]["node"] == winner and scores[0]["chosen"]
        runners_up = [s for s in scores[1:] if not s["chosen"]]
        assert len(runners_up) == 2 and {s["node"] for s in scores} == set(names)
        assert scores[0]["total"] >= runners_up[0]["total"] >= runners_up[1]["total"]
        assert runners_up[-1]["node"] == names[0]  # the busy node scores lowest
        fit = {s["node"]: s["plugins"]["NodeResourcesFit"] for s in scores}
        assert fit[winner]["raw"] > fit[names[0]]["raw"]
        for s in scores:
            assert s["total"] == sum(v["weighted"] for v in s["plugins"].values())
        table = cli("explain", key, "--no-reevaluate", "--endpoint", endpoint)
        assert table.returncode == 0, table.stderr
        assert "Why this node" in table.stdout and f"{winner} (chosen)" in table.stdout
        assert names[0] in table.stdout and "NodeResourcesFit" in table.stdout
        print(table.stdout)

        def annotated() -> dict[str, Any] | None:
            pod = core_v1.read_namespaced_pod("web", namespace)
            value = (pod.metadata.annotations or {}).get("py-scheduler.io/decision")
            return orjson.loads(value) if value else None

        summary = wait_for(annotated, 30, "the py-scheduler.io/decision annotation on web")
        assert summary["outcome"] == "Bound" and summary["node"] == winner
        assert next(iter(summary["scores"])) == winner and len(summary["scores"]) == 3
    finally:
        code = proc.stop()
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"


@pytest.fixture
def kube_scheduler(control_plane: Any) -> Iterator[Any]:
    with sole_kube_scheduler(control_plane) as handle:
        yield handle


def test_simulate_matches_kube_scheduler_and_compares_packing(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, kube_scheduler: Any, kubeconfig: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    labels = {RUN_LABEL: run_id}
    sizes = {"a": "1", "b": "2", "c": "4"}
    create_nodes(api_client, [make_node(f"{n}-{run_id}", cpu=c, memory="8Gi", labels=labels)
                              for n, c in sizes.items()])  # fmt: skip
    # Each pod fits exactly one node (the others are too small or already full).
    pods = [make_pod(f"p{i}", run_id, cpu=cpu, scheduler_name="default-scheduler")
            for i, cpu in enumerate(("3", "1500m"))]  # fmt: skip
    pods_file = tmp_path / "pods.yaml"
    for pod in pods:
        pod["metadata"]["namespace"] = namespace
    pods_file.write_text(yaml.safe_dump_all(pods))

    simulated = cli("simulate", "--kubeconfig", kubeconfig, "--pods", str(pods_file), "-o", "json")
    assert simulated.returncode == 0, simulated.stderr
    predicted = {p["pod"]: p["node"] for p in orjson.loads(simulated.stdout)["placements"]}
    assert list_pods(core_v1, namespace) == []  # read-only: nothing was created

    for pod in pods:
        create_pods(core_v1, namespace, [pod])
        name = pod["metadata"]["name"]

        def is_bound(wanted: str = name) -> bool:
            return any(p["spec"].get("nodeName") for p in list_pods(core_v1, namespace)
                       if p["metadata"]["name"] == wanted)  # fmt: skip

        wait_for(is_bound, 60, f"{name} bound")
    actual = {
        f"{namespace}/{p['metadata']['name']}": p["spec"]["nodeName"] for p in list_pods(core_v1, namespace)
    }
    assert predicted == actual == {f"{namespace}/p0": f"c-{run_id}", f"{namespace}/p1": f"b-{run_id}"}

    # Packing: a dump of just this run's nodes, small pods, LeastAllocated vs MostAllocated.
    dump = tmp_path / "cluster.json"
    assert cli("snapshot", "--kubeconfig", kubeconfig, "-f", str(dump)).returncode == 0
    doc = orjson.loads(dump.read_bytes())
    doc["items"] = [
        i for i in doc["items"] if i["kind"] == "Node" and i["metadata"]["labels"].get(RUN_LABEL) == run_id
    ]
    dump.write_bytes(orjson.dumps(doc))
    small = [make_pod(f"s{i}", run_id, cpu="250m", scheduler_name="py-scheduler") for i in range(4)]
    pods_file.write_text(yaml.safe_dump_all(small))
    configs = REPO / "examples" / "scenarios" / "configs"
    compared = cli("simulate", "--cluster", str(dump), "--pods", str(pods_file),
                   "--config", str(configs / "least-allocated.yaml"),
                   "--compare", str(configs / "most-allocated.yaml"), "-o", "json")  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    result = orjson.loads(compared.stdout)
    assert result["summary"]["nodesUsed"] > 1
    assert result["compare"]["summary"]["nodesUsed"] == 1  # MostAllocated packs them all onto one node
    text = cli("simulate", "--cluster", str(dump), "--pods", str(pods_file),
               "--config", str(configs / "least-allocated.yaml"),
               "--compare", str(configs / "most-allocated.yaml"))  # fmt: skip
    assert "placed differently" in text.stdout
    print(text.stdout)


def _first_sentence(message: str) -> str:
    """``0/N nodes are available: <the Filter reasons>``: what precedes PostFilter's (preemption) part."""
    return message.split(". ", 1)[0].rstrip(".")


def test_explain_as_a_new_user_says_what_it_tried_then_re_evaluates(
    core_v1: Any, api_client: Any, control_plane: Any, namespace: str, run_id: str, tmp_path: Path
) -> None:
    """The issue's new user: py-scheduler runs as a process (HTTPS, delegated auth), not behind the
    Service of deploy/, and the user may list nodes and pods but has no services/proxy permission.
    explain says what it asked and of whom, the answer and the RBAC it needs, then prints a labelled
    re-evaluation whose Filter reasons are the scheduler's FailedScheduling Event's."""
    from tests.integration.test_auth import kubeconfig as write_kubeconfig
    from tests.integration.test_deploy import raw

    labels = {RUN_LABEL: run_id}
    create_nodes(api_client, [make_node(f"tiny-{run_id}-{i}", cpu="1", memory="4Gi", labels=labels)
                              for i in range(2)])  # fmt: skip
    user = f"explain-user-{run_id}"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": user},
        "rules": [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
        "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": namespace}],
    }
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": user}}
    assert raw(api_client, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", sa)[0] == 201
    assert raw(api_client, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)[0] == 201
    assert (
        raw(api_client, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)[0] == 201
    )
    proc = SchedulerProcess(control_plane.kubeconfig, tmp_path, secure=True).start()
    try:
        token_request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
        status, issued = raw(
            api_client, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{user}/token", token_request
        )
        assert status == 201, issued
        user_kubeconfig = write_kubeconfig(control_plane, tmp_path / "user.kubeconfig",
                                           {"token": issued["status"]["token"]})  # fmt: skip
        proc.wait_ready()
        create_pods(core_v1, namespace, [make_pod("huge", run_id, cpu="64")])

        def failed_scheduling() -> str | None:
            for event in list_events(core_v1, namespace):
                if event.get("reason") == "FailedScheduling" and event["involvedObject"]["name"] == "huge":
                    return str(event["message"])
            return None

        event_message = wait_for(failed_scheduling, 60, "the FailedScheduling Event of huge")
        key = f"{namespace}/huge"
        table = cli("explain", key, "--kubeconfig", str(user_kubeconfig))
        assert table.returncode == 0, table.stderr
        print(table.stderr + table.stdout)  # the example output in docs/explain.md
        tried = table.stderr
        assert "no decision record from the scheduler" in tried
        assert "the Service py-scheduler-metrics (port metrics, https) in namespace py-scheduler" in tried
        assert (
            "/api/v1/namespaces/py-scheduler/services/https:py-scheduler-metrics:metrics/proxy/debug/pods/"
            in tried
        )
        assert "HTTP 403" in tried
        assert (
            "get on services/proxy for https:py-scheduler-metrics:metrics in namespace py-scheduler" in tried
        )
        assert f"get on the non-resource URL /debug/pods/{namespace}/huge" in tried
        assert "--endpoint" in tried
        out = table.stdout
        assert out.startswith(f"Pod {key}: RE-EVALUATION NOW (not the scheduler's recorded decision)")
        message_line = next(line for line in out.splitlines() if line.strip().startswith("Message:"))
        reevaluated = message_line.split("Message:", 1)[1].strip()
        assert _first_sentence(reevaluated) == _first_sentence(event_message), (reevaluated, event_message)
        assert "Insufficient cpu" in reevaluated
        assert "Configuration not read from ConfigMap py-scheduler/py-scheduler-config: HTTP 403" in out
        # The kinds this user may not list are named: the verdict may differ where a plugin reads them.
        not_read = next(line for line in out.splitlines() if line.strip().startswith("Not in the snapshot"))
        assert "HTTP 403: " in not_read and "volumeattachments.storage.k8s.io" in not_read, not_read
        assert "csidrivers.storage.k8s.io" in not_read and "nodes" not in not_read.split("HTTP 403: ")[
            1
        ].split(", ")
        dump = tmp_path / "as-user.json"
        taken = cli("snapshot", "--kubeconfig", str(user_kubeconfig), "-f", str(dump))
        assert taken.returncode == 0, taken.stderr
        assert taken.stderr.count("\n") == 1 and "volumeattachments.storage.k8s.io" in taken.stderr
        unlisted = orjson.loads(dump.read_bytes())["metadata"]["unlisted"]
        assert unlisted["volumeattachments.storage.k8s.io"] == "HTTP 403" and "pods" not in unlisted

        as_json = cli("explain", key, "--kubeconfig", str(user_kubeconfig), "-o", "json")
        assert as_json.returncode == 0, as_json.stderr
        doc = orjson.loads(as_json.stdout)
        assert doc["reevaluation"] is True and doc["attempts"][0]["outcome"] == "Unschedulable"
        assert doc["attempts"][0]["filter"]["NodeResourcesFit"]["reasons"]["Insufficient cpu"] >= 2

        refused = cli("explain", key, "--kubeconfig", str(user_kubeconfig), "--no-reevaluate")
        assert refused.returncode == 1 and refused.stdout == ""
        assert "HTTP 403" in refused.stderr
    finally:
        code = proc.stop()
        for path in (f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{user}",
                     f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{user}"):  # fmt: skip
            raw(api_client, "DELETE", path)
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"


def test_a_re_evaluation_counts_a_preemptors_nomination_as_the_scheduler_does(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, kubeconfig: str, tmp_path: Path
) -> None:
    """A pending preemptor (PriorityClass of value 1000, 6 CPUs) carries status.nominatedNodeName =
    big (8 CPUs, empty): the scheduler's Filter counts it there, so a pod of priority 0 asking 3 CPUs
    fits nowhere, and explain's re-evaluation, listing the live cluster, says the same; the preemptor
    itself fits big. No scheduler serves the profile, so nothing binds the pods meanwhile."""
    from tests.integration.test_deploy import raw

    profile = f"idle-{run_id}"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                      "kind": "KubeSchedulerConfiguration",
                                      "profiles": [{"schedulerName": profile}]}))  # fmt: skip
    create_nodes(api_client, [make_node(f"big-{run_id}", cpu="8", memory="16Gi", labels={RUN_LABEL: run_id})])
    high = f"high-{run_id}"
    priority_class = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                      "metadata": {"name": high}, "value": 1000}  # fmt: skip
    status, created = raw(api_client, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", priority_class)
    assert status == 201, created
    try:
        urgent = make_pod("urgent", run_id, cpu="6", scheduler_name=profile)
        urgent["spec"]["priorityClassName"] = high
        create_pods(core_v1, namespace, [urgent])
        nominated = {"status": {"nominatedNodeName": f"big-{run_id}"}}
        core_v1.patch_namespaced_pod_status("urgent", namespace, nominated)
        create_pods(core_v1, namespace, [make_pod("web", run_id, cpu="3", scheduler_name=profile)])

        def reevaluated(name: str) -> dict[str, Any]:
            # No scheduler answers at the endpoint: explain re-evaluates on the live cluster.
            done = cli("explain", f"{namespace}/{name}", "--kubeconfig", kubeconfig, "--config", str(config),
                       "--endpoint", "https://127.0.0.1:1", "-o", "json")  # fmt: skip
            assert done.returncode == 0, done.stderr
            doc = orjson.loads(done.stdout)
            assert doc["reevaluation"] is True
            attempt: dict[str, Any] = doc["attempts"][0]
            return attempt

        web = reevaluated("web")
        assert web["outcome"] == "Unschedulable", web
        assert web["filter"]["NodeResourcesFit"]["reasons"]["Insufficient cpu"] >= 1
        assert reevaluated("urgent")["node"] == f"big-{run_id}"
        # The nomination withdrawn: web fits big.
        core_v1.patch_namespaced_pod_status("urgent", namespace, {"status": {"nominatedNodeName": None}})
        assert reevaluated("web")["node"] == f"big-{run_id}"
    finally:
        raw(api_client, "DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{high}")


def _install_crd(api_client: Any, path: Path, group: str, plural: str) -> bool:
    """Installs the CRD of ``path`` unless its kind is served; True when this call installed it."""
    import kubernetes.client as k8s

    from tests.integration.test_deploy import raw

    def served() -> bool:
        try:
            found = k8s.CustomObjectsApi(api_client).get_api_resources(group, "v1alpha1")
        except k8s.ApiException as err:
            if err.status == 404:
                return False
            raise
        return any(r.name == plural for r in found.resources)

    if served():
        return False
    body = yaml.safe_load(path.read_text())
    status, answer = raw(api_client, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body)
    assert status in (201, 409), answer
    wait_for(served, 30, f"{plural}.{group} served")
    return True


def test_a_snapshot_round_trips_every_kind_the_scheduler_reads_and_replays_their_verdicts(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, kubeconfig: str, tmp_path: Path
) -> None:
    """``snapshot`` of a real API server holds VolumeAttachments, CSIDrivers, CSIStorageCapacities, DRA
    objects, PriorityClasses, ReplicationControllers, ResourceQuotas, PodGroups and ElasticQuotas
    beside nodes and pods; the dump loads back under each kind, and a replay's verdicts follow the
    VolumeAttachment (NodeVolumeLimits counts it) and the CSIDriver (VolumeLimitScaling): the same pods
    place once they are taken out of the dump."""
    from tests.integration.test_deploy import raw

    labels = {RUN_LABEL: run_id}
    node = f"vol-{run_id}"
    driver, other = f"csi-{run_id}.example.com", f"other-{run_id}.example.com"
    storage, dra = "storage.k8s.io/v1", "resource.k8s.io/v1"
    crds = REPO / "deploy" / "components"
    installed = [
        name
        for name, group, plural in (("podgroup-crd", "scheduling.x-k8s.io", "podgroups"),
                                    ("elasticquota-crd", "scheduling.x-k8s.io", "elasticquotas"))
        if _install_crd(api_client, crds / name / "crd.yaml", group, plural)
    ]  # fmt: skip

    def meta(name: str, in_namespace: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"name": name, "labels": dict(labels)}
        if in_namespace:
            out["namespace"] = namespace
        return out

    def pv(name: str, csi_driver: str) -> dict[str, Any]:
        spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                "persistentVolumeReclaimPolicy": "Retain",
                "csi": {"driver": csi_driver, "volumeHandle": f"{name}-handle"}}  # fmt: skip
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": meta(f"{name}-{run_id}"),
            "spec": spec,
        }

    def claim(name: str, volume: str) -> dict[str, Any]:
        body = meta(name, True)
        body["annotations"] = {"pv.kubernetes.io/bind-completed": "true"}
        spec = {"volumeName": f"{volume}-{run_id}", "storageClassName": "", "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}  # fmt: skip
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": body, "spec": spec}

    va_name = f"va-{run_id}"

    def obj(
        collection: str, api_version: str, kind: str, name: str, **body: Any
    ) -> tuple[str, dict[str, Any]]:
        """(the POST path, the object): ``collection`` under /api or /apis, namespaced when it has
        ``{ns}``."""
        namespaced = "{ns}" in collection
        root = "/api/" if api_version == "v1" else "/apis/"
        path = root + collection.replace("{ns}", f"namespaces/{namespace}")
        return path, {"apiVersion": api_version, "kind": kind, "metadata": meta(name, namespaced), **body}

    limit = [{"name": driver, "nodeID": node, "allocatable": {"count": 1}}]
    attachment = {
        "attacher": driver,
        "nodeName": node,
        "source": {"persistentVolumeName": f"attached-{run_id}"},
    }
    topology = {"matchLabels": {"kubernetes.io/hostname": node}}
    pool = {"name": node, "generation": 1, "resourceSliceCount": 1}
    device_slice = {
        "driver": "gpu.example.com",
        "nodeName": node,
        "pool": pool,
        "devices": [{"name": "gpu-0"}],
    }
    request = {"name": "gpu", "exactly": {"deviceClassName": f"gpu-{run_id}"}}
    template = {
        "metadata": {"labels": {"app": run_id}},
        "spec": {"containers": [{"name": "c", "image": "pause"}]},
    }
    x_k8s = "scheduling.x-k8s.io/v1alpha1"
    quota_max = {"max": {"cpu": "4"}}
    created: list[tuple[str, dict[str, Any]]] = [
        obj(f"{storage}/csinodes", "storage.k8s.io/v1", "CSINode", node, spec={"drivers": limit}),
        ("/api/v1/persistentvolumes", pv("attached", driver)),
        ("/api/v1/persistentvolumes", pv("new", driver)),
        ("/api/v1/persistentvolumes", pv("other", other)),
        (f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", claim("c-new", "new")),
        (f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", claim("c-other", "other")),
        obj(f"{storage}/volumeattachments", storage, "VolumeAttachment", va_name, spec=attachment),
        obj(f"{storage}/csidrivers", "storage.k8s.io/v1", "CSIDriver", other,
            spec={"attachRequired": True, "preventPodSchedulingIfMissing": True}),
        obj(f"{storage}/{{ns}}/csistoragecapacities", "storage.k8s.io/v1", "CSIStorageCapacity",
            f"cap-{run_id}", storageClassName=f"sc-{run_id}", capacity="10Gi", nodeTopology=topology),
        obj(f"{dra}/deviceclasses", "resource.k8s.io/v1", "DeviceClass", f"gpu-{run_id}",
            spec={"selectors": [{"cel": {"expression": "true"}}]}),
        obj(f"{dra}/resourceslices", dra, "ResourceSlice", f"slice-{run_id}", spec=device_slice),
        obj(f"{dra}/{{ns}}/resourceclaims", "resource.k8s.io/v1", "ResourceClaim", f"claim-{run_id}",
            spec={"devices": {"requests": [request]}}),
        obj("scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1", "PriorityClass", f"prio-{run_id}",
            value=1000),
        obj("v1/{ns}/replicationcontrollers", "v1", "ReplicationController", f"rc-{run_id}",
            spec={"replicas": 0, "selector": {"app": run_id}, "template": template}),
        obj("v1/{ns}/resourcequotas", "v1", "ResourceQuota", f"rq-{run_id}", spec={"hard": {"pods": "9"}}),
        obj(f"{x_k8s}/{{ns}}/podgroups", x_k8s, "PodGroup", f"pg-{run_id}", spec={"minMember": 2}),
        obj(f"{x_k8s}/{{ns}}/elasticquotas", x_k8s, "ElasticQuota", f"eq-{run_id}", spec=quota_max),
    ]  # fmt: skip
    cluster_scoped = [(path, body) for path, body in created if "namespace" not in body["metadata"]]
    try:
        create_nodes(api_client, [make_node(node, labels={**labels, "kubernetes.io/hostname": node})])
        for path, body in created:
            status, answer = raw(api_client, "POST", path, body)
            assert status == 201, (path, answer)

        dump = tmp_path / "cluster.json"
        taken = cli("snapshot", "--kubeconfig", kubeconfig, "-f", str(dump))
        assert taken.returncode == 0, taken.stderr
        print(taken.stdout)
        doc = orjson.loads(dump.read_bytes())
        everything = load_dump(dump)  # every object the API server gave passes the dump's checks
        assert len(everything["nodes"]) >= 1 and len(everything.get("pods", [])) == sum(
            i["kind"] == "Pod" for i in doc["items"]
        )
        ours = [
            item for item in doc["items"]
            if (item["metadata"].get("labels") or {}).get(RUN_LABEL) == run_id
        ]  # fmt: skip
        dumped = {(item["apiVersion"], item["kind"], item["metadata"]["name"]) for item in ours}
        wanted = {(body["apiVersion"], body["kind"], body["metadata"]["name"]) for _, body in created}
        assert wanted <= dumped, wanted - dumped
        ours_file = tmp_path / "ours.json"
        ours_file.write_bytes(orjson.dumps({**doc, "items": ours}))
        loaded = load_dump(ours_file)
        for _, body in created:
            spec = spec_of_object(body)
            assert spec is not None and body["metadata"]["name"] in {
                o["metadata"]["name"] for o in loaded[spec.name]
            }, body["kind"]

        # Replays: p-va's one new volume of `driver` exceeds the node's limit of 1 only with the
        # VolumeAttachment; p-other's volume needs `other`, which the node's CSINode lacks, only with the
        # CSIDriver.
        pods = []
        for name, claim_name in (("p-va", "c-new"), ("p-other", "c-other")):
            pod = make_pod(name, run_id, cpu="100m", scheduler_name="py-scheduler")
            pod["metadata"]["namespace"] = namespace
            pod["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}]
            pods.append(pod)
        pods_file = tmp_path / "pods.yaml"
        pods_file.write_text(yaml.safe_dump_all(pods))

        def replay(items: list[dict[str, Any]]) -> dict[str, tuple[str | None, str]]:
            path = tmp_path / "replay.json"
            path.write_bytes(orjson.dumps({**doc, "items": items}))
            ran = cli("simulate", "--cluster", str(path), "--pods", str(pods_file), "-o", "json")
            assert ran.returncode == 0, ran.stderr
            placements = orjson.loads(ran.stdout)["placements"]
            return {p["pod"].split("/")[1]: (p["node"], p["reason"]) for p in placements}

        full = replay(ours)
        assert full["p-va"][0] is None and "exceed max volume count" in full["p-va"][1], full
        assert full["p-other"][0] is None and f"{other} CSI driver is not installed" in full["p-other"][1]
        without_va = replay([i for i in ours if i["kind"] != "VolumeAttachment"])
        assert without_va["p-va"][0] == node, without_va
        without_driver = replay([i for i in ours if i["kind"] != "CSIDriver"])
        assert without_driver["p-other"][0] == node, without_driver

        # A malformed object of a new kind: one line naming it.
        broken = [
            {**i, "spec": {**i["spec"], "nodeName": 3}} if i["kind"] == "VolumeAttachment" else i
            for i in ours
        ]
        broken_file = tmp_path / "broken.json"
        broken_file.write_bytes(orjson.dumps({**doc, "items": broken}))
        refused = cli("simulate", "--cluster", str(broken_file), "--pods", str(pods_file))
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr.count("\n") == 1, refused.stderr
        assert f"(VolumeAttachment {va_name}): spec.nodeName must be a string, got 3" in refused.stderr
    finally:
        for collection, body in cluster_scoped:
            raw(api_client, "DELETE", f"{collection}/{body['metadata']['name']}")
        for name in installed:
            body = yaml.safe_load((crds / name / "crd.yaml").read_text())
            crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + body["metadata"]["name"]
            raw(api_client, "DELETE", crd_path)
            # Gone before another test installs it again (a terminating CRD cannot be re-created).

            def gone(path: str = crd_path) -> bool:
                return bool(raw(api_client, "GET", path)[0] == 404)

            wait_for(gone, 60, f"{name} deleted")
