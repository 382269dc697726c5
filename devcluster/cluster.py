"""The real local control plane: etcd + kube-apiserver (+ kube-controller-manager and kube-scheduler on
demand) on loopback ports.

Used by the integration tests (one per session), ``make cluster``, the demo and the benchmarks.
Each component runs in its own process group and logs to ``<run_dir>/logs/<component>.log``; every
failure message names the log and quotes its last lines.
"""

from __future__ import annotations

import os
import shutil
import ssl
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes import client as k8s

from devcluster.binaries import binaries_dir as default_binaries_dir
from devcluster.binaries import k8s_version, minor_of, require_binaries
from devcluster.credentials import (
    TokenUser,
    generate_service_account_key,
    new_token,
    write_kubeconfig,
    write_token_file,
)
from devcluster.kube_scheduler import kube_scheduler_argv, kube_scheduler_config, write_kube_scheduler_config
from devcluster.probe import WaitTimeoutError, free_port, http_get, unverified_tls, wait_until
from devcluster.process import ManagedProcess

_RUN_MARKER = ".devcluster-run"
_PORT_RETRIES = 3
ETCD = "etcd"
APISERVER = "kube-apiserver"
CONTROLLER_MANAGER = "kube-controller-manager"
# The controllers tests and demos rely on: workloads (Deployments, ReplicaSets, StatefulSets, Jobs) and
# their garbage collection, the PV binder, PDB status and DRA claims from templates. Left out on purpose:
# node lifecycle (there are no kubelets; it would taint every node NotReady) and cloud controllers.
DEFAULT_CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "job-controller",
    "garbage-collector-controller",
    "persistentvolume-binder-controller",
    "disruption-controller",
    "resourceclaim-controller",
)
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
ADMIN_USER = "devcluster-admin"
UNPRIVILEGED_USER = "devcluster-nobody"
KEEP_LOGS_ENV = "DEVCLUSTER_KEEP_LOGS"


class ControlPlaneError(RuntimeError):
    """A component failed to start or become ready; the message names its log file and quotes it."""

    def __init__(self, message: str, log_path: Path) -> None:
        super().__init__(message)
        self.log_path = log_path


def _emergency_stop(procs: dict[str, ManagedProcess], run_dir: Path) -> None:
    """Finalizer for a ControlPlane garbage-collected (or left at exit) without stop()."""
    for proc in reversed(list(procs.values())):
        proc.stop(grace=2.0)
    shutil.rmtree(run_dir / "etcd-data", ignore_errors=True)


def _check_reusable(run_dir: Path) -> None:
    """Only wipe a run dir an earlier ControlPlane created, and only when its owner is gone."""
    marker = run_dir / _RUN_MARKER
    if not marker.exists():
        raise RuntimeError(f"run dir {run_dir} is not empty and was not created by devcluster")
    try:
        owner = int(marker.read_text().strip() or 0)
    except ValueError:
        owner = 0
    if owner and owner != os.getpid():
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            pass
        raise RuntimeError(f"run dir {run_dir} is in use by a running control plane (pid {owner})")


# The beta (off by default) scheduling.k8s.io/v1beta1 API and the gate of upstream's gang scheduling
# (v1.37: GenericWorkload alone; GangScheduling is gone). The same gate goes to a kube-scheduler or
# py-scheduler that should use it (``--feature-gates``).
WORKLOAD_RUNTIME_CONFIG = "--runtime-config=scheduling.k8s.io/v1beta1=true"
WORKLOAD_FEATURE_GATES = "--feature-gates=GenericWorkload=true"
# Each older minor's own gang API (compatibility tests): v1.35 Workload v1alpha1 (pods' spec.workloadRef),
# v1.36 Workload/PodGroup v1alpha2 (pods' spec.schedulingGroup), both behind GangScheduling too.
OLDER_WORKLOAD_ARGS = {
    35: (
        "--runtime-config=scheduling.k8s.io/v1alpha1=true",
        "--feature-gates=GenericWorkload=true,GangScheduling=true",
    ),
    36: (
        "--runtime-config=scheduling.k8s.io/v1alpha2=true",
        "--feature-gates=GenericWorkload=true,GangScheduling=true",
    ),
}


