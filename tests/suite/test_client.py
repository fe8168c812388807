"""The recording client: evidence, curl lines, secrets, and behaviour on broken servers."""

from __future__ import annotations

import shlex
import time

import pytest

from amp_conformance.engine.client import MAX_RESPONSE_BYTES, Client, Connection, normalise_base_url
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import (
    CheckFailure,
    DeadlineExceeded,
    ServerUnavailable,
    TransportFailure,
)
from tests.suite.badservers import answers, free_port, never_answers, raw_server, resets


@pytest.mark.parametrize(
    ("given", "api_base", "root"),
    [
        ("http://h:1", "http://h:1/amp/v1", "http://h:1"),
        ("http://h:1/", "http://h:1/amp/v1", "http://h:1"),
        ("http://h:1/amp/v1/", "http://h:1/amp/v1", "http://h:1"),
        ("https://h/x/amp/v1", "https://h/x/amp/v1", "https://h/x"),
    ],
)
def test_base_url_is_accepted_with_or_without_the_api_prefix(given: str, api_base: str, root: str) -> None:
    assert normalise_base_url(given) == (api_base, root)


def test_a_base_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(ValueError, match="not an http"):
        normalise_base_url("ftp://example")


def test_curl_line_reproduces_the_request_and_hides_secrets() -> None:
    exchange = Exchange(
        "PATCH",
        "http://h/amp/v1/memories/x",
        {"X-AMP-Agent-ID": "agent-1", "X-AMP-API-Key": "s3cret", "Content-Type": "application/json"},
        b'{"text": "it\'s"}',
    )
    line = exchange.curl()
    assert "s3cret" not in line
    assert '"X-AMP-API-Key: $AMP_API_KEY"' in line
    words = shlex.split(line.replace('"X-AMP-API-Key: $AMP_API_KEY"', "'X-AMP-API-Key: K'"))
    assert words[:6] == ["curl", "-sS", "-i", "-X", "PATCH", "http://h/amp/v1/memories/x"]
    assert words[words.index("--data-binary") + 1] == '{"text": "it\'s"}'
    assert exchange.masked_request_headers()["X-AMP-API-Key"] == "***"
    assert "s3cret" not in exchange.describe()
    assert "s3cret" not in str(exchange.as_dict())


def test_html_error_page_fails_the_check_not_the_tool() -> None:
    with raw_server(answers("500 Internal Server Error", "text/html", b"<html>boom</html>")) as url:
        connection = Connection(url, timeout=2)
        reply = Client(connection).get("/health")
        assert reply.status == 500
        with pytest.raises(CheckFailure, match="not JSON"):
            reply.json()


def test_huge_body_is_cut_and_reported() -> None:
    body = b"x" * (MAX_RESPONSE_BYTES + 10)
    with raw_server(answers("200 OK", "application/json", body)) as url:
        reply = Client(Connection(url, timeout=5)).get("/health")
        assert reply.exchange.truncated
        assert len(reply.content) == MAX_RESPONSE_BYTES
        with pytest.raises(CheckFailure, match="exceeds"):
            reply.json()


def test_a_server_that_never_answers_times_out_then_trips_the_breaker() -> None:
    with raw_server(never_answers) as url:
        connection = Connection(url, timeout=0.5, max_consecutive_failures=2)
        client = Client(connection)
        started = time.monotonic()
        for _ in range(2):
            with pytest.raises(TransportFailure, match="no complete response"):
                client.get("/health")
        with pytest.raises(ServerUnavailable):
            client.get("/health")
        assert time.monotonic() - started < 3
        assert len(client.log) == 2


def test_connection_refused_is_a_transport_failure_marked_unreachable() -> None:
    client = Client(Connection(f"http://127.0.0.1:{free_port()}", timeout=1))
    with pytest.raises(TransportFailure) as caught:
        client.get("/health")
    assert caught.value.unreachable


def test_a_reset_connection_is_a_transport_failure() -> None:
    with raw_server(resets) as url, pytest.raises(TransportFailure):
        Client(Connection(url, timeout=2)).get("/health")


def test_the_check_deadline_bounds_every_request() -> None:
    with raw_server(never_answers) as url:
        client = Client(Connection(url, timeout=30), deadline=time.monotonic() + 0.5)
        started = time.monotonic()
        with pytest.raises(TransportFailure):
            client.get("/health")
        assert time.monotonic() - started < 2
        with pytest.raises(DeadlineExceeded):
            client.get("/health")
