"""One HTTP extender (upstream ``HTTPExtender``): the calls, their timeouts and errors.

Calls are coroutines on the scheduler's event loop: one pooled, keep-alive ``aiohttp.ClientSession``
per extender, created on first use (a session belongs to the loop that made it). ``httpTimeout``
bounds each whole call, as Go's ``http.Client.Timeout`` does. Binding runs on a binding thread; it
hands its call to the loop (``bind_blocking``) so that every request shares the one session.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import aiohttp
import orjson

from scheduler.config.types import ExtenderConfig, ExtenderTLSConfig
from scheduler.extender import metrics
from scheduler.extender.wire import (
    FilterResult,
    HostPriority,
    MetaVictims,
    binding_args,
    decode_binding_result,
    decode_filter_result,
    decode_host_priority_list,
    decode_preemption_result,
    extender_args,
    preemption_args,
    to_meta_victims,
)
from scheduler.framework.extender import ExtenderError, Victims
from scheduler.framework.objects import resources_of
from scheduler.framework.types import NodeInfo, PodInfo

log = logging.getLogger(__name__)

# Upstream DefaultExtenderTimeout: used when httpTimeout is unset (zero).
DEFAULT_EXTENDER_TIMEOUT = 5.0


class HTTPExtender:
    def __init__(self, config: ExtenderConfig) -> None:
        self.config = config
        self.url_prefix = config.url_prefix
        timeout = config.http_timeout if config.http_timeout != 0 else DEFAULT_EXTENDER_TIMEOUT
        # Go's http.Client treats a negative Timeout as none.
        self.timeout: float | None = timeout if timeout > 0 else None
        self.managed_resources = frozenset(r.name for r in config.managed_resources)
        self._ssl = _ssl_for(config)
        self._server_hostname = (config.tls_config.server_name or None) if config.tls_config else None
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- what it does (upstream's Is*/Supports*) ---------------------------------------------------
    @property
    def name(self) -> str:
        return self.url_prefix

    @property
    def ignorable(self) -> bool:
        return self.config.ignorable

    @property
    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    @property
    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    @property
    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    @property
    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    @property
    def weight(self) -> int:
        return self.config.weight

    def is_interested(self, pod: PodInfo) -> bool:
        """True when no managedResources are set, or the pod's containers or init containers request
        or limit one of them (upstream ``IsInterested``)."""
        if not self.managed_resources:
            return True
        spec = pod.spec
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                resources = resources_of(container)
                # isdisjoint reads a dict's keys: the resource names.
                if not self.managed_resources.isdisjoint(resources.get("requests") or ()):
                    return True
                if not self.managed_resources.isdisjoint(resources.get("limits") or ()):
                    return True
        return False

    # --- calls --------------------------------------------------------------------------------------
    async def filter(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> FilterResult:
        """The raw filter answer; ``FilterResult.error`` non-empty is raised as ExtenderError."""
        result = decode_filter_result(
            await self._send("filter", self.config.filter_verb, self._args(pod, nodes))
        )
        if result.error:
            metrics.count_error(self.name, "filter", "extender")
            raise ExtenderError(result.error)
        return result

    async def prioritize(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[HostPriority]:
        return decode_host_priority_list(
            await self._send("prioritize", self.config.prioritize_verb, self._args(pod, nodes))
        )

    async def process_preemption(
        self, pod: PodInfo, node_to_victims: Mapping[str, Victims]
    ) -> dict[str, MetaVictims]:
        """Upstream ``ProcessPreemption`` up to the wire: the extender's answer by pod UID. Turning UIDs
        back into pods on the candidate nodes is the preemption code's job (``convertToVictims``)."""
        if not self.supports_preemption:
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.url_prefix} but run into ProcessPreemption"
            )
        if self.config.node_cache_capable:
            args = preemption_args(pod.pod, None, to_meta_victims(node_to_victims))
        else:
            args = preemption_args(pod.pod, node_to_victims, None)
        return decode_preemption_result(await self._send("preempt", self.config.preempt_verb, args))

    async def bind(self, pod_name: str, pod_namespace: str, pod_uid: str, node: str) -> None:
        if not self.is_binder:
            raise ExtenderError("unexpected empty bindVerb in extender")
        body = await self._send(
            "bind", self.config.bind_verb, binding_args(pod_name, pod_namespace, pod_uid, node)
        )
        error = decode_binding_result(body)
        if error:
            metrics.count_error(self.name, "bind", "extender")
            raise ExtenderError(error)

    def bind_blocking(self, pod_name: str, pod_namespace: str, pod_uid: str, node: str) -> None:
        """``bind`` from a binding thread: the call runs on the loop that owns the session."""
        loop = self._loop
        if loop is None or loop.is_closed():
            raise ExtenderError(f"extender {self.url_prefix}: no event loop to send bind on")
        future = asyncio.run_coroutine_threadsafe(self.bind(pod_name, pod_namespace, pod_uid, node), loop)
        # The call bounds itself with httpTimeout; the margin only covers a loop that stopped.
        wait = None if self.timeout is None else self.timeout + 5.0
        try:
            future.result(wait)
        except TimeoutError as err:
            future.cancel()
            raise ExtenderError(f"extender {self.url_prefix}: bind did not complete") from err

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop this extender's calls run on (set when the scheduler starts)."""
        self._loop = loop

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- transport ----------------------------------------------------------------------------------
    def _args(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> dict[str, Any]:
        if self.config.node_cache_capable:
            return extender_args(pod.pod, None, [n.name for n in nodes])
        return extender_args(pod.pod, [n.node or {"metadata": {"name": n.name}} for n in nodes], None)

    def _session_for_loop(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._loop = asyncio.get_running_loop()
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ssl=self._ssl),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                # The scheduler's environment (proxy variables) applies, as Go's default transport.
                trust_env=True,
            )
        return self._session

    async def _send(self, role: str, verb: str, args: Mapping[str, Any]) -> Any:
        """POST ``args`` to ``urlPrefix/verb``; the decoded JSON answer, or ExtenderError with upstream's
        wording (Go's ``Post "url": ...`` for transport errors)."""
        url = self.url_prefix.rstrip("/") + "/" + verb
        session = self._session_for_loop()
        start = time.perf_counter()
        reason = ""
        try:
            async with session.post(
                url,
                data=_dumps(args),
                headers={"Content-Type": "application/json"},
                server_hostname=self._server_hostname,
            ) as resp:
                if resp.status != 200:
                    reason = "http_status"
                    raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status}")
                raw = await resp.read()
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError as err:
                reason = "decode"
                raise ExtenderError(f"extender {self.url_prefix}: {verb}: invalid JSON: {err}") from err
        except TimeoutError as err:
            reason = "timeout"
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
            ) from err
        except aiohttp.ClientError as err:
            reason = "connection"
            raise ExtenderError(f'Post "{url}": {err}') from err
        finally:
            seconds = time.perf_counter() - start
            metrics.observe_call(self.name, role, metrics.ERROR if reason else metrics.SUCCESS, seconds)
            if reason:
                metrics.count_error(self.name, role, reason)


