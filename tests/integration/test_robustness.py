"""Issue 11 on the real control plane: faults around the scheduler process.

* every Event of pods scheduled around a kube-apiserver kill and restart arrives (writes are retried);
* SIGTERM with etcd frozen (the API server accepts requests and never answers) ends within the grace
  period, with no traceback;
* a leader whose network to the API server freezes exits 1 within the renew deadline plus a retry
  period, and sends no Binding after it lost the lease.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import os
import re
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.cluster import ControlPlane
from devcluster.credentials import write_kubeconfig
from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for
from tests.integration.workload import RUN_LABEL, create_pods, list_events, list_pods, make_pod, new_run_id

GRACE_PERIOD = 30.0  # Kubernetes' default terminationGracePeriodSeconds
FAST_ELECTION = {"leaseDuration": "6s", "renewDeadline": "4s", "retryPeriod": "1s"}


def add_nodes(api_client: Any, run_id: str, count: int) -> None:
    create_nodes(api_client, [make_node(f"{run_id}-n{i}", labels={RUN_LABEL: run_id}) for i in range(count)])


def bound(core_v1: Any, namespace: str) -> set[str]:
    return {p["metadata"]["name"] for p in list_pods(core_v1, namespace) if p["spec"].get("nodeName")}


def elected(lease: str) -> dict[str, Any]:
    cfg = copy.deepcopy(scheduler_config(leader_elect=True, lease_name=lease))
    cfg["leaderElection"].update(FAST_ELECTION)
    return cfg


def is_leading(proc: SchedulerProcess, lease: str) -> bool:
    proc.assert_running()
    status, text = proc.get("/metrics")
    return status == 200 and f'leader_election_master_status{{name="{lease}"}} 1.0' in text


def assert_no_traceback(proc: SchedulerProcess) -> None:
    text = proc.log_path.read_text(errors="replace")
    assert "Traceback" not in text, text[-4000:]


# --- Events across an API server restart ------------------------------------------------------------


def _failed_writes(log: str, reason: str) -> set[str]:
    """Pods whose ``reason`` Event write failed at least once and was kept for a retry."""
    found = re.findall(rf"{reason} event for [^/\s]+/(\S+) failed \(try \d+, will retry\)", log)
    return set(found)


def test_every_event_of_pods_scheduled_around_an_apiserver_kill_arrives(tmp_path: Path) -> None:
    """kube-apiserver is SIGKILLed while pods are being bound and rejected, and started again on the
    same port a few seconds later (its own control plane: the shared one is left alone). Every Event
    write that failed meanwhile (Scheduled from the binding threads, FailedScheduling from the writer
    pool) is retried as client-go's events sink does (12 tries, 10-12.5 s apart) and arrives: every
    bound pod has its Scheduled Event, every pod that fits nowhere its FailedScheduling Event, and
    every pod whose write failed has the Event that write carried; none was given up."""
    from kubernetes.client import CoreV1Api

    plane = ControlPlane()
    with plane:
        client = plane.api_client()
        core_v1: Any = CoreV1Api(client)
        run_id, namespace = new_run_id(), "default"
        add_nodes(client, run_id, 10)
        # A low client rate keeps bindings and their Events flowing for ~10 s, so the kill hits writes.
        cfg = scheduler_config(leader_elect=False, extra={"clientConnection": {"qps": 40, "burst": 40}})
        proc = SchedulerProcess(plane.kubeconfig, tmp_path, cfg).start()
        try:
            proc.wait_ready(60)
            total, misfits = 200, [f"big{i}" for i in range(10)]
            create_pods(
                core_v1,
                namespace,
                [make_pod(f"p{i}", run_id) for i in range(total)]
                + [make_pod(n, run_id, cpu="64") for n in misfits],
            )
            wait_for(lambda: len(bound(core_v1, namespace)) >= 30, 60, "the first bindings")
            apiserver = plane.pids()["kube-apiserver"]
            os.kill(apiserver, signal.SIGKILL)
            wait_for(lambda: not _alive(apiserver), 10, "kube-apiserver gone")
            time.sleep(3.0)  # the outage: bindings and Event writes fail to connect meanwhile
            plane.start_apiserver()
            proc.assert_running()

            wait_for(lambda: len(bound(core_v1, namespace)) == total, 120, f"all {total} pods bound")

            def events(reason: str) -> set[str]:
                return {
                    e["involvedObject"]["name"]
                    for e in list_events(core_v1, namespace)
                    if e.get("reason") == reason
                }

            # A Binding sent just before the kill may have landed while its answer was lost
            # (RemoteDisconnected) and the read-back failed: the scheduler keeps it as a Binding whose
            # outcome is unknown, and when the watch shows the pod bound to that node it writes the
            # Scheduled Event then (kube-scheduler never would). So every bound pod has one.
            # Retries come every 10-12.5 s, 12 tries: well within this wait for an outage of seconds.
            wait_for(
                lambda: (
                    bound(core_v1, namespace) <= events("Scheduled")
                    and set(misfits) <= events("FailedScheduling")
                ),
                150,
                "a Scheduled Event for every bound pod and a FailedScheduling Event for every misfit",
            )
            log = proc.log_path.read_text(errors="replace")
            lost = set(
                re.findall(r"error scheduling default/(\S+): POST \S+/binding: RemoteDisconnected", log)
            )
            landed = set(re.findall(r"binding default/(\S+) to \S+ landed although its answer was lost", log))
            print(f"bindings whose answer the kill lost: {len(lost)}; of them seen landed: {len(landed)}")
            # One Scheduled Event per pod: a retried write and a settled lost Binding never add one.
            per_pod = collections.Counter(
                e["involvedObject"]["name"]
                for e in list_events(core_v1, namespace)
                if e.get("reason") == "Scheduled"
            )
            assert max(per_pod.values()) == 1, [name for name, n in per_pod.items() if n > 1]
            retried_scheduled = _failed_writes(log, "Scheduled")
            retried_failed = _failed_writes(log, "FailedScheduling")
            # The kill did hit Event writes of both kinds (else this test proves nothing)...
            assert retried_scheduled and retried_failed, log[-4000:]
            # ... and each of them arrived in the end; none was given up.
            assert retried_scheduled <= events("Scheduled")
            wait_for(
                lambda: retried_failed <= events("FailedScheduling"),
                60,
                "every retried FailedScheduling Event",
            )
            assert "giving up" not in log
        finally:
            code = proc.stop()
        assert code == 0, proc.log_tail()
        assert_no_traceback(proc)
        client.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(FileNotFoundError):
        # A zombie (killed, not yet reaped by its parent) counts as gone.
        return " Z " not in Path(f"/proc/{pid}/stat").read_text().split(")", 1)[1][:4]
    return False


# --- SIGTERM with etcd frozen -----------------------------------------------------------------------


@contextlib.contextmanager
def frozen_etcd(control_plane: Any) -> Iterator[None]:
    """SIGSTOP etcd: the API server keeps accepting requests and answers none of them."""
    pid = control_plane.pids()["etcd"]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
        wait_for(control_plane.readyz, 60, "kube-apiserver ready again after etcd resumed")


@pytest.mark.parametrize("busy", [False, True], ids=["idle-leader", "bindings-in-flight"])
def test_sigterm_with_etcd_frozen_ends_within_the_grace_period_without_a_traceback(
    *,
    busy: bool,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    lease = f"robust-{uuid.uuid4().hex[:8]}"
    add_nodes(api_client, run_id, 10)
    cfg = copy.deepcopy(scheduler_config(leader_elect=True, lease_name=lease))  # default 15/10/2 s
    if busy:
        # A low client rate keeps bindings queued and on the wire when etcd freezes.
        cfg["clientConnection"] = {"qps": 10, "burst": 10}
    proc = SchedulerProcess(control_plane.kubeconfig, tmp_path, cfg).start()
    processes.append(proc)
    proc.wait_ready(60)
    wait_for(lambda: is_leading(proc, lease), 30, "the replica to lead")
    if busy:
        create_pods(core_v1, namespace, [make_pod(f"p{i}", run_id) for i in range(400)])
        wait_for(lambda: len(bound(core_v1, namespace)) >= 20, 60, "bindings under way")

    assert proc.proc is not None
    with frozen_etcd(control_plane):
        started = time.monotonic()
        proc.proc.send_signal(signal.SIGTERM)
        try:
            code = proc.proc.wait(GRACE_PERIOD)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"still running {GRACE_PERIOD}s after SIGTERM:\n{proc.log_tail()}")
        took = time.monotonic() - started
    print(f"SIGTERM with etcd frozen ({'busy' if busy else 'idle'}): exited {code} after {took:.1f}s")
    assert code == 0, proc.log_tail()
    assert_no_traceback(proc)
    if busy:  # the drain really did meet bindings that could not finish
        assert "bindings still in flight at shutdown" in proc.log_path.read_text(errors="replace")


# --- a partitioned leader ---------------------------------------------------------------------------


class FreezableProxy:
    """A loopback TCP forwarder to the API server whose network can freeze: while frozen, bytes in
    both directions are read and dropped (lost packets, not a closed connection) and new connections
    hang. Nothing sent during the freeze ever arrives."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.frozen = threading.Event()
        self.closed = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            client.close()
            return
        for src, dst in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if not self.frozen.is_set():
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.closed.set()
        self.listener.close()


