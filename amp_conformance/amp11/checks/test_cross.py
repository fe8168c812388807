"""Both channels are one store (§1.3) and speak one error vocabulary (§3.5)."""

from __future__ import annotations

from typing import Any

from amp_conformance.amp11.channels import MCP, REST
from amp_conformance.amp11.checks._support import ndjson
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown

PAIRS = ((MCP, REST), (REST, MCP))


@check("AMP11-XCH-01")
def test_written_on_one_channel_read_on_the_other(amp: Amp11Context) -> None:
    """A memory encoded over one channel is recalled over the other with the same fields."""
    amp.require(MCP, REST)
    for writer, reader in PAIRS:
        scope = {**amp.scope(), "user_id": amp.session.unique("user")}
        token = amp.token()
        metadata = {"amp.confidence": 0.5, "via": writer}
        memory_id = amp.encode(scope, f"crossing {token} ✓", on=writer, metadata=metadata)
        written = amp.find(scope, memory_id, token, on=writer)
        read = amp.find(scope, memory_id, token, on=reader)
        amp.expect(read is not None, f"written over {writer}, not found over {reader}", read)
        assert read is not None and written is not None
        for field in ("id", "content", "scope", "metadata", "status", "timestamp"):
            amp.expect(
                read.get(field) == written.get(field),
                f"{field} differs: {shown(written.get(field))} over {writer}, "
                f"{shown(read.get(field))} over {reader}",
                read,
            )


@check("AMP11-XCH-02")
def test_forgotten_on_one_channel_gone_on_the_other(amp: Amp11Context) -> None:
    """A memory forgotten over one channel is gone for the other."""
    amp.require(MCP, REST)
    for writer, reader in PAIRS:
        scope = amp.scope()
        token = amp.token()
        memory_id = amp.encode(scope, f"cross forget {token}", on=reader, remember=False)
        amp.ok("amp.forget", {"scope": scope, "id": memory_id}, on=writer)
        amp.expect(
            amp.find(scope, memory_id, token, on=reader) is None,
            f"forgotten over {writer}, still recalled over {reader}",
            amp.latest,
        )


@check("AMP11-XCH-03")
def test_stats_agree(amp: Amp11Context) -> None:
    """Both channels report the same amp.stats for a scope."""
    amp.require(MCP, REST)
    scope = amp.scope()
    amp.encode(scope, f"count mcp {amp.token()}", on=MCP)
    amp.encode(scope, f"count rest {amp.token()}", on=REST)
    over_mcp, over_rest = amp.count(scope, on=MCP), amp.count(scope, on=REST)
    amp.expect(
        over_mcp == over_rest == 2, f"memory_count {over_mcp} over MCP, {over_rest} over REST", amp.latest
    )


@check("AMP11-XCH-04")
def test_same_error_on_both_channels(amp: Amp11Context) -> None:
    """The same invalid request draws the same amp_error_code on both channels."""
    amp.require(MCP, REST)
    scope = amp.scope()
    requests: list[tuple[str, dict[str, Any]]] = [
        ("amp.encode", {"scope": scope}),
        ("amp.encode", {"scope": {"app_id": "only-refining"}, "content": "x"}),
        ("amp.recall", {"scope": scope, "query": "x", "top_k": 0}),
        ("amp.forget", {"scope": scope, "id": "amp11-never-issued"}),
    ]
    for verb, arguments in requests:
        over_mcp = amp.call(verb, arguments, on=MCP)
        over_rest = amp.call(verb, arguments, on=REST)
        mcp_answer = over_mcp.error_code or (over_mcp.value or {}).get("status")
        rest_answer = over_rest.error_code or (over_rest.value or {}).get("status")
        amp.expect(
            mcp_answer == rest_answer,
            f"{verb}: {shown(mcp_answer)} over MCP but {shown(rest_answer)} over REST",
            over_rest,
        )


@check("AMP11-XCH-05")
def test_pins_and_mxf_cross_channels(amp: Amp11Context) -> None:
    """A pin over one channel shows over the other; MXF exported over one imports over the other."""
    amp.require(MCP, REST)
    amp.need_verb("amp.pin")
    amp.need_verb("amp.export")
    for writer, reader in PAIRS:
        scope, target = amp.scope(), amp.scope("target")
        token = amp.token()
        memory_id = amp.encode(scope, f"cross pin {token}", on=reader)
        amp.ok("amp.pin", {"scope": scope, "id": memory_id}, on=writer)
        found = amp.find(scope, memory_id, token, on=reader)
        status = found.get("status") if found else "gone"
        amp.expect(status == "pinned", f"pinned over {writer}, status {shown(status)} over {reader}", found)
        rows, _ = amp.export_rows({"scope": scope}, on=writer)
        moved = [{**r, "scope": target} for r in rows if isinstance(r, dict)]
        for item in moved:
            amp.session.remember(reader, {"scope": target, "id": item.get("id")})
        value = amp.ok("amp.import", {"scope": target, "ndjson": ndjson(*moved)}, on=reader)
        amp.expect(
            value.get("imported") == len(moved),
            f"exported over {writer}, imported over {reader}: {value}",
            value,
        )
        landed = amp.find(target, memory_id, token, on=writer)
        amp.expect(landed is not None, f"imported over {reader}, not found over {writer}", landed)
