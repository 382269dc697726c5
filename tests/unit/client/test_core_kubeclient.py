"""The API seam: the token-bucket RateLimiter and SchedulerApi's mapping of HTTP answers to errors."""

from __future__ import annotations

import threading
from typing import Any

import orjson
import pytest
import urllib3

from scheduler.client.api import BindingConflict, BindingOutcomeUnknown, SchedulerApi
from scheduler.client.kubeclient import RateLimiter
from scheduler.framework.api_error import ApiError
from tests.unit.fakes import FakeRest, status_error


class FakeTime:
    """A clock whose ``sleep`` just moves it forward, and remembers each sleep."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)


def limiter(qps: float, burst: int) -> tuple[RateLimiter, FakeTime]:
    t = FakeTime()
    return RateLimiter(qps, burst, clock=t.clock, sleep=t.sleep), t


# --- RateLimiter ------------------------------------------------------------------------------------


def test_burst_passes_then_requests_queue_at_qps() -> None:
    rl, t = limiter(qps=2.0, burst=3)
    waits = [rl.wait() for _ in range(6)]
    # Three saved tokens, then one every 0.5 s; each caller reserves the next free slot.
    assert waits == [0.0, 0.0, 0.0, 0.5, 1.0, 1.5]
    assert t.sleeps == [0.5, 1.0, 1.5]


def test_tokens_refill_with_time_up_to_burst() -> None:
    rl, t = limiter(qps=4.0, burst=2)
    assert [rl.wait() for _ in range(2)] == [0.0, 0.0]
    t.now += 0.25  # one token back
    assert rl.wait() == 0.0
    assert rl.wait() == 0.25
    t.now += 3600  # a long idle never saves more than burst
    assert [rl.wait() for _ in range(2)] == [0.0, 0.0]
    assert rl.wait() == 0.25


def test_zero_qps_disables_limiting() -> None:
    rl, t = limiter(qps=0.0, burst=1)
    assert [rl.wait() for _ in range(100)] == [0.0] * 100
    assert t.sleeps == []


def test_burst_below_one_still_lets_one_through() -> None:
    rl, _ = limiter(qps=1.0, burst=0)
    assert rl.wait() == 0.0
    assert rl.wait() == pytest.approx(1.0)


def test_concurrent_callers_get_distinct_slots() -> None:
    rl, t = limiter(qps=4.0, burst=2)
    threads = [threading.Thread(target=rl.wait) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5.0)
    # Whatever the order, the eight callers past the burst slept 0.25, 0.5, ... 2.0 seconds.
    assert sorted(t.sleeps) == pytest.approx([0.25 * k for k in range(1, 9)])


# --- SchedulerApi -----------------------------------------------------------------------------------


def api(respond: Any) -> tuple[SchedulerApi, FakeRest]:
    rest = FakeRest(respond)
    return SchedulerApi(rest), rest  # type: ignore[arg-type]


def test_bind_posts_a_binding_with_the_uid_precondition() -> None:
    client, rest = api(lambda m, p, b: (201, b"{}"))
    client.bind("team-a", "web-0", "uid-1", "n1")
    [call] = rest.calls
    assert (call.method, call.path) == ("POST", "/api/v1/namespaces/team-a/pods/web-0/binding")
    assert call.body == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web-0", "namespace": "team-a", "uid": "uid-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (409, 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n2"'),
        (404, 'pods "p" not found'),
        (409, "Precondition failed: UID in precondition: uid-1, UID in object meta: uid-2"),
    ],
)
def test_bind_conflicts_are_not_retried(code: int, message: str) -> None:
    client, _ = api(lambda m, p, b: status_error(code, message))
    with pytest.raises(BindingConflict) as info:
        client.bind("default", "p", "uid-1", "n1")
    assert info.value.status == code and not info.value.retryable
    assert message in str(info.value)
    # The API's message alone, as client-go's StatusError says it (one status prefix in str()).
    assert info.value.api_message == message
    assert str(info.value) == f"{code}: POST /api/v1/namespaces/default/pods/p/binding: {message}"


@pytest.mark.parametrize(
    ("pod_now", "state"),
    [
        ((200, {"metadata": {"uid": "uid-1"}, "spec": {"nodeName": "n2"}}), "bound"),
        ((200, {"metadata": {"uid": "uid-1"}, "spec": {}}), "pending"),
        ((200, {"metadata": {"uid": "uid-2"}, "spec": {}}), "replaced"),
        ((404, {"kind": "Status", "code": 404}), "gone"),
        ((503, {"kind": "Status", "code": 503}), "unknown"),
    ],
)
def test_a_bind_conflict_reads_the_pod_once_to_tell_what_it_is(
    pod_now: tuple[int, dict[str, Any]], state: str
) -> None:
    """The API server answers 409 for "already assigned", "being deleted", scheduling gates and a uid
    precondition (a namesake replaced the pod), 404 when it is gone; one GET right after tells which,
    as upstream's handleSchedulingFailure asks its pod lister."""
    answers = {
        "POST": (409, b'{"kind":"Status","message":"conflict"}'),
        "GET": (pod_now[0], orjson.dumps(pod_now[1])),
    }
    client, _ = api(lambda m, p, b: answers[m])
    with pytest.raises(BindingConflict) as info:
        client.bind("default", "p", "uid-1", "n1")
    assert info.value.pod_state == state
    assert info.value.settled is (state in ("bound", "replaced", "gone"))