def test_a_partitioned_leader_exits_1_within_the_renew_deadline_and_binds_nothing_after(
    *,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    proxy = FreezableProxy((host, int(port)))
    try:
        kubeconfig = write_kubeconfig(
            tmp_path / "proxied.kubeconfig",
            f"https://127.0.0.1:{proxy.port}",
            control_plane.ca_file.read_bytes(),
            "admin",
            control_plane.token,
        )
        lease = f"robust-{uuid.uuid4().hex[:8]}"
        add_nodes(api_client, run_id, 10)
        proc = SchedulerProcess(kubeconfig, tmp_path, elected(lease)).start()
        processes.append(proc)
        proc.wait_ready(60)
        wait_for(lambda: is_leading(proc, lease), 30, "the replica to lead")
        create_pods(core_v1, namespace, [make_pod(f"p{i}", run_id) for i in range(400)])
        wait_for(lambda: len(bound(core_v1, namespace)) >= 20, 60, "bindings under way")

        assert proc.proc is not None
        proxy.frozen.set()
        frozen_at = time.monotonic()
        renew_deadline = float(FAST_ELECTION["renewDeadline"].removesuffix("s"))
        retry_period = float(FAST_ELECTION["retryPeriod"].removesuffix("s"))
        try:
            code = proc.proc.wait(renew_deadline + retry_period)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"still running {renew_deadline + retry_period}s into the partition:\n{proc.log_tail()}"
            )
        took = time.monotonic() - frozen_at
        print(f"partitioned leader exited {code} {took:.1f}s after the freeze")
        assert code == 1, proc.log_tail()
    finally:
        proxy.close()

    # The process's own record: every Binding it sent (-v 4) came before it declared the lease lost.
    lines = proc.log_path.read_text(errors="replace").splitlines()
    lost = [i for i, line in enumerate(lines) if "leader election lost" in line]
    assert lost, proc.log_tail()
    sent = [i for i, line in enumerate(lines) if "sending binding of" in line]
    assert sent, "no binding was sent before the freeze"
    assert max(sent) < lost[0], "\n".join(lines[lost[0] - 5 : lost[0] + 20])
    assert_no_traceback(proc)


