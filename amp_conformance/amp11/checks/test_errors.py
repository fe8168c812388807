"""The §3.5 error mapping on both channels, AmpErrorData, and output schemas (amp.json rendering)."""

from __future__ import annotations

import json
from typing import Any

from amp_conformance.amp11.channels import ERROR_MAPPING, MCP, REST, VerbResult, parse_rest_reply
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.amp11.schemas import definition_problems
from amp_conformance.engine.client import Client
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown


def _invalid_requests(amp: Amp11Context) -> list[tuple[str, dict[str, Any], str]]:
    """Invalid requests, each with the requirement that says it must be refused."""
    scope = amp.scope()
    return [
        ("amp.encode", {"scope": scope}, "AMP11-ENC-04"),
        ("amp.recall", {"scope": scope, "query": ""}, "AMP11-REC-09"),
        ("amp.stats", {"scope": {"app_id": "refining-only"}}, "AMP11-SCOPE-01"),
        ("amp.recall", {"scope": scope, "query": "x", "top_k": 0}, "AMP11-REC-09"),
    ]


def _errors(amp: Amp11Context, channel: str) -> list[VerbResult]:
    """The errors the invalid requests drew, each judged on its own (issue 20 §1).

    A request the server wrongly accepted is a finding of the requirement that input breaks (its own
    check reports it); here it is left out with a note, so an error-mapping check judges only the
    errors the server emitted. When none drew an error there is nothing to judge: the check skips."""
    errors = []
    for verb, arguments, requirement in _invalid_requests(amp):
        result = amp.call(verb, arguments, on=channel)
        if result.ok:
            amp.note(
                f"{verb} over {channel} with {json.dumps(arguments, ensure_ascii=False)[:120]} was accepted; "
                f"that is judged under {requirement}, not here"
            )
            continue
        errors.append(result)
    if not errors:
        amp.skip(f"no invalid request drew an error over {channel} (each is judged under its requirement)")
    return errors


@check("AMP11-ERR-01")
def test_invalid_request_mapping(amp: Amp11Context) -> None:
    """invalid_request travels as JSON-RPC -32602 (or -32600) and HTTP 400."""
    rpc_codes, status = ERROR_MAPPING["invalid_request"]
    for channel in amp.channels:
        for result in _errors(amp, channel):
            amp.expect_error(result, "invalid_request", result.verb)
            if channel == MCP:
                amp.expect(
                    result.transport_code in rpc_codes, f"JSON-RPC code {result.transport_code}", result
                )
                amp.note(f"invalid_request travels as {result.transport_code} (conflict C2)")
            else:
                amp.expect(result.transport_code == status, f"HTTP {result.transport_code}, not 400", result)


def _unknown_id_errors(amp: Amp11Context, channel: str) -> list[VerbResult]:
    scope = amp.scope()
    found = []
    for verb in ("amp.forget", "amp.pin"):
        result = amp.call(verb, {"scope": scope, "id": "amp11-never-issued"}, on=channel)
        if result.error_code == "not_found":
            found.append(result)
    return found


@check("AMP11-ERR-02")
def test_not_found_mapping(amp: Amp11Context) -> None:
    """not_found, when raised as an error, travels as JSON-RPC -32001 and HTTP 404."""
    seen = False
    for channel in amp.channels:
        for result in _unknown_id_errors(amp, channel):
            seen = True
            problems = amp.mapping_problems(result)
            amp.expect(not problems, f"over {channel}: {'; '.join(problems)}", result)
    if not seen:
        amp.skip("the server answers unknown ids in band (status not_found), never as an error (C1)")


@check("AMP11-ERR-03")
def test_not_supported_mapping(amp: Amp11Context) -> None:
    """not_supported travels as JSON-RPC -32002 and HTTP 501 (observed where the server raises it)."""
    seen = False
    for channel in amp.channels:
        scope = amp.scope()
        probes: list[tuple[str, dict[str, Any]]] = [
            ("amp.import", {"scope": scope, "ndjson": "not json\n", "on_conflict": "fail_atomic"}),
            ("amp.consolidate", {"scope": scope}),
            ("amp.pin", {"scope": scope, "id": "amp11-never-issued"}),
        ]
        for verb, arguments in probes:
            result = amp.call(verb, arguments, on=channel)
            if result.error_code == "not_supported":
                seen = True
                problems = amp.mapping_problems(result)
                amp.expect(not problems, f"over {channel}: {'; '.join(problems)}", result)
    if not seen:
        amp.skip("the server raised no not_supported error to observe")