class ControlPlane:
    """etcd and kube-apiserver for tests and demos. Use as a context manager or call start()/stop()."""

    def __init__(
        self,
        *,
        run_dir: str | Path | None = None,
        binaries_dir: str | Path | None = None,
        max_requests_inflight: int = 2000,
        max_mutating_requests_inflight: int = 1000,
        priority_and_fairness: bool = True,
        etcd_quota_bytes: int = 8 * 1024**3,
        etcd_fsync: bool = False,
        apiserver_args: Sequence[str] = (),
        workload_api: bool = False,
        release: str | None = None,
        start_timeout: float = 120.0,
        keep_logs: bool | None = None,
    ) -> None:
        self.binaries_dir = Path(binaries_dir) if binaries_dir is not None else default_binaries_dir()
        # ``release``: the kube-apiserver of an older release of the support window (COMPAT_VERSIONS,
        # built by ``devcluster/build.sh <release>``) on the pinned release's etcd; the pinned
        # kube-scheduler and kube-controller-manager are not started against it (version skew).
        pinned = k8s_version()
        self.version = release or pinned
        self.older_release = self.version != pinned
        self.apiserver_dir = default_binaries_dir(self.version) if self.older_release else self.binaries_dir
        self.max_requests_inflight = max_requests_inflight
        self.max_mutating_requests_inflight = max_mutating_requests_inflight
        self.priority_and_fairness = priority_and_fairness
        self.etcd_quota_bytes = etcd_quota_bytes
        self.etcd_fsync = etcd_fsync
        self.apiserver_args = list(apiserver_args)
        # Upstream's gang API (scheduling.k8s.io/v1beta1 Workload/PodGroup, spec.schedulingGroup).
        self.workload_api = workload_api
        if workload_api and self.older_release:
            self.apiserver_args += list(OLDER_WORKLOAD_ARGS[minor_of(self.version)])
        elif workload_api:
            self.apiserver_args += [WORKLOAD_RUNTIME_CONFIG, WORKLOAD_FEATURE_GATES]
        self.start_timeout = start_timeout
        env_keep = os.environ.get(KEEP_LOGS_ENV, "").lower() not in ("", "0", "false")
        self._keep_logs = keep_logs if keep_logs is not None else env_keep
        self._requested_run_dir = Path(run_dir) if run_dir is not None else None
        self._run_dir: Path | None = None
        self._procs: dict[str, ManagedProcess] = {}
        self._etcd_port = 0
        self._apiserver_port = 0
        self._scheduler_count = 0
        self._tls: ssl.SSLContext | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._started = False
        self._stopped = False
        self.token = new_token()
        self.unprivileged_token = new_token()
        # Seconds from launch to ready, per component; the last (re)start wins.
        self.startup_seconds: dict[str, float] = {}

    # ----- paths and endpoints (valid once start() has begun) -----

    @property
    def run_dir(self) -> Path:
        if self._run_dir is None:
            raise RuntimeError("the control plane has not been started")
        return self._run_dir

    @property
    def log_dir(self) -> Path:
        return self.run_dir / "logs"

    @property
    def cert_dir(self) -> Path:
        return self.run_dir / "apiserver-certs"

    @property
    def ca_file(self) -> Path:
        """The apiserver's self-signed serving cert (leaf followed by its CA), generated at first start."""
        return self.cert_dir / "apiserver.crt"

    @property
    def kubeconfig(self) -> Path:
        return self.run_dir / "kubeconfig"

    @property
    def unprivileged_kubeconfig(self) -> Path:
        """A kubeconfig for a user that exists but has no RBAC bindings."""
        return self.run_dir / "unprivileged.kubeconfig"

    @property
    def server(self) -> str:
        if not self._apiserver_port:
            raise RuntimeError("kube-apiserver has not been started")
        return f"https://127.0.0.1:{self._apiserver_port}"

    @property
    def etcd_endpoint(self) -> str:
        if not self._etcd_port:
            raise RuntimeError("etcd has not been started")
        return f"http://127.0.0.1:{self._etcd_port}"

    def log_files(self) -> list[Path]:
        return [proc.log_path for proc in self._procs.values()]

    def processes(self) -> dict[str, ManagedProcess]:
        """Component name -> handle, for every component currently running."""
        return {name: proc for name, proc in self._procs.items() if proc.running()}

    def pids(self) -> dict[str, int]:
        """Component name -> pid of every process this control plane has running."""
        return {name: proc.pid for name, proc in self._procs.items() if proc.running()}

    # ----- lifecycle -----

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop(keep_logs=True if exc is not None else None)

    def start(self) -> ControlPlane:
        """Start etcd and kube-apiserver and wait for /readyz. No-op if already started."""
        if self._stopped:
            raise RuntimeError("a stopped ControlPlane cannot be started again; create a new one")
        if self._started:
            return self
        if self.older_release:
            require_binaries(self.binaries_dir, ("etcd",))
            require_binaries(self.apiserver_dir, ("kube-apiserver",))
        else:
            require_binaries(self.binaries_dir)
        self._started = True
        try:
            self._prepare_run_dir()
            self._start_etcd()
            self.start_apiserver()
        except BaseException:
            self.stop(keep_logs=True)
            raise
        return self

    def stop(self, keep_logs: bool | None = None) -> None:
        """Stop every component (schedulers, apiserver, etcd) and remove the run dir. Idempotent.

        With ``keep_logs`` (or DEVCLUSTER_KEEP_LOGS=1) the logs directory survives, the rest goes.
        """
        if self._stopped or not self._started:
            self._stopped = True
            return
        self._stopped = True
        order = [n for n in self._procs if n not in (APISERVER, ETCD)] + [APISERVER, ETCD]
        for name in order:
            proc = self._procs.get(name)
            if proc is not None:
                proc.stop(grace=15.0)
        if self._finalizer is not None:
            self._finalizer.detach()
        keep = self._keep_logs if keep_logs is None else keep_logs
        run_dir = self._run_dir
        if run_dir is None:  # failed before the run dir was ours
            return
        if keep:
            for entry in run_dir.iterdir():
                if entry.name in ("logs", _RUN_MARKER):  # the marker lets a later run reuse the dir
                    continue
                if entry.is_dir():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        else:
            shutil.rmtree(run_dir, ignore_errors=True)

    # ----- apiserver control -----

    def start_apiserver(self, timeout: float | None = None) -> None:
        """Start kube-apiserver (on the same port as before, if it ran already) and wait for /readyz."""
        self._require_running_etcd()
        current = self._procs.get(APISERVER)
        if current is not None and current.running():
            return
        fixed_port = self._apiserver_port != 0

        def build() -> list[str]:
            if not fixed_port:
                self._apiserver_port = free_port()
            return self._apiserver_argv()

        self._launch(
            APISERVER,
            build,
            ready=self._apiserver_ready,
            what=lambda: f"kube-apiserver /readyz on {self.server}",
            timeout=timeout or self.start_timeout,
            retry_ports=not fixed_port,
        )
        if not self.kubeconfig.exists():
            self._write_kubeconfigs()

    def stop_apiserver(self) -> None:
        proc = self._procs.get(APISERVER)
        if proc is not None:
            proc.stop(grace=15.0)

    def restart_apiserver(self, timeout: float | None = None) -> None:
        """Stop and start kube-apiserver on the same port and etcd (same data, same serving cert)."""
        self.stop_apiserver()
        self.start_apiserver(timeout)

    def readyz(self) -> bool:
        return self._apiserver_ready()

    # ----- clients -----

    def api_client(self, pool_maxsize: int = 64, token: str | None = None) -> k8s.ApiClient:
        """A synchronous ApiClient as the admin (or as the user of ``token``), like the kubeconfig."""
        configuration = k8s.Configuration(
            host=self.server,
            api_key={"BearerToken": token or self.token},
            api_key_prefix={"BearerToken": "Bearer"},
            ssl_ca_cert=str(self.ca_file),
            # Thread pools (binding, node creation) need a connection per worker, not urllib3's default 10.
            connection_pool_maxsize=pool_maxsize,
        )
        return k8s.ApiClient(configuration)

    # ----- kube-scheduler -----

    def write_kube_scheduler_config(
        self,
        qps: float | None = None,
        burst: int | None = None,
        profiles: Sequence[Mapping[str, Any]] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Path:
        """A KubeSchedulerConfiguration file in the run dir whose clientConnection uses our kubeconfig."""
        config = kube_scheduler_config(self.kubeconfig, qps=qps, burst=burst, profiles=profiles, extra=extra)
        path = self.run_dir / f"kube-scheduler-config-{self._scheduler_count + 1}.json"
        return write_kube_scheduler_config(path, config)

    def start_kube_scheduler(
        self,
        extra_args: Sequence[str] = (),
        config_path: str | Path | None = None,
        timeout: float | None = None,
        binary: str | Path | None = None,
        delegated_auth: bool = False,
        auth_kubeconfig: str | Path | None = None,
    ) -> ManagedProcess:
        """Run the real kube-scheduler against this apiserver; stopped by stop() or by handle.stop().

        ``binary``: another kube-scheduler build (the gang bench's scheduler-plugins scheduler).
        ``delegated_auth``: authenticate and authorise its port as in a cluster (devcluster.kube_scheduler).
        The handle's ``port`` attribute is its secure port."""
        self._require_running_etcd()
        if not self.kubeconfig.exists():
            raise RuntimeError("kube-apiserver has not been started: no kubeconfig yet")
        self._scheduler_count += 1
        name = f"kube-scheduler-{self._scheduler_count}"
        cert_dir = self.run_dir / f"{name}-certs"
        port = 0

        def build() -> list[str]:
            nonlocal port
            port = free_port()
            return kube_scheduler_argv(
                Path(binary) if binary is not None else self.binaries_dir / "kube-scheduler",
                kubeconfig=self.kubeconfig,
                secure_port=port,
                cert_dir=cert_dir,
                config_path=Path(config_path) if config_path is not None else None,
                extra_args=extra_args,
                delegated_auth=delegated_auth,
                auth_kubeconfig=Path(auth_kubeconfig) if auth_kubeconfig is not None else None,
            )

        tls = unverified_tls()
        handle = self._launch(
            name,
            build,
            # /readyz, not /healthz: it also waits for the informers and event handlers to sync
            # (sched-handler-sync), so a test's pods created next are seen by a scheduler that is running.
            ready=lambda: http_get(f"https://127.0.0.1:{port}/readyz", context=tls)[0] == 200,
            what=lambda: f"{name} /readyz on https://127.0.0.1:{port}",
            timeout=timeout or self.start_timeout,
        )
        handle.port = port
        return handle

    # ----- kube-controller-manager -----

    def start_controller_manager(
        self,
        controllers: Sequence[str] = DEFAULT_CONTROLLERS,
        extra_args: Sequence[str] = (),
        timeout: float | None = None,
    ) -> ManagedProcess:
        """Run the real kube-controller-manager with ``controllers`` (idempotent while it runs).

        Started on demand: tests that create Deployments, StatefulSets, PVCs or PDBs need it, the rest
        do not pay for it. Against an older release's API server (``release``) the pinned
        kube-controller-manager runs: a newer controller manager is outside Kubernetes' skew policy,
        and serves only as the tests' workload controllers (Deployments, PV binder, PDB status).
        """
        self._require_running_etcd()
        current = self._procs.get(CONTROLLER_MANAGER)
        if current is not None and current.running():
            return current
        if not self.kubeconfig.exists():
            raise RuntimeError("kube-apiserver has not been started: no kubeconfig yet")
        cert_dir = self.run_dir / "kube-controller-manager-certs"
        port = 0

        def build() -> list[str]:
            nonlocal port
            port = free_port()
            return [
                str(self.binaries_dir / CONTROLLER_MANAGER),
                f"--kubeconfig={self.kubeconfig}",
                f"--controllers={','.join(controllers)}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={cert_dir}",
                # No extension-apiserver-authentication ConfigMap to look up; health needs no auth.
                "--authentication-skip-lookup=true",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
                # Tests want controllers to react at once, not after client-side throttling.
                "--kube-api-qps=500",
                "--kube-api-burst=1000",
                "--concurrent-deployment-syncs=10",
                "--concurrent-replicaset-syncs=10",
                "--v=1",
                # The API server's gates, so controllers decode the same API (podgroup-protection, which
                # clears the PodGroup finalizer, runs only if named in ``controllers``).
                *([WORKLOAD_FEATURE_GATES] if self.workload_api else []),
                *extra_args,
            ]

        tls = unverified_tls()
        return self._launch(
            CONTROLLER_MANAGER,
            build,
            ready=lambda: http_get(f"https://127.0.0.1:{port}/healthz", context=tls)[0] == 200,
            what=lambda: f"kube-controller-manager /healthz on https://127.0.0.1:{port}",
            timeout=timeout or self.start_timeout,
        )

    def stop_controller_manager(self) -> None:
        proc = self._procs.get(CONTROLLER_MANAGER)
        if proc is not None:
            proc.stop(grace=10.0)

    # ----- internals -----

    def _require_running_etcd(self) -> None:
        etcd = self._procs.get(ETCD)
        if self._stopped or etcd is None or not etcd.running():
            raise RuntimeError("etcd is not running: start() the control plane first")

    def _prepare_run_dir(self) -> None:
        if self._requested_run_dir is None:
            run_dir = Path(tempfile.mkdtemp(prefix="py-scheduler-devcluster-"))
        else:
            run_dir = self._requested_run_dir.resolve()
            if run_dir.exists() and any(run_dir.iterdir()):
                _check_reusable(run_dir)
                shutil.rmtree(run_dir)
            run_dir.mkdir(parents=True, exist_ok=True)
        self._run_dir = run_dir
        (run_dir / _RUN_MARKER).write_text(f"{os.getpid()}\n")
        (run_dir / "logs").mkdir()
        self.cert_dir.mkdir()
        generate_service_account_key(run_dir / "service-account.key")
        write_token_file(
            run_dir / "tokens.csv",
            [
                TokenUser(self.token, ADMIN_USER, "devcluster-admin-uid", ("system:masters",)),
                TokenUser(self.unprivileged_token, UNPRIVILEGED_USER, "devcluster-nobody-uid"),
            ],
        )
        self._finalizer = weakref.finalize(self, _emergency_stop, self._procs, run_dir)

    def _launch(
        self,
        name: str,
        build: Callable[[], list[str]],
        *,
        ready: Callable[[], bool],
        what: Callable[[], str],
        timeout: float,
        retry_ports: bool = True,
    ) -> ManagedProcess:
        """Start a component and wait until ``ready``; retry with fresh ports if one was taken meanwhile."""
        log_path = self.log_dir / f"{name}.log"
        for attempt in range(1, _PORT_RETRIES + 1):
            proc = ManagedProcess(name, build(), log_path)
            waiting_for = what()
            self._procs[name] = proc
            started = time.monotonic()
            proc.start()

            def died(proc: ManagedProcess = proc, waiting_for: str = waiting_for) -> str | None:
                return (
                    None if proc.running() else proc.describe_failure(f"{name} exited before {waiting_for}")
                )

            try:
                wait_until(ready, timeout, waiting_for, abort=died)
            except WaitTimeoutError as err:
                message = proc.describe_failure(str(err))
                proc.stop(grace=5.0)
                raise ControlPlaneError(self._with_log_index(message), log_path) from None
            except RuntimeError as err:
                proc.stop(grace=5.0)
                port_taken = "address already in use" in proc.tail(30)
                if retry_ports and port_taken and attempt < _PORT_RETRIES:
                    continue
                raise ControlPlaneError(self._with_log_index(str(err)), log_path) from None
            self.startup_seconds[name] = time.monotonic() - started
            return proc
        raise AssertionError("unreachable")  # pragma: no cover

    def _with_log_index(self, message: str) -> str:
        logs = ", ".join(str(p) for p in self.log_files())
        return f"{message}\n--- all component logs: {logs}"

    def _start_etcd(self) -> None:
        data_dir = self.run_dir / "etcd-data"

        def build() -> list[str]:
            shutil.rmtree(data_dir, ignore_errors=True)  # a failed attempt leaves a member behind
            self._etcd_port = free_port()
            peer = f"http://127.0.0.1:{free_port()}"
            client = f"http://127.0.0.1:{self._etcd_port}"
            return [
                str(self.binaries_dir / "etcd"),
                "--name=devcluster",
                f"--data-dir={data_dir}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=devcluster={peer}",
                "--initial-cluster-state=new",
                f"--quota-backend-bytes={self.etcd_quota_bytes}",
                # Throwaway data: fsync only costs time.
                f"--unsafe-no-fsync={'false' if self.etcd_fsync else 'true'}",
                "--log-level=warn",
            ]

        def healthy() -> bool:
            status, body = http_get(f"{self.etcd_endpoint}/health")
            return status == 200 and b'"true"' in body

        self._launch(
            ETCD,
            build,
            ready=healthy,
            what=lambda: f"etcd /health on {self.etcd_endpoint}",
            timeout=30.0,
        )

    def _apiserver_argv(self) -> list[str]:
        run = self.run_dir
        key = run / "service-account.key"
        pf = "true" if self.priority_and_fairness else "false"
        return [
            str(self.apiserver_dir / "kube-apiserver"),
            f"--etcd-servers={self.etcd_endpoint}",
            "--bind-address=127.0.0.1",
            # The default would be the host's primary interface, which may not exist in a sandbox.
            "--advertise-address=127.0.0.1",
            # Endpoints may not hold a loopback IP, and nothing here needs the kubernetes Service.
            "--endpoint-reconciler-type=none",
            f"--secure-port={self._apiserver_port}",
            f"--cert-dir={self.cert_dir}",
            f"--service-account-key-file={key}",
            f"--service-account-signing-key-file={key}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--token-auth-file={run / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            # No controller-manager: no service-account tokens to mount, no node lifecycle to untaint.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            f"--max-requests-inflight={self.max_requests_inflight}",
            f"--max-mutating-requests-inflight={self.max_mutating_requests_inflight}",
            f"--enable-priority-and-fairness={pf}",
            # Bounds the HTTP server's shutdown to 2s; otherwise open watches (a running kube-scheduler)
            # hold a SIGTERMed apiserver for its 60s shutdown timeout.
            "--shutdown-send-retry-after=true",
            "--profiling=false",
            "--v=1",
            *self.apiserver_args,
        ]

    def _apiserver_ready(self) -> bool:
        if self._tls is None:
            if not self.ca_file.exists():
                return False
            try:
                self._tls = ssl.create_default_context(cafile=str(self.ca_file))
            except ssl.SSLError:  # caught mid-write
                return False
        status, _ = http_get(
            f"{self.server}/readyz",
            context=self._tls,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        return status == 200

    def _write_kubeconfigs(self) -> None:
        ca_pem = self.ca_file.read_bytes()
        write_kubeconfig(self.kubeconfig, self.server, ca_pem, ADMIN_USER, self.token)
        write_kubeconfig(
            self.unprivileged_kubeconfig, self.server, ca_pem, UNPRIVILEGED_USER, self.unprivileged_token
        )

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "started" if self._started else "new"
        server = self.server if self._apiserver_port else None
        return f"ControlPlane({state}, server={server}, run_dir={self._run_dir})"
