"""The REST channel's routes (Appendix C, schema/amp-openapi.yaml) and its responses."""

from __future__ import annotations

from typing import Any

from amp_conformance.amp11.channels import REST, parse_rest_reply
from amp_conformance.amp11.checks._support import ndjson, row
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.engine.client import Client, Reply
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown


def _client(amp: Amp11Context) -> Client:
    amp.require(REST)
    return Client(amp.session.connection(), log=amp.evidence.exchanges, deadline=amp.deadline)


ROUTE_VERBS = {
    "POST /v1/memories": "amp.encode",
    "POST /v1/memories/recall": "amp.recall",
    "DELETE /v1/memories/{id}": "amp.forget",
    "GET /v1/memories/stats": "amp.stats",
    "PUT /v1/memories/{id}/pin": "amp.pin",
    "POST /v1/memories/consolidate": "amp.consolidate",
    "POST /v1/memories/import": "amp.import",
}


def _served(amp: Amp11Context, reply: Reply, route: str) -> dict[str, Any]:
    """The route answered 200 with a JSON object (not 404/405: the route exists where documented).

    A route that is there and answered an AMP error refused the verb itself: that is the verb's own
    requirement (reported once by its check; this one is blocked), or not_supported on a Core server,
    or a backend_error judged under AMP11-ERR-04 (issue 20 §2)."""
    if reply.status not in (200, 404, 405):
        result = parse_rest_reply(ROUTE_VERBS[route], reply)
        if result.error_key is not None:
            amp.served(result, route)
    amp.expect(reply.status == 200, f"{route} answered HTTP {reply.status}", reply.exchange, expected="200")
    body = reply.json_object()
    return body


@check("AMP11-REST-01")
def test_encode_route(amp: Amp11Context) -> None:
    """amp.encode is POST /v1/memories, answered 200 with an EncodeResponse."""
    scope = amp.scope()
    reply = _client(amp).post("/v1/memories", {"scope": scope, "content": "route", "force": True}, root=True)
    body = _served(amp, reply, "POST /v1/memories")
    amp.expect(body.get("status") == "stored", f"encode body {body}", reply.exchange)
    amp.session.remember(REST, {"scope": scope, "id": body.get("id")})


@check("AMP11-REST-02")
def test_recall_route(amp: Amp11Context) -> None:
    """amp.recall is POST /v1/memories/recall, answered 200 with a RecallResponse."""
    reply = _client(amp).post(
        "/v1/memories/recall", {"scope": amp.scope(), "query": "route"}, root=True, repeatable=True
    )
    body = _served(amp, reply, "POST /v1/memories/recall")
    amp.expect(isinstance(body.get("results"), list), f"recall body {body}", reply.exchange)


@check("AMP11-REST-03")
def test_forget_route(amp: Amp11Context) -> None:
    """amp.forget is DELETE /v1/memories/{id} with the scope as query parameters."""
    amp.require(REST)
    scope = amp.scope()
    memory_id = amp.encode(scope, f"delete route {amp.token()}", on=REST, remember=False)
    reply = _client(amp).delete(f"/v1/memories/{memory_id}", params=scope, root=True)
    body = _served(amp, reply, "DELETE /v1/memories/{id}")
    amp.expect(body.get("status") == "forgotten", f"forget body {body}", reply.exchange)


@check("AMP11-REST-04")
def test_stats_route(amp: Amp11Context) -> None:
    """amp.stats is GET /v1/memories/stats with the scope as query parameters."""
    reply = _client(amp).get("/v1/memories/stats", params=amp.scope(), root=True)
    body = _served(amp, reply, "GET /v1/memories/stats")
    amp.expect(body.get("memory_count") == 0, f"stats body {body}", reply.exchange)


@check("AMP11-REST-05")
def test_pin_route(amp: Amp11Context) -> None:
    """amp.pin is PUT /v1/memories/{id}/pin with the scope keys as a flat JSON body."""
    amp.require(REST)
    scope = amp.scope()
    memory_id = amp.encode(scope, f"pin route {amp.token()}", on=REST)
    reply = _client(amp).request("PUT", f"/v1/memories/{memory_id}/pin", json_body=scope, root=True)
    result = parse_rest_reply("amp.pin", reply)
    amp.full_verb_answer(result)
    body = _served(amp, reply, "PUT /v1/memories/{id}/pin")
    amp.expect(body.get("status") == "pinned", f"pin body {body}", reply.exchange)


@check("AMP11-REST-06")
def test_consolidate_route(amp: Amp11Context) -> None:
    """amp.consolidate is POST /v1/memories/consolidate."""
    reply = _client(amp).post("/v1/memories/consolidate", {"scope": amp.scope(), "depth": "light"}, root=True)
    amp.full_verb_answer(parse_rest_reply("amp.consolidate", reply))
    body = _served(amp, reply, "POST /v1/memories/consolidate")
    amp.expect(body.get("status") in ("ok", "queued"), f"consolidate body {body}", reply.exchange)


