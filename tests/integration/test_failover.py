"""The whole scheduler process, run the way deploy/ runs it: as the py-scheduler ServiceAccount, with
leader election on kube-system/py-scheduler, scraped over HTTP.

* one replica under the ServiceAccount's token schedules pods, and its /metrics counters match;
* /readyz answers 503 until the informer caches have synced, then 200;
* two replicas, 500 pods, SIGKILL the leader mid-way: the standby takes over within the lease duration
  and every pod ends up bound exactly once, with no node overcommitted;
* SIGTERM the leader: it releases the Lease and the standby takes over well before the lease expires.
"""

from __future__ import annotations

import contextlib
import copy
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import SchedulerProcess, scheduler_config, wait_for
from scheduler.app.leaderelection import KubeLeaseClient
from tests.integration.test_deploy import apply_deploy, service_account_kubeconfig
from tests.integration.workload import (
    RUN_LABEL,
    create_pods,
    list_events,
    list_nodes,
    list_pods,
    make_pod,
    new_run_id,
    overcommitted_nodes,
    scrape,
)

LEASE = "py-scheduler"
FAST_ELECTION = {"leaseDuration": "6s", "renewDeadline": "4s", "retryPeriod": "1s"}


def config(**election: str) -> dict[str, Any]:
    cfg = copy.deepcopy(scheduler_config(leader_elect=True, lease_name=LEASE))
    cfg["leaderElection"].update(election)
    return cfg


def metric(proc: SchedulerProcess, metric_name: str, /, **labels: str) -> float | None:
    return scrape(proc).get((metric_name, frozenset(labels.items())))


def is_leading(proc: SchedulerProcess) -> bool:
    proc.assert_running()
    return metric(proc, "leader_election_master_status", name=LEASE) == 1


def bound_count(core_v1: Any, namespace: str) -> int:
    return sum(1 for p in list_pods(core_v1, namespace) if p["spec"].get("nodeName"))


@pytest.fixture
def lease_client(api_client: Any) -> Iterator[KubeLeaseClient]:
    """The admin's view of kube-system/py-scheduler, deleted before and after so each test starts free."""

    def delete() -> None:
        status, _ = _raw_delete(
            api_client, f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{LEASE}"
        )
        assert status in (200, 404)

    delete()
    yield KubeLeaseClient(api_client, "kube-system", LEASE)
    delete()


