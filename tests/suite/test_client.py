"""The recording client: evidence, curl lines, secrets, and behaviour on broken servers."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from amp_conformance.amp01.target import normalise_base_url
from amp_conformance.engine.client import Client, Connection
from amp_conformance.engine.exchange import MAX_RESPONSE_BYTES, Exchange
from amp_conformance.engine.outcomes import (
    AmbiguousExchange,
    CheckFailure,
    DeadlineExceeded,
    ServerUnavailable,
    TransportFailure,
)
from amp_conformance.engine.replay import ReplayContext, SecretRegistry, export_hints, key_variable
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


def test_without_a_run_the_key_and_token_headers_are_hidden_by_name() -> None:
    exchange = Exchange(
        "PATCH",
        "http://h/amp/v1/memories/x",
        {"X-AMP-Agent-ID": "agent-1", "X-AMP-API-Key": "s3cret", "Content-Type": "application/json"},
        b'{"text": "it\'s"}',
    )
    line = exchange.curl()
    assert "s3cret" not in line
    assert '"X-AMP-API-Key: ${AMP_API_KEY}"' in line
    words = shlex.split(line.replace('"X-AMP-API-Key: ${AMP_API_KEY}"', "'X-AMP-API-Key: K'"))
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
        with pytest.raises(TransportFailure, match="no complete response"):
            client.get("/health")  # two broken attempts, then /health fails too: the breaker trips
        assert connection.broken_reason is not None and "/health failed too" in connection.broken_reason
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


# curl lines: secrets by value, one variable each; bodies byte-exact --------------------------------

ADMIN = "the-admin-token-123"
KEYS = {"agent-one": "key-of-agent-one", "Agent_One": "key-of-the-other-one", "b": "kb"}


def _replay(body_dir: Path | None = None) -> ReplayContext:
    return ReplayContext.for_run(ADMIN, KEYS, None if body_dir is None else body_dir / "report.json")


def _secret_environment() -> dict[str, str]:
    return {**os.environ, **SecretRegistry.for_run(ADMIN, KEYS).environment()}


def test_each_secret_has_its_own_variable_named_after_its_agent() -> None:
    variables = SecretRegistry.for_run(ADMIN, KEYS).variables()
    assert variables == {
        "AMP_ADMIN_TOKEN": "the admin token given with --admin-token",
        "AMP_API_KEY_AGENT_ONE": "the API key of agent Agent_One",
        "AMP_API_KEY_AGENT_ONE_2": "the API key of agent agent-one",
        "AMP_API_KEY_B": "the API key of agent b",
    }
    assert key_variable("amp-keyed-agent-1") == "AMP_API_KEY_AMP_KEYED_AGENT_1"
    assert key_variable("日本") == "AMP_API_KEY_AGENT"


def test_wrong_tokens_are_printed_as_sent_and_real_secrets_as_their_variables() -> None:
    replay = _replay()
    cases = {
        ADMIN: ['"${AMP_ADMIN_TOKEN}"'],
        ADMIN.swapcase(): [shlex.quote(f"X-AMP-Admin-Token: {ADMIN.swapcase()}")],
        f"{ADMIN}-wrong": ['"${AMP_ADMIN_TOKEN}"-wrong'],
        "made-up": ["'X-AMP-Admin-Token: made-up'"],
        "": ["'X-AMP-Admin-Token;'"],
    }
    for sent, expected in cases.items():
        exchange = Exchange("POST", "http://h/amp/v1/lifecycle/run", {"X-AMP-Admin-Token": sent}, None)
        exchange.replay = replay
        line = exchange.curl()
        for fragment in expected:
            assert fragment in line, (sent, line)
        shown = exchange.masked_request_headers()["X-AMP-Admin-Token"]
        assert shown == sent.replace(ADMIN, "***")
        assert ADMIN not in json.dumps(exchange.as_dict()) + exchange.describe()


def test_a_key_is_masked_as_its_agent_variable_wherever_it_occurs() -> None:
    exchange = Exchange(
        "POST",
        "http://h/amp/v1/memories?note=key-of-agent-one",
        {"X-AMP-Agent-ID": "agent-one", "X-AMP-API-Key": "key-of-the-other-one", "X-Short": "kb"},
        b'{"text": "key-of-agent-one"}',
        status=401,
        response_body=b'{"error": {"message": "bad key key-of-the-other-one"}}',
        replay=_replay(),
    )
    line = exchange.curl()
    assert '"${AMP_API_KEY_AGENT_ONE}"' in line and '"${AMP_API_KEY_AGENT_ONE_2}"' in line
    assert '"${AMP_API_KEY_B}"' in line
    report = json.dumps(exchange.as_dict()) + exchange.describe()
    assert "key-of-agent-one" not in report and "key-of-the-other-one" not in report
    masked = {"X-AMP-Agent-ID": "agent-one", "X-AMP-API-Key": "***", "X-Short": "***"}
    assert exchange.masked_request_headers() == masked
    hints = exchange.replay.secrets.export_hints([line]) if exchange.replay else []
    assert hints == [
        "export AMP_API_KEY_AGENT_ONE_2=...  (the API key of agent agent-one)",
        "export AMP_API_KEY_AGENT_ONE=...  (the API key of agent Agent_One)",
        "export AMP_API_KEY_B=...  (the API key of agent b)",
    ]


def test_a_long_repeated_body_becomes_a_short_generator_and_is_shown_once_with_the_cut_stated() -> None:
    body = b'{"content": {"text": "' + b"a" * 70_000 + b'"}}'
    exchange = Exchange("POST", "http://h/x", {"Content-Type": "application/json"}, body, replay=_replay())
    line = exchange.curl()
    assert len(line) < 400 and "*70000" in line and line.startswith("python3 -c ")
    generator = line.split(" | curl ", 1)[0]
    assert subprocess.run(["bash", "-c", generator], capture_output=True, check=True).stdout == body
    shown = exchange.describe()
    assert "x 70000 in all, cut" in shown and len(shown) < 500
    assert "x 70000 in all, cut" in exchange.as_dict()["request_body"]


def test_a_large_body_without_structure_goes_to_a_file_next_to_the_report(tmp_path: Path) -> None:
    body = os.urandom(9000)
    with_file = Exchange("POST", "http://h/x", {}, body, replay=_replay(tmp_path))
    line = with_file.curl()
    path = Path(shlex.split(line)[-1].removeprefix("@"))
    assert path.parent == tmp_path / "report.bodies" and path.read_bytes() == body
    without = Exchange("POST", "http://h/x", {}, body, replay=_replay()).curl()
    generator = without.split(" | curl ", 1)[0]
    assert subprocess.run(["bash", "-c", generator], capture_output=True, check=True).stdout == body


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[str, str, dict[str, str], bytes]]] = []

    def _record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.seen.append((self.command, self.path, headers, body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_PATCH = do_DELETE = do_HEAD = _record

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.seen = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl binary")
def test_curl_lines_send_exactly_what_the_client_sent(recorder: str, tmp_path: Path) -> None:
    connection = Connection(recorder, timeout=5, replay=_replay(tmp_path))
    keyed = Client(connection, headers={"X-AMP-Agent-ID": "agent-one", "X-AMP-API-Key": "key-of-agent-one"})
    requests: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", "/memories", {"json_body": {"text": 'it\'s "quoted" ünïcode 🐍', "n": [1, 2]}}),
        ("PATCH", "/memories/mem_1", {"content": b"caf\xe9", "headers": {"Content-Type": None}}),
        ("POST", "/memories", {"content": b"\xef\xbb\xbf{}", "headers": {"Content-Type": "text/plain"}}),
        ("POST", "/memories/search", {"content": b""}),
        ("GET", "/memories", {"content": b'{"a": 1}', "params": {"owner_id": "o w/ner é&x=1"}}),
        ("POST", "/memories", {"content": b"[" * 10_000 + b"]" * 10_000}),
        ("POST", "/memories", {"content": b'{"t": "' + b"ab" * 40_000 + b'"}'}),
        ("POST", "/memories", {"content": os.urandom(6000)}),
        ("POST", "/lifecycle/run", {"headers": {"X-AMP-Admin-Token": ADMIN + "-x", "X-AMP-API-Key": ""}}),
        ("DELETE", "/memories/mem_2", {"headers": {"X-AMP-Admin-Token": ADMIN.swapcase()}}),
        ("HEAD", "/health", {}),
    ]
    for method, path, kwargs in requests:
        reply = keyed.request(method, path, **kwargs)
        assert reply.status == 200
    sent = list(_Recorder.seen)
    assert len(sent) == len(requests)
    environment = _secret_environment()
    for exchange, (method, path, headers, body) in zip(keyed.log, sent, strict=True):
        line = exchange.curl()
        for secret_value in (ADMIN, *KEYS.values()):
            assert secret_value not in line
        _Recorder.seen = []
        subprocess.run(["bash", "-c", line], capture_output=True, check=True, env=environment, timeout=30)
        [(r_method, r_path, r_headers, r_body)] = _Recorder.seen
        assert (r_method, r_path, r_body) == (method, path, body), line[:300]
        for name in exchange.request_headers:
            assert r_headers.get(name.lower()) == headers.get(name.lower()), (name, line[:300])
        assert ("content-type" in r_headers) == ("content-type" in headers), line[:300]


def test_export_hints_name_what_each_variable_holds_and_never_its_value() -> None:
    line = Exchange(
        "POST", "http://h/x", {"X-AMP-Admin-Token": ADMIN, "X-AMP-API-Key": "kb"}, None, replay=_replay()
    ).curl()
    hints = export_hints(_replay(), [line, line])
    assert hints == [
        "export AMP_ADMIN_TOKEN=...  (the admin token given with --admin-token)",
        "export AMP_API_KEY_B=...  (the API key of agent b)",
    ]
    assert export_hints(None, [line]) == []
    assert not any(value in " ".join(hints) for value in (ADMIN, *KEYS.values()) if len(value) > 2)


def _500_then_closes_the_kept_connection() -> Any:
    """The first connection answers a 500 and keeps alive, then closes without a word on the next
    request (what a real server did after a crash); every later connection answers 200."""
    connections = [0]

    def handle(conn: Any) -> None:
        connections[0] += 1
        first = connections[0] == 1
        conn.settimeout(5)
        for answer in [b"500 Internal Server Error", None] if first else [b"200 OK"]:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    conn.close()
                    return
                data += chunk
            if answer is None:
                conn.close()
                return
            body = b'{"ok": true}'
            head = b"HTTP/1.1 " + answer + b"\r\nContent-Type: application/json\r\n"
            conn.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        if not first:
            conn.close()

    return handle


def test_a_get_reset_before_any_byte_is_repeated_and_both_attempts_are_recorded() -> None:
    with raw_server(_500_then_closes_the_kept_connection()) as url:
        connection = Connection(url, timeout=2)
        client = Client(connection)
        assert client.get("/health").status == 500
        reply = client.get("/memories")
    assert reply.status == 200
    assert connection.requests == 3
    assert len(client.log) == 3
    first, repeated = client.log[1], client.log[2]
    assert repeated.retry_of is first and first.status is None and first.broken == "reset"
    assert repeated.describe().startswith("! attempt 1 broke (reset)")
    assert first.as_dict()["error"] == first.error  # the failed attempt is in the report's exchanges


def test_a_post_reset_before_any_byte_is_ambiguous_and_never_sent_again() -> None:
    with raw_server(_500_then_closes_the_kept_connection()) as url:
        connection = Connection(url, timeout=2)
        client = Client(connection)
        assert client.get("/health").status == 500
        with pytest.raises(AmbiguousExchange) as caught:
            client.post("/memories", {"content": {"text": "x"}})
    assert connection.requests == 2 and len(client.log) == 2
    assert caught.value.exchange is client.log[1] and client.log[1].status is None


def test_a_connection_reset_on_every_attempt_is_one_transport_failure() -> None:
    with raw_server(resets) as url:
        connection = Connection(url, timeout=2)
        client = Client(connection)
        with pytest.raises(TransportFailure) as caught:
            client.get("/health")
    assert connection.requests == 4  # three attempts, then the breaker's GET /health
    assert caught.value.exchange is not None and len(caught.value.exchange.attempts) == 3
    assert len(client.log) == 3
