"""The MCP channel at the frame level: handshake, tool list, annotations, JSON-RPC errors."""

from __future__ import annotations

import io
import json
from typing import Any

from jsonschema import Draft202012Validator

from reference_server.amp11 import AMP_VERSION, Backend, Faults, Store, serve_mcp
from tests.reference_server_amp11.helpers import Server

HINTS = {
    "amp.encode": (False, False, False, False),
    "amp.recall": (True, False, True, False),
    "amp.forget": (False, True, True, False),
    "amp.consolidate": (False, False, False, True),
    "amp.pin": (False, False, True, False),
    "amp.stats": (True, False, True, False),
    "amp.export": (True, False, True, False),
    "amp.import": (False, False, False, False),
    "amp.update": (False, False, True, False),
    "amp.batch_encode": (False, False, False, False),
}


def test_initialize_declares_the_amp_level(server: Server) -> None:
    answer = server.mcp.request(
        "initialize",
        {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )
    result = answer["result"]
    assert answer["jsonrpc"] == "2.0" and answer["id"] == 1
    assert result["protocolVersion"] == "2024-11-05"
    assert result["capabilities"]["tools"] == {"listChanged": False}
    info = result["serverInfo"]
    assert info["amp_version"] == AMP_VERSION == "1.1" and info["amp_conformance"] == "full"
    assert info["name"] and info["version"]
    unknown = server.mcp.request("initialize", {"protocolVersion": "1999-01-01"})
    assert unknown["result"]["protocolVersion"] == "2025-03-26"


def test_notifications_get_no_answer(server: Server) -> None:
    assert server.mcp.frame({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert server.mcp.session.client_ready
    assert server.mcp.frame({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}}) is None
    assert server.mcp.frame({"jsonrpc": "2.0", "id": 7, "result": {}}) is None
    assert server.mcp.request("ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_tools_list_publishes_schemas_and_annotations(server: Server) -> None:
    tools = server.mcp.request("tools/list")["result"]["tools"]
    assert sorted(tool["name"] for tool in tools) == sorted(HINTS)
    for tool in tools:
        Draft202012Validator.check_schema(tool["inputSchema"])
        assert {"scope", "agent_id"} <= set(tool["inputSchema"]["properties"])
        assert tool["description"]
        hints = tool["annotations"]
        assert (
            hints["readOnlyHint"],
            hints["destructiveHint"],
            hints["idempotentHint"],
            hints["openWorldHint"],
        ) == HINTS[tool["name"]]


def test_published_schema_accepts_what_the_server_accepts(server: Server) -> None:
    tools = {tool["name"]: tool for tool in server.mcp.request("tools/list")["result"]["tools"]}
    encode = Draft202012Validator(tools["amp.encode"]["inputSchema"])
    assert encode.is_valid({"scope": {"user_id": "u"}, "content": "x"})
    assert encode.is_valid({"agent_id": "a", "content": "x", "private": True})
    assert not encode.is_valid({"scope": {"session_id": "s"}, "content": "x"})
    assert not encode.is_valid({"content": "x"})


def _code(answer: dict[str, Any] | None) -> int:
    assert answer is not None
    return int(answer["error"]["code"])


def test_jsonrpc_errors_for_bad_frames(server: Server) -> None:
    mcp = server.mcp
    parse = json.loads(mcp.session.handle_line("{oops") or "")
    assert parse == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": parse["error"]["message"]},
    }
    assert _code(mcp.frame([1, 2])) == _code(mcp.frame("text")) == -32600
    assert mcp.frame({"jsonrpc": "1.0", "id": 3, "method": "ping"}) == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32600, "message": "Invalid Request: not a JSON-RPC 2.0 request"},
    }
    assert _code(mcp.frame({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"})) == -32600
    assert mcp.request("no/such/method")["error"]["code"] == -32601
    assert _code(mcp.frame({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": [1]})) == -32602
    assert mcp.request("tools/call", {"arguments": {}})["error"]["code"] == -32602
    assert mcp.session.handle_line("   \n") is None


def test_verb_errors_are_jsonrpc_errors_with_amp_data(server: Server) -> None:
    answer = server.mcp.request("tools/call", {"name": "amp.encode", "arguments": {"agent_id": "a"}})
    error = answer["error"]
    assert error["code"] == -32602
    assert error["data"] == {"amp_error_code": "invalid_request", "message": error["message"]}
    unknown = server.mcp.request("tools/call", {"name": "amp/nonexistent", "arguments": {}})
    assert unknown["error"]["data"]["amp_error_code"] == "invalid_request"
    not_object = server.mcp.request("tools/call", {"name": "amp.stats", "arguments": [1]})
    assert not_object["error"]["code"] == -32602


def test_serve_mcp_over_text_streams() -> None:
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "amp.stats", "arguments": {"agent_id": "a"}},
        },
    ]
    stdin = io.StringIO("".join(json.dumps(frame) + "\n" for frame in frames) + "not json\n")
    stdout = io.StringIO()
    assert serve_mcp(Backend(Store()), stdin, stdout) == 0
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2, None]
    assert answers[1]["result"]["structuredContent"]["memory_count"] == 0


def test_serve_mcp_garbage_and_exit_modes() -> None:
    stdout = io.StringIO()
    stdin = io.StringIO(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + "\n")
    assert serve_mcp(Backend(Store(), Faults.parse("mcp-garbage")), stdin, stdout) == 0
    line = stdout.getvalue().strip()
    assert line and not line.startswith("{")
    silent = io.StringIO()
    assert serve_mcp(Backend(Store(), Faults.parse("mcp-exit")), io.StringIO("{}\n"), silent) == 3
    assert silent.getvalue() == ""
