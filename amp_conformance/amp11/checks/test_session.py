"""The MCP session: initialize, the declared version and level, JSON-RPC frames, stdio hygiene."""

from __future__ import annotations

import json
import time
from typing import Any

from amp_conformance.amp11.channels import MCP
from amp_conformance.amp11.checks._support import frame_problems, fresh_session, mcp_exchanges
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.amp11.mcp import McpExchange, McpTransportError
from amp_conformance.amp11.schemas import VERBS_CORE, VERBS_FULL
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown


def _initialize(amp: Amp11Context) -> McpExchange:
    amp.require(MCP)
    amp.session.mcp()
    exchanges = amp.session.initialize_exchanges
    amp.evidence.exchanges.extend(e for e in exchanges if e not in amp.evidence.exchanges)
    first = exchanges[0]
    assert isinstance(first, McpExchange)
    return first


@check("AMP11-INIT-01")
def test_initialize_answers_with_server_info(amp: Amp11Context) -> None:
    """initialize is answered with protocolVersion, capabilities.tools and serverInfo name/version."""
    exchange = _initialize(amp)
    result = (exchange.message or {}).get("result") or {}
    amp.expect(isinstance(result.get("protocolVersion"), str), "`protocolVersion` is missing", exchange)
    capabilities = result.get("capabilities")
    amp.expect(
        isinstance(capabilities, dict) and isinstance(capabilities.get("tools"), dict),
        "`capabilities.tools` is missing: the server does not announce tools",
        exchange,
    )
    info = result.get("serverInfo")
    amp.expect(isinstance(info, dict), "`serverInfo` is missing", exchange)
    assert isinstance(info, dict)
    for key in ("name", "version"):
        amp.expect(isinstance(info.get(key), str) and info[key], f"`serverInfo.{key}` is missing", exchange)


@check("AMP11-INIT-02")
def test_amp_version_is_declared(amp: Amp11Context) -> None:
    """serverInfo.amp_version is a non-empty string."""
    exchange = _initialize(amp)
    version = amp.session.server_info.get("amp_version")
    amp.expect(
        isinstance(version, str) and version.strip(),
        f"serverInfo.amp_version is {json.dumps(version)}, not a non-empty string",
        exchange,
    )


@check("AMP11-INIT-03")
def test_amp_version_names_1_1(amp: Amp11Context) -> None:
    """serverInfo.amp_version names the 1.1 line."""
    exchange = _initialize(amp)
    version = amp.session.server_info.get("amp_version")
    if not isinstance(version, str):
        amp.skip("no amp_version declared (AMP11-INIT-02 reports it)")
    amp.expect(version.startswith("1.1"), f"amp_version is {shown(version)}; this suite tests v1.1", exchange)


@check("AMP11-INIT-04")
def test_amp_conformance_is_core_or_full(amp: Amp11Context) -> None:
    """serverInfo.amp_conformance is core or full."""
    exchange = _initialize(amp)
    level = amp.session.server_info.get("amp_conformance")
    amp.expect(level in ("core", "full"), f"amp_conformance is {json.dumps(level)}", exchange)
    amp.note(f"declared level: {level}")


@check("AMP11-INIT-05")
def test_server_behaves_at_its_declared_level(amp: Amp11Context) -> None:
    """The declared level is served: every Core verb works; on a full server every Full verb too."""
    level = amp.session.declared_level
    for channel in amp.channels:
        scope = amp.scope()
        memory_id = amp.encode(scope, f"level probe {amp.token()}", on=channel)
        calls: dict[str, dict[str, Any]] = {
            "amp.recall": {"scope": scope, "query": "level probe"},
            "amp.stats": {"scope": scope},
            "amp.pin": {"scope": scope, "id": memory_id},
            "amp.consolidate": {"scope": scope, "depth": "light"},
            "amp.export": {"scope": scope},
            "amp.import": {"scope": amp.scope("import"), "ndjson": ""},
            "amp.forget": {"scope": scope, "id": memory_id},
        }
        for verb, arguments in calls.items():
            result = amp.call(verb, arguments, on=channel)
            refused = (
                result.error_code == "not_supported" or (result.value or {}).get("status") == "not_supported"
            )
            if verb in VERBS_CORE:
                amp.expect(result.ok and not refused, f"Core verb {result.describe()}", result)
            elif refused:
                amp.expect(
                    level != "full", f"a full server answered not_supported: {result.describe()}", result
                )
                amp.note(f"{verb} over {channel}: not_supported (server level {level})")
    if MCP in amp.channels and level == "full":
        missing = [v for v in VERBS_FULL if v not in amp.session.tools(amp.evidence.exchanges)]
        amp.expect(not missing, f"a full server does not list {', '.join(missing)}", amp.latest)


