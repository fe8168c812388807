"""MXF (spec §3.3.4, §3.3.5, Appendix A): export pages and cursors, import policies, both channels."""

from __future__ import annotations

import json
from typing import Any

from tests.reference_server_amp11.helpers import (
    McpChannel,
    RestChannel,
    Server,
    encode,
    ndjson_rows,
    recall_ids,
)

Channel = McpChannel | RestChannel
A = {"agent_id": "agent-a"}


def row(memory_id: str, content: str, scope: dict[str, str] | None = None, **extra: Any) -> str:
    body = {
        "id": memory_id,
        "content": content,
        "score": 0.0,
        "timestamp": "2026-05-30T12:00:00Z",
        "status": "active",
        "scope": A if scope is None else scope,
        **extra,
    }
    return json.dumps(body) + "\n"


def imported(
    channel: Channel, document: str, scope: dict[str, str] | None = None, **policy: str
) -> dict[str, Any]:
    return channel.call(
        "amp.import", {"scope": A if scope is None else scope, "ndjson": document, **policy}
    ).get()


def test_export_empty_scope(channel: Channel) -> None:
    result = channel.call("amp.export", {"scope": {"agent_id": "nobody"}}).get()
    assert result["count"] == 0 and result["ndjson"] == "" and "next_cursor" not in result


def test_export_pages_visit_every_row_once_even_with_writes_between(channel: Channel) -> None:
    ids = [encode(channel, A, f"paged memory {n}") for n in range(5)]
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        args: dict[str, Any] = {"scope": A, "page_size": 2}
        if cursor:
            args["cursor"] = cursor
        page = channel.call("amp.export", args).get()
        rows = ndjson_rows(page["ndjson"])
        assert len(rows) <= 2 and page["count"] == len(rows)
        seen += [r["id"] for r in rows]
        cursor = page.get("next_cursor")
        if len(seen) == 2:
            ids.append(encode(channel, A, "written between pages"))
        if not cursor:
            break
    assert seen == ids


def test_export_filters_and_rows(channel: Channel) -> None:
    active = encode(channel, A, "active row", metadata={"k": "v"})
    pinned = encode(channel, A, "pinned row")
    channel.call("amp.pin", {"scope": A, "id": pinned}).get()
    rows = ndjson_rows(
        channel.call("amp.export", {"scope": A, "filters": {"status": "pinned"}}).get()["ndjson"]
    )
    assert [r["id"] for r in rows] == [pinned]
    everything = ndjson_rows(channel.call("amp.export", {"scope": A}).get()["ndjson"])
    first = everything[0]
    assert first["id"] == active and first["metadata"] == {"k": "v"} and first["scope"] == A
    assert set(first) == {"id", "content", "score", "source", "timestamp", "status", "scope", "metadata"}


def test_import_counts_and_line_numbers(channel: Channel) -> None:
    document = row("m1", "good row") + "\nthis is not json\n" + json.dumps([1]) + "\n" + row("m2", "", None)
    result = imported(channel, document)
    assert result["imported"] == 1 and result["failed"] == 3 and result["skipped"] == 0
    assert [e["line"] for e in result["errors"]] == [3, 4, 5]
    assert {e["amp_error_code"] for e in result["errors"]} == {"invalid_request"}
    assert imported(channel, "") == {"imported": 0, "skipped": 0, "failed": 0}


def test_import_keeps_id_status_and_timestamp(channel: Channel) -> None:
    imported(channel, row("keep-1", "pinned import", status="pinned", metadata={"amp.confidence": 0.5}))
    rows = channel.call("amp.recall", {"scope": A, "query": "pinned import"}).get()["results"]
    assert rows[0]["id"] == "keep-1" and rows[0]["status"] == "pinned"
    assert rows[0]["timestamp"] == "2026-05-30T12:00:00Z" and rows[0]["metadata"] == {"amp.confidence": 0.5}
    imported(channel, row("naive-1", "naive timestamp", timestamp="2026-05-30T12:00:00"))
    naive = channel.call("amp.recall", {"scope": A, "query": "naive"}).get()["results"][0]
    assert naive["timestamp"] == "2026-05-30T12:00:00.000000Z"  # no offset: normalised to RFC 3339 UTC


