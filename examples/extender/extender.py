"""A small scheduler extender: filter nodes by a label, prioritize by a node annotation, optionally bind.

Speaks the kube-scheduler extender protocol (``k8s.io/kube-scheduler/extender/v1``: Go field names as
JSON keys), so it works with py-scheduler and with kube-scheduler alike. Copy it and change
``node_passes`` / ``node_score``.

    python -m examples.extender --port 8888 --label example.com/extender=ok \\
        --annotation example.com/extender-score [--kubeconfig ~/.kube/config]

Verbs: POST /filter, /prioritize, /bind (bind needs --kubeconfig). GET /healthz, GET /stats (calls by
verb, for tests). ``--delay`` makes every answer late (to see ``httpTimeout`` at work).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections import Counter
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from kubernetes import client, config

log = logging.getLogger("extender")

MAX_EXTENDER_PRIORITY = 10


class Extender:
    def __init__(
        self,
        label_key: str,
        label_value: str,
        annotation: str,
        *,
        unresolvable: bool = False,
        delay: float = 0.0,
        kubeconfig: str | None = None,
    ) -> None:
        self.label_key = label_key
        self.label_value = label_value
        self.annotation = annotation
        self.unresolvable = unresolvable
        self.delay = delay
        self.kubeconfig = kubeconfig
        self.calls: Counter[str] = Counter()
        self._core: Any = None

    # --- the policy: change these -------------------------------------------------------------------
    def node_passes(self, node: Mapping[str, Any]) -> bool:
        labels = (node.get("metadata") or {}).get("labels") or {}
        return bool(labels.get(self.label_key) == self.label_value)

    def node_score(self, node: Mapping[str, Any]) -> int:
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        try:
            score = int(annotations.get(self.annotation, "0"))
        except ValueError:
            return 0
        return max(0, min(MAX_EXTENDER_PRIORITY, score))

    # --- the protocol ---------------------------------------------------------------------------------
    async def filter(self, request: web.Request) -> web.Response:
        args = await self._args(request, "filter")
        nodes = (args.get("Nodes") or {}).get("items")
        if nodes is None:
            # Only NodeNames: a nodeCacheCapable config, which this extender (no node cache) is not.
            return web.json_response({"Error": "extender needs full nodes: set nodeCacheCapable: false"})
        passed, failed = [], {}
        reason = f"node(s) didn't have label {self.label_key}={self.label_value}"
        for node in nodes:
            if self.node_passes(node):
                passed.append(node)
            else:
                failed[(node.get("metadata") or {}).get("name", "")] = reason
        result = {
            "Nodes": {"metadata": {}, "items": passed},
            "NodeNames": None,
            "FailedNodes": {} if self.unresolvable else failed,
            "FailedAndUnresolvableNodes": failed if self.unresolvable else {},
            "Error": "",
        }
        return web.json_response(result)

    async def prioritize(self, request: web.Request) -> web.Response:
        args = await self._args(request, "prioritize")
        nodes = (args.get("Nodes") or {}).get("items") or []
        priorities = [
            {"Host": (n.get("metadata") or {}).get("name", ""), "Score": self.node_score(n)} for n in nodes
        ]
        return web.json_response(priorities)

    async def bind(self, request: web.Request) -> web.Response:
        args = await self._args(request, "bind")
        try:
            await asyncio.to_thread(self._bind, args)
        except Exception as err:  # the scheduler reports it and retries
            return web.json_response({"Error": f"binding failed: {err}"})
        return web.json_response({"Error": ""})

    def _bind(self, args: Mapping[str, Any]) -> None:
        if self._core is None:
            if not self.kubeconfig:
                raise RuntimeError("bind needs --kubeconfig")
            api = config.new_client_from_config(config_file=self.kubeconfig)
            self._core = client.CoreV1Api(api)
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": args["PodName"], "namespace": args["PodNamespace"], "uid": args["PodUID"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": args["Node"]},
        }
        # The client raises on the (successful) response's empty body unless told not to parse it.
        resp = self._core.create_namespaced_pod_binding(
            args["PodName"], args["PodNamespace"], body, _preload_content=False
        )
        if resp.status >= 300:
            raise RuntimeError(f"status {resp.status}")

    async def _args(self, request: web.Request, verb: str) -> dict[str, Any]:
        self.calls[verb] += 1
        args: dict[str, Any] = await request.json()
        if self.delay:
            await asyncio.sleep(self.delay)
        return args

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response(dict(self.calls))

    async def healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.add_routes(
            [
                web.post("/filter", self.filter),
                web.post("/prioritize", self.prioritize),
                web.post("/bind", self.bind),
                web.get("/stats", self.stats),
                web.get("/healthz", self.healthz),
            ]
        )
        return app


async def serve(extender: Extender, host: str, port: int) -> None:
    runner = web.AppRunner(extender.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    # Tests read this line to learn the port when started with --port 0.
    print(json.dumps({"listening": f"http://{host}:{bound}"}), flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--label", default="example.com/extender=ok", help="key=value nodes must carry")
    parser.add_argument("--annotation", default="example.com/extender-score", help="node score 0..10")
    parser.add_argument("--unresolvable", action="store_true", help="report failedAndUnresolvableNodes")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before every answer")
    parser.add_argument("--kubeconfig", default=None, help="enables the bind verb")
    args = parser.parse_args(argv)
    key, _, value = args.label.partition("=")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    extender = Extender(
        key,
        value,
        args.annotation,
        unresolvable=args.unresolvable,
        delay=args.delay,
        kubeconfig=args.kubeconfig,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(extender, args.host, args.port))
    return 0
