"""What some workloads need besides nodes and pods, set up per run on the fresh control plane before the
scheduler starts: CustomResourceDefinitions, API objects (PVs, PVCs, CSINodes, DeviceClasses,
ResourceSlices, ResourceClaims, PodGroups) and an extender process. Nothing here runs while the clock does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import yaml
from kubernetes import client as k8s

from bench import processes
from bench.apiclient import BenchClient
from bench.workloads import (
    INIT_NAMESPACE,
    MEASURED_NAMESPACE,
    ZONE_LABEL,
    ApiObject,
    ExtenderSpec,
    Workload,
)
from devcluster.cluster import ControlPlane

log = logging.getLogger("bench")

REPO = Path(__file__).resolve().parents[1]


async def _create_all(client: BenchClient, objects: Sequence[ApiObject], concurrency: int) -> None:
    for namespace in (INIT_NAMESPACE, MEASURED_NAMESPACE):
        await client.create_namespace(namespace)
    # Cluster-scoped classes first (a claim's class must exist before anything allocates it), then the
    # rest with ``concurrency`` requests in flight, each object's status written right after its create.
    queue = list(objects)
    next_index = 0

    async def one(obj: ApiObject) -> None:
        created = await client.request("POST", obj.path, orjson.dumps(obj.body), ok=(201,))
        if obj.status is not None:
            name = created["metadata"]["name"]
            await client.request(
                "PUT", f"{obj.path}/{name}/status", orjson.dumps({**created, "status": obj.status}), ok=(200,)
            )

    async def worker() -> None:
        nonlocal next_index
        while next_index < len(queue):
            obj = queue[next_index]
            next_index += 1
            await one(obj)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def install_crd(api: Any, path: Path, timeout: float = 60.0) -> None:
    """Creates the CustomResourceDefinition in ``path`` and returns once its resource is served (a
    LIST of it in ``default`` answers), as a scheduler that watches it needs before it starts."""
    crd = yaml.safe_load(path.read_text())
    ext: Any = k8s.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(body=crd, _preload_content=False)
    group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
    version = next(v["name"] for v in crd["spec"]["versions"] if v.get("served", True))
    custom: Any = k8s.CustomObjectsApi(api)
    deadline = time.monotonic() + timeout
    while True:
        try:
            custom.list_namespaced_custom_object(group, version, "default", plural)
            return
        except k8s.ApiException:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{plural}.{group} not served after {timeout:.0f}s") from None
            time.sleep(0.5)


def install_crds(cp: ControlPlane, workload: Workload) -> None:
    """The workload's CustomResourceDefinitions (the PodGroup CRD of the gang workload), served."""
    if workload.crds:
        api = cp.api_client()
        for path in workload.crds:
            install_crd(api, path)


def create_objects(cp: ControlPlane, workload: Workload, concurrency: int = 32) -> None:
    """POST the workload's objects (and their statuses) on ``cp``; raises on any failure."""
    if not workload.objects:
        return
    started = time.monotonic()

    async def run() -> None:
        async with BenchClient(cp.server, cp.token, cp.ca_file, connections=concurrency + 4) as client:
            await _create_all(client, workload.objects, concurrency)

    asyncio.run(run())
    kinds: dict[str, int] = {}
    for obj in workload.objects:
        kinds[str(obj.body.get("kind"))] = kinds.get(str(obj.body.get("kind")), 0) + 1
    log.info(
        "%s in %.1fs",
        ", ".join(f"{kind} x{n}" for kind, n in kinds.items()),
        time.monotonic() - started,
    )


class ExtenderProcess:
    """examples/extender as its own process on loopback (port chosen by the OS), one per run."""

    def __init__(self, spec: ExtenderSpec, log_path: Path) -> None:
        self.spec = spec
        self.log_path = log_path
        self.url = ""
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [sys.executable, "-m", "examples.extender", "--port", "0",
                "--label", self.spec.label, "--annotation", self.spec.annotation]  # fmt: skip
        with self.log_path.open("ab") as err:
            self._proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=err, cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True,
            )  # fmt: skip
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()  # {"listening": "http://127.0.0.1:PORT"}; b"" if it died
        if not line:
            self.stop()
            raise RuntimeError(f"the extender did not start; log {self.log_path}")
        self.url = str(json.loads(line)["listening"])
        log.info("extender listening on %s", self.url)

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def config(self) -> list[dict[str, Any]]:
        """The ``extenders`` entry both schedulers get (upstream Extender field names)."""
        return [
            {
                "urlPrefix": self.url,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 1,
                "nodeCacheCapable": False,
                "enableHTTPS": False,
            }
        ]

    def calls(self) -> Mapping[str, int]:
        """Calls by verb so far (the extender's /stats)."""
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.url}/stats", timeout=5) as resp:
                data: dict[str, int] = json.loads(resp.read())
                return data
        except OSError:
            return {}

    def stop(self) -> None:
        processes.stop(self._proc)


