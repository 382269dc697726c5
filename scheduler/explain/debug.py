"""``GET /debug/pods/<namespace>/<name>``: a pod's recent decision records as JSON.

Runs on the HTTP server's threads; reads the DecisionStore under its lock. A standby replica has no
records, and the Service proxy may route a request to it, so it answers 503 with ``"leader": false``
and ``py-scheduler explain`` retries until it reaches the leader.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

import orjson

from scheduler.explain.store import DecisionStore


def debug_pods_handler(
    store: DecisionStore, is_leader: Callable[[], bool], recording: Callable[[], bool] = lambda: True
) -> Callable[[str], tuple[int, bytes]]:
    def handle(key: str) -> tuple[int, bytes]:
        namespace, _, name = key.partition("/")
        if not namespace or not name or "/" in name:
            return _error(HTTPStatus.BAD_REQUEST, "expected /debug/pods/<namespace>/<name>")
        if not is_leader():
            return HTTPStatus.SERVICE_UNAVAILABLE, orjson.dumps(
                {"leader": False, "error": "this replica is not the leader; it has no decision records"}
            )
        found = store.get_json(key)
        if found is None:
            if not recording():
                return _error(HTTPStatus.NOT_FOUND, "decision recording is off (--record-decisions=false)")
            return _error(HTTPStatus.NOT_FOUND, f"no scheduling attempts recorded for pod {key}")
        found["leader"] = True
        return HTTPStatus.OK, orjson.dumps(found)

    return handle


def _error(status: HTTPStatus, message: str) -> tuple[int, bytes]:
    return status, orjson.dumps({"leader": True, "error": message})
