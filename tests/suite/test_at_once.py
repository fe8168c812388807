"""``at_once``: independent requests sent together, recorded as if one after the other."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from amp_conformance.engine.client import Client, Connection, Reply, at_once


class _Gathering:
    """Counts requests in flight: each waits (up to 3 s) until ``expected`` have been in flight
    together, then answers its path, ``/one`` a moment later than the others."""

    def __init__(self, expected: int):
        self.expected = expected
        self.in_flight = 0
        self.most = 0
        self.lock = threading.Condition()


@pytest.fixture
def gathering() -> Iterator[tuple[str, _Gathering]]:
    state = _Gathering(expected=3)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with state.lock:
                state.in_flight += 1
                state.most = max(state.most, state.in_flight)
                state.lock.notify_all()
                state.lock.wait_for(lambda: state.most >= state.expected, timeout=3)
            if self.path == "/one":
                time.sleep(0.1)  # the first call ends last
            body = self.path.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            with state.lock:
                state.in_flight -= 1

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


def test_the_requests_are_in_flight_together_and_recorded_in_call_order(
    gathering: tuple[str, _Gathering],
) -> None:
    url, state = gathering
    connection = Connection(url, timeout=5)
    client = Client(connection)
    replies = at_once(connection, [lambda n=n: client.get(f"/{n}") for n in ("one", "two", "three")])
    assert state.most == 3
    assert [reply.text for reply in replies] == ["/one", "/two", "/three"]
    assert [exchange.url.rsplit("/", 1)[-1] for exchange in client.log] == ["one", "two", "three"]
    assert connection.requests == 3


def test_the_first_call_that_raised_raises_and_every_exchange_is_recorded(
    gathering: tuple[str, _Gathering],
) -> None:
    url, state = gathering
    state.expected = 2
    connection = Connection(url, timeout=5)
    client = Client(connection)

    def broken() -> Reply:
        raise LookupError("the second call")

    def also_broken() -> Reply:
        client.get("/late")
        raise KeyError("the fourth call")

    with pytest.raises(LookupError, match="the second call"):
        at_once(connection, [lambda: client.get("/early"), broken, lambda: client.get("/third"), also_broken])
    assert [exchange.url.rsplit("/", 1)[-1] for exchange in client.log] == ["early", "third", "late"]


def test_an_in_process_app_is_asked_one_request_at_a_time_in_order() -> None:
    order: list[str] = []
    active = [0]

    def handler(request: httpx.Request) -> httpx.Response:
        active[0] += 1
        assert active[0] == 1, "two requests at once"
        order.append(request.url.path)
        active[0] -= 1
        return httpx.Response(200, text=request.url.path)

    connection = Connection("http://app", http=httpx.Client(transport=httpx.MockTransport(handler)))
    client = Client(connection)
    replies = at_once(connection, [lambda n=n: client.get(f"/{n}") for n in range(5)])
    assert order == [f"/{n}" for n in range(5)]
    assert [reply.text for reply in replies] == order


def test_a_call_inside_another_keeps_the_order_of_the_whole(gathering: tuple[str, _Gathering]) -> None:
    """A batch inside a call of another batch (the briefing's conventions detection does that) is
    recorded where that call stands, not before the outer batch's earlier calls."""
    url, state = gathering
    state.expected = 1
    connection = Connection(url, timeout=5)
    client = Client(connection)

    def inner() -> list[Reply]:
        return at_once(connection, [lambda: client.get("/two"), lambda: client.get("/three")])

    at_once(connection, [lambda: client.get("/one"), inner, lambda: client.get("/four")])
    assert [exchange.url.rsplit("/", 1)[-1] for exchange in client.log] == ["one", "two", "three", "four"]