def _raw_delete(api_client: Any, path: str) -> tuple[int, bytes]:
    request = api_client.param_serialize(
        method="DELETE",
        resource_path=path,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(*request, _request_timeout=30)
    return response.status, response.read()


@pytest.fixture
def sa_kubeconfig(control_plane: Any, api_client: Any, tmp_path: Path) -> Path:
    apply_deploy(control_plane)
    return service_account_kubeconfig(control_plane, api_client, tmp_path / "py-scheduler-sa.kubeconfig")


@pytest.fixture
def run_id(core_v1: Any) -> Iterator[str]:
    rid = new_run_id()
    yield rid
    core_v1.delete_collection_node(label_selector=f"{RUN_LABEL}={rid}", _preload_content=False)


def add_nodes(api_client: Any, run_id: str, count: int) -> None:
    create_nodes(api_client, [make_node(f"{run_id}-n{i}", labels={RUN_LABEL: run_id}) for i in range(count)])


def test_runs_as_the_service_account_and_its_metrics_match(
    *,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    sa_kubeconfig: Path,
    lease_client: KubeLeaseClient,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    add_nodes(api_client, run_id, 4)
    proc = SchedulerProcess(sa_kubeconfig, tmp_path, config(**FAST_ELECTION)).start()
    processes.append(proc)
    proc.wait_ready()
    wait_for(lambda: is_leading(proc), 30, "the only replica to lead")

    pods = 40
    create_pods(core_v1, namespace, [make_pod(f"p{i}", run_id) for i in range(pods)])
    wait_for(lambda: bound_count(core_v1, namespace) == pods, 60, f"{pods} pods bound")

    def scheduled_events() -> int:
        events = list_events(core_v1, namespace)
        return sum(1 for e in events if e.get("reason") == "Scheduled")

    # Events are written (as the ServiceAccount) after the bind, asynchronously.
    wait_for(lambda: scheduled_events() == pods, 30, "a Scheduled event per pod")

    profile = {"profile": "py-scheduler"}
    assert metric(proc, "scheduler_schedule_attempts_total", result="scheduled", **profile) == pods
    assert (
        metric(proc, "scheduler_scheduling_attempt_duration_seconds_count", result="scheduled", **profile)
        == pods
    )
    assert metric(proc, "scheduler_pod_scheduling_attempts_count") == pods
    sli = scrape(proc)
    assert (
        sum(v for (n, _), v in sli.items() if n == "scheduler_pod_scheduling_sli_duration_seconds_count")
        == pods
    )
    assert metric(proc, "scheduler_pending_pods", queue="active") == 0
    assert metric(proc, "leader_election_master_status", name=LEASE) == 1

    lease = lease_client.get(10)
    assert lease is not None
    assert lease["spec"]["holderIdentity"].startswith(socket.gethostname() + "_")

    assert proc.stop() == 0, proc.log_tail()
    released = lease_client.get(10)
    assert released is not None
    assert released["spec"]["holderIdentity"] == ""  # released on SIGTERM


class GatedProxy:
    """A TCP forwarder to the API server that holds every connection until opened: informers cannot
    sync while it is closed, so /readyz must say 503, and must turn 200 once it opens."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.open = threading.Event()
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
        self.open.wait()
        if self.closed.is_set():
            client.close()
            return
        upstream = socket.create_connection(self.target)
        for src, dst in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.closed.set()
        self.open.set()
        self.listener.close()


def test_readyz_is_503_until_caches_sync_then_200(
    control_plane: Any, processes: list[SchedulerProcess], tmp_path: Path
) -> None:
    from devcluster.credentials import write_kubeconfig

    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    proxy = GatedProxy((host, int(port)))
    try:
        # The serving certificate covers 127.0.0.1 whatever the port, so TLS through the proxy verifies.
        kubeconfig = write_kubeconfig(
            tmp_path / "proxied.kubeconfig",
            f"https://127.0.0.1:{proxy.port}",
            control_plane.ca_file.read_bytes(),
            "admin",
            control_plane.token,
        )
        proc = SchedulerProcess(kubeconfig, tmp_path, scheduler_config(leader_elect=False)).start()
        processes.append(proc)

        def answered() -> tuple[int, str] | None:
            proc.assert_running()
            status, body = proc.get("/readyz")
            return (status, body) if status else None

        status, body = wait_for(answered, 30, "the health server to answer")
        assert status == 503, body
        assert "readyz check failed" in body
        assert proc.get("/livez")[0] == 200  # not ready is not dead

        proxy.open.set()
        proc.wait_ready(60)
        assert proc.get("/readyz") == (200, "ok")
        assert proc.stop() == 0, proc.log_tail()
    finally:
        proxy.close()


def test_sigkill_leader_standby_takes_over_and_every_pod_is_bound_once(
    *,
    core_v1: Any,
    api_client: Any,
    namespace: str,
    run_id: str,
    sa_kubeconfig: Path,
    lease_client: KubeLeaseClient,
    processes: list[SchedulerProcess],
    tmp_path: Path,
) -> None:
    add_nodes(api_client, run_id, 20)  # 20 x 4 CPU at 100m a pod: room for 800
    replicas = [
        SchedulerProcess(sa_kubeconfig, tmp_path, config(**FAST_ELECTION), name=f"replica-{i}").start()
        for i in range(2)
    ]
    processes.extend(replicas)
    for proc in replicas:
        proc.wait_ready(60)  # the standby is ready too: its caches are warm
    wait_for(lambda: sum(is_leading(p) for p in replicas) == 1, 30, "exactly one leader")
    leader = next(p for p in replicas if is_leading(p))
    standby = next(p for p in replicas if p is not leader)
    assert metric(standby, "leader_election_master_status", name=LEASE) == 0

    total = 500
    first = [make_pod(f"a{i}", run_id) for i in range(total // 2)]
    create_pods(core_v1, namespace, first)
    wait_for(lambda: bound_count(core_v1, namespace) >= 100, 60, "the leader to bind 100 pods")

    leader.kill()  # SIGKILL: no release, the standby must wait the lease out
    killed_at = time.monotonic()
    # The second half arrives while nobody leads; only the standby can bind it.
    create_pods(core_v1, namespace, [make_pod(f"b{i}", run_id) for i in range(total - len(first))])

    lease_seconds = float(FAST_ELECTION["leaseDuration"].removesuffix("s"))
    retry_seconds = float(FAST_ELECTION["retryPeriod"].removesuffix("s"))
    # lease duration + a jittered retry (up to 2.2x) + a few seconds for requests and scrapes.
    wait_for(lambda: is_leading(standby), lease_seconds + 2.2 * retry_seconds + 5, "the standby to take over")
    takeover = time.monotonic() - killed_at
    assert takeover >= lease_seconds - retry_seconds  # it did wait for the old lease to expire

    wait_for(lambda: bound_count(core_v1, namespace) == total, 120, f"all {total} pods bound")
    pods = list_pods(core_v1, namespace)
    assert len(pods) == total
    assert all(p["spec"].get("nodeName") for p in pods)
    assert not overcommitted_nodes(list_nodes(core_v1, run_id), pods)

    # Bound exactly once: the API server refuses a second Binding, and no pod reports two Scheduled
    # events (one from each replica would mean both thought they bound it).
    scheduled = Counter(
        e["involvedObject"]["name"] for e in list_events(core_v1, namespace) if e.get("reason") == "Scheduled"
    )
    assert not [name for name, n in scheduled.items() if n > 1]
    second_half = {f"b{i}" for i in range(total - len(first))}
    wait_for(
        lambda: second_half <= set(_scheduled_names(core_v1, namespace)), 30, "events for the second half"
    )

    standby_scheduled = metric(
        standby, "scheduler_schedule_attempts_total", result="scheduled", profile="py-scheduler"
    )
    assert standby_scheduled is not None
    assert standby_scheduled >= len(second_half)
    assert standby.stop() == 0, standby.log_tail()


def _scheduled_names(core_v1: Any, namespace: str) -> list[str]:
    return [
        e["involvedObject"]["name"] for e in list_events(core_v1, namespace) if e.get("reason") == "Scheduled"
    ]


def test_sigterm_leader_releases_and_standby_takes_over_before_the_lease_expires(
    sa_kubeconfig: Path, lease_client: KubeLeaseClient, processes: list[SchedulerProcess], tmp_path: Path
) -> None:
    election = {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "1s"}
    replicas = [
        SchedulerProcess(sa_kubeconfig, tmp_path, config(**election), name=f"replica-{i}").start()
        for i in range(2)
    ]
    processes.extend(replicas)
    for proc in replicas:
        proc.wait_ready(60)
    wait_for(lambda: sum(is_leading(p) for p in replicas) == 1, 30, "exactly one leader")
    leader = next(p for p in replicas if is_leading(p))
    standby = next(p for p in replicas if p is not leader)

    assert leader.stop() == 0, leader.log_tail()  # SIGTERM: clean exit, lease released
    # Without the release the standby would wait the full 15 s lease out.
    wait_for(lambda: is_leading(standby), 15 - 3, "the standby to take over the released lease")
    lease = lease_client.get(10)
    assert lease is not None
    assert lease["spec"]["leaseTransitions"] >= 1
    assert standby.stop() == 0, standby.log_tail()
