"""The §3.5 error mapping on both channels, malformed input, and the not_found convention setting."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reference_server.amp11 import Settings
from tests.reference_server_amp11.conftest import ServerFactory
from tests.reference_server_amp11.helpers import McpChannel, RestChannel, Server, encode

Channel = McpChannel | RestChannel
A = {"agent_id": "agent-a"}
TRANSPORT = {"mcp": {"invalid_request": -32602, "not_found": -32001, "not_supported": -32002}, "rest": {}}
HTTP = {"invalid_request": 400, "not_found": 404, "not_supported": 501}


def expect(channel: Channel, outcome: Any, code: str) -> None:
    assert outcome.error == code, outcome
    wanted = TRANSPORT["mcp"][code] if channel.name == "mcp" else HTTP[code]
    assert outcome.code == wanted, outcome


@pytest.mark.parametrize(
    ("verb", "args"),
    [
        ("amp.encode", {"scope": A}),
        ("amp.encode", {"scope": A, "content": ""}),
        ("amp.encode", {"scope": A, "content": "   "}),
        ("amp.encode", {"scope": A, "content": "x y z", "force": "yes"}),
        ("amp.encode", {"scope": A, "content": "x y z", "metadata": []}),
        ("amp.encode", {"scope": A, "content": "x y z", "surprise": 1}),
        ("amp.encode", {"scope": A, "content": "x y z", "metadata": {"amp.confidence": 1.5}}),
        ("amp.encode", {"scope": A, "content": "x y z", "metadata": {"amp.ttl": -1}}),
        ("amp.encode", {"scope": A, "content": "x y z", "metadata": {"amp.relations": [{"subject": "a"}]}}),
        ("amp.encode", {"scope": A, "content": "x y z", "metadata": {"big": "x" * 70000}}),
        ("amp.recall", {"scope": A}),
        ("amp.recall", {"scope": A, "query": ""}),
        ("amp.recall", {"scope": A, "query": " \t "}),
        ("amp.recall", {"scope": A, "query": "q", "top_k": 0}),
        ("amp.recall", {"scope": A, "query": "q", "top_k": 1.5}),
        ("amp.recall", {"scope": A, "query": "q", "filters": {"timestamp_after": "not-a-time"}}),
        ("amp.recall", {"scope": A, "query": "q", "filters": {"colour": "red"}}),
        ("amp.recall", {"scope": A, "query": "q", "filters": {"status": "deleted"}}),
        ("amp.consolidate", {"scope": A, "depth": "deep"}),
        ("amp.export", {"scope": A, "page_size": 0}),
        ("amp.export", {"scope": A, "cursor": "this-is-not-a-real-cursor"}),
        ("amp.import", {"scope": A}),
        ("amp.import", {"scope": A, "ndjson": "", "on_conflict": "lolwhat"}),
        ("amp.import", {"scope": A, "ndjson": "", "scope_remap": "loose"}),
    ],
)
def test_invalid_requests(channel: Channel, verb: str, args: dict[str, Any]) -> None:
    expect(channel, channel.call(verb, args), "invalid_request")


@pytest.mark.parametrize("verb", ["amp.forget", "amp.pin"])
def test_point_verbs_need_an_id_on_mcp(server: Server, verb: str) -> None:
    expect(server.mcp, server.mcp.call(verb, {"scope": A}), "invalid_request")


def test_the_same_invalid_request_draws_the_same_code(server: Server) -> None:
    args = {"scope": {"session_id": "only"}, "content": "refining only"}
    assert server.mcp.call("amp.encode", args).error == server.rest.call("amp.encode", args).error


def test_error_convention_raises_not_found(make_server: ServerFactory) -> None:
    server = make_server(settings=Settings(not_found="error"))
    for channel in (server.mcp, server.rest):
        for verb in ("amp.forget", "amp.pin", "amp.update"):
            extra = {"content": "c"} if verb == "amp.update" else {}
            expect(channel, channel.call(verb, {"scope": A, "id": "mem_missing", **extra}), "not_found")
        memory = encode(channel, A, "still forgettable")
        assert channel.call("amp.forget", {"scope": A, "id": memory}).get() == {"status": "forgotten"}


def test_draft_verbs_switched_off_are_not_supported(make_server: ServerFactory) -> None:
    server = make_server(settings=Settings(draft=False))
    names = [tool["name"] for tool in server.mcp.request("tools/list")["result"]["tools"]]
    assert "amp.update" not in names and len(names) == 8
    for channel in (server.mcp, server.rest):
        expect(channel, channel.call("amp.update", {"scope": A, "id": "x", "content": "c"}), "not_supported")


def test_rest_malformed_bodies(server: Server) -> None:
    for body in (b"", b"{not json", b"[1, 2]", b'"text"'):
        response = server.rest.request("POST", "/v1/memories", content=body)
        assert response.status_code == 400, body
        assert response.headers["content-type"] == "application/json"
        assert response.json() == {
            "amp_error_code": "invalid_request",
            "code": "invalid_request",
            "message": response.json()["message"],
        }


def test_rest_unknown_routes_and_methods(server: Server) -> None:
    missing = server.rest.request("GET", "/v1/nowhere")
    assert (missing.status_code, missing.json()["amp_error_code"]) == (404, "not_found")
    wrong = server.rest.request("GET", "/v1/memories/some-id")
    assert (wrong.status_code, wrong.json()["amp_error_code"]) == (405, "invalid_request")


def test_rest_stats_rejects_unknown_query_parameters(server: Server) -> None:
    response = server.rest.request("GET", "/v1/memories/stats", params={"agent_id": "a", "limit": "3"})
    assert response.status_code == 400


def test_rest_forget_and_pin_accept_every_published_scope_form(server: Server) -> None:
    rest = server.rest
    scope = {"agent_id": "a", "user_id": "u"}
    for form in ("query", "flat", "envelope"):
        memory = encode(rest, scope, f"form {form}")
        forms: dict[str, dict[str, Any]] = {
            "query": {"params": scope},
            "flat": {"json": scope},
            "envelope": {"json": {"scope": scope}},
        }
        kwargs = forms[form]
        pinned = rest.request("PUT", f"/v1/memories/{memory}/pin", **kwargs)
        assert pinned.json() == {"status": "pinned"}, form
        forgotten = rest.request("DELETE", f"/v1/memories/{memory}", **kwargs)
        assert forgotten.json() == {"status": "forgotten"}, form


def test_rest_import_accepts_an_ndjson_body_with_query_parameters(server: Server) -> None:
    row = '{"id": "x1", "content": "from ndjson", "status": "active", "timestamp": "2026-05-30T12:00:00"}\n'
    response = server.rest.request(
        "POST", "/v1/memories/import", content=row, params={"agent_id": "a", "scope_remap": "inherit"}
    )
    assert response.json() == {"imported": 1, "skipped": 0, "failed": 0}
    again = server.rest.request(
        "POST", "/v1/memories/import", content=row, params={"agent_id": "a", "x": "1"}
    )
    assert again.status_code == 400


def test_a_server_error_keeps_serving(server: Server) -> None:
    for channel in (server.mcp, server.rest):
        assert channel.call("amp.encode", {"content": "no scope"}).error == "invalid_request"
        assert channel.call("amp.stats", {"scope": A}).ok


def test_nan_and_deep_nesting_are_not_json(server: Server) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    for body in ('{"scope": {"agent_id": "a"}, "content": "x y", "metadata": {"n": NaN}}', deep):
        response = server.rest.request("POST", "/v1/memories", content=body)
        assert (response.status_code, response.json()["amp_error_code"]) == (400, "invalid_request")
        answer = server.mcp.session.handle_line(body)
        assert answer is not None and json.loads(answer)["error"]["code"] == -32700


def test_in_band_convention_answers_200_over_rest(make_server: ServerFactory) -> None:
    server = make_server(settings=Settings(not_found="status"))
    for channel in (server.mcp, server.rest):
        for verb in ("amp.forget", "amp.pin"):
            assert channel.call(verb, {"scope": A, "id": "mem_missing"}).get() == {"status": "not_found"}