@check("AMP11-ERR-04")
def test_backend_error_mapping(amp: Amp11Context) -> None:
    """backend_error travels as JSON-RPC -32000 and HTTP 500 (observed when the server reports one).

    A backend_error cannot be provoked: every one any check meets is judged where it is met (a wrong
    code fails this requirement once, from that check), so this check's own outcome never depends on
    which checks ran before it."""
    amp.skip("a backend_error cannot be provoked; each one a check meets is judged there, under AMP11-ERR-04")


@check("AMP11-ERR-05")
def test_mcp_errors_are_json_rpc_errors_with_amp_error_data(amp: Amp11Context) -> None:
    """An MCP error is a JSON-RPC error object whose data is AmpErrorData, not an isError result."""
    amp.require(MCP)
    for result in _errors(amp, MCP):
        amp.expect(not result.problems, f"{result.verb}: {'; '.join(result.problems)}", result)
        problems = definition_problems("AmpErrorData", result.error)
        amp.expect(not problems, f"{result.verb} error.data: {'; '.join(problems)}", result)


@check("AMP11-ERR-06")
def test_rest_errors_carry_the_amp_code(amp: Amp11Context) -> None:
    """A REST error body is JSON carrying the AMP code (amp_error_code, or code) and a message."""
    amp.require(REST)
    keys = set()
    for result in _errors(amp, REST):
        amp.expect(result.error_key is not None, f"{result.verb}: {'; '.join(result.problems)}", result)
        message = (result.error or {}).get("message")
        amp.expect(isinstance(message, str), f"{result.verb}: the error body has no message", result)
        keys.add(result.error_key)
    amp.note(f"REST error bodies carry the code as {', '.join(sorted(str(k) for k in keys))} (conflict C3)")


@check("AMP11-ERR-07")
def test_codes_and_transport_always_agree(amp: Amp11Context) -> None:
    """The JSON-RPC code or HTTP status and the amp_error_code always agree with the §3.5 table."""
    for channel in amp.channels:
        for result in _errors(amp, channel) + _unknown_id_errors(amp, channel):
            problems = amp.mapping_problems(result)
            amp.expect(not problems, f"{result.verb} over {channel}: {'; '.join(problems)}", result)
            amp.expect(
                result.error_code in ERROR_MAPPING or result.error_code in ("unauthorized", "forbidden"),
                f"{result.verb} over {channel}: unknown amp_error_code {shown(result.error_code)}",
                result,
            )


@check("AMP11-ERR-08")
def test_unknown_tool_is_an_error(amp: Amp11Context) -> None:
    """A tools/call naming an unknown tool is answered with an error."""
    amp.require(MCP)
    exchange = amp.session.mcp().call_tool(
        "amp.no_such_verb", {"scope": amp.scope()}, log=amp.evidence.exchanges
    )
    message = exchange.message or {}
    result = message.get("result")
    is_error = "error" in message or (isinstance(result, dict) and result.get("isError") is True)
    amp.expect(is_error, "an unknown tool was answered with a successful result", exchange)


@check("AMP11-ERR-09")
def test_rest_body_that_is_not_json_is_400(amp: Amp11Context) -> None:
    """A REST body that is not JSON, or not an object, is answered 400 invalid_request."""
    amp.require(REST)
    client = Client(amp.session.connection(), log=amp.evidence.exchanges, deadline=amp.deadline)
    for body in (b"{not json", b"[1, 2, 3]", b'"a string"'):
        reply = client.request("POST", "/v1/memories", content=body, root=True)
        result = parse_rest_reply("amp.encode", reply)
        amp.expect(reply.status == 400, f"body {shown(body)} answered HTTP {reply.status}, not 400", result)
        amp.expect_error(result, "invalid_request", f"POST /v1/memories with body {shown(body)}")


@check("AMP11-ERR-10")
def test_errors_do_not_break_the_session(amp: Amp11Context) -> None:
    """After an error the server keeps serving: the next valid request succeeds."""
    for channel in amp.channels:
        for _result in _errors(amp, channel):
            value = amp.ok("amp.stats", {"scope": amp.scope()}, on=channel, what="a call after an error")
            amp.expect(
                isinstance(value.get("memory_count"), int),
                f"over {channel}: stats broke after an error",
                value,
            )


@check("AMP11-SCHEMA-09")
def test_error_payloads_are_amp_error_data(amp: Amp11Context) -> None:
    """Every error payload validates as AmpErrorData (on REST with the code under amp_error_code or code)."""
    for channel in amp.channels:
        for result in _errors(amp, channel):
            payload = dict(result.error or {})
            if channel == REST and "amp_error_code" not in payload and isinstance(payload.get("code"), str):
                payload = {**payload, "amp_error_code": payload.pop("code")}  # conflict C3
            problems = definition_problems("AmpErrorData", payload)
            amp.expect(not problems, f"{result.verb} over {channel}: {'; '.join(problems)}", result)
