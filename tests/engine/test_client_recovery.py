"""The client's recovery from a flaky network (issue 36): what is repeated, what never is, and what
the evidence and the ``network`` counters say. Faults are seeded in an ``httpx.MockTransport``."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from amp_conformance.engine.client import Client, Connection, Reply
from amp_conformance.engine.exchange import Exchange, exchange_from_wire, exchange_to_wire
from amp_conformance.engine.network import NetworkLog
from amp_conformance.engine.outcomes import AmbiguousExchange, ServerUnavailable, TransportFailure
from tests.suite.badservers import raw_server

Fault = Callable[[httpx.Request], httpx.Response]


class _CutBody(httpx.SyncByteStream):
    """A body that breaks after its first bytes, as a connection closed mid-response does."""

    def __iter__(self) -> Iterator[bytes]:
        yield b'{"resu'
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


def reset(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadError("[Errno 104] Connection reset by peer", request=request)


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("[Errno 111] Connection refused", request=request)


def stalled(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadTimeout("timed out", request=request)


def cut(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "application/json"}, stream=_CutBody())


class Server:
    """Answers 200 ``{"ok": true}`` (``answer`` changes that), except for the seeded faults: the n-th
    request whose path is ``path`` meets ``faults[n]``. ``seen`` is every request that reached it."""

    def __init__(self, faults: dict[tuple[str, int], Fault] | None = None, answer: int = 200):
        self.faults = dict(faults or {})
        self.answer = answer
        self.seen: list[tuple[str, str]] = []
        self.applied: list[tuple[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        index = sum(1 for _, seen in self.seen if seen == path)
        self.seen.append((request.method, path))
        fault = self.faults.get((path, index))
        if fault is not refused:
            self.applied.append((request.method, path))  # refused: never reached the application
        if fault is not None:
            return fault(request)
        return httpx.Response(self.answer, json={"ok": True})


def _connection(server: Server, **kwargs: object) -> Connection:
    http = httpx.Client(transport=httpx.MockTransport(server))
    return Connection("http://amp.test", http=http, backoff=0.0, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("fault", "kind"), [(reset, "reset"), (cut, "cut"), (stalled, "timeout")])
def test_a_get_after_a_broken_attempt_is_repeated_and_both_attempts_are_evidence(
    fault: Fault, kind: str
) -> None:
    server = Server({("/memories", 0): fault})
    connection = _connection(server)
    client = Client(connection)
    reply = client.get("/memories")
    assert reply.status == 200 and reply.json() == {"ok": True}
    assert server.seen == [("GET", "/memories")] * 2 and connection.requests == 2
    first, second = client.log
    assert second.retry_of is first and second.attempts == [first, second]
    assert first.broken == kind and first.error and second.error is None
    assert second.describe().startswith(f"! attempt 1 broke ({kind}): ")
    assert first.as_dict()["error"] == first.error  # the JSON report says how the attempt broke
    block = connection.network.as_block()
    assert block["broken_by_kind"][kind] == 1 and block["exchanges_broken"] == 1 and block["repeated"] == 1


def test_a_broken_attempt_is_never_judged_even_when_part_of_a_response_came() -> None:
    server = Server({("/spec", 0): cut})
    client = Client(_connection(server))
    client.get("/spec")
    broken = client.log[0]
    assert broken.status == 200 and broken.broken == "cut"
    assert "< (200, then no complete response: the server broke the HTTP exchange" in broken.describe()
    assert broken.error is not None and broken.error.endswith("; attempt 1, sent again")
    placeholder = Reply(broken)  # a step's replies keep their places; the broken one reads as an error
    for read in (lambda: placeholder.status, lambda: placeholder.headers, placeholder.json):
        with pytest.raises(TransportFailure, match="no response to judge"):
            read()
    with pytest.raises(TransportFailure):
        _ = Reply(Exchange("GET", "http://amp.test/spec", {}, None, error="reset")).status


def test_a_get_broken_on_every_attempt_is_one_transport_failure_with_three_attempts() -> None:
    server = Server({("/memories", n): reset for n in range(3)})
    connection = _connection(server, max_consecutive_failures=10)
    client = Client(connection)
    with pytest.raises(TransportFailure) as caught:
        client.get("/memories")
    assert not isinstance(caught.value, AmbiguousExchange)
    assert caught.value.exchange is client.log[-1] and len(client.log) == 3
    assert "3 attempts" in str(caught.value)
    assert connection.network.as_block()["repeated"] == 2


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_a_write_reset_after_the_server_applied_it_is_ambiguous_and_sent_once(method: str) -> None:
    server = Server({("/memories", 0): reset})
    connection = _connection(server)
    client = Client(connection)
    with pytest.raises(AmbiguousExchange) as caught:
        client.request(method, "/memories", json_body={"content": {"text": "x"}})
    assert server.applied == [(method, "/memories")] and connection.requests == 1
    assert caught.value.exchange is client.log[0] and len(client.log) == 1
    assert "never sent again blind" in str(caught.value)
    assert connection.network.as_block()["repeated"] == 0


@pytest.mark.parametrize("fault", [reset, cut, stalled])
def test_a_post_declared_repeatable_is_repeated(fault: Fault) -> None:
    server = Server({("/memories/search", 0): fault})
    client = Client(_connection(server))
    reply = client.post("/memories/search", {"query": "x"}, repeatable=True)
    assert reply.status == 200 and len(server.seen) == 2


def test_a_get_declared_not_repeatable_is_ambiguous() -> None:
    server = Server({("/lifecycle", 0): reset})
    with pytest.raises(AmbiguousExchange):
        Client(_connection(server)).get("/lifecycle", repeatable=False)
    assert len(server.seen) == 1


def test_a_post_whose_connection_was_refused_is_repeated_nothing_was_sent() -> None:
    server = Server({("/memories", 0): refused})
    connection = _connection(server)
    client = Client(connection)
    reply = client.post("/memories", {"content": {"text": "x"}})
    assert reply.status == 200 and server.applied == [("POST", "/memories")]
    assert client.log[0].broken == "refused" and connection.network.broken["refused"] == 1


def test_a_repeated_delete_answering_404_is_ambiguous_the_first_may_have_deleted_it() -> None:
    server = Server({("/memories/m1", 0): reset}, answer=404)
    client = Client(_connection(server))
    with pytest.raises(AmbiguousExchange) as caught:
        client.delete("/memories/m1")
    assert caught.value.exchange is client.log[-1] and caught.value.exchange.status == 404
    assert len(client.log) == 2 and "may have deleted it" in str(caught.value)


def test_a_delete_whose_first_connection_was_refused_answers_its_404_plainly() -> None:
    server = Server({("/memories/m1", 0): refused}, answer=404)
    assert Client(_connection(server)).delete("/memories/m1").status == 404


def test_the_breaker_holds_on_sporadic_losses_while_health_answers() -> None:
    server = Server({("/memories", n): reset for n in range(3)})
    connection = _connection(server)
    client = Client(connection)
    with pytest.raises(TransportFailure):
        client.get("/memories")
    assert ("GET", "/health") in server.seen  # asked after the third failure in a row
    assert connection.broken_reason is None and connection.sporadic_losses == 1
    assert client.get("/memories").status == 200


def test_the_breaker_trips_when_health_fails_too_with_one_line() -> None:
    server = Server({**{("/memories", n): reset for n in range(3)}, ("/health", 0): refused})
    connection = _connection(server)
    client = Client(connection)
    with pytest.raises(TransportFailure):
        client.get("/memories")
    reason = connection.broken_reason
    assert reason is not None and "\n" not in reason
    assert "3 requests in a row" in reason and "GET http://amp.test/health failed too" in reason
    with pytest.raises(ServerUnavailable):
        client.get("/memories")
    assert len(server.seen) == 4  # three attempts and the probe; nothing after


def test_the_breaker_trips_when_health_answers_as_a_gateway_with_nothing_behind_it() -> None:
    server = Server({**{("/x", n): reset for n in range(3)}, ("/health", 0): lambda r: httpx.Response(503)})
    connection = _connection(server)
    with pytest.raises(TransportFailure):
        Client(connection).get("/x")
    assert connection.broken_reason is not None and "answered 503" in connection.broken_reason


def test_no_repeat_is_sent_past_the_checks_deadline() -> None:
    server = Server({("/memories", 0): reset})
    http = httpx.Client(transport=httpx.MockTransport(server))
    connection = Connection("http://amp.test", http=http, backoff=5.0)
    client = Client(connection, deadline=time.monotonic() + 1.0)
    started = time.monotonic()
    with pytest.raises(TransportFailure):
        client.get("/memories")
    assert len(server.seen) == 1 and time.monotonic() - started < 1.0


def test_the_kind_of_a_broken_attempt_crosses_to_another_process() -> None:
    server = Server({("/memories", 0): cut})
    client = Client(_connection(server))
    client.get("/memories")
    assert exchange_from_wire(exchange_to_wire(client.log[0]), None).broken == "cut"


def test_network_log_counts_and_merges_a_workers_block() -> None:
    controller, worker = NetworkLog(), NetworkLog()
    for kind in ("reset", "reset", "cut", "timeout", "refused"):
        worker.count_broken(kind)
    worker.count_repeated()
    worker.count_rerun("AMP-LIST-03")
    controller.count_broken("cut")
    controller.merge(worker.as_block())
    block = controller.as_block()
    assert block["broken_by_kind"] == {"reset": 2, "cut": 2, "timeout": 1, "refused": 1}
    assert block["exchanges_broken"] == 6 and block["repeated"] == 1 and block["rerun"] == ["AMP-LIST-03"]
    assert block["summary"] == "network: 6 exchanges broken, all recovered"


def _answers_and_closes(conn: socket.socket) -> None:
    """Answers one request with ``Connection: close`` and closes, as a server ending a kept connection."""
    conn.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    body = b'{"ok": true}'
    head = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nConnection: close\r\n"
    conn.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    conn.close()


def test_a_server_closing_with_connection_close_never_makes_the_next_post_ambiguous() -> None:
    with raw_server(_answers_and_closes) as url:
        connection = Connection(url, timeout=2)
        client = Client(connection)
        statuses = [client.post("/memories", {"n": n}).status for n in range(3)]
    assert statuses == [201, 201, 201] and connection.requests == 3
    assert connection.network.total_broken == 0
