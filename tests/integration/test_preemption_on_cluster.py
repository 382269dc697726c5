"""Issue 13 on the real control plane: priority and preemption with kube-controller-manager running (its
disruption controller fills PodDisruptionBudget status, which preemption reads).

Pods get their priority from PriorityClasses (the Priority admission plugin refuses a bare
``spec.priority``); victims have ``terminationGracePeriodSeconds: 0``, so a delete removes them at once
(there is no kubelet).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, wait_for
from tests.integration.workload import (
    RUN_LABEL,
    list_events,
    list_pods,
    make_pod,
    new_run_id,
    no_preemption_running,
    scrape,
    scrape_kube_scheduler,
    sole_kube_scheduler,
)

CLASSES = (("low", 10, None), ("mid", 100, None), ("high", 1000, None), ("never", 1000, "Never"))
PRIORITY = {name: value for name, value, _ in CLASSES}


@pytest.fixture(scope="module")
def kube_scheduler(control_plane: Any) -> Iterator[Any]:
    with sole_kube_scheduler(control_plane) as handle:
        yield handle


@pytest.fixture
def run_id(core_v1: Any, api_client: Any) -> Iterator[str]:
    from kubernetes.client import SchedulingV1Api

    rid = new_run_id()
    scheduling = SchedulingV1Api(api_client)
    for name, value, policy in CLASSES:
        body: dict[str, Any] = {"metadata": {"name": f"{name}-{rid}"}, "value": value}
        if policy:
            body["preemptionPolicy"] = policy
        scheduling.create_priority_class(body=body, _preload_content=False)
    yield rid
    core_v1.delete_collection_node(label_selector=f"{RUN_LABEL}={rid}", _preload_content=False)
    for name, _, _ in CLASSES:
        scheduling.delete_priority_class(f"{name}-{rid}", _preload_content=False)


@pytest.fixture
def scheduler(kubeconfig: str, tmp_path: Path, controller_manager: Any) -> Iterator[SchedulerProcess]:
    proc = SchedulerProcess(kubeconfig, tmp_path).start()
    try:
        proc.wait_ready(60)
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"py-scheduler exited with {code}; log {proc.log_path}:\n{proc.log_tail()}"


def _pod(name: str, run_id: str, cls: str, cpu: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    pod = make_pod(name, run_id, cpu=cpu, memory="64Mi")
    pod["spec"]["priorityClassName"] = f"{cls}-{run_id}"
    pod["metadata"]["labels"].update(labels or {})
    return pod


def _nodes(api_client: Any, run_id: str, count: int) -> list[str]:
    names = [f"pre{i}-{run_id}" for i in range(count)]
    create_nodes(api_client, [make_node(n, cpu="2", labels={RUN_LABEL: run_id}) for n in names])
    return names


def _create(core_v1: Any, namespace: str, pod: dict[str, Any]) -> None:
    core_v1.create_namespaced_pod(namespace, body=pod, _preload_content=False)


def _by_name(core_v1: Any, namespace: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in list_pods(core_v1, namespace)}


def _events(core_v1: Any, namespace: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in list_events(core_v1, namespace) if e["reason"] == reason]


def _private_taint(run_id: str) -> dict[str, str]:
    """Keeps a test's nodes its own: the session's cluster holds pods other modules left pending (the
    deploy tests' py-scheduler Deployments, priority system-cluster-critical, no tolerations), and a
    running kube-scheduler binds them to the first new nodes with room."""
    return {"key": RUN_LABEL, "value": run_id, "effect": "NoSchedule"}


def _tolerate_private(pod: dict[str, Any], run_id: str) -> dict[str, Any]:
    pod["spec"]["tolerations"] = [{"key": RUN_LABEL, "operator": "Equal", "value": run_id}]
    return pod


def _strays(core_v1: Any, nodes: set[str], namespaces: set[str]) -> list[tuple[str, str, str]]:
    """(namespace, name, node) of every pod on ``nodes`` that is not in ``namespaces``."""
    everywhere = orjson.loads(core_v1.list_pod_for_all_namespaces(_preload_content=False).data)["items"]
    return [
        (p["metadata"]["namespace"], p["metadata"]["name"], p["spec"]["nodeName"])
        for p in everywhere
        if p["spec"].get("nodeName") in nodes and p["metadata"]["namespace"] not in namespaces
    ]


def _fill(core_v1: Any, namespace: str, run_id: str, nodes: list[str], labels_of: Any = None) -> None:
    """Two 1-cpu low-priority pods per 2-cpu node: a full cluster."""
    for i in range(2 * len(nodes)):
        _create(core_v1, namespace, _pod(f"low-{i}", run_id, "low", "1", labels_of(i) if labels_of else None))

    def all_bound() -> bool:
        pods = _by_name(core_v1, namespace).values()
        return len(pods) == 2 * len(nodes) and all(p["spec"].get("nodeName") for p in pods)

    wait_for(all_bound, 60, "low-priority pods bound")


def test_high_priority_pod_preempts_one_victim_and_binds_there(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    nodes = _nodes(api_client, run_id, 2)
    _fill(core_v1, namespace, run_id, nodes)
    before = {n: p["spec"]["nodeName"] for n, p in _by_name(core_v1, namespace).items()}
    _create(core_v1, namespace, _pod("vip", run_id, "high", "1"))

    def vip_bound() -> dict[str, Any] | None:
        vip = _by_name(core_v1, namespace).get("vip")
        return vip if vip and vip["spec"].get("nodeName") else None

    vip = wait_for(vip_bound, 60, "the preemptor bound")
    pods = _by_name(core_v1, namespace)
    gone = sorted(set(before) - set(pods))
    assert len(gone) == 1, gone  # the minimal set: one 1-cpu victim
    assert vip["spec"]["nodeName"] == before[gone[0]]
    [preempted] = _events(core_v1, namespace, "Preempted")
    assert preempted["involvedObject"]["name"] == gone[0]
    assert (
        preempted["message"] == f"Preempted by pod {vip['metadata']['uid']} on node {vip['spec']['nodeName']}"
    )
    failed = [
        e for e in _events(core_v1, namespace, "FailedScheduling") if e["involvedObject"]["name"] == "vip"
    ]
    assert failed and "0/" in failed[0]["message"] and "Insufficient cpu" in failed[0]["message"]


def test_preemption_policy_never_evicts_nothing_and_waits(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    nodes = _nodes(api_client, run_id, 2)
    _fill(core_v1, namespace, run_id, nodes)
    _create(core_v1, namespace, _pod("polite", run_id, "never", "1"))

    def reported() -> str | None:
        for e in _events(core_v1, namespace, "FailedScheduling"):
            if e["involvedObject"]["name"] == "polite":
                return str(e["message"])
        return None

    message = wait_for(reported, 60, "FailedScheduling for the preemptionPolicy=Never pod")
    # Upstream's text (DynamicResources' PostFilter reason first, one full stop); the explain feature
    # may append "Nearest misses: ..." after it.
    expected = "2 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    assert expected in message and ".." not in message, message
    pods = _by_name(core_v1, namespace)
    assert len(pods) == 5 and not pods["polite"]["spec"].get("nodeName")
    assert not _events(core_v1, namespace, "Preempted")


def test_pdb_protected_pods_are_not_chosen_when_others_will_do(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    from kubernetes.client import PolicyV1Api

    nodes = _nodes(api_client, run_id, 2)
    # Pods 0 and 2 land... wherever; protect half of them by label and choose by label, not node.
    _fill(core_v1, namespace, run_id, nodes, labels_of=lambda i: {"app": "guarded" if i % 2 == 0 else "free"})
    pods = _by_name(core_v1, namespace)
    # Whatever the placement, one unprotected pod makes room: the victim must be one of those.
    PolicyV1Api(api_client).create_namespaced_pod_disruption_budget(
        namespace,
        body={
            "metadata": {"name": "guard"},
            # minAvailable works for bare pods (maxUnavailable needs a controller's scale); with no
            # kubelet no pod is Ready, so the controller computes disruptionsAllowed 0 either way.
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}},
        },
        _preload_content=False,
    )

    def pdb_observed() -> bool:
        pdb = PolicyV1Api(api_client).read_namespaced_pod_disruption_budget("guard", namespace)
        return (
            pdb.status is not None and pdb.status.observed_generation == 1 and pdb.status.expected_pods == 2
        )

    wait_for(pdb_observed, 60, "the disruption controller to compute the PDB status")
    _create(core_v1, namespace, _pod("vip", run_id, "high", "1"))

    def vip_bound() -> bool:
        vip = _by_name(core_v1, namespace).get("vip")
        return bool(vip and vip["spec"].get("nodeName"))

    wait_for(vip_bound, 60, "the preemptor bound")
    gone = set(pods) - set(_by_name(core_v1, namespace))
    assert len(gone) == 1
    assert pods[gone.pop()]["metadata"]["labels"]["app"] == "free"


def _preempted_by(core_v1: Any, namespace: str) -> dict[str, list[tuple[str, str]]]:
    """Preempted events per preemptor uid: (victim, node) pairs."""
    out: dict[str, list[tuple[str, str]]] = {}
    for e in _events(core_v1, namespace, "Preempted"):
        words = e["message"].split()  # "Preempted by pod <uid> on node <node>"
        out.setdefault(words[3], []).append((e["involvedObject"]["name"], words[6]))
    return out


def _preemption_settled(samples: Callable[[], Any], what: str) -> None:
    """Wait until the scheduler whose /metrics ``samples`` reads has no preemption in flight. Called once
    its preemptors are bound: a bound pod gets no more scheduling cycles, so no round can start after
    this, and every victim of every round (a late, redundant one included) has been deleted."""
    wait_for(lambda: no_preemption_running(samples()), 60, f"{what}: no preemption in flight")


def _events_of(core_v1: Any, namespace: str, victims: list[str]) -> None:
    """Wait for the Preempted Event of every deleted victim (Events are written after the delete)."""

    def written() -> bool:
        named = {e["involvedObject"]["name"] for e in _events(core_v1, namespace, "Preempted")}
        return set(victims) <= named

    wait_for(written, 30, f"the Preempted events of {victims}")


def test_two_preemptors_at_once_claim_different_rooms(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    """Two 2-cpu preemptors created together on three full 2-cpu nodes: each must empty a node of its own
    (the second sees the first's nomination), so exactly four victims, none twice, and the victims of
    each preemptor are on the node it binds to."""
    nodes = _nodes(api_client, run_id, 3)
    _fill(core_v1, namespace, run_id, nodes)
    before = {n: p["spec"]["nodeName"] for n, p in _by_name(core_v1, namespace).items()}
    for name in ("vip-a", "vip-b"):
        _create(core_v1, namespace, _pod(name, run_id, "high", "2"))

    def both_bound() -> dict[str, dict[str, Any]] | None:
        pods = _by_name(core_v1, namespace)
        vips: dict[str, dict[str, Any]] = {
            n: pods[n] for n in ("vip-a", "vip-b") if n in pods and pods[n]["spec"].get("nodeName")
        }
        return vips if len(vips) == 2 else None

    vips = wait_for(both_bound, 90, "both preemptors bound")
    assert vips["vip-a"]["spec"]["nodeName"] != vips["vip-b"]["spec"]["nodeName"]
    _preemption_settled(lambda: scrape(scheduler), "py-scheduler")  # a late, redundant round included
    gone = sorted(set(before) - set(_by_name(core_v1, namespace)))
    _events_of(core_v1, namespace, gone)
    by_preemptor = _preempted_by(core_v1, namespace)
    history = sorted(
        (
            e.get("eventTime") or e.get("firstTimestamp") or "",
            e["reason"],
            e["involvedObject"]["name"],
            e["message"],
        )
        for e in list_events(core_v1, namespace)
        if e["reason"] in ("Preempted", "FailedScheduling", "Scheduled")
    )
    assert len(gone) == 4, (
        gone,
        {u: p for u, p in by_preemptor.items()},
        history,
        {n: v["metadata"]["uid"] for n, v in vips.items()},
    )
    victims = [v for pairs in by_preemptor.values() for v, _ in pairs]
    assert sorted(victims) == gone and len(set(victims)) == len(victims), by_preemptor
    for vip in vips.values():
        pairs = by_preemptor[vip["metadata"]["uid"]]
        assert {node for _, node in pairs} == {vip["spec"]["nodeName"]}
        assert {before[v] for v, _ in pairs} == {vip["spec"]["nodeName"]}


def _replica_set(name: str, run_id: str, replicas: int, cls: str, cpu: str) -> dict[str, Any]:
    template = _pod("unused", run_id, cls, cpu, {"app": name})
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": template["metadata"]["labels"]}, "spec": template["spec"]},
        },
    }


def test_no_preemption_loop_when_the_victim_is_recreated(
    core_v1: Any, api_client: Any, namespace: str, run_id: str, scheduler: SchedulerProcess
) -> None:
    """A ReplicaSet fills two nodes; a high-priority pod preempts one replica. The ReplicaSet recreates
    it at once: the replacement must neither take the room nominated to the preemptor nor, once it
    waits (and later binds on a new node), cause another round. Evictions are counted over a window
    until stable: exactly one, ever."""
    from kubernetes.client import AppsV1Api

    nodes = _nodes(api_client, run_id, 2)
    AppsV1Api(api_client).create_namespaced_replica_set(
        namespace, body=_replica_set("fill", run_id, 4, "low", "1"), _preload_content=False
    )

    def replicas_bound() -> bool:
        pods = list(_by_name(core_v1, namespace).values())
        return len(pods) == 4 and all(p["spec"].get("nodeName") for p in pods)

    wait_for(replicas_bound, 60, "the ReplicaSet's pods bound")
    first = set(_by_name(core_v1, namespace))
    _create(core_v1, namespace, _pod("vip", run_id, "high", "1"))
    seen: set[str] = set(first)

    def replacement_refused() -> str | None:
        pods = _by_name(core_v1, namespace)
        seen.update(pods)
        vip = pods.get("vip")
        new = [n for n in pods if n not in first and n != "vip"]
        if not (vip and vip["spec"].get("nodeName") and len(new) == 1):
            return None
        assert not pods[new[0]]["spec"].get("nodeName"), "the replacement took the preemptor's room"
        refused = [
            e
            for e in _events(core_v1, namespace, "FailedScheduling")
            if e["involvedObject"]["name"] == new[0]
        ]
        return new[0] if refused else None

    replacement = wait_for(replacement_refused, 60, "the preemptor bound and the replacement refused")
    # The replacement has lower priority than the preemptor and equal to everything else: no victims.
    extra = f"extra-{run_id}"
    create_nodes(api_client, [make_node(extra, cpu="2", labels={RUN_LABEL: run_id})])

    def replacement_bound() -> bool:
        pod = _by_name(core_v1, namespace).get(replacement)
        return bool(pod and pod["spec"].get("nodeName") == extra)

    wait_for(replacement_bound, 60, "the replacement bound on the new node")
    # Stable: no new pods, no new Preempted events, for 5 s in a row (bounded at 30 s). A bounded quiet
    # window, not a barrier: an extra eviction would show first as a replacement the ReplicaSet
    # controller creates on its own schedule, and no signal says that controller has nothing left to do.
    last: tuple[int, int] | None = None
    since = time.monotonic()
    deadline = since + 30
    while time.monotonic() < deadline:
        pods = _by_name(core_v1, namespace)
        seen.update(pods)
        now = (len(seen), len(_events(core_v1, namespace, "Preempted")))
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= 5:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"evictions never settled: {last}")
    assert last == (6, 1), (sorted(seen), last)  # four replicas, one replacement, the preemptor
    pods = _by_name(core_v1, namespace)
    assert len(pods) == 5 and all(p["spec"].get("nodeName") for p in pods.values())
    assert pods["vip"]["spec"]["nodeName"] in nodes


def test_preemption_across_schedulers_both_ways(
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    scheduler: SchedulerProcess,
    kube_scheduler: Any,
) -> None:
    """Pool "kube": kube-scheduler places the low-priority pods, a py-scheduler pod preempts one. Pool
    "py": the reverse. Victims are chosen whatever scheduler placed them, as upstream; each side
    reports its own Preempted events, and neither scheduler acts on the other's preemptor.

    No wait for py-scheduler's view is needed between the fill and the preemptor: its cache and queue are
    fed by one ordered handler on one pod watch, so the preemptor's ADDED event (created after the fill
    was seen bound) reaches the queue only after the fill's bindings reached the cache (unit test:
    test_core_event_handlers' ordering test). Upstream parity: a scheduler whose view lacked the fill,
    kube-scheduler included, would place the preemptor without a victim and leave the node agent to
    refuse it; the first-attempt record checked at the end shows py-scheduler's view held the fill.
    """
    names = {pool: [f"{pool}{i}-{run_id}" for i in range(2)] for pool in ("kube", "py")}
    # The nodes are this test's alone (``_private_taint``): a pod another module left pending would
    # otherwise take room on them and change what "full" means here.
    private = _private_taint(run_id)
    create_nodes(
        api_client,
        [
            make_node(n, cpu="2", labels={RUN_LABEL: run_id, "pool": pool}, taints=[private])
            for pool, ns in names.items()
            for n in ns
        ],
    )

    def _private_pod(name: str, cls: str) -> dict[str, Any]:
        return _tolerate_private(_pod(name, run_id, cls, "1"), run_id)

    fillers = {"kube": "default-scheduler", "py": "py-scheduler"}
    for pool, scheduler_name in fillers.items():
        for i in range(4):
            pod = _private_pod(f"{pool}-low-{i}", "low")
            pod["spec"]["schedulerName"] = scheduler_name
            pod["spec"]["nodeSelector"]["pool"] = pool
            _create(core_v1, namespace, pod)

    def filled() -> bool:
        pods = _by_name(core_v1, namespace).values()
        return len(pods) == 8 and all(p["spec"].get("nodeName") for p in pods)

    try:
        wait_for(filled, 60, "both pools filled")
    except AssertionError as err:
        # Say which pods are not bound and what their schedulers reported, so a failure explains itself.
        unbound = {
            n: (p["spec"].get("schedulerName"), (p.get("status") or {}).get("conditions"))
            for n, p in _by_name(core_v1, namespace).items()
            if not p["spec"].get("nodeName")
        }
        seen = [
            (e["involvedObject"]["name"], e["reason"], e.get("message"))
            for e in list_events(core_v1, namespace)
        ]
        foreign = _strays(core_v1, {n for pool in names.values() for n in pool}, {namespace})
        raise AssertionError(
            f"{err}; unbound: {unbound}; events: {seen}; others on its nodes: {foreign}"
        ) from None
    before = {n: p["spec"]["nodeName"] for n, p in _by_name(core_v1, namespace).items()}
    # Two 1-cpu pods on every 2-cpu node. Three on one node means a second scheduler of the same name
    # raced the filler (the kube_scheduler fixture refuses to start next to one): with room left on the
    # other node, placing the preemptor there without a victim would be right, and this test moot.
    assert sorted(Counter(before.values()).values()) == [2, 2, 2, 2], sorted(before.items())
    # The preemptor of pool "kube" is py-scheduler's, and the other way round.
    for pool, scheduler_name in (("kube", "py-scheduler"), ("py", "default-scheduler")):
        pod = _private_pod(f"vip-{pool}", "high")
        pod["spec"]["schedulerName"] = scheduler_name
        pod["spec"]["nodeSelector"]["pool"] = pool
        _create(core_v1, namespace, pod)

    def vips_bound() -> dict[str, dict[str, Any]] | None:
        pods = _by_name(core_v1, namespace)
        vips = {p: pods.get(f"vip-{p}") for p in ("kube", "py")}
        return vips if all(v and v["spec"].get("nodeName") for v in vips.values()) else None  # type: ignore[return-value]

    vips = wait_for(vips_bound, 90, "both preemptors bound")
    _preemption_settled(lambda: scrape(scheduler), "py-scheduler")
    _preemption_settled(lambda: scrape_kube_scheduler(kube_scheduler), "kube-scheduler")
    gone = sorted(set(before) - set(_by_name(core_v1, namespace)))
    _events_of(core_v1, namespace, gone)
    by_pool = {pool: [g for g in gone if g.startswith(pool)] for pool in ("kube", "py")}
    # Each side evicts the minimal set: one pod, on its preemptor's node.
    assert len(by_pool["kube"]) == 1, gone
    assert len(by_pool["py"]) == 1, gone
    events = _events(core_v1, namespace, "Preempted")
    reporters = {
        e["involvedObject"]["name"]: e.get("reportingComponent") or (e.get("source") or {}).get("component")
        for e in events
    }
    assert sorted(reporters) == gone, reporters
    for pool, reporter in (("kube", "py-scheduler"), ("py", "default-scheduler")):
        assert any(before[victim] == vips[pool]["spec"]["nodeName"] for victim in by_pool[pool]), gone
        assert all(reporters[victim] == reporter for victim in by_pool[pool]), reporters
    # py-scheduler's own record of its preemptor's first attempt: both kube nodes full (its cache held
    # kube-scheduler's fill), so it preempted rather than placed.
    code, body = scheduler.get(f"/debug/pods/{namespace}/vip-kube")
    assert code == 200, body
    first = orjson.loads(body)["attempts"][0]
    assert first["outcome"] == "Unschedulable", first
    assert first["filter"]["NodeResourcesFit"]["reasons"] == {"Insufficient cpu": 2}, first
    assert first["nominatedNode"] == vips["kube"]["spec"]["nodeName"], first


# --- side by side with kube-scheduler on identical seeded cases -------------------------------------

NODE_CPU = 4


def _case(seed: int) -> tuple[list[list[tuple[str, int]]], int]:
    """Three 4-cpu nodes, each filled exactly with (class, cpu) pods, and the preemptor's cpu."""
    rng = random.Random(seed)
    nodes = []
    for _ in range(3):
        pods: list[tuple[str, int]] = []
        free = NODE_CPU
        while free:
            cpu = rng.choice([c for c in (1, 2) if c <= free])
            pods.append((rng.choice(["low", "low", "mid", "mid", "high"]), cpu))
            free -= cpu
        nodes.append(pods)
    return nodes, rng.choice([1, 2, 3])


def _expected(
    nodes: list[list[tuple[str, int]]], need: int
) -> tuple[list[int], dict[int, list[tuple[str, int]]]]:
    """Upstream's choice for cpu-only pods without PDBs or start times: per node the minimal victims
    (all lower-priority pods removed, then reprieved most important first while the preemptor fits),
    then pickOneNodeForPreemption's first three criteria. Returns the tied best nodes and the victims."""
    victims: dict[int, list[tuple[str, int]]] = {}
    for index, pods in enumerate(nodes):
        keep = [p for p in pods if PRIORITY[p[0]] >= PRIORITY["high"]]
        lower = sorted((p for p in pods if PRIORITY[p[0]] < PRIORITY["high"]), key=lambda p: -PRIORITY[p[0]])
        used = sum(c for _, c in keep)
        if used + need > NODE_CPU:
            continue
        chosen = []
        for p in lower:
            if used + p[1] + need <= NODE_CPU:
                used += p[1]
            else:
                chosen.append(p)
        victims[index] = chosen
    offset = 2**31

    def rank(i: int) -> tuple[int, int, int]:
        v = victims[i]
        return (
            max((PRIORITY[c] for c, _ in v), default=-offset),
            sum(PRIORITY[c] + offset for c, _ in v),
            len(v),
        )

    best = min(rank(i) for i in victims) if victims else None
    return [i for i in victims if rank(i) == best], victims


def _scheduler_processes() -> list[str]:
    """Command lines of every py-scheduler process on the machine (a leaked one would also preempt)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"scheduler" in argv and b"-m" in argv:
            found.append(f"{proc.name}: " + " ".join(a.decode(errors="replace") for a in argv)[:200])
    return found


def test_side_by_side_preemption_matches_kube_scheduler(
    core_v1: Any,
    api_client: Any,
    run_id: str,
    scheduler: SchedulerProcess,
    kube_scheduler: Any,
) -> None:
    """Identical seeded cases, one per scheduler in its own pool and namespace: the same victims (by
    priority class and size) and, when the choice is unique, the same node."""
    from tests.conftest import _delete_namespace

    cases = []
    for seed in range(40):
        nodes, need = _case(seed)
        tied, victims = _expected(nodes, need)
        # Upstream sorts victims by priority then start time (none here, without a kubelet), so among
        # pods of one class on a node the reprieve order is arbitrary: keep one size per class and node.
        one_size = all(len({c for k, c in pods if k == cls}) <= 1 for pods in nodes for cls in PRIORITY)
        if one_size and tied and any(victims[i] for i in tied):  # preemption needed and possible
            cases.append((seed, nodes, need))
        if len(cases) == 4:
            break
    for seed, case_nodes, need in cases:
        namespaces = {pool: f"pre-{pool}-{seed}-{run_id}" for pool in ("kube", "py")}
        for ns in namespaces.values():
            core_v1.create_namespace(body={"metadata": {"name": ns}}, _preload_content=False)
        try:
            node_names = {pool: [f"{pool}-c{seed}-{i}-{run_id}" for i in range(3)] for pool in namespaces}
            # Private nodes: "filled exactly" must stay true. A pod another module left pending, bound
            # here by kube-scheduler before the fill (CI saw a py-scheduler Deployment's 200m
            # system-cluster-critical pod), cannot be evicted by the preemptor and costs one more victim.
            create_nodes(
                api_client,
                [
                    make_node(
                        n,
                        cpu=str(NODE_CPU),
                        labels={RUN_LABEL: run_id, "pool": f"{pool}{seed}"},
                        taints=[_private_taint(run_id)],
                    )
                    for pool, ns in node_names.items()
                    for n in ns
                ],
            )
            for pool, scheduler_name in (("kube", "default-scheduler"), ("py", "py-scheduler")):
                for index, pods in enumerate(case_nodes):
                    for j, (cls, cpu) in enumerate(pods):
                        pod = _pod(f"f{index}-{j}-{cls}-{cpu}", run_id, cls, str(cpu))
                        pod["spec"]["nodeName"] = node_names[pool][index]  # placed, not scheduled
                        _create(core_v1, namespaces[pool], pod)
                vip = _tolerate_private(_pod("vip", run_id, "high", str(need)), run_id)
                vip["spec"]["schedulerName"] = scheduler_name
                vip["spec"]["nodeSelector"]["pool"] = f"{pool}{seed}"
                _create(core_v1, namespaces[pool], vip)
            outcome: dict[str, tuple[int, list[tuple[str, int]]]] = {}
            for pool, ns in namespaces.items():

                def bound(ns: str = ns) -> str | None:
                    vip = _by_name(core_v1, ns).get("vip")
                    return vip["spec"].get("nodeName") if vip else None

                node = wait_for(bound, 90, f"seed {seed}: {pool}'s preemptor bound")
                if pool == "py":
                    _preemption_settled(lambda: scrape(scheduler), f"seed {seed}: py-scheduler")
                else:
                    _preemption_settled(
                        lambda: scrape_kube_scheduler(kube_scheduler), f"seed {seed}: kube-scheduler"
                    )
                remaining = set(_by_name(core_v1, ns))
                gone = [
                    (cls, int(cpu))
                    for index, pods in enumerate(case_nodes)
                    for j, (cls, cpu) in enumerate(pods)
                    if f"f{index}-{j}-{cls}-{cpu}" not in remaining
                ]
                outcome[pool] = (node_names[pool].index(node), sorted(gone))
            tied, victims = _expected(case_nodes, need)
            # Both choose among the best nodes and evict exactly that node's minimal victims; with one
            # best node, the same node and the same victims.
            # py-scheduler, the subject, is held to exactly that. The real kube-scheduler, the peer, has
            # been seen (rarely, here without kubelets) to take a second round of victims while its async
            # preemption races its own retry: it is held to a best node whose minimal victims are among
            # its evictions.
            # On a mismatch, py-scheduler's own record of its preemptor's attempts says which round
            # chose what (CI runs saw one extra victim on py-scheduler's side when the nodes were not
            # private: another test's pod sat on the node).
            code, record = scheduler.get(f"/debug/pods/{namespaces['py']}/vip")
            writes = [
                line
                for line in scheduler.log_path.read_text(errors="replace").splitlines()
                if "preempting" in line and namespaces["py"] in line
            ]
            # Who evicted py's victims: two schedulers both acting on the preemptor would show here.
            reporters = sorted(
                {
                    (e.get("reportingController", ""), e.get("reportingInstance", ""))
                    for e in _events(core_v1, namespaces["py"], "Preempted")
                }
            )
            # The decisions first: an AssertionError's message is cut short in CI's report.
            why = (seed, outcome, victims, tied, writes, reporters, _scheduler_processes(), code, record)
            strays = _strays(core_v1, {n for ns in node_names.values() for n in ns}, set(namespaces.values()))
            assert not strays, (f"seed {seed}: pods of other tests on the case's nodes", strays, why)
            for pool, (index, gone) in outcome.items():
                assert index in tied, (pool, why)
                if pool == "py":
                    assert gone == sorted(victims[index]), (pool, why)
                else:
                    assert not Counter(victims[index]) - Counter(gone), (pool, why)
            if len(tied) == 1:
                assert outcome["py"][0] == outcome["kube"][0], why
        finally:
            for ns in namespaces.values():
                _delete_namespace(core_v1, ns)
