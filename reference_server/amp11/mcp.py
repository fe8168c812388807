"""The MCP channel: JSON-RPC 2.0 frames, one per line, over stdin/stdout (the MCP stdio transport).

Hand-written on purpose: this is the server under test, and its faults reach into the frames themselves.
Verb failures are JSON-RPC error frames whose ``code`` follows spec §3.5 and whose ``data`` is the
``AmpErrorData`` object; successes are ``tools/call`` results carrying the verb's result both as
``structuredContent`` and as a JSON text block, with ``isError: false``. Requests sent before
``initialize`` are served anyway (a lenient server). Nothing but frames is written to stdout; logs go to
stderr.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, TextIO

from reference_server.amp11 import wire
from reference_server.amp11.backend import Backend
from reference_server.amp11.context import AMP_VERSION, SERVER_NAME, SERVER_VERSION
from reference_server.amp11.errors import (
    INVALID_FRAME,
    JSONRPC_CODES,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    AmpError,
)
from reference_server.amp11.schemas import input_schema

log = logging.getLogger("amp11.reference.mcp")

PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
DEFAULT_PROTOCOL = "2025-03-26"  # the revision that defines tool annotations (spec §3.4)
GARBAGE = "<<amp11-reference: this line is deliberately not JSON>>"
EXIT_STATUS = 3
_INSTRUCTIONS = {
    "full": "In-memory AMP v1.1 reference server (Full level, plus the v1.2-draft verbs).",
    "core": "In-memory AMP v1.1 reference server (Core level: encode, recall, forget, stats).",
}


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.payload: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            self.payload["data"] = data


def _frame_error(frame_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": frame_id, "error": {"code": code, "message": message}}


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class McpSession:
    """The state of one MCP connection; ``handle_line`` maps an input line to the line to answer (or None)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.initialized = False
        self.client_ready = False

    def handle_line(self, line: str) -> str | None:
        if not line.strip():
            return None
        try:
            frame = wire.loads(line)
        except ValueError:
            return json.dumps(_frame_error(None, PARSE_ERROR, "Parse error: the line is not JSON"))
        try:
            response = self.handle(frame)
        except Exception:  # a bug here must cost one answer, not the session
            log.exception("unexpected failure answering a frame")
            frame_id = frame.get("id") if isinstance(frame, dict) and _valid_id(frame.get("id")) else None
            response = _frame_error(frame_id, -32603, "Internal error")
        if response is not None and "id" in response and self.backend.faults.on("response-id-stringified"):
            response["id"] = None if response["id"] is None else str(response["id"])
        return None if response is None else json.dumps(response, ensure_ascii=False)

    def handle(self, frame: Any) -> dict[str, Any] | None:
        if isinstance(frame, list):
            return _frame_error(None, INVALID_FRAME, "Invalid Request: JSON-RPC batches are not supported")
        if not isinstance(frame, dict):
            return _frame_error(None, INVALID_FRAME, "Invalid Request: a frame must be a JSON object")
        if "method" not in frame and ("result" in frame or "error" in frame):
            return None  # a response to a request we never sent: nothing to answer
        has_id = "id" in frame
        frame_id = frame.get("id")
        if has_id and not _valid_id(frame_id):
            return _frame_error(None, INVALID_FRAME, "Invalid Request: id must be a string or an integer")
        method = frame.get("method")
        if frame.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return _frame_error(frame_id, INVALID_FRAME, "Invalid Request: not a JSON-RPC 2.0 request")
        params = frame.get("params", {})
        if not has_id:
            self._notification(method)
            if method == "notifications/initialized" and self.backend.faults.on("notification-answered"):
                return {"jsonrpc": "2.0", "id": None, "result": {}}
            return None
        try:
            if params is not None and not isinstance(params, dict):
                raise RpcError(-32602, "Invalid params: params must be an object")
            result = self._request(method, params or {})
        except RpcError as exc:
            return {"jsonrpc": "2.0", "id": frame_id, "error": exc.payload}
        return {"jsonrpc": "2.0", "id": frame_id, "result": result}

    def _notification(self, method: str) -> None:
        if method == "notifications/initialized":
            self.client_ready = True

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return self._initialize(params)
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self._tools()}
        if method == "tools/call":
            return self._call(params)
        code = INVALID_FRAME if self.backend.faults.on("unknown-method-wrong-code") else METHOD_NOT_FOUND
        raise RpcError(code, f"Method not found: {method}")

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        wanted = params.get("protocolVersion")
        self.initialized = True
        info: dict[str, Any] = {
            "name": SERVER_NAME,
            "version": SERVER_VERSION,
            "amp_version": AMP_VERSION,
            "amp_conformance": self.backend.settings.level,
            "amp.legacy_private_strategy": "A",
        }
        if self.backend.faults.on("serverinfo-no-amp-version"):
            del info["amp_version"]
        return {
            "protocolVersion": wanted if wanted in PROTOCOL_VERSIONS else DEFAULT_PROTOCOL,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": info,
            "instructions": _INSTRUCTIONS[self.backend.settings.level],
        }

    def _tools(self) -> list[dict[str, Any]]:
        faults = self.backend.faults
        tools = []
        for verb in self.backend.verbs():
            tool: dict[str, Any] = {
                "name": verb.name,
                "description": verb.description,
                "inputSchema": input_schema(verb.name),
            }
            if not faults.on("annotations-missing"):
                hints = dict(verb.annotations)
                if verb.name == "amp.forget" and faults.on("forget-not-destructive"):
                    hints["destructiveHint"] = False
                tool["annotations"] = hints
            tools.append(tool)
        return tools

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise RpcError(-32602, "Invalid params: tools/call needs a tool name")
        if self.backend.faults.on("invalid-input-crashes-mcp"):
            self.backend.crash_on_type_error(name, params.get("arguments", {}))
        try:
            result = self.backend.call(name, params.get("arguments", {}))
        except AmpError as exc:
            faults = self.backend.faults
            code = JSONRPC_CODES[exc.code]
            if exc.code == "invalid_request" and faults.on("invalid-request-wrong-rpc-code"):
                code = -32603
            raise RpcError(
                code, exc.message, None if faults.on("error-data-missing") else exc.data()
            ) from None
        return {
            "content": [{"type": "text", "text": json.dumps(result, ensure_ascii=False)}],
            "structuredContent": result,
            "isError": False,
        }


def serve_mcp(backend: Backend, stdin: TextIO, stdout: TextIO) -> int:
    """Answer frames from ``stdin`` on ``stdout`` until end of input; the process exit status."""
    faults = backend.faults
    if faults.on("mcp-exit"):
        log.error("mcp-exit: exiting at once")
        return EXIT_STATUS
    session = McpSession(backend)
    for line in stdin:
        answer = session.handle_line(line)
        if answer is None:
            continue
        stdout.write((GARBAGE if faults.on("mcp-garbage") else answer) + "\n")
        stdout.flush()
        if session.initialized and faults.on("mcp-hang"):
            log.error("mcp-hang: answering nothing more")
            threading.Event().wait()
    return 0