def test_skip_is_idempotent_and_overwrite_replaces(channel: Channel) -> None:
    assert imported(channel, row("c1", "version xone"))["imported"] == 1
    assert imported(channel, row("c1", "version xtwo")) == {"imported": 0, "skipped": 1, "failed": 0}
    assert recall_ids(channel, A, "xtwo") == []
    assert imported(channel, row("c1", "version xtwo"), on_conflict="overwrite")["imported"] == 1
    assert recall_ids(channel, A, "xtwo") == ["c1"]
    assert channel.call("amp.stats", {"scope": A}).get()["memory_count"] == 1


def test_same_id_in_another_scope_is_no_conflict(channel: Channel) -> None:
    assert imported(channel, row("shared-id", "in A"))["imported"] == 1
    other = {"agent_id": "other"}
    assert imported(channel, row("shared-id", "in other", other), scope=other)["imported"] == 1
    assert recall_ids(channel, A, "in") == recall_ids(channel, other, "in") == ["shared-id"]


def test_scope_remap_policies(channel: Channel) -> None:
    request = {"agent_id": "a", "user_id": "u"}
    partial = row("p1", "partial scope row", {"agent_id": "a"})
    strict = imported(channel, partial, scope=request)
    assert strict["failed"] == 1 and strict["errors"][0]["amp_error_code"] == "invalid_request"
    inherit = imported(channel, partial, scope=request, scope_remap="inherit")
    assert inherit == {"imported": 1, "skipped": 0, "failed": 0}
    assert recall_ids(channel, request, "partial") == ["p1"]
    conflicting = row("p2", "conflicting row", {"agent_id": "b", "user_id": "u"})
    for remap in ("strict", "inherit"):
        result = imported(channel, conflicting, scope=request, scope_remap=remap)
        assert result["failed"] == 1 and result["imported"] == 0
    assert recall_ids(channel, {"agent_id": "b"}, "conflicting") == []


def test_fail_fast_and_fail_atomic(channel: Channel) -> None:
    document = row("f1", "first good") + "not json\n" + row("f3", "third good")
    fast = imported(channel, document, on_conflict="fail_fast")
    assert (fast["imported"], fast["skipped"], fast["failed"]) == (1, 0, 1)
    assert recall_ids(channel, A, "good") == ["f1"]
    atomic_doc = row("g1", "atomic one") + row("g2", "atomic two") + row("f1", "collides")
    atomic = imported(channel, atomic_doc, on_conflict="fail_atomic")
    assert atomic == {
        "imported": 0,
        "skipped": 0,
        "failed": 1,
        "errors": [
            {"line": 3, "amp_error_code": "invalid_request", "message": atomic["errors"][0]["message"]}
        ],
    }
    assert recall_ids(channel, A, "atomic") == []
    assert imported(channel, row("g1", "atomic one"), on_conflict="fail_atomic")["imported"] == 1


def test_export_over_one_channel_imports_over_the_other(server: Server) -> None:
    encode(server.mcp, A, "cross channel mxf", metadata={"amp.entities": ["x"]})
    document = server.mcp.call("amp.export", {"scope": A}).get()["ndjson"]
    target = {"agent_id": "target"}
    rows = [{**r, "scope": target} for r in ndjson_rows(document)]
    result = imported(server.rest, "".join(json.dumps(r) + "\n" for r in rows), scope=target)
    assert result["imported"] == 1
    rest_rows = ndjson_rows(server.rest.call("amp.export", {"scope": target}).get()["ndjson"])
    assert [{**r, "scope": A} for r in rest_rows] == ndjson_rows(document)


def test_rest_export_without_page_size_is_one_stream(server: Server) -> None:
    for n in range(3):
        encode(server.rest, A, f"stream row {n}")
    response = server.rest.request("POST", "/v1/memories/export", json={"scope": A})
    assert response.status_code == 200 and "x-amp-next-cursor" not in response.headers
    assert len(ndjson_rows(response.text)) == 3
    paged = server.rest.request("POST", "/v1/memories/export", json={"scope": A, "page_size": 2})
    assert len(ndjson_rows(paged.text)) == 2 and paged.headers["x-amp-next-cursor"]