@check("AMP11-INIT-06")
def test_initialized_notification_gets_no_reply(amp: Amp11Context) -> None:
    """notifications/initialized draws no reply frame, and tools/list works after it."""
    _initialize(amp)
    amp.session.tools(amp.evidence.exchanges)
    listing = amp.session.tools_exchange  # the first request after the handshake
    assert listing is not None
    replies = [line for line in listing.stray if _is_reply_frame(line)]
    first = replies[0][:200] if replies else ""
    amp.expect(not replies, f"a reply frame answered the notification: {first}", listing)
    result = (listing.message or {}).get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    amp.expect(isinstance(tools, list), "tools/list failed after the handshake", listing)


def _is_reply_frame(line: str) -> bool:
    try:
        frame = json.loads(line)
    except ValueError:
        return False
    return isinstance(frame, dict) and "method" not in frame and ("result" in frame or "error" in frame)


@check("AMP11-INIT-07")
def test_replies_are_json_rpc_2_with_the_request_id(amp: Amp11Context) -> None:
    """Every reply carries jsonrpc 2.0, the request's id, and exactly one of result / error."""
    amp.require(MCP)
    session = amp.session.mcp()
    log = amp.evidence.exchanges
    session.list_tools(log=log)
    session.call_tool("amp.stats", {"scope": amp.scope()}, log=log)
    session.call_tool("amp.encode", {"scope": amp.scope()}, log=log)  # an error reply
    session.request("amp/no_such_method", {}, log=log)
    for exchange in mcp_exchanges(amp):
        problems = frame_problems(exchange)
        amp.expect(not problems, f"{exchange.method} reply: {'; '.join(problems)}", exchange)


@check("AMP11-INIT-08")
def test_stdout_carries_only_json_rpc(amp: Amp11Context) -> None:
    """stdout carries only newline-delimited JSON-RPC messages (logs belong on stderr)."""
    amp.require(MCP)
    session = amp.session.mcp()
    session.list_tools(log=amp.evidence.exchanges)
    session.call_tool("amp.stats", {"scope": amp.scope()}, log=amp.evidence.exchanges)
    for frame in session.frames:
        if frame.direction == "received" and frame.text.strip() and not frame.is_json:
            amp.fail(f"stdout carried a line that is not JSON: {shown(frame.text[:200])}", None)


@check("AMP11-INIT-09")
def test_unknown_method_is_32601(amp: Amp11Context) -> None:
    """An unknown JSON-RPC method is answered with error -32601."""
    amp.require(MCP)
    exchange = amp.session.mcp().request("amp/no_such_method", {}, log=amp.evidence.exchanges)
    error = (exchange.message or {}).get("error")
    code = error.get("code") if isinstance(error, dict) else None
    amp.expect(code == -32601, f"expected error -32601, got {json.dumps(exchange.message)[:200]}", exchange)


#: Seconds INIT-10 waits for the answer to a malformed line (a reply is immediate or never comes).
MALFORMED_PROBE_WINDOW = 2.0


@check("AMP11-INIT-10")
def test_malformed_frame_is_answered_and_survived(amp: Amp11Context) -> None:
    """A line that is not JSON is answered with -32700 or -32600 (id null) and the session goes on."""
    # a short probe window: a server that drops the line silently must not cost the whole timeout
    window = min(MALFORMED_PROBE_WINDOW, amp.session.target.timeout)
    with fresh_session(amp) as session:
        try:
            probe = session.send_line(
                "{this is not json",
                method="(malformed)",
                wait_for="any",
                timeout=window,
                log=amp.evidence.exchanges,
            )
        except McpTransportError as exc:
            if exc.kind != "timeout":
                amp.fail(f"no answer to a malformed frame: {exc}", exc.exchange)
            listing = session.list_tools(log=amp.evidence.exchanges)
            alive = "result" in (listing.message or {})
            after = "and kept serving (tools/list answered)" if alive else "and tools/list failed after it"
            amp.fail(
                f"a line that is not JSON drew no answer within the {window:.1f}s probe window {after}",
                exc.exchange,
                expected="an error with code -32700 or -32600 and id null",
            )
        error = (probe.message or {}).get("error")
        code = error.get("code") if isinstance(error, dict) else None
        amp.expect(code in (-32700, -32600), f"malformed frame answered with code {code}", probe)
        amp.note(f"malformed frame answered with {code} (conflict C2)")
        amp.expect(
            (probe.message or {}).get("id") is None, "the error to a malformed frame has a non-null id", probe
        )
        listing = session.list_tools(log=amp.evidence.exchanges)
        amp.expect(
            "result" in (listing.message or {}), "tools/list failed after the malformed frame", listing
        )


@check("AMP11-INIT-11")
def test_server_exits_when_stdin_closes(amp: Amp11Context) -> None:
    """The server exits by itself soon after its stdin is closed."""
    with fresh_session(amp) as session:
        started = time.monotonic()
        session.close()
        amp.expect(
            session.stopped_by in ("stdin", "exited"),
            f"the server did not exit within 2 s of stdin closing (stopped by {session.stopped_by})",
            None,
        )
        amp.note(f"exited {time.monotonic() - started:.2f}s after stdin closed")