@check("AMP11-REST-07")
def test_export_route_streams_ndjson_with_a_cursor_header(amp: Amp11Context) -> None:
    """amp.export is POST /v1/memories/export: NDJSON, with X-AMP-Next-Cursor while rows remain."""
    amp.require(REST)
    scope = amp.scope()
    for number in range(3):
        amp.encode(scope, f"export route {number} {amp.token()}", on=REST)
    reply = _client(amp).post(
        "/v1/memories/export", {"scope": scope, "page_size": 2}, root=True, repeatable=True
    )
    if reply.status != 200:
        amp.full_verb_answer(parse_rest_reply("amp.export", reply))
    amp.expect(reply.status == 200, f"export answered HTTP {reply.status}", reply.exchange)
    kind = reply.headers.get("content-type", "")
    amp.expect("application/x-ndjson" in kind, f"export Content-Type is {shown(kind)}", reply.exchange)
    lines = [line for line in reply.text.split("\n") if line.strip()]
    amp.expect(len(lines) == 2, f"page_size 2 answered {len(lines)} lines", reply.exchange)
    amp.expect(reply.headers.get("x-amp-next-cursor"), "no X-AMP-Next-Cursor with a row left", reply.exchange)


@check("AMP11-REST-08")
def test_import_route_takes_ndjson_and_query_policies(amp: Amp11Context) -> None:
    """amp.import is POST /v1/memories/import (NDJSON; scope and policies in the query); partial: 200."""
    scope = amp.scope()

    good = row(scope, f"import route {amp.token()}")
    amp.session.remember(REST, {"scope": scope, "id": good["id"]})
    reply = _client(amp).request(
        "POST",
        "/v1/memories/import",
        content=ndjson(good, "not json").encode(),
        params={**scope, "on_conflict": "skip", "scope_remap": "strict"},
        headers={"Content-Type": "application/x-ndjson"},
        root=True,
    )
    amp.full_verb_answer(parse_rest_reply("amp.import", reply))
    body = _served(amp, reply, "POST /v1/memories/import")
    counts = (body.get("imported"), body.get("skipped"), body.get("failed"))
    amp.expect(counts == (1, 0, 1), f"import counts {counts} for a good and a bad line", reply.exchange)


@check("AMP11-REST-09")
def test_json_responses_say_so(amp: Amp11Context) -> None:
    """JSON responses (every verb but export, and errors) carry Content-Type application/json."""
    client = _client(amp)
    scope = amp.scope()
    replies = [
        client.post(
            "/v1/memories", {"scope": scope, "content": f"typed {amp.token()}", "force": True}, root=True
        ),
        client.post("/v1/memories/recall", {"scope": scope, "query": "typed"}, root=True, repeatable=True),
        client.get("/v1/memories/stats", params=scope, root=True),
        client.post("/v1/memories", {"scope": scope}, root=True),  # an error
    ]
    body = replies[0].json() if replies[0].status == 200 else {}
    if isinstance(body, dict) and isinstance(body.get("id"), str):
        amp.session.remember(REST, {"scope": scope, "id": body["id"]})
    for reply in replies:
        kind = reply.headers.get("content-type", "")
        amp.expect(kind.startswith("application/json"), f"Content-Type {shown(kind)}", reply.exchange)


@check("AMP11-REST-11")
def test_malformed_requests_never_draw_a_5xx(amp: Amp11Context) -> None:
    """Malformed requests on every route are answered below 500 (or 501), never with a crash."""
    client = _client(amp)
    probes: list[tuple[str, str, Any]] = [
        ("POST", "/v1/memories", b"\xff\xfe not utf-8"),
        (
            "POST",
            "/v1/memories",
            b'{"scope": {"agent_id": "a"}, "content": "x", "metadata": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        ),
        ("POST", "/v1/memories/recall", b'{"scope": {"agent_id": "a"}, "query": "x", "top_k": 1e999}'),
        ("POST", "/v1/memories/recall", b'{"scope": {"agent_id": "a"}, "query": "x", "top_k": NaN}'),
        ("POST", "/v1/memories/export", b'{"scope": {"agent_id": "a"}, "cursor": 5}'),
        ("POST", "/v1/memories/import?agent_id=a&on_conflict=skip", b"\x00\x01\x02"),
        ("PUT", "/v1/memories/%00/pin", b'{"agent_id": "a"}'),
        ("DELETE", "/v1/memories/" + "x" * 5000 + "?agent_id=a", None),
        ("GET", "/v1/memories/stats?agent_id=a&agent_id=b", None),
    ]
    for method, path, body in probes:
        reply = client.request(method, path, content=body, root=True)
        amp.expect(
            reply.status < 500 or reply.status == 501,
            f"{method} {path[:60]} answered HTTP {reply.status}",
            reply.exchange,
            expected="a 4xx",
        )