# --- the scheduler killed mid-burst -----------------------------------------------------------------


def test_every_pod_bound_before_a_sigkill_has_one_scheduled_event_after_the_restart(
    *,
    control_plane: Any,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    """py-scheduler is SIGKILLed while it binds a burst of pods: Bindings that landed whose Scheduled
    Event was on the wire or waiting for a retry would never get one (kube-scheduler has the same
    gap). The restarted scheduler writes the Event of every pod bound shortly before it started that
    lacks one, under the name the first write used, so none is written twice."""
    add_nodes(api_client, run_id, 10)
    # Events slower than Bindings: a low event rate is not configurable, so the client rate is low for
    # all, keeping bindings and their Events in flight at the kill.
    cfg = scheduler_config(leader_elect=False, extra={"clientConnection": {"qps": 60, "burst": 60}})
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    first = SchedulerProcess(control_plane.kubeconfig, first_dir, cfg).start()
    processes.append(first)
    first.wait_ready(60)
    total = 300
    create_pods(core_v1, namespace, [make_pod(f"p{i}", run_id) for i in range(total)])
    wait_for(lambda: len(bound(core_v1, namespace)) >= 60, 60, "bindings under way")
    first.kill()
    bound_at_kill = bound(core_v1, namespace)

    second = SchedulerProcess(control_plane.kubeconfig, second_dir, cfg).start()
    processes.append(second)
    second.wait_ready(60)
    wait_for(lambda: len(bound(core_v1, namespace)) == total, 120, f"all {total} pods bound")

    def scheduled() -> collections.Counter[str]:
        return collections.Counter(
            e["involvedObject"]["name"]
            for e in list_events(core_v1, namespace)
            if e.get("reason") == "Scheduled"
        )

    wait_for(
        lambda: bound(core_v1, namespace) <= set(scheduled()),
        60,
        "a Scheduled Event for every bound pod",
    )
    counts = scheduled()
    assert max(counts.values()) == 1, [name for name, n in counts.items() if n > 1]
    print(f"bound at the kill: {len(bound_at_kill)} of {total}")
    assert second.stop() == 0, second.log_tail()
    assert_no_traceback(second)
