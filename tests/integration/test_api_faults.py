"""Faults injected between py-scheduler and the real API server, request by request.

A TLS-terminating proxy (``faultproxy``) answers each pod's first Binding POST with a different
failure: 500 and 503 (retried at once, as v1.37's util.BindPod does), 429 with Retry-After, 409 and 404
the API server did not say, a hang past the client's timeout, and a 500 or a hang after the Binding did
land. Event writes and pod status patches fail
with 500 or hang for a while, and watch streams are cut mid-stream every few seconds. Every pod must
end bound exactly once with one Scheduled Event and a PodScheduled=True condition; the process must
keep running without a traceback, and its queue metrics must come back to empty.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

from devcluster.credentials import write_kubeconfig
from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for
from tests.integration.faultproxy import Fault, FaultProxy, fault_proxy
from tests.integration.workload import (
    RUN_LABEL,
    create_pods,
    list_events,
    list_nodes,
    list_pods,
    make_pod,
    overcommitted_nodes,
    scrape,
)

# The scheduler's per-request timeout for a Binding (scheduler.client.api.DEFAULT_TIMEOUT) is 30 s.
HANG = 33.0
# Each pod's first Binding meets the fault at its index modulo this list (None: no fault).
BINDING_FAULTS: list[Fault | None] = [
    Fault(status=500),
    Fault(status=429, retry_after=1),
    Fault(status=409),
    Fault(status=404),
    Fault(hang=HANG),
    Fault(status=500, forward_first=True),
    Fault(hang=HANG, forward_first=True),
    Fault(status=503),
    None,
]
# Pods whose first Binding landed although its answer was lost (a 500 after the write, a timeout).
LANDED = {i for i, f in enumerate(BINDING_FAULTS) if f is not None and f.forward_first}
# Pods whose first Binding got a 500 or 503 without landing: retried (v1.37's util.BindPod).
RETRIED_BY_BIND_POD = {
    i
    for i, f in enumerate(BINDING_FAULTS)
    if f is not None and not f.forward_first and f.status in (500, 503)
}
WRITE_FAULTS = [Fault(status=500), Fault(hang=12.0), Fault(status=503), Fault(status=429, retry_after=1)]


class Faults:
    """The proxy's chooser: per-pod first Binding faults, and a window of failing writes."""

    def __init__(self, writes: int) -> None:
        self.lock = threading.Lock()
        self.bindings: Counter[str] = Counter()
        self.writes_left = writes
        self.writes_seen = 0

    def __call__(self, method: str, path: str) -> Fault | None:
        kind = FaultProxy.kind(method, path)
        with self.lock:
            if kind == "POST binding":
                name = path.rsplit("/", 2)[-2]
                self.bindings[name] += 1
                if self.bindings[name] > 1:
                    return None
                return BINDING_FAULTS[int(name.removeprefix("p")) % len(BINDING_FAULTS)]
            if kind in ("POST event", "PATCH event", "PATCH pod status") and self.writes_left > 0:
                self.writes_left -= 1
                self.writes_seen += 1
                return WRITE_FAULTS[self.writes_seen % len(WRITE_FAULTS)]
        return None


def start_through(
    proxy: FaultProxy, control_plane: Any, tmp_path: Path, config: Any, processes: list[SchedulerProcess]
) -> SchedulerProcess:
    """A py-scheduler whose every API request goes through ``proxy``, started and ready."""
    kubeconfig = write_kubeconfig(
        tmp_path / "proxied.kubeconfig",
        proxy.server,
        control_plane.ca_file.read_bytes(),
        "admin",
        control_plane.token,
    )
    proc = SchedulerProcess(kubeconfig, tmp_path, config).start()
    processes.append(proc)
    proc.wait_ready(60)
    return proc


def total(
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float], metric: str, /, **labels: str
) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == metric and want <= ls)