def _dumps(obj: Any) -> bytes:
    # orjson: a full NodeList per call is the bulk of an extender's cost on our side.
    return orjson.dumps(obj)


class ExtenderTLSError(ValueError):
    """A TLS setting that cannot be used; ``field`` is its name under ``tlsConfig`` ("" for the pair)."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(detail)
        self.field = field


@contextmanager
def _loading(field: str, path: str) -> Iterator[None]:
    """ssl's own errors name neither the setting nor the file ("[Errno 2] No such file or directory")."""
    try:
        yield
    except (OSError, ValueError) as err:  # ssl.SSLError is an OSError
        reason = str(err)
        if isinstance(err, OSError) and not isinstance(err, ssl.SSLError) and err.strerror:
            reason = err.strerror  # without the "[Errno 2]" and the file name repeated
        raise ExtenderTLSError(field, f"{path}: {reason}" if path else reason) from None


def _ssl_for(config: ExtenderConfig) -> ssl.SSLContext | bool:
    """Upstream ``makeTransport`` + client-go ``TLSConfigFor``. ``True`` is the default verification
    (no TLS setting given); ``enableHTTPS`` without a CA skips verification, as upstream."""
    tls = config.tls_config or ExtenderTLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    insecure = tls.insecure or (config.enable_https and not has_ca)
    has_cert = bool(tls.cert_file or tls.cert_data)
    if not (insecure or has_ca or has_cert or tls.server_name):
        return True
    if insecure and has_ca:
        raise ExtenderTLSError(
            "", "specifying a root certificates file with the insecure flag is not allowed"
        )
    # client-go prefers the inline data to the file.
    if tls.ca_data:
        with _loading("caData", ""):
            ctx = ssl.create_default_context(cadata=tls.ca_data.decode("utf-8"))
    else:
        with _loading("caFile", tls.ca_file):
            ctx = ssl.create_default_context(cafile=tls.ca_file or None)
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if has_cert:
        _load_client_cert(ctx, tls)
    return ctx


def _load_client_cert(ctx: ssl.SSLContext, tls: ExtenderTLSConfig) -> None:
    # ssl loads certificates from files only: inline data goes through private temporary files.
    temporary: list[str] = []

    def path_of(data: bytes, path: str) -> str:
        if not data:
            return path
        fd, name = tempfile.mkstemp(prefix="extender-tls-")
        temporary.append(name)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return name

    # Opened first so that a missing file is named: load_cert_chain's error says neither which one.
    for field, data, path in (
        ("certFile", tls.cert_data, tls.cert_file),
        ("keyFile", tls.key_data, tls.key_file),
    ):
        if path and not data:
            with _loading(field, path), open(path, "rb"):
                pass
    try:
        cert = path_of(tls.cert_data, tls.cert_file)
        key = path_of(tls.key_data, tls.key_file)
        with _loading("certData" if tls.cert_data else "certFile", "" if tls.cert_data else tls.cert_file):
            ctx.load_cert_chain(cert, key or None)
    finally:
        for name in temporary:
            os.unlink(name)