@pytest.mark.parametrize(
    ("code", "retryable"), [(500, True), (503, True), (429, True), (403, False), (400, False), (422, False)]
)
def test_other_bind_failures_are_api_errors(code: int, retryable: bool) -> None:
    client, _ = api(lambda m, p, b: status_error(code, "nope"))
    with pytest.raises(ApiError) as info:
        client.bind("default", "p", "uid-1", "n1")
    assert not isinstance(info.value, BindingConflict)
    assert (info.value.status, info.value.retryable) == (code, retryable)


@pytest.mark.parametrize(("code", "attempts"), [(500, 4), (503, 4), (429, 1), (502, 1), (403, 1)])
def test_bind_retries_upstreams_retriable_errors(
    code: int, attempts: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """v1.37's util.BindPod: retry.DefaultBackoff (4 attempts) on an internal error or service
    unavailable; anything else is answered at once."""
    sleeps: list[float] = []
    monkeypatch.setattr("scheduler.client.api.time.sleep", sleeps.append)
    client, rest = api(lambda m, p, b: status_error(code, "nope") if m == "POST" else status_error(404, "x"))
    with pytest.raises(ApiError):
        client.bind("default", "p", "uid-1", "n1")
    assert len([c for c in rest.calls if c.method == "POST"]) == attempts
    assert len(sleeps) == attempts - 1
    assert all(0.01 <= s <= 0.25 * 1.1 for s in sleeps)


def test_bind_retry_succeeds_on_a_later_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scheduler.client.api.time.sleep", lambda _: None)
    answers = iter([status_error(503, "unavailable"), (201, b"{}")])
    client, rest = api(lambda m, p, b: next(answers) if m == "POST" else status_error(404, "gone"))
    client.bind("default", "p", "uid-1", "n1")
    assert [c.method for c in rest.calls].count("POST") == 2


def test_bind_retries_a_refused_connection_but_not_a_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scheduler.client.api.time.sleep", lambda _: None)

    def refused(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "GET":
            return status_error(404, "gone")
        raise urllib3.exceptions.ProtocolError("connect failed") from ConnectionRefusedError(111, "refused")

    client, rest = api(refused)
    with pytest.raises(ApiError):
        client.bind("default", "p", "uid-1", "n1")
    assert [c.method for c in rest.calls].count("POST") == 4

    def reset(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "GET":
            return status_error(404, "gone")
        raise urllib3.exceptions.ProtocolError("connection reset")

    client, rest = api(reset)
    with pytest.raises(ApiError):
        client.bind("default", "p", "uid-1", "n1")
    assert [c.method for c in rest.calls].count("POST") == 1


def test_connection_errors_are_retryable_api_errors() -> None:
    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        raise urllib3.exceptions.ProtocolError("connection reset")

    client, _ = api(respond)
    with pytest.raises(ApiError) as info:
        client.create_event("default", {})
    assert (info.value.status, info.value.retryable) == (0, True)


def test_non_json_error_bodies_are_quoted() -> None:
    client, _ = api(lambda m, p, b: (502, b"<html>bad gateway</html>"))
    with pytest.raises(ApiError, match="bad gateway"):
        client.patch_pod_status("default", "p", {})


def test_patches_use_the_right_content_types() -> None:
    client, rest = api(lambda m, p, b: (200, b"{}"))
    client.patch_pod_status("default", "p", {"status": {}})
    client.patch_event("default", "p.123", {"series": {"count": 2}})
    assert [(c.method, c.path, c.content_type) for c in rest.calls] == [
        ("PATCH", "/api/v1/namespaces/default/pods/p/status", "application/strategic-merge-patch+json"),
        ("PATCH", "/apis/events.k8s.io/v1/namespaces/default/events/p.123", "application/merge-patch+json"),
    ]


def test_get_pod_returns_none_when_gone() -> None:
    client, _ = api(lambda m, p, b: status_error(404, "not found"))
    assert client.get_pod("default", "p") is None
    client, _ = api(lambda m, p, b: (200, b'{"metadata": {"name": "p"}}'))
    assert client.get_pod("default", "p") == {"metadata": {"name": "p"}}


# --- Retry-After (client-go's checkWait and maxRetries) ---------------------------------------------


class _Script:
    """A local HTTP server answering each request with the next (status, Retry-After) of a script,
    then 201 for ever."""

    def __init__(self, answers: list[tuple[int, str | None]]) -> None:
        import http.server

        self.answers = list(answers)
        self.seen = 0
        script = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                script.seen += 1
                status, retry_after = script.answers.pop(0) if script.answers else (201, None)
                body = b"{}"
                self.send_response(status)
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def client(self, slept: list[float]) -> Any:
        from kubernetes import client as k8s_client

        from scheduler.client.kubeclient import RestClient

        configuration = k8s_client.Configuration()
        configuration.host = f"http://127.0.0.1:{self.server.server_address[1]}"
        return RestClient(configuration, qps=0, sleep=slept.append)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    ("answers", "status", "sent", "slept"),
    [
        # Retried after the seconds the server asked for, for 429 and any 5xx.
        ([(429, "1"), (503, "2"), (500, "0")], 201, 4, [1.0, 2.0]),
        # No Retry-After, or one client-go cannot read (a date, junk): no retry, the answer stands.
        ([(500, None)], 500, 1, []),
        ([(429, "Wed, 21 Oct 2015 07:28:00 GMT")], 429, 1, []),
        ([(503, "soon")], 503, 1, []),
        # Other statuses never wait, whatever they carry.
        ([(409, "1")], 409, 1, []),
        # A wait that would outlast the call's timeout (30 s) is not taken.
        ([(429, "60")], 429, 1, []),
        # At most client-go's maxRetries (10) retries.
        ([(429, "0")] * 11, 429, 11, []),
    ],
)
def test_retry_after_answers_are_sent_again_like_client_go(
    answers: list[tuple[int, str | None]], status: int, sent: int, slept: list[float]
) -> None:
    script = _Script(answers)
    waits: list[float] = []
    try:
        got, _ = script.client(waits).request("POST", "/api/v1/namespaces/d/pods/p/binding", {"a": 1})
    finally:
        script.close()
    assert (got, script.seen, waits) == (status, sent, slept)


def test_a_binding_retried_after_retry_after_succeeds_without_an_error() -> None:
    script = _Script([(429, "1")])
    try:
        SchedulerApi(script.client([])).bind("d", "p", "uid-1", "n1")
    finally:
        script.close()
    assert script.seen == 2


def test_no_retry_after_resend_once_the_client_may_not_retry() -> None:
    """A leader that lost its lease while a Binding waited out Retry-After sends nothing more."""
    script = _Script([(429, "1"), (429, "1")])
    allowed = [True]

    def sleep(seconds: float) -> None:
        allowed[0] = False  # leadership lost during the wait

    try:
        client = script.client([])
        client._sleep = sleep
        client.may_retry = lambda: allowed[0]
        status, _ = client.request("POST", "/api/v1/namespaces/d/pods/p/binding", {"a": 1})
    finally:
        script.close()
    assert (status, script.seen) == (429, 1)


# --- a Binding whose answer was lost ------------------------------------------------------------------


def _pod(uid: str, node: str) -> bytes:
    return orjson.dumps({"metadata": {"name": "p", "uid": uid}, "spec": {"nodeName": node}})


def _post_fails(post: Any, get: tuple[int, bytes]) -> Any:
    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "POST":
            if isinstance(post, BaseException):
                raise post
            answer: tuple[int, bytes] = post
            return answer
        return get

    return respond


LOST = urllib3.exceptions.ProtocolError("read timed out")


@pytest.mark.parametrize("post", [status_error(500, "etcd timeout"), status_error(504, "gateway"), LOST])
def test_a_binding_that_landed_although_its_answer_was_lost_is_a_success(post: Any) -> None:
    client, rest = api(_post_fails(post, (200, _pod("uid-1", "n1"))))
    client.bind("default", "p", "uid-1", "n1")  # no error: the pod is bound where we sent it
    assert [c.method for c in rest.calls] == ["POST", "GET"]


@pytest.mark.parametrize(
    ("post", "get"),
    [
        (status_error(500, "etcd timeout"), (200, _pod("uid-1", ""))),  # not bound: a real failure
        (LOST, (200, _pod("uid-1", "n2"))),  # bound elsewhere (another scheduler)
        (status_error(503, "down"), (200, _pod("uid-2", "n1"))),  # a namesake, not our pod
        (LOST, status_error(503, "still down")),  # cannot tell: the error stands
        (status_error(500, "x"), (200, b"not json")),
    ],
)
def test_a_lost_answer_stays_an_error_unless_the_pod_is_ours_and_bound_there(
    post: Any, get: tuple[int, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("scheduler.client.api.time.sleep", lambda _: None)
    client, rest = api(_post_fails(post, get))
    with pytest.raises(ApiError) as info:
        client.bind("default", "p", "uid-1", "n1")
    assert info.value.retryable and not isinstance(info.value, BindingConflict)
    # v1.37's BindPod retries a 500 or 503 (4 attempts); a lost answer is answered at once.
    attempts = 4 if info.value.status in (500, 503) else 1
    assert [c.method for c in rest.calls] == ["POST", "GET"] * attempts


def test_a_definite_refusal_is_not_checked_again() -> None:
    client, rest = api(_post_fails(status_error(403, "forbidden"), (200, _pod("uid-1", "n1"))))
    with pytest.raises(ApiError):
        client.bind("default", "p", "uid-1", "n1")
    assert [c.method for c in rest.calls] == ["POST"]


# --- a Binding whose outcome stays unknown ------------------------------------------------------------


def _refused() -> Exception:
    err = urllib3.exceptions.ProtocolError("connect failed")
    err.__cause__ = ConnectionRefusedError(111, "refused")
    return err


@pytest.mark.parametrize("post", [LOST, status_error(500, "etcd timeout"), status_error(504, "gateway")])
def test_a_lost_answer_that_cannot_be_read_back_says_the_binding_may_have_landed(
    post: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("scheduler.client.api.time.sleep", lambda _: None)

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "GET":
            raise _refused()  # the API server went down with the answer
        if isinstance(post, BaseException):
            raise post
        answer: tuple[int, bytes] = post
        return answer

    client, _ = api(respond)
    with pytest.raises(BindingOutcomeUnknown) as info:
        client.bind("default", "p", "uid-1", "n1")
    assert info.value.node_name == "n1"
    # Otherwise the error it was: its status, text and retryability.
    assert info.value.retryable
    assert info.value.status == (0 if post is LOST else post[0])


@pytest.mark.parametrize("post", [status_error(403, "forbidden"), status_error(429, "slow down"), None])
def test_a_certain_failure_is_no_unknown_outcome(post: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal, throttling and a refused connection (nothing sent) say the Binding was not stored."""
    monkeypatch.setattr("scheduler.client.api.time.sleep", lambda _: None)

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "GET" or post is None:
            raise _refused()
        answer: tuple[int, bytes] = post
        return answer

    client, _ = api(respond)
    with pytest.raises(ApiError) as info:
        client.bind("default", "p", "uid-1", "n1")
    assert not isinstance(info.value, BindingOutcomeUnknown)


@pytest.mark.parametrize(
    ("bound_to", "landed"), [("n1", True), ("n2", False)], ids=["our-node", "another-node"]
)
def test_already_assigned_after_a_try_that_may_have_landed(
    bound_to: str, landed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 500 whose read-back failed, then 409 "already assigned" on the retry (upstream's BindPod
    retries a 500): bound to our node with our uid, it was our first try that landed."""
    monkeypatch.setattr("scheduler.client.api.time.sleep", lambda _: None)
    posts = iter([status_error(500, "etcd timeout"), status_error(409, "already assigned")])
    gets = iter([status_error(503, "still starting"), (200, _pod("uid-1", bound_to))])

    def respond(method: str, path: str, body: Any) -> tuple[int, bytes]:
        return next(posts) if method == "POST" else next(gets)

    client, rest = api(respond)
    if landed:
        client.bind("default", "p", "uid-1", "n1")
    else:
        with pytest.raises(BindingConflict) as info:
            client.bind("default", "p", "uid-1", "n1")
        assert info.value.pod_state == "bound"
    assert [c.method for c in rest.calls] == ["POST", "GET", "POST", "GET"]


def test_already_assigned_on_the_first_try_is_a_conflict_even_on_our_node() -> None:
    """Without an earlier try of this call that may have landed, the binding is someone else's (or an
    earlier attempt's, which the scheduler's own record settles)."""
    answers = {"POST": status_error(409, "already assigned"), "GET": (200, _pod("uid-1", "n1"))}
    client, _ = api(lambda m, p, b: answers[m])
    with pytest.raises(BindingConflict):
        client.bind("default", "p", "uid-1", "n1")


def test_an_event_the_protobuf_encoder_refuses_still_goes_out_as_json() -> None:
    rest = FakeRest()
    usual = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "d"},
        "reason": "Scheduled",
    }
    unusual = {**usual, "metadata": {"name": "p.2", "namespace": "d"}, "someFutureField": "x"}
    api = SchedulerApi(rest, protobuf_writes=True)  # type: ignore[arg-type]
    api.create_event("d", usual)
    api.create_event("d", unusual)
    sent = rest.matching("POST", "/events")
    assert [c.content_type for c in sent] == ["application/vnd.kubernetes.protobuf", "application/json"]
    assert sent[1].body == unusual


def test_an_event_created_with_its_series_goes_as_json_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rest = FakeRest()
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "d"},
        "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:00.000000Z"},
    }
    SchedulerApi(rest, protobuf_writes=True).create_event("d", event)  # type: ignore[arg-type]
    [sent] = rest.matching("POST", "/events")
    assert (sent.content_type, sent.body) == ("application/json", event)
    assert "sent as JSON" not in caplog.text