def test_binding_event_and_status_faults_and_cut_watches_lose_no_pod(
    *,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    nodes, pods = 6, 54
    create_nodes(api_client, [make_node(f"{run_id}-n{i}", labels={RUN_LABEL: run_id}) for i in range(nodes)])
    with fault_proxy(control_plane) as proxy:
        faults = Faults(writes=40)
        proxy.chooser = faults
        proc = start_through(proxy, control_plane, tmp_path, scheduler_config(), processes)

        # Two pods that fit nowhere: their failures write Events and PodScheduled=False patches
        # (some of which fail) while bindings fail around them.
        misfits = [make_pod(f"big{i}", run_id, cpu="64") for i in range(2)]
        create_pods(core_v1, namespace, [*misfits, *(make_pod(f"p{i}", run_id) for i in range(pods))])

        def all_bound() -> bool:
            return sum(1 for p in list_pods(core_v1, namespace) if p["spec"].get("nodeName")) == pods

        # Watches cut every 2 s while the failures play out.
        started = time.monotonic()
        while time.monotonic() - started < 12:
            time.sleep(2)
            proxy.cut_watches()
            proc.assert_running()
        wait_for(all_bound, HANG + 60, f"all {pods} pods bound")

        listed = list_pods(core_v1, namespace)
        assert overcommitted_nodes(list_nodes(core_v1, run_id), listed) == []
        for pod in listed:
            if pod["metadata"]["name"].startswith("big"):
                assert not pod["spec"].get("nodeName")
                continue
            conditions = {c["type"]: c for c in pod["status"].get("conditions", [])}
            assert conditions["PodScheduled"]["status"] == "True", (pod["metadata"]["name"], conditions)

        def fault_of(i: int) -> int:
            return i % len(BINDING_FAULTS)

        # Every pod gets exactly one Scheduled event: those whose Binding landed while the answer
        # was lost too (the scheduler reads the pod back and finds it bound where it sent it).
        def scheduled() -> Counter[str]:
            return Counter(
                e["involvedObject"]["name"]
                for e in list_events(core_v1, namespace)
                if e.get("reason") == "Scheduled"
            )

        wait_for(
            lambda: all(scheduled()[f"p{i}"] == 1 for i in range(pods)), 60, "a Scheduled event for every pod"
        )
        assert max(scheduled().values()) == 1, scheduled()
        failed = {
            e["involvedObject"]["name"]
            for e in list_events(core_v1, namespace)
            if e["reason"] == "FailedScheduling"
        }
        assert {"big0", "big1"} <= failed
        # A Binding answered 429 with Retry-After was sent again after the wait, as client-go does;
        # one answered 500 or 503 was sent again at once, as v1.37's util.BindPod retries them; one
        # that landed was read back: none of these pods failed. Every other faulted one did.
        fine = {1, *RETRIED_BY_BIND_POD, *LANDED}
        failing = {i for i, f in enumerate(BINDING_FAULTS) if f is not None} - fine
        assert not {f"p{i}" for i in range(pods) if fault_of(i) in fine} & failed
        assert {f"p{i}" for i in range(pods) if fault_of(i) in failing} <= failed

        # Every fault happened (else this test proves less than it says).
        injected = {label for (kind, label) in proxy.injected if kind == "POST binding"}
        assert injected == {f.label for f in BINDING_FAULTS if f is not None}, proxy.injected
        assert faults.writes_left == 0, faults.writes_left
        assert proxy.watch_cuts >= 4, proxy.watch_cuts

        # The queue drains and the metrics agree: every pod scheduled once, the failures counted.
        proc.assert_running()

        def queue_settled() -> bool:
            samples = scrape(proc)
            active = total(samples, "scheduler_pending_pods", queue="active")
            backoff = total(samples, "scheduler_pending_pods", queue="backoff")
            return active == 0 and backoff == 0

        wait_for(queue_settled, 30, "no pod active or backing off")
        samples = scrape(proc)
        assert total(samples, "scheduler_schedule_attempts_total", result="scheduled") == pods
        errors = total(samples, "scheduler_schedule_attempts_total", result="error")
        assert errors >= sum(1 for i in range(pods) if fault_of(i) in failing), errors
        assert total(samples, "scheduler_pending_pods", queue="unschedulable") == 2

        log = proc.log_path.read_text(errors="replace")
        assert "Traceback" not in log, log[-4000:]
        assert proc.stop() == 0, proc.log_tail()


# --- the Lease behind a failing API server ----------------------------------------------------------

# A renew deadline with room for a failure window (2.5 s), a call hanging past it and one retry period.
FAST_ELECTION = {"leaseDuration": "8s", "renewDeadline": "6s", "retryPeriod": "1s"}
LEASE_FAULTS = [Fault(status=500), Fault(status=503), Fault(status=429, retry_after=1), Fault(hang=1.5)]


class LeaseFaults:
    """Fails every Lease request while ``on`` is set, cycling through ``LEASE_FAULTS``."""

    def __init__(self) -> None:
        self.on = threading.Event()
        self.seen = 0

    def __call__(self, method: str, path: str) -> Fault | None:
        if "/leases" not in path or not self.on.is_set():
            return None
        self.seen += 1
        return LEASE_FAULTS[self.seen % len(LEASE_FAULTS)]


def test_lease_failures_within_the_renew_deadline_keep_the_leader_and_longer_ones_end_it(
    *,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    create_nodes(api_client, [make_node(f"{run_id}-n{i}", labels={RUN_LABEL: run_id}) for i in range(4)])
    lease = f"faults-{run_id}"
    cfg = scheduler_config(leader_elect=True, lease_name=lease)
    cfg["leaderElection"].update(FAST_ELECTION)
    with fault_proxy(control_plane) as proxy:
        faults = LeaseFaults()
        proxy.chooser = faults
        proc = start_through(proxy, control_plane, tmp_path, cfg, processes)

        def leading() -> bool:
            proc.assert_running()
            return total(scrape(proc), "leader_election_master_status", name=lease) == 1

        wait_for(leading, 30, "the replica to lead")

        # 2.5 s of failing Lease requests (renewals every 1 s, deadline 6 s) while pods bind.
        pods = 30
        create_pods(core_v1, namespace, [make_pod(f"p{i}", run_id) for i in range(pods)])
        faults.on.set()
        until = time.monotonic() + 2.5
        while time.monotonic() < until:
            assert leading(), "leadership dropped during a failure shorter than the renew deadline"
            time.sleep(0.2)
        faults.on.clear()
        failed_renewals = faults.seen
        assert failed_renewals >= 2, failed_renewals
        wait_for(
            lambda: sum(1 for p in list_pods(core_v1, namespace) if p["spec"].get("nodeName")) == pods,
            30,
            f"all {pods} pods bound",
        )
        assert leading()

        # Failing past the renew deadline: the leader gives up and exits 1, as kube-scheduler does.
        faults.on.set()
        assert proc.proc is not None
        renew_deadline, retry_period = 6.0, 1.0
        code = proc.proc.wait(renew_deadline + retry_period + 2)
        assert code == 1, proc.log_tail()

    lines = proc.log_path.read_text(errors="replace").splitlines()
    lost = [i for i, line in enumerate(lines) if "leader election lost" in line]
    assert lost, proc.log_tail()
    sent = [i for i, line in enumerate(lines) if "sending binding of" in line]
    assert sent and max(sent) < lost[0]
    assert not any("Traceback" in line for line in lines), "\n".join(lines[-60:])


# --- informers' LIST and WATCH failing ----------------------------------------------------------------

EXPIRED_EVENT = (
    b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",'
    b'"message":"too old resource version: 1 (2)","reason":"Expired","code":410}}\n'
)
WATCH_FAULTS = [
    Fault(status=200, body=EXPIRED_EVENT, name="watch-410"),
    Fault(status=200, body=b'{"type":"ADDED","object":{"kind":\n', name="garbled"),
    Fault(status=500),
    Fault(status=429, retry_after=1),
    Fault(hang=3.0),
    Fault(status=503),
]


class InformerFaults:
    """While ``on``: every LIST and WATCH of pods and nodes fails, cycling through the faults above
    (watch-only answers go to watches; a LIST gets a 500 instead)."""

    def __init__(self) -> None:
        self.on = threading.Event()
        self.seen: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()

    def __call__(self, method: str, path: str) -> Fault | None:
        if method != "GET" or not self.on.is_set():
            return None
        route = path.split("?", 1)[0]
        if route not in ("/api/v1/pods", "/api/v1/nodes"):
            return None
        watching = "watch=" in path
        choices = WATCH_FAULTS if watching else [f for f in WATCH_FAULTS if f.status != 200]
        key = "watch" if watching else "list"
        fault = choices[self.calls[key] % len(choices)]
        self.calls[key] += 1
        self.seen[fault.label] += 1
        return fault


def test_failing_lists_and_watches_delay_pods_and_lose_none(
    *,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    create_nodes(api_client, [make_node(f"{run_id}-n{i}", labels={RUN_LABEL: run_id}) for i in range(3)])
    with fault_proxy(control_plane) as proxy:
        faults = InformerFaults()
        proxy.chooser = faults
        proc = start_through(proxy, control_plane, tmp_path, scheduler_config(), processes)
        create_pods(core_v1, namespace, [make_pod(f"before{i}", run_id) for i in range(10)])

        # 8 s in which every pods/nodes LIST and WATCH fails, and open watches are cut.
        faults.on.set()
        proxy.cut_watches()
        create_pods(core_v1, namespace, [make_pod(f"during{i}", run_id) for i in range(10)])
        create_nodes(api_client, [make_node(f"{run_id}-late", labels={RUN_LABEL: run_id})])
        for _ in range(8):
            time.sleep(1)
            proxy.cut_watches()
            proc.assert_running()
        faults.on.clear()
        create_pods(core_v1, namespace, [make_pod(f"after{i}", run_id) for i in range(10)])

        def placement() -> dict[str, str]:
            return {
                p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in list_pods(core_v1, namespace)
            }

        wait_for(lambda: all(placement().values()) and len(placement()) == 30, 60, "all 30 pods bound")
        assert {"watch-410", "garbled", "500"} <= set(faults.seen), faults.seen
        # The node created during the outage was seen too: it takes pods like the others.
        listed = list_pods(core_v1, namespace)
        assert overcommitted_nodes(list_nodes(core_v1, run_id), listed) == []
        assert proc.get("/readyz")[0] == 200
        log = proc.log_path.read_text(errors="replace")
        assert "Traceback" not in log, log[-4000:]
        assert proc.stop() == 0, proc.log_tail()


class HeldBindings:
    """The proxy's chooser: holds each named pod's first Binding POST until the test releases it."""

    def __init__(self, names: list[str]) -> None:
        self.lock = threading.Lock()
        self.held = {name: threading.Event() for name in names}
        self.seen: Counter[str] = Counter()

    def __call__(self, method: str, path: str) -> Fault | None:
        if FaultProxy.kind(method, path) != "POST binding":
            return None
        name = path.rsplit("/", 2)[-2]
        with self.lock:
            self.seen[name] += 1
            if self.seen[name] > 1 or name not in self.held:
                return None
        return Fault(hold=self.held[name])

    def bindings(self, name: str) -> int:
        with self.lock:
            return self.seen[name]


def _events_of(core_v1: Any, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in list_events(core_v1, namespace)
        if (e.get("involvedObject") or {}).get("name") == name and e.get("reason") == reason
    ]


def test_binding_conflicts_from_the_api_server_are_handled_as_kube_scheduler_does(
    *,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    """Real 409s from the real API server, each provoked while the pod's Binding is held by the proxy:

    * ``being-deleted``: the pod (kept by a finalizer) is deleted meanwhile; the API server answers
      "pod ... is being deleted, cannot be assigned to a host". As upstream's handleBindingCycleError ->
      handleSchedulingFailure: the pod is requeued with backoff, a FailedScheduling Event carries the
      API's message and PodScheduled=False says SchedulerError; the retry skips the deleting pod with
      "skip schedule deleting pod" (skipPodSchedule) and binds nothing.
    * ``recreated``: the pod is deleted and created again under its name; the Binding's uid
      precondition fails ("Precondition failed: UID in precondition"). The old attempt is dropped
      without a word (upstream: "Pod was recreated ... Skip requeueing and status updates"), and the new
      pod, scheduled while the old Binding was held, is bound.
    * ``already-bound``: someone else binds the pod meanwhile ("already assigned"): not requeued.
    """
    node = f"{run_id}-n0"
    create_nodes(api_client, [make_node(node, labels={RUN_LABEL: run_id})])
    names = ["being-deleted", "recreated", "already-bound"]
    chooser = HeldBindings(names)
    finalizer = "example.com/keep"
    with fault_proxy(control_plane) as proxy:
        proxy.chooser = chooser
        proc = start_through(proxy, control_plane, tmp_path, scheduler_config(), processes)
        pods = {name: make_pod(name, run_id) for name in names}
        pods["being-deleted"]["metadata"]["finalizers"] = [finalizer]
        create_pods(core_v1, namespace, pods.values())
        for name in names:
            wait_for(partial(chooser.bindings, name), 60, f"{name}'s Binding held by the proxy")
        old_uid = core_v1.read_namespaced_pod("recreated", namespace).metadata.uid

        # being-deleted: a finalizer keeps it, with deletionTimestamp set.
        core_v1.delete_namespaced_pod("being-deleted", namespace, grace_period_seconds=0)
        # recreated: gone, and a namesake with a new uid. The delete freed the old pod's name and room
        # at once (as kube-scheduler's handleAssumedPodDeletion), so the namesake is scheduled while
        # the old Binding is held: its own Binding, the second, passes the proxy and binds it. That
        # proves the scheduler's watch has shown the delete before the held Binding is answered.
        core_v1.delete_namespaced_pod("recreated", namespace, grace_period_seconds=0)
        wait_for(lambda: _gone(core_v1, namespace, "recreated", old_uid), 30, "the old recreated pod deleted")
        core_v1.create_namespaced_pod(namespace, make_pod("recreated", run_id))
        wait_for(lambda: chooser.bindings("recreated") == 2, 30, "the namesake's Binding sent")
        # already-bound: someone else binds it.
        core_v1.create_namespaced_binding(
            namespace,
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "already-bound"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            },
            _preload_content=False,
        )
        for name in names:
            chooser.held[name].set()

        # being-deleted: requeued, reported with the API's message, then skipped as a deleting pod.
        def skipped() -> list[dict[str, Any]]:
            return [
                e
                for e in _events_of(core_v1, namespace, "being-deleted", "FailedScheduling")
                if "skip schedule deleting pod" in str(e.get("message"))
            ]

        wait_for(skipped, 60, "the retry of the deleting pod skipped with upstream's Event")
        messages = [
            str(e.get("message")) for e in _events_of(core_v1, namespace, "being-deleted", "FailedScheduling")
        ]
        # The API server's message, as kube-scheduler's FailedScheduling says it.
        being_deleted = (
            'Operation cannot be fulfilled on pods/binding "being-deleted": pod being-deleted is being '
            "deleted, cannot be assigned to a host"
        )
        assert being_deleted in messages, messages
        deleting = core_v1.read_namespaced_pod("being-deleted", namespace)
        assert not deleting.spec.node_name and chooser.bindings("being-deleted") == 1
        (scheduled,) = [c for c in deleting.status.conditions or () if c.type == "PodScheduled"]
        assert (scheduled.status, scheduled.reason) == ("False", "SchedulerError")
        assert scheduled.message == being_deleted

        # recreated: the new pod bound (its second Binding, sent to the API server as is), the old
        # attempt's 409 reported nowhere.
        def new_bound() -> bool:
            pod = core_v1.read_namespaced_pod("recreated", namespace)
            return bool(pod.spec.node_name) and pod.metadata.uid != old_uid

        wait_for(new_bound, 60, "the recreated pod bound")
        assert chooser.bindings("recreated") == 2
        recreated_failures = _events_of(core_v1, namespace, "recreated", "FailedScheduling")
        assert not [e for e in recreated_failures if "Precondition" in str(e.get("message"))], (
            recreated_failures
        )
        assert len(_events_of(core_v1, namespace, "recreated", "Scheduled")) == 1

        # already-bound: bound to the node the test chose, one Binding from the scheduler, and no
        # failure written onto it (the read after the 409 found it bound, whatever the watch had shown).
        bound = core_v1.read_namespaced_pod("already-bound", namespace)
        assert bound.spec.node_name == node and chooser.bindings("already-bound") == 1
        assert _events_of(core_v1, namespace, "already-bound", "FailedScheduling") == []
        assert [(c.type, c.status) for c in bound.status.conditions or () if c.type == "PodScheduled"] == [
            ("PodScheduled", "True")
        ]
        proc.assert_running()

        core_v1.patch_namespaced_pod("being-deleted", namespace, {"metadata": {"finalizers": None}})


def _gone(core_v1: Any, namespace: str, name: str, uid: str) -> bool:
    return all(
        p["metadata"]["uid"] != uid for p in list_pods(core_v1, namespace) if p["metadata"]["name"] == name
    )


class LostAnswers:
    """The proxy's chooser: each named pod's first Binding loses its answer (the connection dropped
    after sending, or a 500), landed or not, and the first read of that pod fails too (503), so the
    scheduler cannot tell what became of it."""

    BINDINGS = {
        "landed": Fault(hang=0.5, forward_first=True),
        "not-landed": Fault(hang=0.5),
        "landed-500": Fault(status=500, forward_first=True),
    }

    def __init__(self, namespace: str) -> None:
        self.lock = threading.Lock()
        self.namespace = namespace
        self.bindings: Counter[str] = Counter()
        self.reads: Counter[str] = Counter()

    def __call__(self, method: str, path: str) -> Fault | None:
        kind = FaultProxy.kind(method, path)
        prefix = f"/api/v1/namespaces/{self.namespace}/pods/"
        with self.lock:
            if kind == "POST binding":
                name = path.rsplit("/", 2)[-2]
                self.bindings[name] += 1
                return self.BINDINGS.get(name) if self.bindings[name] == 1 else None
            name = path.removeprefix(prefix)
            if method == "GET" and path.startswith(prefix) and name in self.BINDINGS:
                self.reads[name] += 1
                return Fault(status=503) if self.reads[name] == 1 else None
        return None


def test_a_binding_whose_answer_and_read_back_were_lost_gets_one_scheduled_event(
    *,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    """A Binding whose answer was lost and whose read-back failed may have landed. ``landed``: it did;
    the watch shows the pod bound where it was sent, and the scheduler writes its Scheduled Event
    (kube-scheduler would write none, and report SchedulerError). ``not-landed``: it did not; the pod
    is retried and bound once. ``landed-500``: a 500 after the write, the retry answered 409 "already
    assigned" to that node: the first try landed. Each pod: bound, one Scheduled Event,
    PodScheduled=True."""
    create_nodes(api_client, [make_node(f"{run_id}-n0", labels={RUN_LABEL: run_id})])
    chooser = LostAnswers(namespace)
    names = list(LostAnswers.BINDINGS)
    with fault_proxy(control_plane) as proxy:
        proxy.chooser = chooser
        proc = start_through(proxy, control_plane, tmp_path, scheduler_config(), processes)
        create_pods(core_v1, namespace, [make_pod(name, run_id) for name in names])

        def settled() -> bool:
            return all(
                p["spec"].get("nodeName")
                and len(_events_of(core_v1, namespace, p["metadata"]["name"], "Scheduled"))
                for p in list_pods(core_v1, namespace)
            )

        wait_for(settled, 60, "every pod bound with its Scheduled Event")
        time.sleep(2.0)  # room for a second Event or a late PodScheduled=False to show up
        for pod in list_pods(core_v1, namespace):
            name = pod["metadata"]["name"]
            assert len(_events_of(core_v1, namespace, name, "Scheduled")) == 1, name
            conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions") or ()}
            assert conditions.get("PodScheduled") == "True", (name, pod["status"])
        # Every fault happened as described.
        assert chooser.bindings == Counter({"landed": 1, "not-landed": 2, "landed-500": 2}), chooser.bindings
        assert all(chooser.reads[name] >= 1 for name in names), chooser.reads
        log = proc.log_path.read_text(errors="replace")
        assert "landed although its answer was lost" in log or "landed on an earlier try" in log
        assert "Traceback" not in log
        proc.assert_running()
