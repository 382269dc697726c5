"""Watches every ResourceClaim during a run and checks, event by event, that no device is allocated to
two claims at once and that each bound pod's claims were allocated on its node.

The end state alone cannot show this when claims come and go (the steady-state DRA workload deletes
each pod once bound, and kube-controller-manager then deletes its claim): a device handed to a second
claim while the first still held it would be gone from the cluster by the end. One watch sees the
claims' changes in etcd order, so "held" here means held at that revision.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from typing import Any

from bench.apiclient import BenchClient
from bench.loadgen import follow

PATH = "/apis/resource.k8s.io/v1/resourceclaims"
Device = tuple[str, str, str]


def _devices(claim: Mapping[str, Any]) -> set[Device]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return {
        (r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
        for r in (allocation.get("devices") or {}).get("results") or ()
        if not r.get("adminAccess")
    }


class ClaimWatch:
    """Every claim's devices as the watch saw them; ``twice`` counts devices taken while held."""

    def __init__(self, client: BenchClient) -> None:
        self._client = client
        self._held: dict[str, set[Device]] = {}  # claim uid -> devices
        self._owner: dict[Device, str] = {}  # device -> claim uid
        self.twice = 0
        # pod name -> the pools its claims were allocated from, when a claim was reserved for it.
        self.pools_of_pod: dict[str, set[str]] = {}
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    async def start(self) -> None:
        listed = await self._client.list(PATH)
        for claim in listed["items"]:
            self._note(claim)
        self._task = asyncio.create_task(self._run(listed["resourceVersion"]))

    async def _run(self, resource_version: str) -> None:
        params = {
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "3600",
        }
        async for kind, obj in follow(self._client, PATH, params):
            if kind in ("ADDED", "MODIFIED"):
                self._note(obj)
            elif kind == "DELETED":
                self._release(str((obj.get("metadata") or {}).get("uid") or ""))

    def _note(self, claim: Mapping[str, Any]) -> None:
        uid = str((claim.get("metadata") or {}).get("uid") or "")
        devices = _devices(claim)
        old = self._held.get(uid, set())
        for device in old - devices:
            if self._owner.get(device) == uid:
                del self._owner[device]
        for device in devices - old:
            owner = self._owner.get(device)
            if owner is not None and owner != uid:
                self.twice += 1
            self._owner[device] = uid
        self._changed.set()
        if devices:
            self._held[uid] = devices
            pools = {device[1] for device in devices}
            for ref in (claim.get("status") or {}).get("reservedFor") or ():
                if ref.get("resource") == "pods":
                    self.pools_of_pod.setdefault(str(ref.get("name")), set()).update(pools)
        else:
            self._held.pop(uid, None)

    def _release(self, uid: str) -> None:
        for device in self._held.pop(uid, set()):
            if self._owner.get(device) == uid:
                del self._owner[device]

    async def problems(self, node_of: Mapping[str, str], timeout: float = 10.0) -> list[str]:
        """What went wrong, once the watch has seen a reserved claim for every bound pod (or
        ``timeout`` passed): devices taken twice, pods without a claim allocated and reserved for them,
        claims allocated on another node than their pod's (one pool per node, named after it)."""
        deadline = time.monotonic() + timeout
        while any(pod not in self.pools_of_pod for pod in node_of):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)
        problems = []
        if self.twice:
            problems.append(f"{self.twice} devices allocated while another claim held them")
        missing = [pod for pod in node_of if pod not in self.pools_of_pod]
        if missing:
            problems.append(f"{len(missing)} bound pods whose claims the watch never saw allocated for them")
        elsewhere = [pod for pod, node in node_of.items() if self.pools_of_pod.get(pod, {node}) != {node}]
        if elsewhere:
            problems.append(f"{len(elsewhere)} pods whose claims were allocated on another node")
        return problems

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