class PeerControllerProcess:
    """scheduler-plugins' controller (``cmd/controller``: the PodGroup and ElasticQuota reconcilers) beside
    the scheduler-plugins scheduler, as its deployments run it. py-scheduler keeps PodGroup status in
    process, so without this the peer would skip the PodGroup writes, and their watch events, that
    py-scheduler makes. The bench's client qps/burst (its own defaults are 5/10); no leader election."""

    def __init__(self, binary: Path, kubeconfig: Path, log_path: Path, qps: int, burst: int) -> None:
        self.argv = [str(binary), "--metricsAddr=0", "--probeAddr=0", f"--qps={qps}", f"--burst={burst}"]
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as out:
            self._proc = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
            )  # fmt: skip
        log.info("scheduler-plugins controller started (pid %d)", self._proc.pid)

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        processes.stop(self._proc)


async def wait_pod_groups_settled(client: BenchClient, namespace: str, timeout: float = 30.0) -> int:
    """Wait until every PodGroup of ``namespace`` shows a phase (its controller has seen it): the first
    status write of each group then happens before the clock for every contestant. Returns how many
    groups are still without one at the timeout (0 = settled)."""
    path = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups"
    deadline = time.monotonic() + timeout
    while True:
        groups = (await client.list(path))["items"]
        unsettled = sum(1 for pg in groups if not (pg.get("status") or {}).get("phase"))
        if unsettled == 0 or time.monotonic() >= deadline:
            return unsettled
        await asyncio.sleep(0.1)


async def _list_claims(cp: ControlPlane) -> list[dict[str, Any]]:
    async with BenchClient(cp.server, cp.token, cp.ca_file, connections=4) as client:
        items: list[dict[str, Any]] = (await client.list("/apis/resource.k8s.io/v1/resourceclaims"))["items"]
        return items


def _expression_holds(labels: Mapping[str, str], expr: Mapping[str, Any]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), list(expr.get("values") or ())
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and values:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def node_selection_holds(pod: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """The pod's nodeSelector and required node affinity (terms ORed, expressions ANDed) hold on a node
    with ``labels``: NodeAffinity's Filter, restated independently of both schedulers."""
    spec = pod.get("spec") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})  # fmt: skip
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    return any(
        all(_expression_holds(labels, e) for e in term.get("matchExpressions") or ())
        and (term.get("matchExpressions") or term.get("matchFields"))
        for term in terms
    )


def _verify_node_selection(
    pods: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]]
) -> list[str]:
    labels = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}) for n in nodes}
    wrong = [
        p["metadata"]["name"]
        for p in pods
        if (node := (p.get("spec") or {}).get("nodeName"))
        and not node_selection_holds(p, labels.get(node, {}))
    ]
    return [f"{len(wrong)} pods on nodes their nodeSelector/required affinity excludes"] if wrong else []


def spread_note(pods: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]]) -> str:
    """How the bound pods spread: pods per zone (skew = max - min over zones with nodes) and the
    fewest and most pods on one node (over every node)."""
    zone_of = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(ZONE_LABEL, "") for n in nodes}
    per_zone = dict.fromkeys(sorted(set(zone_of.values())), 0)
    per_node = dict.fromkeys(zone_of, 0)
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node in per_node:
            per_node[node] += 1
            per_zone[zone_of[node]] += 1
    if not per_node:
        return "spread: no nodes"
    zones = ", ".join(f"{z or '(none)'} {n}" for z, n in per_zone.items())
    return (
        f"spread: pods per zone {zones} (skew {max(per_zone.values()) - min(per_zone.values())}); "
        f"pods per node {min(per_node.values())}-{max(per_node.values())} "
        f"(skew {max(per_node.values()) - min(per_node.values())})"
    )


def verify(
    cp: ControlPlane,
    workload: Workload,
    pods: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
) -> list[str]:
    """Rules the resource check of ``analysis.check_placement`` does not see; each problem as a phrase."""
    problems: list[str] = _verify_node_selection(pods, nodes)
    if workload.extender is not None:
        key, _, value = workload.extender.label.partition("=")
        labels = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}) for n in nodes}
        rejected = [
            p["metadata"]["name"]
            for p in pods
            if (node := (p.get("spec") or {}).get("nodeName")) and labels.get(node, {}).get(key) != value
        ]
        if rejected:
            problems.append(f"{len(rejected)} pods on nodes the extender filters out")
    if any(o.body.get("kind") == "ResourceClaim" for o in workload.objects):
        problems += _verify_claims(asyncio.run(_list_claims(cp)), pods)
    return problems


def _verify_claims(claims: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every measured bound pod's claim allocated on its node and reserved for it; no device twice."""
    by_name = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims}
    owners: dict[tuple[str, str, str], str] = {}
    twice = unallocated = elsewhere = 0
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            device = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
            if device in owners:
                twice += 1
            owners[device] = claim["metadata"]["name"]
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            continue
        namespace = pod["metadata"].get("namespace", MEASURED_NAMESPACE)
        for ref in (pod.get("spec") or {}).get("resourceClaims") or ():
            found = by_name.get((namespace, ref.get("resourceClaimName", "")))
            status = (found or {}).get("status") or {}
            reserved = {r.get("name") for r in status.get("reservedFor") or ()}
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or ()
            if not results or pod["metadata"]["name"] not in reserved:
                unallocated += 1
            elif any(r.get("pool") != node for r in results):  # one pool per node, named after it
                elsewhere += 1
    problems = []
    if twice:
        problems.append(f"{twice} devices allocated twice")
    if unallocated:
        problems.append(f"{unallocated} bound pods without an allocated, reserved claim")
    if elsewhere:
        problems.append(f"{elsewhere} claims allocated on another node than their pod's")
    return problems
