"""Helpers shared by the AMP v1.1 checks."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from amp_conformance.amp11.channels import MCP
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.amp11.mcp import McpExchange, McpSession, McpTransportError
from amp_conformance.engine.text import shown


@contextmanager
def fresh_session(amp: Amp11Context, *, initialize: bool = True) -> Iterator[McpSession]:
    """A server process of this check's own (for probes that could disturb the shared session)."""
    amp.require(MCP)
    target = amp.session.target
    assert target.mcp_command is not None
    amp.session.mcp()  # the shared session works, so a failure below is about a second process
    session = McpSession(target.mcp_command, timeout=target.timeout, env=target.env)
    try:
        try:
            session.start()
            if initialize:
                session.initialize(log=amp.evidence.exchanges)
        except McpTransportError as exc:
            if exc.kind in ("exited", "start"):
                amp.skip(f"a second server process could not be started for this probe ({exc})")
            raise
        yield session
    finally:
        session.close()


def mcp_exchanges(amp: Amp11Context) -> list[McpExchange]:
    return [e for e in amp.evidence.exchanges if isinstance(e, McpExchange)]


def frame_problems(exchange: McpExchange) -> list[str]:
    """How a reply frame breaks JSON-RPC 2.0 (AMP11-INIT-07)."""
    message = exchange.message
    if message is None:
        return []
    problems = []
    if message.get("jsonrpc") != "2.0":
        problems.append(f'`jsonrpc` is {shown(message.get("jsonrpc"))}, not "2.0"')
    reply_id = message.get("id")
    if type(reply_id) is not int or reply_id != exchange.rpc_id:
        problems.append(f"`id` is {json.dumps(reply_id)}, the request's id was {exchange.rpc_id}")
    if ("result" in message) == ("error" in message):
        problems.append("the reply must carry exactly one of `result` and `error`")
    return problems


def annotations_of(tool: dict[str, Any]) -> dict[str, Any]:
    found = tool.get("annotations")
    return found if isinstance(found, dict) else {}


def row(scope: dict[str, Any], content: str, **fields: Any) -> dict[str, Any]:
    """An MXF row (a MemoryResult) with a fresh id."""
    return {
        "id": f"mxf-{uuid.uuid4().hex}",
        "content": content,
        "score": 0.0,
        "timestamp": "2026-05-30T12:00:00Z",
        "status": "active",
        "source": "external",
        "scope": scope,
        **fields,
    }


def ndjson(*rows: dict[str, Any] | str) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows)
