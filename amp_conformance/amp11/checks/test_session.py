"""The MCP session: initialize, the declared version and level, JSON-RPC frames, stdio hygiene."""

from __future__ import annotations

import json
import time
from typing import Any

from amp_conformance.amp11.channels import MCP
from amp_conformance.amp11.checks._support import frame_problems, fresh_session, mcp_exchanges
from amp_conformance.amp11.context import Amp11
from amp_conformance.amp11.mcp import McpExchange, McpTransportError
from amp_conformance.amp11.schemas import VERBS_CORE, VERBS_FULL
from amp_conformance.engine.marking import check


def _initialize(amp11: Amp11) -> McpExchange:
    amp11.require(MCP)
    amp11.session.mcp()
    exchanges = amp11.session.initialize_exchanges
    amp11.evidence.exchanges.extend(e for e in exchanges if e not in amp11.evidence.exchanges)
    first = exchanges[0]
    assert isinstance(first, McpExchange)
    return first


@check("AMP11-INIT-01")
def test_initialize_answers_with_server_info(amp11: Amp11) -> None:
    """initialize is answered with protocolVersion, capabilities.tools and serverInfo name/version."""
    exchange = _initialize(amp11)
    result = (exchange.message or {}).get("result") or {}
    amp11.expect(isinstance(result.get("protocolVersion"), str), "`protocolVersion` is missing", exchange)
    capabilities = result.get("capabilities")
    amp11.expect(
        isinstance(capabilities, dict) and isinstance(capabilities.get("tools"), dict),
        "`capabilities.tools` is missing: the server does not announce tools",
        exchange,
    )
    info = result.get("serverInfo")
    amp11.expect(isinstance(info, dict), "`serverInfo` is missing", exchange)
    assert isinstance(info, dict)
    for key in ("name", "version"):
        amp11.expect(isinstance(info.get(key), str) and info[key], f"`serverInfo.{key}` is missing", exchange)


@check("AMP11-INIT-02")
def test_amp_version_is_declared(amp11: Amp11) -> None:
    """serverInfo.amp_version is a non-empty string."""
    exchange = _initialize(amp11)
    version = amp11.session.server_info.get("amp_version")
    amp11.expect(
        isinstance(version, str) and version.strip(),
        f"serverInfo.amp_version is {json.dumps(version)}, not a non-empty string",
        exchange,
    )


@check("AMP11-INIT-03")
def test_amp_version_names_1_1(amp11: Amp11) -> None:
    """serverInfo.amp_version names the 1.1 line."""
    exchange = _initialize(amp11)
    version = amp11.session.server_info.get("amp_version")
    if not isinstance(version, str):
        amp11.skip("no amp_version declared (AMP11-INIT-02 reports it)")
    amp11.expect(version.startswith("1.1"), f"amp_version is {version!r}; this suite tests v1.1", exchange)


@check("AMP11-INIT-04")
def test_amp_conformance_is_core_or_full(amp11: Amp11) -> None:
    """serverInfo.amp_conformance is core or full."""
    exchange = _initialize(amp11)
    level = amp11.session.server_info.get("amp_conformance")
    amp11.expect(level in ("core", "full"), f"amp_conformance is {json.dumps(level)}", exchange)
    amp11.note(f"declared level: {level}")


@check("AMP11-INIT-05")
def test_server_behaves_at_its_declared_level(amp11: Amp11) -> None:
    """The declared level is served: every Core verb works; on a full server every Full verb too."""
    level = amp11.session.declared_level
    for channel in amp11.channels:
        scope = amp11.scope()
        memory_id = amp11.encode(scope, f"level probe {amp11.token()}", on=channel)
        calls: dict[str, dict[str, Any]] = {
            "amp.recall": {"scope": scope, "query": "level probe"},
            "amp.stats": {"scope": scope},
            "amp.pin": {"scope": scope, "id": memory_id},
            "amp.consolidate": {"scope": scope, "depth": "light"},
            "amp.export": {"scope": scope},
            "amp.import": {"scope": amp11.scope("import"), "ndjson": ""},
            "amp.forget": {"scope": scope, "id": memory_id},
        }
        for verb, arguments in calls.items():
            result = amp11.call(verb, arguments, on=channel)
            refused = (
                result.error_code == "not_supported" or (result.value or {}).get("status") == "not_supported"
            )
            if verb in VERBS_CORE:
                amp11.expect(result.ok and not refused, f"Core verb {result.describe()}", result)
            elif refused:
                amp11.expect(
                    level != "full", f"a full server answered not_supported: {result.describe()}", result
                )
                amp11.note(f"{verb} over {channel}: not_supported (server level {level})")
    if MCP in amp11.channels and level == "full":
        missing = [v for v in VERBS_FULL if v not in amp11.session.tools(amp11.evidence.exchanges)]
        amp11.expect(not missing, f"a full server does not list {', '.join(missing)}")


