"""The live LIST behind snapshot, simulate --kubeconfig and explain's re-evaluation: transient answers are
asked again with growing waits, refusals are not, and what still fails is named in one line. The fake
stands at the client seam (``RestClient.request``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import urllib3

from informers.resource import NODES, PODS
from scheduler.client.httppool import ConnectionFailed
from scheduler.client.kubeclient import RestClient
from scheduler.explain import cli as explain_cli
from scheduler.explain.listing import LIST_TRIES, ListingError, list_kinds
from scheduler.explain.manifests import SNAPSHOT_KINDS

# One kind besides nodes and pods that a plugin reads, and one more.
VAS = next(s for s in SNAPSHOT_KINDS if s.name == "volumeattachments.storage.k8s.io")
DRIVERS = next(s for s in SNAPSHOT_KINDS if s.name == "csidrivers.storage.k8s.io")
KINDS = (NODES, PODS, VAS, DRIVERS)

Answer = tuple[int, bytes] | BaseException


def _page(*names: str, token: str = "") -> tuple[int, bytes]:
    items = [{"metadata": {"name": name, "managedFields": [{}]}} for name in names]
    return 200, orjson.dumps({"items": items, "metadata": {"continue": token}})


def _status(code: int, message: str) -> tuple[int, bytes]:
    return code, orjson.dumps({"kind": "Status", "code": code, "message": message})


class Script:
    """Per resource name, the answers to give in order (the last one repeats); every GET is logged."""

    def __init__(self, answers: dict[str, list[Answer]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def get(self, path: str) -> tuple[int, bytes]:
        self.asked.append(path)
        spec = next(s for s in KINDS if path.startswith(s.path() + "?"))
        queue = self.answers.get(spec.name) or [_page()]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def asks_for(self, name: str) -> int:
        spec = next(s for s in KINDS if s.name == name)
        return sum(1 for path in self.asked if path.startswith(spec.path() + "?"))


def _run(script: Script, sleeps: list[float]) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    return list_kinds(script.get, KINDS, sleep=sleeps.append, rng=random.Random(7))


def test_transient_answers_are_asked_again_with_growing_waits() -> None:
    """A 503, a 429 and a reset connection, then the list: listed, after three waits that grow."""
    reset = ConnectionFailed("GET /api/v1/nodes: connection reset by peer")
    script = Script({"nodes": [_status(503, "etcd timeout"), _status(429, "too many requests"), reset,
                               _page("n1")]})  # fmt: skip
    sleeps: list[float] = []
    objects, unlisted = _run(script, sleeps)
    assert [n["metadata"]["name"] for n in objects["nodes"]] == ["n1"]
    assert "managedFields" not in objects["nodes"][0]["metadata"] and objects["nodes"][0]["kind"] == "Node"
    assert unlisted == {} and script.asks_for("nodes") == 4
    assert len(sleeps) == 3
    assert 0.5 <= sleeps[0] < 0.75 and 1.0 <= sleeps[1] < 1.5 and 2.0 <= sleeps[2] < 3.0, sleeps


def test_a_retry_in_the_middle_of_a_paged_list_resumes_that_page() -> None:
    script = Script({"pods": [_page("a", token="next"), _status(500, "oops"), _page("b")]})
    objects, _ = _run(script, [])
    assert [p["metadata"]["name"] for p in objects["pods"]] == ["a", "b"]
    assert [path for path in script.asked if "continue=next" in path] == [
        "/api/v1/pods?limit=500&continue=next"
    ] * 2


@pytest.mark.parametrize("code", [401, 403])
def test_a_refusal_is_not_retried_and_the_kind_is_named(code: int) -> None:
    script = Script({VAS.name: [_status(code, "forbidden")]})
    sleeps: list[float] = []
    objects, unlisted = _run(script, sleeps)
    assert unlisted == {VAS.name: f"HTTP {code}"} and VAS.name not in objects
    assert script.asks_for(VAS.name) == 1 and sleeps == []


def test_a_kind_not_served_is_neither_retried_nor_named() -> None:
    script = Script({DRIVERS.name: [_status(404, "not found")]})
    objects, unlisted = _run(script, [])
    assert unlisted == {} and DRIVERS.name not in objects and script.asks_for(DRIVERS.name) == 1


def test_what_still_fails_after_the_retries_is_named_with_its_last_answer() -> None:
    broken = urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))
    script = Script({VAS.name: [_status(503, "unavailable")], DRIVERS.name: [broken]})
    sleeps: list[float] = []
    objects, unlisted = _run(script, sleeps)
    assert script.asks_for(VAS.name) == LIST_TRIES and script.asks_for(DRIVERS.name) == LIST_TRIES
    assert unlisted[VAS.name] == "HTTP 503"
    assert unlisted[DRIVERS.name].startswith("no answer (") and "reset" in unlisted[DRIVERS.name]
    assert len(sleeps) == 2 * (LIST_TRIES - 1)
    assert objects["nodes"] == [] and objects["pods"] == []


def test_nodes_or_pods_that_cannot_be_listed_stop_with_one_line() -> None:
    script = Script({"pods": [(500, b"etcd\nleader\nchanged")]})
    with pytest.raises(ListingError) as raised:
        _run(script, [])
    assert str(raised.value) == "listing pods: HTTP 500: etcd leader changed"
    assert script.asks_for("pods") == LIST_TRIES


# --- through the command, with the fake at RestClient.request ------------------------------------------


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return path


def _fake_request(script: Script) -> Callable[..., tuple[int, bytes]]:
    def request(self: RestClient, method: str, path: str, body: Any = None, **_: Any) -> tuple[int, bytes]:
        assert method == "GET"
        if not any(path.startswith(s.path() + "?") for s in KINDS):
            return 404, b""
        return script.get(path)

    return request


def test_snapshot_retries_a_flaky_api_server_and_names_what_it_could_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = Script({
        "nodes": [_status(503, "starting"), _page("n1")],
        "pods": [ConnectionFailed("GET /api/v1/pods: connection reset by peer"), _page("p1")],
        VAS.name: [_status(403, "forbidden")],
        DRIVERS.name: [_status(502, "bad gateway")],
    })  # fmt: skip
    sleeps: list[float] = []
    monkeypatch.setattr("time.sleep", sleeps.append)
    monkeypatch.setattr(RestClient, "request", _fake_request(script))
    out = tmp_path / "snapshot.json"
    assert explain_cli.main(["snapshot", "--kubeconfig", str(_kubeconfig(tmp_path)), "-f", str(out)]) == 0
    doc = orjson.loads(out.read_bytes())
    assert sorted(i["metadata"]["name"] for i in doc["items"]) == ["n1", "p1"]
    assert doc["metadata"]["unlisted"] == {VAS.name: "HTTP 403", DRIVERS.name: "HTTP 502"}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"HTTP 403: {VAS.name}" in err and f"HTTP 502: {DRIVERS.name}" in err
    assert script.asks_for("nodes") == 2 and script.asks_for("pods") == 2 and script.asks_for(VAS.name) == 1
    assert len(sleeps) == 2 + (LIST_TRIES - 1)


def test_snapshot_without_nodes_fails_in_one_line_naming_the_kind_and_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("time.sleep", lambda _s: None)
    monkeypatch.setattr(RestClient, "request", _fake_request(Script({"nodes": [_status(504, "timeout")]})))
    out = tmp_path / "snapshot.json"
    assert explain_cli.main(["snapshot", "--kubeconfig", str(_kubeconfig(tmp_path)), "-f", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("py-scheduler snapshot: listing nodes: HTTP 504")
    assert not out.exists()
