"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics and stricter loss detection.

Why not the client library's own implementation
-----------------------------------------------
kubernetes 37.0.2 ships ``kubernetes.leaderelection`` (threads) and ``kubernetes.aio.leaderelection``
(asyncio), both with a ``LeaseLock``. Measured against what a scheduler needs, both fall short:

* No way to stop or release. ``run()`` loops forever while a follower and has no cancellation; nothing
  clears ``holderIdentity`` on shutdown, so a rolling update waits a full lease duration (15 s) for the
  standby to take over instead of ~one retry period (client-go's ``ReleaseOnCancel``).
* No trustworthy ``is_leader()``. Leadership is only re-evaluated when the loop gets round to it; there is
  no answer, safe to call from binding threads, that turns false the instant the renew deadline passes.
* Slow loss detection. A stolen lease is only noticed as "renew failed" and ``on_stopped_leading`` runs
  after the whole renew deadline (10 s) of retries, during which the old leader may keep binding.
* Untestable time. Both call ``time.time()``/``time.sleep()`` directly (wall clock, so an NTP step can
  stretch or cut a lease) and cannot take a fake clock.
* The sync ``LeaseLock`` builds its own ``CoordinationV1Api()`` on the global default configuration, so
  it ignores the scheduler's ApiClient (kubeconfig, QPS, in-cluster token); requests have no timeout,
  so a dead connection hangs the loop forever; ``Config`` calls ``sys.exit`` on bad values.
* The asyncio variant runs on the event loop that the scheduling cycle keeps busy; leader election must
  not be starved by a long cycle.

So this module implements the algorithm of client-go's ``tools/leaderelection`` itself:

* Acquire: GET the Lease; create it if missing; take it over when it is free (empty holder) or its
  record has not changed for ``leaseDurationSeconds`` as measured on *our* monotonic clock since we
  first observed that record (clock skew between replicas never matters, as in client-go).
* Renew every ``retry_period`` with an optimistic PUT of the last Lease we saw (its resourceVersion
  makes it a compare-and-swap). When that fails (409: someone else wrote it; or any error) fall back
  to GET and decide again (client-go's "slow path", counted in ``leader_election_slowpath_total``
  when it renews).
* Lose leadership at once when a GET shows another holder (stolen, or cleared by an operator), or when
  no renewal has succeeded for ``renew_deadline`` since the last successful one *started*. Unlike
  client-go, a steal does not wait out the renew deadline.
* ``is_leader()`` is one float comparison against "start of last successful renewal + renew deadline",
  so it turns false on time even if the election thread is stuck in a slow request. The renew deadline
  is shorter than the lease duration, so we stop acting before any other replica may start.
* Requests carry a timeout no longer than what is left of the renew deadline.
* ``stop(release=True)`` releases like client-go's ReleaseOnCancel: holder cleared,
  ``leaseDurationSeconds: 1``, so a standby takes over within about one retry period.
* Runs in its own daemon thread with the synchronous client and raw JSON dicts; ``tick()`` is one
  attempt and returns the delay to the next, which is how the unit tests drive it with a fake clock.

``on_stopped_leading`` fires only when leadership is lost involuntarily (never on ``stop()``); after it
the elector does not try again: the process is expected to exit, as kube-scheduler does.
"""

from __future__ import annotations

import json
import logging
import math
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from scheduler import metrics
from scheduler.client.events import micro_time
from scheduler.framework.objects_scheduling import LeaseSpec, lease_spec

logger = logging.getLogger(__name__)

Lease = dict[str, Any]

# client-go leaderelection.JitterFactor: followers retry after retry_period * (1 + U[0, 1.2)).
JITTER_FACTOR = 1.2
_MIN_REQUEST_TIMEOUT = 0.1


class LeaseConflictError(Exception):
    """The API server answered 409: the Lease changed (or already exists) since we last read it."""


class LeaseClient(Protocol):
    """The three Lease calls the elector makes. Bodies and results are raw JSON dicts."""

    def get(self, timeout: float) -> Lease | None:
        """The Lease, or None when it does not exist."""
        ...

    def create(self, lease: Lease, timeout: float) -> Lease:
        """Raises LeaseConflictError when it already exists."""
        ...

    def update(self, lease: Lease, timeout: float) -> Lease:
        """PUT guarded by metadata.resourceVersion; raises LeaseConflictError on 409."""
        ...


class KubeLeaseClient:
    """LeaseClient over the synchronous kubernetes ApiClient, without the client's model classes."""

    def __init__(self, api_client: Any, namespace: str, name: str) -> None:
        self._api = api_client
        self._namespace = namespace
        self._name = name

    def get(self, timeout: float) -> Lease | None:
        status, body = self._call("GET", f"/namespaces/{self._namespace}/leases/{self._name}", None, timeout)
        if status == 404:
            return None
        return self._ok(status, body)

    def create(self, lease: Lease, timeout: float) -> Lease:
        status, body = self._call("POST", f"/namespaces/{self._namespace}/leases", lease, timeout)
        return self._ok(status, body)

    def update(self, lease: Lease, timeout: float) -> Lease:
        path = f"/namespaces/{self._namespace}/leases/{self._name}"
        status, body = self._call("PUT", path, lease, timeout)
        return self._ok(status, body)

    def _call(self, method: str, path: str, body: Lease | None, timeout: float) -> tuple[int, bytes]:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = self._api.param_serialize(
            method=method,
            resource_path="/apis/coordination.k8s.io/v1" + path,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self._api.call_api(*request, _request_timeout=timeout)
        data: bytes = response.read() or b""
        return int(response.status), data

    def _ok(self, status: int, body: bytes) -> Lease:
        if status == 409:
            raise LeaseConflictError(body.decode(errors="replace"))
        if not 200 <= status < 300:
            raise RuntimeError(f"lease {self._namespace}/{self._name}: HTTP {status}: {body[:300]!r}")
        result: Lease = json.loads(body)
        return result


class RestLeaseClient:
    """LeaseClient over the scheduler's ``RestClient``: one attempt per call, bounded by its timeout.

    The generated client's urllib3 pool retries a failed GET or PUT three times, each with the full
    timeout, so one lease call outlasted the renew deadline and a partitioned leader went on reporting
    itself leader for 45 s. Here a call is one request on ``http.client`` whose connect and reads are
    bounded by the ``timeout`` the elector passes (what is left of the renew deadline).
    """

    def __init__(self, rest: Any, namespace: str, name: str) -> None:
        self._rest = rest
        self._namespace = namespace
        self._name = name
        self._base = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"

    def get(self, timeout: float) -> Lease | None:
        status, body = self._rest.request("GET", f"{self._base}/{self._name}", timeout=timeout)
        if status == 404:
            return None
        return self._ok(status, body)

    def create(self, lease: Lease, timeout: float) -> Lease:
        return self._ok(*self._rest.request("POST", self._base, lease, timeout=timeout))

    def update(self, lease: Lease, timeout: float) -> Lease:
        return self._ok(*self._rest.request("PUT", f"{self._base}/{self._name}", lease, timeout=timeout))

    def _ok(self, status: int, body: bytes) -> Lease:
        if status == 409:
            raise LeaseConflictError(body[:300].decode(errors="replace"))
        if not 200 <= status < 300:
            raise RuntimeError(f"lease {self._namespace}/{self._name}: HTTP {status}: {body[:300]!r}")
        result: Lease = json.loads(body)
        return result


class _LostError(Exception):
    """Leadership is gone for good: another holder was observed."""


def default_identity() -> str:
    """hostname + "_" + uuid, as kube-scheduler builds it (unique even for two replicas on one host)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    def __init__(
        self,
        api_client: Any,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        lease_client: LeaseClient | None = None,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        """``on_started_leading`` runs on the election thread and must return quickly (hand off work).

        ``lease_client`` replaces the API calls (tests); otherwise ``api_client`` (a sync
        ``kubernetes.client.ApiClient``) is used.
        """
        if not identity:
            raise ValueError("leader election identity must not be empty")
        if min(lease_duration, renew_deadline, retry_period) <= 0:
            raise ValueError("leaseDuration, renewDeadline and retryPeriod must be positive")
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(f"renewDeadline must be greater than retryPeriod*{JITTER_FACTOR}")
        if lease_client is None:
            if api_client is None:
                raise ValueError("either api_client or lease_client is required")
            lease_client = KubeLeaseClient(api_client, namespace, name)
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._wall = wall
        self._client = lease_client
        self._jitter = jitter

        # Written only by whichever thread runs tick() (the election thread, or stop() after joining it).
        self._lease: Lease | None = None
        self._observed_spec: LeaseSpec | None = None
        self._observed_at = -math.inf
        self._leading = False
        self._lost = False
        self._renewed_at = -math.inf
        self._reported_holder = ""
        # Read from other threads; each is a single attribute, so reads are atomic under the GIL.
        self._leader_until = -math.inf
        self._heartbeat = clock()

        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        metrics.set_leader(self.name, False)

    def describe(self) -> str:
        """namespace/name of the Lease, for logs. (The metric's ``name`` label is the lease name, as
        kube-scheduler labels it with its component name, which is also its lease name.)"""
        return f"{self.namespace}/{self.name}"

    # -- public API --------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("LeaderElector already started")
        self._heartbeat = self._clock()
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, release: bool = True, timeout: float | None = None) -> None:
        """Stop campaigning; with ``release`` and while we hold the lease, hand it over at once.

        ``is_leader()`` is false from the moment this is called. Does not call on_stopped_leading.
        ``timeout`` bounds the whole call (joining the thread, then the release's two requests); by
        default the renew deadline. A thread stuck in a request past it is abandoned (it is a daemon).
        """
        self._leader_until = -math.inf
        self._stop.set()
        budget = self.renew_deadline if timeout is None else timeout
        deadline = self._clock() + budget
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            # A request in flight is bounded by its own timeout, but shutdown must not wait it out.
            thread.join(max(0.0, deadline - self._clock()))
            if thread.is_alive():
                logger.warning("leader election thread did not stop; not releasing %s", self.describe())
                metrics.set_leader(self.name, False)
                return
        # The thread may have finished a renewal between our first reset and its exit.
        self._leader_until = -math.inf
        if release and self._leading and not self._lost:
            self._release(max(_MIN_REQUEST_TIMEOUT, deadline - self._clock()))
        self._leading = False
        metrics.set_leader(self.name, False)

    def is_leader(self) -> bool:
        """True only while a renewal succeeded less than renew_deadline ago. Thread-safe and cheap."""
        return self._clock() < self._leader_until

    def holder(self) -> str:
        """The holder identity last observed on the Lease ("" when unknown or free)."""
        spec = self._observed_spec or {}
        return str(spec.get("holderIdentity") or "")

    def healthy(self, max_stall: float | None = None) -> tuple[bool, str]:
        """Liveness: false when the election loop has made no progress for ``max_stall`` seconds.

        The loop touches its heartbeat before and after every request and a request is bounded by the
        renew deadline, so the default (the lease duration) only trips when the thread is wedged.
        """
        if self._thread is None or self._stop.is_set() or self._lost:
            return True, "ok"
        limit = self.lease_duration if max_stall is None else max_stall
        stalled = self._clock() - self._heartbeat
        if stalled > limit:
            return False, f"leader election on {self.describe()} made no progress for {stalled:.1f}s"
        return True, "ok"

    # -- the loop ----------------------------------------------------------------------------------

    def _run(self) -> None:
        logger.info("attempting to acquire leader lease %s as %s", self.describe(), self.identity)
        while not self._stop.is_set():
            try:
                delay = self.tick()
            except Exception:  # a bug must not silently end the election thread
                logger.exception("leader election tick failed")
                delay = self.retry_period
            if delay is None:
                return
            self._stop.wait(delay)

    def tick(self) -> float | None:
        """One acquire-or-renew attempt. Returns seconds until the next, or None once leadership is lost."""
        if self._lost or self._stop.is_set():
            return None
        now = self._clock()
        self._heartbeat = now
        try:
            ok = self._try_acquire_or_renew(now)
        except _LostError as lost:
            self._lose(str(lost))
            return None
        except Exception as err:
            ok = False
            logger.log(
                logging.WARNING if self._leading else logging.DEBUG,
                "%s lease %s: %s",
                "failed to renew" if self._leading else "failed to acquire",
                self.describe(),
                err,
            )
        self._heartbeat = self._clock()
        self._report_holder()
        if ok:
            self._renewed_at = now
            if self._stop.is_set():
                # Acquired while stopping: remember we hold it so stop() releases it, but never lead.
                self._leading = True
                return None
            self._leader_until = now + self.renew_deadline
            if not self._leading and not self._start_leading():
                return None
        if self._leading:
            left = self._renewed_at + self.renew_deadline - self._clock()
            if left <= 0:
                self._lose(f"failed to renew lease {self.describe()} within the renew deadline")
                return None
            return self.retry_period if ok else min(self.retry_period, left)
        return self.retry_period * (1.0 + self._jitter() * JITTER_FACTOR)

    def _request_timeout(self) -> float:
        """What is left of the renew deadline, read afresh before *each* request of an attempt: a
        fast-path PUT that timed out must not hand its whole budget again to the GET after it."""
        if self._leading:
            left = self._renewed_at + self.renew_deadline - self._clock()
            if left <= 0:
                raise TimeoutError("renew deadline passed during the attempt")
            return max(_MIN_REQUEST_TIMEOUT, min(self.renew_deadline, left))
        return self.renew_deadline

    def _try_acquire_or_renew(self, now: float) -> bool:
        if self._leading and self._lease is not None:
            # Fast path: the Lease is ours and we saw its latest version; PUT it back renewed.
            try:
                renewed = self._client.update(self._renewed(self._lease), self._request_timeout())
                self._observe(renewed, now)
                return True
            except Exception as err:  # conflict, 404, timeout: all mean "re-read it", as in client-go
                logger.info("optimistic renewal of %s failed (%s), re-reading it", self.describe(), err)

        lease = self._client.get(self._request_timeout())
        if lease is None:
            if self._leading:
                logger.warning("lease %s disappeared while we held it; recreating it", self.describe())
            self._observe(self._client.create(self._new_lease(), self._request_timeout()), now)
            return True

        self._observe(lease, now)
        spec = self._observed_spec or {}
        holder = str(spec.get("holderIdentity") or "")
        if holder != self.identity:
            if self._leading:
                who = holder or "nobody (holder cleared)"
                raise _LostError(f"lease {self.describe()} is now held by {who}")
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
            if holder and now < self._observed_at + duration:
                return False
            body = self._taken_over(lease)
        else:
            if self._leading:
                metrics.leader_slowpath(self.name)
            body = self._renewed(lease)
        self._observe(self._client.update(body, self._request_timeout()), now)
        return True

    # -- lease bodies ------------------------------------------------------------------------------

    def _new_lease(self) -> Lease:
        stamp = micro_time(self._wall())
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self._lease_seconds(),
                "acquireTime": stamp,
                "renewTime": stamp,
                "leaseTransitions": 0,
            },
        }

    def _renewed(self, lease: Lease) -> Lease:
        body = dict(lease)
        spec: dict[str, Any] = dict(lease_spec(lease))
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = self._lease_seconds()
        spec["renewTime"] = micro_time(self._wall())
        spec.setdefault("acquireTime", spec["renewTime"])
        body["spec"] = spec
        return body

    def _taken_over(self, lease: Lease) -> Lease:
        body = dict(lease)
        spec: dict[str, Any] = dict(lease_spec(lease))
        stamp = micro_time(self._wall())
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = self._lease_seconds()
        spec["acquireTime"] = stamp
        spec["renewTime"] = stamp
        spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        body["spec"] = spec
        return body

    def _lease_seconds(self) -> int:
        return max(1, int(self.lease_duration))

    def _observe(self, lease: Lease, now: float) -> None:
        self._lease = lease
        spec = lease_spec(lease)
        if spec != self._observed_spec:
            self._observed_spec = spec
            self._observed_at = now

    def _report_holder(self) -> None:
        holder = self.holder()
        if holder != self._reported_holder:
            self._reported_holder = holder
            if holder and holder != self.identity:
                logger.info("new leader observed on %s: %s", self.describe(), holder)

    # -- transitions -------------------------------------------------------------------------------

    def _start_leading(self) -> bool:
        self._leading = True
        metrics.set_leader(self.name, True)
        logger.info("successfully acquired lease %s as %s", self.describe(), self.identity)
        try:
            self._on_started()
        except Exception:
            logger.exception("on_started_leading failed; giving up the lease")
            self._lose("on_started_leading failed")
            self._release()
            return False
        return True

    def _lose(self, reason: str) -> None:
        self._leader_until = -math.inf
        was_leading = self._leading
        self._leading = False
        self._lost = True
        metrics.set_leader(self.name, False)
        if not was_leading:
            return
        logger.error("leader election lost: %s", reason)
        try:
            self._on_stopped()
        except Exception:
            logger.exception("on_stopped_leading failed")

    def _release(self, budget: float | None = None) -> None:
        """client-go ReleaseOnCancel: clear the holder and shrink the lease to 1 s, only if still ours.

        Both requests together take at most ``budget`` (default: the renew deadline).
        """
        deadline = self._clock() + (self.renew_deadline if budget is None else budget)
        try:
            lease = self._client.get(max(_MIN_REQUEST_TIMEOUT, deadline - self._clock()))
            if lease is None or lease_spec(lease).get("holderIdentity") != self.identity:
                return
            body = dict(lease)
            spec: dict[str, Any] = dict(lease_spec(lease))
            stamp = micro_time(self._wall())
            spec.update(holderIdentity="", leaseDurationSeconds=1, acquireTime=stamp, renewTime=stamp)
            body["spec"] = spec
            left = deadline - self._clock()
            if left <= 0:
                raise TimeoutError("no time left to release it")
            self._client.update(body, left)
            logger.info("released lease %s", self.describe())
        except Exception as err:
            logger.warning("failed to release lease %s: %s", self.describe(), err)