@check("AMP11-INIT-06")
def test_initialized_notification_gets_no_reply(amp11: Amp11) -> None:
    """notifications/initialized draws no reply frame, and tools/list works after it."""
    _initialize(amp11)
    amp11.session.tools(amp11.evidence.exchanges)
    listing = amp11.session.tools_exchange  # the first request after the handshake
    assert listing is not None
    replies = [line for line in listing.stray if _is_reply_frame(line)]
    shown = replies[0][:200] if replies else ""
    amp11.expect(not replies, f"a reply frame answered the notification: {shown}", listing)
    result = (listing.message or {}).get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    amp11.expect(isinstance(tools, list), "tools/list failed after the handshake", listing)


def _is_reply_frame(line: str) -> bool:
    try:
        frame = json.loads(line)
    except ValueError:
        return False
    return isinstance(frame, dict) and "method" not in frame and ("result" in frame or "error" in frame)


@check("AMP11-INIT-07")
def test_replies_are_json_rpc_2_with_the_request_id(amp11: Amp11) -> None:
    """Every reply carries jsonrpc 2.0, the request's id, and exactly one of result / error."""
    amp11.require(MCP)
    session = amp11.session.mcp()
    log = amp11.evidence.exchanges
    session.list_tools(log=log)
    session.call_tool("amp.stats", {"scope": amp11.scope()}, log=log)
    session.call_tool("amp.encode", {"scope": amp11.scope()}, log=log)  # an error reply
    session.request("amp/no_such_method", {}, log=log)
    for exchange in mcp_exchanges(amp11):
        problems = frame_problems(exchange)
        amp11.expect(not problems, f"{exchange.method} reply: {'; '.join(problems)}", exchange)


@check("AMP11-INIT-08")
def test_stdout_carries_only_json_rpc(amp11: Amp11) -> None:
    """stdout carries only newline-delimited JSON-RPC messages (logs belong on stderr)."""
    amp11.require(MCP)
    session = amp11.session.mcp()
    session.list_tools(log=amp11.evidence.exchanges)
    session.call_tool("amp.stats", {"scope": amp11.scope()}, log=amp11.evidence.exchanges)
    for frame in session.frames:
        if frame.direction == "received" and frame.text.strip() and not frame.is_json:
            amp11.fail(f"stdout carried a line that is not JSON: {frame.text[:200]!r}", None)


@check("AMP11-INIT-09")
def test_unknown_method_is_32601(amp11: Amp11) -> None:
    """An unknown JSON-RPC method is answered with error -32601."""
    amp11.require(MCP)
    exchange = amp11.session.mcp().request("amp/no_such_method", {}, log=amp11.evidence.exchanges)
    error = (exchange.message or {}).get("error")
    code = error.get("code") if isinstance(error, dict) else None
    amp11.expect(code == -32601, f"expected error -32601, got {json.dumps(exchange.message)[:200]}", exchange)


#: Seconds INIT-10 waits for the answer to a malformed line (a reply is immediate or never comes).
MALFORMED_PROBE_WINDOW = 2.0


@check("AMP11-INIT-10")
def test_malformed_frame_is_answered_and_survived(amp11: Amp11) -> None:
    """A line that is not JSON is answered with -32700 or -32600 (id null) and the session goes on."""
    # a short probe window: a server that drops the line silently must not cost the whole timeout
    window = min(MALFORMED_PROBE_WINDOW, amp11.session.target.timeout)
    with fresh_session(amp11) as session:
        try:
            probe = session.send_line(
                "{this is not json",
                method="(malformed)",
                wait_for="any",
                timeout=window,
                log=amp11.evidence.exchanges,
            )
        except McpTransportError as exc:
            if exc.kind != "timeout":
                amp11.fail(f"no answer to a malformed frame: {exc}", exc.exchange)
            listing = session.list_tools(log=amp11.evidence.exchanges)
            alive = "result" in (listing.message or {})
            after = "and kept serving (tools/list answered)" if alive else "and tools/list failed after it"
            amp11.fail(
                f"a line that is not JSON drew no answer within the {window:.1f}s probe window {after}",
                exc.exchange,
                expected="an error with code -32700 or -32600 and id null",
            )
        error = (probe.message or {}).get("error")
        code = error.get("code") if isinstance(error, dict) else None
        amp11.expect(code in (-32700, -32600), f"malformed frame answered with code {code}", probe)
        amp11.note(f"malformed frame answered with {code} (conflict C2)")
        amp11.expect(
            (probe.message or {}).get("id") is None, "the error to a malformed frame has a non-null id", probe
        )
        listing = session.list_tools(log=amp11.evidence.exchanges)
        amp11.expect(
            "result" in (listing.message or {}), "tools/list failed after the malformed frame", listing
        )


@check("AMP11-INIT-11")
def test_server_exits_when_stdin_closes(amp11: Amp11) -> None:
    """The server exits by itself soon after its stdin is closed."""
    with fresh_session(amp11) as session:
        started = time.monotonic()
        session.close()
        amp11.expect(
            session.stopped_by in ("stdin", "exited"),
            f"the server did not exit within 2 s of stdin closing (stopped by {session.stopped_by})",
            None,
        )
        amp11.note(f"exited {time.monotonic() - started:.2f}s after stdin closed")
