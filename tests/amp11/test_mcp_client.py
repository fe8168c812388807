"""The MCP frame client: id matching, tolerance, and bounded, clear endings for misbehaving servers."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from amp_conformance.amp11.mcp import McpSession, McpTransportError
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import ServerUnavailable, ToolError

FAKE = str(Path(__file__).with_name("fake_mcp.py"))
TIMEOUT = 1.0
BOUND = 2 * TIMEOUT + 10


def fake(mode: str) -> list[str]:
    return [sys.executable, FAKE, mode]


def inline(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.fixture
def sessions() -> Iterator[list[McpSession]]:
    started: list[McpSession] = []
    yield started
    for session in started:
        session.close()


def open_session(sessions: list[McpSession], command: list[str]) -> McpSession:
    session = McpSession(command, timeout=TIMEOUT)
    sessions.append(session)
    session.start()
    return session


def test_handshake_and_call_record_every_frame(sessions: list[McpSession]) -> None:
    session = open_session(sessions, fake("good"))
    log: list[Exchange] = []
    session.initialize(log=log)
    assert session.server_info["amp_conformance"] == "core"
    call = session.call_tool("echo", {"text": "héllo 🌍"}, log=log)
    assert call.message is not None
    content = call.message["result"]["content"][0]["text"]
    assert json.loads(content) == {"text": "héllo 🌍"}
    # the notification sent before each reply is kept as evidence, not mistaken for the reply
    assert any("notifications/message" in line for line in call.received)
    assert [e.method for e in log] == ["initialize", "notifications/initialized", "tools/call"]
    directions = [f.direction for f in session.frames]
    assert directions.count("sent") == 3 and directions.count("received") >= 4
    # the server's stderr is read by a thread of its own: under load its line may come just after the reply
    deadline = time.monotonic() + 5
    while "log: handling tools/call" not in session.stderr_tail() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "log: handling tools/call" in session.stderr_tail()
    assert "printf" in call.curl() and FAKE in call.curl()
    assert "> " in call.describe() and "< " in call.describe()


def test_reply_with_another_id_is_not_taken_for_the_answer(sessions: list[McpSession]) -> None:
    session = open_session(sessions, fake("wrong-id"))
    with pytest.raises(McpTransportError) as caught:
        session.request("initialize", {})
    assert caught.value.kind == "timeout"
    assert caught.value.exchange is not None and caught.value.exchange.stray, "the mismatched reply is kept"
    assert "not replies" in str(caught.value)


def test_string_echo_of_the_id_is_accepted_and_visible(sessions: list[McpSession]) -> None:
    session = open_session(sessions, fake("string-id"))
    exchange = session.initialize()
    assert exchange.message is not None and exchange.message["id"] == "1"


def test_server_ping_is_answered(sessions: list[McpSession]) -> None:
    session = open_session(sessions, fake("ping"))
    session.initialize()
    call = session.call_tool("echo", {"n": 1})
    assert call.message is not None and "result" in call.message
    assert any('"ping"' in f.text for f in session.frames if f.direction == "received")


def test_non_json_lines_are_tolerated_and_reported(sessions: list[McpSession]) -> None:
    session = open_session(sessions, fake("noisy"))
    exchange = session.initialize()
    assert exchange.stray == ["banner: not json"]


def test_a_server_that_hangs_ends_in_time(sessions: list[McpSession]) -> None:
    session = open_session(sessions, inline("import time; time.sleep(600)"))
    started = time.monotonic()
    with pytest.raises(McpTransportError) as caught:
        session.initialize()
    assert caught.value.kind == "timeout" and "no reply within 1.0s" in str(caught.value)
    with pytest.raises(ServerUnavailable):
        session.list_tools()
    session.close()
    assert time.monotonic() - started < BOUND
    assert not session.alive


def test_a_server_that_exits_at_once_is_reported_with_its_code(sessions: list[McpSession]) -> None:
    session = open_session(sessions, inline("import sys; print('boom', file=sys.stderr); sys.exit(3)"))
    started = time.monotonic()
    with pytest.raises(McpTransportError) as caught:
        session.initialize()
    assert caught.value.kind == "exited"
    assert "code 3" in str(caught.value) and "boom" in str(caught.value)
    assert time.monotonic() - started < BOUND


def test_a_server_that_prints_garbage_ends_in_time(sessions: list[McpSession]) -> None:
    code = "import time; print('this is not JSON-RPC', flush=True); time.sleep(600)"
    session = open_session(sessions, inline(code))
    started = time.monotonic()
    with pytest.raises(McpTransportError) as caught:
        session.initialize()
    message = str(caught.value)
    assert "this is not JSON-RPC" in message and "no reply" in message
    session.close()
    assert time.monotonic() - started < BOUND


def test_a_server_that_dies_mid_session(sessions: list[McpSession]) -> None:
    session = open_session(sessions, fake("die-on-call"))
    session.initialize()
    with pytest.raises(McpTransportError) as caught:
        session.call_tool("echo", {})
    assert caught.value.kind == "exited" and "code 4" in str(caught.value)
    assert caught.value.exchange is not None and caught.value.exchange.error
    with pytest.raises(ServerUnavailable):
        session.call_tool("echo", {})


def test_a_command_that_does_not_exist(sessions: list[McpSession]) -> None:
    session = McpSession(["/nonexistent/amp-server-binary"], timeout=TIMEOUT)
    with pytest.raises(ToolError, match="could not start"):
        session.start()


def test_close_kills_the_process_group(sessions: list[McpSession]) -> None:
    code = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print(child.pid, file=sys.stderr, flush=True)\n"
        "time.sleep(600)\n"
    )
    session = open_session(sessions, inline(code))
    deadline = time.monotonic() + 5
    while not session.stderr_tail() and time.monotonic() < deadline:
        time.sleep(0.05)
    child_pid = int(session.stderr_tail().split()[-1])
    started = time.monotonic()
    session.close()
    assert time.monotonic() - started < 10
    assert not session.alive
    assert _gone_or_zombie(child_pid), "the child in the server's process group survived"


def _gone_or_zombie(pid: int) -> bool:
    """True once ``pid`` is dead (a zombie left for an init that does not reap counts as dead)."""
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        status = Path(f"/proc/{pid}/status")
        if status.exists() and "State:\tZ" in status.read_text():
            return True
        time.sleep(0.05)
    return False


def test_exchange_in_the_report_holds_every_frame(sessions: list[McpSession]) -> None:
    import jsonschema

    from amp_conformance.engine.resources import load_contract

    session = open_session(sessions, fake("noisy"))
    exchange = session.initialize()
    entry = exchange.as_dict()
    schema = load_contract("report.schema.json")
    jsonschema.validate(entry, {"$defs": schema["$defs"], "$ref": "#/$defs/exchange"})
    assert entry["method"] == "initialize" and entry["url"] == "mcp:initialize"
    assert '"method": "initialize"' in (entry["request_body"] or "")
    body = entry["response_body"]
    assert "notifications/message" in body and "banner: not json" in body and '"serverInfo"' in body
    assert entry["curl"].startswith("printf ")


def test_a_flooding_server_is_cut_short_but_the_reply_kept(sessions: list[McpSession]) -> None:
    code = (
        "import json, sys\n"
        "line = sys.stdin.readline()\n"
        "for n in range(3000):\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'method': 'notifications/message', 'params': {'n': n}}))\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': json.loads(line)['id'], 'result': {'ok': True}}))\n"
        "sys.stdout.flush()\n"
        "sys.stdin.read()\n"
    )
    session = open_session(sessions, inline(code))
    exchange = session.request("flood", {})
    assert exchange.message is not None and exchange.message["result"] == {"ok": True}
    assert exchange.dropped > 2000 and len(exchange.received) < 600
    assert '"ok": true' in exchange.received[-1] and "lines not kept" in exchange.received[-2]
